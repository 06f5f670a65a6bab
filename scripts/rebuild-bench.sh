#!/usr/bin/env bash
# Issue 19's "block steps that always pay off": mean wall time per block
# step with the tree rebuilt at every step (tree_rebuild 1) against the
# self-tuned interval weighed by measured time (tree_rebuild 0,
# rebuild_cost time) and by counted work (rebuild_cost work), on Plummer,
# Hernquist, NFW, a cold collapse and GOTHIC's M31; then GOTHIC's second
# benchmark, the NFW sphere (scale radius 1, cut at 5, softening 1/64) at
# GOTHIC's fiducial accuracy (accel criterion, Delta_acc = 2^-7). M31 at
# three settings: bonsai-box, GOTHIC's fiducial, and the fastest at its
# accuracy (session 23).
# Every row one `banyan bench` (64 block steps, their mean). Prints a table last.
#   scripts/rebuild-bench.sh BANYAN [N]     (default N = 2^24; BACKEND=cpu for the CPU;
#   PARTS: a subset of "spheres m31 nfw5"; COSTS: a subset of "time work"; STEPS: block steps a row, 64)
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
export SCRIPTS=$(cd "$(dirname "$0")" && pwd) # bench_rows.py
N=${2:-16777216}
OUT=${OUT:-$PWD/out-rebuild}
mkdir -p "$OUT" && cd "$OUT" || exit 1
TUNED="--theta 0.67 --mac bonsai-box --leaf-size 32 --group-size 256 --group-expansion 0.4"
GOTHIC="--mac accel --alpha 0.0078125"
M31FAST="--mac accel --alpha 0.0073 --leaf-size 16 --group-size 128 --group-expansion 1.0" # session 23: GOTHIC's p99 at least cost
SPHERES="--steps ${STEPS:-64} --time-bins 6 --dt 0.0625 --eta 0.1 --repeat 1"
GALAXY="--steps ${STEPS:-64} --time-bins 8 --dt 0.015625 --eta 0.2 --repeat 1 --eps 0.015625"
: >bench.jsonl
fail=0
b() {
    echo "+ $*" >>bench.log
    timeout "${BENCH_TIMEOUT:-300}" "$BIN" bench --backend "${BACKEND:-gpu}" --json "$@" >>bench.jsonl 2>>bench.log ||
        { echo "FAIL: $*: $(tail -2 bench.log)"; fail=1; }
}
PARTS=${PARTS:-"spheres m31 nfw5"} COSTS=${COSTS:-"time work"}
rebuilds() { # every step, then the self-tuned ways for one input
    b "$@" --tree-rebuild 1
    for cost in $COSTS; do b "$@" --tree-rebuild 0 --rebuild-cost "$cost"; done
}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
if has spheres; then
    for m in plummer hernquist nfw; do rebuilds --model $m --n "$N" $TUNED $SPHERES; done
    rebuilds --model uniform-sphere --n "$N" $TUNED $SPHERES --eps 0.01 # a cold collapse
fi
if has m31; then
    "$BIN" ic galaxy --model m31 --n "$N" -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic galaxy: $(tail -2 ic.log)"; fail=1; }
    rebuilds --input m31.hdf5 $TUNED $GALAXY
    rebuilds --input m31.hdf5 $GOTHIC $GALAXY
    rebuilds --input m31.hdf5 $M31FAST $GALAXY
fi
if has nfw5; then # GOTHIC's NFW benchmark (0.44 s per step at 2^24 on a GTX TITAN X): forces with their error, then block steps
    "$BIN" ic nfw --n "$N" --truncation 5 -o nfw5.hdf5 >>ic.log 2>&1 || { echo "FAIL: ic nfw: $(tail -2 ic.log)"; fail=1; }
    b --input nfw5.hdf5 --eps 0.015625 $GOTHIC --check --repeat 2
    rebuilds --input nfw5.hdf5 --eps 0.015625 $GOTHIC --steps ${STEPS:-64} --time-bins 8 --dt 0.125 --eta 0.2 --repeat 1
fi
rm -f m31.hdf5 nfw5.hdf5
python3 - <<'PY' | tee table.txt
import os, sys
sys.path.insert(0, os.environ["SCRIPTS"])
from bench_rows import rows as read_rows
rows = read_rows("bench.jsonl")
print(f"{'input':10s} {'mac':10s} {'rebuild':>7s} {'cost':>5s} {'forces ms':>9s} {'p99':>9s} {'step ms':>8s} "
      f"{'best':>7s} {'active':>6s} {'builds/64':>9s}")
for r in rows:
    name = r.get("input", r.get("model", "?")).split("/")[-1]
    rb = r.get("tree_rebuild", "")
    print(f"{name:10s} {r['mac']:10s} {rb!s:>7s} {r.get('rebuild_cost', '') if rb == 0 else '':>5s} "
          f"{1e3 * r['t_total']:9.2f} {r.get('err_p99', float('nan')):9.2e} {1e3 * r.get('step_mean', float('nan')):8.2f} "
          f"{1e3 * r.get('step_best', float('nan')):7.2f} {r.get('active_mean', 1.0):6.3f} {r.get('tree_builds', '')!s:>9s}")
PY
exit $fail
