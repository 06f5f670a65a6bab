"""Hostile snapshots for the fuzz test (tests/cli_fuzz.sh), made with h5py
from one valid file: truncations, byte flips, and files that are wrong in
their meaning (shapes, types, lengths, huge sparse counts, NaN/Inf,
header values, string attributes of every kind, links, structure).

usage: fuzz_snapshots.py DIR    writes DIR/base.hdf5, the cases and
                                DIR/manifest.txt: "name kind description"

kind: bad   every command must refuse the file (non-zero exit, no output)
      good  a valid file: info, forces (direct and tree) and render must
            accept it
      pair  a valid file with forces: as good, and compare must accept it
            on either side
      any   undetectable or only sometimes wrong (a flipped byte in the raw
            numbers): no crash, no sanitizer report, no hang, and if a
            command succeeds its outputs must be valid inputs
Deterministic: the same cases, byte for byte, on every run.
"""
import os
import shutil
import sys

import h5py
import numpy as np

from fuzz_foreign import foreign_cases

N = 64
RNG_SEED = 15


def arrays():
    rng = np.random.default_rng(RNG_SEED)
    return {
        "Coordinates": rng.normal(size=(N, 3)),
        "Velocities": 0.1 * rng.normal(size=(N, 3)),
        "Masses": np.full(N, 1.0 / N),
        "ParticleIDs": np.arange(1, N + 1, dtype=np.uint64),
    }


def header(f, n=N):
    h = f.create_group("Header")
    dt = np.uint32 if n < 2**32 else np.uint64
    h.attrs["NumPart_ThisFile"] = np.array([0, n, 0, 0, 0, 0], dtype=dt)
    h.attrs["NumPart_Total"] = np.array([0, n, 0, 0, 0, 0], dtype=dt)
    h.attrs["NumPart_Total_HighWord"] = np.zeros(6, dtype=np.uint32)
    h.attrs["MassTable"] = np.zeros(6)
    h.attrs["Time"] = 0.0
    h.attrs["Redshift"] = 0.0
    h.attrs["BoxSize"] = 0.0
    h.attrs["NumFilesPerSnapshot"] = np.int32(1)
    return h


def parameters(f):
    p = f.create_group("Parameters")
    p.attrs["Softening"] = 0.01
    p.attrs.create("Method", np.bytes_("tree"), dtype=h5py.string_dtype("ascii", 5))
    p.attrs.create("OpeningCriterion", np.bytes_("bonsai"), dtype=h5py.string_dtype("ascii", 7))
    return p


def write(path, data=None, n=None, edit=None):
    """A snapshot from `data` (default: arrays()); edit(f) changes it."""
    data = arrays() if data is None else data
    with h5py.File(path, "w") as f:
        header(f, N if n is None else n)
        parameters(f)
        g = f.create_group("PartType1")
        for k, v in data.items():
            g[k] = v
        if edit:
            edit(f)


class Cases:
    def __init__(self, d):
        self.d, self.lines = d, []

    def add(self, name, kind, desc, data=None, edit=None, n=None):
        write(os.path.join(self.d, name + ".hdf5"), data, n, edit)
        self.note(name, kind, desc)

    def note(self, name, kind, desc):
        self.lines.append("%s %s %s" % (name, kind, desc))

    def raw(self, name, kind, desc, content):
        with open(os.path.join(self.d, name + ".hdf5"), "wb") as f:
            f.write(content)
        self.note(name, kind, desc)


def replaced(key, value):
    d = arrays()
    d[key] = value
    return d


def with_value(key, index, value):
    d = arrays()
    v = d[key].astype(np.float64) if key != "ParticleIDs" else d[key].astype(np.int64)
    v[index] = value
    d[key] = v
    return d


def header_attr(name, value):
    def edit(f):
        del f["Header"].attrs[name]
        f["Header"].attrs[name] = value
    return edit


def param_attr(name, value, dtype=None):
    def edit(f):
        p = f["Parameters"]
        if name in p.attrs:
            del p.attrs[name]
        if dtype is None:
            p.attrs[name] = value
        else:
            p.attrs.create(name, value, dtype=dtype)
    return edit


def sparse(rows, only=None, chunked=True, dtype=None):
    """Every dataset (or only `only`) claims `rows` rows, none stored
    (chunked, or contiguous with its storage never allocated)."""
    def edit(f):
        for k in ("NumPart_ThisFile", "NumPart_Total"):
            del f["Header"].attrs[k]
        g = f["PartType1"]
        for k in list(g.keys()):
            if only and k != only:
                continue
            shape = (rows, 3) if k in ("Coordinates", "Velocities") else (rows,)
            dt = g[k].dtype if dtype is None else dtype
            del g[k]
            g.create_dataset(k, shape=shape, dtype=dt, chunks=((1024,) + shape[1:]) if chunked else None)
    return edit


