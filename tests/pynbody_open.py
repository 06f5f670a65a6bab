"""pynbody must open banyan's snapshots as GADGET HDF5 data (not SWIFT),
with the particles, the values and the units that the file holds.

usage: /usr/bin/python3 pynbody_open.py SNAP.hdf5 [REF.hdf5]
SNAP was written by banyan; REF (default SNAP) is where its particles came
from (tests/make_snapshots.py's h5py-made good.hdf5, say). Read with h5py:
REF's ids, positions, velocities and masses, every PartType of it; SNAP's
units (/Units, as /Parameters), time (/Header) and Potential. pynbody's
must match them: the particle count and each family's, the ids, the
values in the file's units (rtol 1e-14), the total mass, the same in cgs
(rtol 1e-12), and its units' ratios to cm, g, cm/s and s against the
file's UnitLength_in_cm, UnitMass_in_g, UnitVelocity_in_cm_per_s and
UnitTime_in_s (rtol 1e-12). pynbody is found on sys.path (PYTHONPATH).
"""
import sys
import warnings

import h5py
import numpy as np
import pynbody

snap = sys.argv[1]
ref = sys.argv[2] if len(sys.argv) > 2 else snap
UNITS = ("UnitLength_in_cm", "UnitMass_in_g", "UnitVelocity_in_cm_per_s", "UnitTime_in_s")

# the file, read with h5py
with h5py.File(snap, "r") as f:
    unit = {k: float(f["Units"].attrs[k]) for k in UNITS}
    for k in UNITS:  # GADGET-4 readers look in /Parameters: the same there
        assert float(f["Parameters"].attrs[k]) == unit[k], (k, f["Parameters"].attrs[k], unit[k])
    time = float(f["Header"].attrs["Time"])
    phi = {k: f[k]["Potential"][()] for k in f if k.startswith("PartType") and "Potential" in f[k]}
    snap_ids = {k: f[k]["ParticleIDs"][()].astype(np.int64) for k in phi}
with h5py.File(ref, "r") as f:
    types = sorted(k for k in f if k.startswith("PartType") and len(f[k]["ParticleIDs"]))
    # velocities where every type has them (banyan writes them always)
    r = {q: {k: f[k][name][()] for k in types} for q, name in
         (("iord", "ParticleIDs"), ("pos", "Coordinates"), ("vel", "Velocities"), ("mass", "Masses"))
         if q != "vel" or all(name in f[k] for k in types)}
r["iord"] = {k: v.astype(np.int64) for k, v in r["iord"].items()}
ref_all = {q: np.concatenate([r[q][k] for k in types]) for q in r}

