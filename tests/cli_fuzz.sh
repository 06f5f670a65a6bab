#!/usr/bin/env bash
# The fuzz test of issue 15: hostile snapshots (tests/fuzz_snapshots.py:
# truncations, bit flips, wrong shapes, types, lengths, huge sparse counts,
# NaN/Inf, header values, strings of every kind, links, FIFOs) through
# every command that reads one. Any crash, sanitizer report (ASan, UBSan,
# LSan: the suite's sanitizer build), hang, exit 0 on a bad file, output
# left after a failure, or output that is not itself a valid input fails.
# Every case goes through every command (about 50 s under the sanitizers
# on 2 cores); FUZZ_QUICK=1 lets render, compare, forces with the tree and
# run take turns over the cases (a quarter of the time).
# usage: bash cli_fuzz.sh path/to/banyan
set -u
source "$(dirname "$0")/snapshot_test_setup.sh"
snapshot_test_setup "$1" "h5py, numpy" python3-h5py
start=$SECONDS
"$py" "$here/fuzz_snapshots.py" cases || { echo "FAIL: cannot make the fuzz cases"; exit 1; }
"$banyan" forces cases/base.hdf5 -o ref.hdf5 --method direct --backend cpu 2>/dev/null \
  || { echo "FAIL: forces on the valid base file"; exit 1; }

failures=0 invocations=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
san="$PWD/san"
mkdir -p "$san"

# run_one CASE KIND LABEL OUTPUT -- command...: one invocation and its checks.
# OUTPUT is the file or directory the command writes ("" for none).
run_one() {
  local case=$1 kind=$2 label=$3 out=$4
  shift 5
  rm -rf out.hdf5 out.png runout
  invocations=$((invocations + 1))
  ASAN_OPTIONS="detect_leaks=1:log_path=$san/asan" UBSAN_OPTIONS="print_stacktrace=1:log_path=$san/ubsan" \
    timeout 20 "$@" >stdout.txt 2>stderr.txt
  local rc=$?
  local why=""
  if [ $rc -eq 124 ]; then why="hang (killed after 20 s)"
  elif [ $rc -ge 128 ]; then why="crash (exit $rc)"
  elif [ -n "$(ls -A "$san")" ]; then why="sanitizer report: $(head -c 600 "$san"/* | tr '\n' ' ')"
  elif [ "$kind" = bad ] && [ $rc -eq 0 ]; then why="exit 0 on a bad file"
  elif [ "$kind" = good ] && [ $rc -ne 0 ] && [ "$label" = info -o "$label" = forces ]; then
    why="a valid file refused: $(head -c 300 stderr.txt)"
  elif [ $rc -ne 0 ] && [ -n "$out" ] && [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
    why="output left after a failure: $(ls -A "$out" | head -3 | tr '\n' ' ')"
  elif [ $rc -ne 0 ] && ! grep -q "error" stderr.txt; then why="exit $rc without an error message"
  elif [ $rc -eq 0 ] && ! outputs_valid "$out"; then why="an output that banyan refuses to read: $(head -c 300 valid.txt)"
  fi
  if ls ./*.tmp.* runout/*.tmp.* >/dev/null 2>&1; then why="$why; temporary files left"; fi
  rm -f "$san"/*
  [ -z "$why" ] || fail "$case ($kind) $label: $why"
}

# Every snapshot an invocation wrote reads back (outputs are valid inputs).
outputs_valid() {
  local f
  : >valid.txt
  for f in $(find "$1" -name '*.hdf5' 2>/dev/null); do
    "$banyan" info "$f" >/dev/null 2>valid.txt || return 1
  done
  return 0
}

# A tiny run from the case's particles: two steps, nothing else.
run_params() {
  cat >run.yml <<EOF
InitialConditions:
  file: $1
Gravity:
  method: direct
  softening: 0.05
  backend: cpu
TimeIntegration:
  t_end: 0.0625
  dt: 0.03125
Snapshots:
  times: []
  render: no
Statistics:
  interval: 0
EOF
}

k=0
while read -r case kind desc; do
  f="cases/$case.hdf5"
  run_one "$case" "$kind" info "" -- "$banyan" info "$f"
  run_one "$case" "$kind" forces out.hdf5 -- "$banyan" forces "$f" -o out.hdf5 --method direct --backend cpu
  turn=$((k % 4))
  k=$((k + 1))
  all=1
  [ "${FUZZ_QUICK:-0}" = 1 ] && all=0
  if [ "$all" = 1 ] || [ $turn -eq 0 ]; then
    run_one "$case" "$kind" render out.png -- "$banyan" render "$f" -o out.png --size 32x32
  fi
  if [ "$all" = 1 ] || [ $turn -eq 1 ]; then
    run_one "$case" "$kind" tree out.hdf5 -- "$banyan" forces "$f" -o out.hdf5 --backend cpu --leaf-size 4
  fi
  if [ "$all" = 1 ] || [ $turn -eq 2 ]; then
    # a bad file is refused as either side of a comparison
    run_one "$case" "$kind" compare "" -- "$banyan" compare "$f" ref.hdf5
    [ "$kind" = bad ] && run_one "$case" "$kind" compare-ref "" -- "$banyan" compare ref.hdf5 "$f"
  fi
  if [ "$all" = 1 ] || [ $turn -eq 3 ]; then
    run_params "$PWD/$f"
    run_one "$case" "$kind" run runout -- "$banyan" run run.yml -o runout -q
  fi
done <cases/manifest.txt

cases=$(wc -l <cases/manifest.txt)
echo "cli_fuzz: $cases cases, $invocations invocations, $((SECONDS - start)) s"
if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "cli_fuzz: all checks passed"
