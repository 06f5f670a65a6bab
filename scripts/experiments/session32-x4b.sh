#!/usr/bin/env bash
# Session 32's last device call (nvidia-h200-x4): issue 19's check of the
# self-tuned default against rebuilding at every step on its five models
# at 2^22 (scripts/rebuild-rules-check.sh) with the refused build ahead
# (cfb9d6d); then, alone on one GPU, where `banyan run`'s wall time on
# M31 at 2^24 goes beyond its steps (16.4 ms a step by the run's wall
# time against 11.8 by `banyan bench`, session 32): the same run to
# t = 0.25 (2048 steps) and to 1/32 (256 steps), their logs kept.
#   bash scripts/experiments/session32-x4b.sh DIR OUTDIR   (DIR: banyan, lib/)
D=$(cd "$1" && pwd)
O=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
timeout 340 bash "$here/rebuild-rules-check.sh" "$D" "$O/rules" 2>&1 | tail -30
cd "$O" || exit 1
"$D/banyan" ic galaxy --model m31 --n 16777216 -s 1 -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic"; exit 1; }
G="-P Gravity:mac:accel -P Gravity:accel_alpha:0.0073 -P Gravity:leaf_size:16 -P Gravity:group_size:128
   -P Gravity:group_expansion:1.0 -P Gravity:softening:0.015625"
T="-P TimeIntegration:time_bins:8 -P TimeIntegration:dt:0.015625 -P TimeIntegration:eta:0.2
   -P Snapshots:render:no -P Snapshots:final:no -P Restart:interval:0 -P TimeIntegration:tree_rebuild:1"
for t in 0.03125 0.25; do
    s=$(date +%s.%N)
    CUDA_VISIBLE_DEVICES=0 timeout 120 "$D/banyan" run -P InitialConditions:file:m31.hdf5 $G $T -P TimeIntegration:t_end:$t \
        -P Statistics:interval:$t -o m31-$t >m31-$t.log 2>&1
    echo "t_end $t: exit $?, $(python3 -c "import time; print(f'{time.time() - $s:.2f}')") s by the clock"
    grep "steps from" m31-$t.log
done
rm -rf m31.hdf5 m31-*/restart
