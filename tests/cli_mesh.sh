#!/usr/bin/env bash
# banyan mesh-ic / potential / compare / render on AMR meshes: FLASH files
# made, solved (tree and FFT, gravity and vorticity) and written back as
# copies with new variables that yt opens; banyan's own layout; hostile
# mesh files refused naming the dataset and block, with nothing written.
# usage: bash cli_mesh.sh path/to/banyan
set -u
source "$(dirname "$0")/snapshot_test_setup.sh"
snapshot_test_setup "$1" "h5py, numpy" python3-h5py

source "$here/shell_checks.sh"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# --- the good path ------------------------------------------------------------
expect_ok "$banyan" mesh-ic maclaurin --levels 3 --block 8 -o mac.h5
grep -q "64 leaf blocks of 8^3 cells (32768 cells)" stderr.txt || fail "mesh-ic: $(cat stderr.txt)"
expect_ok "$banyan" potential mac.h5 -o pot.h5 --backend cpu --theta 0.3
grep -q "32768 cells (64 blocks), 1296 sources, gravity, theta 0.3, backend cpu" stderr.txt \
  || fail "potential: $(cat stderr.txt)"
# the copy holds the input's datasets and the new variables, all blocks
"$py" - pot.h5 mac.h5 <<'PY' || fail "the copy's layout"
import sys, h5py, numpy as np
out, inp = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = [n.decode().strip() for n in out["unknown names"][:, 0]]
assert names == ["dens", "gpot", "gacx", "gacy", "gacz"], names
for k in inp:
    assert k in out, k
assert out["gpot"].shape == out["dens"].shape
leaf = out["node type"][:] == 1
assert np.all(out["gpot"][leaf] < 0), "potential not negative"
# parents hold the mean of their children
gid = out["gid"][:]
p = int(np.nonzero(out["node type"][:] == 2)[0][0])
kids = gid[p, 7:15] - 1
child_mean = np.mean([out["gpot"][k].mean() for k in kids])
assert abs(out["gpot"][p].mean() - child_mean) < 1e-12 * abs(child_mean), "restriction"
PY
# FFT and tree on a uniform mesh agree to the tree's error
expect_ok "$banyan" mesh-ic sphere --levels 3 --min-level 3 --block 8 -o sph.h5
expect_ok "$banyan" potential sph.h5 -o sph_fft.h5 --backend cpu --method fft
expect_ok "$banyan" potential sph.h5 -o sph_tree.h5 --backend cpu --theta 0.25
expect_ok "$banyan" compare sph_tree.h5 sph_fft.h5 --json
"$py" -c "import json,sys; r=json.load(open('stdout.txt'))['variables']; assert r['gpot']['max'] < 1e-4 and r['|gac|']['p99'] < 1e-3, r" \
  || fail "tree against FFT: $(cat stdout.txt)"
"$banyan" mesh-ic sphere --levels 4 --block 8 -o mac2.h5 2>/dev/null
"$banyan" potential mac2.h5 -o amr_fft.h5 --method fft --backend cpu >stdout.txt 2>stderr.txt && fail "FFT on AMR accepted"
grep -q "needs a uniform mesh" stderr.txt || fail "FFT on AMR: $(cat stderr.txt)"
# vorticity: psi and u, written back; render and compare
expect_ok "$banyan" mesh-ic vortex-rings --levels 3 --block 8 -o rings.h5
expect_ok "$banyan" potential rings.h5 -o rings_psi.h5 --source vorx,vory,vorz --backend cpu
expect_ok "$banyan" render rings_psi.h5 -o psi.png --var psiz --size 64 --axis x --slice 0.25
[ "$("$py" "$here/make_snapshots.py" pngsize psi.png)" = "64 64" ] || fail "render of a mesh slice: size"
expect_ok "$banyan" compare rings_psi.h5 rings_psi.h5
grep -q "^|vel|.*0.000e+00" stdout.txt || fail "compare of a file with itself: $(cat stdout.txt)"
# one problem in FLASH's block order and in banyan's: compare pairs the blocks by place
expect_ok "$banyan" mesh-ic maclaurin --levels 3 --block 8 --format banyan -o mac_own.h5
expect_ok "$banyan" potential mac_own.h5 -o pot_own.h5 --backend cpu --theta 0.3
expect_ok "$banyan" compare pot.h5 pot_own.h5 --json
"$py" -c "import json; r=json.load(open('stdout.txt'))['variables']; assert r['gpot']['max'] < 1e-12, r" \
  || fail "FLASH against banyan layout, same problem: $(cat stdout.txt)"
