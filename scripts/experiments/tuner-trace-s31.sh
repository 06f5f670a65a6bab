#!/usr/bin/env bash
# Session 31: why the self-tuned rebuild (tree_rebuild 0) loses to
# rebuilding every other step (2) on M31 at 2^22 under the dynamical
# criterion (115.7 against 100.6 s for 1 Gyr, with as many builds): the
# first T of each rule, one a GPU at once, with BANYAN_GRAVITY_TRACE=1
# (simulation.c's "tuner:" lines: each step's first active bin, rebuilt,
# active count, walk and tree times). Traces gzipped into OUTDIR.
#   bash scripts/experiments/tuner-trace-s31.sh DIR OUTDIR [T]   (DIR: banyan, lib/)
D=$(cd "$1" && pwd)
O=$2 T=${3:-0.128}
mkdir -p "$O" && cd "$O" || exit 1
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
"$D/banyan" ic galaxy --model m31 --n 4194304 -s 1 -o ic.hdf5 >ic.log 2>&1 || { echo "FAIL ic"; exit 1; }
C="-P InitialConditions:file:ic.hdf5 -P Gravity:softening:0.015625 -P TimeIntegration:t_end:$T -P Snapshots:render:no
   -P Snapshots:final:no -P Statistics:interval:$T -P Restart:interval:0 -P TimeIntegration:criterion:dynamical
   -P TimeIntegration:eta:0.005 -P TimeIntegration:time_bins:8 -P TimeIntegration:dt:0.0078125"
g=0
for r in "r0 work" "r2 work" "r0t time" "r3 work"; do
    set -- $r
    n=$1 rb=${1#r}; rb=${rb%t}
    (CUDA_VISIBLE_DEVICES=$g BANYAN_GRAVITY_TRACE=1 timeout 300 "$D/banyan" run $C -P TimeIntegration:tree_rebuild:$rb \
        -P TimeIntegration:rebuild_cost:$2 -o $n >$n.log 2>$n.trace; gzip -f $n.trace
     grep "steps from" $n.log) &
    g=$((g + 1))
done
wait
g=0 # the same untraced: the wall times without the trace's waits
for r in "r0 work" "r2 work" "r1 work" "r0t time"; do
    set -- $r
    n=$1 rb=${1#r}; rb=${rb%t}
    (CUDA_VISIBLE_DEVICES=$g timeout 300 "$D/banyan" run $C -P TimeIntegration:tree_rebuild:$rb \
        -P TimeIntegration:rebuild_cost:$2 -o u$n >u$n.log 2>&1; echo "untraced $n: $(grep -h 'steps from\|tree builds' u$n.log)") &
    g=$((g + 1))
done
wait
rm -f ic.hdf5
