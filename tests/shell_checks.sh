# Sourced by the shell tests: their checks and their tiny run.
#   fail MESSAGE; expect_ok COMMAND...; expect_error "substring" OUTPUT -- COMMAND...
#   tiny_run_yml FILE: run.yml, two direct-summation steps from FILE, no other output
#   finish NAME: temporary files left fail; the summary line and the exit code
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_ok() { "$@" >stdout.txt 2>stderr.txt || fail "'$*' failed: $(cat stderr.txt)"; }
# non-zero exit, the message, no OUTPUT
expect_error() {
  local want="$1" out="$2"
  shift 3
  "$@" >stdout.txt 2>stderr.txt && fail "'$*' succeeded"
  grep -qF -- "$want" stderr.txt || fail "'$*': stderr lacks '$want': $(cat stderr.txt)"
  if [ -n "$out" ] && [ -e "$out" ]; then fail "'$*' left $out behind"; rm -f "$out"; fi
}

tiny_run_yml() {
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

finish() {
  local leftovers
  leftovers=$(ls -A | grep '\.tmp\.' || true)
  [ -z "$leftovers" ] || fail "temporary files left: $leftovers"
  if [ $failures -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
  fi
  echo "$1: all checks passed"
}
