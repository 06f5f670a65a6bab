/* Reading meshes: FLASH checkpoint and plot files (HDF5, PARAMESH layout:
 * "bounding box", "refine level", "node type", "unknown names", one dataset
 * per variable; the leaf blocks are kept) and banyan's own block-mesh
 * layout (docs/ARCHITECTURE.md). Every failure names the file, the
 * dataset and the block. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/files.h"
#include "io/mesh_h5.h"
#include "io/snapshot_h5.h"
#include "mesh/mesh_internal.h"


/* What a reader knows of a file's blocks before it makes the mesh. */
typedef struct file_blocks {
    size_t n;
    double *box;   /* 6 per block: lo x, y, z, hi x, y, z */
    int *level;
    int *leaf;     /* 1: a leaf block                      */
    int nb[3];
    double time;
} file_blocks;

static void file_blocks_free(file_blocks *fb)
{
    free(fb->box);
    free(fb->level);
    free(fb->leaf);
}

static bn_status check_blocks(const char *file, const file_blocks *fb, const char *box_name, const char *level_name)
{
    for (size_t b = 0; b < fb->n; b++) {
        if (fb->level[b] < 1 || fb->level[b] > BN_MESH_MAX_LEVEL)
            return bn_fail(BN_ERR_FORMAT, "%s: '%s' of block %zu is %d (must be in [1, %d])", file, level_name, b,
                           fb->level[b], BN_MESH_MAX_LEVEL);
        for (int k = 0; k < 3; k++) {
            const double lo = fb->box[6 * b + k], hi = fb->box[6 * b + 3 + k];
            if (!(isfinite(lo) && isfinite(hi) && lo < hi))
                return bn_fail(BN_ERR_FORMAT, "%s: '%s' of block %zu: %c from %g to %g (must be finite, lower < upper)",
                               file, box_name, b, "xyz"[k], lo, hi);
        }
    }
    return BN_OK;
}

/* One variable of every block (n x nz x ny x nx, any float or integer
 * type) into dst (the file's block order). */
static bn_status read_var(hid_t f, const char *file, const char *name, const file_blocks *fb, double **dst)
{
    const hsize_t want[4] = {fb->n, (hsize_t)fb->nb[2], (hsize_t)fb->nb[1], (hsize_t)fb->nb[0]};
    hsize_t dims[4];
    void *buf = NULL;
    BN_TRY(bn_mh5_read(f, file, name, 4, want, dims, H5T_NATIVE_DOUBLE, sizeof(double), &buf));
    *dst = buf;
    return BN_OK;
}

/* The mesh of the leaves, variables names[0..nv) read from datasets
 * dsets[0..nv). */
static bn_status make_mesh(hid_t f, const char *file, const file_blocks *fb, char names[][BN_MESH_NAME_LEN],
                           char dsets[][BN_MESH_NAME_LEN + 16], int nv, bn_mesh **out)
{
    bn_mesh *m = NULL;
    BN_TRY(bn_mesh_create(&m, fb->nb[0], fb->nb[1], fb->nb[2]));
    m->time = fb->time;
    bn_status s = BN_OK;
    int vi[BN_MESH_MAX_VARS];
    for (int v = 0; s == BN_OK && v < nv; v++) s = bn_mesh_add_var(m, names[v], &vi[v]);
    for (size_t b = 0; s == BN_OK && b < fb->n; b++) {
        if (!fb->leaf[b]) continue;
        size_t at;
        s = bn_mesh_add_block(m, fb->box + 6 * b, fb->box + 6 * b + 3, fb->level[b], &at);
        if (s == BN_OK) m->file_block[at] = (int64_t)b;
    }
    if (s == BN_OK && m->n_blocks == 0) s = bn_fail(BN_ERR_FORMAT, "%s: no leaf blocks", file);
    const size_t cells = bn_mesh_block_cells(m);
    for (int v = 0; s == BN_OK && v < nv; v++) {
        double *all = NULL;
        s = read_var(f, file, dsets[v], fb, &all);
        for (size_t b = 0; s == BN_OK && b < m->n_blocks; b++)
            memcpy(m->var[vi[v]] + b * cells, all + (size_t)m->file_block[b] * cells, cells * sizeof(double));
        free(all);
    }
    if (s == BN_OK) s = bn_mesh_validate(m, file);
    if (s != BN_OK) {
        bn_mesh_free(m);
        return s;
    }
    *out = m;
    return BN_OK;
}

