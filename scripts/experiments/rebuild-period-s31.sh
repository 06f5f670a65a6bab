#!/usr/bin/env bash
# Session 31: the self-tuned rebuild as an aligned period chosen from
# measured cycles (integrate/rebuild_tuner.h) against rebuilding at every
# step (tree_rebuild 1) and every other step (2), each run alone on its
# GPU (criterion-sweep.sh's table: wall time, energy error, builds):
#  1. M31 at 2^22 for 1 Gyr, dynamical criterion eta 0.005 (session 30-31:
#     every other step 100.6 s, the old self-tuned rule 115.7 s): tuned by
#     counted work and by measured time;
#  2. Plummer, Hernquist, NFW (to t = 4) and a cold collapse (a cold
#     uniform sphere through its collapse, t = 2) at 2^22, the
#     acceleration criterion (eta 0.1, 6 bins, dt 1/16), one model a GPU.
#   bash scripts/experiments/rebuild-period-s31.sh DIR OUTDIR   (DIR: banyan, lib/)
D=$(cd "$1" && pwd)
O=$(mkdir -p "$2" && cd "$2" && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
here=$(cd "$(dirname "$0")/.." && pwd)
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
A="criterion:dynamical,eta:0.005,time_bins:8,dt:0.0078125"
OUT=$O/m31 bash "$here/criterion-sweep.sh" "$D/banyan" 4194304 1.0227 \
    0:r1=$A,tree_rebuild:1 1:r2=$A,tree_rebuild:2 2:r0=$A,tree_rebuild:0 3:r0t=$A,tree_rebuild:0,rebuild_cost:time
S="criterion:acceleration,eta:0.1,time_bins:6,dt:0.0625"
g=0
for m in plummer:4 hernquist:4 nfw:4 uniform-sphere:2; do
    (MODEL=${m%:*} GPUS=$g OUT=$O/${m%:*} bash "$here/criterion-sweep.sh" "$D/banyan" 4194304 ${m#*:} \
        r1=$S,tree_rebuild:1 r0=$S,tree_rebuild:0 r2=$S,tree_rebuild:2 >$O/${m%:*}.table 2>&1) &
    g=$((g + 1))
done
wait
for m in plummer hernquist nfw uniform-sphere; do echo "== $m"; grep -v "^shared\|fit" $O/$m.table; done
find "$O" -name restart -type d -prune -exec rm -rf {} +
