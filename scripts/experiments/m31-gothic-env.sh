# Sourced by session 32's M31 scripts (m31-steps-s32.sh, m31-steps-s32b.sh)
# with their DIR OUTDIR: the carried build's paths, the output folder
# entered, and GOTHIC's M31 at GOTHIC's accuracy (session 23's fastest
# settings at its p99: accel MAC alpha 0.0073, leaf 16, group 128, group
# expansion 1.0, softening 15.625 pc; 8 bins, dt 1/64, eta 0.2; `banyan
# run` to t = 0.25: 16 cycles): FAST (bench options), G and T (run's).
D=$(cd "$1" && pwd)
S=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) # run_summary.py
O=$(mkdir -p "$2" && cd "$2" && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
cd "$O" || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
FAST="--mac accel --alpha 0.0073 --leaf-size 16 --group-size 128 --group-expansion 1.0 --eps 0.015625"
G="-P Gravity:mac:accel -P Gravity:accel_alpha:0.0073 -P Gravity:leaf_size:16 -P Gravity:group_size:128
   -P Gravity:group_expansion:1.0 -P Gravity:softening:0.015625"
T="-P TimeIntegration:time_bins:8 -P TimeIntegration:dt:0.015625 -P TimeIntegration:eta:0.2
   -P TimeIntegration:t_end:0.25 -P Snapshots:render:no -P Snapshots:final:no -P Restart:interval:0
   -P Statistics:interval:0.25"
