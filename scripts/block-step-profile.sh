#!/usr/bin/env bash
# Issue 19: what a block step costs beyond its walk (the fixed cost of a
# step: 2.4 ms of 2^22 M31's block steps in session 30's criterion sweep).
# GOTHIC's M31 at N with `banyan run`'s default tree settings and the
# block steps of criterion-sweep.sh (CRIT, ETA; cycles of 1/128, 8 bins):
# bench's step means, then every kernel's device time and the CUDA API's
# host time over STEPS block steps under nsys (or, without nsys, the
# kernels of COUNT launches after the first SKIP under ncu). Summaries last.
#   scripts/block-step-profile.sh BANYAN [N] [STEPS]   (CRIT: dynamical; ETA: 0.01; REBUILD: 1)
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-4194304} STEPS=${3:-256}
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out-block-step-profile}
mkdir -p "$OUT" && cd "$OUT" || exit 1
[ -f m31-$N.hdf5 ] || "$BIN" ic galaxy --model m31 --n "$N" -s 1 -o m31-$N.hdf5 >ic.log 2>&1 ||
    { echo "FAIL: ic: $(tail -2 ic.log)"; exit 1; }
B="$BIN bench --backend gpu --json --input m31-$N.hdf5 --eps 0.015625 --repeat 1 --time-bins 8 --dt 0.0078125
   --criterion ${CRIT:-dynamical} --eta ${ETA:-0.01} --tree-rebuild ${REBUILD:-1}"
timeout 300 $B --steps "$STEPS" >bench.json 2>bench.log || echo "FAIL: bench: $(tail -2 bench.log)"
[ -s bench.json ] && python3 - <<'PY'
import json
r = json.load(open("bench.json"))
print(f"bench: {r['steps']} block steps: step mean {1e3 * r['step_mean']:.3f} ms, batch mean {1e3 * r['batch_mean']:.3f} ms, "
      f"best {1e3 * r['step_best']:.3f}; active {r['active_mean']:.4f}; builds {r.get('tree_builds')}; forces call {1e3 * r['t_total']:.2f} ms")
st = ["bbox", "keys", "sort", "build", "moments", "groups", "walk", "total"]
print("  mean step's stages (device events, gaps included), ms: " + ", ".join(f"{k} {1e3 * r['mean_t_' + k]:.3f}" for k in st)
      + f"; outside the forces call {1e3 * (r['step_mean'] - r['mean_t_total']):.3f}")
PY
if command -v nsys >/dev/null; then
    timeout 400 nsys profile -o prof --force-overwrite true -t cuda $B --steps "$STEPS" >nsys.log 2>&1
    timeout 200 nsys stats -r cuda_gpu_kern_sum,cuda_api_sum -f csv -o stats prof.nsys-rep >>nsys.log 2>&1
    python3 - "$STEPS" <<'PY'
import csv, glob, sys
steps = int(sys.argv[1])
for f, title in (("stats_cuda_gpu_kern_sum.csv", "kernels"), ("stats_cuda_api_sum.csv", "CUDA API (host)")):
    try: rows = list(csv.DictReader(open(f)))
    except OSError: print(f"no {f}"); continue
    tot = sum(float(r["Total Time (ns)"]) for r in rows)
    print(f"{title}: {1e-6 * tot:.1f} ms in all over the bench (its forces call, {steps} waited steps and {steps} in a batch)")
    for r in rows[:22]:
        print(f"  {1e-6 * float(r['Total Time (ns)']):9.2f} ms {int(r['Instances']):7d} x  {r['Name'][:70]}")
PY
else # the kernels of the steps after the first LAUNCHES (past the first, all-active steps)
    echo "no nsys: ncu over launches ${SKIP:-3000} to +${COUNT:-1500}"
    timeout 400 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip "${SKIP:-3000}" \
        --launch-count "${COUNT:-1500}" $B --steps "$STEPS" >ncu.csv 2>ncu.log
    python3 "$here/ncu_kernels.py" ncu.csv "kernels of ${COUNT:-1500} launches (drift_kernel's count: the steps)" | head -40
fi
