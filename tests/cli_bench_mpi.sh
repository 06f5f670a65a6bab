#!/usr/bin/env bash
# banyan bench under mpirun (issue 18's scaling runs; CPU backend, ranks
# oversubscribed): every rank makes the model, keeps its slice and the
# domains are cut; the JSON says how many ranks, what the exchange moved,
# and the error over particles drawn from every rank against double
# direct summation over every rank's, which must be that of one process
# (p99 within 2x: the ranks' trees differ from the one tree); --steps
# with block steps across ranks, and the counted imbalance of the steps
# after the cuts by cost; --input across ranks; --device auto is taken;
# --mesh is refused across ranks.
set -u
source "$(dirname "$0")/mpi_test_setup.sh"
mpi_test_setup "$1"

field() { "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
B="bench --backend cpu --n 8192 --repeat 2 --check --json --device auto"
"$banyan" $B >one.json 2>one.err || fail "one process: $(cat one.err)"
for np in 2 3; do
  mpirun -np $np "$banyan" $B --steps 3 --time-bins 3 --eta 0.1 >r$np.json 2>r$np.err ||
    fail "$np ranks: $(cat r$np.err)"
  [ "$(field r$np.json ranks)" = "$np" ] || fail "$np ranks: the JSON says $(field r$np.json ranks) ranks"
  [ "$(field r$np.json n)" = 8192 ] || fail "$np ranks: n $(field r$np.json n)"
  p99=$(field r$np.json err_p99) one=$(field one.json err_p99)
  echo "$np ranks: p99 $p99 over 1000 particles of every rank (one process $one)"
  awk -v a="$p99" -v b="$one" 'BEGIN {exit !(a > 0 && a <= 2 * b && b <= 2 * a)}' ||
    fail "$np ranks: p99 $p99 against one process's $one"
  for k in let_cells_sent let_bodies_sent; do
    awk -v v="$(field r$np.json $k)" 'BEGIN {exit !(v > 0)}' || fail "$np ranks: $k is $(field r$np.json $k)"
  done
  awk -v t="$(field r$np.json t_exchange)" -v c="$(field r$np.json t_call)" -v m="$(field r$np.json t_call_min)" \
    'BEGIN {exit !(t > 0 && t <= c && m > 0 && m <= c)}' || fail "$np ranks: the exchange's or the calls' times"
  [ "$(field r$np.json steps)" = 3 ] || fail "$np ranks: steps"
  awk -v a="$(field r$np.json active_mean)" 'BEGIN {exit !(a > 0 && a <= 1)}' ||
    fail "$np ranks: active fraction $(field r$np.json active_mean)"
  awk -v a="$(field r$np.json step_cost_imbalance)" 'BEGIN {exit !(a >= 1 && a < 1.1)}' ||
    fail "$np ranks: the steps' counted imbalance $(field r$np.json step_cost_imbalance)"
done
# the second cut by cost (the default) evens the ranks' counted work
# that the first left apart (3 ranks, Plummer 2^15: 1.031, then 1.004)
P3="bench --backend cpu --n 32768 --repeat 1 --steps 2 --json"
BANYAN_BENCH_COST_CUTS=1 mpirun -np 3 "$banyan" $P3 >cuts1.json 2>cuts1.err || fail "3 ranks, one cut: $(cat cuts1.err)"
mpirun -np 3 "$banyan" $P3 >cuts2.json 2>cuts2.err || fail "3 ranks, the default cuts: $(cat cuts2.err)"
one_cut=$(field cuts1.json step_cost_imbalance) two_cuts=$(field cuts2.json step_cost_imbalance)
echo "3 ranks: counted imbalance $one_cut after one cut by cost, $two_cuts after two"
awk -v a="$one_cut" -v b="$two_cuts" 'BEGIN {exit !(b >= 1 && b < 1.01 && b < a)}' ||
  fail "3 ranks: two cuts by cost left $two_cuts (one: $one_cut)"
# the table names the ranks; --input is read by every rank
"$banyan" ic hernquist --n 6000 -o h.hdf5 2>/dev/null || fail "ic"
mpirun -np 2 "$banyan" bench --backend cpu --input h.hdf5 --repeat 1 >table.txt 2>table.err ||
  fail "--input over 2 ranks: $(cat table.err)"
grep -q "^ranks: 2, domains cut in" table.txt || fail "no ranks line: $(cat table.txt)"
grep -q "N = 6000" table.txt || fail "--input: $(head -2 table.txt)"
mpirun -np 2 "$banyan" bench --mesh --backend cpu >mesh.out 2>mesh.err && fail "--mesh over 2 ranks ran"
grep -q "runs in one process" mesh.err || fail "--mesh over 2 ranks: $(cat mesh.err)"
[ -s mesh.out ] && fail "--mesh refused but printed: $(cat mesh.out)"
[ $failures -eq 0 ] && echo "cli_bench_mpi: all passed"
exit $((failures > 0))
