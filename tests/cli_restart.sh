#!/usr/bin/env bash
# Restart files (issue 20): a run stopped at several points (shared steps;
# block steps between a cycle's sub-steps, i.e. mid-cycle) and continued
# with --restart gives the same bits as a run that never stopped: the
# energy log's columns (all but the wall time) and the last snapshot's
# positions and velocities compared byte for byte, and no "not bitwise"
# notice. SIGTERM to a running `banyan run` leaves one restart file and
# exit code 0; SIGUSR1 with Restart:interval 0.01 (minutes) and keep 3
# leaves exactly 3 (of at least 4 written) and the newest continues bit
# for bit; a truncated newest restart file is refused with a message and
# the one before it is used; without a GPU, -P Gravity:backend:gpu stops
# with the device's message, not as a damaged file; restart files named
# as snapshots, or below a file, are refused at the start. Restart files of
# an older format are refused naming the file, its format and what to do. Gravity:mac accel
# continues bit for bit on both backends (its old |a| from the file's forces).
# A refreshed tree (tree_rebuild 4, and 0 with rebuild_cost work) continues
# bit for bit (the restart file holds the tree the next refresh starts
# from). The self-tuned rebuild weighing measured times (tree_rebuild 0,
# rebuild_cost time) is not bitwise: the continued run says so; its last
# total energy lies within 1e-4 of the unstopped run's (the tree's force
# error level) and its |E-E0|/|E0| within 1e-4 throughout.
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
# (h5dump, or Python's h5py where the machine has no h5dump: the device)
state() {
  if command -v h5dump >/dev/null; then
    h5dump -b LE -d /PartType1/Coordinates -o "$1.x" "$1/snapshot_0002.hdf5" >/dev/null &&
      h5dump -b LE -d /PartType1/Velocities -o "$1.v" "$1/snapshot_0002.hdf5" >/dev/null && cat "$1.x" "$1.v"
  else
    python3 -c 'import h5py, sys; f = h5py.File(sys.argv[1], "r")["PartType1"]
sys.stdout.buffer.write(f["Coordinates"][...].tobytes() + f["Velocities"][...].tobytes())' "$1/snapshot_0002.hdf5"
  fi
}
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
    "$banyan" run --restart $d/restart -o $d -q >$d.out || fail "$d: continued run"
    grep -q "not bitwise" $d.out && fail "$d: a notice where the bits are the same: $(cat $d.out)"
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

# restart files of an older format (4: before the saved tree; the attribute rewritten with h5py where there is
# one): each refused naming it and its format, and when none is left the run stops saying what to do instead
py=/usr/bin/python3
[ -x $py ] || py=python3
if "$py" -c "import h5py" 2>/dev/null; then
  d=oldfmt
  "$banyan" run $common -q -o $d --stop-after-steps 7 || fail "$d: first stop"
  "$banyan" run --restart $d/restart -o $d -q --stop-after-steps 12 || fail "$d: second stop"
  cur=$("$py" -c 'import h5py, sys; print(int(h5py.File(sys.argv[1], "r").attrs["BanyanRestartFormat"]))' \
    $d/restart/restart_0000.hdf5) || fail "$d: no format attribute"
  for f in $d/restart/restart_0000.hdf5 $d/restart/restart_0001.hdf5; do
    "$py" -c 'import h5py, sys; h5py.File(sys.argv[1], "r+").attrs.modify("BanyanRestartFormat", 4)' $f ||
      fail "$d: cannot rewrite the format of $f"
  done
  "$banyan" run --restart $d/restart -o $d -q 2>$d.err && fail "$d: restart files of format 4 accepted"
  grep -q "$d/restart/restart_0000.hdf5: restart format 4, older than this build's $cur: this build cannot continue it" \
    $d.err || fail "$d: no message naming the file and its format: $(cat $d.err)"
  grep -q "no restart file there loads: $d/restart/restart_0001.hdf5 is of restart format 4, older than this build's $cur (so is the one before it); .*start a new run from one of the run's snapshots (InitialConditions:file)" \
    $d.err || fail "$d: the last message does not say why or what to do: $(cat $d.err)"
else
  echo "cli_restart: no h5py, the check of an older restart format left out"
fi

