#!/usr/bin/env bash
# banyan ic galaxy: help, usage errors (exit 2) naming the option or the
# model file's field, an M31 file with its part types and units, a run from
# it that keeps them (its G from the file) and logs each component's
# energies and angular momentum, and under mpirun (2 ranks,
# when MPI, mpirun and h5py are there) the gathered and the per-rank
# snapshots with every particle's type intact.
set -u
banyan="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -x "$banyan" ] || { echo "FAIL: no banyan program at $1"; exit 1; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

expect_exit() { # CODE "stderr substring" -- command...
  local want_rc="$1" want="$2"
  shift 3
  "$@" >/dev/null 2>err.txt
  local rc=$?
  [ $rc -eq "$want_rc" ] || fail "'$*' exited $rc, expected $want_rc: $(cat err.txt)"
  grep -qF -- "$want" err.txt || fail "'$*': stderr lacks '$want': $(cat err.txt)"
  [ -e out.hdf5 ] && fail "'$*' left out.hdf5 behind"
  return 0
}

"$banyan" ic galaxy --help | grep -q "^  m31 " || fail "ic galaxy --help does not list m31"
"$banyan" ic --help | grep -q "^  galaxy " || fail "ic --help does not list galaxy"
expect_exit 2 "give one of --model m31 and --model-file" -- "$banyan" ic galaxy --n 100 -o out.hdf5
expect_exit 2 "unknown model 'm33' (m31)" -- "$banyan" ic galaxy --model m33 --n 100 -o out.hdf5
expect_exit 2 "missing -o" -- "$banyan" ic galaxy --model m31 --n 100
printf 'disk:\n  mass: 1e10\n  scale_length: 3\n  scale_height: -0.3\n' >bad.yml
printf 'halo:\n  profile: hernquist\n  mass: 1\n  scale_radius: 1\n  cutoff: 20\n  cutoff_width: 2\n' >halo.yml
expect_exit 2 "bad.yml:4: disk:scale_height: '-0.3' (a finite number > 0)" -- \
  "$banyan" ic galaxy --model-file bad.yml --n 100 -o out.hdf5
expect_exit 1 "no particle count" -- "$banyan" ic galaxy --model m31 -o out.hdf5

"$banyan" ic galaxy --model m31 --n 4096 -s 3 -o g.hdf5 2>err.txt || fail "ic galaxy m31: $(cat err.txt)"
grep -qF "halo 3776, disk 170, bulge 150" err.txt || fail "ic galaxy: counts: $(cat err.txt)"
"$banyan" info g.hdf5 >info.txt || fail "info g.hdf5"
grep -q "^G  *4.30091727e-06" info.txt || fail "g.hdf5: G: $(grep ^G info.txt)"
grep -q "UnitLength_in_cm 3.085677581e+21" info.txt || fail "g.hdf5: units: $(grep units info.txt)"
grep -q "^part types  *PartType1 3776 PartType2 170 PartType3 150$" info.txt || fail "g.hdf5: $(grep types info.txt)"

# --plots: two valid 800 x 600 PNGs (signature, IHDR, IEND), not blank
"$banyan" ic galaxy --model m31 --n 16384 -o p.hdf5 --plots plots 2>err.txt || fail "--plots: $(cat err.txt)"
for png in rotation_curve toomre_q; do
  python3 - "plots/$png.png" <<'PY' || fail "plots/$png.png is not a valid 800 x 600 PNG"
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR", "signature"
assert struct.unpack(">II", b[16:24]) == (800, 600), "size"
assert b[-8:-4] == b"IEND", "IEND"
# the pixels: IDAT chunks inflated, white background with some red points
at, data = 8, b""
while at < len(b):
    n, kind = struct.unpack(">I4s", b[at:at + 8])
    if kind == b"IDAT":
        data += b[at + 8:at + 8 + n]
    at += 12 + n
raw = zlib.decompress(data)
assert len(raw) == 600 * 2401, "rows"
prev, red = bytearray(2400), 0
for r in range(600):  # undo the row filters (PNG spec 9.2), count (220, 30, 30) pixels
    f, row = raw[r * 2401], bytearray(raw[r * 2401 + 1:(r + 1) * 2401])
    for i in range(2400):
        a, up, c = row[i - 3] if i >= 3 else 0, prev[i], prev[i - 3] if i >= 3 else 0
        p = a + up - c
        pred = [0, a, up, (a + up) // 2,
                a if abs(p - a) <= abs(p - up) and abs(p - a) <= abs(p - c) else up if abs(p - up) <= abs(p - c) else c][f]
        row[i] = (row[i] + pred) & 255
    red += sum(1 for i in range(0, 2400, 3) if row[i:i + 3] == b"\xdc\x1e\x1e")
    prev = row
assert red > 100, f"{red} red pixels: no measured points"
PY
done
expect_exit 2 "--plots needs a model with a disk" -- "$banyan" ic galaxy --model-file halo.yml --n 100 -o out.hdf5 \
  --plots plots

# pictures of it: face-on, edge-on, one component (test_render_galaxy
# measures them); the views and names refused with exit 2
for view in --face-on --edge-on "--component disk"; do
  "$banyan" render g.hdf5 $view --size 64 -o view.png 2>err.txt && [ -s view.png ] ||
    fail "render $view: $(cat err.txt)"
  rm -f view.png
done
expect_exit 2 "give one of --face-on and --edge-on" -- "$banyan" render g.hdf5 --face-on --edge-on -o out.png
expect_exit 2 "--component expects halo, disk, bulge or type0..type5, got 'stars'" -- \
  "$banyan" render g.hdf5 --component stars -o out.png

