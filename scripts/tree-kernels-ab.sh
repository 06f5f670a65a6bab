#!/usr/bin/env bash
# The tree's kernels, before and after (issue 19's 13 ms): two builds of
# banyan on the same machine, GOTHIC's M31 at N (default 2^24) at the
# fastest settings at GOTHIC's accuracy (session 23): forces with their
# stage times and p99 (--check), then block steps with the default
# (self-tuned) rebuild, each binary ROUNDS times in turn (A B A B ...);
# then the device time of each kernel of both builds' forces (ncu,
# clocks left alone). Table last.
#   scripts/tree-kernels-ab.sh OLD_BANYAN NEW_BANYAN [N] [OUT]   (STEPS: block steps, 256; ROUNDS: 2;
#   NCU_STEPS: also every kernel of that many block steps of the new build; RULES: tree_rebuild values
#   for the block steps, "default" the binary's own (the default); NCU=0: no ncu)
set -u
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
OLD=$(abs "$1") NEW=$(abs "$2")
N=${3:-16777216}
OUT=${4:-$PWD/out-tree-ab}
export SCRIPTS=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT" && cd "$OUT" || exit 1
[ -f m31.hdf5 ] || "$NEW" ic galaxy --model m31 --n "$N" -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic: $(tail -2 ic.log)"; exit 1; }
FAST="--mac accel --alpha 0.0073 --leaf-size 16 --group-size 128 --group-expansion 1.0 --eps 0.015625"
BLOCK="--time-bins 8 --dt 0.015625 --eta 0.2 --steps ${STEPS:-256} --repeat 1"
: >bench.jsonl
b() { # LABEL BINARY ARGS...
    local label=$1 bin=$2
    shift 2
    echo "+ $label $*" >>bench.log
    printf '{"label": "%s"}\n' "$label" >>bench.jsonl
    timeout 300 "$bin" bench --backend gpu --json --input m31.hdf5 $FAST "$@" >>bench.jsonl 2>>bench.log ||
        echo "FAIL: $label $*: $(tail -2 bench.log)"
}
for r in $(seq "${ROUNDS:-2}"); do
    b old "$OLD" --check --repeat 3
    b new "$NEW" --check --repeat 3
    for rule in ${RULES:-default}; do # default: the binary's own tree_rebuild
        extra=""
        [ "$rule" = default ] || extra="--tree-rebuild $rule"
        b "old r$rule" "$OLD" $BLOCK $extra
        b "new r$rule" "$NEW" $BLOCK $extra
    done
done
[ "${NCU:-1}" = 1 ] || { rm -f m31.hdf5; NCU_STEPS=""; }
if [ "${NCU:-1}" = 1 ]; then
    timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
        "$NEW" bench --backend gpu --input m31.hdf5 $FAST --repeat 1 >ncu-new.csv 2>ncu-new.err
    echo "ncu new: rc $?"
    timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
        "$OLD" bench --backend gpu --input m31.hdf5 $FAST --repeat 1 >ncu-old.csv 2>ncu-old.err
    echo "ncu old: rc $?"
fi
if [ -n "${NCU_STEPS:-}" ]; then # every kernel of the new build's block steps
    timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv "$NEW" bench --backend gpu \
        --input m31.hdf5 $FAST --time-bins 8 --dt 0.015625 --eta 0.2 --steps "$NCU_STEPS" --repeat 1 \
        >ncu-steps.csv 2>ncu-steps.err
    echo "ncu steps: rc $?"
fi
rm -f m31.hdf5
python3 - <<'PY' | tee table.txt
import csv, os, sys, collections
sys.path.insert(0, os.environ["SCRIPTS"])
from bench_rows import rows as read_rows
label = "?"
print(f"{'build':9s} {'forces ms':>9s} {'keys':>6s} {'sort':>6s} {'build':>6s} {'moments':>7s} {'groups':>6s} "
      f"{'walk':>6s} {'p99':>9s} {'batch ms':>8s} {'builds':>6s}")
for r in read_rows("bench.jsonl"):
    if "label" in r and len(r) == 1:
        label = r["label"]; continue
    ms = lambda k: 1e3 * r.get(k, float("nan"))
    if "batch_mean" in r:
        print(f"{label:9s} {'':9s} {'':6s} {'':6s} {'':6s} {'':7s} {'':6s} {'':6s} {'':9s} "
              f"{ms('batch_mean'):8.2f} {r.get('tree_builds', '')!s:>6s}")
    else:
        print(f"{label:9s} {ms('t_total'):9.2f} {ms('t_bbox') + ms('t_keys'):6.2f} {ms('t_sort'):6.2f} "
              f"{ms('t_build'):6.2f} {ms('t_moments'):7.2f} {ms('t_groups'):6.2f} {ms('t_walk'):6.2f} "
              f"{r.get('err_p99', float('nan')):9.2e}")
PY
for tag in old new; do
    [ -f ncu-$tag.csv ] && python3 "$SCRIPTS/ncu_kernels.py" ncu-$tag.csv \
        "ncu, $tag build, one forces call (a warm-up and the timed call):" | tee -a table.txt
done
[ -f ncu-steps.csv ] && python3 "$SCRIPTS/ncu_kernels.py" ncu-steps.csv \
    "ncu, new build, every kernel of the forces and $NCU_STEPS block steps:" | tee -a table.txt
tar czf logs.tar.gz bench.log ic.log ncu-*.err ncu-*.csv 2>/dev/null; rm -f bench.log ic.log ncu-*.err ncu-*.csv
