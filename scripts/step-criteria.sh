#!/usr/bin/env bash
# Block steps' criteria at equal energy error (issue 19): banyan run on a
# model with each criterion over a range of eta; per run the particle
# forces computed (the cost: bn_block_info.forces, per particle) and the
# largest relative energy error of the log. Prints a table; the better
# criterion reaches a given error with fewer forces.
#   scripts/step-criteria.sh BANYAN IC_FILE T_END DT "ACCEL_ETAS" "DYN_ETAS" [-P extra ...]
set -u
BIN=$1 IC=$2 T=$3 DT=$4 EA=$5 ED=$6
shift 6
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
printf "%-13s %8s %12s %12s %10s\n" criterion eta forces/part max_rel_err wall_s
run() { # criterion eta [extra -P ...]
    local c=$1 e=$2
    shift 2
    local d=$OUT/$c-$e
    "$BIN" run -P InitialConditions:file:"$IC" -P TimeIntegration:time_bins:10 -P TimeIntegration:eta:"$e" \
        -P TimeIntegration:criterion:"$c" -P TimeIntegration:dt:"$DT" -P TimeIntegration:t_end:"$T" \
        -P Snapshots:interval:0 -P Snapshots:render:no -P Statistics:interval:"$DT" "$@" -o "$d" >"$d.log" 2>&1 ||
        { echo "FAIL: $c $e: $(tail -2 "$d.log")"; return; }
    python3 - "$c" "$e" "$d" <<'PY'
import sys, re
crit, eta, d = sys.argv[1:4]
log = open(d + ".log").read()
f = re.search(r"([0-9.]+) per particle", log).group(1)
wall = re.search(r" in ([0-9.]+) s", log).group(1)
rows = [l.split() for l in open(d + "/energy.txt") if l.strip() and not l.startswith("#")]
err = max(abs(float(r[4])) for r in rows)
print(f"{crit:13s} {eta:>8s} {float(f):12.1f} {err:12.3e} {wall:>10s}")
PY
}
for e in $EA; do run acceleration "$e" "$@"; done
for e in $ED; do run dynamical "$e" "$@"; done
