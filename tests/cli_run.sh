#!/bin/bash
# banyan run end to end: a tiny direct-summation run writes energy.txt with
# the right columns, snapshots at the requested times, used/unused
# parameters; used_parameters.yml repeats the run bit for bit; a snapshot
# restarts it; bad parameters fail naming the key and leave no output.
# usage: bash cli_run.sh path/to/banyan
set -u
BANYAN=$1
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_fail() { # expect_fail "needle" args...: non-zero exit, message contains needle
    local needle=$1; shift
    if "$BANYAN" run "$@" >"$T/out.txt" 2>"$T/err.txt"; then fail "run $* succeeded"; fi
    grep -qF -- "$needle" "$T/err.txt" || fail "run $*: message lacks '$needle': $(cat "$T/err.txt")"
}
snap_time() { "$BANYAN" info "$1" | awk '$1 == "time" {print $2}'; }

cat >"$T/tiny.yml" <<'EOF'
# a tiny run: 256 particles, direct summation, 16 steps
InitialConditions:
  model: plummer
  n: 256
  seed: 7
Gravity:
  method: direct
  softening: 0.05
  backend: cpu
TimeIntegration:
  t_end: 0.25
  dt: 0.015625
Snapshots:
  directory: snaps
  times: [0.125]
  render: no
Statistics:
  interval: 0
EOF

# --- a tiny run ------------------------------------------------------------
"$BANYAN" run "$T/tiny.yml" --output-dir "$T/a" >"$T/out.txt" 2>"$T/err.txt" \
    || fail "tiny run failed: $(cat "$T/err.txt")"
grep -q "16 steps" "$T/out.txt" || fail "summary lacks the step count: $(cat "$T/out.txt")"
# the steps' own time: within the run's wall time, and their mean a sixteenth of it
awk '/steps from t = / {wall = $(NF - 3)} /the steps alone: / {t = $4; ms = $6}
     END {r = ms * 16 / (1e3 * t); if (!(t > 0 && t <= wall + 0.005 && r > 0.99 && r < 1.01)) exit 1}' "$T/out.txt" ||
    fail "summary lacks the steps' own time, or it is not within the wall time: $(cat "$T/out.txt")"
E=$T/a/energy.txt
[ -f "$E" ] || fail "no energy.txt"
grep -q '^# build: git ' "$E" || fail "energy.txt header does not name the build"
grep -q 'compiler ' "$E" || fail "energy.txt header does not name the compiler"
grep -q '^# time .*kinetic .*potential .*total .*rel_error .*momentum .*ang_mom .*wall_time' "$E" \
    || fail "energy.txt lacks the column names"
rows=$(grep -vc '^#' "$E")
[ "$rows" -eq 17 ] || fail "energy.txt has $rows rows, expected 17 (t = 0 and 16 steps)"
awk '!/^#/ && NF != 8 {exit 1}' "$E" || fail "energy.txt rows do not all have 8 columns"
awk '!/^#/ {t = $1; if (n++ == 0 && t != 0) exit 1} END {if (t != 0.25) exit 1}' "$E" \
    || fail "energy.txt does not run from t = 0 to 0.25"
# total = kinetic + potential, and the energy error stays small (eps 0.05, dt 1/64)
awk '!/^#/ {d = $2 + $3 - $4; if (d < 0) d = -d; if (d > 1e-12 || $5 > 1e-4) exit 1}' "$E" \
    || fail "energy.txt: total != K + W or |dE/E0| > 1e-4"
[ -f "$T/a/used_parameters.yml" ] || fail "no used_parameters.yml"
[ -f "$T/a/unused_parameters.yml" ] || fail "no unused_parameters.yml"
grep -q '^  n: 256' "$T/a/used_parameters.yml" || fail "used_parameters.yml lacks n: 256"
grep -q '^  theta: 0.5 .*# default' "$T/a/used_parameters.yml" || fail "used_parameters.yml lacks the default theta"
ls "$T/a" | grep -q '\.tmp' && fail "temporary files left in the output directory"
[ -f "$T/a/final.png" ] && fail "render: no still rendered a picture"

