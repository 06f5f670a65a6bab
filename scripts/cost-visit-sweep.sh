#!/usr/bin/env bash
# Issue 18: the weight of a visited cell in the measured costs that cut
# the domains (BANYAN_COST_VISIT, flops per cell a chunk's walk visits).
# Weak Plummer on P GPUs (one rank each), bench's steps (cut by count,
# then by the first forces' costs), for each weight: the batch step and
# how long the ranks waited for the slowest one's received walk; the
# traces' walk times and visit counts per call for a fit (fit.jsonl).
# VAR=BANYAN_LET_BOXES (or another variable, e.g. BANYAN_REMOTE_BOX_GROUPS)
# sweeps that instead.
#   scripts/cost-visit-sweep.sh BANYAN [P] [WEIGHTS...]  (default 4; 0 300 1000)
set -u
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
P=${2:-4}
shift $(( $# > 1 ? 2 : 1 ))
WEIGHTS=${*:-"0 300 1000"}
N=${N:-33554432}
OUT=${OUT:-$PWD/out-cost-visit}
mkdir -p "$OUT" && cd "$OUT" || exit 1
source "$SCRIPTS/device-mpi-env.sh"
export BANYAN_GRAVITY_TRACE=1
fail=0
for w in $WEIGHTS; do
    env "${VAR:-BANYAN_COST_VISIT}=$w" OMP_NUM_THREADS=$(( $(nproc) / P )) timeout 300 mpirun --bind-to none -np "$P" "$BIN" bench \
        --backend gpu --device auto --json --model plummer --n $((N * P)) $TUNED --repeat 1 --steps 4 \
        >"w$w.out" 2>"w$w.err" || { echo "FAIL: weight $w: $(tail -2 "w$w.err")"; fail=1; }
done
python3 - "$P" $WEIGHTS <<'PY'
import json, re, sys, statistics
P, weights = int(sys.argv[1]), sys.argv[2:]
for w in weights:
    try:
        r = json.load(open(f"w{w}.out"))
    except Exception:
        print(f"weight {w}: no result"); continue
    v = {}
    for l in open(f"w{w}.err"):
        m = re.match(r"\s*gravity (trace|count): (.*?)\s+([-0-9.e+]+)( ms)?( \[rank \d+\])?\s*$", l)
        if m: v.setdefault(m.group(2), []).append(float(m.group(3)))
    wait = v.get("wait for the other ranks (device)", [0])
    recv = v.get("received walk (device)", [0])
    bodies = v.get("received walk: source bodies", [0])
    print(f"{w:>5}: received bodies max {max(bodies) / 1e6:.1f} M, median {statistics.median(bodies) / 1e6:.1f} M; batch step {1e3 * r['batch_mean']:.1f} ms, best {1e3 * r['step_best']:.1f}, forces "
          f"{1e3 * r['step_t_total']:.1f}; wait for the slowest rank median {statistics.median(wait):.1f} ms, "
          f"max {max(wait):.1f}; received walk median {statistics.median(recv):.1f}, max {max(recv):.1f}")
    if "received walk: boxes" in v: # the far field per box of groups (BANYAN_REMOTE_BOX_GROUPS)
        nb, fr = v["received walk: boxes"], v["received walk: frontier cells"]
        print(f"       boxes: {statistics.median(nb):.0f} a rank, overflowed {max(v['received walk: boxes overflowed']):.0f} "
              f"at most, frontier {statistics.median([f / b for f, b in zip(fr, nb)]):.0f} cells a box (median), "
              f"largest {max(v['received walk: largest frontier']):.0f}")
    if "received walk: cells visited" in v:
        print(f"       received walk: cells visited median {statistics.median(v['received walk: cells visited']) / 1e6:.0f} M, "
              f"far cells {statistics.median(v['received walk: far cells']) / 1e6:.0f} M, "
              f"pp {statistics.median(v['received walk: pp']) / 1e9:.2f} G, pc {statistics.median(v['received walk: pc']) / 1e9:.2f} G")
    with open("fit.jsonl", "a") as f:
        f.write(json.dumps({"weight": w, **{k: v[k] for k in v if "visited" in k or "walk" in k or "pp" in k
                                          or "pc" in k or "far" in k}}) + "\n")
PY
exit $fail
