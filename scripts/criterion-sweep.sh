#!/usr/bin/env bash
# Issue 19's block steps against shared steps at equal energy error, for
# several time-step criteria at once: GOTHIC's M31 at N run to T (1 Gyr =
# 1.0227) with each SPEC, the runs spread over the GPUs seen (SPEC i on GPU i mod G, one
# run a GPU at a time, so their wall times are comparable), then a table: each
# run's steps, wall time, particle forces per particle, energy error and
# tree builds; the shared runs' error fitted as a power of dt through the
# two smallest dt, and each block run's speed-up against the shared steps
# that match its error (at the shared runs' measured time per step). The
# wall time holds making or reading the particles and the final restart
# file; "steps s" is the steps' own (the run's summary line).
#   scripts/criterion-sweep.sh BANYAN N T SPEC...   [extra -P options in EXTRA]
# MODEL: m31 (the default; softening SOFT, 15.625 pc) or a model of
# `banyan ic` (plummer, hernquist, nfw...; SOFT 0.01).
# SPEC: NAME=KEY:VALUE,KEY:VALUE... of the TimeIntegration section, e.g.
#   acc0.3=criterion:acceleration,eta:0.3,time_bins:8,dt:0.0078125
#   shared12=eta:0,time_bins:0,dt:0.000244140625   (a name starting "shared")
# A SPEC "G:NAME=..." (one digit) runs on the G-th of the GPUs used (mod
# their count) instead. GPUS: the devices to use (default: every one
# seen). The energy log has one row, at T: a row a step would make the
# shared runs wait for the device at every step (Statistics:interval 0).
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SCRIPTS=$(cd "$(dirname "$0")" && pwd) # run_summary.py
N=$2 T=$3
shift 3
OUT=${OUT:-$PWD/out-criterion-sweep}
mkdir -p "$OUT" && cd "$OUT" || exit 1
if [ "${MODEL:-m31}" = m31 ]; then
    "$B" ic galaxy --model m31 --n "$N" -s 1 -o ic.hdf5 >ic.log 2>&1 || { echo "FAIL: ic: $(tail -2 ic.log)"; exit 1; }
    IC="-P InitialConditions:file:ic.hdf5 -P Gravity:softening:${SOFT:-0.015625}"
else # another model of banyan ic, in N-body units
    IC="-P InitialConditions:model:$MODEL -P InitialConditions:n:$N -P Gravity:softening:${SOFT:-0.01}"
fi
COMMON="$IC -P TimeIntegration:t_end:$T
  -P Snapshots:render:no -P Snapshots:final:no -P Statistics:interval:$T -P Restart:interval:0 ${EXTRA:-}"
G=$(nvidia-smi --list-gpus 2>/dev/null | wc -l)
[ "$G" -ge 1 ] || G=1
gpus=(${GPUS:-$(seq 0 $((G - 1)))}) # GPUS: the devices to use, e.g. "2 3"
G=${#gpus[@]}
run() { # GPU NAME KEY:VALUE,...: the run's summary line in NAME.row
    local gpu=$1 name=$2 args=() kv
    for kv in ${3//,/ }; do args+=(-P "TimeIntegration:$kv"); done
    CUDA_VISIBLE_DEVICES=$gpu timeout 590 "$B" run $COMMON "${args[@]}" -o "$name" >"$name.log" 2>&1 ||
        { echo "FAIL $name: $(tail -2 "$name.log" | tr '\n' ' ')" >"$name.row"; return; }
    rm -rf "$name/restart"
    PYTHONPATH=$SCRIPTS python3 - "$name" >"$name.row" <<'PY'
import sys
from run_summary import summary
r = summary(open(sys.argv[1] + ".log").read())
if r:
    print(sys.argv[1], r["steps"], r["wall"], r["forces"], r["energy"], r["builds"], r["alone"])
PY
    [ -s "$name.row" ] || echo "FAIL $name: no summary in $name.log" >"$name.row"
}
names=()
for spec in "$@"; do case $spec in [0-9]:*) spec=${spec#*:} ;; esac; names+=("${spec%%=*}"); done
for g in $(seq 0 $((G - 1))); do # GPU g runs SPECs g, g + G, ... (or those pinned to it) in turn
    (i=0
     for spec in "$@"; do
         on=$((i % G))
         case $spec in [0-9]:*) on=$((${spec%%:*} % G)) spec=${spec#*:} ;; esac
         [ "$on" = "$g" ] && run "${gpus[$g]}" "${spec%%=*}" "${spec#*=}"
         i=$((i + 1))
     done) &
done
wait
for n in "${names[@]}"; do cat "$n.row"; done >runs.txt
rm -f ic.hdf5
python3 - "$T" <<'PY' | tee table.txt
import math, sys
T = float(sys.argv[1])
rows = [l.split() for l in open("runs.txt") if l.strip() and not l.startswith("FAIL")]
for l in open("runs.txt"):
    if l.startswith("FAIL"): print(l.strip())
print(f"{'run':>14s} {'steps':>7s} {'wall s':>8s} {'steps s':>8s} {'forces/part':>11s} {'energy error':>12s} {'builds':>7s} "
      f"{'x shared':>8s}")
shared = sorted((T / int(r[1]), int(r[1]), float(r[2]), float(r[4])) for r in rows if r[0].startswith("shared"))
fit = None
if len(shared) >= 2 and shared[0][0] != shared[1][0] and shared[0][3] > 0 and shared[1][3] > 0:
    (d1, n1, w1, e1), (d2, n2, w2, e2) = shared[0], shared[1]
    p = math.log(e2 / e1) / math.log(d2 / d1)
    print(f"shared steps' error ~ dt^{p:.2f}, {1e3 * (w1 + w2) / (n1 + n2):.2f} ms a step")
    if p > 0.5: # else their error is the forces' floor, not the steps': no dt matches a block run's
        fit = (d1, e1, p, (w1 + w2) / (n1 + n2))
for r in rows:
    x = ""
    if fit and not r[0].startswith("shared"):
        d1, e1, p, per = fit
        if float(r[4]) > 0:
            deq = d1 * (float(r[4]) / e1) ** (1 / p)
            x = f"{per * T / deq / float(r[2]):.2f}"
    alone = float(r[6]) if len(r) > 6 else float("nan")
    print(f"{r[0]:>14s} {r[1]:>7s} {float(r[2]):8.1f} {alone:8.1f} {float(r[3]):11.1f} {float(r[4]):12.3e} {r[5]:>7s} {x:>8s}")
PY
