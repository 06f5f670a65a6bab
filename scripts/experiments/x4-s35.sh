#!/usr/bin/env bash
# Session 35 on 4 GPUs (issue 18), one device call:
#  1. weak Plummer 2^25 a GPU on 4 GPUs with three builds of the received
#     walk: as committed (4 targets a lane, 4 blocks an SM, 128 registers),
#     B5 (4 targets, 5 blocks: 96 registers, spills) and T2 (2 targets, 6
#     blocks: 80 registers, spills) -- variant-build.sh's binaries in DIR;
#  2. weak Hernquist on 4 (the re-balance's mirror room, 0e514af);
#  3. Nsight Compute's source counters of rank 0's received walk (where
#     its warps stall, by SASS instruction);
#  4. the mesh potential of 2^26 cells on 4 GPUs (the gather's pre-fault).
#   bash scripts/experiments/x4-s35.sh DIR OUT   (DIR: banyan, banyan-b5, banyan-t2, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
P="--model plummer --n 134217728 --repeat 3 --steps 4"
run4 base "$B" $P
run4 b5 "$D/banyan-b5" $P
run4 t2 "$D/banyan-t2" $P
run4 hern "$B" --model hernquist --n 134217728 --repeat 3 --steps 4
grep -E "crossers: (room|placed|mirror|moved)" "$O/hern.err" | awk '$(NF-3) + 0 > 5' | head -6
remote_sass remote "$B"
timeout 240 "$here/mesh-ranks-check.sh" "$B" "$O/mesh" 7 4
gzip -f "$O"/*.err
