#!/usr/bin/env bash
# banyan convert and the readers of other codes' files through the
# commands: a Plummer sphere to GADGET-2 (format 1 and 2, both byte
# orders, a 2-file set) and tipsy (standard, native) and back; forces on
# a tipsy file against the HDF5 original (float32 positions: relative
# errors ~1e-7, asserted < 1e-5); a run from a GADGET-2 file; bad inputs
# and outputs refused with nothing written.
# usage: bash cli_convert.sh path/to/banyan
set -u
banyan="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
source "$here/shell_checks.sh"

expect_ok "$banyan" ic plummer -n 500 --seed 3 -o p.hdf5
expect_ok "$banyan" convert p.hdf5 p.g2
grep -qx "banyan convert: 500 particles, p.hdf5 -> p.g2 (gadget2)" stderr.txt || fail "convert's line: $(cat stderr.txt)"
expect_ok "$banyan" convert p.hdf5 f2 --format gadget2-format2 --big-endian
expect_ok "$banyan" convert p.hdf5 set --format gadget2 --files 2
[ -f set.0 ] && [ -f set.1 ] && [ ! -e set ] || fail "--files 2 did not write set.0 and set.1: $(ls)"
expect_ok "$banyan" convert p.hdf5 p.tipsy
expect_ok "$banyan" convert p.hdf5 native --format tipsy-native
# every file reads back whole: 500 particles of total mass 1 (GADGET-2's
# header mass keeps a common mass exact; tipsy's float32 masses add to 1
# within 500 x 2^-24)
for f in p.g2 f2 set.1 set p.tipsy native; do
  expect_ok "$banyan" info "$f"
  grep -q "^particles        500$" stdout.txt || fail "info $f: $(head -3 stdout.txt)"
  awk '/^total mass/ {m = $3} END {exit !(m > 1 - 3e-5 && m < 1 + 3e-5)}' stdout.txt || fail "info $f: $(grep mass stdout.txt)"
  expect_ok "$banyan" convert "$f" "back_$f.hdf5"
  expect_ok "$banyan" info "back_$f.hdf5"
done
grep -q "^total mass       1 " <("$banyan" info p.g2) || fail "GADGET-2's header mass is not exact"

# forces from a tipsy file against the HDF5 original, matched by id
expect_ok "$banyan" forces p.hdf5 -o fp.hdf5 --method direct --backend cpu
expect_ok "$banyan" forces p.tipsy -o ft.hdf5 --method direct --backend cpu
expect_ok "$banyan" compare ft.hdf5 fp.hdf5 --json
awk -F'"max": ' '/acc_rel_error/ {split($2, a, "}"); if (a[1] + 0 < 1e-5 && a[1] + 0 > 0) ok = 1} END {exit !ok}' \
  stdout.txt || fail "tipsy forces against HDF5: $(cat stdout.txt)"

# a run whose initial conditions are a GADGET-2 set (named by its stem)
tiny_run_yml "$T/set"
expect_ok "$banyan" run run.yml -o runout -q
compgen -G "runout/*.hdf5" >/dev/null || fail "the run from a GADGET-2 set wrote no snapshot"

# refused, nothing written: no format, OUT = IN (left as it was), damaged inputs
expect_error "give --format" out -- "$banyan" convert p.hdf5 out
sum=$(md5sum <p.g2)
expect_error "the output './p.g2' is the same file as the input 'p.g2'" "" -- "$banyan" convert p.g2 ./p.g2 --format tipsy
[ "$(md5sum <p.g2)" = "$sum" ] || fail "convert p.g2 ./p.g2 changed its input"
set_sums=$(cat set.0 set.1 | md5sum)
expect_error "the output 'set.0' is the same file as a file of the input's set 'set.0'" "" \
  -- "$banyan" convert set set --format gadget2-format2 --files 2
expect_error "the output 'set.1' is the same file as a file of the input's set 'set.1'" "" \
  -- "$banyan" convert set.0 set.1 --format tipsy
[ "$(cat set.0 set.1 | md5sum)" = "$set_sums" ] || fail "a conversion changed the set it read"
head -c 3000 p.g2 >cut.g2
expect_error "cut.g2: truncated: POS" out.hdf5 -- "$banyan" convert cut.g2 out.hdf5
head -c 300 p.tipsy >cut.tipsy
expect_error "cut.tipsy: the header's counts (nsph 0, ndark 500, nstar 0) make 18032 bytes, but the file has 300" out.hdf5 \
  -- "$banyan" convert cut.tipsy out.hdf5
expect_error "unknown snapshot format 'gadget3'" out -- "$banyan" convert p.hdf5 out --format gadget3
expect_ok "$banyan" convert p.hdf5 again.g2
[ "$(md5sum <again.g2)" = "$sum" ] || fail "two conversions of one file differ"

finish cli_convert