expect_ok "$banyan" potential mac_own.h5 -o pot_own3.h5 --backend cpu --theta 0.9
expect_ok "$banyan" compare pot_own3.h5 pot.h5 --json
"$py" -c "import json; r=json.load(open('stdout.txt'))['variables']; assert 1e-6 < r['gpot']['max'] < 0.1, r" \
  || fail "compare of theta 0.9 against 0.3 must see the difference: $(cat stdout.txt)"
# banyan's own layout, round trip
expect_ok "$banyan" mesh-ic maclaurin --levels 2 --block 8 --format banyan -o own.h5
expect_ok "$banyan" potential own.h5 -o own_pot.h5 --backend cpu
"$py" -c "import h5py; f=h5py.File('own_pot.h5','r'); assert f.attrs['banyan_mesh_version']==1 and 'gpot' in f['variables']" \
  || fail "banyan layout output"
# yt opens what mesh-ic and potential write
if "$py" -c "import yt" 2>/dev/null; then
  "$py" - pot.h5 <<'PY' || fail "yt cannot read the potential's copy"
import sys, yt
yt.set_log_level(50)
ds = yt.load(sys.argv[1])
assert ("flash", "gpot") in ds.field_list, ds.field_list
ad = ds.all_data()
assert float(ad["flash", "gpot"].min()) < 0
assert list(ds.domain_dimensions) == [8, 8, 8], ds.domain_dimensions  # yt: the root grid (nblockx nxb)
assert ds.max_level == 2, ds.max_level
PY
fi

# --- hostile: refused, named, nothing written ------------------------------------------
expect_error "is the same file as the mesh" "" -- "$banyan" potential mac.h5 -o mac.h5 --backend cpu
expect_error "the mesh has no variable 'vorx'" out.h5 -- "$banyan" potential mac.h5 -o out.h5 --source vorx,vory,vorz \
  --backend cpu
expect_error "vorticity sources need 3 variables" out.h5 -- "$banyan" potential mac.h5 -o out.h5 --source vorx,vory
expect_error "--theta must be" out.h5 -- "$banyan" potential mac.h5 -o out.h5 --theta 3
expect_error "nodir' does not exist" "" -- "$banyan" potential mac.h5 -o nodir/out.h5
expect_error "--levels must be" x.h5 -- "$banyan" mesh-ic sphere --levels 13 -o x.h5
expect_error "block = 7 cells per edge: must be even" x.h5 -- "$banyan" mesh-ic sphere --block 7 -o x.h5
mkdir -p bad
"$py" "$here/make_meshes.py" mac.h5 bad own.h5 || fail "cannot make the hostile meshes"
while IFS='|' read -r name want who; do
  if [ "$who" = any ]; then # no crash, no hang; a success writes a file banyan reads back
    timeout 60 "$banyan" potential "bad/$name.h5" -o out.h5 --backend cpu >stdout.txt 2>stderr.txt
    rc=$?
    [ $rc -le 1 ] || fail "potential bad/$name.h5: exit $rc: $(tail -2 stderr.txt)"
    if [ $rc -eq 0 ]; then "$banyan" render out.h5 -o out.png --size 16 >/dev/null 2>&1 || fail "$name: output unreadable"; fi
    [ $rc -eq 0 ] || [ ! -e out.h5 ] || fail "$name: output left after a failure"
    rm -f out.h5 out.png
    continue
  fi
  expect_error "$want" out.h5 -- "$banyan" potential "bad/$name.h5" -o out.h5 --backend cpu
  [ "$who" = all ] && expect_error "$want" out.png -- "$banyan" render "bad/$name.h5" -o out.png --var dens
done <bad/cases.txt
# an input's old gpot (a link, int32) is replaced by a new float64 dataset, never written through
for name in link_soft link_external gpot_int32; do
  expect_ok "$banyan" potential "bad/$name.h5" -o "out_$name.h5" --backend cpu
  "$py" - "bad/$name.h5" "out_$name.h5" bad/victim.h5 mac.h5 <<'PY' || fail "$name: the copy's gpot"
import sys, h5py, numpy as np
inp, out, victim, good = (h5py.File(p, "r") for p in sys.argv[1:5])
assert isinstance(out.get("gpot", getlink=True), h5py.HardLink), "gpot is still a link"
assert out["gpot"].dtype == np.float64, out["gpot"].dtype
assert np.all(out["gpot"][out["node type"][:] == 1] < 0)
for f in (inp, victim, out):
    assert np.array_equal(f["dens"][...], good["dens"][...]), "dens written through a link"
PY
done
mkfifo fifo.h5
expect_error "fifo.h5 is not a regular file (a FIFO)" out.h5 -- "$banyan" potential fifo.h5 -o out.h5

finish cli_mesh
