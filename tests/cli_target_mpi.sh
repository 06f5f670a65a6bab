#!/usr/bin/env bash
# The error target under mpirun (CPU backend, ranks oversubscribed):
# banyan forces --error-target with 2 and 3 ranks meets the target over
# every particle against one process's double direct summation, reports
# its choice as one process does and writes it into the snapshot; the
# same choice, bit for bit, when run again (counted work: a deterministic
# search); banyan run with Gravity:error_target and periodic checks over
# 3 ranks logs the choice and the checks.
set -u
source "$(dirname "$0")/mpi_test_setup.sh"
mpi_test_setup "$1"

target=2e-3
p99() { "$banyan" compare "$1" "$2" --json | "$py" -c '
import json, sys
print(json.load(sys.stdin)["acc_rel_error"]["p99"])'; }

"$banyan" ic plummer --n 4000 -o pl.hdf5 2>/dev/null || fail "ic"
"$banyan" forces pl.hdf5 -o direct.hdf5 --method direct --backend cpu 2>/dev/null || fail "direct, one process"
"$banyan" forces pl.hdf5 -o one.hdf5 --backend cpu --error-target $target --error-cost work 2>one.err ||
  fail "error target, one process: $(cat one.err)"
one=$(p99 one.hdf5 direct.hdf5)
for np in 2 3; do
  mpirun -np $np "$banyan" forces pl.hdf5 -o t$np.hdf5 --backend cpu --error-target $target --error-cost work \
    2>t$np.err || fail "error target, $np ranks: $(cat t$np.err)"
  grep -q "^  error target 0.002: .* theta .* on 512 sampled targets" t$np.err ||
    fail "$np ranks: no choice reported: $(cat t$np.err)"
  got=$(p99 t$np.hdf5 direct.hdf5)
  echo "error target $target: p99 over every particle $got with $np ranks, $one in one process"
  awk -v a="$got" -v b="$one" -v e="$target" 'BEGIN {exit !(a > 0 && a <= e && a <= 2 * b && b <= 2 * a)}' ||
    fail "$np ranks: p99 $got against the target $target and one process's $one"
  "$banyan" info t$np.hdf5 >info$np.txt 2>&1 || fail "info t$np.hdf5"
  grep -q "ErrorTarget 0.002 (the settings above are its choice)" info$np.txt ||
    fail "$np ranks: the choice not in the snapshot: $(cat info$np.txt)"
done
# the same ranks, the same choice and error (counted work: no timing in it)
mpirun -np 3 "$banyan" forces pl.hdf5 -o again.hdf5 --backend cpu --error-target $target --error-cost work \
  2>again.err || fail "error target, 3 ranks again: $(cat again.err)"
choice() { grep "^  error target" "$1" | sed 's/(.*//'; }
[ -n "$(choice t3.err)" ] && [ "$(choice t3.err)" = "$(choice again.err)" ] ||
  fail "3 ranks twice: '$(choice t3.err)' then '$(choice again.err)'"

# banyan run: the search before the first step, checks every 3 steps
timeout 120 mpirun -np 3 "$banyan" run -P InitialConditions:n:2000 -P Gravity:backend:cpu -P Snapshots:render:no \
  -P TimeIntegration:dt:0.01 -P TimeIntegration:t_end:0.1 -P Gravity:error_target:$target \
  -P Gravity:error_cost:work -P Gravity:error_check_interval:3 -o run >run.out 2>run.err ||
  fail "run with an error target over 3 ranks: $(cat run.err)"
grep -q "^# error target 0.002" run/energy.txt || fail "run: energy.txt lacks the error target's header"
grep -q "error target 0.002: .* theta" run.out || fail "run: no choice reported: $(cat run.out)"
grep -Eq "[1-9][0-9]* checks of the error" run.out || fail "run: no checks: $(cat run.out)"
grep -q "error_target: 0.002" run/used_parameters.yml || fail "run: used_parameters.yml lacks the target"
"$banyan" info run/snapshot_0000.hdf5 2>&1 | grep -q "ErrorTarget 0.002 (the settings above are its choice)" ||
  fail "run: the choice not in the snapshot"

[ $failures -eq 0 ] && echo "cli_target_mpi: all passed"
exit $((failures > 0))
