#!/usr/bin/env bash
# For the next session's device call (one H100, about 200 s): issue 19's
# benchmark, the mean wall time per block step of GOTHIC's M31 at 2^24
# (and 2^23) at GOTHIC's accuracy (session 23's fastest settings at its
# p99: accel MAC alpha 0.0073, leaf 16, group 128, group expansion 1.0;
# 8 bins, dt 1/64, eta 0.2, softening 15.625 pc), over a run long enough
# for the self-tuned rule's cycles (`banyan run` to t = 0.25: 16 cycles),
# rebuilding at every step against the self-tuned default (session 31's
# aligned period). Goal 13 ms a step at 2^24; session 28: 12.73 ms every
# step (bench, 256 steps).
#   bash scripts/experiments/m31-steps-s32.sh DIR OUTDIR   (DIR: banyan, lib/)
source "$(dirname "$0")/m31-gothic-env.sh" "$1" "$2" # D, S, O (entered), FAST, G, T
for n in ${NS:-16777216 8388608}; do
    "$D/banyan" ic galaxy --model m31 --n $n -s 1 -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic $n"; continue; }
    for r in 1 0; do
        timeout 240 "$D/banyan" run -P InitialConditions:file:m31.hdf5 $G $T -P TimeIntegration:tree_rebuild:$r \
            -o r$r-$n >r$r-$n.log 2>&1 || { echo "FAIL: $n rule $r: $(tail -2 r$r-$n.log)"; continue; }
        python3 "$S/run_summary.py" r$r-$n.log $n $r
    done
    rm -f m31.hdf5
done
find "$O" -name restart -type d -prune -exec rm -rf {} +
