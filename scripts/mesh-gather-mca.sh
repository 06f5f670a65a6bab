#!/usr/bin/env bash
# The mesh's gather to rank 0 under Open MPI's shared-memory settings
# (issue 18: 1.3 s for 1.1 GB on 2 H200 ranks): the same 2-rank GPU
# `banyan potential` of a 2^26-cell MacLaurin mesh with each setting in
# turn, its summary lines (solve, gather) a setting.
#   scripts/mesh-gather-mca.sh BANYAN OUT [LEVELS]   (default 7)
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
O=$2
LEVELS=${3:-7}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O"
source "$here/device-mpi-env.sh"
cd "$O" || exit 1
OMP_NUM_THREADS=$(nproc) "$B" mesh-ic maclaurin --levels "$LEVELS" --min-level 3 --block 16 --radius 0.35 -o mesh.h5 \
    >mesh-ic.log 2>&1 || { echo "FAIL: mesh-ic: $(tail -2 mesh-ic.log)"; exit 1; }
run() { # NAME, then VAR=VALUE settings for mpirun's environment
    local name=$1
    shift
    env "$@" OMP_NUM_THREADS=$(($(nproc) / 2)) timeout 120 mpirun --bind-to none -np 2 "$B" potential mesh.h5 \
        -o "$name.h5" --backend gpu --device auto --theta 0.35 >"$name.out" 2>"$name.err" ||
        echo "FAIL: $name: $(tail -2 "$name.err")"
    echo "$name: $(grep -h -A1 '^banyan potential' "$name.err" | tr '\n' ' ' | sed 's/  */ /g' | cut -c1-330)"
    rm -f "$name.h5"
}
run default
[ -n "${ONLY_DEFAULT:-}" ] && { rm -f mesh.h5; exit 0; }
run send4m OMPI_MCA_btl_vader_max_send_size=4194304
run cma OMPI_MCA_btl_vader_single_copy_mechanism=cma
run tcp OMPI_MCA_btl=self,tcp
rm -f mesh.h5
