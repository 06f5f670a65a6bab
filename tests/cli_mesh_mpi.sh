#!/usr/bin/env bash
# banyan potential under mpirun (CPU backend, ranks oversubscribed): the
# leaf blocks cut along the curve over 1, 2 and 3 ranks, each rank the
# field at its own blocks' cells, rank 0 writing. Sources are replicated
# (every rank builds the same tree over every source cell) and a brick's
# walk depends on the tree and the brick alone, so the bound is 0: every
# variable of every block (parents included) has the bits of one
# process's, for the MacLaurin spheroid (FLASH layout; gravity, also with
# particles as extra sources) and the vortex rings (banyan layout;
# streamfunction and velocity, also with an error target). The comparison
# is shown able to fail (another theta differs). Failures under mpirun
# (a bad option, a missing or foreign file, --method fft, --backend gpu
# without a GPU)
# end every rank with one message and write nothing.
set -u
source "$(dirname "$0")/mpi_test_setup.sh"
mpi_test_setup "$1"

# same A B VARS: every listed dataset of A equal to B's, bit for bit, and
# not all zero in A (FLASH layout: top-level datasets; banyan: variables/)
same() { "$py" - "$@" <<'PY'
import h5py, numpy as np, sys
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
def get(f, v):
    return f[v][...] if v in f else f["variables"][v][...]
for v in sys.argv[3].split(","):
    x, y = get(a, v), get(b, v)
    if x.shape != y.shape or x.dtype != y.dtype:
        sys.exit(f"{v}: shape {x.shape} {x.dtype} against {y.shape} {y.dtype}")
    if not np.isfinite(x).all() or not (x != 0).any():
        sys.exit(f"{v}: not finite, or all zero")
    if x.tobytes() != y.tobytes():
        d = np.abs(x - y)
        sys.exit(f"{v}: {np.count_nonzero(d)} values differ, largest by {d.max():.3e} (|{v}| up to {np.abs(x).max():.3e})")
PY
}
grav=dens,gpot,gacx,gacy,gacz
vort=vorx,vory,vorz,psix,psiy,psiz,velx,vely,velz

"$banyan" mesh-ic maclaurin --levels 3 --block 8 -o mac.h5 2>/dev/null || fail "mesh-ic maclaurin"
"$banyan" mesh-ic vortex-rings --levels 3 --block 8 --format banyan -o rings.h5 2>/dev/null || fail "mesh-ic rings"
"$banyan" ic plummer --n 300 -o stars.hdf5 2>/dev/null || fail "ic"
# one process, without mpirun: the references
"$banyan" potential mac.h5 -o mac1.h5 --backend cpu 2>/dev/null || fail "maclaurin, one process"
"$banyan" potential mac.h5 -o macp1.h5 --backend cpu --particles stars.hdf5 2>/dev/null || fail "particles, one process"
"$banyan" potential rings.h5 -o rings1.h5 --source vorx,vory,vorz --backend cpu 2>/dev/null || fail "rings, one process"
"$banyan" potential rings.h5 -o ringse1.h5 --source vorx,vory,vorz --error-target 1e-3 --backend cpu 2>/dev/null ||
  fail "rings, error target, one process"

for np in 1 2 3; do
  mpirun -np $np "$banyan" potential mac.h5 -o mac$np-r.h5 --backend cpu 2>stderr.txt ||
    fail "maclaurin, $np ranks: $(cat stderr.txt)"
  [ "$(grep -c '^banyan potential: 32768 cells (64 blocks), 1296 sources, gravity' stderr.txt)" = 1 ] ||
    fail "maclaurin, $np ranks: not one summary line: $(cat stderr.txt)"
  if [ $np -gt 1 ]; then
    grep -q "$np ranks: leaf blocks along the curve" stderr.txt || fail "$np ranks: no line about the ranks: $(cat stderr.txt)"
  fi
  out=$(same mac1.h5 mac$np-r.h5 $grav 2>&1) || fail "maclaurin, $np ranks against one process: $out"
  # auto takes the CPU across ranks
  mpirun -np $np "$banyan" potential rings.h5 -o rings$np-r.h5 --source vorx,vory,vorz 2>stderr.txt ||
    fail "rings, $np ranks: $(cat stderr.txt)"
  out=$(same rings1.h5 rings$np-r.h5 $vort 2>&1) || fail "rings, $np ranks against one process: $out"
done
mpirun -np 3 "$banyan" potential mac.h5 -o macp3.h5 --backend cpu --particles stars.hdf5 2>stderr.txt ||
  fail "particles, 3 ranks: $(cat stderr.txt)"
out=$(same macp1.h5 macp3.h5 $grav 2>&1) || fail "particles, 3 ranks against one process: $out"
# the error target chooses on every cell's sample: the same theta, the same bits
mpirun -np 2 "$banyan" potential rings.h5 -o ringse2.h5 --source vorx,vory,vorz --error-target 1e-3 --backend cpu \
  2>stderr.txt || fail "rings, error target, 2 ranks: $(cat stderr.txt)"
grep -q "error target 0.001: theta 0.4 chosen" stderr.txt || fail "error target, 2 ranks: $(cat stderr.txt)"
out=$(same ringse1.h5 ringse2.h5 $vort 2>&1) || fail "rings, error target, 2 ranks against one process: $out"
# the comparison can fail: another theta gives other bits
mpirun -np 2 "$banyan" potential mac.h5 -o mac-theta.h5 --backend cpu --theta 0.7 2>/dev/null || fail "theta 0.7"
same mac1.h5 mac-theta.h5 gpot >/dev/null 2>&1 && fail "theta 0.7 and 0.5 compare equal: the comparison is blind"

# failures: every rank stops, one message, nothing written
refused() { # refused WHAT SUBSTRING ARGS...: exit != 0, one error line naming SUBSTRING, no out.h5
  local what="$1" want="$2"
  shift 2
  mpirun -np 3 "$banyan" potential "$@" >stdout.txt 2>stderr.txt && fail "$what: exit 0"
  grep -qF -- "$want" stderr.txt || fail "$what: no '$want' in: $(cat stderr.txt)"
  [ "$(grep -c 'banyan potential: error' stderr.txt)" = 1 ] || fail "$what: not one message: $(cat stderr.txt)"
  [ -e out.h5 ] && fail "$what: out.h5 written" && rm -f out.h5
}
refused "a bad option" "unknown option" mac.h5 -o out.h5 --bogus
refused "a missing file" "missing.h5" missing.h5 -o out.h5 --backend cpu
refused "a snapshot as the mesh" "stars.hdf5" stars.hdf5 -o out.h5 --backend cpu
refused "FFT" "--method" mac.h5 -o out.h5 --method fft --backend cpu
# --backend gpu runs across ranks where a GPU is (scripts/gpu-ranks.sh checks it); without one, every
# rank fails with the one message
if ! "$banyan" potential mac.h5 -o gpu1.h5 --backend gpu 2>/dev/null; then
  refused "GPU without a device" "backend 'gpu' requested" mac.h5 -o out.h5 --backend gpu
fi
refused "a missing variable" "no variable 'vorx'" mac.h5 -o out.h5 --source vorx,vory,vorz --backend cpu

[ $failures -eq 0 ] && echo "cli_mesh_mpi: all passed"
exit $((failures > 0))
