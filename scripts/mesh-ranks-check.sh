#!/usr/bin/env bash
# The mesh potential across ranks on the GPU (issue 18): one process
# against NP ranks (sharing the GPUs there are, or a GPU each), the same
# values bit for bit (banyan compare), and each call's time and stages.
# A line per run.
#   scripts/mesh-ranks-check.sh BANYAN OUT [LEVELS [NP...]]   (defaults 6, 2)
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
O=$2
LEVELS=${3:-6}
shift 3 2>/dev/null || shift $#
NPS=${*:-2}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O"
source "$here/device-mpi-env.sh"
cd "$O" || exit 1
CORES=$(nproc)
OMP_NUM_THREADS=$CORES "$B" mesh-ic maclaurin --levels "$LEVELS" --min-level 3 --block 16 --radius 0.35 -o mesh.h5 \
    >mesh-ic.log 2>&1 || { echo "FAIL: mesh-ic: $(tail -2 mesh-ic.log)"; exit 1; }
OMP_NUM_THREADS=$CORES BANYAN_FIELD_TRACE=1 "$B" potential mesh.h5 -o one.h5 --backend gpu --theta 0.35 \
    >one.out 2>one.err || echo "FAIL: one process: $(tail -2 one.err)"
grep -h "^banyan potential" one.err
for np in $NPS; do
    OMP_NUM_THREADS=$((CORES / np)) BANYAN_FIELD_TRACE=1 BANYAN_GRAVITY_TRACE=1 timeout 300 mpirun --bind-to none -np "$np" "$B" potential \
        mesh.h5 -o "np$np.h5" --backend gpu --device auto --theta 0.35 >"np$np.out" 2>"np$np.err" ||
        echo "FAIL: $np ranks: $(tail -2 "np$np.err")"
    grep -h -A1 "^banyan potential" "np$np.err"
    "$B" compare "np$np.h5" one.h5 --json >"np$np.json" 2>&1
    python3 - "np$np.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])).get("variables", {})
print("  against one process: " + ", ".join(f"{k} max {x['max']:.2e}" for k, x in v.items()))
PY
    grep -h "trace: mesh across ranks" "np$np.err" | grep "rank 0" | sed 's/^/  /'
done
rm -f ./*.h5
