#!/usr/bin/env bash
# Session 31, second call: the aligned-period rule with held periods
# watched (a held period whose refreshes turn dear gives way at once),
# after the first version held one through a cold collapse (237 s against
# 19.3 s rebuilding at every step). M31 at 2^22 (dynamical 0.005, 1 Gyr)
# self-tuned on GPU 0; Plummer, Hernquist + NFW and the cold collapse,
# every step against self-tuned, on GPUs 1, 2 and 3 (the settings of
# rebuild-period-s31.sh).
#   bash scripts/experiments/rebuild-period-s31b.sh DIR OUTDIR   (DIR: banyan, lib/)
D=$(cd "$1" && pwd)
O=$(mkdir -p "$2" && cd "$2" && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
here=$(cd "$(dirname "$0")/.." && pwd)
A="criterion:dynamical,eta:0.005,time_bins:8,dt:0.0078125"
S="criterion:acceleration,eta:0.1,time_bins:6,dt:0.0625"
(GPUS=0 OUT=$O/m31 bash "$here/criterion-sweep.sh" "$D/banyan" 4194304 1.0227 r0=$A,tree_rebuild:0 >$O/m31.table 2>&1) &
sphere() { # GPU MODEL T
    MODEL=$2 GPUS=$1 OUT=$O/$2 bash "$here/criterion-sweep.sh" "$D/banyan" 4194304 $3 \
        r1=$S,tree_rebuild:1 r0=$S,tree_rebuild:0 >$O/$2.table 2>&1
}
(sphere 1 plummer 4) &
(sphere 2 hernquist 4; sphere 2 nfw 4) &
(sphere 3 uniform-sphere 2) &
wait
for m in m31 plummer hernquist nfw uniform-sphere; do echo "== $m"; grep -v "^shared\|fit" $O/$m.table; done
find "$O" -name restart -type d -prune -exec rm -rf {} +
