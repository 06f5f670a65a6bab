"""yt must open banyan's snapshots as GADGET HDF5 data (not SWIFT).

usage: /usr/bin/python3 yt_open.py SNAP.hdf5 REF.hdf5
SNAP was written by banyan; REF is the h5py-made file it came from. yt's
particle count, total mass, positions and ids must match REF's.
"""
import sys

import h5py
import numpy as np
import yt

yt.set_log_level(40)
snap, ref = sys.argv[1], sys.argv[2]

ds = yt.load(snap)
kind = type(ds).__name__
assert kind == "GadgetHDF5Dataset", f"yt opened {snap} as {kind}, expected GadgetHDF5Dataset"
assert not ds.cosmological_simulation, "yt thinks the run is cosmological"

with h5py.File(ref, "r") as f:
    ref_pos = f["PartType1/Coordinates"][()]
    ref_mass = f["PartType1/Masses"][()]
    ref_ids = f["PartType1/ParticleIDs"][()].astype(np.int64)

ad = ds.all_data()
ids = ad["all", "particle_index"].d.astype(np.int64)
mass = ad["all", "particle_mass"].to("code_mass").d
pos = ad["all", "particle_position"].to("code_length").d

assert len(ids) == len(ref_ids), f"yt sees {len(ids)} particles, expected {len(ref_ids)}"
assert np.isclose(mass.sum(), ref_mass.sum(), rtol=1e-12, atol=0), (mass.sum(), ref_mass.sum())
order, ref_order = np.argsort(ids), np.argsort(ref_ids)
assert np.array_equal(ids[order], ref_ids[ref_order]), "particle ids differ"
assert np.allclose(pos[order], ref_pos[ref_order], rtol=1e-14, atol=0), "positions differ"
assert np.allclose(mass[order], ref_mass[ref_order], rtol=1e-14, atol=0), "masses differ"
print(f"yt {yt.__version__} opened {snap} as {kind}: {len(ids)} particles, total mass {mass.sum():.6g}")
