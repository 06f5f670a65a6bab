#!/usr/bin/env bash
# Session 32's last device call, on one H200 (no 4-GPU machine lent):
# issue 19's five models at 2^22 as scripts/rebuild-rules-check.sh runs
# them, one after another: the spheres under both rules and M31 (1 Gyr,
# dynamical criterion eta 0.005) under the self-tuned default only. The
# work rule is deterministic, so equal builds and energy errors to the
# first call's (before cfb9d6d) say that no build ahead was refused
# there; the cold collapse's are the change. Then where `banyan run`'s
# wall time on M31 at 2^24 goes beyond its steps (16.4 ms a step by the
# run's wall time against 11.8 by `banyan bench`): the run to t = 0.25
# (2048 steps) and to 1/32 (256 steps), their logs kept.
#   bash scripts/experiments/session32-one.sh DIR OUTDIR   (DIR: banyan, lib/)
D=$(cd "$1" && pwd)
O=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
N=4194304
S="criterion:acceleration,eta:0.1,time_bins:6,dt:0.0625"
A="criterion:dynamical,eta:0.005,time_bins:8,dt:0.0078125"
for m in plummer:4 hernquist:4 nfw:4 uniform-sphere:2; do
    MODEL=${m%:*} GPUS=0 OUT=$O/${m%:*} timeout 150 bash "$here/criterion-sweep.sh" "$D/banyan" $N ${m#*:} \
        r1=$S,tree_rebuild:1 r0=$S,tree_rebuild:0 2>&1 | grep -v "^shared\|fit" | sed "s/^/${m%:*} /"
done
GPUS=0 OUT=$O/m31 timeout 200 bash "$here/criterion-sweep.sh" "$D/banyan" $N 1.0227 r0=$A,tree_rebuild:0 2>&1 |
    grep -v "^shared\|fit" | sed "s/^/m31 /"
find "$O" -mindepth 2 -type d -prune -exec rm -rf {} +
cd "$O" || exit 1
"$D/banyan" ic galaxy --model m31 --n 16777216 -s 1 -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic"; exit 1; }
G="-P Gravity:mac:accel -P Gravity:accel_alpha:0.0073 -P Gravity:leaf_size:16 -P Gravity:group_size:128
   -P Gravity:group_expansion:1.0 -P Gravity:softening:0.015625"
T="-P TimeIntegration:time_bins:8 -P TimeIntegration:dt:0.015625 -P TimeIntegration:eta:0.2
   -P Snapshots:render:no -P Snapshots:final:no -P Restart:interval:0 -P TimeIntegration:tree_rebuild:1"
for t in 0.03125 0.25; do
    s=$(date +%s.%N)
    timeout 120 "$D/banyan" run -P InitialConditions:file:m31.hdf5 $G $T -P TimeIntegration:t_end:$t \
        -P Statistics:interval:$t -o m31-$t >m31-$t.log 2>&1
    echo "t_end $t: exit $?, $(python3 -c "import time; print(f'{time.time() - $s:.2f}')") s by the clock"
    grep "steps from" m31-$t.log
done
rm -rf m31.hdf5 m31-*/
