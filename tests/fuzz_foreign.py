"""The fuzz cases of the GADGET-2 and tipsy readers (issue 20), made here
with struct from the formats' descriptions (not with banyan's writer):
valid files in each variant, truncations, bit flips, and files wrong in
their meaning (record markers, counts, NaN, negative masses, labels).
Registered through fuzz_snapshots.py's Cases (raw bytes under the case's
name: the reader tells the format from the content, not the name)."""
import struct

import numpy as np

TYPES = 6


def gadget2(pos, vel, ids, masses, fmt2=False, big=False, wide=False, npart=None, mass_table=None,
            num_files=1, time=0.0, edit_header=None, skip=()):
    """A GADGET-2 file: gas (the first 8 particles, MASS block) and
    PartType1 (the rest, header mass). wide: double values, 64-bit ids."""
    e = ">" if big else "<"
    n = len(pos)
    npart = npart or [8, n - 8, 0, 0, 0, 0]
    mass_table = mass_table if mass_table is not None else [0.0, float(masses[-1]), 0, 0, 0, 0]
    real, idt = ("d", "Q") if wide else ("f", "I")

    def block(label, payload):
        if label in skip:
            return b""
        head = struct.pack(e + "I4sII", 8, label.encode(), len(payload) + 8, 8) if fmt2 else b""
        m = struct.pack(e + "I", len(payload))
        return head + m + payload + m

    h = struct.pack(e + "6I6d2d2i6Iii4d2i6Ii", *npart, *mass_table, time, 0.0, 0, 0, *npart, 0, num_files,
                    0.0, 0.0, 0.0, 0.0, 0, 0, *([0] * 6), 0)
    h = h + b"\0" * (256 - len(h))
    if edit_header:
        h = edit_header(h, e)
    out = block("HEAD", h)
    out += block("POS ", struct.pack(e + "%d%s" % (3 * n, real), *pos.ravel()))
    out += block("VEL ", struct.pack(e + "%d%s" % (3 * n, real), *vel.ravel()))
    out += block("ID  ", struct.pack(e + "%d%s" % (n, idt), *ids))
    n_mass = sum(npart[t] for t in range(TYPES) if mass_table[t] == 0)  # in type order: the first n_mass
    out += block("MASS", struct.pack(e + "%d%s" % (n_mass, real), *masses[:n_mass]))
    return out


def tipsy(pos, vel, masses, big=True, counts=None, nbodies=None, ndim=3, time=0.0):
    """A tipsy file: the first 8 particles gas, the last 8 stars, the rest
    dark; every extra field (rho, temp, eps, phi...) 0.01."""
    e = ">" if big else "<"
    n = len(pos)
    counts = counts or (8, n - 16, 8)
    out = struct.pack(e + "d6i", time, n if nbodies is None else nbodies, ndim, *counts, 0)
    extra = (5, 2, 4)
    for i in range(n):
        k = 0 if i < 8 else 2 if i >= n - 8 else 1
        out += struct.pack(e + "7f", masses[i], *pos[i], *vel[i]) + struct.pack(e + "%df" % extra[k],
                                                                                   *([0.01] * extra[k]))
    return out


def put(b, at, fmt, value):
    b = bytearray(b)
    struct.pack_into(fmt, b, at, value)
    return bytes(b)


def header_value(at, fmt, value):
    return lambda h, e: put(h, at, e + fmt, value)


def flips(c, prefix, base, seed, count):
    rng = np.random.default_rng(seed)
    for k in range(count):
        b = bytearray(base)
        at = int(rng.integers(0, len(b)))
        b[at] ^= 1 << int(rng.integers(0, 8))
        c.raw("%s_fl_%02d" % (prefix, k), "any", "%s: bit flipped at byte %d" % (prefix, at), bytes(b))


