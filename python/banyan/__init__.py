"""banyan: a gravitational N-body tree code for GPUs, from Python.

    import banyan
    p = banyan.ic.plummer(100000, seed=1)
    acc, pot = banyan.forces(p.pos, p.mass, eps=1e-3, error_target=1e-3)
    sim = banyan.Simulation(p, eps=1e-3, dt=1 / 128)
    sim.run(1.0, callback=lambda s: print(s.time, s.energies()["total"]))
    banyan.write("final.hdf5", sim.particles, time=sim.time)

Every keyword that names a parameter of the YAML file's Gravity or
TimeIntegration section (theta, mac, leaf_size, backend, time_bins, ...)
is taken as the file would take it, with the same checks and messages;
a failed call raises BanyanError with the library's message.
"""
import ctypes
import os

import numpy as np

from . import _lib, ic, plot, ranks
from .mesh import Mesh, potential
from ._lib import BanyanError
from .particles import CParticles, Particles, from_c, owned
from .ranks import world as ranks_world

__all__ = ["BanyanError", "Mesh", "Particles", "Simulation", "forces", "gpu_available", "ic", "plot", "potential", "ranks",
           "read", "write", "write_format"]


def gpu_available():
    """Whether a CUDA device is usable by this build."""
    return bool(_lib.gpu_available())


def _gravity(eps=None, G=None, error_target=None, backend=None, **kw):
    g = _lib.Struct("bn_gravity_params", "Gravity")
    named = {"softening": eps, "G": G, "error_target": error_target, "backend": backend}
    for key, value in list(named.items()) + list(kw.items()):
        if value is not None:
            g.set(key, value)
    return g


def forces(pos, mass, eps=None, G=None, error_target=None, backend=None, ranks=False, **gravity):
    """Accelerations (N, 3) and potentials (N,) of the particles at pos
    (N, 3) with masses mass (N,) or one mass for all: eps the softening,
    error_target the p99 of the relative acceleration error that banyan
    chooses its settings for (None: the given or default settings),
    backend "auto", "cpu" or "gpu"; other keywords as the Gravity section
    of a parameter file (theta, mac, method, leaf_size, ...).
    ranks=True (under mpirun): every rank passes its own particles and
    gets their forces from every rank's; collective (banyan.ranks)."""
    g = _gravity(eps, G, error_target, backend, **gravity)
    cp = CParticles(pos, mass)  # pos's columns and mass copied once, into the library's arrays
    solver = ctypes.c_void_p()
    _lib.check(_lib.gravity_create(ctypes.byref(solver), g.ptr))
    try:
        if ranks:
            _lib.check(_lib.gravity_set_comm(solver, ranks_world()))
        _lib.check(_lib.gravity_compute(solver, cp.ptr))
    finally:
        _lib.gravity_free(solver)
    return cp.forces()  # copied out once; nothing else


def read(path):
    """A snapshot (banyan's HDF5, GADGET-4 HDF5 sets, GADGET-2 formats 1
    and 2, tipsy: by content): (Particles, header) where header holds
    time, redshift, box_size, G and the unit system in cgs."""
    ptr = ctypes.POINTER(_lib.Particles_c)()
    meta = _lib.Struct("bn_snapshot_meta")
    _lib.check(_lib.snapshot_read(str(path).encode(), ctypes.byref(ptr), meta.ptr))
    return owned(ptr), _header(meta)


_HEADER_KEYS = ("time", "redshift", "box_size", "G", "length_in_cm", "mass_in_g", "velocity_in_cm_per_s")


def _header(meta):
    out = {}
    for key in _HEADER_KEYS:
        v = ctypes.c_double()
        _lib.check(_lib.snapshot_meta_number(meta.ptr, key.encode(), None, ctypes.byref(v)))
        out[key] = v.value
    return out


# a snapshot's format from its name, as `banyan convert` tells it
_FORMAT_BY_SUFFIX = {".hdf5": "hdf5", ".h5": "hdf5", ".gadget": "gadget2", ".g2": "gadget2", ".tipsy": "tipsy",
                     ".std": "tipsy"}
FORMATS = ("hdf5", "gadget2", "gadget2-format2", "tipsy", "tipsy-native")


def write_format(path):
    """The format write() gives the file at path from its name (as
    `banyan convert` does): .hdf5 or .h5 hdf5, .gadget or .g2 gadget2,
    .tipsy or .std tipsy; ValueError for any other name."""
    name = os.fsdecode(path)
    for suffix, fmt in _FORMAT_BY_SUFFIX.items():
        if len(name) > len(suffix) and name.endswith(suffix):
            return fmt
    raise ValueError(f"banyan.write: cannot tell the format of '{name}' from its name: name it .hdf5 or .h5 "
                     f"(HDF5, GADGET-4 layout), .gadget or .g2 (GADGET-2 format 1), .tipsy or .std (tipsy), "
                     f"or give format= one of {', '.join(FORMATS)}")


