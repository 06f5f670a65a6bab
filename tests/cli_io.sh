#!/usr/bin/env bash
# banyan info / compare / render / forces on good and bad snapshots: every
# bad input gives a non-zero exit, a message naming what is wrong, and no
# output file. Bad files are made with h5py (tests/make_snapshots.py).
set -u
source "$(dirname "$0")/snapshot_test_setup.sh"
snapshot_test_setup "$1" "h5py, numpy" python3-h5py

source "$here/shell_checks.sh" # fail, finish (this test's own expect_*)

# expect_error "substring" [output file that must not appear] -- command...
expect_error() {
  local want="$1" out="$2"
  shift 3
  "$@" >stdout.txt 2>stderr.txt
  local rc=$?
  if [ $rc -eq 0 ]; then fail "'$*' succeeded"; fi
  if ! grep -qF -- "$want" stderr.txt; then fail "'$*': stderr lacks '$want': $(cat stderr.txt)"; fi
  if [ -n "$out" ] && [ -e "$out" ]; then fail "'$*' left $out behind"; rm -f "$out"; fi
}

expect_ok() {
  "$@" >stdout.txt 2>stderr.txt || fail "'$*' failed: $(cat stderr.txt)"
}

# --- help --------------------------------------------------------------
for c in info compare render forces; do
  "$banyan" "$c" --help >stdout.txt 2>&1 && grep -q "usage: banyan $c" stdout.txt || fail "banyan $c --help"
done

# --- the good path: forces, info, compare, render ----------------------
expect_ok "$banyan" forces good.hdf5 -o out.hdf5 --method direct --eps 0.05
# the summary line reports the time of the call (direct summation has no stage times)
for m in direct tree; do
  expect_ok "$banyan" forces good.hdf5 -o timed.hdf5 --method $m --eps 0.05
  awk -v m=$m '$0 ~ "^banyan forces: 100 particles, method " m ", backend [a-z]+, " && $NF == "s" && $(NF-1) > 0 {ok = 1}
               END {exit !ok}' stderr.txt || fail "forces --method $m: no positive time in '$(cat stderr.txt)'"
done
expect_ok "$banyan" info out.hdf5
grep -q "^particles *100$" stdout.txt || fail "info: particle count: $(cat stdout.txt)"
grep -q "Acceleration yes, Potential yes" stdout.txt || fail "info: forces not reported"
grep -q "Softening 0.05" stdout.txt || fail "info: softening not reported"
expect_ok "$banyan" info good.hdf5
grep -q "Acceleration no" stdout.txt || fail "info: good.hdf5 has no forces"

expect_ok "$banyan" compare out.hdf5 out.hdf5
grep -q "p99.9" stdout.txt || fail "compare: no table: $(cat stdout.txt)"

# shuffled order, acc x 1.001, pot x 1.002: matched by id, errors exact
"$py" "$here/make_snapshots.py" perturb out.hdf5 perturbed.hdf5
expect_ok "$banyan" compare out.hdf5 perturbed.hdf5 --json
"$py" - stdout.txt <<'PYEOF' || fail "compare --json values: $(cat stdout.txt)"
import json, sys
r = json.load(open(sys.argv[1]))
a, p = r["acc_rel_error"], r["pot_rel_error"]
assert r["n"] == 100
# |a - 1.001 a| / |1.001 a| = 0.001 / 1.001 for every particle
for k in ("p50", "p90", "p99", "p99.9", "max", "mean"):
    assert abs(a[k] - 0.001 / 1.001) < 1e-12, (k, a[k])
for k in ("p50", "p99", "max"):
    assert abs(p[k] - 0.002 / 1.002) < 1e-12, (k, p[k])
PYEOF
expect_ok "$banyan" compare out.hdf5 out.hdf5 --json
"$py" -c "import json,sys; r=json.load(open('stdout.txt')); assert r['acc_rel_error']['max']==0 and r['pot_rel_error']['max']==0" \
  || fail "compare of a file with itself is not exactly zero: $(cat stdout.txt)"

expect_ok "$banyan" render out.hdf5 -o img.png --size 64x48 --axis y
[ "$("$py" "$here/make_snapshots.py" pngsize img.png)" = "64 48" ] || fail "render: image is not 64 x 48"

