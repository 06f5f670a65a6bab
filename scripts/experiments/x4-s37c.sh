#!/usr/bin/env bash
# Session 37, the third 4-GPU call (issue 18): the received walk's settings
# again, now that the boxes are sized and bench cuts twice (weak Plummer
# 2^25 a GPU, 4 GPUs; run 1's default: batch 82.2 ms):
#  - the default again (the run-to-run spread);
#  - banyan-rb4: the received walk at 4 blocks an SM with 2 targets a lane
#    (variant-build.sh -DBN_WALK_REMOTE_MIN_BLOCKS=4: 128 registers, no
#    spills; the default 5 blocks spills 144 bytes at 96);
#  - BANYAN_REMOTE_BOX_GROUPS=32 and 8 (16 groups a box by default);
#  - BANYAN_LET_BOXES=2048 (the rule gives 1024 at 2^25 a rank);
#  - Hernquist with --balance-cost time.
#   bash scripts/experiments/x4-s37c.sh CARRY.tar.xz OUT   (banyan, banyan-rb4, tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
P="--model plummer --n 134217728 --repeat 3 --steps 4"
imb() { grep -o '"step_cost_imbalance": [0-9.]*' "$O/$1.out"; }
run4 base "$B" $P; imb base
run4 rb4 "$D/banyan-rb4" $P; imb rb4
(export BANYAN_REMOTE_BOX_GROUPS=32; run4 box32 "$B" $P)
(export BANYAN_REMOTE_BOX_GROUPS=8; run4 box8 "$B" $P)
(export BANYAN_LET_BOXES=2048; run4 let2048 "$B" $P)
run4 hern-time "$B" --model hernquist --n 134217728 --repeat 3 --steps 4 --balance-cost time
for f in base rb4 box32 box8 let2048; do
    echo "$f: received walk cells visited (median over ranks and calls): $(zgrep -h 'received walk: cells visited' "$O/$f.err" | awk '{print $(NF-2)}' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
done
gzip -f "$O"/*.err
