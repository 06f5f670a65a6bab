#!/usr/bin/env bash
# Issue 18: is the slow rank its data or its GPU? Weak Plummer (N per
# GPU, default 2^25) on P GPUs, bench's force calls, twice: GPUs in
# their order, then reversed (CUDA_VISIBLE_DEVICES=P-1,...,0: rank r
# then runs on GPU P-1-r). Prints each rank's median local and received
# walk (device) in both; a slow rank that stays slow is its data, a slow
# GPU moves to the other rank.
#   scripts/rank-gpu-swap.sh BANYAN [P]
set -u
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
P=${2:-4}
N=${N:-33554432}
OUT=${OUT:-$PWD/out-rank-swap}
mkdir -p "$OUT" && cd "$OUT" || exit 1
source "$SCRIPTS/device-mpi-env.sh"
export BANYAN_GRAVITY_TRACE=1
order=$(seq 0 $((P - 1)) | paste -sd,)
reversed=$(seq $((P - 1)) -1 0 | paste -sd,)
for o in "$order" "$reversed"; do
    CUDA_VISIBLE_DEVICES=$o OMP_NUM_THREADS=$(( $(nproc) / P )) timeout 300 mpirun --bind-to none -np "$P" "$BIN" bench \
        --backend gpu --device auto --json --model plummer --n $((N * P)) $TUNED --repeat 3 >"gpus-$o.out" 2>"gpus-$o.err" ||
        echo "FAIL: GPUs $o: $(tail -2 "gpus-$o.err")"
done
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv >gpus-clocks.txt 2>&1
python3 - "$P" "$order" "$reversed" <<'PY'
import re, statistics, sys
P = int(sys.argv[1])
for o in sys.argv[2:]:
    v = {}
    for l in open(f"gpus-{o}.err"):
        m = re.match(r"\s*gravity trace: (local walk \(device\)|received walk \(device\))\s+([0-9.]+) ms \[rank (\d+)\]", l)
        if m: v.setdefault((int(m.group(3)), m.group(1)), []).append(float(m.group(2)))
    gpus = o.split(",")
    print(f"CUDA_VISIBLE_DEVICES={o}: " + "; ".join(
        f"rank {r} (GPU {gpus[r]}) local {statistics.median(v.get((r, 'local walk (device)'), [0])):.1f} received "
        f"{statistics.median(v.get((r, 'received walk (device)'), [0])):.1f}" for r in range(P)))
PY
cat gpus-clocks.txt
