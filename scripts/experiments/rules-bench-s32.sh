#!/usr/bin/env bash
# Session 32: issue 19's four spheres at 2^22 (rebuild-rules-check.sh's
# settings: acceleration criterion eta 0.1, 6 bins, dt 1/16, softening
# 0.01, the library's gravity defaults) timed by `banyan bench` instead
# of `banyan run`, so that the IC's making and the final restart file
# stay out of the times: the self-tuned default (0, counted work)
# against every step (1), twice each, alternating, one GPU.
#   bash scripts/experiments/rules-bench-s32.sh BANYAN_DIR OUTDIR
D=$(cd "$1" && pwd)
O=$(mkdir -p "$2" && cd "$2" && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
cd "$O" || exit 1
for ms in plummer:512 hernquist:512 nfw:256 uniform-sphere:691; do
    m=${ms%:*} steps=${ms#*:}
    for rep in 1 2; do
        for r in 1 0; do
            timeout 100 "$D/banyan" bench --backend gpu --json --model $m --n 4194304 --eps 0.01 --time-bins 6 \
                --dt 0.0625 --eta 0.1 --steps $steps --repeat 1 --tree-rebuild $r --rebuild-cost work \
                >$m-$r-$rep.json 2>$m-$r-$rep.err || { echo "FAIL $m $r: $(tail -1 $m-$r-$rep.err)"; continue; }
            python3 -c "
import json; d = json.load(open('$m-$r-$rep.json'))
print(f\"$m rule $r: {d['steps']} steps, {d['batch_mean'] * d['steps']:.2f} s stepping ({1e3 * d['batch_mean']:.2f} ms a step), {d['tree_builds']} builds, t {d['sim_time']:.3g}\")"
        done
    done
done
