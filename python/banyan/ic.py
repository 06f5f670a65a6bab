"""Initial conditions (N-body units, G = 1, centre of mass at rest at the
origin, ids 1..n; the same particles for a seed at any thread count)."""
import ctypes

from . import _lib
from .particles import owned


def generate(model, n, seed=1, **params):
    """A model by name (plummer, hernquist, nfw, uniform-sphere,
    uniform-cube) with the InitialConditions section's keywords
    (virial_ratio, truncation, half_size, mass_spread)."""
    icp = _lib.Struct("bn_ic_params", "InitialConditions")
    icp.set("model", model)
    icp.set("n", int(n))
    icp.set("seed", int(seed))
    for key, value in params.items():
        icp.set(key, value)
    ptr = ctypes.POINTER(_lib.Particles_c)()
    _lib.check(_lib.ic_generate(icp.ptr, ctypes.byref(ptr)))
    return owned(ptr)


def plummer(n, seed=1):
    return generate("plummer", n, seed)


def hernquist(n, seed=1, truncation=None):
    return generate("hernquist", n, seed, **({} if truncation is None else {"truncation": truncation}))


def nfw(n, seed=1, truncation=None):
    return generate("nfw", n, seed, **({} if truncation is None else {"truncation": truncation}))


def uniform_sphere(n, seed=1, virial_ratio=0.0):
    return generate("uniform-sphere", n, seed, virial_ratio=virial_ratio)


def uniform_cube(n, seed=1, half_size=3.0, mass_spread=False):
    return generate("uniform-cube", n, seed, half_size=half_size, mass_spread=mass_spread)
