#!/usr/bin/env bash
# One device call on a machine of several GPUs (issue 18): the carried
# build unpacked, then each named part with its own time limit, a short
# table per part on stdout, the logs under OUT.
#   scripts/multi-gpu-session.sh CARRY OUT COUNTS PART...
#   parts: tests (test_gpu_let, test_gpu_walk, test_forces_dist on the
#   largest count), weak, strong, galaxy, forces (gpu-scaling.sh's), mesh
#   (scripts/mesh-ranks-check.sh at 2^26 cells); env EXTRA and TAG: options
#   for every run of the scaling parts, and a suffix of their folders
set -u
CARRY=$1 OUT=$2 COUNTS=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
name=$(basename "$CARRY" .tar.xz)
D=$(dirname "$CARRY")/$name
[ -x "$D/banyan" ] || tar xJf "$CARRY" -C "$(dirname "$CARRY")"
D=$(cd "$D" && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
source "$here/device-mpi-env.sh"
mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name --format=csv,noheader
top=${COUNTS##* }
for part in "$@"; do
    start=$(date +%s)
    case $part in
    tests)
        for t in test_gpu_let test_gpu_walk; do
            timeout 120 "$D/tests/$t" >"$OUT/$t.log" 2>&1
            echo "$t: exit $? $(grep -h 'PASSED\|FAILED  \]' "$OUT/$t.log" | head -2 | tr '\n' ' ')"
        done
        OMP_NUM_THREADS=4 timeout 150 mpirun --bind-to none -np "$top" "$D/tests/test_forces_dist" >"$OUT/fd.log" 2>&1
        echo "test_forces_dist on $top ranks: exit $?, $(grep -c '\[       OK \]' "$OUT/fd.log") ok"
        grep -E "^gpu[ ,]" "$OUT/fd.log" | sed 's/^/  /' ;;
    mesh)
        timeout 240 "$here/mesh-ranks-check.sh" "$D/banyan" "$OUT/mesh" 7 ${COUNTS#1 } ;;
    *) # TAG: a suffix of the part's folder (runs of one part with other EXTRA options)
        dir=$OUT/$part${TAG:-}
        mkdir -p "$dir"
        (cd "$dir" && PARTS=$part OUT=$dir timeout "${PART_LIMIT:-300}" bash "$here/gpu-scaling.sh" \
            "$D/banyan" $COUNTS >run.txt 2>&1)
        grep -v "no result" "$dir/table.txt" | cut -c1-400
        python3 "$here/rank-walks.py" "$dir"/*-"$top".err 2>/dev/null | grep -v "^  rank.*nan"
        gzip -f "$dir"/*.err 2>/dev/null
        rm -f "$dir"/*.out ;;
    esac
    echo "($part: $(( $(date +%s) - start )) s)"
done
