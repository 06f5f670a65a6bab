#!/usr/bin/env bash
# Issue 19's disk-evolution check at any size: GOTHIC's M31 at N particles
# (equal masses), run for T time units (kpc / (km/s) = 0.9778 Gyr: 1 Gyr
# is 1.0227) with block time steps, and each component's Lagrangian radii
# (10/50/90%), the disk's scale height and Q at R_d at the start and the
# end (banyan galaxy-shape), with their relative drifts.
#   usage: scripts/galaxy-evolution.sh BANYAN N T [extra banyan run -P options]
# e.g. scripts/galaxy-evolution.sh build/banyan 262144 1.0227 -P Gravity:backend:gpu
# Two-body heating of the disk by the halo particles grows as T ln N / N
# (test_galaxy_evolution.c says why): a drift at N shrinks by about
# (N ln N') / (N' ln N) at N'. Softening 0.1 kpc unless given: below 2^20
# particles smaller softening only adds two-body noise. Output in a
# temporary directory, removed at the end (KEEP=1 keeps it).
set -eu
[ $# -ge 3 ] || { sed -n 2,15p "$0"; exit 2; }
banyan="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
n="$2" t="$3"
shift 3
dir="$(mktemp -d)"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$banyan" ic galaxy --model m31 --n "$n" -s 1 -o ic.hdf5 2>ic.log
# a cycle of 1/128 (7.6 Myr) in 8 bins down to 30 kyr, eta 0.3
"$banyan" run -P InitialConditions:file:ic.hdf5 -P TimeIntegration:t_end:"$t" \
  -P TimeIntegration:dt:0.0078125 -P TimeIntegration:eta:0.3 -P TimeIntegration:time_bins:8 \
  -P Gravity:softening:0.1 -P Snapshots:render:no -P Snapshots:final:yes -P Statistics:interval:0 -q \
  "$@" -o run 2>run.log || { cat run.log; exit 1; }
"$banyan" galaxy-shape ic.hdf5 --model m31 >start.txt
"$banyan" galaxy-shape run/snapshot_0000.hdf5 --model m31 >end.txt
echo "M31, N = $n ($(sed -n 's/.*(\(halo .*\); seed.*/\1/p' ic.log)), T = $t; energy error at the end:" \
  "$(awk '!/^#/ {e = $5} END {print e}' run/energy.txt)"
printf '%-20s %12s %12s %9s\n' quantity start end drift
paste start.txt end.txt | awk '$1 != "q_ring_n" {
  d = $2 != 0 ? ($4 - $2) / $2 : 0; printf "%-20s %12.5g %12.5g %8.1f%%\n", $1, $2, $4, 100 * d }
  $1 == "q_ring_n" { printf "%-20s %12d %12d\n", "disk_in_Q_ring", $2, $4 }'