# --- compare: wrong pairs ------------------------------------------------
expect_error "good.hdf5 has no /PartType*/Acceleration" "" -- "$banyan" compare good.hdf5 out.hdf5
expect_error "good.hdf5 has no /PartType*/Acceleration" "" -- "$banyan" compare out.hdf5 good.hdf5
"$py" "$here/make_snapshots.py" retag out.hdf5 retagged.hdf5
expect_error "id sets differ: ParticleIDs 6 is in out.hdf5 but not in retagged.hdf5" "" -- "$banyan" compare out.hdf5 retagged.hdf5
expect_error "expected two snapshots" "" -- "$banyan" compare out.hdf5

# --- render and forces: bad options ------------------------------------
expect_error "--axis expects x, y or z" img2.png -- "$banyan" render out.hdf5 -o img2.png --axis w
expect_error "--size expects WxH" img2.png -- "$banyan" render out.hdf5 -o img2.png --size 0x5
expect_error "--extent must be a finite number >= 0, got '-1'" img2.png -- "$banyan" render out.hdf5 -o img2.png --extent -1
expect_error "missing -o" "" -- "$banyan" render out.hdf5
# numbers cut short (issue 15): integers checked in long before they are
# narrowed (strtol's ERANGE included), doubles against their valid range
expect_error "--size expects WxH with each side in [1, 16384], got '99999999999999999999'" img2.png -- \
  "$banyan" render out.hdf5 -o img2.png --size 99999999999999999999
expect_error "--size expects WxH with each side in [1, 16384], got '4294967297x8'" img2.png -- \
  "$banyan" render out.hdf5 -o img2.png --size 4294967297x8
