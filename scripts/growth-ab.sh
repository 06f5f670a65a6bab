#!/usr/bin/env bash
# The crossers' move on ranks sharing one GPU, two binaries: weak
# Hernquist (N per rank) over 8 bench steps, traced; the slowest move
# (an array's growth costs new device memory) and the steps' times.
#   scripts/growth-ab.sh N NP BANYAN...
set -u
N=$1 NP=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/device-mpi-env.sh"
for b in "$@"; do
    BANYAN_GRAVITY_TRACE=1 OMP_NUM_THREADS=4 timeout 200 mpirun --bind-to none -np "$NP" "$b" bench --backend gpu \
        --device auto --json --model hernquist --n $((N * NP)) $TUNED --repeat 1 --steps 8 >/tmp/g.out 2>/tmp/g.err ||
        echo "FAIL: $b: $(tail -2 /tmp/g.err)"
    python3 - "$b" <<'PY'
import json, re, sys
moved = [float(m.group(1)) for m in re.finditer(r"crossers: moved\s+([0-9.]+) ms", open("/tmp/g.err").read())]
r = json.load(open("/tmp/g.out"))
print(f"{sys.argv[1]}: moves {len(moved)}, slowest {max(moved or [0]):.1f} ms, median {sorted(moved)[len(moved)//2] if moved else 0:.2f} ms; "
      f"step best {1e3*r.get('step_best',0):.1f} mean {1e3*r.get('step_mean',0):.1f} batch {1e3*r.get('batch_mean',0):.1f} ms")
PY
done
