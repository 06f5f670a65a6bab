#!/usr/bin/env bash
# The Python package (python/, issue 20): its pytest suite against the
# library built beside this banyan program (BANYAN_LIB), then `pip
# install ./python` into a scratch folder and the installed package used
# from elsewhere with the library it copied; under mpirun with 2 and
# 3 ranks (python/tests/ranks_check.py) where the library has MPI; and
# the example session (examples/python_session.py, about 25 s of CPU)
# where matplotlib is installed. Skipped (77) without
# Debian's python3 with numpy and pytest, and for the sanitizer build
# (its library needs the sanitizers' runtime preloaded into python).
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
lib="$(cd "$(dirname "$1")" && pwd)/libbanyan.so"
py=/usr/bin/python3
"$py" -c "import numpy, pytest" 2>/dev/null || { echo "SKIP: no numpy or pytest for $py"; exit 77; }
[ -f "$lib" ] || { echo "SKIP: no $lib"; exit 77; }
ldd "$lib" | grep -q libasan && { echo "SKIP: $lib is the sanitizer build's"; exit 77; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
fail=0
BANYAN_LIB="$lib" "$py" -m pytest -q -p no:cacheprovider "$here/python/tests" || fail=1
# several ranks from Python (mpirun python3 ...; banyan.ranks): fresh random particles each time
if command -v mpirun >/dev/null && BANYAN_LIB="$lib" PYTHONPATH="$here/python" "$py" -c \
    'import banyan, sys; sys.exit(0 if banyan.ranks.have_mpi() else 1)' 2>/dev/null; then
  seed=$((RANDOM * 32768 + RANDOM))
  for np in 2 3; do
    (cd "$scratch" && env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
      OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 BANYAN_LIB="$lib" \
      PYTHONPATH="$here/python" timeout 300 mpirun -np $np "$py" "$here/python/tests/ranks_check.py" $seed) \
      || { echo "FAIL: Python over $np ranks (seed $seed)"; fail=1; }
  done
else
  echo "cli_python: no mpirun or no MPI in the library: the ranks' check skipped"
fi
# the example session, run as a user would (its output checked, its files in the scratch folder)
if "$py" -c "import matplotlib" 2>/dev/null; then
  if (cd "$scratch" && env BANYAN_LIB="$lib" PYTHONPATH="$here/python" timeout 300 "$py" \
      "$here/examples/python_session.py" "$scratch/session") >"$scratch/session.log" 2>&1 \
      && grep -q "the same positions: True" "$scratch/session.log" && grep -q "^M31: G = " "$scratch/session.log" \
      && [ -s "$scratch/session/energy.png" ]; then
    echo "cli_python: examples/python_session.py ran:"; sed 's/^/  /' "$scratch/session.log"
  else
    echo "FAIL: examples/python_session.py: $(tail -5 "$scratch/session.log")"; fail=1
  fi
else
  echo "cli_python: no matplotlib: examples/python_session.py not run"
fi
# pip builds in the source tree: a copy of python/ beside a build/ with the library keeps the checkout clean
mkdir -p "$scratch/src/build" && cp -r "$here/python" "$scratch/src/python" && cp "$lib" "$scratch/src/build/"
"$py" -m pip install -q --no-build-isolation --no-deps --target "$scratch/site" "$scratch/src/python" \
    >"$scratch/pip.log" 2>&1 || { echo "FAIL: pip install ./python: $(tail -3 "$scratch/pip.log")"; fail=1; }
(cd / && env -u BANYAN_LIB PYTHONPATH="$scratch/site" "$py" -c '
import banyan, numpy as np
assert banyan._lib.path.endswith("site/banyan/libbanyan.so"), banyan._lib.path
p = banyan.ic.plummer(1000, seed=2)
acc, pot = banyan.forces(p.pos, p.mass, eps=1e-2, backend="cpu")
assert acc.shape == (1000, 3) and np.isfinite(pot).all()
print("installed package:", banyan._lib.path)') || { echo "FAIL: the installed package"; fail=1; }
[ $fail -eq 0 ] && echo "cli_python: all passed"
exit $fail