expect_error "--extent expects a finite number, got '1e400'" img2.png -- "$banyan" render out.hdf5 -o img2.png --extent 1e400
for bad in "--group-size 4294967297|--group-size must be an integer in [1, 4096], got '4294967297'" \
           "--leaf-size 4294967312|--leaf-size must be an integer in [1, 1024], got '4294967312'" \
           "--leaf-size -5|--leaf-size must be an integer in [1, 1024], got '-5'" \
           "--device -1|--device must be an integer in [0, 1023], got '-1'" \
           "--device 99999999999999999999|--device must be an integer in [0, 1023]" \
           "--error-sample 99999999999|--error-sample must be an integer in [16, 1000000], got '99999999999'" \
           "--theta 3|--theta must be a number in [0, 2], got '3'" \
           "--theta -0.1|--theta must be a number in [0, 2], got '-0.1'" \
           "--group-expansion 1.5|--group-expansion must be a number in [0, 1], got '1.5'" \
           "--error-target 1|--error-target must be a number in [0, 1), got '1'" \
           "--alpha 0|--alpha must be a finite number > 0, got '0'" \
           "--G -1|--G must be a finite number > 0, got '-1'" \
           "--eps -1|--eps must be a finite number >= 0, got '-1'" \
           "--eps 1e400|--eps expects a finite number, got '1e400'" \
           "--eps nan|--eps expects a finite number, got 'nan'" \
           "--eps 1e-400|--eps: '1e-400' is below the smallest positive double"; do
  args=${bad%%|*} want=${bad#*|}
  # shellcheck disable=SC2086
  expect_error "$want" f_bad.hdf5 -- "$banyan" forces good.hdf5 -o f_bad.hdf5 $args
  [ "$(tail -1 stderr.txt)" = "(see 'banyan forces --help')" ] || fail "forces $args: not a usage error: $(cat stderr.txt)"
done
# denormal numbers are numbers (issue 15 class 9): --G 1e-310 runs, and
# --eps 1e-310 is parsed (then refused because its forces would overflow)
expect_ok "$banyan" forces good.hdf5 -o denormal.hdf5 --method direct --eps 0.05 --G 1e-310
expect_ok "$banyan" info denormal.hdf5
grep -q "^G *1e-310$" stdout.txt || fail "forces --G 1e-310: G not kept: $(cat stdout.txt)"
expect_error "G M / eps^2 = 1 x 1 / 1e-310^2 overflows" f_bad.hdf5 -- \
  "$banyan" forces good.hdf5 -o f_bad.hdf5 --method direct --eps 1e-310
expect_error "nonexistent-dir/img.png" "" -- "$banyan" render out.hdf5 -o nonexistent-dir/img.png
expect_error "nonexistent-dir/f.hdf5" "" -- "$banyan" forces good.hdf5 -o nonexistent-dir/f.hdf5 --method direct

# --- every bad file through every command --------------------------------
check_bad() {
  local file="$1" want="$2"
  expect_error "$want" "" -- "$banyan" info "$file"
  grep -qF "$file" stderr.txt || fail "info $file: message does not name the file"
  expect_error "$want" "" -- "$banyan" compare "$file" out.hdf5
  expect_error "$want" "" -- "$banyan" compare out.hdf5 "$file"
  expect_error "$want" bad.png -- "$banyan" render "$file" -o bad.png
  expect_error "$want" bad_out.hdf5 -- "$banyan" forces "$file" -o bad_out.hdf5 --method direct
  grep -qF "$file" stderr.txt || fail "forces $file: message does not name the file"
}
check_bad missing.hdf5 "No such file"
check_bad not_hdf5.hdf5 "not an HDF5 file"
check_bad no_coords.hdf5 "missing dataset /PartType1/Coordinates"
check_bad coords_n2.hdf5 "/PartType1/Coordinates has shape (100, 2), expected (N, 3)"
check_bad mass_short.hdf5 "length mismatch: /PartType1/Masses has 99 rows"
check_bad vel_nan.hdf5 "/PartType1/Velocities: particle 7 has a non-finite value (nan)"
check_bad pos_inf.hdf5 "/PartType1/Coordinates: particle 3 has a non-finite value (inf)"
check_bad neg_mass.hdf5 "/PartType1/Masses: particle 11 has a negative mass"
check_bad zero_mass.hdf5 "total mass is 0"
check_bad inf_mass.hdf5 "total mass is inf (must be finite and > 0)"

# issue 15: counts beyond memory, header values, repeated ids
check_bad huge.hdf5 "2305843009213693952 particles would need"
check_bad dup_ids.hdf5 "id 13 appears more than once (particles 12 and 40)"
check_bad time_nan.hdf5 "/Header: Time = nan (must be finite)"
check_bad time_minf.hdf5 "/Header: Time = -inf (must be finite)"
check_bad nfiles_zero.hdf5 "/Header: NumFilesPerSnapshot = 0 (must be a whole number >= 1)"
check_bad total_wrong.hdf5 "/Header NumPart_Total[1] = 105 but /PartType1/Coordinates has 100 rows"
mkfifo fifo.hdf5
check_bad fifo.hdf5 "fifo.hdf5 is not a regular file (a FIFO)"

# valid files that were refused: a variable-length UTF-8 string attribute
expect_ok "$banyan" info utf8.hdf5
grep -q "Method direct" stdout.txt || fail "info utf8.hdf5: /Parameters Method not read: $(cat stdout.txt)"

# results that are not finite are refused, nothing written: a coordinate
# at 1e300 (the issue's example), a softening whose G M / eps^2 overflows
expect_error "far.hdf5" far_out.hdf5 -- "$banyan" forces far.hdf5 -o far_out.hdf5 --method direct
grep -qF "the particles span 1e+300 in x" stderr.txt || fail "forces far.hdf5: $(cat stderr.txt)"
expect_error "G M / eps^2 = 1 x 1 / 1e-200^2 overflows" eps_out.hdf5 -- \
  "$banyan" forces good.hdf5 -o eps_out.hdf5 --method tree --eps 1e-200

# outputs that are the input: render refuses (by resolved path), forces
# IN -o IN rewrites the input with its forces
cp good.hdf5 in.hdf5
sum_before=$(cksum <in.hdf5)
ln -s in.hdf5 link.hdf5
mkdir -p sub
for o in in.hdf5 ./sub/../in.hdf5 "$PWD/in.hdf5" link.hdf5; do
  expect_error "is the same file as the snapshot 'in.hdf5'" "" -- "$banyan" render in.hdf5 -o "$o"
done
expect_error "the picture 'in.hdf5' is the same file as the snapshot 'link.hdf5'" "" -- \
  "$banyan" render link.hdf5 -o in.hdf5
# a hard link is the same file under another name
ln in.hdf5 hard.hdf5
expect_error "the picture 'hard.hdf5' is the same file as the snapshot 'in.hdf5'" "" -- \
  "$banyan" render in.hdf5 -o hard.hdf5
[ "$(cksum <in.hdf5)" = "$sum_before" ] || fail "render replaced its input"
expect_ok "$banyan" forces in.hdf5 -o in.hdf5 --method direct
expect_ok "$banyan" info in.hdf5
grep -q "Acceleration yes" stdout.txt || fail "forces IN -o IN: no forces in the input"

# outputs that are not files: the writers rename a temporary file onto the
# name, which would replace a FIFO or a device node by a regular file (as
# root, -o /dev/null did); refused before any work, left as they were
mkdir -p outdir
mkfifo out_fifo.out
ln -s nowhere/x.out dangling.out
mknod out_dev.out c 1 3 2>/dev/null || true # root only: a copy of /dev/null
for o in "outdir|'outdir' exists and is not a regular file (a directory)" \
         "outdir/|'outdir/' names a directory, not a file" \
         "out_fifo.out|'out_fifo.out' exists and is not a regular file (a FIFO)" \
         "out_dev.out|'out_dev.out' exists and is not a regular file (a device or socket)" \
         "dangling.out|'dangling.out' is a dangling symbolic link"; do
  name=${o%%|*} want=${o#*|}
  [ "$name" = out_dev.out ] && [ ! -c out_dev.out ] && continue
  expect_error "the picture $want" "" -- "$banyan" render out.hdf5 -o "$name"
  expect_error "the output $want" "" -- "$banyan" forces good.hdf5 -o "$name" --method direct
done
[ -p out_fifo.out ] || fail "the FIFO given as an output was replaced"
[ -L dangling.out ] || fail "the dangling link given as an output was replaced"
[ ! -e out_dev.out ] || [ -c out_dev.out ] || fail "the device node given as an output was replaced"
[ -z "$(ls -A outdir)" ] || fail "something was written into outdir: $(ls -A outdir)"
rm -f out_dev.out

# compare against a reference with a zero acceleration: no relative error exists
"$py" "$here/make_snapshots.py" zeroacc out.hdf5 zeroacc.hdf5
expect_error "ParticleIDs 4: the acceleration of the reference zeroacc.hdf5 is 0" "" -- \
  "$banyan" compare out.hdf5 zeroacc.hdf5
expect_ok "$banyan" compare zeroacc.hdf5 out.hdf5
"$py" "$here/make_snapshots.py" zeropot out.hdf5 zeropot.hdf5
expect_error "ParticleIDs 9: the potential of the reference zeropot.hdf5 is 0" "" -- \
  "$banyan" compare out.hdf5 zeropot.hdf5
grep -qF "the relative error is undefined (a zero reference)" stderr.txt || fail "compare zeropot: $(cat stderr.txt)"
[ -s stdout.txt ] && fail "compare against a zero potential printed a table: $(cat stdout.txt)"
# a reference too small for the ratio to be a number (inf is not even JSON)
"$py" "$here/make_snapshots.py" tinyacc out.hdf5 tinyacc.hdf5
expect_error "ParticleIDs 6: the acceleration of the reference tinyacc.hdf5 is 1.73205e-310" "" -- \
  "$banyan" compare out.hdf5 tinyacc.hdf5 --json
grep -qF "the relative error is not a finite number" stderr.txt || fail "compare tinyacc: $(cat stderr.txt)"
[ -s stdout.txt ] && fail "compare against a tiny reference printed: $(cat stdout.txt)"

# an output directory that does not exist or takes no files: refused before
# the forces are computed
expect_error "the output 'nodir/x.hdf5': directory '$PWD/nodir' does not exist" "" -- \
  "$banyan" forces good.hdf5 -o nodir/x.hdf5 --method direct
if [ -d /proc/self ]; then
  expect_error "the output '/proc/x.hdf5': cannot write in directory '/proc'" "" -- "$banyan" ic plummer --n 10 -o /proc/x.hdf5
fi
# an output that is a symbolic link to a file is written through, the link kept
cp good.hdf5 target.hdf5
ln -s target.hdf5 out_link.hdf5
expect_ok "$banyan" forces good.hdf5 -o out_link.hdf5 --method direct
[ -L out_link.hdf5 ] || fail "forces replaced the symbolic link out_link.hdf5 by a file"
expect_ok "$banyan" info target.hdf5
grep -q "Acceleration yes" stdout.txt || fail "forces -o LINK did not write through the link"

# nothing half-written anywhere: no temporary files left
finish cli_io
