"""Fields on block-structured AMR meshes (FLASH's PARAMESH layout): a
mesh read from a file or made from a test problem, its variables as
numpy arrays, and the potential (gravity) or streamfunction (vorticity)
of its sources at every leaf cell, by the tree (any mesh) or the FFT
(uniform meshes). bn_mesh, bn_mesh_ic_params and bn_field_params are
public structs of plain fields: mirrored here, their sizes checked
against the library's at import."""
import ctypes

import numpy as np

from . import _lib

_d, _i = ctypes.c_double, ctypes.c_int
_pd = ctypes.POINTER(ctypes.c_double)
NAME_LEN, MAX_VARS = 16, 64


class Mesh_c(ctypes.Structure):
    _fields_ = [("nb", _i * 3), ("n_blocks", ctypes.c_size_t), ("capacity", ctypes.c_size_t), ("lo", _pd),
                ("hi", _pd), ("level", ctypes.POINTER(_i)), ("file_block", ctypes.POINTER(ctypes.c_int64)),
                ("n_vars", _i), ("var_name", (ctypes.c_char * NAME_LEN) * MAX_VARS), ("var", _pd * MAX_VARS),
                ("time", _d), ("from_flash", _i)]


class MeshIC_c(ctypes.Structure):
    _fields_ = [("problem", _i), ("block", _i), ("max_level", _i), ("min_level", _i), ("radius", _d),
                ("eccentricity", _d), ("density", _d), ("G", _d), ("c1", _d), ("c2", _d), ("samples", _i)]


class FieldParams_c(ctypes.Structure):
    _fields_ = [("kind", _i), ("method", _i), ("G", _d), ("theta", _d), ("velocity", _i), ("smoothing", _d),
                ("near_cells", _i), ("leaf_size", _i), ("backend", _i), ("device", _i),
                ("source_vars", ctypes.c_char * 64), ("error_target", _d)]


class FieldStats_c(ctypes.Structure):
    _fields_ = [(k, _d) for k in ("t_sources", "t_tree", "t_moments", "t_targets", "t_walk", "t_near", "t_total",
                                  "t_download", "n_pp", "n_pc", "n_near")] + \
               [("n_sources", ctypes.c_size_t), ("n_targets", ctypes.c_size_t), ("n_nodes", ctypes.c_long),
                ("n_groups", ctypes.c_long), ("device_bytes_peak", ctypes.c_size_t), ("backend", ctypes.c_char_p),
                ("theta", _d), ("sample_p99", _d), ("t_tuning", _d)]


for _cls, _name in ((Mesh_c, b"bn_mesh"), (MeshIC_c, b"bn_mesh_ic_params"), (FieldParams_c, b"bn_field_params"),
                     (FieldStats_c, b"bn_field_stats")):
    if ctypes.sizeof(_cls) != _lib.sizeof(_name):
        raise ImportError(f"banyan: {_lib.path} has another {_name.decode()} layout: rebuild the package with it")

_lib.lib.bn_mesh_ic_params_default.restype = MeshIC_c
_lib.lib.bn_mesh_ic_params_default.argtypes = [_i]
_lib.lib.bn_field_params_default.restype = FieldParams_c
_lib.lib.bn_field_params_default.argtypes = [_i]
_mp = ctypes.POINTER(Mesh_c)
_sig = _lib._sig
_mesh_read = _sig("bn_mesh_read", _i, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_mp))
_mesh_free = _sig("bn_mesh_free", None, _mp)
_mesh_write = _sig("bn_mesh_write", _i, ctypes.c_char_p, _mp)
_mesh_write_flash = _sig("bn_mesh_write_flash", _i, ctypes.c_char_p, _mp)
_mesh_problem_parse = _sig("bn_mesh_problem_parse", _i, ctypes.c_char_p, ctypes.POINTER(_i))
_mesh_ic_generate = _sig("bn_mesh_ic_generate", _i, ctypes.POINTER(MeshIC_c), ctypes.POINTER(_mp))
_mesh_ic_exact = _sig("bn_mesh_ic_exact", _i, ctypes.POINTER(MeshIC_c), _pd, _pd, _pd)
_backend_parse = _sig("bn_backend_parse", _i, ctypes.c_char_p, ctypes.POINTER(_i))
_field_create = _sig("bn_field_create", _i, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(FieldParams_c))
_field_free = _sig("bn_field_free", None, ctypes.c_void_p)
_field_mesh = _sig("bn_field_mesh", _i, ctypes.c_void_p, _mp, ctypes.c_void_p)
_field_stats = _sig("bn_field_stats_get", ctypes.POINTER(FieldStats_c), ctypes.c_void_p)