/* ---- FLASH ----------------------------------------------------------------- */

static bn_status flash_int_param(hid_t f, const char *file, const char *key, double *v, int *found)
{
    BN_TRY(bn_flash_table_get(f, file, "integer scalars", BN_FLASH_INT, key, v, found));
    if (!*found) BN_TRY(bn_flash_table_get(f, file, "integer runtime parameters", BN_FLASH_INT, key, v, found));
    return BN_OK;
}

/* nxb, nyb, nzb from "integer scalars" (else the first variable's shape). */
static bn_status flash_block_cells(hid_t f, const char *file, file_blocks *fb)
{
    static const char *const keys[3] = {"nxb", "nyb", "nzb"};
    double dim = 3;
    int found;
    BN_TRY(flash_int_param(f, file, "dimensionality", &dim, &found));
    if (found && dim != 3)
        return bn_fail(BN_ERR_UNSUPPORTED, "%s: dimensionality %g: only 3-D meshes are supported", file, dim);
    for (int k = 0; k < 3; k++) {
        double v = 0;
        BN_TRY(flash_int_param(f, file, keys[k], &v, &found));
        if (!found)
            return bn_fail(BN_ERR_FORMAT, "%s: 'integer scalars' has no %s (cells per block)", file, keys[k]);
        if (!(v >= 1 && v <= BN_MESH_MAX_BLOCK_CELLS))
            return bn_fail(BN_ERR_FORMAT, "%s: %s = %g (must be in [1, %d])", file, keys[k], v,
                           BN_MESH_MAX_BLOCK_CELLS);
        fb->nb[k] = (int)v;
    }
    double t = 0;
    BN_TRY(bn_flash_table_get(f, file, "real scalars", BN_FLASH_REAL, "time", &t, &found));
    if (!isfinite(t)) return bn_fail(BN_ERR_FORMAT, "%s: 'real scalars' time = %g (not finite)", file, t);
    fb->time = t;
    return BN_OK;
}

static bn_status flash_blocks(hid_t f, const char *file, file_blocks *fb)
{
    memset(fb, 0, sizeof *fb);
    hsize_t dims[3];
    const hsize_t want_box[3] = {0, 3, 2};
    void *buf = NULL;
    BN_TRY(bn_mh5_read(f, file, "bounding box", 3, want_box, dims, H5T_NATIVE_DOUBLE, sizeof(double), &buf));
    fb->n = dims[0];
    fb->box = buf; /* (n, 3, 2): lo, hi per axis; reordered below */
    for (size_t b = 0; b < fb->n; b++) {
        double v[6];
        for (int k = 0; k < 3; k++) {
            v[k] = fb->box[6 * b + 2 * k];
            v[3 + k] = fb->box[6 * b + 2 * k + 1];
        }
        memcpy(fb->box + 6 * b, v, sizeof v);
    }
    const hsize_t want_n[1] = {fb->n};
    BN_TRY(bn_mh5_read(f, file, "refine level", 1, want_n, dims, H5T_NATIVE_INT, sizeof(int), &buf));
    fb->level = buf;
    BN_TRY(bn_mh5_read(f, file, "node type", 1, want_n, dims, H5T_NATIVE_INT, sizeof(int), &buf));
    fb->leaf = buf;
    for (size_t b = 0; b < fb->n; b++) {
        if (fb->leaf[b] < 1 || fb->leaf[b] > 3)
            return bn_fail(BN_ERR_FORMAT, "%s: 'node type' of block %zu is %d (1 leaf, 2 parent, 3 ancestor)", file,
                           b, fb->leaf[b]);
        fb->leaf[b] = fb->leaf[b] == 1;
    }
    BN_TRY(check_blocks(file, fb, "bounding box", "refine level"));
    return flash_block_cells(f, file, fb);
}

/* The variables to read: `vars` (each must be a dataset of the file), or
 * every unknown. */
