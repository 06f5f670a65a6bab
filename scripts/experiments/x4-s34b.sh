#!/usr/bin/env bash
# Session 34, the received walk beside the local one (issue 18), one
# device call on 4 GPUs:
#  1. the GPU tests that cross ranks (test_gpu_let, test_gpu_walk,
#     test_forces_dist on 4 and 2 ranks);
#  2. the forces beside and after (BANYAN_REMOTE_BESIDE=0) on 4 ranks,
#     2^21 Plummer: banyan compare must find them 0 apart;
#  3. weak Plummer 2^25 a GPU on 4 GPUs beside and after, weak Hernquist
#     on 4, strong Plummer 2^27 on 4, weak Plummer on 2 and 1;
#  a table last (batch: the mean of 4 steps as `banyan run` runs them).
#   bash scripts/experiments/x4-s34b.sh DIR OUT   (DIR: banyan, tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
for t in test_gpu_let test_gpu_walk; do
    timeout 120 "$D/tests/$t" >"$O/$t.log" 2>&1
    echo "$t: exit $? ($(grep -c '\[       OK \]' "$O/$t.log") ok)"
done
for np in 4 2; do
    OMP_NUM_THREADS=4 timeout 150 mpirun --bind-to none -np $np "$D/tests/test_forces_dist" >"$O/fd$np.log" 2>&1
    echo "test_forces_dist on $np ranks: exit $? ($(grep -c '\[       OK \]' "$O/fd$np.log") ok, $(grep -c 'FAILED  \]' "$O/fd$np.log") failed lines)"
done
cd "$O" || exit 1
"$B" ic plummer --n 2097152 -o p21.hdf5 >/dev/null 2>&1
for beside in 1 0; do
    BANYAN_REMOTE_BESIDE=$beside OMP_NUM_THREADS=4 timeout 120 mpirun --bind-to none -np 4 "$B" forces p21.hdf5 \
        -o "f-beside$beside.hdf5" --backend gpu --device auto $TUNED >"f$beside.out" 2>&1 || echo "FAIL forces $beside"
done
"$B" compare f-beside1.hdf5 f-beside0.hdf5 --json | tr -d '\n' | cut -c1-400
echo
rm -f ./*.hdf5
source "$here/experiments/x4-lib.sh" # runp
runp 4 plummer4 "$B" --model plummer --n 134217728 --repeat 3 --steps 4
BANYAN_REMOTE_BESIDE=0 runp 4 plummer4-after "$B" --model plummer --n 134217728 --repeat 3 --steps 4
runp 4 hernquist4 "$B" --model hernquist --n 134217728 --repeat 3 --steps 4
runp 4 strong4 "$B" --model plummer --n 134217728 --repeat 3 --steps 2
runp 2 plummer2 "$B" --model plummer --n 67108864 --repeat 3 --steps 4
runp 1 plummer1 "$B" --model plummer --n 33554432 --repeat 3 --steps 4
grep -hE "crossers: (room|placed|mirror|moved)" hernquist4.err | awk '$(NF-3) + 0 > 5' | head -8
gzip -f ./*.err
