#!/usr/bin/env bash
# The costs of several ranks (issue 17) on one machine: `banyan forces`
# (CPU backend) on one snapshot with 1, 2, 4 and 8 ranks, the machine's
# cores shared among them (OpenMP threads = cores / ranks), each run's
# summary (domains, the locally essential trees' sizes and exchange time)
# and the errors against one process's tree. Writes nothing outside $OUT.
#   scripts/mpi-overheads.sh BANYAN N [MODEL]
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=$2 MODEL=${3:-plummer}
OUT=${OUT:-$(mktemp -d)}
cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
  OMPI_MCA_rmaps_base_oversubscribe=1
cd "$OUT" || exit 1
"$B" ic "$MODEL" --n "$N" -o ic.hdf5 >/dev/null 2>&1 || { echo "ic failed"; exit 1; }
echo "== $MODEL N=$N, $cores cores"
OMP_NUM_THREADS=$cores "$B" forces ic.hdf5 -o f1.hdf5 --backend cpu 2>&1 | sed 's/^/  1 rank: /'
for np in 2 4 8; do
  t=$((cores / np)); [ $t -ge 1 ] || t=1
  OMP_NUM_THREADS=$t mpirun --bind-to none -x OMP_NUM_THREADS -np $np "$B" forces ic.hdf5 -o f$np.hdf5 \
    --backend cpu 2>&1 | sed "s/^/  $np ranks: /"
  "$B" compare f$np.hdf5 f1.hdf5 2>&1 | grep "a - a_ref" | sed "s/^/  $np ranks against 1: /"
done
