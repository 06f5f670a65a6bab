"""yt must open banyan's snapshots as GADGET HDF5 data (not SWIFT).

usage: /usr/bin/python3 yt_open.py SNAP.hdf5 REF.hdf5
SNAP was written by banyan; REF is the h5py-made file it came from (or
SNAP itself). yt's particle count, total mass, positions and ids must
match REF's, over every PartType. Where SNAP has a /Units group, yt opened
with those units as its unit_base (yt 4.1 does not read them from the
file: a plain yt.load takes its default of 1e10 Msun and kpc) must give
the masses in grams and the positions in centimetres that the file's
values times its units are.
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

def read_all(path):
    """Positions, masses and ids of every PartType of path, concatenated."""
    with h5py.File(path, "r") as f:
        types = sorted(k for k in f if k.startswith("PartType"))
        return (np.concatenate([f[t]["Coordinates"][()] for t in types]),
                np.concatenate([f[t]["Masses"][()] for t in types]),
                np.concatenate([f[t]["ParticleIDs"][()].astype(np.int64) for t in types]))


ref_pos, ref_mass, ref_ids = read_all(ref)

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

with h5py.File(snap, "r") as f:
    units = dict(f["Units"].attrs) if "Units" in f else None
if units:
    base = {k: float(units[k]) for k in ("UnitLength_in_cm", "UnitMass_in_g", "UnitVelocity_in_cm_per_s")}
    du = yt.load(snap, unit_base=base)
    au = du.all_data()
    grams = au["all", "particle_mass"].to("g").d
    cm = au["all", "particle_position"].to("cm").d
    uid = au["all", "particle_index"].d.astype(np.int64)
    uorder = np.argsort(uid)
    assert np.allclose(grams[uorder], ref_mass[ref_order] * base["UnitMass_in_g"], rtol=1e-12, atol=0), "masses in g"
    assert np.allclose(cm[uorder], ref_pos[ref_order] * base["UnitLength_in_cm"], rtol=1e-12, atol=0), "positions in cm"
    print(f"  with the file's units as unit_base: total mass {grams.sum():.6g} g "
          f"({au['all', 'particle_mass'].sum().to('Msun'):.6g}), types {sorted(du.particle_types_raw)}")
