#!/usr/bin/env bash
# banyan bench: help, usage errors (exit 2), library errors (exit 1), the
# table and the JSON object (parsed by python3 when present), with --check
# errors that a tree code at theta 0.5 must meet.
set -u
banyan="$1"
[ -x "$banyan" ] || { echo "FAIL: no banyan program at $1"; exit 1; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

"$banyan" bench --help >"$out" 2>&1 || fail "bench --help exited non-zero"
grep -q -- "--check" "$out" || fail "bench --help does not describe --check"

for bad in "--n 0" "--model nope" "--repeat 0" "--theta x" "extra"; do
  # shellcheck disable=SC2086
  "$banyan" bench $bad >"$out" 2>&1
  rc=$?
  [ $rc -eq 2 ] || fail "bench $bad exited $rc, expected 2: $(cat "$out")"
done
# numbers cut short (issue 15): every integer option range-checked before it
# is narrowed to int, refused with its range; counts that cannot run for ever
for bad in "--leaf-size 0|--leaf-size must be an integer in [1, 1024], got '0'" \
           "--leaf-size 4294967312|--leaf-size must be an integer in [1, 1024]" \
           "--group-size 4294967297|--group-size must be an integer in [1, 4096], got '4294967297'" \
           "--device -1|--device must be an integer in [0, 1023], got '-1'" \
           "--error-sample 99999999999|--error-sample must be an integer in [16, 1000000]" \
           "--repeat 4294967297|--repeat must be an integer in [1, 10000], got '4294967297'" \
           "--steps 4294967297|--steps must be an integer in [0, 1000000]" \
           "--time-bins 4294967298|--time-bins must be an integer in [0, 30]" \
           "--tree-rebuild 99999999999999999999|--tree-rebuild must be an integer in [0, 1000000000]" \
           "--seed -1|--seed must be an integer in [0, 18446744073709551615]" \
           "--n 2^63|--n: exponent in '2^63' must be in [0, 62]" \
           "--steps -1|--steps must be an integer in [0, 1000000], got '-1'" \
           "--repeat 99999999999999999999|--repeat must be an integer in [1, 10000]" \
           "--tree-rebuild -1|--tree-rebuild must be an integer in [0, 1000000000], got '-1'" \
           "--seed 18446744073709551616|--seed must be an integer in [0, 18446744073709551615]" \
           "--n 4611686018427387905|--n must be a count in [1, 2^62] (2^k accepted), got '4611686018427387905'" \
           "--n 2^-1|--n: exponent in '2^-1' must be in [0, 62]" \
           "--dt 0|--dt must be a finite number > 0, got '0'" \
           "--eta -1|--eta must be a finite number >= 0, got '-1'" \
           "--theta 3|--theta must be a number in [0, 2], got '3'" \
           "--eps 1e-400|--eps: '1e-400' is below the smallest positive double" \
           "--eps 1e400|--eps expects a finite number"; do
  args=${bad%%|*} want=${bad#*|}
  # shellcheck disable=SC2086
  "$banyan" bench --n 64 $args >"$out" 2>&1
  rc=$?
  [ $rc -eq 2 ] && grep -qF -- "$want" "$out" || fail "bench $args (exit $rc): $(cat "$out")"
done
# a count larger than memory: refused by the library, naming the count
"$banyan" bench --n 2^39 >"$out" 2>&1
[ $? -eq 1 ] && grep -q "549755813888 particles would need" "$out" || fail "bench --n 2^39: $(cat "$out")"
# denormal numbers are numbers: --alpha 1e-310 runs
"$banyan" bench --backend cpu --n 256 --repeat 1 --mac accel --alpha 1e-310 >"$out" 2>&1 \
  || fail "bench --alpha 1e-310 (a denormal): $(cat "$out")"
"$banyan" bench --backend cpu --n 64 --repeat 1 --steps 1 --dt 1e-310 >"$out" 2>&1 \
  || fail "bench --dt 1e-310 (a denormal): $(cat "$out")"

"$banyan" bench --backend cpu --n 4096 --repeat 1 --check >"$out" 2>&1 || fail "bench table: $(cat "$out")"
for word in "stage times" "interactions per particle" "rates" "relative acceleration error"; do
  grep -q "$word" "$out" || fail "bench table lacks '$word': $(cat "$out")"
done

"$banyan" bench --backend cpu --model hernquist --n 4096 --repeat 2 --check --json >"$out" 2>&1 || fail "bench --json: $(cat "$out")"
if command -v python3 >/dev/null; then
  python3 - "$out" <<'PY' || fail "bench --json: $(cat "$out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["n"] == 4096 and d["backend"] == "cpu" and d["model"] == "hernquist", d
assert d["t_walk"] > 0 and d["t_total"] >= d["t_walk"], d
assert 100 < d["pp_per_particle"] < 4096 and 100 < d["pc_per_particle"] < 4096, d
assert 0 < d["err_p50"] < 2e-4 and d["err_p99"] < 2e-3, d
PY
fi

# a bad --balance-cost is refused naming the option, before any work
"$banyan" bench --backend cpu --n 1024 --balance-cost fast >"$out" 2>&1 && fail "bench --balance-cost fast: accepted"
grep -q -- "--balance-cost: unknown cost 'fast'" "$out" || fail "bench --balance-cost fast: $(cat "$out")"

# --error-target: the choice printed, then timed; the check (other targets)
# meets the target; an explicit --theta keeps its value
"$banyan" bench --backend cpu --n 8192 --repeat 1 --check --error-target 1e-3 --error-cost work --json >"$out" 2>&1 \
  || fail "bench --error-target: $(cat "$out")"
if command -v python3 >/dev/null; then
  python3 - "$out" <<'PY' || fail "bench --error-target --json: $(cat "$out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["error_target"] == 1e-3 and d["tune_met"] == 1 and d["tune_evaluations"] > 3, d
assert d["tune_p99"] <= 0.75e-3 and d["err_p99"] <= 1e-3, d
PY
fi
"$banyan" bench --backend cpu --n 4096 --repeat 1 --error-target 1e-3 --theta 0.3 >"$out" 2>&1 \
  || fail "bench --error-target --theta: $(cat "$out")"
grep -q "theta 0.3," "$out" && grep -q "chosen for error target 0.001" "$out" \
  || fail "bench --error-target --theta 0.3 did not keep theta: $(cat "$out")"
"$banyan" bench --n 1000 --error-target 2 >"$out" 2>&1
[ $? -eq 2 ] && grep -qF -- "--error-target must be a number in [0, 1), got '2'" "$out" \
  || fail "bench --error-target 2: $(cat "$out")"
# below what the sample can tell: the library's own check, naming the parameter
"$banyan" bench --n 1000 --error-target 1e-9 >"$out" 2>&1
[ $? -eq 1 ] && grep -q "error_target 1e-09 is below what the sample can tell" "$out" \
  || fail "bench --error-target 1e-9: $(cat "$out")"

[ $failures -eq 0 ] && echo "cli_bench: all passed"
exit $((failures > 0))
