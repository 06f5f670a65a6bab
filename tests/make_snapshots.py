"""Snapshots for the shell tests, written with h5py (not with banyan).

usage: make_snapshots.py DIR              good.hdf5 and one bad file per defect
       make_snapshots.py perturb IN OUT   OUT = IN with particles shuffled,
                                          Acceleration x 1.001, Potential x 1.002
       make_snapshots.py retag IN OUT     OUT = IN with one ParticleIDs changed
       make_snapshots.py zeroacc IN OUT   OUT = IN with particle 3's Acceleration 0
       make_snapshots.py zeropot IN OUT   OUT = IN with particle 8's Potential 0
       make_snapshots.py tinyacc IN OUT   OUT = IN with particle 5's Acceleration 1e-310
       make_snapshots.py pngsize PNG      print "W H" from the PNG header
"""
import os
import shutil
import struct
import sys

import h5py
import numpy as np

N = 100


def write(path, pos, vel, ids, mass, header_n=None):
    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        h.attrs["NumPart_ThisFile"] = np.array([0, header_n if header_n is not None else len(pos), 0, 0, 0, 0],
                                               dtype=np.uint32)
        h.attrs["MassTable"] = np.zeros(6)
        h.attrs["Time"] = 0.0
        h.attrs["NumFilesPerSnapshot"] = 1
        g = f.create_group("PartType1")
        if pos is not None:
            g["Coordinates"] = pos
        g["Velocities"] = vel
        g["ParticleIDs"] = ids
        g["Masses"] = mass


def good_arrays():
    rng = np.random.default_rng(42)
    pos = rng.normal(size=(N, 3))
    vel = 0.1 * rng.normal(size=(N, 3))
    ids = np.arange(1, N + 1, dtype=np.uint64)
    mass = np.full(N, 1.0 / N)
    return pos, vel, ids, mass


def make_all(d):
    pos, vel, ids, mass = good_arrays()
    write(os.path.join(d, "good.hdf5"), pos, vel, ids, mass)
    write(os.path.join(d, "no_coords.hdf5"), None, vel, ids, mass, header_n=N)
    write(os.path.join(d, "coords_n2.hdf5"), pos[:, :2], vel, ids, mass)
    write(os.path.join(d, "mass_short.hdf5"), pos, vel, ids, mass[:-1])
    v = vel.copy()
    v[7, 1] = np.nan
    write(os.path.join(d, "vel_nan.hdf5"), pos, v, ids, mass)
    p = pos.copy()
    p[3, 0] = np.inf
    write(os.path.join(d, "pos_inf.hdf5"), p, vel, ids, mass)
    m = mass.copy()
    m[11] = -1.0
    write(os.path.join(d, "neg_mass.hdf5"), pos, vel, ids, m)
    write(os.path.join(d, "zero_mass.hdf5"), pos, vel, ids, np.zeros(N))
    # every mass finite, their sum overflows to inf
    write(os.path.join(d, "inf_mass.hdf5"), pos, vel, ids, np.full(N, 1e308))
    with open(os.path.join(d, "not_hdf5.hdf5"), "w") as f:
        f.write("GADGET? no, just text\n")
    make_issue15(d, pos, vel, ids, mass)


def with_header(path, **attrs):
    with h5py.File(path, "r+") as f:
        for k, v in attrs.items():
            f["Header"].attrs[k] = v


def make_issue15(d, pos, vel, ids, mass):
    """Hostile files of issue 15, and valid ones that were refused."""
    i = ids.copy()
    i[40] = i[12]
    write(os.path.join(d, "dup_ids.hdf5"), pos, vel, i, mass)
    for name, attrs in (("time_nan", {"Time": np.nan}), ("time_minf", {"Time": -np.inf}),
                        ("nfiles_zero", {"NumFilesPerSnapshot": 0}),
                        ("total_wrong", {"NumPart_Total": np.array([0, N + 5, 0, 0, 0, 0], dtype=np.uint32)})):
        path = os.path.join(d, name + ".hdf5")
        write(path, pos, vel, ids, mass)
        with_header(path, **attrs)
    # 2^61 rows stored sparse (chunked, never written): a file of a few KB
    with h5py.File(os.path.join(d, "huge.hdf5"), "w") as f:
        f.create_group("Header").attrs["Time"] = 0.0
        g = f.create_group("PartType1")
        for k, shape in (("Coordinates", (2**61, 3)), ("Velocities", (2**61, 3)),
                         ("Masses", (2**61,)), ("ParticleIDs", (2**61,))):
            g.create_dataset(k, shape=shape, dtype="u8" if k == "ParticleIDs" else "f8",
                             chunks=(1024,) + shape[1:])
    # valid: a str attribute as h5py writes it (variable-length UTF-8)
    write(os.path.join(d, "utf8.hdf5"), pos, vel, ids, mass)
    with h5py.File(os.path.join(d, "utf8.hdf5"), "r+") as f:
        f.create_group("Parameters").attrs["Method"] = "direct"
    # valid file, but forces on it overflow: one coordinate at 1e300
    p = pos.copy()
    p[3, 0] = 1e300
    write(os.path.join(d, "far.hdf5"), p, vel, ids, mass)


def zeroacc(src, dst):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        f["PartType1/Acceleration"][3] = 0.0


def zeropot(src, dst):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        f["PartType1/Potential"][8] = 0.0


def tinyacc(src, dst):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        f["PartType1/Acceleration"][5] = 1e-310


def perturb(src, dst):
    with h5py.File(src, "r") as f:
        data = {k: f["PartType1"][k][()] for k in f["PartType1"]}
        header = dict(f["Header"].attrs)
    order = np.random.default_rng(7).permutation(len(data["ParticleIDs"]))
    with h5py.File(dst, "w") as f:
        h = f.create_group("Header")
        for k, v in header.items():
            h.attrs[k] = v
        g = f.create_group("PartType1")
        for k, v in data.items():
            v = v[order]
            if k == "Acceleration":
                v = v * 1.001
            if k == "Potential":
                v = v * 1.002
            g[k] = v


def retag(src, dst):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        ids = f["PartType1/ParticleIDs"]
        ids[5] = 999999


def pngsize(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    w, h = struct.unpack(">II", head[16:24])
    print(w, h)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "perturb":
        perturb(sys.argv[2], sys.argv[3])
    elif cmd == "retag":
        retag(sys.argv[2], sys.argv[3])
    elif cmd == "zeroacc":
        zeroacc(sys.argv[2], sys.argv[3])
    elif cmd == "zeropot":
        zeropot(sys.argv[2], sys.argv[3])
    elif cmd == "tinyacc":
        tinyacc(sys.argv[2], sys.argv[3])
    elif cmd == "pngsize":
        pngsize(sys.argv[2])
    else:
        make_all(cmd)
