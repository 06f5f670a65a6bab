#!/usr/bin/env bash
# Session 32, one H200: the GPU tests of the refused build ahead
# (backend_cuda.cu's lead_refused; scripts/gpu-verify.sh), then the cold
# collapse of issue 19's rule check alone (a uniform sphere at 2^22 to
# t = 2, both rules, rebuild-rules-check.sh's settings) and the default
# rule's trace of it (scripts/collapse-trace.sh, its bench settings).
#   bash scripts/experiments/session32-verify.sh DIR OUTDIR   (DIR: banyan, tests/, lib/)
D=$(cd "$1" && pwd)
O=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
timeout 330 bash "$here/gpu-verify.sh" "$D" /tmp/gv 2>&1 | tail -30
S="criterion:acceleration,eta:0.1,time_bins:6,dt:0.0625"
MODEL=uniform-sphere OUT=$O/us timeout 120 bash "$here/criterion-sweep.sh" "$D/banyan" 4194304 2 \
    r1=$S,tree_rebuild:1 r0=$S,tree_rebuild:0 2>&1 | grep -v "^shared\|fit"
rm -rf "$O/us"/*/
REBUILD=0 OUT=$O/ct timeout 100 bash "$here/collapse-trace.sh" "$D/banyan" 4194304 691 >"$O/ct0.txt" 2>&1
head -1 "$O/ct0.txt"
grep -c "lead groups" "$O"/ct/*.trace
grep "lead groups" "$O"/ct/*.trace | awk '{print $NF}' | sort -n | tail -4
rm -f "$O"/ct/*.trace
