#!/usr/bin/env bash
# Session 36's third 4-GPU call (issue 18), weak Plummer 2^25 a GPU:
#  1. the crossers' search split (BANYAN_GRAVITY_TRACE=2: the device's
#     queue before it, the kicks and the drift, waited for apart);
#  2. finer target boxes (BANYAN_LET_BOXES 1024, 4096; default 256): rank
#     3 receives 23 M bodies (the others 2-5 M) and its received walk is
#     the slowest (17 ms main pass for a third of the others' pp); sessions
#     21-22 found no gain when the received walk took 34-68 ms;
#  3. 4096 boxes with the cut by measured time, and Hernquist.
#   bash scripts/experiments/x4-s36c.sh CARRY.tar.xz OUT   (banyan, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
P4="--model plummer --n 134217728 --repeat 3 --steps 4"
H4="--model hernquist --n 134217728 --repeat 3 --steps 4"
(export BANYAN_GRAVITY_TRACE=2; run4 plummer4-tl "$B" $P4)
python3 "$here/experiments/timeline.py" "$O/plummer4-tl.err" 1 | grep -E "host|crossers"
received() { # LOG: the bodies each rank received at the last call
    python3 - "$O/$1.err" <<'PY'
import re, sys, collections
b = collections.defaultdict(list)
for l in open(sys.argv[1], errors="replace"):
    m = re.match(r"gravity count: received walk: source bodies\s+(\d+) \[rank (\d)\]", l)
    if m: b[int(m.group(2))].append(int(m.group(1)))
print("  bodies received, last call: " + ", ".join(f"rank {r} {v[-1]/1e6:.1f} M" for r, v in sorted(b.items())))
PY
}
for nb in 1024 4096; do
    (export BANYAN_LET_BOXES=$nb; run4 plummer4-b$nb "$B" $P4)
    received plummer4-b$nb
done
(export BANYAN_LET_BOXES=4096; run4 plummer4-b4096-time "$B" $P4 --balance-cost time)
(export BANYAN_LET_BOXES=4096; run4 hernquist4-b4096 "$B" $H4)
received hernquist4-b4096
gzip -f "$O"/*.err
