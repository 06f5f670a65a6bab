#!/usr/bin/env bash
# The GPU tests built elsewhere for sm_90, on a machine with one or more
# GPUs, in one call: each tests/test_gpu_* of DIR on one GPU, and
# test_forces_dist (the GPU's crossers, re-balance and costs across
# ranks, with the CPU's cases beside them) under mpirun with 2 and 4
# ranks (--device auto: a GPU each where there are several, else they
# share one); with OLD, the forces of DIR/banyan and OLD on one GPU
# compared bit for bit (a change meant to keep the local walk's sums).
# A line per test last; exit 1 if one failed.
#   scripts/gpu-tests-ranks.sh DIR [OLD]
set -u
DIR=$(cd "$1" && pwd)
OLD=${2:-}
OUT=${OUT:-$PWD/out-gpu-tests}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
    OMPI_MCA_rmaps_base_oversubscribe=1 NCCL_NVLS_ENABLE=0
TABLE=$OUT/tests.txt
: >"$TABLE"
fail=0
row() { echo "$*" | tee -a "$TABLE"; }
for t in "$DIR"/tests/test_gpu_*; do
    name=$(basename "$t")
    start=$(date +%s)
    timeout 300 "$t" >"$OUT/$name.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && fail=1
    row "$name: exit $rc, $(( $(date +%s) - start )) s"
done
for np in 2 4; do
    start=$(date +%s)
    OMP_NUM_THREADS=$(( $(nproc) / np )) timeout 420 mpirun --bind-to none -np $np "$DIR/tests/test_forces_dist" \
        >"$OUT/test_forces_dist-$np.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && fail=1
    row "test_forces_dist, $np ranks: exit $rc, $(( $(date +%s) - start )) s;" \
        "$(grep -c '\[       OK \]' "$OUT/test_forces_dist-$np.log") ok," \
        "$(grep -c '\[  SKIPPED \]' "$OUT/test_forces_dist-$np.log") skipped"
    grep -E "^(gpu|cpu)[ ,]" "$OUT/test_forces_dist-$np.log" | sed 's/^/    /' | tee -a "$TABLE"
done
if [ -n "$OLD" ]; then
    d=$(mktemp -d)
    "$DIR/banyan" ic plummer --n 1048576 -o "$d/p.hdf5" >/dev/null 2>&1
    for opts in "--theta 0.67 --mac bonsai-box --leaf-size 32 --group-size 256 --group-expansion 0.4" \
                "--theta 0.5 --group-size 32 --eps 0"; do
        # shellcheck disable=SC2086
        "$DIR/banyan" forces "$d/p.hdf5" -o "$d/new.hdf5" --backend gpu $opts >/dev/null 2>&1 &&
            "$OLD" forces "$d/p.hdf5" -o "$d/old.hdf5" --backend gpu $opts >/dev/null 2>&1 &&
            "$DIR/banyan" compare "$d/new.hdf5" "$d/old.hdf5" --json >"$d/cmp.json" 2>/dev/null
        row "same bits as $(basename "$OLD"), plummer 2^20 $opts: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("max |da|/|a| %g, max |dphi|/|phi| %g" % (r["acc_rel_error"]["max"], r["pot_rel_error"]["max"]))' "$d/cmp.json" 2>&1)"
        rm -f "$d/new.hdf5" "$d/old.hdf5"
    done
    rm -rf "$d"
fi
exit $fail