# without a GPU, -P Gravity:backend:gpu stops with the device's message naming the file, not as a damaged
# file with a fall back to the one before it (with a GPU the run goes on from its last file, at t_end)
cp -r shared_7 gpu
if ! "$banyan" run --restart gpu/restart -o gpu -q -P Gravity:backend:gpu >/dev/null 2>gpu.err; then
  grep -q "restart file 1: backend 'gpu'" gpu.err || fail "no GPU: not the device's message: $(cat gpu.err)"
  grep -q "trying the restart file before it" gpu.err && fail "no GPU: treated as a damaged file: $(cat gpu.err)"
fi

# SIGTERM to a running banyan run: a restart file, exit code 0, and it continues
d=sig
# wait_for FILE: until it exists (at most 30 s: the run has begun its steps; a loaded machine is slow to start)
wait_for() { for _ in $(seq 300); do [ -e "$1" ] && return 0; sleep 0.1; done; fail "no $1 after 30 s"; }
# signal_run SIGNAL SECONDS DIR ARGS...: banyan run ARGS -o DIR (stdout in DIR.out) sent SIGNAL SECONDS after
# it has begun; its exit code in rc
signal_run() {
  local sig=$1 secs=$2 dir=$3
  shift 3
  "$banyan" run "$@" -o "$dir" >"$dir.out" &
  local pid=$!
  wait_for "$dir/energy.txt"
  sleep "$secs"
  kill -"$sig" $pid
  wait $pid
  rc=$?
}
signal_run TERM 1 $d $common $block -P TimeIntegration:t_end:1000 -q
[ $rc = 0 ] || fail "SIGTERM: exit code $rc"
[ -f $d/restart/restart_0000.hdf5 ] || fail "SIGTERM: no restart file"
n=$(ls $d/restart | wc -l)
[ "$n" = 1 ] || fail "SIGTERM: $n restart files, expected the signal's alone (Restart:interval 60 minutes)"
timeout 60 "$banyan" run --restart $d/restart -o $d -q -P TimeIntegration:t_end:1 --stop-after-steps 1 ||
  fail "SIGTERM: the restart file does not continue"

# SIGUSR1 with restart files every 0.01 minutes (0.6 s) of which 3 are
# kept: after 3 s at least 4 written (about 5 by the interval and the
# signal's), exactly 3 left, the newest the one the stop names; the run
# continued from it gives the bits of a run that never stopped, both
# stopped 16 steps later (Statistics:interval 0: exactly there)
d=usr1
long="$common $block -P TimeIntegration:t_end:1000 -P Snapshots:interval:0"
signal_run USR1 3 $d $long -P Restart:interval:0.01 -P Restart:keep:3
[ $rc = 0 ] || fail "SIGUSR1: exit code $rc"
files=$(ls $d/restart | wc -l)
[ "$files" = 3 ] || fail "SIGUSR1, keep 3: $files restart files: $(ls $d/restart)"
last=$(ls $d/restart | sed -n 's/^restart_0*\([0-9][0-9]*\)\.hdf5$/\1/p' | sort -n | tail -1)
[ "${last:-0}" -ge 3 ] || fail "SIGUSR1, interval 0.6 s: newest restart file ${last:-none} after 3 s (at least 3)"
[ "$(ls $d/restart | sed -n 's/^restart_0*\([0-9][0-9]*\)\.hdf5$/\1/p' | sort -n | tr '\n' ' ')" = \
  "$((last - 2)) $((last - 1)) $last " ] || fail "SIGUSR1: not the newest 3 kept: $(ls $d/restart)"
grep -q "restart file $last in" $d.out || fail "SIGUSR1: the stop does not name file $last: $(cat $d.out)"
step=$(sed -n 's/.*stopped at t = [^ ]* (step \([0-9]*\)).*/\1/p' $d.out)
if [ -n "$step" ]; then
  "$banyan" run $long -q -o usr1_ref --stop-after-steps $((step + 16)) || fail "SIGUSR1: reference run"
  "$banyan" run --restart $d/restart -o $d -q --stop-after-steps $((step + 16)) >$d.cont || fail "SIGUSR1: continued"
  grep -q "not bitwise" $d.cont && fail "SIGUSR1: a notice where the bits are the same: $(cat $d.cont)"
  rows usr1_ref >usr1_ref.rows; rows $d >$d.rows
  cmp -s usr1_ref.rows $d.rows || fail "SIGUSR1: energy.txt differs from the unstopped run's"
  [ "$(wc -l <$d.rows)" -gt 3 ] || fail "SIGUSR1: only $(wc -l <$d.rows) rows"
