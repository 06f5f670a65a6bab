#!/usr/bin/env bash
# Prepared in session 35 for the next 4-GPU call (issue 18):
#  1. the 1-GPU baselines on the current code (weak Plummer and Hernquist
#     2^25; the local walk's kernel changed in session 35, its registers not);
#  2. weak Plummer 2^25 a GPU on 4 GPUs: the default, the cut by measured
#     time (--balance-cost time: the ranks' local walks were 4 ms apart with
#     their counted flops within 1%, the received walk's time half hidden
#     beside the local walk), and banyan-lc (lane-counts.patch's walk,
#     built with variant-build.sh) if DIR has it;
#  3. weak Hernquist on 4 GPUs by measured time.
#  0. every GPU test (gpu-verify.sh; 8f338c8's host mends are untested on
#     a GPU) and test_forces_dist on 4 ranks.
#   bash scripts/experiments/x4-s36.sh CARRY.tar.xz OUT   (banyan, [banyan-lc], tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
verify_all
P4="--model plummer --n 134217728 --repeat 3 --steps 4"
runp 1 plummer1 "$B" --model plummer --n 33554432 --repeat 3 --steps 4
runp 1 hernquist1 "$B" --model hernquist --n 33554432 --repeat 3 --steps 4
run4 plummer4 "$B" $P4
run4 plummer4-time "$B" $P4 --balance-cost time
[ -x "$D/banyan-lc" ] && run4 plummer4-lc "$D/banyan-lc" $P4
run4 hernquist4-time "$B" --model hernquist --n 134217728 --repeat 3 --steps 4 --balance-cost time
gzip -f "$O"/*.err "$O"/*.log
