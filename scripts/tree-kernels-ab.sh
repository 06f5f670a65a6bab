#!/usr/bin/env bash
# The tree's kernels, before and after (issue 19's 13 ms): two builds of
# banyan on the same machine, GOTHIC's M31 at N (default 2^24) at the
# fastest settings at GOTHIC's accuracy (session 23): forces with their
# stage times and p99 (--check), then block steps with the default
# (self-tuned) rebuild, each binary ROUNDS times in turn (A B A B ...);
# then the device time of each tree kernel of the new build's forces
# (ncu, clocks left alone). Table last.
#   scripts/tree-kernels-ab.sh OLD_BANYAN NEW_BANYAN [N] [OUT]   (STEPS: block steps, 256; ROUNDS: 2)
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
    b old "$OLD" $BLOCK
    b new "$NEW" $BLOCK
done
KERNELS='regex:bbox|cube|keys|Radix|Onesweep|Histogram|Exclusive|Scan|plan|write|rank|fill|shape|leaf|level|store_com|bodies|gather|group|keep'
timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv -k "$KERNELS" \
    "$NEW" bench --backend gpu --input m31.hdf5 $FAST --repeat 1 >ncu-new.csv 2>ncu-new.err
echo "ncu new: rc $?"
timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv -k "$KERNELS" \
    "$OLD" bench --backend gpu --input m31.hdf5 $FAST --repeat 1 >ncu-old.csv 2>ncu-old.err
echo "ncu old: rc $?"
rm -f m31.hdf5
python3 - <<'PY' | tee table.txt
import csv, os, sys, collections
sys.path.insert(0, os.environ["SCRIPTS"])
from bench_rows import rows as read_rows
label = "?"
print(f"{'build':5s} {'forces ms':>9s} {'keys':>6s} {'sort':>6s} {'build':>6s} {'moments':>7s} {'groups':>6s} "
      f"{'walk':>6s} {'p99':>9s} {'batch ms':>8s} {'builds':>6s}")
for r in read_rows("bench.jsonl"):
    if "label" in r and len(r) == 1:
        label = r["label"]; continue
    ms = lambda k: 1e3 * r.get(k, float("nan"))
    if "batch_mean" in r:
        print(f"{label:5s} {'':9s} {'':6s} {'':6s} {'':6s} {'':7s} {'':6s} {'':6s} {'':9s} "
              f"{ms('batch_mean'):8.2f} {r.get('tree_builds', '')!s:>6s}")
    else:
        print(f"{label:5s} {ms('t_total'):9.2f} {ms('t_bbox') + ms('t_keys'):6.2f} {ms('t_sort'):6.2f} "
              f"{ms('t_build'):6.2f} {ms('t_moments'):7.2f} {ms('t_groups'):6.2f} {ms('t_walk'):6.2f} "
              f"{r.get('err_p99', float('nan')):9.2e}")
for tag in ("old", "new"):
    tot = collections.defaultdict(lambda: [0, 0.0])
    try:
        lines = [l for l in open(f"ncu-{tag}.csv") if l.startswith('"')]
    except OSError:
        continue
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum": continue
        name = row["Kernel Name"].split("(")[0].split("<")[0].replace("void ", "").strip()[:40]
        scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0}.get(row["Metric Unit"], 1e-6)
        tot[name][0] += 1
        tot[name][1] += float(row["Metric Value"].replace(",", "")) * scale
    print(f"\nncu, {tag} build, one forces call (every kernel the regex names; the walk left out):")
    for name, (k, ms) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:40s} {k:4d} launches {ms:8.3f} ms")
    print(f"  {'total':40s} {sum(v[0] for v in tot.values()):4d} launches {sum(v[1] for v in tot.values()):8.3f} ms")
PY
