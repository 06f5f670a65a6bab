#!/usr/bin/env bash
# Where an M31 block step's time goes on one GPU (issue 19's 13 ms goal):
# GOTHIC's model at N, its fiducial accuracy (accel criterion, Delta_acc =
# 2^-7), block steps (cycle 1/64, 8 bins, eta 0.2): the mean step
# (synchronised each step, and in batches as banyan run takes them) with
# the tree rebuilt every step and self-tuned; then the device time of
# every kernel over 16 block steps (ncu, clocks left alone). Table last.
#   scripts/m31-step-profile.sh BANYAN [N] [OUT]
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-16777216}
OUT=${3:-$PWD/out-m31-profile}
mkdir -p "$OUT" && cd "$OUT" || exit 1
[ -f m31.hdf5 ] || "$BIN" ic galaxy --model m31 --n "$N" -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic: $(tail -2 ic.log)"; exit 1; }
B="$BIN bench --backend gpu --json --input m31.hdf5 --eps 0.015625 --mac accel --alpha 0.0078125 --repeat 1"
BLOCK="--time-bins 8 --dt 0.015625 --eta 0.2"
: >bench.jsonl
b() { echo "+ $*" >>bench.log; timeout 240 $B "$@" >>bench.jsonl 2>>bench.log || echo "FAIL: $*: $(tail -2 bench.log)"; }
b $BLOCK --steps 64 --tree-rebuild 1
b $BLOCK --steps 64 --tree-rebuild 0
timeout 400 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
    $B $BLOCK --steps 16 --tree-rebuild 1 >ncu.txt 2>&1
echo "ncu: rc $? ($(grep -c . ncu.txt) lines)"
python3 - <<'PY'
import json, re
dec = json.JSONDecoder()
text, rows, i = open("bench.jsonl").read(), [], 0
while True:
    j = text.find("{", i)
    if j < 0: break
    r, i = dec.raw_decode(text, j)
    rows.append(r)
print(f"{'rebuild':>7} {'forces ms':>9} {'step ms':>8} {'batch ms':>8} {'best':>7} {'sort':>6} {'walk':>6} {'active':>6} {'builds':>6}")
for r in rows:
    print(f"{r.get('tree_rebuild', ''):>7} {1e3 * r['t_total']:9.2f} {1e3 * r['step_mean']:8.2f} {1e3 * r['batch_mean']:8.2f} "
          f"{1e3 * r['step_best']:7.2f} {1e3 * r['step_t_sort']:6.2f} {1e3 * r['step_t_walk']:6.2f} {r['active_mean']:6.3f} {r['tree_builds']:>6}")
# ncu's per-kernel summary: name, invocations, total device time
cur, kern = None, []
for line in open("ncu.txt", errors="replace"):
    m = re.match(r"\s{2}(\S.*?)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line)
    if m: cur = [m.group(1)[:60], 0, 0.0]; kern.append(cur); continue
    m = re.search(r"Invocations\s+(\d+)", line) if cur else None
    if m: cur[1] = int(m.group(1))
    m = re.search(r"gpu__time_duration.sum\s+(\S+)\s+\S+\s+\S+\s+(\S+)", line) if cur else None
    if m:
        unit = line.split()[1]
        scale = {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "nsecond": 1e-6, "second": 1e3}.get(unit, 1e-3)
        try: cur[2] = float(line.split()[-1].replace(",", "")) * scale * cur[1]
        except ValueError: pass
kern.sort(key=lambda k: -k[2])
tot = sum(k[2] for k in kern)
print(f"kernels over the ncu run: {tot:.1f} ms in all")
for k in kern[:25]:
    print(f"  {k[2]:9.2f} ms  {k[1]:6d} x  {k[0]}")
PY
