#!/usr/bin/env bash
# A/B of the calls from host memory, interleaved on one machine (the
# device hosts' memory is noisy: only interleaved runs compare):
#   scripts/ab-calls.sh A_BINARY B_BINARY [ROUNDS]
# For each round, each binary: the mesh call (MacLaurin 2^24, theta 0.3,
# best of 4) and the particle call (Plummer 2^24 tuned, best of 3);
# prints one line per run: binary, case, call_best or t_call, solve.
set -u
A=$1 B=$2 ROUNDS=${3:-3}
mesh="--mesh maclaurin --levels 5 --min-level 5 --block 16 --theta 0.3 --repeat 4"
part="--model plummer --n 16777216 --theta 0.67 --mac bonsai-box --leaf-size 32 --group-size 256 --group-expansion 0.4 --repeat 3"
for r in $(seq "$ROUNDS"); do
    for bin in "$A" "$B"; do
        "$bin" bench --backend gpu --json $mesh 2>/dev/null |
            python3 -c "import json,sys; d=json.load(sys.stdin); print('$(basename "$bin") mesh call_best %.1f ms walk %.1f download %.1f' % (1e3*d['call_best'], 1e3*d['t_walk'], 1e3*d['t_download']))"
        "$bin" bench --backend gpu --json $part 2>/dev/null |
            python3 -c "import json,sys; d=json.load(sys.stdin); print('$(basename "$bin") particles t_call %.1f ms solve %.1f' % (1e3*d['t_call'], 1e3*d['t_total']))"
    done
done
