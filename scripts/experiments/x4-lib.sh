# Sourced by the 4-GPU session scripts after carried-env.sh: run4 and
# runp (a traced bench on 4 or NP ranks, a GPU each: its times, each rank's walks, the
# received walk's median main pass) and remote_sass (Nsight Compute's
# source counters of rank 0's received walk: where its warps stall, by
# SASS opcode and instruction).
export BANYAN_GRAVITY_TRACE=1
verify_all() { # every GPU test (gpu-verify.sh) and test_forces_dist on 4 ranks
    bash "$here/gpu-verify.sh" "$D" "$O/v" 2>&1
    OMP_NUM_THREADS=4 timeout 150 mpirun --bind-to none -np 4 "$D/tests/test_forces_dist" >"$O/fd4.log" 2>&1
    echo "test_forces_dist on 4 ranks: exit $? ($(grep -c '\[       OK \]' "$O/fd4.log") ok, $(grep -c 'FAILED  \]' "$O/fd4.log") failed lines)"
}
C=$(( $(nproc) / 4 ))
run4() { # LOG BINARY ARGS...: bench on 4 ranks, one GPU each
    runp 4 "$@"
}
runp() { # NP LOG BINARY ARGS...: bench on NP ranks, one GPU each
    local np=$1 log=$2 bin=$3
    shift 3
    OMP_NUM_THREADS=$(( $(nproc) / np )) timeout 200 mpirun --bind-to none -np "$np" "$bin" bench --backend gpu --device auto --json $TUNED "$@" \
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
    grep -E "received walk: the main pass" "$O/$log.err" | awk '{print $(NF-3)}' | sort -n |
        awk '{v[NR]=$1} END {print "  received walk main pass, median over ranks and calls: " v[int((NR+1)/2)] " ms (" NR " samples)"}'
}
remote_sass() { # TAG BINARY: one force call's received walk on rank 0, 2^25 Plummer a GPU
    local tag=$1 bin=$2
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
cat >"$O/$tag-rank0.sh" <<EOS
#!/usr/bin/env bash
if [ "\${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then
    exec "$NCU" --clock-control none --kernel-name-base mangled --kernel-name regex:'bn_walk_kernelILi.ELb0ELb.ELb1E' --launch-skip 1 --launch-count 1 \
        --section WarpStateStats --section SourceCounters --section Occupancy -f -o "$O/$tag" "\$@"
fi
exec "\$@"
EOS
chmod +x "$O/$tag-rank0.sh"
BANYAN_REMOTE_BESIDE=0 BANYAN_GRAVITY_TRACE=0 OMP_NUM_THREADS=$C timeout 200 mpirun --bind-to none -np 4 \
    "$O/$tag-rank0.sh" "$bin" bench --backend gpu --device auto --json $TUNED --model plummer --n 134217728 --repeat 3 \
    >"$O/$tag-ncu.out" 2>"$O/$tag-ncu.err" || echo "FAIL ncu $tag: $(tail -3 "$O/$tag-ncu.err")"
"$NCU" --import "$O/$tag.ncu-rep" --page source --csv --print-source sass >"$O/$tag-sass.csv" 2>&1
python3 - "$O/$tag-sass.csv" <<'PY'
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
gzip -f "$O/$tag-sass.csv"
"$NCU" --import "$O/$tag.ncu-rep" --page details --csv 2>/dev/null | grep -E '"(Registers Per Thread|Achieved Occupancy|Duration|No Eligible|Issued Warp Per Scheduler)"' | cut -c1-200 | head
    "$NCU" --import "$O/$tag.ncu-rep" --page raw --csv --metrics 'regex:.*issue_stalled.*' >"$O/$tag-stalls.csv" 2>&1
    python3 - "$O/$tag-stalls.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) < 3:
    print("stalls: none:", open(sys.argv[1]).read()[:400]); sys.exit()
h = rows[0]
for r in rows[2:]:
    vals = []
    for i, k in enumerate(h):
        if "issue_stalled" in k and "per_issue_active" in k:
            try:
                vals.append((float(r[i].replace(",", "")), k.split("issue_stalled_")[1].split("_per_issue")[0]))
            except (ValueError, IndexError):
                pass
    vals.sort(reverse=True)
    print("stall reasons (cycles per issued instruction): " + ", ".join(f"{n} {v:.2f}" for v, n in vals[:10]))
PY
    gzip -f "$O/$tag-stalls.csv"
}
