"""Initial conditions (N-body units, G = 1, centre of mass at rest at the
origin, ids 1..n; the same particles for a seed at any thread count)."""
import ctypes
import os

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


def galaxy(n, model="m31", seed=1):
    """A disk galaxy in equilibrium (banyan ic galaxy): an NFW or Hernquist
    halo, a Hernquist bulge and an exponential disk, each from its
    distribution function in the total potential (the disk's velocities
    epicyclic). model: "m31" (GOTHIC's Andromeda) or the path of a model's
    YAML file (examples/galaxies/m31.yml shows the keys). Units kpc, Msun
    and km/s unless the file says otherwise: the result's G is the
    model's. ptype: 1 halo, 2 disk, 3 bulge. n particles shared by the
    components by mass, unless the model gives them counts."""
    n, seed = int(n), int(seed)
    if n < 0 or seed < 0 or seed >= 2**64:  # ctypes would wrap them into huge unsigned values
        raise ValueError(f"galaxy: n ({n}) and seed ({seed}) must be non-negative integers (seed below 2^64)")
    m = _lib.Struct("bn_galaxy_model")  # its defaults: M31
    if model != "m31":
        _lib.check(_lib.galaxy_model_read(os.fsencode(model), m.ptr))
    ptr = ctypes.POINTER(_lib.Particles_c)()
    _lib.check(_lib.ic_galaxy(m.ptr, n, seed, ctypes.byref(ptr)))
    p = owned(ptr)
    p.G = _lib.galaxy_model_G(m.ptr)
    return p
