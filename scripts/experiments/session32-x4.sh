#!/usr/bin/env bash
# For the next session's first device call (nvidia-h100-x4, about 420 s):
# the GPU tests of session 31's last commits (f0204be, 6545faf: the
# self-tuned rule's mends, host code not yet run on a GPU), then issue
# 19's check of the self-tuned default against rebuilding at every step
# on its five models at 2^22 (scripts/rebuild-rules-check.sh). Then, on
# an H100: scripts/experiments/m31-steps-s32.sh (M31 at 2^24 and 2^23).
#   bash scripts/experiments/session32-x4.sh DIR OUTDIR   (DIR: banyan, tests/, lib/)
D=$(cd "$1" && pwd)
O=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
timeout 250 bash "$here/gpu-verify.sh" "$D" /tmp/gv 2>&1 | tail -30
timeout 340 bash "$here/rebuild-rules-check.sh" "$D" "$O/rules" 2>&1 | tail -30
