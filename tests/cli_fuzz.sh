#!/usr/bin/env bash
# The fuzz test of issue 15: hostile snapshots (tests/fuzz_snapshots.py:
# truncations, bit flips, wrong shapes, types, lengths, huge sparse counts,
# NaN/Inf, header and parameter values, strings of every kind, links,
# filters, FIFOs; and GADGET-2 and tipsy files of tests/fuzz_foreign.py,
# named .hdf5 like the others: the readers go by content) through every
# command that reads one: info, forces
# (direct and tree), render, compare (the file on either side), convert
# and run.
# Any crash, sanitizer report (ASan, UBSan, LSan: the suite's sanitizer
# build), hang, exit 0 on a bad file, a valid file refused, output or
# temporary file left after a failure, a file written outside the
# command's output, an input changed, or an output that is not itself a
# valid input fails.
#
# Every case goes through info and forces --method direct; valid files
# ("good", "pair") and the huge sparse counts through every command; every
# other case through two of the other six commands (convert among them), chosen from a hash of
# its name (stable when cases are added). FUZZ_FULL=1: every case through
# every command (about 3x the time). FUZZ_SAMPLE=k: one in k of the
# hostile cases, chosen by the same hash, and the valid files and huge
# counts through three of the six commands by turns (the sanitizer pass of
# make test runs one in 16: the sanitizers make each invocation several
# times slower).
# usage: bash cli_fuzz.sh path/to/banyan
set -u
source "$(dirname "$0")/snapshot_test_setup.sh"
snapshot_test_setup "$1" "h5py, numpy" python3-h5py
source "$here/shell_checks.sh"
start=$SECONDS
"$py" "$here/fuzz_snapshots.py" cases || { echo "FAIL: cannot make the fuzz cases"; exit 1; }
"$banyan" forces cases/base.hdf5 -o ref.hdf5 --method direct --backend cpu 2>/dev/null \
  || { echo "FAIL: forces on the valid base file"; exit 1; }

# the inputs' contents before (regular files only: not the FIFO)
sums() { (cd cases && find . -type f | LC_ALL=C sort | xargs md5sum) && md5sum ref.hdf5; }
sums >sums.before

invocations=0
san="$PWD/san"
mkdir -p "$san"
# what the scratch directory holds between invocations
known=" $(echo *) run.yml stdout.txt stderr.txt valid.txt "

