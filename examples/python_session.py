#!/usr/bin/env python3
"""A notebook-style session with the Python package (python/): a Plummer
sphere's forces against direct summation at an error target, a short
run with an energy callback, a snapshot written and read back, and the
energy log plotted. Run from the repository after `make`:

    PYTHONPATH=python python3 examples/python_session.py [OUTDIR]
"""
import os
import sys

import numpy as np

import banyan

out = sys.argv[1] if len(sys.argv) > 1 else "out-python"
os.makedirs(out, exist_ok=True)

# %% initial conditions, forces at an error target
p = banyan.ic.plummer(20000, seed=1)
print(p, "on", "the GPU" if banyan.gpu_available() else "the CPU")
acc, pot = banyan.forces(p.pos, p.mass, eps=1e-3, error_target=1e-3)
ref, _ = banyan.forces(p.pos, p.mass, eps=1e-3, method="direct")
err = np.linalg.norm(acc - ref, axis=1) / np.linalg.norm(ref, axis=1)
print(f"relative acceleration error against direct summation: p50 {np.median(err):.2e}, "
      f"p99 {np.percentile(err, 99):.2e} (target 1e-3)")

# %% a run, the energy logged from a callback
sim = banyan.Simulation(p, eps=1e-3, dt=1 / 128)
e0 = sim.energies()["total"]
log = []


def record(s):
    if s.steps % 16 == 0:
        e = s.energies()
        m = np.linalg.norm(e["momentum"])
        log.append([s.time, e["kinetic"], e["potential"], e["total"], abs(e["total"] - e0) / abs(e0), m,
                    np.linalg.norm(e["angular_momentum"]), 0.0])


steps = sim.run(0.5, callback=record)
print(f"{steps} steps to t = {sim.time}: |E - E0| / |E0| = {log[-1][4]:.2e}")
np.savetxt(os.path.join(out, "energy.txt"), log, header="time K W E rel_error |P| |L| wall")

# %% a snapshot, read back (yt and pynbody read it too)
final = sim.particles
banyan.write(os.path.join(out, "final.hdf5"), final, time=sim.time)
q, header = banyan.read(os.path.join(out, "final.hdf5"))
print(f"read back {len(q)} particles at t = {header['time']}, the same positions: {np.array_equal(q.pos, final.pos)}")

# %% the run's health in one look
banyan.plot.energy(os.path.join(out, "energy.txt"), out=os.path.join(out, "energy.png"))
print("wrote", os.path.join(out, "energy.png"))

# %% a disk galaxy in equilibrium: GOTHIC's M31 (or a model's YAML file), kpc, Msun, km/s
g = banyan.ic.galaxy(20000, model="m31")
acc, _ = banyan.forces(g.pos, g.mass, eps=0.1, G=g.G)
disk = g.ptype == 2
R = np.hypot(g.pos[disk, 0], g.pos[disk, 1])
ring = (R > 8) & (R < 12)
v_c = np.sqrt(np.mean(-(acc[disk, 0] * g.pos[disk, 0] + acc[disk, 1] * g.pos[disk, 1])[ring]))
print(f"M31: G = {g.G}, part types {np.unique(g.ptype)}, circular speed at 8-12 kpc {v_c:.0f} km/s")
