#!/usr/bin/env bash
# Session 35's last call on 4 GPUs (issue 18): the received walk at 2
# targets a lane and 5 blocks an SM (the new default), measured as the
# issue asks and tested:
#  1. every GPU test (gpu-verify.sh: test_gpu_*, test_tree_restore,
#     test_forces_dist on 2 ranks, restarts, a 2-rank run) and
#     test_forces_dist on 4 ranks;
#  2. weak Plummer and Hernquist, 2^25 a GPU, on 4 and 2 GPUs (the 1-GPU
#     runs have no received walk: session 34's stand);
#  3. M31's block steps on 1, 2 and 4 GPUs (multi-gpu-session.sh galaxy).
#   bash scripts/experiments/x4-s35c.sh CARRY.tar.xz OUT   (banyan, tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
verify_all
run4 plummer4 "$B" --model plummer --n 134217728 --repeat 3 --steps 4
run4 hernquist4 "$B" --model hernquist --n 134217728 --repeat 3 --steps 4
runp 2 plummer2 "$B" --model plummer --n 67108864 --repeat 3 --steps 4
runp 2 hernquist2 "$B" --model hernquist --n 67108864 --repeat 3 --steps 4
grep -hE "crossers: (room|placed|mirror|moved)" "$O/hernquist4.err" | awk '$(NF-3) + 0 > 5' | head -6
gzip -f "$O"/*.err "$O"/*.log
PART_LIMIT=150 bash "$here/multi-gpu-session.sh" "$CARRY" "$O/g" "1 2 4" galaxy