def write(path, particles, format=None, big_endian=False, files=1, **header):
    """Write particles to a snapshot, through a temporary file renamed at
    the end. The format is format= (hdf5, gadget2, gadget2-format2, tipsy
    (big-endian, the standard), tipsy-native) or else path's name tells it
    (write_format: .hdf5/.h5, .gadget/.g2, .tipsy/.std; any other name is
    refused). HDF5 is GADGET-4/SWIFT's layout (read by yt and pynbody) in
    double precision, with accelerations and potentials when particles
    holds them; GADGET-2 and tipsy hold float32 values (a value beyond
    float's range is refused), tipsy keeps gas (PartType0) and stars
    (PartType4), makes every other type dark matter and has no ids.
    big_endian: GADGET-2's byte order (default little-endian); files > 1:
    a GADGET-2 set path.0 ... path.<files-1>. Header keywords: time,
    redshift, box_size, G, length_in_cm, mass_in_g, velocity_in_cm_per_s.
    Returns the format written."""
    fmt = write_format(path) if format is None else format
    if isinstance(files, bool) or not isinstance(files, (int, np.integer)) or not 1 <= files <= 65536:
        raise ValueError(f"banyan.write: files must be an integer from 1 to 65536, got {files!r}")
    opts = _lib.WriteOptions(big_endian=int(bool(big_endian)), n_files=int(files))
    code = ctypes.c_int()
    _lib.check(_lib.snapshot_format_parse(str(fmt).encode(), ctypes.byref(code)))
    opts.format = code.value
    meta = _lib.Struct("bn_snapshot_meta")
    for key, value in header.items():
        v = ctypes.c_double(float(value))
        _lib.check(_lib.snapshot_meta_number(meta.ptr, key.encode(), ctypes.byref(v), None))
    cp = CParticles.of(particles, forces=True)
    _lib.check(_lib.snapshot_write_as(os.fsencode(path), cp.ptr, meta.ptr, ctypes.byref(opts)))
    return fmt


_INTEGRATOR_KEYS = ("dt", "eta", "dt_min", "time_bins", "criterion", "tree_rebuild", "rebuild_cost")


class Simulation:
    """Particles evolved with kick-drift-kick steps, shared or block
    (time_bins), on the GPU when one is usable (backend "auto"). The
    particles stay in the library (on the device) between steps:
    `particles` copies them out. Keywords: those of forces() and the
    TimeIntegration section's (dt, eta, time_bins, criterion, ...).
    ranks=True (under mpirun): every rank passes its own particles (any
    number) and calls every method in the same order; forces come from
    every rank's particles, steps are decided alike on every rank,
    energies() sums over the ranks, and `particles` is this rank's share
    (the domains move particles between ranks)."""

    def __init__(self, particles, eps=None, G=None, error_target=None, backend=None, ranks=False, **params):
        integ = {k: params.pop(k) for k in list(params) if k in _INTEGRATOR_KEYS}
        self._gravity = _gravity(eps, G, error_target, backend, **params)
        self._integ = _lib.Struct("bn_integrator_params", "TimeIntegration")
        for key, value in integ.items():
            self._integ.set(key, value)
        self._sim = ctypes.c_void_p()
        _lib.check(_lib.simulation_create(ctypes.byref(self._sim)))
        _lib.check(_lib.simulation_set_gravity(self._sim, self._gravity.ptr))
        _lib.check(_lib.simulation_set_integrator(self._sim, self._integ.ptr))
        if ranks:
            _lib.check(_lib.simulation_set_comm(self._sim, ranks_world()))
        self.particles = particles

    def __del__(self):
        if getattr(self, "_sim", None):
            _lib.simulation_free(self._sim)
            self._sim = None

    @property
    def particles(self):
        """The current particles (positions, velocities, forces), copied."""
        ptr = ctypes.POINTER(_lib.Particles_c)()
        _lib.check(_lib.simulation_particles(self._sim, ctypes.byref(ptr)))
        return from_c(ptr)

    @particles.setter
    def particles(self, p):
        cp = CParticles.of(p)  # held until the library has copied it
        _lib.check(_lib.simulation_set_particles(self._sim, cp.ptr))

    @property
    def time(self):
        return _lib.simulation_time(self._sim)

    @property
    def steps(self):
        return _lib.simulation_steps(self._sim)

    def step(self):
        """One step (a block step's finest sub-step with time_bins); its dt."""
        dt = ctypes.c_double()
        _lib.check(_lib.simulation_step(self._sim, ctypes.byref(dt)))
        return dt.value

    def run(self, t_end, callback=None):
        """Steps until t_end (the last one shortened to land on it),
        callback(self) after each; returns the steps taken."""
        taken = 0
        dt = ctypes.c_double()
        while self.time < t_end:
            _lib.check(_lib.simulation_step_to(self._sim, float(t_end), ctypes.byref(dt)))
            taken += 1
            if callback is not None:
                callback(self)
            if dt.value <= 0:
                break
        _lib.check(_lib.simulation_finish(self._sim))
        return taken

    evolve_model = run  # AMUSE's name

    def energies(self):
        """kinetic, potential, total, momentum (3), angular_momentum (3) and
        com (3) of the current state (the forces computed if needed)."""
        buf = ctypes.create_string_buffer(_lib.sizeof(b"bn_energies"))
        _lib.check(_lib.simulation_energies(self._sim, buf))
        v = np.frombuffer(buf.raw, dtype=np.float64, count=12)
        return {"kinetic": v[0], "potential": v[1], "total": v[2], "momentum": v[3:6].copy(),
                "angular_momentum": v[6:9].copy(), "com": v[9:12].copy()}
