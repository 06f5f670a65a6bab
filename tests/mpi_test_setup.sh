# Sourced by the shell tests that run banyan under mpirun (cli_mpi.sh,
# cli_run_mpi.sh, cli_target_mpi.sh):
#   mpi_test_setup BANYAN
# sets $banyan (absolute), $py (Debian's python3) and $here (the source
# tree); exports the environment of tests/CMakeLists.txt's BANYAN_MPI_ENV
# (root in containers, no CMA, ranks that yield when they wait: four ranks
# share CI's two cores; Open MPI's own memory not a leak of ours under the
# sanitizers); makes and enters $scratch (removed at exit); sets
# failures=0 for fail(). Exits 77 (skipped) without MPI, mpirun or h5py.
mpi_test_setup() {
  banyan="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
  "$banyan" --version | grep -q " mpi" || { echo "SKIP: banyan built without MPI"; exit 77; }
  command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
  py=/usr/bin/python3
  "$py" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: no h5py"; exit 77; }
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 \
    OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_mca_base_component_disable_dlclose=1 \
    LSAN_OPTIONS=suppressions=$here/tests/lsan-mpi.supp:fast_unwind_on_malloc=0:print_suppressions=0
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  cd "$scratch" || exit 1
  failures=0
}

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
