"""Hostile mesh files for tests/cli_mesh.sh, each a copy of a valid FLASH
file (made by banyan mesh-ic) with one thing wrong, and the message part
banyan must name.   usage: make_meshes.py GOOD.h5 DIR [GOOD_BANYAN.h5]
writes DIR/<case>.h5 and DIR/cases.txt: "<case>|<expected message part>|<who>",
who = "all" (potential and render refuse it) or "potential" (a file that
only the solver must refuse: a negative density is a valid picture, render
reads only the variable it draws; the copy's tree, which only the writer
of potential's output reads). GOOD_BANYAN.h5 (banyan's layout) adds the
cases of that layout.

Also DIR/link_soft.h5, link_external.h5 and gpot_int32.h5: valid inputs
whose existing 'gpot' potential must replace, never write through (a soft
link to /dens, an external link to DIR/victim.h5's dens, int32 data)."""
import os
import shutil
import sys

import h5py
import numpy as np


def case(good, d, name, want, edit, who="all"):
    path = os.path.join(d, name + ".h5")
    shutil.copy(good, path)
    with h5py.File(path, "r+") as f:
        edit(f)
    return "%s|%s|%s" % (name, want, who)


def replace(f, name, data):
    del f[name]
    f[name] = data


def leaf(f):
    """The first leaf block."""
    return int(np.nonzero(f["node type"][:] == 1)[0][0])


def negative_density(f):
    d = f["dens"][...]
    b = leaf(f)
    d[b, 0, 0, 3] = -1.0
    f["dens"][...] = d


def nan_density(f):
    d = f["dens"][...]
    d[leaf(f), 1, 2, 0] = np.nan
    f["dens"][...] = d


def box_shape(f):
    replace(f, "bounding box", f["bounding box"][:, :2, :])


def box_nan(f):
    bb = f["bounding box"][...]
    bb[leaf(f), 0, 1] = np.nan
    f["bounding box"][...] = bb


def box_inverted(f):
    bb = f["bounding box"][...]
    b = leaf(f)
    bb[b, 1, 0], bb[b, 1, 1] = bb[b, 1, 1], bb[b, 1, 0]
    f["bounding box"][...] = bb


def overlap(f):
    """Two leaves at one place: the second's box moved onto the first's."""
    leaves = np.nonzero(f["node type"][:] == 1)[0]
    a, b = int(leaves[0]), int(leaves[1])
    bb = f["bounding box"][...]
    lv = f["refine level"][...]
    bb[b] = bb[a]
    lv[b] = lv[a]
    f["bounding box"][...] = bb
    f["refine level"][...] = lv


def node_type(f):
    t = f["node type"][...]
    t[3] = 7
    f["node type"][...] = t


def level_zero(f):
    lv = f["refine level"][...]
    lv[leaf(f)] = 0
    f["refine level"][...] = lv


def level_short(f):
    replace(f, "refine level", f["refine level"][:-1])


def var_shape(f):
    replace(f, "dens", f["dens"][:, :, :, :4])


def var_missing(f):
    del f["dens"]


def no_unknowns(f):
    del f["unknown names"]


def no_box(f):
    del f["bounding box"]


def no_nxb(f):
    t = f["integer scalars"][...]
    keep = [r for r in t if r["name"].strip() != b"nxb"]
    replace(f, "integer scalars", np.array(keep, dtype=t.dtype))


def level_float(f):
    """Levels as floats: 3.7 must not be read as 3."""
    replace(f, "refine level", f["refine level"][...].astype("f8") + 0.7)


def nxb_float(f):
    """'integer scalars' with floating-point values (nxb 8.7)."""
    t = f["integer scalars"][...]
    dt = np.dtype([("name", t.dtype["name"]), ("value", "f8")])
    v = np.array([(r["name"], r["value"] + (0.7 if r["name"].strip() == b"nxb" else 0)) for r in t], dtype=dt)
    replace(f, "integer scalars", v)


def unknowns_twice(f):
    """'unknown names' listing dens twice: two variables of one dataset."""
    replace(f, "unknown names", np.array([[b"dens"], [b"dens"]], dtype="S4"))


def parent(f):
    """The first block with children."""
    return int(np.nonzero(f["node type"][:] != 1)[0][0])


def gid_edit(f, edit):
    g = f["gid"][...]
    edit(g)
    f["gid"][...] = g


def gid_leaf_children(f):
    """A leaf whose gid names a parent's children: restriction would
    overwrite the leaf's values with their average."""
    p, b = parent(f), leaf(f)
    gid_edit(f, lambda g: g.__setitem__((b, slice(7, 15)), g[p, 7:15]))


def gid_self_child(f):
    """A parent whose children are itself: it would end all zeros."""
    p = parent(f)
    gid_edit(f, lambda g: g.__setitem__((p, slice(7, 15)), p + 1))


def gid_wrong_level(f):
    """A child of the wrong level (a level-1 parent's grandchild)."""
    p = parent(f)
    grand = int(np.nonzero(f["refine level"][:] == f["refine level"][p] + 2)[0][0])
    gid_edit(f, lambda g: g.__setitem__((p, 7), grand + 1))