def good_cases(c):
    d = arrays()
    c.add("g_float32", "good", "float32 data", {k: (v.astype(np.float32) if v.dtype.kind == "f" else v)
                                                for k, v in d.items()})
    c.add("g_int32_ids", "good", "int32 ids", replaced("ParticleIDs", np.arange(1, N + 1, dtype=np.int32)))
    c.add("g_denormal", "good", "a denormal velocity", with_value("Velocities", (5, 1), 1e-310))
    c.add("g_vl_utf8", "good", "Method as variable-length UTF-8 (h5py's str)", edit=param_attr("Method", "direct"))
    c.add("g_fixed_utf8", "good", "Method as fixed-length UTF-8",
          edit=param_attr("Method", "direct".encode(), h5py.string_dtype("utf-8", 6)))
    c.add("g_vl_ascii", "good", "Method as variable-length ASCII",
          edit=param_attr("Method", b"direct", h5py.string_dtype("ascii")))

    def mass_table(f):
        del f["PartType1/Masses"]
        del f["Header"].attrs["MassTable"]
        f["Header"].attrs["MassTable"] = np.array([0, 1.0 / N, 0, 0, 0, 0])
    c.add("g_masstable", "good", "masses from Header/MassTable", edit=mass_table)
    c.add("g_boxsize_vector", "good", "SWIFT's BoxSize of 3 values", edit=header_attr("BoxSize", np.ones(3)))


def shape_and_type_cases(c):
    d = arrays()
    c.add("s_coords_n2", "bad", "Coordinates (N, 2)", replaced("Coordinates", d["Coordinates"][:, :2]))
    c.add("s_coords_n31", "bad", "Coordinates (N, 3, 1)", replaced("Coordinates", d["Coordinates"][:, :, None]))
    c.add("s_coords_scalar", "bad", "Coordinates a scalar", replaced("Coordinates", np.float64(1)))
    c.add("s_coords_empty", "bad", "Coordinates (0, 3)", replaced("Coordinates", np.zeros((0, 3))), n=0)
    c.add("s_masses_n3", "bad", "Masses (N, 3)", replaced("Masses", np.ones((N, 3))))
    c.add("s_ids_2d", "bad", "ParticleIDs (N, 2)", replaced("ParticleIDs", np.ones((N, 2), dtype=np.uint64)))
    c.add("t_coords_strings", "bad", "Coordinates of strings",
          replaced("Coordinates", np.array([[b"a", b"b", b"c"]] * N)))
    c.add("t_coords_compound", "bad", "Coordinates of a compound type",
          replaced("Coordinates", np.zeros((N, 3), dtype=[("a", "f8"), ("b", "i4")])))
    c.add("t_masses_bool", "bad", "Masses of booleans (an enum)", replaced("Masses", np.ones(N, dtype=bool)))
    c.add("t_ids_float", "bad", "ParticleIDs of floats", replaced("ParticleIDs", np.arange(N, dtype=np.float64)))
    c.add("t_coords_float16", "any", "Coordinates float16", replaced("Coordinates", d["Coordinates"].astype(np.float16)))
    c.add("t_coords_int8", "any", "Coordinates int8", replaced("Coordinates", np.arange(3 * N, dtype=np.int8).reshape(N, 3)))


def length_cases(c):
    d = arrays()
    c.add("l_vel_short", "bad", "Velocities N - 1 rows", replaced("Velocities", d["Velocities"][:-1]))
    c.add("l_ids_long", "bad", "ParticleIDs N + 1 rows", replaced("ParticleIDs", np.arange(1, N + 2, dtype=np.uint64)))
    c.add("l_thisfile", "bad", "NumPart_ThisFile disagrees", n=N + 1)
    c.add("l_total", "bad", "NumPart_Total disagrees",
          edit=header_attr("NumPart_Total", np.array([0, N - 1, 0, 0, 0, 0], dtype=np.uint32)))
    c.add("l_highword", "bad", "NumPart_Total_HighWord 1",
          edit=header_attr("NumPart_Total_HighWord", np.array([0, 1, 0, 0, 0, 0], dtype=np.uint32)))
    c.add("l_other_type", "bad", "NumPart_ThisFile counts a type with no group",
          edit=header_attr("NumPart_ThisFile", np.array([0, N, 7, 0, 0, 0], dtype=np.uint32)))
    for e in (61, 40, 33):
        c.add("h_sparse_2_%d" % e, "bad", "every dataset claims 2^%d rows, stored sparse" % e, edit=sparse(2**e))
    c.add("h_sparse_coords", "bad", "Coordinates alone claims 2^61 rows", edit=sparse(2**61, "Coordinates"))
    for e in (40, 33):
        c.add("h_contig_2_%d" % e, "bad", "every dataset claims 2^%d rows, contiguous, never allocated" % e,
              edit=sparse(2**e, chunked=False))
    c.add("h_contig_int8_2_61", "bad", "int8 datasets of 2^61 rows, contiguous, never allocated",
          edit=sparse(2**61, chunked=False, dtype=np.int8))
    c.add("h_sparse_2_62", "bad", "every dataset claims 2^62 rows (2^62 x 24 bytes overflows), chunked",
          edit=sparse(2**62))
    c.add("h_sparse_ids", "bad", "ParticleIDs alone claims 2^33 rows", edit=sparse(2**33, "ParticleIDs"))
    c.add("h_sparse_masses", "bad", "Masses alone claims 2^40 rows, contiguous", edit=sparse(2**40, "Masses", False))
    c.add("h_count_2_61", "bad", "NumPart_ThisFile and NumPart_Total 2^61, 64 rows stored",
          n=2**61)