# snapshots at the requested time and at t_end, numbered in time order
[ "$(ls "$T/a/snaps")" = "snapshot_0000.hdf5
snapshot_0001.hdf5" ] || fail "snapshots: $(ls "$T/a/snaps")"
[ "$(snap_time "$T/a/snaps/snapshot_0000.hdf5")" = "0.125" ] || fail "snapshot 0 time $(snap_time "$T/a/snaps/snapshot_0000.hdf5")"
[ "$(snap_time "$T/a/snaps/snapshot_0001.hdf5")" = "0.25" ] || fail "snapshot 1 time"
"$BANYAN" info "$T/a/snaps/snapshot_0001.hdf5" | grep -q 'Acceleration yes, Potential yes' \
    || fail "snapshots lack forces"

# --- used_parameters.yml repeats the run bit for bit ------------------------
"$BANYAN" run "$T/a/used_parameters.yml" -o "$T/b" -q 2>"$T/err.txt" || fail "rerun failed: $(cat "$T/err.txt")"
cols() { awk '!/^#/ {print $1, $2, $3, $4, $5, $6, $7}' "$1"; } # all but the wall time
cmp -s <(cols "$T/a/energy.txt") <(cols "$T/b/energy.txt") \
    || fail "rerun from used_parameters.yml gives different energies"
diff <(grep -v '^#' "$T/a/used_parameters.yml" | sed 's/ *#.*//') \
     <(grep -v '^#' "$T/b/used_parameters.yml" | sed 's/ *#.*//') >/dev/null \
    || fail "used_parameters.yml does not round-trip"

# --- -P overrides; unused parameters are reported ----------------------------
"$BANYAN" run "$T/tiny.yml" -o "$T/c" -q -P TimeIntegration:t_end:0.125 -P Snapshots:times:[] \
    -P InitialConditions:virial_ratio:0.5 || fail "run with -P failed"
[ "$(grep -v '^#' "$T/c/energy.txt" | tail -1 | awk '{print $1}')" = "0.125" ] || fail "-P t_end ignored"
[ "$(ls "$T/c/snaps")" = "snapshot_0000.hdf5" ] || fail "-P Snapshots:times:[] ignored: $(ls "$T/c/snaps")"
grep -q '^  t_end: 0.125 .*# set by -P' "$T/c/used_parameters.yml" || fail "used_parameters.yml lacks the -P value"
grep -q 'virial_ratio: 0.5 .*only used by model uniform-sphere' "$T/c/unused_parameters.yml" \
    || fail "unused_parameters.yml lacks virial_ratio: $(cat "$T/c/unused_parameters.yml")"

# --- Statistics:interval and Snapshots:interval ------------------------------
"$BANYAN" run "$T/tiny.yml" -o "$T/d" -q -P Statistics:interval:0.1 -P Snapshots:interval:0.1 \
    -P Snapshots:times:[] || fail "run with intervals failed"
[ "$(grep -v '^#' "$T/d/energy.txt" | awk '{printf "%s ", $1}')" = "0 0.1 0.2 0.25 " ] \
    || fail "energy rows at $(grep -v '^#' "$T/d/energy.txt" | awk '{printf "%s ", $1}')"
[ "$(ls "$T/d/snaps" | wc -l)" -eq 4 ] || fail "Snapshots:interval 0.1 gave $(ls "$T/d/snaps" | wc -l) files"
[ "$(snap_time "$T/d/snaps/snapshot_0002.hdf5")" = "0.2" ] || fail "interval snapshot time"

# --- batches of steps are the steps: adaptive steps (eta > 0) landing on 0.125
# and 0.25, with a row per step (batches of one: landing on the snapshot) and a
# row every 0.125 (batches of many), reach the same state
"$BANYAN" run "$T/tiny.yml" -o "$T/batch0" -q -P TimeIntegration:eta:0.05 -P Statistics:interval:0 \
    || fail "adaptive run with a row per step failed"
"$BANYAN" run "$T/tiny.yml" -o "$T/batch0.125" -q -P TimeIntegration:eta:0.05 -P Statistics:interval:0.125 \
    -P Snapshots:times:[] || fail "adaptive run with a row every 0.125 failed"
[ "$(grep -vc '^#' "$T/batch0/energy.txt")" -gt 17 ] || fail "eta 0.05 did not shorten the steps"
[ "$(cols "$T/batch0/energy.txt" | tail -1)" = "$(cols "$T/batch0.125/energy.txt" | tail -1)" ] \
    || fail "batches of steps end elsewhere than single steps: $(cols "$T/batch0.125/energy.txt" | tail -1)"

# --- restart from a snapshot --------------------------------------------------
"$BANYAN" run "$T/tiny.yml" -o "$T/e" -q -P InitialConditions:file:"$T/a/snaps/snapshot_0000.hdf5" \
    -P Snapshots:times:[] || fail "run from a snapshot failed"
[ "$(grep -v '^#' "$T/e/energy.txt" | head -1 | awk '{print $1}')" = "0.125" ] \
    || fail "run from a snapshot does not start at its Time"
grep -q 'model: plummer .*InitialConditions:file is set' "$T/e/unused_parameters.yml" \
    || fail "unused_parameters.yml does not list the model when a file is read"

# --- no parameter file: the documented default (make run), shortened ---------
# It renders final.png; off a terminal it prints no progress line, on one
# (script(1), util-linux) a \r-updated line with elapsed and remaining time.
short=(-P InitialConditions:n:2048 -P TimeIntegration:t_end:0.03125)
"$BANYAN" run "${short[@]}" -o "$T/f" >"$T/out.txt" 2>"$T/err.txt" || fail "default run failed: $(cat "$T/err.txt")"
[ "$(head -c 8 "$T/f/final.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] \
    || fail "the default run did not render final.png"
[ -f "$T/f/snapshot_0000.hdf5" ] || fail "the default run wrote no final snapshot: $(ls "$T/f")"
grep -q "2048 particles, tree" "$T/out.txt" || fail "default run summary: $(cat "$T/out.txt")"
[ -s "$T/err.txt" ] && fail "progress output off a terminal in a short run: $(cat "$T/err.txt")"
if command -v script >/dev/null; then
    script -qec "$(printf '%q ' "$BANYAN" run "${short[@]}" -o "$T/g")" /dev/null >"$T/tty.txt" 2>&1 \
        || fail "default run on a terminal failed: $(cat "$T/tty.txt")"
    tr '\r' '\n' <"$T/tty.txt" | grep -q '^t = 0.03125 *100.0%  step 4 .*elapsed .*left ~' \
        || fail "no progress line on a terminal: $(cat -v "$T/tty.txt")"
else
    echo "note: script(1) not found, progress line on a terminal not checked"
fi

# --- the picture and the energy log may go to new subdirectories -------------
# (created before the run: a missing one used to fail only after the run)
"$BANYAN" run "$T/tiny.yml" -o "$T/h" -q -P Snapshots:render:yes -P Snapshots:render_file:pics/end.png \
    -P Statistics:energy_file:logs/energy.txt 2>"$T/err.txt" || fail "run with nested outputs: $(cat "$T/err.txt")"
[ -s "$T/h/pics/end.png" ] || fail "no pics/end.png"
[ -s "$T/h/logs/energy.txt" ] || fail "no logs/energy.txt"

# --- bad input: non-zero exit, message names the key, no output --------------
printf 'Gravity:\n  softening: 0.05\n  thetaa: 0.7\n' >"$T/bad.yml"
expect_fail "unknown key 'thetaa'" "$T/bad.yml" -o "$T/bad1"
grep -qF "bad.yml:3" "$T/err.txt" || fail "message lacks file:line: $(cat "$T/err.txt")"
grep -qF "valid keys of Gravity: G, softening, method, theta" "$T/err.txt" || fail "message lacks the valid keys"
[ -e "$T/bad1" ] && fail "a failed run created its output directory"
expect_fail "unknown key 'nope'" "$T/tiny.yml" -o "$T/bad2" -P Gravity:nope:1
expect_fail "Gravity:theta = 'abc'" "$T/tiny.yml" -o "$T/bad3" -P Gravity:theta:abc
expect_fail "TimeIntegration:dt = '-1': must be > 0" "$T/tiny.yml" -o "$T/bad4" -P TimeIntegration:dt:-1
expect_fail "Snapshots:times entry 3 is outside the run" "$T/tiny.yml" -o "$T/bad5" -P Snapshots:times:[0.1,3]
expect_fail "$T/missing.hdf5" "$T/tiny.yml" -o "$T/bad6" -P InitialConditions:file:"$T/missing.hdf5"
printf 'not HDF5\n' >"$T/text.hdf5"
expect_fail "InitialConditions:file: $T/text.hdf5 is not an HDF5 file" "$T/tiny.yml" -o "$T/bad9" \
    -P InitialConditions:file:"$T/text.hdf5"
expect_fail "cannot open parameter file" "$T/nothere.yml" -o "$T/bad7"
expect_fail "t_end = 0.1 must be after the start time 0.125" "$T/tiny.yml" -o "$T/bad8" \
    -P InitialConditions:file:"$T/a/snaps/snapshot_0000.hdf5" -P TimeIntegration:t_end:0.1 -P Snapshots:times:[]
for d in bad2 bad3 bad4 bad5 bad6 bad7 bad8 bad9; do [ -e "$T/$d" ] && fail "failed run $d left output"; done

# --- hostile inputs (issue 15): refused before the first output ---------------
# expect_refused "needle" OUTDIR args...: non-zero exit, the message, and
# nothing at all written into OUTDIR
expect_refused() {
    local needle=$1 out=$2; shift 2
    expect_fail "$needle" "$@" -o "$out"
    if [ -e "$out" ]; then fail "run $* left $out behind: $(ls -A "$out")"; fi
}
H="$T/hostile"
mkdir -p "$H"
# runs that never end: steps, log rows and snapshots are counted first
expect_refused "is 6.4e+10 steps (more than 1e+10)" "$H/o1" "$T/tiny.yml" -P TimeIntegration:t_end:1e9
expect_refused "steps (more than 1e+10)" "$H/o2" "$T/tiny.yml" -P TimeIntegration:t_end:1e308
expect_refused "in steps of 1e-300" "$H/o3" "$T/tiny.yml" -P TimeIntegration:dt:1e-300
expect_refused "eta = 1e-300" "$H/o4" "$T/tiny.yml" -P TimeIntegration:eta:1e-300
expect_refused "below dt_min = 0.001" "$H/o5" "$T/tiny.yml" -P TimeIntegration:dt_min:0.001 \
    -P TimeIntegration:eta:0.001
expect_refused "Snapshots:interval = 1e-300 asks for more than" "$H/o6" "$T/tiny.yml" -P Snapshots:interval:1e-300
expect_refused "Statistics:interval = 1e-300: the energy log would get 2.5e+299 rows" "$H/o7" "$T/tiny.yml" \
    -P Statistics:interval:1e-300
expect_refused "Statistics:interval = 0: the energy log would get" "$H/o8" "$T/tiny.yml" \
    -P TimeIntegration:t_end:1e5 -P TimeIntegration:dt:0.001
mkfifo "$H/fifo.hdf5" "$H/fifo.yml"
expect_refused "fifo.hdf5 is not a regular file (a FIFO)" "$H/o9" "$T/tiny.yml" -P InitialConditions:file:"$H/fifo.hdf5"
expect_refused "fifo.yml' is not a regular file (a FIFO)" "$H/o10" "$H/fifo.yml"
# a collapse that the softening does not resolve stops at dt_min, with a message
"$BANYAN" run "$T/tiny.yml" -o "$H/collapse" -q -P InitialConditions:model:uniform-sphere \
    -P Gravity:softening:0.01 -P TimeIntegration:eta:0.1 -P TimeIntegration:t_end:2 \
    -P TimeIntegration:dt_min:1e-3 -P Snapshots:times:[] 2>"$T/err.txt" && fail "the collapse ran through dt_min"
grep -q "at t = 1.1.*fell below TimeIntegration:dt_min = 0.001" "$T/err.txt" || fail "collapse: $(cat "$T/err.txt")"
# outputs that are inputs or each other: refused naming both, whatever the spelling
expect_refused "Snapshots:render_file '$H/o11/used_parameters.yml' is the same file as used_parameters.yml" \
    "$H/o11" "$T/tiny.yml" -P Snapshots:render:yes -P Snapshots:render_file:used_parameters.yml
expect_refused "Statistics:energy_file '$H/o12/./unused_parameters.yml' is the same file as unused_parameters.yml" \
    "$H/o12" "$T/tiny.yml" -P Statistics:energy_file:./unused_parameters.yml
expect_refused "is the same file as Statistics:energy_file" "$H/o13" "$T/tiny.yml" \
    -P Statistics:energy_file:snaps/../snaps/snapshot_0001.hdf5
cp "$T/tiny.yml" "$H/p.yml"
expect_refused "is the same file as the parameter file" "$H/o14" "$H/p.yml" -P Snapshots:render:yes \
    -P Snapshots:render_file:"$H/p.yml"
ln -s "$H" "$H/link"
expect_refused "is the same file as the parameter file" "$H/o15" "$H/p.yml" \
    -P Statistics:energy_file:"$H/link/p.yml"
cmp -s "$T/tiny.yml" "$H/p.yml" || fail "the parameter file was overwritten"
"$BANYAN" run "$T/tiny.yml" -o "$H/ic" -q -P TimeIntegration:t_end:0.125 -P Snapshots:times:[] \
    -P Snapshots:directory:. || fail "run for a restart file"
expect_refused "snapshot '$H/ic/snapshot_0000.hdf5' is the same file as InitialConditions:file" "$H/o16" \
    "$T/tiny.yml" -P InitialConditions:file:"$H/ic/snapshot_0000.hdf5" -P Snapshots:directory:"$H/ic"
# an output below another output's name, and names that are not files
expect_refused "would have to be a directory holding Statistics:energy_file" "$H/o22" "$T/tiny.yml" \
    -P Statistics:energy_file:snaps/snapshot_0000.hdf5/e.txt
expect_refused "Statistics:energy_file '$H/o23/energy.txt' would have to be a directory holding snapshot" "$H/o23" \
    "$T/tiny.yml" -P Snapshots:directory:energy.txt
mkdir -p "$H/o24"
mkfifo "$H/o24/energy.txt"
expect_fail "Statistics:energy_file '$H/o24/energy.txt' exists and is not a regular file (a FIFO)" "$T/tiny.yml" \
    -o "$H/o24"
mkdir -p "$H/o25"
ln -s used_parameters.yml "$H/o25/energy.txt"
expect_fail "is a dangling symbolic link" "$T/tiny.yml" -o "$H/o25"
[ "$(ls "$H/o24" "$H/o25" | grep -c parameters)" = 0 ] || fail "files written beside a FIFO or a dangling link"
# names that cannot be written
expect_refused "Snapshots:basename = 'a/b' must be a file name without '/'" "$H/o17" "$T/tiny.yml" \
    -P Snapshots:basename:a/b
long=$(printf 'x%.0s' $(seq 300))
expect_refused "is 310 characters long (at most 255)" "$H/o18" "$T/tiny.yml" -P Snapshots:basename:$long
expect_refused "Statistics:energy_file: a name in" "$H/o19" "$T/tiny.yml" -P Statistics:energy_file:$long
# Snapshots:times up to its documented 1024 entries, written back whole
times=$(seq -f '%.17f' 0.0001 0.0002 0.2047 | head -1024 | paste -sd, -)
"$BANYAN" run "$T/tiny.yml" -o "$H/times" -P "Snapshots:times:[$times]" --print-defaults >"$T/times.yml" \
    2>"$T/err.txt" || fail "1024 snapshot times refused: $(cat "$T/err.txt")"
"$BANYAN" run -P "Snapshots:times:[$times,0.3]" --print-defaults >/dev/null 2>"$T/err.txt" \
    && fail "1025 snapshot times accepted"
grep -q "more than 1024 entries" "$T/err.txt" || fail "1025 times: $(cat "$T/err.txt")"
# numbers cut short: parameters range-checked before they are narrowed to int
expect_refused "Gravity:group_size = '4294967297': must be in [1, 4096]" "$H/o20" "$T/tiny.yml" \
    -P Gravity:group_size:4294967297
expect_refused "Gravity:device = '-2': must be in [-1, 1023]" "$H/o21" "$T/tiny.yml" -P Gravity:device:-2
# a clock that cannot advance: steps and intervals below the resolution of the
# run's times (t = 1e15: t + 1/128 == t), and block steps' worst case
if /usr/bin/python3 -c "import h5py" 2>/dev/null; then
    "$BANYAN" ic plummer --n 64 -o "$H/late.hdf5" >/dev/null || fail "ic for the late start"
    /usr/bin/python3 -c "import h5py, sys; h5py.File(sys.argv[1], 'r+')['Header'].attrs['Time'] = 1e15" "$H/late.hdf5"
    expect_refused "is too short to advance a clock at t = 1e+15 (resolution 8)" "$H/o26" "$T/tiny.yml" \
        -P InitialConditions:file:"$H/late.hdf5" -P TimeIntegration:t_end:1000000000000001
    expect_refused "Statistics:interval = 1 is below the clock's resolution 8" "$H/o27" "$T/tiny.yml" \
        -P InitialConditions:file:"$H/late.hdf5" -P TimeIntegration:t_end:1000000000000100 \
        -P TimeIntegration:dt:16 -P Statistics:interval:1
fi
expect_refused "time_bins = 30: up to 6.87e+10 steps of dt / 2^29" "$H/o28" "$T/tiny.yml" \
    -P TimeIntegration:time_bins:30 -P TimeIntegration:eta:1e-300 -P TimeIntegration:t_end:1 \
    -P TimeIntegration:dt:0.0078125
# a parameter file nested deeper than any parameter needs (libyaml is
# quadratic in the depth: 90 s for this one), and a NUL inside a value
{ printf 'Snapshots:\n  times: '; printf '[%.0s' $(seq 20000); printf ']%.0s' $(seq 20000); echo; } >"$H/deep.yml"
expect_refused "nested more than 8 levels deep" "$H/o29" "$H/deep.yml"
printf 'Statistics:\n  energy_file: "e\\0x.txt"\n' >"$H/nul.yml"
expect_refused "Statistics:energy_file holds a NUL character" "$H/o30" "$H/nul.yml"
# directories that cannot hold the outputs: refused before any is made
"$BANYAN" ic plummer --n 64 -o "$H/in.hdf5" >/dev/null || fail "ic for the directory checks"
expect_refused "Snapshots:directory '$H/o31/../in.hdf5': '$H/in.hdf5' exists and is not a directory" "$H/o31" "$T/tiny.yml" \
    -P Snapshots:directory:../in.hdf5
expect_refused "Snapshots:render_file '$H/o32/../in.hdf5/x.png': '$H/in.hdf5' exists and is not a directory" "$H/o32" "$T/tiny.yml" \
    -P Snapshots:render:yes -P Snapshots:render_file:../in.hdf5/x.png
if [ -d /proc/self ]; then
    expect_refused "Statistics:energy_file '/proc/e.txt': cannot write in directory '/proc'" "$H/o33" "$T/tiny.yml" \
        -P Statistics:energy_file:/proc/e.txt
    expect_refused "Snapshots:directory '/proc': cannot write in directory '/proc'" "$H/o34" "$T/tiny.yml" \
        -P Snapshots:directory:/proc
fi
expect_refused "--output-dir: a name in" "$H/o35/$long" "$T/tiny.yml"
# denormal numbers are numbers
"$BANYAN" run "$T/tiny.yml" -P Gravity:accel_alpha:1e-310 --print-defaults >/dev/null 2>"$T/err.txt" \
    || fail "a denormal value refused: $(cat "$T/err.txt")"

# --- an error target: chosen before the first step, in the log and snapshots -
"$BANYAN" run -q -o "$T/target" -P InitialConditions:n:4096 -P TimeIntegration:t_end:0.0625 \
    -P Gravity:backend:cpu -P Gravity:error_target:1e-3 -P Gravity:error_cost:work -P Gravity:group_size:32 \
    -P Snapshots:render:no 2>"$T/err.txt" || fail "run with an error target: $(cat "$T/err.txt")"
grep -q "^# error target 0.001" "$T/target/energy.txt" || fail "energy.txt lacks the error target's header"
grep -q "  # theta: 0.5 .*chosen by error_target" "$T/target/used_parameters.yml" \
    || fail "used_parameters.yml: theta should stay a comment"
grep -q "^  group_size: 32" "$T/target/used_parameters.yml" || fail "used_parameters.yml: group_size (explicit)"
"$BANYAN" info "$T/target/snapshot_0000.hdf5" | grep -q "ErrorTarget 0.001" || fail "snapshot lacks ErrorTarget"
if command -v h5dump >/dev/null; then
    h5dump -a /Parameters/ErrorMeasuredP99 "$T/target/snapshot_0000.hdf5" >/dev/null \
        || fail "snapshot lacks ErrorMeasuredP99"
    h5dump -a /Parameters/GroupSize "$T/target/snapshot_0000.hdf5" | grep -q "32" || fail "group size not kept"
fi
awk '!/^#/ && NF != 14 {bad = 1} END {exit bad}' "$T/target/energy.txt" || fail "energy.txt rows need 14 columns"

# --- the documented defaults cannot drift from the parameter table -----------
"$BANYAN" run --print-defaults >"$T/default.yml" || fail "--print-defaults failed"
diff "$T/default.yml" "$HERE/../examples/default.yml" \
    || fail "examples/default.yml differs from 'banyan run --print-defaults' (regenerate it)"
for f in "$HERE"/../examples/*.yml; do # every example is a valid parameter file
    "$BANYAN" run "$f" --print-defaults >/dev/null 2>"$T/err.txt" || fail "$f: $(cat "$T/err.txt")"
done
"$BANYAN" run --help | grep -q 'output-dir' || fail "--help"
echo "cli_run: all checks passed"
