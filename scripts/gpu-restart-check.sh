#!/usr/bin/env bash
# Restarts on the GPU backend (issue 20), one device call: the GPU tests,
# tests/cli_restart.sh on the GPU (bit for bit: shared and block steps,
# stops inside a cycle, the accel criterion), and 2 ranks' restart files
# (sharing the one GPU) continued on 3 ranks and on 1, at a cycle's end
# and inside a cycle, against the unstopped run (energies within 1e-4);
# 2 ranks with a refreshed tree (tree_rebuild 4) stopped between rebuilds
# and continued on 2: bit for bit.
#   scripts/gpu-restart-check.sh DIR OUT   (DIR: banyan, tests/, lib/)
set -u
DIR=$(cd "$1" && pwd)
O=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O"
export LD_LIBRARY_PATH=$DIR/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source "$here/device-mpi-env.sh"
for t in "$DIR"/tests/test_gpu_*; do # SKIP_TESTS=1: the restarts only (gpu-verify.sh runs the tests)
    [ -n "${SKIP_TESTS:-}" ] && break
    timeout 120 "$t" >"$O/$(basename "$t").log" 2>&1
    rc=$? # before any command substitution, which would reset $?
    echo "$(basename "$t"): exit $rc"
done
BANYAN_TEST_BACKEND=gpu timeout 300 bash "$here/../tests/cli_restart.sh" "$DIR/banyan" >"$O/cli_restart.log" 2>&1
echo "cli_restart.sh on the GPU: exit $? ($(grep -c FAIL "$O/cli_restart.log") FAIL lines)"
grep FAIL "$O/cli_restart.log" | head -5
cd "$O" || exit 1
B=$DIR/banyan
rst="-P InitialConditions:n:8192 -P Gravity:backend:gpu -P Snapshots:render:no -P TimeIntegration:time_bins:4
  -P TimeIntegration:eta:0.02 -P TimeIntegration:t_end:0.25 -P Statistics:interval:0"
M="timeout 120 mpirun --bind-to none"
$M -np 2 "$B" run $rst -q -o ref >/dev/null 2>ref.err || echo "FAIL: the unstopped 2-rank GPU run: $(tail -2 ref.err)"
compare() { # REF DIR: rows, the total energies' largest relative difference, and whether every row is the same
    python3 - "$1" "$2" <<'PY'
import sys
def rows(d):
    return [l.split() for l in open(d + "/energy.txt") if not l.startswith("#")]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
bits = all(x[:7] == y[:7] for x, y in zip(a, b)) and len(a) == len(b)
rel = max(abs(float(y[3]) - float(x[3])) / abs(float(x[3])) for x, y in zip(a, b))
print(f"{sys.argv[2]}: {len(b)} rows of {len(a)}, total energies {rel:.2e} apart, bit for bit: {bits}")
if not bits and sys.argv[2].endswith(("r4", "_2")):  # the same rank count: must be bit for bit
    print(f"FAIL: {sys.argv[2]} is not bit for bit")
PY
}
r4="$rst -P TimeIntegration:tree_rebuild:4"
$M -np 2 "$B" run $r4 -q -o r4ref >/dev/null 2>&1 || echo "FAIL: the unstopped tree_rebuild 4 run"
$M -np 2 "$B" run $r4 -q -o r4 --stop-after-steps 13 >/dev/null 2>&1 || echo "FAIL: the stopped tree_rebuild 4 run"
$M -np 2 "$B" run --restart r4/restart -o r4 -q -P Gravity:backend:gpu >r4.out 2>&1 || echo "FAIL: tree_rebuild 4: $(tail -2 r4.out)"
compare r4ref r4
for stop in 7 64; do
    $M -np 2 "$B" run $rst -q -o s$stop --stop-after-steps $stop >/dev/null 2>&1 || echo "FAIL: stop at $stop"
    for np in 1 3 2; do
        cp -r s$stop s${stop}_$np
        $M -np $np "$B" run --restart s${stop}_$np/restart -o s${stop}_$np -q -P Gravity:backend:gpu \
            >s${stop}_$np.out 2>s${stop}_$np.err ||
            echo "FAIL: stop $stop on $np rank(s): $(tail -2 s${stop}_$np.err)"
        compare ref s${stop}_$np
        grep -h "not bitwise" s${stop}_$np.out | head -2
    done
done
