#!/usr/bin/env bash
# Does refreshing the tree between rebuilds cost energy conservation?
# Block-step runs of the same input with the tree rebuilt at every step
# (tree_rebuild 1), refreshed between self-tuned rebuilds (0, the
# default) and rebuilt every other step (2): the energy error at the end
# and the wall time, from `banyan run`'s summary. Inputs: a Hernquist
# halo (N_SPHERE, 2^20) for T_SPHERE and GOTHIC's M31 (N_M31, 2^22) for
# T_M31, with session 23's galaxy settings (cycles of 1/128, 8 bins,
# eta 0.3, softening 15.625 pc).
#   scripts/refresh-energy.sh BANYAN [extra banyan run -P options]   (RULES: "1 0 2"; PARTS: "sphere m31")
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
OUT=${OUT:-$PWD/out-refresh-energy}
mkdir -p "$OUT" && cd "$OUT" || exit 1
QUIET="-P Snapshots:render:no -P Snapshots:final:no -P Statistics:interval:0 -P Restart:interval:0"
run() { # NAME ARGS...: "NAME steps wall error builds"
    local name=$1
    shift
    timeout 400 "$B" run $QUIET "$@" -o "$name" >"$name.log" 2>&1 || { echo "FAIL: $name: $(tail -2 "$name.log")"; return; }
    rm -rf "$name/restart"
    python3 - "$name" <<'PY'
import re, sys
t = open(sys.argv[1] + ".log").read()
m = re.search(r"(\d+) steps from t = \S+ to \S+ in ([\d.]+) s", t)
e = re.search(r"energy error \|E-E0\|/\|E0\| at t_end: (\S+)", t)
b = re.search(r"; (\d+) tree builds", t)
print(f"{sys.argv[1]:14s} {m.group(1):>7s} steps {float(m.group(2)):8.2f} s  energy error {e.group(1)}  builds {b.group(1) if b else '?'}")
PY
}
has() { case " ${PARTS:-sphere m31} " in *" $1 "*) return 0 ;; esac; return 1; }
if has sphere; then
    for r in ${RULES:-1 0 2}; do
        run "hernquist_$r" -P InitialConditions:model:hernquist -P InitialConditions:n:"${N_SPHERE:-1048576}" \
            -P TimeIntegration:t_end:"${T_SPHERE:-2}" -P TimeIntegration:dt:0.0625 -P TimeIntegration:eta:0.1 \
            -P TimeIntegration:time_bins:6 -P TimeIntegration:tree_rebuild:"$r" "$@"
    done
fi
if has m31; then
    "$B" ic galaxy --model m31 --n "${N_M31:-4194304}" -s 1 -o m31.hdf5 >ic.log 2>&1 || echo "FAIL: ic: $(tail -2 ic.log)"
    for r in ${RULES:-1 0 2}; do
        run "m31_$r" -P InitialConditions:file:m31.hdf5 -P TimeIntegration:t_end:"${T_M31:-1.0227}" \
            -P Gravity:softening:0.015625 -P TimeIntegration:dt:0.0078125 -P TimeIntegration:eta:0.3 \
            -P TimeIntegration:time_bins:8 -P TimeIntegration:tree_rebuild:"$r" "$@"
    done
    rm -f m31.hdf5
fi
