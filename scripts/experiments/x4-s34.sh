#!/usr/bin/env bash
# Session 34's second look at 4 GPUs (issue 18), one device call (run 3;
# its stall reasons' query was mended after: a regex of the metrics' names):
#  1. weak Hernquist 2^25 a GPU on 4 GPUs, traced: where the one long
#     move of the batch goes (the crossers' new stages: room, placed, mirror);
#  2. strong Plummer 2^27 on 4 GPUs cut by measured time (--balance-cost time);
#  3. Nsight Compute on rank 0 of weak Plummer on 4 GPUs: the local and the
#     received walks' kernels of one warm force call (occupancy, issue
#     slots, the warps' stall reasons), the clocks left alone.
#   bash scripts/experiments/x4-s34.sh DIR OUT   (DIR: banyan, lib/)
source "$(dirname "$0")/carried-env.sh"
export BANYAN_GRAVITY_TRACE=1
C=$(( $(nproc) / 4 ))
run4() { # LOG ARGS...: bench on 4 ranks, one GPU each
    local log=$1
    shift
    OMP_NUM_THREADS=$C timeout 200 mpirun --bind-to none -np 4 "$B" bench --backend gpu --device auto --json $TUNED "$@" \
        >"$O/$log.out" 2>"$O/$log.err" || echo "FAIL $log: $(tail -2 "$O/$log.err")"
    python3 - "$O/$log.out" "$log" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]}: forces {1e3*r['t_total']:.1f} ms, step best {1e3*r['step_best']:.1f}, "
      f"mean {1e3*r['step_mean']:.1f}, batch {1e3*r['batch_mean']:.1f} ms, balance {r.get('balance_cost')}")
PY
    python3 "$here/rank-walks.py" "$O/$log.err" 2>/dev/null | grep -v nan
}
run4 hern4 --model hernquist --n 134217728 --repeat 3 --steps 4
grep -E "crossers: (room|placed|mirror|moved)" "$O/hern4.err" | awk '$(NF-3) + 0 > 5' | head -12
run4 strong4-time --model plummer --n 134217728 --repeat 3 --steps 2 --balance-cost time
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
cat >"$O/ncu-rank0.sh" <<EOF
#!/usr/bin/env bash
if [ "\${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then
    exec "$NCU" --clock-control none --kernel-name regex:bn_walk_kernel --launch-skip 4 --launch-count 4 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
        --section WarpStateStats --section MemoryWorkloadAnalysis -f -o "$O/walks" "\$@"
fi
exec "\$@"
EOF
chmod +x "$O/ncu-rank0.sh"
BANYAN_GRAVITY_TRACE=0 OMP_NUM_THREADS=$C timeout 240 mpirun --bind-to none -np 4 "$O/ncu-rank0.sh" "$B" bench \
    --backend gpu --device auto --json $TUNED --model plummer --n 134217728 --repeat 3 >"$O/ncu.out" 2>"$O/ncu.err" ||
    echo "FAIL ncu: $(tail -3 "$O/ncu.err")"
"$NCU" --import "$O/walks.ncu-rep" --page details --csv >"$O/walks.csv" 2>&1
python3 - "$O/walks.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if not rows or len(rows[0]) < 10:
    print("ncu: no report:", open(sys.argv[1]).read()[:600]); sys.exit()
h = rows[0]
ix = {k: h.index(k) for k in ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value")}
want = ("Duration", "Registers Per Thread", "Achieved Occupancy", "Theoretical Occupancy", "Issue Slots Busy",
        "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler", "Issued Warp Per Scheduler",
        "Warp Cycles Per Issued Instruction", "Compute (SM) Throughput", "Memory Throughput", "L1/TEX Hit Rate",
        "L2 Hit Rate", "Block Limit Registers", "Block Limit Shared Mem", "Dynamic Shared Memory Per Block",
        "Static Shared Memory Per Block", "Waves Per SM")
cur = None
for r in rows[1:]:
    key = (r[ix["ID"]], r[ix["Kernel Name"]][:60])
    if key != cur:
        cur = key
        print(f"kernel {key[0]}: {key[1]}")
    if r[ix["Metric Name"]] in want:
        print(f"   {r[ix['Metric Name']]}: {r[ix['Metric Value']]} {r[ix['Metric Unit']]}")
PY
"$NCU" --import "$O/walks.ncu-rep" --page raw --csv --metrics \
    'regex:.*issue_stalled.*' \
    >"$O/stalls.csv" 2>&1
python3 - "$O/stalls.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) < 3:
    print("stalls: none:", open(sys.argv[1]).read()[:400]); sys.exit()
h, units = rows[0], rows[1]
for r in rows[2:]:
    name = r[h.index("Kernel Name")][:50] if "Kernel Name" in h else "?"
    vals = []
    for i, k in enumerate(h):
        if "issue_stalled" in k and ("per_issue_active" in k or "pcsamp" in k):
            try:
                reason = k.split("issue_stalled_")[1].split("_per_issue")[0]
                vals.append((float(r[i].replace(",", "")), ("sampled " if "pcsamp" in k else "") + reason))
            except (ValueError, IndexError):
                pass
    vals.sort(reverse=True)
    print(f"{r[h.index('ID')] if 'ID' in h else '?'} {name}: " + ", ".join(f"{n} {v:.2f}" for v, n in vals[:10]))
PY