class Mesh:
    """Leaf blocks of nb cells each; `mesh["dens"]` is a copy of a
    variable shaped (blocks, nz, ny, nx)."""

    def __init__(self, ptr, problem=None):
        self._ptr, self.problem = ptr, problem

    def __del__(self):
        if getattr(self, "_ptr", None):
            _mesh_free(self._ptr)
            self._ptr = None

    @classmethod
    def read(cls, path, variables=None):
        """A FLASH or banyan mesh file; variables: "dens,vorx" (None: all)."""
        ptr = _mp()
        _lib.check(_mesh_read(str(path).encode(), variables.encode() if variables else None, ctypes.byref(ptr)))
        return cls(ptr)

    @classmethod
    def test_problem(cls, name, levels=4, block=16, **params):
        """banyan mesh-ic's problems (sphere, maclaurin, vortex-rings):
        levels the finest level, block the cells per block edge; min_level,
        radius, eccentricity, density, G, c1, c2, samples as its options."""
        kind = _i()
        _lib.check(_mesh_problem_parse(name.encode(), ctypes.byref(kind)))
        p = _lib.lib.bn_mesh_ic_params_default(kind.value)
        p.max_level, p.block = int(levels), int(block)
        for key, value in params.items():
            if key not in dict(MeshIC_c._fields_) or key == "problem":
                raise _lib.BanyanError("bad parameter", f"mesh test problem: no parameter '{key}'")
            setattr(p, key, value)
        ptr = _mp()
        _lib.check(_mesh_ic_generate(ctypes.byref(p), ctypes.byref(ptr)))
        return cls(ptr, p)

    @property
    def _c(self):
        return self._ptr.contents

    @property
    def n_blocks(self):
        return self._c.n_blocks

    @property
    def block_shape(self):
        """Cells per block along z, y, x (the arrays' last three axes)."""
        nb = self._c.nb
        return nb[2], nb[1], nb[0]

    @property
    def names(self):
        return [self._c.var_name[v].value.decode() for v in range(self._c.n_vars)]

    @property
    def levels(self):
        return np.ctypeslib.as_array(self._c.level, (self.n_blocks,)).copy()

    def __getitem__(self, name):
        v = self.names.index(name) if name in self.names else -1
        if v < 0:
            raise KeyError(f"no variable '{name}' (the mesh has {', '.join(self.names)})")
        n = self.n_blocks * int(np.prod(self.block_shape))
        return np.ctypeslib.as_array(self._c.var[v], (n,)).reshape((self.n_blocks,) + self.block_shape).copy()

    def centres(self):
        """Cell centres, shaped (blocks, nz, ny, nx, 3)."""
        lo = np.ctypeslib.as_array(self._c.lo, (self.n_blocks, 3))
        hi = np.ctypeslib.as_array(self._c.hi, (self.n_blocks, 3))
        nz, ny, nx = self.block_shape
        f = [(np.arange(n) + 0.5) / n for n in (nx, ny, nz)]
        out = np.empty((self.n_blocks, nz, ny, nx, 3))
        for axis, (frac, shape) in enumerate(zip(f, ((1, 1, nx), (1, ny, 1), (nz, 1, 1)))):
            out[..., axis] = lo[:, axis, None, None, None] + (hi - lo)[:, axis, None, None, None] * frac.reshape(shape)
        return out

    def exact(self, points):
        """A test problem's exact field at points (n, 3): gravity (n, 4)
        phi, gx, gy, gz; vortex rings (n, 6) psi and u."""
        if self.problem is None:
            raise ValueError("exact(): only for a mesh made by test_problem()")
        pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        width = 6 if self.problem.problem == 2 else 4
        out = np.empty((len(pts), width))
        for i, x in enumerate(pts):
            xs = (ctypes.c_double * 3)(*x)
            row = (ctypes.c_double * width)()
            _lib.check(_mesh_ic_exact(ctypes.byref(self.problem), xs, row, None))
            out[i] = row
        return out

    def write(self, path, flash=False):
        """banyan's mesh file, or a FLASH checkpoint (flash=True)."""
        _lib.check((_mesh_write_flash if flash else _mesh_write)(str(path).encode(), self._ptr))


def potential(mesh, kind="gravity", method="tree", backend=None, theta=None, G=None, error_target=None,
              velocity=None, smoothing=None, near_cells=None, leaf_size=None, source_vars=None, device=None):
    """The potential and acceleration of the mesh's density (gravity:
    variables gpot, gacx, gacy, gacz) or the streamfunction and velocity
    of its vorticity (psix.., velx..), added to the mesh; the solver's
    stats as a dict (theta used, times, interactions)."""
    p = _lib.lib.bn_field_params_default({"gravity": 0, "vorticity": 1}[kind])
    p.method = {"tree": 0, "fft": 1}[method]
    if backend is not None:
        b = _i()
        _lib.check(_backend_parse(backend.encode(), ctypes.byref(b)))
        p.backend = b.value
    for key, value in (("theta", theta), ("G", G), ("error_target", error_target), ("smoothing", smoothing),
                       ("near_cells", near_cells), ("leaf_size", leaf_size), ("device", device)):
        if value is not None:
            setattr(p, key, value)
    if velocity is not None:
        p.velocity = int(bool(velocity))
    if source_vars is not None:
        p.source_vars = source_vars.encode()
    f = ctypes.c_void_p()
    _lib.check(_field_create(ctypes.byref(f), ctypes.byref(p)))
    try:
        _lib.check(_field_mesh(f, mesh._ptr, None))
        st = _field_stats(f).contents
        out = {name: getattr(st, name) for name, _ in FieldStats_c._fields_ if name != "backend"}
        out["backend"] = st.backend.decode() if st.backend else ""
        return out
    finally:
        _field_free(f)
