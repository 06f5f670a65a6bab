#!/usr/bin/env bash
# Session 35's second call on 4 GPUs (issue 18): the received walk's
# kernel with one call of bn_walk_group (queued chunks and groups alike)
# and 32-bit per-chunk counts, at three shapes:
#   banyan     4 targets a lane, 4 blocks an SM (the default so far);
#   banyan-t2  2 targets, 6 blocks (80 registers, as the local walk);
#   banyan-t5  2 targets, 5 blocks (96 registers);
#  1. the GPU tests of the walks (test_gpu_walk, test_gpu_let, and
#     test_forces_dist on 4 ranks) with the default binary;
#  2. weak Plummer 2^25 a GPU on 4 GPUs with each binary, banyan and
#     banyan-t2 twice (2^27 on 4 GPUs is also the strong case);
#  3. the stall reasons and source counters of banyan-t2's received walk.
#   bash scripts/experiments/x4-s35b.sh DIR OUT   (DIR: banyan, banyan-t2, banyan-t5, tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
for t in test_gpu_walk test_gpu_let; do
    timeout 120 "$D/tests/$t" >"$O/$t.log" 2>&1
    echo "$t: exit $? ($(grep -c '\[       OK \]' "$O/$t.log") ok)"
done
OMP_NUM_THREADS=4 timeout 150 mpirun --bind-to none -np 4 "$D/tests/test_forces_dist" >"$O/fd4.log" 2>&1
echo "test_forces_dist on 4 ranks: exit $? ($(grep -c '\[       OK \]' "$O/fd4.log") ok, $(grep -c 'FAILED  \]' "$O/fd4.log") failed lines)"
source "$(dirname "$0")/x4-lib.sh"
P="--model plummer --n 134217728 --repeat 3 --steps 4"
run4 base "$B" $P
run4 t2 "$D/banyan-t2" $P
run4 t5 "$D/banyan-t5" $P
run4 base-again "$B" $P
run4 t2-again "$D/banyan-t2" $P
remote_sass t2 "$D/banyan-t2"
gzip -f "$O"/*.err "$O"/*.log
