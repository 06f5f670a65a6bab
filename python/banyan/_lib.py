"""The C library through ctypes: where it is found, the one struct whose
layout Python mirrors (bn_particles, checked against the library's own
sizeof at import), and every status turned into a BanyanError."""
import ctypes
import ctypes.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


class BanyanError(RuntimeError):
    """A failed call: `status` is the library's status name, `message`
    its message (the file, parameter or value at fault)."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def _candidates():
    """Where libbanyan.so may be: $BANYAN_LIB, beside the package (an
    installed copy), the build tree's (python/ next to build/), the loader's."""
    env = os.environ.get("BANYAN_LIB")
    if env:
        yield env
    yield os.path.join(_HERE, "libbanyan.so")
    for build in ("build", "build-cuda"):
        yield os.path.join(_HERE, "..", "..", build, "libbanyan.so")
    found = ctypes.util.find_library("banyan")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if not os.path.exists(path) and os.sep in path:
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("banyan: libbanyan.so not found (build it with `make`, or set BANYAN_LIB); tried: "
                      + ", ".join(tried))


lib, path = _load()

_d = ctypes.c_double
_pd = ctypes.POINTER(ctypes.c_double)


class Particles_c(ctypes.Structure):
    """bn_particles (banyan.h): structure of arrays."""
    _fields_ = [("n", ctypes.c_size_t), ("capacity", ctypes.c_size_t), ("pos", _pd * 3), ("vel", _pd * 3),
                ("mass", _pd), ("id", ctypes.POINTER(ctypes.c_uint64)), ("acc", _pd * 3), ("pot", _pd),
                ("type", ctypes.POINTER(ctypes.c_uint8))]


class WriteOptions(ctypes.Structure):
    """bn_snapshot_write_options (banyan.h): format (an enum: int), big_endian, n_files."""
    _fields_ = [("format", ctypes.c_int), ("big_endian", ctypes.c_int), ("n_files", ctypes.c_int)]


def _sig(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_st = ctypes.c_int
_vp = ctypes.c_void_p
_cp = ctypes.c_char_p
_pp = ctypes.POINTER(Particles_c)
_ppp = ctypes.POINTER(_pp)

status_name = _sig("bn_status_name", _cp, _st)
last_error = _sig("bn_last_error", _cp)
sizeof = _sig("bn_sizeof", ctypes.c_size_t, _cp)
struct_default = _sig("bn_struct_default", _st, _vp, _cp)
params_set_text = _sig("bn_params_set_text", _st, _vp, _cp, _cp, _cp)
params_get_text = _sig("bn_params_get_text", _st, _vp, _cp, _cp, _cp, ctypes.c_size_t)
particles_create = _sig("bn_particles_create", _st, _ppp, ctypes.c_size_t)
particles_free = _sig("bn_particles_free", None, _pp)
particles_ensure_forces = _sig("bn_particles_ensure_forces", _st, _pp)
particles_ensure_types = _sig("bn_particles_ensure_types", _st, _pp)
gravity_create = _sig("bn_gravity_create", _st, ctypes.POINTER(_vp), _vp)
gravity_free = _sig("bn_gravity_free", None, _vp)
gravity_compute = _sig("bn_gravity_compute", _st, _vp, _pp)
gravity_params_used = _sig("bn_gravity_params_used", _vp, _vp)
gpu_available = _sig("bn_gpu_available", ctypes.c_int)
ic_generate = _sig("bn_ic_generate", _st, _vp, _ppp)
galaxy_model_read = _sig("bn_galaxy_model_read", _st, _cp, _vp)
galaxy_model_G = _sig("bn_galaxy_model_G", _d, _vp)
ic_galaxy = _sig("bn_ic_galaxy", _st, _vp, ctypes.c_size_t, ctypes.c_uint64, _ppp)
snapshot_read = _sig("bn_snapshot_read", _st, _cp, _ppp, _vp)
snapshot_write = _sig("bn_snapshot_write", _st, _cp, _pp, _vp)
snapshot_format_parse = _sig("bn_snapshot_format_parse", _st, _cp, ctypes.POINTER(ctypes.c_int))
snapshot_write_as = _sig("bn_snapshot_write_as", _st, _cp, _pp, _vp, _vp)
snapshot_meta_number = _sig("bn_snapshot_meta_number", _st, _vp, _cp, _pd, _pd)
simulation_create = _sig("bn_simulation_create", _st, ctypes.POINTER(_vp))
simulation_free = _sig("bn_simulation_free", None, _vp)
simulation_set_gravity = _sig("bn_simulation_set_gravity", _st, _vp, _vp)
simulation_set_integrator = _sig("bn_simulation_set_integrator", _st, _vp, _vp)
simulation_set_particles = _sig("bn_simulation_set_particles", _st, _vp, _pp)
simulation_particles = _sig("bn_simulation_particles", _st, _vp, _ppp)
simulation_time = _sig("bn_simulation_time", _d, _vp)
simulation_steps = _sig("bn_simulation_steps", ctypes.c_long, _vp)
simulation_step = _sig("bn_simulation_step", _st, _vp, _pd)
simulation_step_to = _sig("bn_simulation_step_to", _st, _vp, _d, _pd)
simulation_energies = _sig("bn_simulation_energies", _st, _vp, _vp)
simulation_compute_forces = _sig("bn_simulation_compute_forces", _st, _vp)
simulation_finish = _sig("bn_simulation_finish", _st, _vp)
simulation_set_comm = _sig("bn_simulation_set_comm", _st, _vp, _vp)
gravity_set_comm = _sig("bn_gravity_set_comm", _st, _vp, _vp)
comm_world = _sig("bn_comm_world", _st, ctypes.POINTER(_vp))
comm_free = _sig("bn_comm_free", None, _vp)
comm_rank = _sig("bn_comm_rank", ctypes.c_int, _vp)
comm_size = _sig("bn_comm_size", ctypes.c_int, _vp)
comm_have_mpi = _sig("bn_comm_have_mpi", ctypes.c_int)

if ctypes.sizeof(Particles_c) != sizeof(b"bn_particles"):
    raise ImportError(f"banyan: {path} has another bn_particles layout ({sizeof(b'bn_particles')} bytes, "
                      f"this package expects {ctypes.sizeof(Particles_c)}): rebuild the package with the library")


def check(status):
    """Raise the library's message for a failed status."""
    if status != 0:
        raise BanyanError(status_name(status).decode(), last_error().decode(errors="replace"))


class Struct:
    """A public struct as an opaque buffer of the library's size, its
    fields set and read by name as parameter-file text (bn_params_*_text)."""

    def __init__(self, type_name, section=None):
        self.type = type_name.encode()
        self.section = section.encode() if section else None
        self.buf = ctypes.create_string_buffer(sizeof(self.type))
        if len(self.buf) == 0:
            raise ImportError(f"banyan: the library has no {type_name}")
        check(struct_default(self.buf, self.type))

    @property
    def ptr(self):
        return ctypes.cast(self.buf, _vp)

    def set(self, key, value):
        check(params_set_text(self.buf, self.section, key.encode(), to_text(value).encode()))

    def get(self, key):
        out = ctypes.create_string_buffer(4096)
        check(params_get_text(self.buf, self.section, key.encode(), out, len(out)))
        return out.value.decode()


def to_text(value):
    """A Python value as a parameter file writes it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_text(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    return str(value)