static bn_status pick_vars(hid_t f, const char *file, const char *vars, char names[][BN_MESH_NAME_LEN],
                           char dsets[][BN_MESH_NAME_LEN + 16], int *nv, int flash)
{
    int n = 0;
    if (vars) {
        n = bn_mesh_split_names(vars, names, BN_MESH_MAX_VARS, "variables");
        if (n < 0) return BN_ERR_ARGUMENT;
        const int twice = bn_mesh_names_repeated(names, n);
        if (twice >= 0) return bn_fail(BN_ERR_ARGUMENT, "variables '%s' name %s twice", vars, names[twice]);
    } else if (flash) {
        BN_TRY(bn_flash_unknowns_read(f, file, names, BN_MESH_MAX_VARS, &n));
    }
    for (int v = 0; v < n; v++) {
        snprintf(dsets[v], BN_MESH_NAME_LEN + 16, flash ? "%.15s" : "variables/%.15s", names[v]);
        int present;
        BN_TRY(bn_mh5_has(f, file, dsets[v], &present));
        if (!present) return bn_fail(BN_ERR_FORMAT, "%s: no dataset '%s' (variable %s)", file, dsets[v], names[v]);
    }
    *nv = n;
    return BN_OK;
}

/* ---- banyan's layout ----------------------------------------------------------- */

static bn_status native_blocks(hid_t f, const char *file, file_blocks *fb)
{
    memset(fb, 0, sizeof *fb);
    double cells[3] = {0, 0, 0}, version = 0;
    size_t n = 0;
    BN_TRY(bn_h5_attr_read_double(f, file, "banyan_mesh_version", &version));
    if (version != 1)
        return bn_fail(BN_ERR_UNSUPPORTED, "%s: banyan_mesh_version %g (this build reads version 1)", file, version);
    BN_TRY(bn_h5_attr_read_doubles(f, file, "block_cells", cells, 3, &n));
    if (n != 3) return bn_fail(BN_ERR_FORMAT, "%s: attribute block_cells has %zu values, expected 3", file, n);
    for (int k = 0; k < 3; k++) {
        if (!(cells[k] >= 1 && cells[k] <= BN_MESH_MAX_BLOCK_CELLS && cells[k] == floor(cells[k])))
            return bn_fail(BN_ERR_FORMAT, "%s: block_cells[%d] = %g (must be a whole number in [1, %d])", file, k,
                           cells[k], BN_MESH_MAX_BLOCK_CELLS);
        fb->nb[k] = (int)cells[k];
    }
    BN_TRY(bn_h5_attr_read_double(f, file, "time", &fb->time));
    if (!isfinite(fb->time)) return bn_fail(BN_ERR_FORMAT, "%s: attribute time = %g (not finite)", file, fb->time);
    hsize_t dims[2];
    const hsize_t want3[2] = {0, 3};
    void *lo = NULL, *hi = NULL, *lev = NULL;
    BN_TRY(bn_mh5_read(f, file, "blocks/lower", 2, want3, dims, H5T_NATIVE_DOUBLE, sizeof(double), &lo));
    fb->n = dims[0];
    const hsize_t want_hi[2] = {fb->n, 3}, want_n[1] = {fb->n};
    bn_status s = bn_mh5_read(f, file, "blocks/upper", 2, want_hi, dims, H5T_NATIVE_DOUBLE, sizeof(double), &hi);
    if (s == BN_OK) s = bn_mh5_read(f, file, "blocks/level", 1, want_n, dims, H5T_NATIVE_INT, sizeof(int), &lev);
    if (s == BN_OK && !(fb->box = bn_alloc_array(fb->n ? fb->n : 1, 6 * sizeof(double), "mesh blocks"))) s = BN_ERR_NOMEM;
    if (s == BN_OK && !(fb->leaf = bn_alloc_array(fb->n ? fb->n : 1, sizeof(int), "mesh blocks"))) s = BN_ERR_NOMEM;
    for (size_t b = 0; s == BN_OK && b < fb->n; b++) {
        for (int k = 0; k < 3; k++) {
            fb->box[6 * b + k] = ((double *)lo)[3 * b + k];
            fb->box[6 * b + 3 + k] = ((double *)hi)[3 * b + k];
        }
        fb->leaf[b] = 1;
    }
    fb->level = lev;
    free(lo);
    free(hi);
    if (s == BN_OK) s = check_blocks(file, fb, "blocks/lower and blocks/upper", "blocks/level");
    return s;
}