# run_one CASE KIND LABEL OUTPUT -- command...: one invocation and its checks.
# OUTPUT is the file or directory the command writes ("" for none).
run_one() {
  local case=$1 kind=$2 label=$3 out=$4
  shift 5
  [[ -e out.hdf5 || -e out.png || -e runout ]] && rm -rf out.hdf5 out.png runout
  invocations=$((invocations + 1))
  ASAN_OPTIONS="detect_leaks=1:log_path=$san/asan" UBSAN_OPTIONS="print_stacktrace=1:log_path=$san/ubsan" \
    timeout -k 5 20 "$@" </dev/null >stdout.txt 2>stderr.txt
  local rc=$?
  local why="" must_accept=0
  case "$kind:$label" in
    good:compare | good:compare-ref) ;;  # a good file may lack forces
    good:run) [ "$case" = hd_time_big ] || must_accept=1 ;;  # that one starts after t_end
    good:* | pair:*) must_accept=1 ;;
  esac
  if [ $rc -eq 124 ]; then why="hang (killed after 20 s)"
  elif [ $rc -ge 128 ]; then why="crash (exit $rc)"
  elif compgen -G "$san/*" >/dev/null; then why="sanitizer report: $(head -c 800 "$san"/* | tr '\n' ' ')"
  elif [ "$kind" = bad ] && [ $rc -eq 0 ]; then why="exit 0 on a bad file: $(head -c 200 stdout.txt | tr '\n' ' ')"
  elif [ $must_accept = 1 ] && [ $rc -ne 0 ]; then why="a valid file refused: $(head -c 300 stderr.txt)"
  elif [ $rc -ne 0 ] && [ -n "$out" ] && [ -e "$out" ]; then  # a run's directory too, even empty
    why="output left after a failure ($out$([ -d "$out" ] && ls -A "$out" | head -4 | sed 's/^/ /' | tr -d '\n')): $(head -c 300 stderr.txt)"
  elif [ $rc -ne 0 ] && ! has_error; then why="exit $rc without an error message: $(head -c 300 stderr.txt)"
  elif [ $rc -eq 0 ] && ! outputs_valid "$out"; then why="an output that banyan refuses to read: $(head -c 300 valid.txt)"
  elif [ $rc -eq 0 ] && non_finite_text stdout.txt runout/*.txt; then why="a non-finite number printed: $nf_line"
  elif [ $rc -eq 0 ] && [ "$out" = out.png ] && ! is_png out.png; then why="exit 0 and no PNG in out.png"
  fi
  if compgen -G "*.tmp.*" >/dev/null || compgen -G "runout/*.tmp.*" >/dev/null || compgen -G "cases/*.tmp.*" >/dev/null; then why="${why:+$why; }temporary files left"; fi
  local f stray=""
  for f in *; do
    case "$known out.hdf5 out.png runout " in *" $f "*) ;; *) stray="$stray $f" ;; esac
  done
  [ -z "$stray" ] || { why="${why:+$why; }files written outside its output:$stray"; rm -rf $stray; }
  [ -z "$why" ] || { rm -f "$san"/*; fail "$case ($kind) $label: $why"; }
}

# The command's message says "error" (read without a fork: the loop is
# most of what the test costs besides banyan itself).
has_error() {
  local msg=""
  IFS= read -r -d '' msg <stderr.txt
  [[ $msg == *error* ]]
}

# A "nan" or "inf" in what a successful command printed (stdout, a run's
# energy log): outputs are as valid as inputs. Sets nf_line.
non_finite_text() {
  local f line
  for f in "$@"; do
    [ -f "$f" ] || continue
    while IFS= read -r line || [ -n "$line" ]; do
      if [[ ${line,,} =~ (^|[^a-z0-9_])-?(nan|inf|infinity)([^a-z0-9_]|$) ]]; then
        nf_line="$f: $line"
        return 0
      fi
    done <"$f"
  done
  return 1
}

is_png() {
  local LC_ALL=C sig=""
  [ -f "$1" ] && IFS= read -r -n 4 sig <"$1"
  [[ $sig == $'\x89PNG' ]]
}

# Every snapshot an invocation wrote reads back (outputs are valid inputs).
outputs_valid() {
  local f
  [ -n "$1" ] || return 0
  for f in "$1" "$1"/*.hdf5 "$1"/*/*.hdf5; do
    [[ $f == *.hdf5 && -f $f ]] || continue
    [[ $f == */restart/* ]] && continue # restart files: read by run --restart (tests/cli_restart.sh), not info
    "$banyan" info "$f" >/dev/null 2>valid.txt || return 1
  done
  return 0
}


# command J (0..5) of the six besides info and forces --method direct
heavy() {
  local case=$1 kind=$2 f=$3
  case $4 in
    0) run_one "$case" "$kind" render out.png -- "$banyan" render "$f" -o out.png --size 32x32 ;;
    1) run_one "$case" "$kind" tree out.hdf5 -- "$banyan" forces "$f" -o out.hdf5 --backend cpu --leaf-size 4 ;;
    2) run_one "$case" "$kind" compare "" -- "$banyan" compare "$f" ref.hdf5 ;;
    3) run_one "$case" "$kind" compare-ref "" -- "$banyan" compare ref.hdf5 "$f" ;;
    5) run_one "$case" "$kind" convert out.hdf5 -- "$banyan" convert "$f" out.hdf5 ;;
    4) tiny_run_yml "$PWD/$f"
       run_one "$case" "$kind" run runout -- "$banyan" run run.yml -o runout -q ;;
  esac
}

sample=${FUZZ_SAMPLE:-1}
case $sample in '' | *[!0-9]*) echo "cli_fuzz: FUZZ_SAMPLE '$sample' is no count: every case"; sample=1 ;; esac
while read -r case kind desc; do
  f="cases/$case.hdf5"
  h=$(printf %s "$case" | cksum | cut -d' ' -f1)
  if [ "$sample" -gt 1 ] && [ "$kind" != good ] && [ "$kind" != pair ] && [ "${case#h_}" = "$case" ] &&
     [ $((h / 20 % sample)) -ne 0 ]; then
    continue # FUZZ_SAMPLE=k: one in k of the hostile cases (the valid ones and the huge counts always)
  fi
  run_one "$case" "$kind" info "" -- "$banyan" info "$f"
  run_one "$case" "$kind" forces out.hdf5 -- "$banyan" forces "$f" -o out.hdf5 --method direct --backend cpu
  if [ "${FUZZ_FULL:-0}" = 1 ] || { [ "$sample" -eq 1 ] &&
     { [ "$kind" = good ] || [ "$kind" = pair ] || [ "${case#h_}" != "$case" ]; }; }; then
    for j in 0 1 2 3 4 5; do heavy "$case" "$kind" "$f" $j; done
  elif [ "$sample" -gt 1 ] && { [ "$kind" = good ] || [ "$kind" = pair ] || [ "${case#h_}" != "$case" ]; }; then
    # sampled (the sanitizer pass): the valid ones and the huge counts through 3 of the 6 commands, by turns
    for j in 0 2 4; do heavy "$case" "$kind" "$f" $(((h + j) % 6)); done
  else
    heavy "$case" "$kind" "$f" $((h % 6))
    heavy "$case" "$kind" "$f" $(((h % 6 + 1 + h / 6 % 5) % 6))
  fi
done <cases/manifest.txt

sums >sums.after
diff sums.before sums.after >/dev/null || fail "inputs changed: $(diff sums.before sums.after | grep '^>' | head -5 | tr '\n' ' ')"

cases=$(wc -l <cases/manifest.txt)
echo "cli_fuzz: $cases cases (1 in $sample of the hostile ones run), $invocations invocations, $((SECONDS - start)) s"
if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "cli_fuzz: all checks passed"
