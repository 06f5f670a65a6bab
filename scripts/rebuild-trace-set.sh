#!/usr/bin/env bash
# Issue 19: where the self-tuned rebuild's refreshes win or lose against
# rebuilding at every step. collapse-trace.sh's one row per step for the
# same input three times (tree_rebuild 1; 0 with rebuild_cost work; 0
# with time), then per first active bin: the steps rebuilt and refreshed,
# their mean walk and tree ms, and per run the summed walk + tree ms and
# the bench's step and batch means. Prints the table last.
#   scripts/rebuild-trace-set.sh BANYAN [N] [STEPS]   (MODEL, M31 as
#   collapse-trace.sh's; RULES: a subset of "every work time")
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-8388608} STEPS=${3:-256}
here=$(cd "$(dirname "$0")" && pwd)
export OUT=${OUT:-$PWD/out-rebuild-trace}
mkdir -p "$OUT"
tags=""
for rule in ${RULES:-every work time}; do
    case $rule in
    every) REBUILD=1 COST=work "$here/collapse-trace.sh" "$BIN" "$N" "$STEPS" >/dev/null ;;
    *) REBUILD=0 COST=$rule "$here/collapse-trace.sh" "$BIN" "$N" "$STEPS" >/dev/null ;;
    esac
    tags="$tags $rule"
done
cd "$OUT" || exit 1
python3 - "$N" "${MODEL:-uniform-sphere}" "${M31:-fast}" $tags <<'PY' | tee "set-${MODEL:-uniform-sphere}-$N.txt"
import json, sys
n, model, m31, rules = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
pre = (("m31g" if m31 == "gothic" else "m31") if model == "m31" else model) + "-" + n
files = {"every": f"{pre}-r1work", "work": f"{pre}-r0work", "time": f"{pre}-r0time"}
print(f"{pre}: per first active bin, steps rebuilt / refreshed, mean walk ms (rebuilt / refreshed), mean tree ms")
for rule in rules:
    try:
        lines = open(files[rule] + ".table").read().splitlines()[1:]
        js = json.load(open(files[rule] + ".json"))
    except (OSError, ValueError) as e:
        print(f"{rule}: no result ({e})")
        continue
    rows = [l.split() for l in lines if l.strip()]
    bins = {}
    walk = tree = 0.0
    for r in rows:
        b, rb, w, t = int(r[1]), int(r[2]), float(r[4]), float(r[5])
        walk, tree = walk + w, tree + t
        d = bins.setdefault(b, [[], [], []])
        d[0 if rb else 1].append(w)
        d[2].append(t)
    m = lambda a: sum(a) / len(a) if a else float("nan")
    head = (f"{rule}: step {1e3 * js.get('step_mean', float('nan')):.2f} ms, batch "
            f"{1e3 * js.get('batch_mean', float('nan')):.2f} ms, builds {js.get('tree_builds', '?')}")
    if not rows:  # tree_rebuild 1 reads nothing per step: no rows to trace
        print(head + ", no per-step rows")
        continue
    print(head + f", summed walk {walk:.1f} ms + tree {tree:.1f} ms over {len(rows)} steps")
    for b in sorted(bins):
        d = bins[b]
        print(f"   bin {b}: {len(d[0]):3d} / {len(d[1]):3d}  walk {m(d[0]):7.2f} / {m(d[1]):7.2f}  tree {m(d[2]):6.2f}")
PY
