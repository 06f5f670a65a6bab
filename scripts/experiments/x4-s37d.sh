#!/usr/bin/env bash
# Session 37, the fourth 4-GPU call (issue 18): each rank's tree in a cell
# of the domains' cube (keys.h's bn_key_cube_in). Each rank's own key cube
# cut the domains' surfaces with its octants, so leaves there grew wider
# and the walks took more bodies one by one (dev, CPU, Plummer 2^20: 31%
# more pp on 2 ranks than on one; GPU, 4 ranks, 2^25 each: 1174 pp a
# particle against one GPU's 1069). In order of need:
#  1. every GPU test (gpu-verify.sh) and test_forces_dist on 4 ranks (its
#     new test_trees_aligned_gpu prints the ranks' pp over one GPU's);
#  2. weak Plummer and Hernquist on 4 GPUs (run 1: batch 82.2 / 84.6 ms),
#     their pp a particle;
#  3. the forces against direct summation on 1 and 4 GPUs (2^21);
#  4. weak Plummer and Hernquist on 2 GPUs, M31 on 4.
#   bash scripts/experiments/x4-s37d.sh CARRY.tar.xz OUT   (banyan, tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
verify_all
grep -h "pp of" "$O/fd4.log" "$O/v/fd2.log"
counts() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"  pp {r['pp_per_particle']:.1f}, pc {r['pc_per_particle']:.1f} a particle, LET bodies sent {r.get('step_let_bodies_sent', 0):.0f}, counted imbalance {r.get('step_cost_imbalance', 0)}\")" "$O/$1.out"; }
P4="--model plummer --n 134217728 --repeat 3 --steps 4"
run4 plummer4 "$B" $P4; counts plummer4
run4 hernquist4 "$B" --model hernquist --n 134217728 --repeat 3 --steps 4; counts hernquist4
PART_LIMIT=120 bash "$here/multi-gpu-session.sh" "$CARRY" "$O/g" "1 4" forces
runp 2 plummer2 "$B" --model plummer --n 67108864 --repeat 3 --steps 4; counts plummer2
runp 2 hernquist2 "$B" --model hernquist --n 67108864 --repeat 3 --steps 4; counts hernquist2
gzip -f "$O"/*.err
PART_LIMIT=100 bash "$here/multi-gpu-session.sh" "$CARRY" "$O/g" "4" galaxy
