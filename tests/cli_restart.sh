#!/usr/bin/env bash
# Restart files (issue 20): a run stopped at several points (shared steps;
# block steps between a cycle's sub-steps, i.e. mid-cycle) and continued
# with --restart gives the same bits as a run that never stopped: the
# energy log's columns (all but the wall time) and the last snapshot's
# positions and velocities compared byte for byte. SIGTERM to a running
# `banyan run` leaves a restart file and exit code 0; a truncated newest
# restart file is refused with a message and the one before it is used.
set -u
banyan="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd "$scratch" || exit 1
export OMP_NUM_THREADS=2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# BANYAN_TEST_BACKEND=gpu: the same checks on the GPU backend (run on the device by hand)
common="-P InitialConditions:n:512 -P Gravity:backend:${BANYAN_TEST_BACKEND:-cpu} -P Snapshots:render:no -P TimeIntegration:t_end:0.25
  -P Snapshots:interval:0.125 -P Statistics:interval:0 -P TimeIntegration:eta:0.02"
block="-P TimeIntegration:time_bins:4"
# energy.txt without comments and the wall-time column (the last of the
# first eight; the error target's and part types' columns follow it)
rows() { grep -v '^#' "$1/energy.txt" | awk '{$8=""; print}'; }
# positions and velocities of the last snapshot, as raw bytes
state() { h5dump -b LE -d /PartType1/Coordinates -o "$1.x" "$1/snapshot_0002.hdf5" >/dev/null &&
          h5dump -b LE -d /PartType1/Velocities -o "$1.v" "$1/snapshot_0002.hdf5" >/dev/null && cat "$1.x" "$1.v"; }
same() { # REFERENCE DIR WHAT
  rows "$1" >"$1.rows"; rows "$2" >"$2.rows"
  cmp -s "$1.rows" "$2.rows" || fail "$3: energy.txt differs from the unstopped run's"
  [ "$(wc -l <"$2.rows")" -gt 10 ] || fail "$3: only $(wc -l <"$2.rows") rows"
  state "$1" >"$1.bin" && state "$2" >"$2.bin" || fail "$3: cannot read the snapshots"
  cmp -s "$1.bin" "$2.bin" || fail "$3: last snapshot's positions/velocities differ"
}

for kind in shared block; do
  extra=""; [ $kind = block ] && extra=$block
  "$banyan" run $common $extra -q -o ref_$kind || fail "$kind: reference run"
  # step 7 of a 4-bin cycle of 8 ticks: mid-cycle; 8: a cycle's end; 40: later
  for stop in 7 8 40; do
    d=${kind}_$stop
    "$banyan" run $common $extra -q -o $d --stop-after-steps $stop || fail "$d: stopped run"
    [ -f $d/restart/restart_0000.hdf5 ] || fail "$d: no restart file"
    "$banyan" run --restart $d/restart -o $d -q || fail "$d: continued run"
    same ref_$kind $d "$kind stopped at step $stop"
  done
  # stopped twice: a restart of a restart
  d=${kind}_twice
  "$banyan" run $common $extra -q -o $d --stop-after-steps 5 || fail "$d: first stop"
  "$banyan" run --restart $d/restart -o $d -q --stop-after-steps 21 || fail "$d: second stop"
  "$banyan" run --restart $d/restart -o $d -q || fail "$d: continued"
  same ref_$kind $d "$kind stopped twice"
done

# a truncated newest restart file: refused with a message, the previous used
d=trunc
"$banyan" run $common $block -q -o $d --stop-after-steps 7 || fail "$d: first stop"
"$banyan" run --restart $d/restart -o $d -q --stop-after-steps 30 || fail "$d: second stop"
[ -f $d/restart/restart_0001.hdf5 ] || fail "$d: no second restart file"
size=$(stat -c %s $d/restart/restart_0001.hdf5)
truncate -s $((size / 2)) $d/restart/restart_0001.hdf5
"$banyan" run --restart $d/restart -o $d -q 2>$d.err || fail "$d: continued run"
grep -q "restart_0001.hdf5.*truncated" $d.err || fail "$d: no message naming the damaged file: $(cat $d.err)"
same ref_block $d "truncated newest file"
# a flipped byte inside the particles: the checksum refuses it
cp ref_block/restart/restart_0000.hdf5 flip.hdf5 2>/dev/null
mkdir -p flip/restart && "$banyan" run $common $block -q -o flip --stop-after-steps 7 || fail "flip: stop"
printf '\x55' | dd of=flip/restart/restart_0000.hdf5 bs=1 seek=$(( $(stat -c %s flip/restart/restart_0000.hdf5) - 4096 )) conv=notrunc 2>/dev/null
"$banyan" run --restart flip/restart -o flip -q 2>flip.err && fail "flip: a damaged only file was accepted"
grep -q "restart_0000.hdf5" flip.err || fail "flip: no message naming the file: $(cat flip.err)"

# SIGTERM to a running banyan run: a restart file, exit code 0, and it continues
d=sig
"$banyan" run $common $block -P TimeIntegration:t_end:1000 -q -o $d &
pid=$!
sleep 2
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 0 ] || fail "SIGTERM: exit code $rc"
[ -f $d/restart/restart_0000.hdf5 ] || fail "SIGTERM: no restart file"
timeout 60 "$banyan" run --restart $d/restart -o $d -q -P TimeIntegration:t_end:1 --stop-after-steps 1 ||
  fail "SIGTERM: the restart file does not continue"

[ $failures = 0 ] && echo "cli_restart: all checks passed"
exit $((failures > 0))
