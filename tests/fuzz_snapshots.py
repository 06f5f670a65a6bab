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
    byte_cases(c, d)
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("\n".join(c.lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
