#!/usr/bin/env bash
# pynbody opens snapshots written by banyan as GADGET HDF5 data, with the
# right particles, values, units and time (tests/pynbody_open.py): forces
# on tests/make_snapshots.py's good.hdf5 (one type, with Potential), an
# M31 galaxy (PartType1-3) and a run's final snapshot from it (t > 0).
# pynbody is looked for by /usr/bin/python3 on its own path, and first in
# $BANYAN_PYNBODY_PATH when that is set (a folder that holds it, e.g. of
# pip install --target DIR pynbody; cmake -DBANYAN_PYNBODY_PATH=DIR sets it
# for ctest). Skipped (77) where pynbody or h5py can't be imported, unless
# BANYAN_PYNBODY_PATH is set: then a pynbody that won't import fails.
set -u
py=/usr/bin/python3
if [ -n "${BANYAN_PYNBODY_PATH:-}" ]; then
  export PYTHONPATH="$BANYAN_PYNBODY_PATH${PYTHONPATH:+:$PYTHONPATH}"
fi
if ! why="$("$py" -c "import pynbody" 2>&1)"; then
  if [ -n "${BANYAN_PYNBODY_PATH:-}" ]; then
    echo "FAIL: BANYAN_PYNBODY_PATH=$BANYAN_PYNBODY_PATH, but $py cannot import pynbody: $(echo "$why" | tail -1)"
    exit 1
  fi
  echo "SKIP: $py cannot import pynbody ($(echo "$why" | tail -1)); pip install pynbody, or set BANYAN_PYNBODY_PATH"
  exit 77
fi
source "$(dirname "$0")/snapshot_test_setup.sh"
snapshot_test_setup "$1" "h5py" "python3-h5py"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$banyan" forces good.hdf5 -o out.hdf5 --method direct --eps 0.05 || exit 1
"$py" "$here/pynbody_open.py" out.hdf5 good.hdf5 || fail "out.hdf5 (forces on good.hdf5)"

"$banyan" ic galaxy --model m31 --n 4096 -s 3 -o g.hdf5 2>err.txt || { cat err.txt; exit 1; }
"$py" "$here/pynbody_open.py" g.hdf5 || fail "g.hdf5 (ic galaxy m31)"
"$banyan" run -P InitialConditions:file:g.hdf5 -P TimeIntegration:t_end:0.01 -P TimeIntegration:dt:0.0005 \
  -P Gravity:softening:0.016 -P Gravity:backend:cpu -P Snapshots:render:no -q -o run 2>err.txt || { cat err.txt; exit 1; }
"$py" "$here/pynbody_open.py" run/snapshot_0000.hdf5 || fail "run/snapshot_0000.hdf5 (t = 0.01 from g.hdf5)"

[ $failures -eq 0 ] && echo "cli_pynbody: all passed"
exit $((failures > 0))