else
  fail "SIGUSR1: no 'stopped at ... (step N)': $(cat $d.out)"
fi

# not bitwise, and saying so (stopped at step 13)
close() { # REFERENCE DIR WHAT: both at t_end, the last total energies within 1e-4, and |E-E0|/|E0| within
  # 1e-4 throughout the continued run (the times of adaptive shared steps differ after the stop: rows not paired)
  awk 'FNR == 1 { f++ } /^#/ { next } { t[f] = $1; e[f] = $4; if (f == 2 && $5 > m) m = $5 }
       END { d = (e[2] - e[1]) / e[1]; if (d < 0) d = -d; printf "t %s %s, last E %.3e apart, |E-E0|/|E0| <= %.3e\n", t[1], t[2], d, m
             exit !(t[1] == 0.25 && t[2] == 0.25 && d <= 1e-4 && m <= 1e-4) }' \
    "$1/energy.txt" "$2/energy.txt" >"$2.close" || fail "$3: not within 1e-4 of the unstopped run: $(cat "$2.close")"
}
not_bitwise() { # NAME NOTICE OPTIONS...
  local name=$1 notice=$2
  shift 2
  "$banyan" run $common "$@" -q -o nb_ref_$name || fail "$name: reference run"
  "$banyan" run $common "$@" -q -o nb_$name --stop-after-steps 13 || fail "$name: stopped run"
  "$banyan" run --restart nb_$name/restart -o nb_$name -q >nb_$name.out || fail "$name: continued run"
  grep -q "continuing with $notice: not bitwise" nb_$name.out || fail "$name: no notice: $(cat nb_$name.out)"
  close nb_ref_$name nb_$name "$name"
}
# the accel criterion takes its old |a| from the restart file's forces: bitwise (both backends)
"$banyan" run $common -P Gravity:mac:accel -q -o acc_ref || fail "accel: reference run"
"$banyan" run $common -P Gravity:mac:accel -q -o acc --stop-after-steps 13 || fail "accel: stopped run"
"$banyan" run --restart acc/restart -o acc -q >acc.out || fail "accel: continued run"
grep -q "not bitwise" acc.out && fail "accel: a notice where the bits are the same: $(cat acc.out)"
same acc_ref acc "accel criterion stopped at step 13"
# a refreshed tree (block steps, tree_rebuild 4; 0 with rebuild_cost work): the restart file holds the tree the
# next refresh starts from (bitwise, stopped at step 13: between rebuilds; both backends)
for r in 4 0; do
  d=rebuild$r
  "$banyan" run $common $block -P TimeIntegration:tree_rebuild:$r -P TimeIntegration:rebuild_cost:work -q -o ${d}_ref ||
    fail "$d: reference run"
  "$banyan" run $common $block -P TimeIntegration:tree_rebuild:$r -P TimeIntegration:rebuild_cost:work -q -o $d \
    --stop-after-steps 13 || fail "$d: stopped run"
  if command -v h5ls >/dev/null; then
    h5ls -r $d/restart/restart_0000.hdf5 | grep -q "State/Tree" || fail "$d: no tree in the restart file"
  fi
  "$banyan" run --restart $d/restart -o $d -q >$d.out || fail "$d: continued run"
  grep -q "not bitwise" $d.out && fail "$d: a notice where the bits are the same: $(cat $d.out)"
  same ${d}_ref $d "tree_rebuild $r stopped at step 13"
