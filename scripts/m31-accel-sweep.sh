#!/usr/bin/env bash
# GOTHIC's M31 at N on one GPU: the accel criterion's tree settings
# (leaf size, group size, group expansion, alpha) at GOTHIC's accuracy
# (p99 of |a - a_ref| / |a_ref| against double direct summation, 1000
# particles) and the block steps' batch time each gives (cycle 1/64, 8
# bins, eta 0.2, 64 steps, the tree rebuilt every step, or REBUILD=0:
# self-tuned). Table last.
#   scripts/m31-accel-sweep.sh BANYAN [N] [OUT]   (SETTINGS="leaf,group,kappa,alpha ...")
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-16777216}
OUT=${3:-$PWD/out-m31-sweep}
SETTINGS=${SETTINGS:-"16,64,0.2,0.0078125 16,32,0.2,0.0078125 16,128,0.2,0.0078125 8,64,0.2,0.0078125 32,64,0.2,0.0078125 16,64,0.4,0.0078125"}
mkdir -p "$OUT" && cd "$OUT" || exit 1
[ -f m31.hdf5 ] || "$BIN" ic galaxy --model m31 --n "$N" -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic: $(tail -2 ic.log)"; exit 1; }
B="$BIN bench --backend gpu --json --input m31.hdf5 --eps 0.015625 --mac accel"
: >sweep.jsonl
for s in $SETTINGS; do
    IFS=, read -r leaf group kappa alpha <<<"$s"
    A="--leaf-size $leaf --group-size $group --group-expansion $kappa --alpha $alpha"
    echo "+ $A" >>sweep.log
    timeout 200 $B $A --check --repeat 2 >>sweep.jsonl 2>>sweep.log || echo "FAIL: forces $A: $(tail -1 sweep.log)"
    timeout 200 $B $A --repeat 1 --steps 64 --time-bins 8 --dt 0.015625 --eta 0.2 --tree-rebuild ${REBUILD:-1} >>sweep.jsonl \
        2>>sweep.log || echo "FAIL: steps $A: $(tail -1 sweep.log)"
done
SETTINGS="$SETTINGS" python3 - <<'PY'
import json, os
dec, text, rows, i = json.JSONDecoder(), open("sweep.jsonl").read(), [], 0
while (j := text.find("{", i)) >= 0:
    r, i = dec.raw_decode(text, j)
    rows.append(r)
print(f"{'leaf':>4} {'group':>5} {'kappa':>5} {'alpha':>9} {'forces ms':>9} {'p99':>9} {'step ms':>8} {'batch ms':>8} {'active':>6}")
alphas = [float(x.split(",")[3]) for x in os.environ["SETTINGS"].split()]
for f, s, a in zip(rows[0::2], rows[1::2], alphas):
    print(f"{f['leaf_size']:4d} {f['group_size']:5d} {f['group_expansion']:5.2f} {a:9.6f} "
          f"{1e3 * f['t_total']:9.2f} {f.get('err_p99', float('nan')):9.2e} {1e3 * s['step_mean']:8.2f} "
          f"{1e3 * s['batch_mean']:8.2f} {s['active_mean']:6.3f}")
PY