def gid_swapped(f):
    """Two children swapped: the restriction would put them in each
    other's octant."""
    p = parent(f)

    def swap(g):
        g[p, 7], g[p, 8] = g[p, 8], g[p, 7]

    gid_edit(f, swap)


def sparse_huge(f):
    """A dataset that claims 2^40 blocks, stored sparse (a tiny file)."""
    del f["dens"]
    f.create_dataset("dens", shape=(2**40, 8, 8, 8), dtype="f8", chunks=(1, 8, 8, 8))


def native_cases(good, d):
    """banyan's layout: groups that are links into another file (which
    holds valid data: following the link would succeed), float levels."""
    target = os.path.join(d, "native_target.h5")
    shutil.copy(good, target)

    def external(group):
        def edit(f):
            del f[group]
            f[group] = h5py.ExternalLink("native_target.h5", "/" + group)

        return edit

    return [
        case(good, d, "native_blocks_external", "blocks is an external or user-defined link", external("blocks")),
        case(good, d, "native_vars_external", "variables is an external or user-defined link", external("variables")),
        case(good, d, "native_level_float", "dataset 'blocks/level' must hold integers",
             lambda f: replace(f, "blocks/level", f["blocks/level"][...] + 0.5)),
    ]


def copies(good, d):
    """Inputs with a 'gpot' that potential's copy must replace."""
    shutil.copy(good, os.path.join(d, "victim.h5"))
    for name, make in [("link_soft", lambda f: h5py.SoftLink("/dens")),
                       ("link_external", lambda f: h5py.ExternalLink("victim.h5", "/dens")),
                       ("gpot_int32", lambda f: np.ones(f["dens"].shape, dtype="i4"))]:
        path = os.path.join(d, name + ".h5")
        shutil.copy(good, path)
        with h5py.File(path, "r+") as f:
            f["gpot"] = make(f)


def main(good, d, native=None):
    os.makedirs(d, exist_ok=True)
    cases = [
        case(good, d, "negative_density", "variable dens of block", negative_density, "potential"),
        case(good, d, "nan_density", "is nan (must be finite)", nan_density),
        case(good, d, "box_shape", "dataset 'bounding box' has shape", box_shape),
        case(good, d, "box_nan", "'bounding box' of block", box_nan),
        case(good, d, "box_inverted", "(must be finite, lower < upper)", box_inverted),
        case(good, d, "overlap", "overlap", overlap),
        case(good, d, "node_type", "'node type' of block 3 is 7", node_type),
        case(good, d, "level_zero", "'refine level' of block", level_zero),
        case(good, d, "level_short", "dataset 'refine level' has shape", level_short),
        case(good, d, "var_shape", "dataset 'dens' has shape", var_shape),
        case(good, d, "var_missing", "no dataset 'dens'", var_missing),
        case(good, d, "no_unknowns", "no dataset 'unknown names'", no_unknowns, "potential"),
        case(good, d, "no_box", "neither a FLASH file", no_box, "potential"),
        case(good, d, "no_nxb", "has no nxb", no_nxb),
        case(good, d, "sparse_huge", "dataset 'dens' has shape", sparse_huge),
        case(good, d, "level_float", "dataset 'refine level' must hold integers", level_float),
        case(good, d, "nxb_float", "field 'value' of dataset 'integer scalars' must hold integers", nxb_float),
        case(good, d, "unknowns_twice", "'unknown names' lists 'dens' twice", unknowns_twice, "potential"),
        case(good, d, "gid_leaf_children", "but its 'node type' is 1 (a leaf)", gid_leaf_children, "potential"),
        case(good, d, "gid_self_child", "names the block itself as child 1", gid_self_child, "potential"),
        case(good, d, "gid_wrong_level", "has 'refine level' 3, expected 2", gid_wrong_level, "potential"),
        case(good, d, "gid_swapped", "does not lie in octant 1", gid_swapped, "potential"),
    ]
    if native:
        cases += native_cases(native, d)
    copies(good, d)
    with open(os.path.join(d, "not_hdf5.h5"), "w") as f:
        f.write("this is not an HDF5 file\n")
    cases.append("not_hdf5|is not an HDF5 file|all")
    data = open(good, "rb").read()
    with open(os.path.join(d, "truncated.h5"), "wb") as f:
        f.write(data[: len(data) // 2])
    cases.append("truncated|truncated.h5|all")
    # bit flips anywhere (undetectable in raw data: any outcome but a crash)
    rng = np.random.default_rng(16)
    for k in range(12):
        b = bytearray(data)
        at = int(rng.integers(0, len(b)))
        b[at] ^= 1 << int(rng.integers(0, 8))
        with open(os.path.join(d, "flip_%02d.h5" % k), "wb") as f:
            f.write(bytes(b))
        cases.append("flip_%02d|-|any" % k)
    with open(os.path.join(d, "cases.txt"), "w") as f:
        f.write("\n".join(cases) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