# its shape: the 9 Lagrangian radii, the disk's height and Q
"$banyan" galaxy-shape g.hdf5 --model m31 >shape.txt 2>err.txt || fail "galaxy-shape: $(cat err.txt)"
[ "$(grep -c '^lagrangian_[159]0_\(halo\|disk\|bulge\) [0-9.]*$' shape.txt)" = 9 ] &&
  grep -q '^scale_height 0\.[4-8]' shape.txt || fail "galaxy-shape: $(cat shape.txt)"
expect_exit 2 "give one of --model m31 and --model-file" -- "$banyan" galaxy-shape g.hdf5

# a run from it: its G and units, and the types, in the final snapshot
run_args="-P InitialConditions:file:g.hdf5 -P TimeIntegration:t_end:0.001 -P TimeIntegration:dt:0.0005
  -P Gravity:softening:0.016 -P Gravity:backend:cpu -P Snapshots:render:no -q"
"$banyan" run $run_args -o one 2>err.txt || fail "run from g.hdf5: $(cat err.txt)"
"$banyan" info one/snapshot_0000.hdf5 | grep -q "^G  *4.30091727e-06" || fail "run: the snapshot's G"
grep -q "G: 4.30091727e-06 *# from the initial conditions' file" one/used_parameters.yml ||
  fail "used_parameters.yml: $(grep ' G:' one/used_parameters.yml)"
# energy.txt: K, W, Lx, Ly, Lz of halo, disk and bulge after the 8 usual
# columns; the W_c add up to W and the K_c to K (1e-12: rounding of 3 terms)
parts_cols() { # FILE: the per-component columns of each row, by name
  python3 - "$1" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
head = [l for l in open(sys.argv[1]) if l.startswith("# time")][0].split()[1:]
want = [f"{q}_{c}" for c in ("halo", "disk", "bulge") for q in ("K", "W", "Lx", "Ly", "Lz")]
assert head[8:] == want, head
for r in rows:
    v = dict(zip(head, map(float, r)))
    for q, col in (("K", "kinetic"), ("W", "potential")):
        s = sum(v[f"{q}_{c}"] for c in ("halo", "disk", "bulge"))
        assert abs(s - v[col]) < 1e-12 * abs(v[col]), (q, s, v[col])
print(" ".join(rows[0][8:]))
PY
}
parts_cols one/energy.txt >one_parts.txt || fail "one/energy.txt: per-component columns"

py=/usr/bin/python3
if ! "$py" -c "import h5py" 2>/dev/null; then
  echo "no h5py: the groups and the runs under mpirun not checked"
  [ $failures -eq 0 ] && echo "cli_galaxy: all passed"
  exit $((failures > 0))
fi
# every particle's type in FILES (a set split over files too) is its type
# in g.hdf5, by id
same_types() { "$py" - g.hdf5 "$@" <<'PY' || fail "types differ: $*"
import sys, h5py
def types(paths):
    t = {}
    for p in paths:
        with h5py.File(p) as f:
            for k in range(6):
                if f"PartType{k}" in f:
                    for i in f[f"PartType{k}/ParticleIDs"][:]:
                        t[int(i)] = k
    return t
ref, got = types([sys.argv[1]]), types(sys.argv[2:])
assert ref == got, (len(ref), len(got))
assert sorted(set(ref.values())) == [1, 2, 3]
with h5py.File(sys.argv[2]) as f:
    total = list(f["Header"].attrs["NumPart_Total"])
assert total == [0, 3776, 170, 150, 0, 0], total
PY
}
same_types one/snapshot_0000.hdf5

if "$banyan" --version | grep -q " mpi" && command -v mpirun >/dev/null; then
  export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1 \
    OMPI_MCA_mca_base_component_disable_dlclose=1 \
    LSAN_OPTIONS=suppressions=$here/tests/lsan-mpi.supp:fast_unwind_on_malloc=0:print_suppressions=0 # as mpi_test_setup.sh
  timeout 120 mpirun -np 2 "$banyan" run $run_args -o two 2>err.txt || fail "mpirun -np 2 run: $(cat err.txt)"
  same_types two/snapshot_0000.hdf5
  # the first row's K and L per component (the initial conditions' own,
  # summed over 2 ranks in another order): within 1e-12 of one process's,
  # L relative to the component's |L|
  parts_cols two/energy.txt >two_parts.txt || fail "two/energy.txt: per-component columns"
  python3 - one_parts.txt two_parts.txt <<'PY' || fail "1 and 2 ranks: per-component K or L differ"
import sys
a, b = ([float(x) for x in open(p).read().split()] for p in sys.argv[1:])
for c in range(3):
    k, l = c * 5, c * 5 + 2
    assert abs(a[k] - b[k]) <= 1e-12 * abs(a[k]), (c, a[k], b[k])
    norm = sum(x * x for x in a[l:l + 3]) ** 0.5
    assert all(abs(a[i] - b[i]) <= 1e-12 * norm for i in range(l, l + 3)), (c, a[l:l + 3], b[l:l + 3])
PY
  timeout 120 mpirun -np 2 "$banyan" run $run_args -P Snapshots:per_rank:yes -o split 2>err.txt ||
    fail "mpirun -np 2 run, per rank: $(cat err.txt)"
  same_types split/snapshot_0000.0.hdf5 split/snapshot_0000.1.hdf5
  echo "checked under mpirun -np 2"
fi
[ $failures -eq 0 ] && echo "cli_galaxy: all passed"
exit $((failures > 0))
