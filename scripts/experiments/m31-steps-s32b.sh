#!/usr/bin/env bash
# Session 32, issue 19's benchmark alone on one GPU: GOTHIC's M31 at 2^24
# at GOTHIC's accuracy (session 23's fastest settings: accel alpha
# 0.0073, leaf 16, group 128, group expansion 1.0, softening 15.625 pc;
# 8 bins, dt 1/64, eta 0.2), the self-tuned default (0) against every
# step (1), measured both ways: `banyan bench` (session 28's 12.73 ms:
# its mean wall time a step in a batch, 256 steps, then 2048) and `banyan
# run` to t = 0.25 (2048 steps, 16 cycles; session 32's first call, four
# runs sharing a host, gave 16.46 / 15.98 ms). Then 2^23 by `banyan run`.
#   bash scripts/experiments/m31-steps-s32b.sh DIR OUTDIR   (DIR: banyan, lib/)
source "$(dirname "$0")/m31-gothic-env.sh" "$1" "$2" # D, S, O (entered), FAST, G, T
row() { # LOG N RULE: steps, ms a step, energy error, builds of a run
    python3 "$S/run_summary.py" "$@" "run   "
}
for n in 16777216 8388608; do
    "$D/banyan" ic galaxy --model m31 --n $n -s 1 -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic $n"; continue; }
    if [ $n = 16777216 ]; then
        for steps in 256 2048; do
            for r in 1 0; do
                timeout 200 "$D/banyan" bench --backend gpu --json --input m31.hdf5 $FAST --time-bins 8 --dt 0.015625 \
                    --eta 0.2 --steps $steps --repeat 1 --tree-rebuild $r >b$r-$steps.json 2>b$r-$steps.err ||
                    { echo "FAIL: bench $steps $r: $(tail -2 b$r-$steps.err)"; continue; }
                python3 -c "
import json; d = json.load(open('b$r-$steps.json'))
print(f\"bench N $n tree_rebuild $r: {d['steps']} steps, {1e3 * d['batch_mean']:.2f} ms a step in a batch, \"
      f\"{1e3 * d['step_mean']:.2f} alone, {d['tree_builds']} builds, active {d['active_mean']:.3f}\")"
            done
        done
    fi
    for r in 1 0; do
        timeout 200 "$D/banyan" run -P InitialConditions:file:m31.hdf5 $G $T -P TimeIntegration:tree_rebuild:$r \
            -o r$r-$n >r$r-$n.log 2>&1 || { echo "FAIL: $n rule $r: $(tail -2 r$r-$n.log)"; continue; }
        row r$r-$n.log $n $r
    done
    rm -f m31.hdf5
done
find "$O" -name restart -type d -prune -exec rm -rf {} +
