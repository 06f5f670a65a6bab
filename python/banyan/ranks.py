"""The processes of a run started by mpirun (MPI_COMM_WORLD), as the
library sees them (bn_comm_world): `mpirun -np 4 python3 script.py` and
every rank's script passes its own particles to forces(..., ranks=True)
or Simulation(..., ranks=True), which then become collective (every rank
calls them in the same order). Without mpirun (or without MPI in the
library) this process alone: rank 0 of 1."""
import atexit
import ctypes

from . import _lib

_world = None


def world():
    """The communicator (made at the first call, freed at exit: MPI is
    finalised then if the library initialised it)."""
    global _world
    if _world is None:
        c = ctypes.c_void_p()
        _lib.check(_lib.comm_world(ctypes.byref(c)))
        _world = c
        atexit.register(_free)
    return _world


def _free():
    global _world
    if _world is not None:
        _lib.comm_free(_world)
        _world = None


def rank():
    """This process's rank (0 .. size() - 1)."""
    return _lib.comm_rank(world())


def size():
    """How many ranks the run has."""
    return _lib.comm_size(world())


def have_mpi():
    """Whether the library was built with MPI."""
    return bool(_lib.comm_have_mpi())