with warnings.catch_warnings():
    # pynbody warns that it assumes comoving factors (a, h): both are 1 here
    warnings.simplefilter("ignore", UserWarning)
    s = pynbody.load(snap)
    kind = type(s).__name__
    assert kind == "GadgetHDFSnap", f"pynbody opened {snap} as {kind}, expected GadgetHDFSnap"
    ctx = s.conversion_context()
    # Redshift 0 and HubbleParam 1: pynbody's comoving factors are 1
    assert ctx.get("a", 1.0) == 1.0 and ctx.get("h", 1.0) == 1.0, ctx

    # the particles: every one, each family's as pynbody maps the types
    n = len(s)
    assert n == len(ref_all["iord"]), f"pynbody sees {n} particles, expected {len(ref_all['iord'])}"
    fams = {}
    for fam in s.families():
        mapped = [t.strip() for t in pynbody.config_parser.get("gadgethdf-type-mapping", fam.name).split(",")]
        want = np.sort(np.concatenate([r["iord"][k] for k in types if k in mapped] or [np.zeros(0, np.int64)]))
        got = np.sort(s[fam]["iord"].astype(np.int64))
        assert np.array_equal(got, want), f"family {fam.name}: ids differ from those of {mapped}"
        fams[fam.name] = len(got)
    assert sum(fams.values()) == n, fams

    ids = s["iord"].astype(np.int64)
    order, ref_order = np.argsort(ids), np.argsort(ref_all["iord"])
    assert np.array_equal(ids[order], ref_all["iord"][ref_order]), "particle ids differ"
    # values in the file's units, then in cgs; the units' ratios to cgs
    for q, cgs, scale in (("pos", "cm", unit["UnitLength_in_cm"]), ("vel", "cm s**-1", unit["UnitVelocity_in_cm_per_s"]),
                          ("mass", "g", unit["UnitMass_in_g"])):
        if q not in r:
            continue
        a = s[q]
        got = np.asarray(a)[order]
        want = ref_all[q][ref_order]
        assert got.shape == want.shape, (q, got.shape, want.shape)
        assert np.allclose(got, want, rtol=1e-14, atol=0), f"{q} differs from the file's"
        ratio = a.units.ratio(cgs, **ctx)
        assert np.isclose(ratio, scale, rtol=1e-12, atol=0), f"{q}: pynbody's unit {a.units} is {ratio} {cgs}, the file's {scale}"
        assert np.allclose(np.asarray(a.in_units(cgs))[order], want * scale, rtol=1e-12, atol=0), f"{q} in {cgs} differs"
    m = s["mass"]
    assert np.isclose(m.sum(), ref_all["mass"].sum(), rtol=1e-12, atol=0), (m.sum(), ref_all["mass"].sum())
    assert np.isclose(m.in_units("g").sum(), ref_all["mass"].sum() * unit["UnitMass_in_g"], rtol=1e-12, atol=0)
    for k in types:  # each type's mass, by id
        sel = np.isin(ids, r["iord"][k])
        assert np.isclose(m[sel].sum(), r["mass"][k].sum(), rtol=1e-12, atol=0), (k, m[sel].sum(), r["mass"][k].sum())

    # the time: pynbody's in seconds is the file's Time x UnitTime_in_s
    # (from /Parameters Time_GYR: without it, a cosmology's age)
    t = s.properties["time"]
    t_s = float(t.in_units("s", **ctx)) if hasattr(t, "in_units") else float(t)
    assert np.isclose(t_s, time * unit["UnitTime_in_s"], rtol=1e-12, atol=0), \
        f"pynbody's time is {t} ({t_s} s), the file's {time} x {unit['UnitTime_in_s']} s"

    tu = s.infer_original_units("s").ratio("s", **ctx)
    assert np.isclose(tu, unit["UnitTime_in_s"], rtol=1e-12, atol=0), f"pynbody's time unit is {tu} s"

    # the potential where the file has it, in (length / time)^2
    if phi:
        got = np.asarray(s["phi"])
        pid = np.concatenate([snap_ids[k] for k in sorted(phi)])
        want = np.concatenate([phi[k] for k in sorted(phi)])
        po = np.argsort(pid)
        assert np.array_equal(ids[order], pid[po]), "ids of the potential differ"
        assert np.allclose(got[order], want[po], rtol=1e-14, atol=0), "phi differs from the file's Potential"
        ratio = s["phi"].units.ratio("cm**2 s**-2", **ctx)
        assert np.isclose(ratio, unit["UnitVelocity_in_cm_per_s"] ** 2, rtol=1e-12, atol=0), \
            f"phi: pynbody's unit {s['phi'].units} is {ratio} cm^2/s^2"

print(f"pynbody {pynbody.__version__} opened {snap} as {kind}: {n} particles "
      f"({', '.join(f'{k} {v}' for k, v in fams.items())}; {', '.join(types)}), total mass {m.sum():.6g} "
      f"x {unit['UnitMass_in_g']:.6g} g, time {float(t.in_units('Gyr', **ctx)):.6g} Gyr"
      f"{', phi' if phi else ''}{'' if 'vel' in r else ', no velocities'}")
