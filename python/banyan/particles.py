"""Particles as numpy arrays, and their way to and from the library's
structure of arrays.

The library keeps its own arrays (which the GPU backend uploads), one per
coordinate: x, y and z of the positions, velocities and accelerations
apart, and masses, ids, potentials and part types. Crossing costs one
copy each way and nothing more: an (N, 3) array's columns are copied
straight into the library's x, y, z arrays and back (numpy's strided
copy, no temporary column), masses, ids, potentials and types straight
into and out of theirs; another dtype (float32 positions, int ids) is
converted in that same copy. Particles holds the arrays it is given
when they are already of its dtype (float64, uint64 ids), without a
copy, so changing them changes the particles."""
import ctypes

import numpy as np

from . import _lib

_IDS_CHUNK = 1 << 14  # ids 1..n are written this many at a time (no array of n ids made for them)


class Particles:
    """N particles: pos and vel (N, 3), mass (N,), ids (N,) uint64, and
    after a force computation acc (N, 3) and pot (N,) (potential per
    unit mass); ptype (N,) uint8: each particle's GADGET part type (1
    halo, 2 disk, 3 bulge for galaxies), or None (all PartType1).
    Arrays already float64 (ids uint64, ptype uint8) are held as given,
    not copied; one mass for all becomes an array of N."""

    def __init__(self, pos, mass, vel=None, ids=None, acc=None, pot=None, ptype=None):
        self.pos = np.asarray(pos, dtype=np.float64)
        if self.pos.ndim != 2 or self.pos.shape[1] != 3:
            raise ValueError(f"positions must be shaped (N, 3), got {self.pos.shape}")
        n = len(self.pos)
        self.mass = _masses(mass, n)
        if self.mass.ndim == 0 or self.mass.shape != (n,):
            self.mass = np.broadcast_to(self.mass, (n,)).copy()  # one mass for all: an array of its own
        self.vel = np.zeros((n, 3)) if vel is None else _shaped(vel, np.float64, (n, 3))
        self.ids = np.arange(1, n + 1, dtype=np.uint64) if ids is None else _shaped(ids, np.uint64, (n,))
        self.acc = None if acc is None else _shaped(acc, np.float64, (n, 3))
        self.pot = None if pot is None else _shaped(pot, np.float64, (n,))
        self.ptype = None if ptype is None else _shaped(ptype, np.uint8, (n,))

    def __len__(self):
        return len(self.pos)

    def __repr__(self):
        return f"Particles(n={len(self)}, mass={self.mass.sum():.6g}{', with forces' if self.acc is not None else ''})"


def _shaped(a, dtype, shape):
    """a as dtype (itself when it is already), reshaped to shape (a view
    when the layout allows)."""
    a = np.asarray(a, dtype=dtype)
    return a if a.shape == shape else a.reshape(shape)


def _masses(mass, n):
    """mass as float64 (itself when it is), checked to be one value or N."""
    m = np.asarray(mass, dtype=np.float64)
    if m.ndim > 1 or (m.ndim == 1 and len(m) not in (1, n)):
        raise ValueError(f"masses must be one value or shaped (N,) = ({n},), got {m.shape}")
    return m


class _Memory:
    """The library's memory at addr as numpy sees it (no copy, not owned)."""

    def __init__(self, addr, n, dtype):
        self.__array_interface__ = {"data": (addr, False), "shape": (n,), "typestr": np.dtype(dtype).str,
                                    "version": 3}


def _view(ptr, n, dtype=np.float64):
    """The library's array ptr[0:n] as a numpy array sharing its memory:
    valid only while the bn_particles holding it lives and is not resized."""
    addr = ctypes.cast(ptr, ctypes.c_void_p).value
    if n == 0 or not addr:
        return np.empty(0, dtype=dtype)
    return np.asarray(_Memory(addr, n, dtype))


def _columns(ptrs, n):
    """An (N, 3) array from the library's x, y, z arrays: one copy."""
    out = np.empty((n, 3))
    for k in range(3):
        out[:, k] = _view(ptrs[k], n)
    return out


class CParticles:
    """A bn_particles (freed with the object) holding positions (N, 3),
    masses (N,) or one mass, and optionally velocities, ids (default 1..N),
    part types, accelerations and potentials: each copied once, straight
    into the library's arrays. Nothing is made for what is not given
    (velocities stay the library's zeros)."""

    def __init__(self, pos, mass, vel=None, ids=None, ptype=None, acc=None, pot=None):
        pos = np.asarray(pos)
        if pos.dtype.kind not in "biuf":
            pos = np.asarray(pos, dtype=np.float64)  # the error numpy gives for what is not a number
        if pos.ndim != 2 or pos.shape[1] != 3:
            raise ValueError(f"positions must be shaped (N, 3), got {pos.shape}")
        n = len(pos)
        mass = _masses(mass, n)
        self.ptr = ctypes.POINTER(_lib.Particles_c)()
        _lib.check(_lib.particles_create(ctypes.byref(self.ptr), n))
        c = self.ptr.contents
        if n == 0:
            return
        for k in range(3):
            _view(c.pos[k], n)[:] = pos[:, k]
        _view(c.mass, n)[:] = mass
        if vel is not None:
            vel = np.asarray(vel).reshape(n, 3)
            for k in range(3):
                _view(c.vel[k], n)[:] = vel[:, k]
        ids_c = _view(c.id, n, np.uint64)
        if ids is None:
            for start in range(0, n, _IDS_CHUNK):
                stop = min(n, start + _IDS_CHUNK)
                ids_c[start:stop] = np.arange(start + 1, stop + 1, dtype=np.uint64)
        else:
            ids_c[:] = np.asarray(ids).reshape(n)
        if ptype is not None:
            _lib.check(_lib.particles_ensure_types(self.ptr))
            _view(self.ptr.contents.type, n, np.uint8)[:] = np.asarray(ptype).reshape(n)
        if acc is not None and pot is not None:
            _lib.check(_lib.particles_ensure_forces(self.ptr))
            c = self.ptr.contents
            acc = np.asarray(acc).reshape(n, 3)
            for k in range(3):
                _view(c.acc[k], n)[:] = acc[:, k]
            _view(c.pot, n)[:] = np.asarray(pot).reshape(n)

    @classmethod
    def of(cls, p, forces=False):
        """The bn_particles of Particles p (with its forces when asked and held)."""
        with_forces = forces and p.acc is not None and p.pot is not None
        return cls(p.pos, p.mass, vel=p.vel, ids=p.ids, ptype=p.ptype, acc=p.acc if with_forces else None,
                   pot=p.pot if with_forces else None)

    def forces(self):
        """(acc (N, 3), pot (N,)) copied out of the library's arrays."""
        c = self.ptr.contents
        return _columns(c.acc, c.n), _view(c.pot, c.n).copy()

    def __del__(self):
        if getattr(self, "ptr", None):
            _lib.particles_free(self.ptr)
            self.ptr = None


def from_c(ptr):
    """Particles copied out of a bn_particles pointer (not freed): one
    copy of each array."""
    c = ptr.contents
    n = c.n
    p = Particles(_columns(c.pos, n), _view(c.mass, n).copy(), vel=_columns(c.vel, n),
                  ids=_view(c.id, n, np.uint64).copy())
    if c.acc[0] and c.pot:
        p.acc = _columns(c.acc, n)
        p.pot = _view(c.pot, n).copy()
    if c.type:
        p.ptype = _view(c.type, n, np.uint8).copy()
    return p


def owned(ptr):
    """Particles from a bn_particles the caller owns: copied, then freed."""
    try:
        return from_c(ptr)
    finally:
        _lib.particles_free(ptr)
