#!/usr/bin/env bash
# Block steps' walk with the groups per warp chosen from the active count
# on the device (BANYAN_WALK_ACTIVE_ADAPT=1, the default) against every
# group's count (=0): M31 at 2^24 (session 23's fastest settings at
# GOTHIC's accuracy) and Hernquist, mean block step over 64 steps (the
# tree rebuilt every step, and the counted self-tuned rule), each order
# twice; then one traced run each at interval 4 (scripts/tuner-trace.sh).
#   scripts/walk-adapt-ab.sh BANYAN [N]
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-16777216}
SCRIPTS=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out-walk-adapt}
mkdir -p "$OUT" && cd "$OUT" || exit 1
"$BIN" ic galaxy --model m31 --n "$N" -o m31.hdf5 >ic.log 2>&1 || { echo "FAIL: ic galaxy"; exit 1; }
M31="--input m31.hdf5 --mac accel --alpha 0.0073 --leaf-size 16 --group-size 128 --group-expansion 1.0 --time-bins 8 --dt 0.015625 --eta 0.2 --eps 0.015625"
HQ="--model hernquist --n $N --theta 0.67 --mac bonsai-box --leaf-size 32 --group-size 256 --group-expansion 0.4 --time-bins 6 --dt 0.0625 --eta 0.1"
for rep in 1 2; do
    for adapt in 1 0; do
        for rb in "--tree-rebuild 1" "--tree-rebuild 0 --rebuild-cost work"; do
            for m in M31 HQ; do
                eval args=\$$m
                r=$(BANYAN_WALK_ACTIVE_ADAPT=$adapt timeout 120 "$BIN" bench --backend gpu --repeat 1 --steps 64 $rb $args 2>&1 |
                    grep -E "^(time steps|the next|block steps)" | sed -E 's/.*mean ([0-9.]+) s.*/\1/; s/.*active fraction ([0-9.]+), ([0-9]+) tree builds.*/\1 \2/' | tr '\n' ' ')
                echo "$m adapt=$adapt $rb: $r" | tee -a ab.txt
            done
        done
    done
done
for adapt in 1 0; do
    BANYAN_WALK_ACTIVE_ADAPT=$adapt OUT=$OUT/trace$adapt MODELS=m31 "$SCRIPTS/tuner-trace.sh" "$BIN" "$N" 4 >/dev/null 2>&1
    echo "trace adapt=$adapt" && cat trace$adapt/table.txt
done
rm -f m31.hdf5