done
# refusals (tree/refresh_guard.h) continue bit for bit too: the continued run judges each refresh from the saved
# tree's keys, and each build ahead of its refreshes (tree/refresh_lag.h) from x and v, as the unstopped run does.
# This small run's groups never outgrow their key cells by much, far from the real bound (a mean of 8);
# BANYAN_REFRESH_GROWTH_MAX=1.0005 (a testing aid) makes it refuse some builds ahead, which are then made again
# from x (69 tree builds against 64 to t = 0.5 on the CPU, rebuilt every 16 steps; the refreshes of trees built
# from x then keep their groups in their cells), so it must build more often than without the aid
refuse="$common $block -P TimeIntegration:tree_rebuild:16 -P TimeIntegration:t_end:0.5"
builds() { sed -n 's/.* \([0-9][0-9]*\) tree builds$/\1/p' "$1"; }
"$banyan" run $refuse -o kept >kept.out || fail "refused: plain run"
BANYAN_REFRESH_GROWTH_MAX=1.0005 "$banyan" run $refuse -o refused_ref >refused_ref.out || fail "refused: reference run"
[ "$(builds refused_ref.out)" -gt "$(builds kept.out)" ] 2>/dev/null ||
  fail "refused: no refresh refused ($(builds refused_ref.out) tree builds, $(builds kept.out) without the aid)"
BANYAN_REFRESH_GROWTH_MAX=1.0005 "$banyan" run $refuse -q -o refused --stop-after-steps 13 || fail "refused: stopped run"
BANYAN_REFRESH_GROWTH_MAX=1.0005 "$banyan" run --restart refused/restart -o refused -q >refused.out ||
  fail "refused: continued run"
same refused_ref refused "refusals, stopped at step 13"
# a continued run's summary: every step from t = 0, 13 of them made before it; its ms a step are of its own
"$banyan" run $refuse -q -o summary --stop-after-steps 13 || fail "summary: stopped run"
"$banyan" run --restart summary/restart -o summary >summary.out || fail "summary: continued run"
awk '/steps from t = 0 to/ {for (i = 2; i < NF; i++) {if ($i == "steps" && $(i + 1) == "from") all = $(i - 1)
                                                       if ($i == "of" && $(i + 1) == "them") mine = $(i - 1)}}
     /the steps alone: / {t = $4; ms = $6}
     END {if (!(all - mine == 13 && mine > 0 && t > 0 && (ms * mine / (1e3 * t) - 1) ^ 2 < 1e-4)) exit 1}' summary.out ||
  fail "continued run's summary: not 13 steps before it, or its ms a step not its own: $(head -3 summary.out)"

# the self-tuned rebuild weighing measured times: never bitwise (its rebuilds follow each run's timings)
not_bitwise tuned "TimeIntegration:tree_rebuild = 0 and rebuild_cost time" $block -P TimeIntegration:tree_rebuild:0 \
  -P TimeIntegration:rebuild_cost:time

# another backend (GPU machines only: BANYAN_TEST_BACKEND=gpu): the CPU's file continued on the GPU and the GPU's
# on the CPU, saying so, within the bounds above of the unstopped run on the first backend
if [ "${BANYAN_TEST_BACKEND:-cpu}" = gpu ]; then
  for pair in "cpu gpu" "gpu cpu"; do
    set -- $pair
    d=switch_$1
    "$banyan" run $common $block -P Gravity:backend:$1 -q -o ${d}_ref || fail "$d: reference run"
    "$banyan" run $common $block -P Gravity:backend:$1 -q -o $d --stop-after-steps 13 || fail "$d: stopped run"
    "$banyan" run --restart $d/restart -o $d -q -P Gravity:backend:$2 >$d.out || fail "$d: continued run"
    grep -q "continuing from the $1 backend's restart on the $2 backend: not bitwise" $d.out ||
      fail "$d: no notice: $(cat $d.out)"
    close ${d}_ref $d "$1 to $2"
  done
fi

# restart files whose names are snapshots' (Snapshots:directory restart,
# basename restart) or that would lie below a file (Restart:dir
# energy.txt): refused before anything is written
"$banyan" run $common -P Snapshots:directory:restart -P Snapshots:basename:restart -q -o clash 2>clash.err &&
  fail "restart files named as snapshots: accepted"
grep -q "is the same file as restart file 0" clash.err || fail "clash: not the names' message: $(cat clash.err)"
[ -e clash ] && fail "clash: the refused run wrote $(ls -R clash | head -3)"
"$banyan" run $common -P Restart:dir:energy.txt -q -o below 2>below.err && fail "Restart:dir below a file: accepted"
grep -q "would have to be a directory holding restart file 0" below.err || fail "below: $(cat below.err)"

[ $failures = 0 ] && echo "cli_restart: all checks passed"
exit $((failures > 0))
