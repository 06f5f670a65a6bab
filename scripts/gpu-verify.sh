#!/usr/bin/env bash
# Every GPU test of a change, one device call on any machine kind: the
# test_gpu_* binaries and test_tree_restore spread over the GPUs seen (one
# test per GPU at a time), test_forces_dist on 2 ranks, the restarts of
# gpu-restart-check.sh (cli_restart.sh on the GPU, 2 ranks continued on
# 1, 2 and 3), and a 2-rank GPU `banyan run` with Gravity:balance_cost
# time (its summary lines). One line per test, "exit 0" for a pass.
#   scripts/gpu-verify.sh DIR OUT   (DIR: banyan, tests/, lib/)
set -u
DIR=$(cd "$1" && pwd)
O=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O"
export LD_LIBRARY_PATH=$DIR/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source "$here/device-mpi-env.sh"
G=$(nvidia-smi --list-gpus 2>/dev/null | wc -l)
[ "$G" -ge 1 ] || G=1
tests=$(ls "$DIR"/tests/test_gpu_* "$DIR"/tests/test_tree_restore 2>/dev/null)
i=0
for t in $tests; do # G at a time, each on its own GPU
    (CUDA_VISIBLE_DEVICES=$((i % G)) timeout 240 "$t" >"$O/$(basename "$t").log" 2>&1
     echo "$(basename "$t"): exit $?" >"$O/$(basename "$t").rc") &
    i=$((i + 1))
    [ $((i % G)) = 0 ] && wait
done
wait
for t in $tests; do
    n=$(basename "$t")
    echo "$(cat "$O/$n.rc") ($(grep -c '\[       OK \]' "$O/$n.log") ok, $(grep -c '\[  FAILED  \]' "$O/$n.log") failed lines)"
done
OMP_NUM_THREADS=4 timeout 200 mpirun --bind-to none -np 2 "$DIR/tests/test_forces_dist" >"$O/fd2.log" 2>&1
echo "test_forces_dist on 2 ranks: exit $? ($(grep -c '\[       OK \]' "$O/fd2.log") ok)"
SKIP_TESTS=1 timeout 300 bash "$here/gpu-restart-check.sh" "$DIR" "$O/restart" 2>&1 | tail -20
cd "$O" || exit 1
timeout 120 mpirun --bind-to none -np 2 "$DIR/banyan" run -P InitialConditions:n:65536 -P Gravity:backend:gpu \
    -P Snapshots:render:no -P Snapshots:interval:0 -P TimeIntegration:dt:0.01 -P TimeIntegration:t_end:1.3 \
    -P Gravity:balance_cost:time -o bal >bal.out 2>bal.err
echo "2-rank GPU run, balance_cost time: exit $?"
grep -E "ranks:|energy error" bal.out | cut -c1-300