def value_cases(c):
    for key, idx in (("Coordinates", (3, 1)), ("Velocities", (7, 2)), ("Masses", 9)):
        for tag, v, kind in (("nan", np.nan, "bad"), ("inf", np.inf, "bad"), ("minf", -np.inf, "bad"),
                             ("big", 1e300, "any"), ("mbig", -1e300, "any"), ("denormal", 1e-310, "good")):
            if key == "Masses" and tag == "mbig":
                kind = "bad"  # a negative mass
            c.add("v_%s_%s" % (key.lower(), tag), kind, "%s = %g" % (key, v), with_value(key, idx, v))
    c.add("v_ids_negative", "bad", "a negative id", with_value("ParticleIDs", 4, -3))
    c.add("v_ids_repeated", "bad", "a repeated id", with_value("ParticleIDs", 40, 13))
    c.add("v_masses_zero", "bad", "every mass 0", replaced("Masses", np.zeros(N)))


def header_cases(c):
    for tag, name, v in (("time_nan", "Time", np.nan), ("time_minf", "Time", -np.inf),
                         ("redshift_inf", "Redshift", np.inf), ("nfiles_0", "NumFilesPerSnapshot", np.int32(0)),
                         ("nfiles_m1", "NumFilesPerSnapshot", np.int32(-1)),
                         ("nfiles_half", "NumFilesPerSnapshot", 1.5),
                         ("masstable_nan", "MassTable", np.array([0, np.nan, 0, 0, 0, 0])),
                         ("masstable_neg", "MassTable", np.array([0, -1.0, 0, 0, 0, 0])),
                         ("count_neg", "NumPart_ThisFile", np.array([0, -64, 0, 0, 0, 0], dtype=np.int32)),
                         ("time_string", "Time", np.bytes_("zero"))):
        c.add("hd_" + tag, "bad", "Header %s = %s" % (name, v), edit=header_attr(name, v))
    c.add("hd_split", "bad", "NumFilesPerSnapshot 2 (a split snapshot)",
          edit=header_attr("NumFilesPerSnapshot", np.int32(2)))
    c.add("hd_time_big", "good", "Time 1e300 (a number)", edit=header_attr("Time", 1e300))

    def no_header(f):
        del f["Header"]
    c.add("hd_missing", "bad", "no /Header", edit=no_header)

    def header_dataset(f):
        del f["Header"]
        f["Header"] = np.zeros(3)
    c.add("hd_dataset", "bad", "/Header is a dataset", edit=header_dataset)


def string_cases(c):
    c.add("str_array", "bad", "Method an array of two strings",
          edit=param_attr("Method", [b"tree", b"direct"], h5py.string_dtype("ascii", 6)))
    c.add("str_empty", "bad", "Method an empty string", edit=param_attr("Method", ""))
    c.add("str_unknown", "bad", "Method an unknown name (UTF-8)", edit=param_attr("Method", "sometimes \u00e9"))
    c.add("str_number", "bad", "Method a number", edit=param_attr("Method", 3.0))
    c.add("str_long", "bad", "Method a 100000-character string", edit=param_attr("Method", "x" * 100000))
    c.add("num_string", "bad", "Softening a string", edit=param_attr("Softening", "small"))
    c.add("num_nan", "bad", "Softening NaN", edit=param_attr("Softening", np.nan))


def structure_cases(c, d):
    def drop(path):
        def edit(f):
            del f[path]
        return edit
    c.add("st_no_parttype", "bad", "no PartType group", edit=drop("PartType1"))

    def parttype_dataset(f):
        del f["PartType1"]
        f["PartType1"] = np.zeros(3)
    c.add("st_parttype_dataset", "bad", "/PartType1 is a dataset", edit=parttype_dataset)

    def coords_group(f):
        del f["PartType1/Coordinates"]
        f["PartType1"].create_group("Coordinates")
    c.add("st_coords_group", "bad", "Coordinates is a group", edit=coords_group)

    def dangling(f):
        del f["PartType1/Coordinates"]
        f["PartType1/Coordinates"] = h5py.SoftLink("/nowhere")
    c.add("st_soft_dangling", "bad", "Coordinates a dangling soft link", edit=dangling)

    def external(f):
        del f["PartType1/Velocities"]
        f["PartType1/Velocities"] = h5py.ExternalLink("missing-file.hdf5", "/v")
    c.add("st_external_missing", "bad", "Velocities an external link to a missing file", edit=external)

    def hard(f):
        del f["PartType1/Velocities"]
        f["PartType1/Velocities"] = f["PartType1/Coordinates"]
    c.add("st_hard_link", "good", "Velocities a hard link to Coordinates", edit=hard)
    c.raw("st_empty_file", "bad", "an empty file", b"")
    c.raw("st_text", "bad", "a text file", b"not a snapshot\n")
    os.mkdir(os.path.join(d, "st_directory.hdf5"))
    c.note("st_directory", "bad", "a directory")
    fifo = os.path.abspath(os.path.join(d, "st_fifo.hdf5"))
    os.mkfifo(fifo)
    c.note("st_fifo", "bad", "a FIFO")
    # data outside the file, here a FIFO: reading it would block for ever
    def external_storage(f):
        del f["PartType1/Coordinates"]
        f["PartType1"].create_dataset("Coordinates", shape=(N, 3), dtype="f8", external=[(fifo, 0, N * 24)])
    c.add("st_external_storage_fifo", "bad", "Coordinates stored in an external file (a FIFO)", edit=external_storage)

    def external_link(f):
        del f["PartType1/Masses"]
        f["PartType1/Masses"] = h5py.ExternalLink(fifo, "/Masses")
    c.add("st_external_link_fifo", "bad", "Masses an external link into a FIFO", edit=external_link)

    def virtual(f):
        del f["PartType1/Velocities"]
        layout = h5py.VirtualLayout(shape=(N, 3), dtype="f8")
        layout[:] = h5py.VirtualSource(fifo, "v", shape=(N, 3))
        f["PartType1"].create_virtual_dataset("Velocities", layout)
    c.add("st_virtual_fifo", "bad", "Velocities a virtual dataset mapping a FIFO", edit=virtual)

    def parttype_link(f):
        del f["PartType1"]
        f["PartType1"] = h5py.ExternalLink(os.path.abspath(os.path.join(d, "base.hdf5")), "/PartType1")
    c.add("st_external_group", "bad", "/PartType1 an external link to another file", edit=parttype_link)


