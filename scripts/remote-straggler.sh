#!/usr/bin/env bash
# Where the received walk's time goes on several GPUs (issue 18): weak
# MODELS at 2^25 particles a GPU on NP ranks (one a GPU), traced with each
# group's time in the main pass (BANYAN_REMOTE_GROUP_TIMES=1), and per
# rank and call: the passes' device times, the groups' span, when all
# but 1% had ended, and the longest group (time, bodies, box size against
# the median group's, start). BUDGETS: the main pass's budgets to run
# (BANYAN_REMOTE_BUDGET; "default": the build's), each a run of every model.
#   [BUDGETS="0 default"] scripts/remote-straggler.sh BANYAN OUT [NP [MODELS...]]  (2, hernquist plummer)
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
O=$2
NP=${3:-2}
shift 3 2>/dev/null || shift $#
MODELS=${*:-"hernquist plummer"}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O"
source "$here/device-mpi-env.sh"
for budget in ${BUDGETS:-default}; do
for m in $MODELS; do
    f=$O/$m-b$budget
    if [ "$budget" = default ]; then unset BANYAN_REMOTE_BUDGET; else export BANYAN_REMOTE_BUDGET=$budget; fi
    BANYAN_GRAVITY_TRACE=1 BANYAN_REMOTE_GROUP_TIMES=1 OMP_NUM_THREADS=$(($(nproc) / NP)) timeout 200 \
        mpirun --bind-to none -np "$NP" "$B" bench --backend gpu --device auto --json --model "$m" \
        --n $((33554432 * NP)) $TUNED --repeat 3 --steps 4 >"$f.out" 2>"$f.err"
    echo "$m on $NP GPUs, budget $budget: exit $?"
    python3 - "$f.err" <<'PY'
import re, sys
want = ("received walk (device)", "received walk: the main pass (device)", "received walk: the deep passes (device)",
        "received walk: groups' span", "received walk: all groups but 1% ended", "received walk: all groups but 0.1% ended",
        "received walk: groups' walks summed", "received walk: longest group 1", "received walk: longest group 1: bodies",
        "received walk: longest group 1: size / median x10", "received walk: longest group 1: start",
        "received walk: longest group 2", "received walk: longest group 3", "received walk: chunks queued",
        "received walk: chunks in the deep pass")
short = {w: w.replace("received walk: ", "").replace(" (device)", "") for w in want}
rows = {}
for l in open(sys.argv[1]):
    m = re.match(r"^gravity (?:trace|count): (.*?)\s+([-\d.e+]+)(?: ms)? \[rank (\d+)\]", l)
    if not m or m.group(1).strip() not in want: continue
    r, k = int(m.group(3)), m.group(1).strip()
    cur = rows.setdefault(r, [{}])
    if k in cur[-1]: cur.append({})  # a key again: the next call's
    cur[-1][k] = float(m.group(2))
def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")
for r in sorted(rows):  # the calls after the first cut (the bench's 6th on): medians, and the largest
    calls = rows[r][5:] or rows[r]
    print(f"  rank {r}, {len(calls)} calls: " + ", ".join(
        f"{short[k]} {med([c[k] for c in calls if k in c]):.4g} (max {max([c[k] for c in calls if k in c] or [0]):.4g})"
        for k in want[1:8] + want[13:]))
PY
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"  bench: batch {1e3*r.get('batch_mean',0):.1f} ms, best step {1e3*r.get('step_best',0):.1f}, forces {1e3*r['t_total']:.1f}\")" "$f.out" 2>/dev/null
done
done