def truncations(c, prefix, base):
    for cut in (4, 31, 100, 264, 268, len(base) // 2, len(base) - 1):
        c.raw("%s_tr_%d" % (prefix, cut), "bad", "%s truncated at byte %d of %d" % (prefix, cut, len(base)),
              base[:cut])


def gadget2_cases(c, d):
    pos, vel, m, ids = d["Coordinates"], d["Velocities"], d["Masses"], d["ParticleIDs"]
    g = lambda **k: gadget2(pos, vel, ids, m, **k)
    base = g()
    c.raw("g2_f1_le", "good", "GADGET-2 format 1, little-endian, float32, 32-bit ids", base)
    c.raw("g2_f1_be", "good", "GADGET-2 format 1, big-endian", g(big=True))
    c.raw("g2_f2_le", "good", "GADGET-2 format 2, double values, 64-bit ids", g(fmt2=True, wide=True))
    c.raw("g2_f2_be", "good", "GADGET-2 format 2, big-endian", g(fmt2=True, big=True))
    truncations(c, "g2", base)
    flips(c, "g2", base, 20, 16)
    pos_end = 4 + 256 + 4 + 4 + 12 * len(pos)
    c.raw("g2_pos_marker", "bad", "POS's end marker wrong", put(base, pos_end, "<I", 7))
    c.raw("g2_head_marker", "bad", "HEAD's start marker 257", put(base, 0, "<I", 257))
    c.raw("g2_huge_record", "bad", "POS's marker 2^32 - 16", put(base, 264, "<I", 2**32 - 16))
    n = len(pos)
    for name, k, desc in (("neg", -1, "npart[1] = -1"), ("huge", 2**31 - 1, "npart[1] = 2^31 - 1"),
                          ("more", n - 7, "npart[1] one more than POS holds")):
        c.raw("g2_npart_" + name, "bad", desc, g(edit_header=header_value(4, "i", k)))
    c.raw("g2_total_mismatch", "bad", "npartTotal[0] 9 in a single file", g(edit_header=header_value(96, "I", 9)))
    c.raw("g2_num_files_2", "bad", "num_files 2 in a file not named .<k>", g(num_files=2))
    c.raw("g2_num_files_neg", "bad", "num_files -1", g(num_files=-1))
    c.raw("g2_num_files_big", "bad", "num_files 2^20", g(num_files=2**20))
    for name, v in (("nan", float("nan")), ("neg", -1.0), ("inf", float("inf"))):
        c.raw("g2_mass_" + name, "bad", "header mass[1] = %g" % v, g(mass_table=[0, v, 0, 0, 0, 0]))
    c.raw("g2_time_nan", "bad", "header time NaN", g(time=float("nan")))
    c.raw("g2_box_neg", "bad", "header BoxSize -1", g(edit_header=header_value(128, "d", -1.0)))
    bad = pos.copy()
    bad[5, 1] = np.nan
    c.raw("g2_pos_nan", "bad", "POS with a NaN", gadget2(bad, vel, ids, m))
    mm = m.copy()
    mm[3] = -1
    c.raw("g2_mass_block_neg", "bad", "MASS block with a negative mass", gadget2(pos, vel, ids, mm))
    c.raw("g2_no_mass_block", "bad", "gas with header mass 0 and no MASS block", g(skip=("MASS",)))
    c.raw("g2_f2_no_vel", "bad", "format 2 without VEL", g(fmt2=True, skip=("VEL ",)))
    f2 = g(fmt2=True)
    c.raw("g2_f2_label_len", "bad", "format 2: a label record of 9 bytes", put(f2, 0, "<I", 9))
    c.raw("g2_f2_first_pos", "bad", "format 2: first label POS", put(f2, 4, "4s", b"POS "))
    dup = ids.copy()
    dup[10] = dup[11]
    c.raw("g2_dup_ids", "bad", "two particles with one id", gadget2(pos, vel, dup, m))
    c.raw("g2_zero_mass", "bad", "every mass 0", gadget2(pos, vel, ids, 0 * m, mass_table=[0] * 6))


def tipsy_cases(c, d):
    pos, vel, m = d["Coordinates"], d["Velocities"], d["Masses"]
    t = lambda **k: tipsy(pos, vel, m, **k)
    base = t()
    c.raw("tp_std", "good", "tipsy standard (big-endian): gas, dark, stars", base)
    c.raw("tp_native", "good", "tipsy native (little-endian)", t(big=False))
    truncations(c, "tp", base)
    flips(c, "tp", base, 21, 16)
    n = len(pos)
    c.raw("tp_nbodies", "bad", "nbodies one more than the counts", t(nbodies=n + 1))
    c.raw("tp_nsph_neg", "bad", "nsph -1", t(counts=(-1, n - 7, 8)))
    c.raw("tp_huge", "bad", "ndark 2^31 - 9 (nbodies agreeing)", t(counts=(0, 2**31 - 9, 8), nbodies=2**31 - 1))
    c.raw("tp_ndim", "bad", "ndim 2", t(ndim=2))
    c.raw("tp_time_inf", "bad", "time Inf", t(time=float("inf")))
    c.raw("tp_trailing", "bad", "a byte after the last record", base + b"\0")
    bad = pos.copy()
    bad[20, 2] = np.inf
    c.raw("tp_pos_inf", "bad", "a dark particle at z = Inf", tipsy(bad, vel, m))
    mm = m.copy()
    mm[n - 1] = -1
    c.raw("tp_mass_neg", "bad", "a star of mass -1", tipsy(pos, vel, mm))


def foreign_cases(c, d):
    gadget2_cases(c, d)
    tipsy_cases(c, d)
