#!/usr/bin/env bash
# How far the self-tuned rebuild's counted work (walk flops + visited cells
# at interact.h's BN_FLOPS_VISIT) follows the walk's measured time, fresh
# and refreshed: block steps at a fixed rebuild interval with
# BANYAN_GRAVITY_TRACE=1 (simulation.c's "tuner:" lines, one set per step),
# then a least-squares fit of walk time on flops and visits, and each
# kind of step's measured time against the fit. Prints a table last.
#   scripts/tuner-trace.sh BANYAN [N] [INTERVAL]   (BACKEND=cpu for the CPU;
#   MODELS: a subset of "plummer hernquist m31")
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-16777216} EVERY=${3:-4}
OUT=${OUT:-$PWD/out-tuner-trace}
mkdir -p "$OUT" && cd "$OUT" || exit 1
SPHERES="--theta 0.67 --mac bonsai-box --leaf-size 32 --group-size 256 --group-expansion 0.4 --time-bins 6 --dt 0.0625 --eta 0.1"
M31="--mac accel --alpha 0.0073 --leaf-size 16 --group-size 128 --group-expansion 1.0 --time-bins 8 --dt 0.015625 --eta 0.2 --eps 0.015625"
fail=0
for m in ${MODELS:-plummer hernquist m31}; do
    if [ "$m" = m31 ]; then
        "$BIN" ic galaxy --model m31 --n "$N" -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic galaxy"; fail=1; continue; }
        args="--input m31.hdf5 $M31"
    else
        args="--model $m --n $N $SPHERES"
    fi
    BANYAN_GRAVITY_TRACE=1 timeout "${BENCH_TIMEOUT:-300}" "$BIN" bench --backend "${BACKEND:-gpu}" --repeat 1 --steps 32 \
        --tree-rebuild "$EVERY" $args >"$m.out" 2>"$m.trace" || { echo "FAIL: $m: $(tail -2 "$m.trace")"; fail=1; }
done
rm -f m31.hdf5
python3 - "${MODELS:-plummer hernquist m31}" <<'PY' | tee table.txt
import re, sys
VISIT = 430.0


def lstsq2(x, y, t):  # t ~ a x + b y
    sxx, sxy, syy = sum(a * a for a in x), sum(a * b for a, b in zip(x, y)), sum(b * b for b in y)
    sxt, syt = sum(a * c for a, c in zip(x, t)), sum(b * c for b, c in zip(y, t))
    det = sxx * syy - sxy * sxy
    return ((sxt * syy - syt * sxy) / det, (syt * sxx - sxt * sxy) / det) if det else (0.0, 0.0)


def mean(a):
    return sum(a) / len(a) if a else float("nan")


print(f"{'model':10s} {'kind':9s} {'steps':>5s} {'walk ms':>8s} {'Gflop':>7s} {'Mvisits':>8s} {'fit ms':>7s} {'work fit ms':>11s}")
for m in sys.argv[1].split():
    try:
        lines = open(f"{m}.trace").read().splitlines()
    except OSError:
        continue
    steps, cur = [], {}
    for l in lines:
        g = re.match(r"gravity (?:count|trace): tuner: (.+?)\s{2,}\s*([-0-9.e+]+)", l)
        if not g:
            continue
        cur[g.group(1).strip()] = float(g.group(2))
        if g.group(1).strip() == "cells visited":
            steps.append(cur)
            cur = {}
    if not steps:
        continue
    t = [s["walk"] for s in steps]
    f = [s["walk flops"] for s in steps]
    v = [s["cells visited"] for s in steps]
    r = [s["rebuilt"] > 0 for s in steps]
    a, b = lstsq2(f, v, t)
    # ms a work unit (flops + VISIT visits), fitted on the fresh steps alone
    w = [fi + VISIT * vi for fi, vi in zip(f, v)]
    wf = [wi for wi, ri in zip(w, r) if ri]
    tf = [ti for ti, ri in zip(t, r) if ri]
    per = sum(x * y for x, y in zip(wf, tf)) / sum(x * x for x in wf) if wf else 0.0
    for kind, want in (("rebuilt", True), ("refreshed", False)):
        idx = [i for i in range(len(t)) if r[i] == want]
        if not idx:
            continue
        print(f"{m:10s} {kind:9s} {len(idx):5d} {mean([t[i] for i in idx]):8.3f} {mean([f[i] for i in idx]) / 1e9:7.2f} "
              f"{mean([v[i] for i in idx]) / 1e6:8.3f} {mean([a * f[i] + b * v[i] for i in idx]):7.3f} "
              f"{mean([per * w[i] for i in idx]):11.3f}")
    print(f"{m:10s} fit: {a * 1e9:.2f} ps a flop, {b * 1e9:.1f} ps a visit (visit/flop {b / a if a else 0:.0f}); "
          f"{per * 1e9:.3f} ps a work unit on the fresh steps")
PY
exit $fail
