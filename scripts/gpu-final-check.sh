#!/usr/bin/env bash
# One device call for a change to the received walk (session 22): its
# GPU tests (test_gpu_let; test_forces_dist on 2 and 4 ranks), the A/B of
# the received walk's group order (BANYAN_REMOTE_ORDER key / size, weak
# Plummer on 4 GPUs, bench's steps), then issue 18's weak, strong and M31
# runs on 1, 2 and 4 GPUs with the better order. Logs under OUTDIR.
#   scripts/gpu-final-check.sh DIR OUTDIR   (DIR: banyan, tests/, lib/)
set -u
DIR=$(cd "$1" && pwd)
O=$2
mkdir -p "$O"
export LD_LIBRARY_PATH=$DIR/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
here=$(cd "$(dirname "$0")" && pwd)
timeout 120 "$DIR/tests/test_gpu_let" >"$O/let.log" 2>&1
echo "test_gpu_let: exit $?" | tee "$O/summary.txt"
for np in 2 4; do
    OMP_NUM_THREADS=4 timeout 150 mpirun --bind-to none -np $np "$DIR/tests/test_forces_dist" >"$O/fd$np.log" 2>&1
    echo "test_forces_dist $np ranks: exit $?, $(grep -c '\[       OK \]' "$O/fd$np.log") ok" | tee -a "$O/summary.txt"
done
OUT=$O/order VAR=BANYAN_REMOTE_ORDER timeout 150 "$here/cost-visit-sweep.sh" "$DIR/banyan" 4 key size \
    >"$O/order.txt" 2>&1
cat "$O/order.txt" | tee -a "$O/summary.txt"
better=$(python3 -c '
import json, sys
r = {}
for w in ("key", "size"):
    try: r[w] = json.load(open(sys.argv[1] + "/w" + w + ".out"))["batch_mean"]
    except Exception: pass
print(min(r, key=r.get) if r else "size")' "$O/order")
echo "the received walk's order for the scaling runs: $better" | tee -a "$O/summary.txt"
export BANYAN_REMOTE_ORDER=$better
OUT=$O/scaling PARTS=${PARTS:-"weak strong galaxy"} "$here/gpu-scaling.sh" "$DIR/banyan" 1 2 4 >"$O/scaling.txt" 2>&1
tail -40 "$O/scaling.txt" | tee -a "$O/summary.txt"
