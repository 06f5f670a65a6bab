#!/usr/bin/env bash
# Prepared in session 36 for the next 4-GPU call (issue 18), the final
# code of session 36 (a8525f5 and later: target boxes by size, not yet run
# on a GPU):
#  1. every GPU test (gpu-verify.sh) and test_forces_dist on 4 ranks;
#  2. weak Plummer on 4 GPUs with BANYAN_REMOTE_GROUP_TIMES=1: where rank
#     3's received walk goes (the slowest, for a third of the others' pp:
#     its chunks queued and deep passes), with bench's two cuts by cost
#     (6f85ffa; session 36 measured one: 82.6 ms); Hernquist; Plummer
#     with --balance-cost time;
#  3. weak Plummer and Hernquist on 2 GPUs with the boxes by size (the
#     2-GPU row is session 35's, 256 boxes), and strong 2^27 on 2;
#  4. M31's block steps on 1, 2 and 4 GPUs (256 boxes at 2 M a rank).
#   bash scripts/experiments/x4-s37.sh CARRY.tar.xz OUT   (banyan, tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
verify_all
P4="--model plummer --n 134217728 --repeat 3 --steps 4"
(export BANYAN_REMOTE_GROUP_TIMES=1; run4 plummer4-gt "$B" $P4)
grep -E "\[rank 3\]" "$O/plummer4-gt.err" | grep -iE "group|straggl|longest" | tail -12
grep -o '"step_cost_imbalance": [0-9.]*' "$O/plummer4-gt.out"
run4 hernquist4 "$B" --model hernquist --n 134217728 --repeat 3 --steps 4
run4 plummer4-time "$B" $P4 --balance-cost time
runp 2 plummer2 "$B" --model plummer --n 67108864 --repeat 3 --steps 4
runp 2 hernquist2 "$B" --model hernquist --n 67108864 --repeat 3 --steps 4
runp 2 strong2 "$B" $P4 # 2^26 a rank: 1024 boxes of 65536 bodies (session 34: 166.7 ms with 256)
gzip -f "$O"/*.err "$O"/*.log
PART_LIMIT=150 bash "$here/multi-gpu-session.sh" "$CARRY" "$O/g" "1 2 4" galaxy
