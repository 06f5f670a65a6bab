#!/usr/bin/env bash
# Prepared in session 36 for the next 4-GPU call (issue 18), the final
# code of session 36 (a8525f5 and later: target boxes by size; bench's two
# cuts by cost, 6f85ffa; neither yet run on a GPU):
#  1. every GPU test (gpu-verify.sh) and test_forces_dist on 4 ranks;
#  2. weak Plummer and Hernquist on 4 GPUs with bench's two cuts by cost
#     (session 36 measured one: 82.6 and 84.7 ms), their counted imbalance;
#  3. where rank 3's received walk goes (BANYAN_REMOTE_GROUP_TIMES=1: the
#     slowest, for a third of the others' pp: its chunks queued and deep
#     passes), and Plummer with --balance-cost time.
# x4-s37b.sh is the second call: 2 GPUs and M31.
#   bash scripts/experiments/x4-s37.sh CARRY.tar.xz OUT   (banyan, tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
verify_all
P4="--model plummer --n 134217728 --repeat 3 --steps 4"
run4 plummer4 "$B" $P4
grep -o '"step_cost_imbalance": [0-9.]*' "$O/plummer4.out"
run4 hernquist4 "$B" --model hernquist --n 134217728 --repeat 3 --steps 4
grep -o '"step_cost_imbalance": [0-9.]*' "$O/hernquist4.out"
(export BANYAN_REMOTE_GROUP_TIMES=1; run4 plummer4-gt "$B" $P4) # the groups' times slow the walk: not a timing
grep -E "\[rank 3\]" "$O/plummer4-gt.err" | grep -iE "group|straggl|longest" | tail -12
run4 plummer4-time "$B" $P4 --balance-cost time
gzip -f "$O"/*.err "$O"/*.log
