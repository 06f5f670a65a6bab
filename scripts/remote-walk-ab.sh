#!/usr/bin/env bash
# The received trees' walk with T targets a lane (BN_WALK_REMOTE_TARGETS)
# on several GPUs: DIR/banyan's GPU tests of the walk (test_gpu_walk,
# test_gpu_let, test_forces_dist under mpirun), the same single-GPU forces
# as the first of the BINs (the local walk must keep its bits), then weak
# Plummer on P GPUs (force calls) for DIR/banyan and each BIN: the
# received walk's device time and cells visited (median over calls and
# ranks) and the call's time. A line per run last.
#   scripts/remote-walk-ab.sh DIR P BIN...
set -u
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=$(cd "$1" && pwd)
P=$2
shift 2
N=${N:-33554432}
OUT=${OUT:-$PWD/out-remote-ab}
mkdir -p "$OUT" && cd "$OUT" || exit 1
source "$SCRIPTS/device-mpi-env.sh"
fail=0
for t in test_gpu_walk test_gpu_let; do
    timeout 120 "$DIR/tests/$t" >"$t.log" 2>&1 || { echo "FAIL: $t"; fail=1; }
    echo "$t: exit $?"
done
OMP_NUM_THREADS=$(( $(nproc) / P )) timeout 300 mpirun --bind-to none -np "$P" "$DIR/tests/test_forces_dist" \
    >forces_dist.log 2>&1 || { echo "FAIL: test_forces_dist, $P ranks"; fail=1; }
echo "test_forces_dist, $P ranks: $(grep -c '\[       OK \]' forces_dist.log) ok, $(grep -c '\[  FAILED  \]' forces_dist.log) failed"
"$DIR/banyan" ic plummer --n 1048576 -o p.hdf5 >/dev/null 2>&1
"$DIR/banyan" forces p.hdf5 -o new.hdf5 --backend gpu $TUNED >/dev/null 2>&1 &&
    "$1" forces p.hdf5 -o old.hdf5 --backend gpu $TUNED >/dev/null 2>&1 &&
    "$DIR/banyan" compare new.hdf5 old.hdf5 --json >cmp.json 2>/dev/null
echo "one GPU, the same bits as $1: $(python3 -c 'import json; r=json.load(open("cmp.json")); print(r["acc_rel_error"]["max"], r["pot_rel_error"]["max"])' 2>&1)"
k=0
for b in "$DIR/banyan" "$@"; do
    k=$((k + 1))
    BANYAN_GRAVITY_TRACE=1 OMP_NUM_THREADS=$(( $(nproc) / P )) timeout 200 mpirun --bind-to none -np "$P" "$b" bench \
        --backend gpu --device auto --json --model plummer --n $((N * P)) $TUNED --repeat 3 \
        >"run$k.out" 2>"run$k.err" || { echo "FAIL: $b"; fail=1; }
    python3 - "$b" "run$k" <<'PY'
import json, re, sys, statistics
b, f = sys.argv[1], sys.argv[2]
try:
    r = json.load(open(f + ".out"))
except Exception:
    print(f"{b}: no result"); sys.exit()
v = {}
for l in open(f + ".err"):
    m = re.match(r"\s*gravity (trace|count): (.*?)\s+([-0-9.e+]+)( ms)?( \[rank \d+\])?\s*$", l)
    if m: v.setdefault(m.group(2), []).append(float(m.group(3)))
med = lambda k: statistics.median(v.get(k, [0])[4:] or [0])  # the calls after the first
mx = lambda k: max(v.get(k, [0])[4:] or [0])
print(f"{b}: forces {1e3 * r['t_total']:.1f} ms; received walk median {med('received walk (device)'):.1f} max "
      f"{mx('received walk (device)'):.1f} ms, local walk median {med('local walk (device)'):.1f}, cells visited "
      f"(received) median {med('received walk: cells visited') / 1e6:.0f} M; pp {med('received walk: pp') / 1e9:.2f}e9")
PY
done
exit $fail
