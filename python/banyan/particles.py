"""Particles as numpy arrays, and their way to and from the library's
structure of arrays (one copy each way: the library keeps its own arrays,
which the GPU backend uploads)."""
import ctypes

import numpy as np

from . import _lib


class Particles:
    """N particles: pos and vel (N, 3), mass (N,), ids (N,) uint64, and
    after a force computation acc (N, 3) and pot (N,) (potential per
    unit mass); ptype (N,) uint8: each particle's GADGET part type (1
    halo, 2 disk, 3 bulge for galaxies), or None (all PartType1)."""

    def __init__(self, pos, mass, vel=None, ids=None, acc=None, pot=None, ptype=None):
        self.pos = np.array(pos, dtype=np.float64, copy=True)
        if self.pos.ndim != 2 or self.pos.shape[1] != 3:
            raise ValueError(f"positions must be shaped (N, 3), got {self.pos.shape}")
        n = len(self.pos)
        self.mass = np.broadcast_to(np.asarray(mass, dtype=np.float64), (n,)).copy()
        self.vel = np.zeros((n, 3)) if vel is None else np.array(vel, dtype=np.float64).reshape(n, 3)
        self.ids = np.arange(1, n + 1, dtype=np.uint64) if ids is None else np.asarray(ids, dtype=np.uint64).reshape(n)
        self.acc = None if acc is None else np.asarray(acc, dtype=np.float64).reshape(n, 3)
        self.pot = None if pot is None else np.asarray(pot, dtype=np.float64).reshape(n)
        self.ptype = None if ptype is None else np.asarray(ptype, dtype=np.uint8).reshape(n)

    def __len__(self):
        return len(self.pos)

    def __repr__(self):
        return f"Particles(n={len(self)}, mass={self.mass.sum():.6g}{', with forces' if self.acc is not None else ''})"


def _fill(dst, src, n):
    if n:
        held = np.ascontiguousarray(src)  # alive until the copy is made (a column of (N, 3) is strided)
        ctypes.memmove(dst, held.ctypes.data, held.itemsize * n)


def _take(src, n, dtype):
    out = np.empty(n, dtype=dtype)
    if n:
        ctypes.memmove(out.ctypes.data, src, out.itemsize * n)
    return out


class CParticles:
    """A bn_particles made from Particles (freed with the object)."""

    def __init__(self, p):
        n = len(p)
        self.ptr = ctypes.POINTER(_lib.Particles_c)()
        _lib.check(_lib.particles_create(ctypes.byref(self.ptr), n))
        c = self.ptr.contents
        for k in range(3):
            _fill(c.pos[k], p.pos[:, k], n)
            _fill(c.vel[k], p.vel[:, k], n)
        _fill(c.mass, p.mass, n)
        _fill(c.id, p.ids, n)
        if p.ptype is not None:
            _lib.check(_lib.particles_ensure_types(self.ptr))
            _fill(self.ptr.contents.type, p.ptype, n)

    def __del__(self):
        if getattr(self, "ptr", None):
            _lib.particles_free(self.ptr)
            self.ptr = None


def from_c(ptr):
    """Particles copied out of a bn_particles pointer (not freed)."""
    c = ptr.contents
    n = c.n
    col = lambda a: np.stack([_take(a[k], n, np.float64) for k in range(3)], axis=1)
    p = Particles(col(c.pos), _take(c.mass, n, np.float64), vel=col(c.vel), ids=_take(c.id, n, np.uint64))
    if c.acc[0] and c.pot:
        p.acc = col(c.acc)
        p.pot = _take(c.pot, n, np.float64)
    if c.type:
        p.ptype = _take(c.type, n, np.uint8)
    return p


def owned(ptr):
    """Particles from a bn_particles the caller owns: copied, then freed."""
    try:
        return from_c(ptr)
    finally:
        _lib.particles_free(ptr)