static bn_status native_vars(hid_t f, const char *file, char names[][BN_MESH_NAME_LEN], int *n)
{
    *n = 0;
    int present;
    BN_TRY(bn_mh5_has(f, file, "variables", &present));
    if (!present) return bn_fail(BN_ERR_FORMAT, "%s: no group /variables", file);
    /* H5Gopen2 would follow an external link into another file */
    BN_TRY(bn_h5_check_local(f, file, "variables"));
    hid_t g = H5Gopen2(f, "variables", H5P_DEFAULT);
    if (g < 0) return bn_h5_fail(BN_ERR_FORMAT, "%s: no group /variables", file);
    H5G_info_t info;
    bn_status s = H5Gget_info(g, &info) < 0 ? bn_h5_fail(BN_ERR_FORMAT, "%s: cannot list /variables", file) : BN_OK;
    if (s == BN_OK && info.nlinks > BN_MESH_MAX_VARS)
        s = bn_fail(BN_ERR_FORMAT, "%s: /variables holds %llu datasets (at most %d)", file,
                    (unsigned long long)info.nlinks, BN_MESH_MAX_VARS);
    for (hsize_t i = 0; s == BN_OK && i < info.nlinks; i++) {
        const ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, names[i], BN_MESH_NAME_LEN,
                                               H5P_DEFAULT);
        if (len <= 0 || len >= BN_MESH_NAME_LEN)
            s = bn_fail(BN_ERR_FORMAT, "%s: /variables entry %llu has a name of %zd characters (1 to %d)", file,
                        (unsigned long long)i, len, BN_MESH_NAME_LEN - 1);
    }
    H5Gclose(g);
    *n = s == BN_OK ? (int)info.nlinks : 0;
    return s;
}

bn_status bn_mesh_read(const char *path, const char *vars, bn_mesh **out)
{
    if (!path || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_read: NULL argument");
    *out = NULL;
    BN_TRY(bn_check_regular_file(path, path, NULL));
    bn_h5_quiet();
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        FILE *fp = fopen(path, "rb");
        if (!fp) return bn_fail(BN_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        fclose(fp);
        return bn_fail(BN_ERR_FORMAT, "%s is not an HDF5 file", path);
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot open %s", path);
    int flash = 0, native = 0;
    bn_status s = bn_mh5_has(f, path, "bounding box", &flash);
    if (s == BN_OK && !flash) s = bn_h5_attr_present(f, path, "banyan_mesh_version", &native);
    if (s == BN_OK && !flash && !native)
        s = bn_fail(BN_ERR_FORMAT, "%s: neither a FLASH file (no dataset 'bounding box') nor a banyan mesh (no "
                    "attribute banyan_mesh_version)", path);
    file_blocks fb;
    memset(&fb, 0, sizeof fb);
    char names[BN_MESH_MAX_VARS][BN_MESH_NAME_LEN], dsets[BN_MESH_MAX_VARS][BN_MESH_NAME_LEN + 16];
    int nv = 0;
    if (s == BN_OK) s = flash ? flash_blocks(f, path, &fb) : native_blocks(f, path, &fb);
    if (s == BN_OK && native && !vars) s = native_vars(f, path, names, &nv);
    if (s == BN_OK && native && !vars)
        for (int v = 0; v < nv; v++) snprintf(dsets[v], sizeof dsets[v], "variables/%.15s", names[v]);
    if (s == BN_OK && (flash || vars)) s = pick_vars(f, path, vars, names, dsets, &nv, flash);
    if (s == BN_OK) s = make_mesh(f, path, &fb, names, dsets, nv, out);
    if (s == BN_OK) (*out)->from_flash = flash;
    file_blocks_free(&fb);
    H5Fclose(f);
    return s;
}

int bn_mesh_file_detect(const char *path)
{
    if (!path || bn_check_regular_file(path, path, NULL) != BN_OK) {
        bn_clear_error();
        return 0;
    }
    bn_h5_quiet();
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    int flash = 0, native = 0;
    if (bn_mh5_has(f, path, "bounding box", &flash) != BN_OK) flash = 0;
    if (!flash && bn_h5_attr_present(f, path, "banyan_mesh_version", &native) != BN_OK) native = 0;
    H5Fclose(f);
    bn_clear_error();
    return flash || native;
}
