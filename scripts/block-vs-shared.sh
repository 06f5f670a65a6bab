#!/usr/bin/env bash
# Issue 19's "at least 3x faster than shared steps at equal energy error
# after 1 Gyr": GOTHIC's M31 at N run to T (1 Gyr = 1.0227) once with
# block steps (session 23's settings: cycles of 1/128, 8 bins, eta 0.3)
# and with shared steps at each dt of DTS; the shared steps' energy
# error fitted as a power of dt through the two smallest dt gives the dt
# (and, at their measured wall time per step, the time) that matches the
# block steps' error. `banyan run`'s own wall time (the run without
# generation or output; one energy row, at T: a row a step would make the
# shared runs wait at every step, as sessions 23-30 measured them). Table last.
#   scripts/block-vs-shared.sh BANYAN N [T] [extra banyan run -P options]   (DTS: "0.000244140625 0.0001220703125")
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=$2 T=${3:-1.0227}
shift 3 2>/dev/null || shift $#
OUT=${OUT:-$PWD/out-block-vs-shared}
mkdir -p "$OUT" && cd "$OUT" || exit 1
"$B" ic galaxy --model m31 --n "$N" -s 1 -o ic.hdf5 >ic.log 2>&1 || { echo "FAIL: ic: $(tail -2 ic.log)"; exit 1; }
COMMON="-P InitialConditions:file:ic.hdf5 -P TimeIntegration:t_end:$T -P Gravity:softening:0.015625
  -P Snapshots:render:no -P Snapshots:final:no -P Statistics:interval:$T -P Restart:interval:0"
run() { # NAME ARGS...: one line "NAME steps wall error"
    local name=$1
    shift
    timeout 580 "$B" run $COMMON "$@" -o "$name" >"$name.log" 2>&1 || { echo "FAIL: $name: $(tail -2 "$name.log")" >&2; return; }
    python3 - "$name" <<'PY'
import re, sys
t = open(sys.argv[1] + ".log").read()
m = re.search(r"(\d+) steps from t = \S+ to \S+ in ([\d.]+) s", t)
e = re.search(r"energy error \|E-E0\|/\|E0\| at t_end: (\S+)", t)
print(sys.argv[1], m.group(1), m.group(2), e.group(1))
PY
}
{
    run block -P TimeIntegration:dt:0.0078125 -P TimeIntegration:eta:0.3 -P TimeIntegration:time_bins:8 "$@"
    for dt in ${DTS:-0.000244140625 0.0001220703125}; do
        run "shared_$dt" -P TimeIntegration:dt:"$dt" -P TimeIntegration:eta:0 -P TimeIntegration:time_bins:0 "$@"
    done
} | tee runs.txt
rm -f ic.hdf5
python3 - "$T" <<'PY' | tee table.txt
import math, sys
T = float(sys.argv[1])
rows = [l.split() for l in open("runs.txt") if l.strip()]
block = [r for r in rows if r[0] == "block"]
shared = sorted(([float(r[0].split("_")[1]), int(r[1]), float(r[2]), float(r[3])] for r in rows if r[0].startswith("shared_")))
print(f"{'run':>24s} {'steps':>7s} {'wall s':>8s} {'energy error':>12s}")
for r in rows:
    print(f"{r[0]:>24s} {r[1]:>7s} {float(r[2]):8.1f} {float(r[3]):12.3e}")
if block and len(shared) >= 2:
    (d1, n1, w1, e1), (d2, n2, w2, e2) = shared[0], shared[1]
    p = math.log(e2 / e1) / math.log(d2 / d1)
    eb, wb = float(block[0][3]), float(block[0][2])
    deq = d1 * (eb / e1) ** (1 / p)
    per_step = (w1 + w2) / (n1 + n2)
    weq = per_step * T / deq
    print(f"shared error ~ dt^{p:.2f}; the block steps' {eb:.3e} needs dt {deq:.3g} ({T / deq:.0f} steps, "
          f"{weq:.1f} s at {1e3 * per_step:.2f} ms a step): block steps {weq / wb:.2f}x faster at equal energy error")
PY