def byte_cases(c, d):
    base = open(os.path.join(d, "base.hdf5"), "rb").read()
    for cut in (0, 8, 100, 512, len(base) // 3, len(base) // 2, len(base) - 100, len(base) - 1):
        c.raw("tr_%d" % cut, "bad", "truncated at byte %d of %d" % (cut, len(base)), base[:cut])
    rng = np.random.default_rng(RNG_SEED)
    for k in range(24):
        b = bytearray(base)
        at = int(rng.integers(0, len(b)))
        b[at] ^= 1 << int(rng.integers(0, 8))
        c.raw("fl_%02d" % k, "any", "bit flipped at byte %d" % at, bytes(b))

def forces(d, eps=0.01):
    """Direct-summation accelerations and potentials (G = 1, Plummer)."""
    x, m = d["Coordinates"], d["Masses"]
    dx = x[None, :, :] - x[:, None, :]
    r2 = (dx ** 2).sum(axis=2) + eps * eps
    inv = 1.0 / np.sqrt(r2)
    np.fill_diagonal(inv, 0.0)
    acc = (m[None, :, None] * dx * (inv ** 3)[:, :, None]).sum(axis=1)
    pot = -(m[None, :] * inv).sum(axis=1)
    return acc, pot


def with_forces(acc_edit=None, pot_edit=None, acc=True, pot=True):
    """The base file plus Acceleration and Potential, each optionally
    replaced by acc_edit(acc) / pot_edit(pot)."""
    d = arrays()
    a, phi = forces(d)
    if acc:
        d["Acceleration"] = acc_edit(a) if acc_edit else a
    if pot:
        d["Potential"] = pot_edit(phi) if pot_edit else phi
    return d


def set_at(index, value):
    def edit(v):
        v = v.copy()
        v[index] = value
        return v
    return edit


def forces_cases(c):
    """Files with forces: what compare reads on either side."""
    c.add("fc_good", "pair", "Acceleration and Potential of direct summation", with_forces())
    c.add("fc_acc_only", "pair", "Acceleration without Potential", with_forces(pot=False))
    c.add("fc_pot_only", "good", "Potential without Acceleration", with_forces(acc=False))
    c.add("fc_float32", "pair", "forces as float32",
          with_forces(lambda a: a.astype(np.float32), lambda p: p.astype(np.float32)))
    c.add("fc_acc_nan", "bad", "an Acceleration NaN", with_forces(set_at((5, 0), np.nan)))
    c.add("fc_acc_inf", "bad", "an Acceleration +Inf", with_forces(set_at((6, 2), np.inf)))
    c.add("fc_pot_minf", "bad", "a Potential -Inf", with_forces(pot_edit=set_at(7, -np.inf)))
    c.add("fc_acc_n2", "bad", "Acceleration (N, 2)", with_forces(lambda a: a[:, :2]))
    c.add("fc_acc_short", "bad", "Acceleration N - 1 rows", with_forces(lambda a: a[:-1]))
    c.add("fc_pot_long", "bad", "Potential N + 1 rows", with_forces(pot_edit=lambda p: np.append(p, 0.0)))
    c.add("fc_pot_n1", "bad", "Potential (N, 1)", with_forces(pot_edit=lambda p: p[:, None]))
    c.add("fc_acc_strings", "bad", "Acceleration of strings",
          with_forces(lambda a: np.array([[b"a", b"b", b"c"]] * len(a))))
    c.add("fc_acc_sparse", "bad", "Acceleration alone claims 2^61 rows", with_forces(),
          edit=sparse(2**61, "Acceleration"))
    c.add("fc_acc_zero_row", "any", "one Acceleration (0, 0, 0): no relative error there",
          with_forces(set_at(9, 0.0)))
    c.add("fc_acc_zero", "any", "every Acceleration 0", with_forces(lambda a: np.zeros_like(a)))
    c.add("fc_pot_zero", "any", "every Potential 0", with_forces(pot_edit=lambda p: np.zeros_like(p)))
    c.add("fc_acc_big", "any", "Acceleration 1e300 and -1e300", with_forces(
        lambda a: set_at((4, 1), -1e300)(set_at((3, 0), 1e300)(a))))
    c.add("fc_acc_denormal", "pair", "an Acceleration component 1e-310", with_forces(set_at((2, 2), 1e-310)))

    def group_acc(f):
        del f["PartType1/Acceleration"]
        f["PartType1"].create_group("Acceleration")
    c.add("fc_acc_group", "bad", "Acceleration is a group", with_forces(), edit=group_acc)


def param_string_cases(c):
    """The names banyan reads from /Parameters in every string form."""
    vl_utf8, vl_ascii = h5py.string_dtype("utf-8"), h5py.string_dtype("ascii")
    for attr, value in (("Backend", "cpu"), ("Curve", "morton"), ("OpeningCriterion", "bh")):
        b = value.encode()
        c.add("ps_%s_vl_utf8" % attr.lower(), "good", "%s as variable-length UTF-8" % attr,
              edit=param_attr(attr, value, vl_utf8))
        c.add("ps_%s_vl_ascii" % attr.lower(), "good", "%s as variable-length ASCII" % attr,
              edit=param_attr(attr, b, vl_ascii))
        c.add("ps_%s_fixed_utf8" % attr.lower(), "good", "%s as fixed-length UTF-8" % attr,
              edit=param_attr(attr, b, h5py.string_dtype("utf-8", len(b))))
        c.add("ps_%s_array_vl" % attr.lower(), "bad", "%s an array of 3 variable-length strings" % attr,
              edit=param_attr(attr, [value] * 3, vl_utf8))
        c.add("ps_%s_empty_vl" % attr.lower(), "bad", "%s an empty variable-length string" % attr,
              edit=param_attr(attr, "", vl_utf8))
    for size in (63, 64, 65, 1000):
        c.add("ps_method_padded_%d" % size, "good", "Method 'direct' in a %d-byte null-padded string" % size,
              edit=param_attr("Method", b"direct", h5py.string_dtype("ascii", size)))
    c.add("ps_method_one_char", "bad", "Method a 1-byte string 'd'",
          edit=param_attr("Method", b"d", h5py.string_dtype("ascii", 1)))
    c.add("ps_method_nul_inside", "any", "Method 'tree\\0junk' (fixed length)",
          edit=param_attr("Method", b"tree\0junk", h5py.string_dtype("ascii", 9)))
    c.add("ps_method_bad_utf8", "bad", "Method invalid UTF-8 bytes (fixed UTF-8)",
          edit=param_attr("Method", b"\xff\xfe\xc3", h5py.string_dtype("utf-8", 3)))
    c.add("ps_method_long_vl", "bad", "Method 'direct' then 1000 spaces (variable length)",
          edit=param_attr("Method", "direct" + " " * 1000, vl_utf8))
    c.add("ps_method_array_1", "any", "Method an array of one string",
          edit=param_attr("Method", ["direct"], vl_utf8))
    c.add("ps_method_2d", "bad", "Method a 2 x 2 array of strings",
          edit=param_attr("Method", np.array([[b"tree", b"tree"], [b"tree", b"tree"]]),
                          h5py.string_dtype("ascii", 4)))
    c.add("ps_method_null_space", "bad", "Method with a null dataspace",
          edit=param_attr("Method", h5py.Empty(h5py.string_dtype("ascii", 4))))

    def spacepad(f):
        p = f["Parameters"]
        del p.attrs["Method"]
        t = h5py.h5t.C_S1.copy()
        t.set_size(16)
        t.set_strpad(h5py.h5t.STR_SPACEPAD)
        a = h5py.h5a.create(p.id, b"Method", t, h5py.h5s.create(h5py.h5s.SCALAR))
        a.write(np.array(b"direct".ljust(16), dtype="S16"), mtype=t)
    c.add("ps_method_spacepad", "good", "Method 'direct' space-padded (Fortran's strings)", edit=spacepad)


def param_number_cases(c):
    """Numbers read from /Parameters and /Units."""
    for tag, name, v in (("leaf_2_40", "LeafSize", 2**40), ("leaf_2_32_16", "LeafSize", 2**32 + 16),
                         ("leaf_half", "LeafSize", 1.5), ("leaf_string", "LeafSize", "16"),
                         ("group_m1", "GroupSize", -1), ("quad_nan", "Quadrupole", np.nan),
                         ("theta_big", "OpeningAngle", 1e300), ("theta_neg", "OpeningAngle", -1.0),
                         ("soft_inf", "Softening", np.inf), ("soft_neg", "Softening", -0.01),
                         ("g_nan", "GravitationalConstant", np.nan), ("g_neg", "GravitationalConstant", -1.0),
                         ("g_inf", "GravitationalConstant", np.inf), ("alpha_zero", "AccelAlpha", 0.0),
                         ("target_one", "ErrorTarget", 1.0), ("expansion_2", "GroupExpansion", 2.0),
                         ("soft_array", "Softening", np.array([0.01, 0.02])),
                         ("soft_empty", "Softening", h5py.Empty("f8")),
                         ("length_zero", "UnitLength_in_cm", 0.0), ("mass_nan", "UnitMass_in_g", np.nan),
                         ("units_overflow", "UnitVelocity_in_cm_per_s", 1e300)):
        edit = param_attr(name, v)
        if tag == "units_overflow":
            def edit(f, e=edit):
                e(f)
                f["Parameters"].attrs["UnitLength_in_cm"] = 1e300
                f["Parameters"].attrs["UnitMass_in_g"] = 1e300
        c.add("pn_" + tag, "bad", "/Parameters %s = %s" % (name, v), edit=edit)
    c.add("pn_g_zero", "good", "GravitationalConstant 0 (GADGET-4: from the units)",
          edit=param_attr("GravitationalConstant", 0.0))
    c.add("pn_leaf_int64", "good", "LeafSize 16 as int64", edit=param_attr("LeafSize", np.int64(16)))

    def units_group(f):
        u = f.create_group("Units")
        u.attrs["UnitLength_in_cm"] = -1.0
        u.attrs["UnitMass_in_g"] = 1.0
        u.attrs["UnitVelocity_in_cm_per_s"] = 1.0
    c.add("pn_units_group_neg", "bad", "/Units UnitLength_in_cm -1", edit=units_group)

    def parameters_dataset(f):
        del f["Parameters"]
        f["Parameters"] = np.zeros(2)
    c.add("pn_parameters_dataset", "bad", "/Parameters is a dataset", edit=parameters_dataset)

    def units_dataset(f):
        f["Units"] = np.zeros(2)
    c.add("pn_units_dataset", "bad", "/Units is a dataset", edit=units_dataset)


def more_header_cases(c):
    for tag, name, v, kind in (
            ("time_empty", "Time", h5py.Empty("f8"), "bad"),
            ("time_array", "Time", np.array([0.0, 1.0]), "any"),
            ("boxsize_neg", "BoxSize", -1.0, "bad"),
            ("boxsize_nan", "BoxSize", np.array([1.0, np.nan, 1.0]), "any"),
            ("count_float", "NumPart_ThisFile", np.array([0, N, 0, 0, 0, 0], dtype=np.float64), "any"),
            ("count_half", "NumPart_ThisFile", np.array([0, N + 0.5, 0, 0, 0, 0]), "bad"),
            ("count_two", "NumPart_ThisFile", np.array([0, N], dtype=np.uint32), "any"),
            ("count_seven", "NumPart_ThisFile", np.array([0, N, 0, 0, 0, 0, 5], dtype=np.uint32), "any"),
            ("count_scalar", "NumPart_ThisFile", np.uint32(N), "any"),
            ("count_nan", "NumPart_Total", np.array([0, np.nan, 0, 0, 0, 0]), "bad"),
            ("count_strings", "NumPart_ThisFile", np.array([b"0", b"64"]), "bad"),
            ("count_2_64", "NumPart_Total", np.array([0, 2**64 - 1, 0, 0, 0, 0], dtype=np.uint64), "bad"),
            ("masstable_inf", "MassTable", np.array([0, np.inf, 0, 0, 0, 0]), "bad"),
            ("masstable_long", "MassTable", np.zeros(1000), "any"),
            ("nfiles_big", "NumFilesPerSnapshot", np.int64(2**62), "bad"),
            ("nfiles_string", "NumFilesPerSnapshot", np.bytes_("1"), "bad")):
        c.add("hd_" + tag, kind, "Header %s = %s" % (name, str(v).replace("\n", " ")[:60]),
              edit=header_attr(name, v))

    def no_attrs(f):
        for k in list(f["Header"].attrs.keys()):
            del f["Header"].attrs[k]
    c.add("hd_no_attrs", "any", "/Header without attributes", edit=no_attrs)

    def massless_table(f):
        del f["PartType1/Masses"]
    c.add("hd_no_masses", "bad", "no Masses and MassTable 0", edit=massless_table)


def more_structure_cases(c, d):
    def two_types(f):
        g = f.create_group("PartType0")
        rng = np.random.default_rng(RNG_SEED + 1)
        g["Coordinates"] = rng.normal(size=(5, 3))
        g["Velocities"] = np.zeros((5, 3))
        g["Masses"] = np.full(5, 0.01)
        g["ParticleIDs"] = np.arange(N + 1, N + 6, dtype=np.uint64)
        for k in ("NumPart_ThisFile", "NumPart_Total"):
            f["Header"].attrs[k] = np.array([5, N, 0, 0, 0, 0], dtype=np.uint32)
    c.add("st_two_types", "good", "PartType0 (5) and PartType1 (64)", edit=two_types)

    def two_types_dup_ids(f):
        two_types(f)
        f["PartType0/ParticleIDs"][...] = np.arange(1, 6, dtype=np.uint64)
    c.add("st_two_types_dup_ids", "bad", "PartType0's ids repeat PartType1's", edit=two_types_dup_ids)

    def two_types_short(f):
        two_types(f)
        del f["PartType0/Velocities"]
        f["PartType0/Velocities"] = np.zeros((4, 3))
    c.add("st_two_types_short", "bad", "PartType0 Velocities 4 rows for 5", edit=two_types_short)

    def type_uncounted(f):
        g = f.create_group("PartType2")
        g["Coordinates"] = np.zeros((3, 3))
    c.add("st_type_uncounted", "bad", "PartType2 with Coordinates only, counted 0", edit=type_uncounted)

    def soft_loop(f):
        del f["PartType1/Coordinates"]
        f["PartType1/Coordinates"] = h5py.SoftLink("/PartType1/Coordinates")
    c.add("st_soft_loop", "bad", "Coordinates a soft link to itself", edit=soft_loop)

    def soft_group(f):
        f.move("PartType1", "Data")
        f["PartType1"] = h5py.SoftLink("/Data")
    c.add("st_soft_group", "good", "/PartType1 a soft link to a group", edit=soft_group)

    def external_existing(f):
        del f["PartType1/Coordinates"]
        f["PartType1/Coordinates"] = h5py.ExternalLink("base.hdf5", "/PartType1/Coordinates")
    c.add("st_external_existing", "bad", "Coordinates an external link into base.hdf5", edit=external_existing)

    def external_storage(f):
        v = f["PartType1/Velocities"][...]
        del f["PartType1/Velocities"]
        raw = os.path.join(d, "velocities.raw")
        v.astype("<f8").tofile(raw)
        f["PartType1"].create_dataset("Velocities", shape=v.shape, dtype="<f8", external=[("velocities.raw", 0, v.nbytes)])
    c.add("st_external_storage", "bad", "Velocities kept in an external raw file", edit=external_storage)

    def virtual(f):
        layout = h5py.VirtualLayout(shape=(N, 3), dtype="f8")
        layout[:] = h5py.VirtualSource("base.hdf5", "/PartType1/Coordinates", shape=(N, 3))
        del f["PartType1/Coordinates"]
        f["PartType1"].create_virtual_dataset("Coordinates", layout)
    c.add("st_virtual", "bad", "Coordinates a virtual dataset mapping base.hdf5", edit=virtual)

    def null_space(f):
        del f["PartType1/Coordinates"]
        f["PartType1/Coordinates"] = h5py.Empty("f8")
    c.add("st_null_space", "bad", "Coordinates with a null dataspace", edit=null_space)

    def compressed(f):
        g = f["PartType1"]
        for k in list(g.keys()):
            v = g[k][...]
            del g[k]
            g.create_dataset(k, data=v, compression="gzip", shuffle=True, fletcher32=True, chunks=True)
    c.add("st_gzip", "good", "every dataset gzip + shuffle + fletcher32", edit=compressed)

    def lzf(f):
        # a grid compresses (LZF skips a chunk that does not shrink)
        i = np.arange(N)
        v = np.stack([i % 4, i // 4 % 4, i // 16], axis=1).astype(np.float64)
        del f["PartType1/Coordinates"]
        f["PartType1"].create_dataset("Coordinates", data=v, compression="lzf")
    c.add("st_lzf", "bad", "Coordinates compressed with LZF (a filter libhdf5 lacks)", edit=lzf)

    def big_endian(f):
        for k, dt in (("Coordinates", ">f8"), ("ParticleIDs", ">u8")):
            v = f["PartType1/" + k][...]
            del f["PartType1/" + k]
            f["PartType1"].create_dataset(k, data=v.astype(dt))
    c.add("st_big_endian", "good", "big-endian Coordinates and ParticleIDs", edit=big_endian)

    def no_velocities(f):
        del f["PartType1/Velocities"]
    c.add("st_no_velocities", "any", "no Velocities", edit=no_velocities)

    def no_ids(f):
        del f["PartType1/ParticleIDs"]
    c.add("st_no_ids", "any", "no ParticleIDs", edit=no_ids)

    base = os.path.join(d, "base.hdf5")
    for name, kind, desc, target in (("st_symlink", "good", "a symbolic link to a valid file", "base.hdf5"),
                                     ("st_symlink_fifo", "bad", "a symbolic link to a FIFO", "st_fifo.hdf5"),
                                     ("st_symlink_dangling", "bad", "a dangling symbolic link", "nowhere.hdf5"),
                                     ("st_symlink_loop", "bad", "a symbolic link to itself", "st_symlink_loop.hdf5")):
        os.symlink(target, os.path.join(d, name + ".hdf5"))
        c.note(name, kind, desc)
    assert os.path.exists(base)


def scale_cases(c):
    """Valid numbers whose forces overflow, underflow or divide by zero."""
    d = arrays()
    for tag, scale in (("tiny", 1e-160), ("huge", 1e160), ("1e154", 1e154)):
        e = arrays()
        e["Coordinates"] = d["Coordinates"] * scale
        c.add("sc_coords_" + tag, "any", "Coordinates scaled by %g" % scale, e)
    e = arrays()
    e["Coordinates"] = np.zeros((N, 3))
    c.add("sc_coincident", "any", "every particle at the origin", e)

    def coincident_unsoftened(f):
        f["PartType1/Coordinates"][...] = np.zeros((N, 3))
        f["Parameters"].attrs["Softening"] = 0.0
    c.add("sc_coincident_soft0", "any", "every particle at the origin, Softening 0", edit=coincident_unsoftened)
    c.add("sc_masses_huge", "any", "every mass 1e300", replaced("Masses", np.full(N, 1e300)))
    c.add("sc_masses_tiny", "any", "every mass 1e-300", replaced("Masses", np.full(N, 1e-300)))
    c.add("sc_velocities_huge", "any", "every velocity 1e300", replaced("Velocities", np.full((N, 3), 1e300)))
    e = arrays()
    e["Coordinates"] = np.full((N, 3), 1e100)
    c.add("sc_coincident_far", "good", "every particle at (1e100, 1e100, 1e100)", e)
    e = arrays()
    e["Coordinates"], e["Masses"] = d["Coordinates"] * 1e10, np.full(N, 1e300)
    c.add("sc_com_overflow", "any", "masses 1e300 at 1e10: sum m x overflows", e)
    c.add("sc_one_particle", "any", "a single particle",
          {k: v[:1] for k, v in d.items()}, n=1)
    c.add("sc_ids_max", "good", "ids up to 2^64 - 1",
          replaced("ParticleIDs", np.arange(2**64 - N, 2**64, dtype=np.uint64)))


def raw_data_flips(c, d):
    """Flips inside the raw numbers of base.hdf5: undetectable by HDF5
    (no checksum), the values become huge, tiny, NaN or Inf."""
    base = open(os.path.join(d, "base.hdf5"), "rb").read()
    with h5py.File(os.path.join(d, "base.hdf5"), "r") as f:
        offsets = {k: f["PartType1/" + k].id.get_offset() for k in ("Coordinates", "Masses", "ParticleIDs")}
    # byte 7 of a little-endian double: its sign and top exponent bits
    for tag, k, byte, bit in (("coords_exp", "Coordinates", 8 * 10 + 7, 6), ("coords_nan", "Coordinates", 8 * 20 + 7, 6),
                              ("masses_sign", "Masses", 8 * 3 + 7, 7), ("masses_exp", "Masses", 8 * 4 + 7, 6),
                              ("ids_top", "ParticleIDs", 8 * 5 + 7, 7), ("ids_low", "ParticleIDs", 8 * 6, 0)):
        b = bytearray(base)
        at = offsets[k] + byte
        b[at] ^= 1 << bit
        if tag == "coords_nan":  # every exponent bit set: Inf or NaN
            b[at] |= 0x7F
            b[at - 1] |= 0xF0
        c.raw("fr_" + tag, "any", "%s: bit %d of byte %d of the raw data" % (k, bit, byte), bytes(b))


def damaged_attribute_cases(c, d):
    """Attributes whose dataspace claims 2^40 values (patched after
    writing): HDF5 cannot even tell whether they exist (H5Aexists < 0),
    which must not read as "absent"."""
    for tag, group, name in (("time", "Header", "Time"), ("masstable", "Header", "MassTable"),
                             ("units", "Parameters", "UnitLength_in_cm")):
        path = os.path.join(d, "da_%s.hdf5" % tag)

        def edit(f, group=group, name=name):
            f[group].attrs[name] = np.full(77, 2.5)
        write(path, edit=edit)
        b = bytearray(open(path, "rb").read())
        at = b.find(name.encode() + b"\0")
        dim = b.find((77).to_bytes(8, "little"), at)
        assert at >= 0 and dim > at, (tag, at, dim)
        b[dim:dim + 8] = (2**40).to_bytes(8, "little")
        c.raw("da_" + tag, "bad", "/%s attribute %s with a dataspace of 2^40 values" % (group, name), bytes(b))


def split_set(c, name, kind, desc, edit1=None, cut1=None):
    """A snapshot of two files, <name>.0.hdf5 and <name>.1.hdf5 (the case
    is file 0: reading it reads the set), half the particles each;
    edit1(f) changes file 1, cut1 truncates it to that many bytes."""
    data, half = arrays(), N // 2
    for k, (lo, hi) in enumerate(((0, half), (half, N))):
        path = os.path.join(c.d, "%s.%d.hdf5" % (name, k))
        with h5py.File(path, "w") as f:
            h = header(f, hi - lo)
            h.attrs["NumPart_Total"] = np.array([0, N, 0, 0, 0, 0], dtype=np.uint32)
            h.attrs["NumFilesPerSnapshot"] = np.int32(2)
            parameters(f)
            g = f.create_group("PartType1")
            for key, v in data.items():
                g[key] = v[lo:hi]
            if k == 1 and edit1:
                edit1(f)
        if k == 1 and cut1 is not None:
            with open(path, "r+b") as f:
                f.truncate(cut1)
    c.note(name + ".0", kind, desc)


def split_set_cases(c):
    """Sets of two files: a valid one, and one hostile member each."""
    split_set(c, "ss_good", "good", "a valid set of two files")
    split_set(c, "ss_trunc", "bad", "a set whose second file is truncated", cut1=1500)
    split_set(c, "ss_total", "bad", "a set whose second file says another NumPart_Total",
              edit1=header_attr("NumPart_Total", np.array([0, N + 7, 0, 0, 0, 0], dtype=np.uint32)))
    split_set(c, "ss_nfiles", "bad", "a set whose second file says NumFilesPerSnapshot 3",
              edit1=header_attr("NumFilesPerSnapshot", np.int32(3)))

    def duplicate_ids(f):
        ids = f["PartType1/ParticleIDs"]
        ids[...] = np.arange(1, ids.shape[0] + 1, dtype=np.uint64)  # file 0's ids again
    split_set(c, "ss_dupid", "bad", "a set whose two files hold the same ids", edit1=duplicate_ids)

    def nan_position(f):
        x = f["PartType1/Coordinates"]
        v = x[...]
        v[3, 1] = np.nan
        x[...] = v
    split_set(c, "ss_nan", "bad", "a set whose second file holds a NaN coordinate", edit1=nan_position)


def main(d):
    os.makedirs(d, exist_ok=True)
    write(os.path.join(d, "base.hdf5"))
    c = Cases(d)
    good_cases(c)
    shape_and_type_cases(c)
    length_cases(c)
    value_cases(c)
    header_cases(c)
    string_cases(c)
    structure_cases(c, d)
    forces_cases(c)
    param_string_cases(c)
    param_number_cases(c)
    more_header_cases(c)
    more_structure_cases(c, d)
    scale_cases(c)
    byte_cases(c, d)
    raw_data_flips(c, d)
    damaged_attribute_cases(c, d)
    foreign_cases(c, arrays())
    split_set_cases(c)
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("\n".join(c.lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
