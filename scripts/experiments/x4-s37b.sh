#!/usr/bin/env bash
# Prepared in session 36, the second call after x4-s37.sh (issue 18, the
# same carry): weak Plummer and Hernquist on 2 GPUs with the boxes by size
# and bench's two cuts (the 2-GPU row is session 35's: 256 boxes, one
# cut), strong 2^27 on 2 (1024 boxes of 65536 bodies a rank; session 34:
# 166.7 ms with 256), M31's block steps on 1, 2 and 4 GPUs (256 boxes at 2
# M a rank).
#   bash scripts/experiments/x4-s37b.sh CARRY.tar.xz OUT   (banyan, tests/, lib/)
source "$(dirname "$0")/carried-env.sh"
source "$(dirname "$0")/x4-lib.sh"
runp 2 plummer2 "$B" --model plummer --n 67108864 --repeat 3 --steps 4
runp 2 hernquist2 "$B" --model hernquist --n 67108864 --repeat 3 --steps 4
runp 2 strong2 "$B" --model plummer --n 134217728 --repeat 3 --steps 4
gzip -f "$O"/*.err
PART_LIMIT=150 bash "$here/multi-gpu-session.sh" "$CARRY" "$O/g" "1 2 4" galaxy
