#!/usr/bin/env bash
# The crossers' move on the GPU, new against old, in one device call:
# `banyan run` on 2 and 3 ranks sharing the GPU (the link's host path)
# or a GPU each (NCCL), shared steps and block steps, 16 steps of Plummer
# 2^18 with long steps (many crossers). The energy rows of DIR/banyan
# and OLD must be the same bit for bit with the same cut weights
# (BANYAN_COST_VISIT=0: the old binary's), since the next build sorts
# the particles by key whatever order the move leaves them in; then the
# new binary with its own weights, beside them. A line per run.
#   scripts/migrate-ab.sh DIR OLD OUT   (DIR: banyan, lib/)
set -u
DIR=$(cd "$1" && pwd)
OLD=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
O=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O"
export LD_LIBRARY_PATH=$DIR/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source "$here/device-mpi-env.sh"
cd "$O" || exit 1
base="-P InitialConditions:n:262144 -P Gravity:backend:gpu -P Snapshots:render:no -P Statistics:interval:0.03125
  -P TimeIntegration:t_end:0.5 -P TimeIntegration:dt:0.03125"
block="-P TimeIntegration:time_bins:4 -P TimeIntegration:eta:0.05"
same() { # A B: whether every energy row is the same
    python3 - "$1" "$2" <<'PY'
import sys
def rows(d):
    try:
        return [l.split() for l in open(d + "/energy.txt") if not l.startswith("#")]
    except OSError:
        return []
a, b = rows(sys.argv[1]), rows(sys.argv[2])
if not a or not b:
    print("no energy rows"); sys.exit()
rel = max(abs(float(y[3]) - float(x[3])) / abs(float(x[3])) for x, y in zip(a, b))
bits = len(a) == len(b) and all(x[:7] == y[:7] for x, y in zip(a, b))  # the energies; the wall time is not
print(f"{len(a)} / {len(b)} rows, same bits {bits}, total energies {rel:.2e} apart, energy error "
      f"{abs(float(b[-1][3]) - float(b[0][3])) / abs(float(b[0][3])):.2e}")
PY
}
M="timeout 300 mpirun --bind-to none"
for np in 2 3; do
    for kind in shared block; do
        opts=$base
        [ $kind = block ] && opts="$base $block"
        # shellcheck disable=SC2086
        BANYAN_COST_VISIT=0 $M -np $np "$OLD" run $opts -q -o old-$np-$kind >old-$np-$kind.out 2>&1 ||
            echo "FAIL: old, $np ranks, $kind: $(tail -2 old-$np-$kind.out)"
        # shellcheck disable=SC2086
        BANYAN_COST_VISIT=0 BANYAN_GRAVITY_TRACE=1 $M -np $np "$DIR/banyan" run $opts -q -o new-$np-$kind \
            >new-$np-$kind.out 2>new-$np-$kind.err || echo "FAIL: new, $np ranks, $kind: $(tail -2 new-$np-$kind.err)"
        # shellcheck disable=SC2086
        $M -np $np "$DIR/banyan" run $opts -q -o visit-$np-$kind >visit-$np-$kind.out 2>&1 ||
            echo "FAIL: new with the visits' weight, $np ranks, $kind: $(tail -2 visit-$np-$kind.out)"
        echo "$np ranks, $kind steps: new against old: $(same old-$np-$kind new-$np-$kind); with the visits' weight:" \
            "$(same old-$np-$kind visit-$np-$kind)"
        grep -h "trace: crossers" new-$np-$kind.err | sed -E 's/^gravity trace: (crossers: [^0-9]*[^ 0-9]) +([0-9.]+) ms.*/\1|\2/' |
            awk -F'|' '{s[$1]+=$2; c[$1]++} END {for (k in s) printf "    %s: %.2f ms a call (%d calls)\n", k, s[k]/c[k], c[k]}'
        grep -h "ranks:" new-$np-$kind.out | head -2 | sed 's/^/    /'
    done
done
