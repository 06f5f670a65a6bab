#!/usr/bin/env bash
# For session 31's first device call (nvidia-h100-x4 or -h200-x4, about
# 400 s): what session 30 left to measure on M31 at 2^22 for 1 Gyr, each
# run alone on its GPU (criterion-sweep.sh, one energy row at T):
#  - the shared steps again without a wait at every step (session 30's
#    logged energy at every step): dt 2^-13 and 2^-14 (GPUs 0, 1);
#  - the self-tuned rule with the length-weighted lead (cfb57ae), at the
#    dynamical criterion's eta 0.005 (session 30: 137.2 s, 1.617e-4
#    against 99.6 s, 1.515e-5 every other step) and 0.01 (GPU 2);
#  - the block steps of session 30's best rows again, for the same
#    machine: dynamical 0.005 and 0.007, every other step (GPU 3);
#  - the self-tuned rule weighing measured times instead of counted work
#    (rebuild_cost time), at eta 0.005 and 0.01 (GPUs 3, 1): does the
#    counted work miss the refreshed walks' time?
#   bash scripts/experiments/criterion-session31.sh DIR   (DIR: banyan, lib/)
D=$(cd "$1" && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
A="time_bins:8,dt:0.0078125"
OUT=${RESULTS:-/tmp/s31} bash scripts/criterion-sweep.sh "$D/banyan" 4194304 1.0227 \
    0:shared14=eta:0,time_bins:0,dt:0.00006103515625 1:shared13=eta:0,time_bins:0,dt:0.0001220703125 \
    2:dyn0.005r0=criterion:dynamical,eta:0.005,tree_rebuild:0,$A 3:dyn0.005r2=criterion:dynamical,eta:0.005,tree_rebuild:2,$A \
    2:dyn0.01r0=criterion:dynamical,eta:0.01,tree_rebuild:0,$A 3:dyn0.007r2=criterion:dynamical,eta:0.007,tree_rebuild:2,$A \
    1:dyn0.007=criterion:dynamical,eta:0.007,$A \
    3:dyn0.005r0t=criterion:dynamical,eta:0.005,tree_rebuild:0,rebuild_cost:time,$A \
    1:dyn0.01r0t=criterion:dynamical,eta:0.01,tree_rebuild:0,rebuild_cost:time,$A
