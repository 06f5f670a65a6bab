#!/usr/bin/env bash
# Session 36's second 4-GPU call (issue 18), weak Plummer 2^25 a GPU:
#  1. the ranks' host timelines (BANYAN_GRAVITY_TRACE=2: each stage's end
#     on the host's shared clock): who waits for whom in a batch step;
#  2. the received walk's counted costs weighted less in the cut
#     (BANYAN_RECEIVED_COST_WEIGHT 0.5 and 0.3: beside the local walk its
#     time is partly hidden, so a rank with more received work and less
#     local work ends sooner at equal counted cost; a deterministic
#     alternative to --balance-cost time);
#  3. the batch without tracing (trace_walks waits for each walk) and
#     without the crossers' move (BANYAN_MIGRATE=0: its cost's bound).
#   bash scripts/experiments/x4-s36b.sh CARRY.tar.xz OUT   (banyan, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
P4="--model plummer --n 134217728 --repeat 3 --steps 4"
(export BANYAN_GRAVITY_TRACE=2; run4 plummer4-tl "$B" $P4)
python3 "$here/experiments/timeline.py" "$O/plummer4-tl.err" 2
(export BANYAN_RECEIVED_COST_WEIGHT=0.5; run4 plummer4-w05 "$B" $P4)
(export BANYAN_RECEIVED_COST_WEIGHT=0.3; run4 plummer4-w03 "$B" $P4)
(unset BANYAN_GRAVITY_TRACE; run4 plummer4-quiet "$B" $P4)
(export BANYAN_MIGRATE=0; run4 plummer4-nomove "$B" $P4)
(export BANYAN_RECEIVED_COST_WEIGHT=0.5; run4 hernquist4-w05 "$B" --model hernquist --n 134217728 --repeat 3 --steps 4)
gzip -f "$O"/*.err
