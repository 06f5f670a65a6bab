#!/usr/bin/env bash
# Session 36's last 4-GPU call (issue 18): 1024 target boxes a rank (the
# new default) and the crossers' search through the Hilbert table:
#  1. every GPU test (gpu-verify.sh) and test_forces_dist on 4 ranks;
#  2. weak Plummer and Hernquist 2^25 a GPU on 4 GPUs, Hernquist also with
#     256 boxes (the old default) beside it;
#  3. the forces on 4 GPUs against 1 GPU's and direct summation, M31's
#     block steps on 4 GPUs.
#   bash scripts/experiments/x4-s36d.sh CARRY.tar.xz OUT   (banyan, tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
verify_all
run4 plummer4 "$B" --model plummer --n 134217728 --repeat 3 --steps 4
grep -E "crossers: found" "$O/plummer4.err" | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {print "  crossers: found, median " v[int((NR+1)/2)] " ms"}'
run4 hernquist4 "$B" --model hernquist --n 134217728 --repeat 3 --steps 4
(export BANYAN_LET_BOXES=256; run4 hernquist4-b256 "$B" --model hernquist --n 134217728 --repeat 3 --steps 4)
gzip -f "$O"/*.err "$O"/*.log
PART_LIMIT=100 bash "$here/multi-gpu-session.sh" "$CARRY" "$O/g" "1 4" forces
PART_LIMIT=100 bash "$here/multi-gpu-session.sh" "$CARRY" "$O/g" "4" galaxy
