#!/usr/bin/env bash
# Issue 19's benchmarks on a GPU: GOTHIC's M31 model at N (default 2^24,
# softening 15.625 pc): the forces at GOTHIC's fiducial accuracy (the
# accel criterion, Delta_acc = 2^-7) and at banyan's tuned settings, each
# with its p99 against double direct summation; block steps (cycle 1/64 =
# 15.6 Myr, BINS bins, eta ETA) with the tree rebuilt every step and
# self-tuned, and at the settings banyan's error target picks for GOTHIC's
# p99, mean wall time per step; a shared step at the block steps'
# finest step for the speed-up. Prints a table last.
#   scripts/galaxy-bench.sh BANYAN [N] [BINS] [ETA]
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
export SCRIPTS=$(cd "$(dirname "$0")" && pwd) # bench_rows.py
N=${2:-16777216} BINS=${3:-8} ETA=${4:-0.2}
OUT=${OUT:-$PWD/out-galaxy}
mkdir -p "$OUT" && cd "$OUT" || exit 1
"$BIN" ic galaxy --model m31 --n "$N" -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic: $(tail -2 ic.log)"; exit 1; }
B="$BIN bench --backend ${BACKEND:-gpu} --json --input m31.hdf5 --eps 0.015625"
TUNED="--theta 0.67 --mac bonsai-box --leaf-size 32 --group-size 256 --group-expansion 0.4"
# the accel criterion's fastest settings at GOTHIC's accuracy on M31 (BENCHMARKS.md, session 23)
ACC_TUNED="--mac accel --alpha 0.0073 --leaf-size 16 --group-size 128 --group-expansion 1.0"
BLOCK="--steps 64 --time-bins $BINS --dt 0.015625 --eta $ETA --repeat 1"
FINEST=$(python3 -c "print(0.015625 / 2 ** ($BINS - 1))")
: >bench.jsonl
b() { echo "+ $*" >>bench.log; timeout 240 $B "$@" >>bench.jsonl 2>>bench.log || echo "FAIL: $*: $(tail -2 bench.log)"; }
b --mac accel --alpha 0.0078125 --check --repeat 2
b $ACC_TUNED --check --repeat 2
b $TUNED --check --repeat 2
# GOTHIC's accuracy (the first row's p99) asked of banyan's error target: the settings it picks
E=$(python3 -c "import json; print(json.JSONDecoder().raw_decode(open('bench.jsonl').read())[0]['err_p99'])" 2>/dev/null)
[ -n "$E" ] && b --error-target "$E" --check --repeat 2
[ -n "$E" ] && b --error-target "$E" $BLOCK --tree-rebuild 1
b --mac accel --alpha 0.0078125 $BLOCK --tree-rebuild 1
b $ACC_TUNED $BLOCK --tree-rebuild 1
b $TUNED $BLOCK --tree-rebuild 1
b $TUNED $BLOCK --tree-rebuild 0
b $TUNED --steps 8 --dt "$FINEST" --repeat 1
python3 - <<'PY'
import os, sys
sys.path.insert(0, os.environ["SCRIPTS"])
from bench_rows import rows as read_rows
rows = read_rows("bench.jsonl")
print(f"{'mac':10s} {'theta':>5s} {'leaf':>4s} {'group':>5s} {'kappa':>5s} {'rebuild':>7s} {'bins':>4s} {'forces ms':>9s} {'p99':>9s} {'step ms':>8s} "
      f"{'active':>6s} {'builds':>6s}")
for r in rows:
    blk = r.get("time_bins", 0)
    print(f"{r['mac']:10s} {r['theta']:5.2f} {r['leaf_size']:4d} {r['group_size']:5d} {r['group_expansion']:5.2f} {r.get('tree_rebuild', ''):>7} {blk:4d} {1e3 * r['t_total']:9.2f} "
          f"{r.get('err_p99', float('nan')):9.2e} {1e3 * r.get('step_mean', float('nan')):8.2f} "
          f"{r.get('active_mean', 1.0):6.3f} {r.get('tree_builds', ''):>6}")
PY
