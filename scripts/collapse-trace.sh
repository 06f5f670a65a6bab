#!/usr/bin/env bash
# Issue 19: why the self-tuned rebuild (tree_rebuild 0) can run far slower
# than rebuilding every step in a cold collapse on the GPU. Block steps of
# a uniform sphere (the rebuild-bench.sh settings) with
# BANYAN_GRAVITY_TRACE=1, then one row per step: first active bin, rebuilt
# or refreshed, active count, walk ms, the walk's counts, the opened nodes
# given as bodies (stack full), a refresh's groups' growth (the mean
# (size / built size)^3 that tree/refresh_guard.h judges; a refused
# refresh shows it with rb 1) and the tuner's state after the step.
#   scripts/collapse-trace.sh BANYAN [N] [STEPS]   (REBUILD: tree_rebuild, 0;
#   COST: rebuild_cost, work; BACKEND=cpu for the CPU; MODEL: uniform-sphere,
#   or m31 for GOTHIC's M31 (`banyan ic galaxy --model m31`) at the settings
#   of rebuild-bench.sh's M31FAST, or GOTHIC's with M31=gothic)
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-4194304} STEPS=${3:-256}
OUT=${OUT:-$PWD/out-collapse-trace}
mkdir -p "$OUT" && cd "$OUT" || exit 1
tag=${MODEL:-uniform-sphere}-$N-r${REBUILD:-0}${COST:-work}
args="--model ${MODEL:-uniform-sphere} --n $N --eps 0.01 --theta 0.67 --mac bonsai-box --leaf-size 32 --group-size 256
      --group-expansion 0.4 --time-bins 6 --dt 0.0625 --eta 0.1 --repeat 1 --steps $STEPS"
if [ "${MODEL:-}" = m31 ]; then
    [ -f m31-$N.hdf5 ] || "$BIN" ic galaxy --model m31 --n "$N" -o m31-$N.hdf5 >ic.log 2>&1 || { echo "FAIL: ic galaxy"; exit 1; }
    if [ "${M31:-fast}" = gothic ]; then mac="--mac accel --alpha 0.0078125"; tag=m31g-$N-r${REBUILD:-0}${COST:-work}
    else mac="--mac accel --alpha 0.0073 --leaf-size 16 --group-size 128 --group-expansion 1.0"; fi
    args="--input m31-$N.hdf5 $mac --time-bins 8 --dt 0.015625 --eta 0.2 --eps 0.015625 --repeat 1 --steps $STEPS"
fi
start=$(date +%s)
BANYAN_GRAVITY_TRACE=1 timeout "${BENCH_TIMEOUT:-300}" "$BIN" bench --backend "${BACKEND:-gpu}" --json $args \
    --tree-rebuild "${REBUILD:-0}" --rebuild-cost "${COST:-work}" >"$tag.json" 2>"$tag.trace"
rc=$?
echo "$tag: exit $rc after $(( $(date +%s) - start )) s"
python3 - "$tag.trace" "${REBUILD:-0}" <<'PY' | tee "$tag.table"
import re, sys
rows, cur, spill, grow = [], {}, 0.0, float("nan")
for l in open(sys.argv[1]):
    g = re.match(r"gravity (count|trace): (.+?)\s{2,}\s*([-0-9.e+]+)", l)
    if not g:
        continue
    what, v = g.group(2).strip(), float(g.group(3))
    if what.startswith("local walk: nodes given"):
        spill = v
    elif what.startswith("refresh: groups' growth"):
        grow = v / 1e3
    elif what.startswith("tuner: "):
        cur[what[7:]] = v
        if what == ("tuner: hold" if sys.argv[2] == "0" else "tuner: cells visited"):
            cur["spill"], cur["growth"] = spill, grow
            rows.append(cur)
            cur, spill, grow = {}, 0.0, float("nan")
print(f"{'step':>4s} {'bin':>3s} {'rb':>2s} {'active':>9s} {'walk ms':>9s} {'tree ms':>8s} {'Gflop':>8s} {'Mvisit':>8s} "
      f"{'spill':>8s} {'growth':>8s} {'period':>6s} {'hold':>6s}")
for i, r in enumerate(rows):
    print(f"{i:4d} {r.get('first active bin', -1):3.0f} {r.get('rebuilt', -1):2.0f} {r.get('active', 0):9.0f} "
          f"{r.get('walk', 0):9.2f} {r.get('tree', 0):8.2f} {r.get('walk flops', 0) / 1e9:8.1f} "
          f"{r.get('cells visited', 0) / 1e6:8.1f} {r['spill']:8.0f} {r['growth']:8.3g} {r.get('period', 0):6.0f} "
          f"{r.get('hold', 0):6.0f}")
PY
exit $rc
