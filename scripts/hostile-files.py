"""The hostile snapshots of scripts/gpu-check.sh (the device may lack h5py):
far.hdf5, a valid file with one coordinate at 1e300 (forces on it cannot
be finite), and close.hdf5, two particles 1e-160 apart (without softening
their force overflows).   usage: hostile-files.py DIR"""
import os
import sys

import h5py
import numpy as np


def write(path, pos):
    n = len(pos)
    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        h.attrs["NumPart_ThisFile"] = np.array([0, n, 0, 0, 0, 0], dtype=np.uint32)
        h.attrs["MassTable"] = np.zeros(6)
        h.attrs["Time"] = 0.0
        g = f.create_group("PartType1")
        g["Coordinates"] = pos
        g["Velocities"] = np.zeros_like(pos)
        g["Masses"] = np.full(n, 1.0 / n)
        g["ParticleIDs"] = np.arange(1, n + 1, dtype=np.uint64)


pos = np.random.default_rng(3).normal(size=(1024, 3))
far = pos.copy()
far[3, 0] = 1e300
close = pos.copy()
close[8] = 0
close[9] = [1e-160, 0, 0]
os.makedirs(sys.argv[1], exist_ok=True)
write(os.path.join(sys.argv[1], "far.hdf5"), far)
write(os.path.join(sys.argv[1], "close.hdf5"), close)
