#!/usr/bin/env bash
# banyan forces under mpirun (CPU backend, ranks oversubscribed): the
# forces of 2 and 3 ranks against double direct summation as close as
# one process's tree, direct summation over 3 ranks equal to one
# process's, a refused input refused on every rank with nothing written,
# and commands that do not spread over ranks refused under mpirun.
set -u
source "$(dirname "$0")/mpi_test_setup.sh"
mpi_test_setup "$1"

# p99 of |a - a_ref| / |a_ref| and the largest potential error, from compare --json
errors() { "$banyan" compare "$1" "$2" --json | "$py" -c '
import json, sys
r = json.load(sys.stdin)
print(r["acc_rel_error"]["p99"], r["acc_rel_error"]["max"], r["pot_rel_error"]["max"])'; }

"$banyan" ic hernquist --n 20000 -o halo.hdf5 2>/dev/null || fail "ic"
"$banyan" forces halo.hdf5 -o direct.hdf5 --method direct --backend cpu 2>/dev/null || fail "direct, one process"
"$banyan" forces halo.hdf5 -o tree1.hdf5 --backend cpu 2>/dev/null || fail "tree, one process"
read -r one_p99 _ _ < <(errors tree1.hdf5 direct.hdf5)
for np in 2 3; do
  mpirun -np $np "$banyan" forces halo.hdf5 -o tree$np.hdf5 --backend cpu 2>stderr.txt ||
    fail "tree, $np ranks: $(cat stderr.txt)"
  grep -q "$np ranks: domains along the curve" stderr.txt || fail "tree, $np ranks: no domain line: $(cat stderr.txt)"
  read -r p99 _ _ < <(errors tree$np.hdf5 direct.hdf5)
  echo "tree forces against direct summation: p99 $p99 with $np ranks, $one_p99 in one process"
  awk -v a="$p99" -v b="$one_p99" 'BEGIN {exit !(a > 0 && a <= 1.3 * b)}' ||
    fail "$np ranks: p99 $p99 against one process's $one_p99"
done
mpirun -np 3 "$banyan" forces halo.hdf5 -o direct3.hdf5 --method direct --backend cpu 2>/dev/null ||
  fail "direct, 3 ranks"
read -r _ amax pmax < <(errors direct3.hdf5 direct.hdf5)
awk -v a="$amax" -v p="$pmax" 'BEGIN {exit !(a < 1e-12 && p < 1e-12)}' ||
  fail "direct summation over 3 ranks differs from one process's: $amax $pmax"

# a coordinate of 1e300: refused on every rank, nothing written
"$py" "$here/scripts/hostile-files.py" . >/dev/null || fail "hostile files"
mpirun -np 3 "$banyan" forces far.hdf5 -o far-out.hdf5 --backend cpu >/dev/null 2>stderr.txt && fail "far: exit 0"
grep -q "span" stderr.txt || fail "far: no message about the span: $(cat stderr.txt)"
[ "$(grep -c 'banyan forces: error' stderr.txt)" = 1 ] || fail "far: not one message: $(cat stderr.txt)"
[ -e far-out.hdf5 ] && fail "far: output written"

# the output may be the input (rewritten with its forces, atomically, by rank 0)
cp halo.hdf5 same.hdf5
mpirun -np 3 "$banyan" forces same.hdf5 -o same.hdf5 --backend cpu 2>stderr.txt || fail "-o IN: $(cat stderr.txt)"
read -r p99 _ _ < <(errors same.hdf5 direct.hdf5)
awk -v a="$p99" -v b="$one_p99" 'BEGIN {exit !(a > 0 && a <= 1.3 * b)}' || fail "-o IN: p99 $p99"

# more ranks than particles: ranks without particles take part
"$py" - <<'PY' || fail "tiny file"
import h5py, numpy as np
with h5py.File("two.hdf5", "w") as f:
    h = f.create_group("Header")
    h.attrs["NumPart_ThisFile"] = np.array([0, 2, 0, 0, 0, 0], dtype=np.uint32)
    h.attrs["MassTable"] = np.zeros(6)
    h.attrs["Time"] = 0.0
    g = f.create_group("PartType1")
    g["Coordinates"] = np.array([[0.0, 0, 0], [1.0, 0, 0]])
    g["Velocities"] = np.zeros((2, 3))
    g["Masses"] = np.array([1.0, 3.0])
    g["ParticleIDs"] = np.array([1, 2], dtype=np.uint64)
PY
mpirun -np 3 "$banyan" forces two.hdf5 -o two-out.hdf5 --backend cpu --eps 0 2>stderr.txt ||
  fail "2 particles on 3 ranks: $(cat stderr.txt)"
"$py" - <<'PY' || fail "2 particles on 3 ranks: wrong forces"
import h5py, numpy as np
with h5py.File("two-out.hdf5") as f:
    a, phi = f["PartType1/Acceleration"][:], f["PartType1/Potential"][:]
# exact: a_0 = +3 x, a_1 = -1 x, phi_0 = -3, phi_1 = -1 (G = 1, separation 1)
assert np.allclose(a, [[3, 0, 0], [-1, 0, 0]], rtol=1e-14, atol=0), a
assert np.allclose(phi, [-3, -1], rtol=1e-14), phi
PY

# commands that run in one process refuse several ranks
mpirun -np 2 "$banyan" info halo.hdf5 >/dev/null 2>stderr.txt && fail "info under mpirun: exit 0"
grep -q "runs in one process" stderr.txt || fail "info under mpirun: $(cat stderr.txt)"

[ $failures -eq 0 ] && echo "cli_mpi: all passed"
exit $((failures > 0))
