#!/usr/bin/env bash
# Session 30's device call 5 (nvidia-h100-x4): M31 at 2^22 for 1 Gyr with
# refreshed trees under both criteria (GPUs 0-1), and each criterion
# against shared steps on Hernquist, Plummer and NFW at 2^20 (GPUs 2-3).
#   bash scripts/experiments/criterion-session30.sh DIR   (DIR: banyan, lib/)
D=$(cd "$1" && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
A="time_bins:8,dt:0.0078125"
GPUS="0 1" OUT=/tmp/m3 bash scripts/criterion-sweep.sh "$D/banyan" 4194304 1.0227 \
    dyn0.005r2=criterion:dynamical,eta:0.005,tree_rebuild:2,$A dyn0.005r0=criterion:dynamical,eta:0.005,tree_rebuild:0,$A \
    dyn0.007r2=criterion:dynamical,eta:0.007,tree_rebuild:2,$A acc0.2r2=criterion:acceleration,eta:0.2,tree_rebuild:2,$A \
    >/tmp/m3.out 2>&1 &
S="time_bins:6,dt:0.0625"
for m in hernquist plummer nfw; do
    echo "=== $m 2^20, t 2"
    GPUS="2 3" MODEL=$m OUT=/tmp/s_$m bash scripts/criterion-sweep.sh "$D/banyan" 1048576 2 \
        shared9=eta:0,time_bins:0,dt:0.001953125 shared10=eta:0,time_bins:0,dt:0.0009765625 \
        shared11=eta:0,time_bins:0,dt:0.00048828125 acc0.05=criterion:acceleration,eta:0.05,$S \
        acc0.1=criterion:acceleration,eta:0.1,$S acc0.2=criterion:acceleration,eta:0.2,$S \
        dyn0.0035=criterion:dynamical,eta:0.0035,$S dyn0.007=criterion:dynamical,eta:0.007,$S \
        dyn0.014=criterion:dynamical,eta:0.014,$S
done
wait
echo "=== M31 2^22 1 Gyr, refreshed trees"
cat /tmp/m3.out
