#!/usr/bin/env bash
# Session 35 on 4 GPUs (issue 18), one device call:
#  1. weak Plummer 2^25 a GPU on 4 GPUs with three builds of the received
#     walk: as committed (4 targets a lane, 4 blocks an SM, 128 registers),
#     B5 (4 targets, 5 blocks: 96 registers, spills) and T2 (2 targets, 6
#     blocks: 80 registers, spills) -- variant-build.sh's binaries in DIR;
#  2. weak Hernquist on 4 (the re-balance's mirror room, 0e514af);
#  3. Nsight Compute's source counters of rank 0's received walk (where
#     its warps stall, by SASS instruction);
#  4. the mesh potential of 2^26 cells on 4 GPUs (the gather's pre-fault).
#   bash scripts/experiments/x4-s35.sh DIR OUT   (DIR: banyan, banyan-b5, banyan-t2, lib/)
source "$(dirname "$0")/carried-env.sh"
export BANYAN_GRAVITY_TRACE=1
C=$(( $(nproc) / 4 ))
run4() { # LOG BINARY ARGS...: bench on 4 ranks, one GPU each
    local log=$1 bin=$2
    shift 2
    OMP_NUM_THREADS=$C timeout 200 mpirun --bind-to none -np 4 "$bin" bench --backend gpu --device auto --json $TUNED "$@" \
        >"$O/$log.out" 2>"$O/$log.err" || echo "FAIL $log: $(tail -2 "$O/$log.err")"
    python3 - "$O/$log.out" "$log" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    print(f"{sys.argv[2]:14s} forces {1e3*r['t_total']:6.1f} ms, step best {1e3*r['step_best']:6.1f}, "
          f"mean {1e3*r['step_mean']:6.1f}, batch {1e3*r['batch_mean']:6.1f} ms")
except Exception as e:
    print(sys.argv[2], "no result", e)
PY
    python3 "$here/rank-walks.py" "$O/$log.err" 2>/dev/null | grep -v nan | tail -n +2
    grep -E "received walk: the main pass" "$O/$log.err" | awk '{print $(NF-2)}' | sort -n |
        awk '{v[NR]=$1} END {print "  received walk main pass, median over ranks and calls: " v[int((NR+1)/2)] " ms (" NR " samples)"}'
}
P="--model plummer --n 134217728 --repeat 3 --steps 4"
run4 base "$B" $P
run4 b5 "$D/banyan-b5" $P
run4 t2 "$D/banyan-t2" $P
run4 hern "$B" --model hernquist --n 134217728 --repeat 3 --steps 4
grep -E "crossers: (room|placed|mirror|moved)" "$O/hern.err" | awk '$(NF-3) + 0 > 5' | head -6
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
cat >"$O/ncu-rank0.sh" <<EOS
#!/usr/bin/env bash
if [ "\${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then
    exec "$NCU" --clock-control none --kernel-name-base mangled --kernel-name regex:'bn_walk_kernelILi.ELb0ELb.ELb1E' --launch-skip 1 --launch-count 1 \
        --section WarpStateStats --section SourceCounters --section Occupancy -f -o "$O/remote" "\$@"
fi
exec "\$@"
EOS
chmod +x "$O/ncu-rank0.sh"
BANYAN_REMOTE_BESIDE=0 BANYAN_GRAVITY_TRACE=0 OMP_NUM_THREADS=$C timeout 200 mpirun --bind-to none -np 4 \
    "$O/ncu-rank0.sh" "$B" bench --backend gpu --device auto --json $TUNED --model plummer --n 134217728 --repeat 3 \
    >"$O/ncu.out" 2>"$O/ncu.err" || echo "FAIL ncu: $(tail -3 "$O/ncu.err")"
"$NCU" --import "$O/remote.ncu-rep" --page source --csv --print-source sass >"$O/remote-sass.csv" 2>&1
python3 - "$O/remote-sass.csv" <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hi = next((i for i, r in enumerate(rows) if any("Source" == c or "Source" in c for c in r) and len(r) > 5), None)
if hi is None:
    print("ncu source page: no table:", " | ".join(",".join(r)[:200] for r in rows[:5])); sys.exit()
h = rows[hi]
print("columns:", "; ".join(h)[:900])
src = next(i for i, c in enumerate(h) if "Source" in c)
def col(*keys):
    for i, c in enumerate(h):
        if all(k.lower() in c.lower() for k in keys):
            return i
    return None
samp = col("Warp Stall Sampling", "All") or col("Stall Sampling") or col("Sampling")
if samp is None:
    print("no sampling column"); sys.exit()
def num(s):
    try: return float(s.replace(",", ""))
    except ValueError: return 0.0
body = [r for r in rows[hi + 1:] if len(r) == len(h)]
tot = sum(num(r[samp]) for r in body) or 1
print(f"{len(body)} SASS lines, {tot:.0f} samples")
ops = collections.Counter()
for r in body:
    op = r[src].strip().split()
    op = op[1] if op and op[0].startswith("@") and len(op) > 1 else (op[0] if op else "?")
    ops[op.split(".")[0]] += num(r[samp])
print("by opcode: " + ", ".join(f"{k} {100*v/tot:.1f}%" for k, v in ops.most_common(14)))
spill = sum(num(r[samp]) for r in body if r[src].strip().split() and any(t.startswith(("STL", "LDL")) for t in r[src].split()[:2]))
print(f"spill loads/stores (LDL/STL): {100*spill/tot:.1f}% of samples")
body.sort(key=lambda r: -num(r[samp]))
for r in body[:40]:
    print(f"  {100*num(r[samp])/tot:5.2f}%  {r[src].strip()[:90]}")
PY
gzip -f "$O/remote-sass.csv"
"$NCU" --import "$O/remote.ncu-rep" --page details --csv 2>/dev/null | grep -E '"(Registers Per Thread|Achieved Occupancy|Duration|No Eligible|Issued Warp Per Scheduler)"' | cut -c1-200 | head
timeout 240 "$here/mesh-ranks-check.sh" "$B" "$O/mesh" 7 4
gzip -f "$O"/*.err
