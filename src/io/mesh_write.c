/* Writing meshes: banyan's own layout, FLASH's PARAMESH layout with the
 * parent blocks rebuilt from the leaves, and a copy of a FLASH file with
 * new variables. Every file is written under a temporary name and
 * renamed: a failure leaves nothing half-written. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "core/error.h"
#include "core/files.h"
#include "io/mesh_h5.h"
#include "io/snapshot_h5.h"
#include "mesh/mesh_internal.h"


/* Never write what the readers would refuse. */
static bn_status check_writable(const char *path, const bn_mesh *m)
{
    if (!path || !m) return bn_fail(BN_ERR_ARGUMENT, "mesh writer: NULL argument");
    BN_TRY(bn_mesh_validate(m, path));
    if (!isfinite(m->time)) return bn_fail(BN_ERR_ARGUMENT, "%s: the time %g is not finite", path, m->time);
    return BN_OK;
}

/* A new HDF5 file filled by write(f, ctx). */
typedef struct h5_writer {
    bn_status (*write)(hid_t f, const void *ctx);
    const void *ctx;
} h5_writer;

static bn_status create_and_write(const char *tmp, void *ctx)
{
    const h5_writer *w = ctx;
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot create %s", tmp);
    bn_status s = w->write(f, w->ctx);
    if (H5Fclose(f) < 0 && s == BN_OK) s = bn_h5_fail(BN_ERR_IO, "cannot close %s", tmp);
    return s;
}

/* path written whole by write(f, ctx), or not at all. */
static bn_status write_atomic(const char *path, bn_status (*write)(hid_t, const void *), const void *ctx)
{
    h5_writer w = {write, ctx};
    return bn_h5_write_atomic(path, create_and_write, &w);
}

/* ---- banyan's layout ------------------------------------------------------ */

static bn_status write_native(hid_t f, const void *ctx)
{
    const bn_mesh *m = ctx;
    const int one = 1, cells[3] = {m->nb[0], m->nb[1], m->nb[2]};
    BN_TRY(bn_h5_attr_write(f, "banyan_mesh_version", H5T_NATIVE_INT, H5T_STD_I32LE, 0, &one));
    BN_TRY(bn_h5_attr_write(f, "block_cells", H5T_NATIVE_INT, H5T_STD_I32LE, 3, cells));
    BN_TRY(bn_h5_attr_write_double(f, "time", m->time));
    hid_t g = -1;
    BN_TRY(bn_h5_group_create(f, "blocks", &g));
    const hsize_t d3[2] = {m->n_blocks, 3}, d1[1] = {m->n_blocks};
    bn_status s = bn_mh5_write(g, "lower", 2, d3, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m->lo);
    if (s == BN_OK) s = bn_mh5_write(g, "upper", 2, d3, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m->hi);
    if (s == BN_OK) s = bn_mh5_write(g, "level", 1, d1, H5T_STD_I32LE, H5T_NATIVE_INT, m->level);
    H5Gclose(g);
    if (s == BN_OK) s = bn_h5_group_create(f, "variables", &g);
    const hsize_t dv[4] = {m->n_blocks, (hsize_t)m->nb[2], (hsize_t)m->nb[1], (hsize_t)m->nb[0]};
    for (int v = 0; s == BN_OK && v < m->n_vars; v++)
        s = bn_mh5_write(g, m->var_name[v], 4, dv, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m->var[v]);
    if (g >= 0) H5Gclose(g);
    return s;
}

bn_status bn_mesh_write(const char *path, const bn_mesh *m)
{
    BN_TRY(check_writable(path, m));
    return write_atomic(path, write_native, m);
}

/* ---- the full PARAMESH tree ------------------------------------------------- */

/* Every block of the tree (leaves and their ancestors) in FLASH's order:
 * depth first from each root block, a parent before its 8 children in
 * Morton order. */
typedef struct flash_tree {
    size_t n;
    int *level;
    int64_t *ijk;       /* 3 per block                                   */
    int *gid;           /* 15 per block: 6 neighbours, parent, 8 children
                           (1-based, -1 none; -21 at the domain's faces) */
    int64_t *leaf;      /* the mesh leaf of a block, -1 for a parent      */
    bn_mesh_octree o;
} flash_tree;

static void flash_tree_free(flash_tree *t)
{
    free(t->level);
    free(t->ijk);
    free(t->gid);
    free(t->leaf);
    bn_mesh_octree_free(&t->o);
}

/* The blocks of the tree: v[0] the mesh leaf (-1 a parent), v[1] the
 * block's number in FLASH's order. */
typedef struct tree_build {
    bn_block_map map;
    flash_tree *t;
    bn_status s;
} tree_build;

/* Emit block (level, c) and, unless it is a leaf, its 8 children. */
static void emit(tree_build *tb, int level, const int64_t c[3], int parent)
{
    if (tb->s != BN_OK) return;
    bn_block_slot *k = bn_block_map_find(&tb->map, level, c);
    if (!k) {
        tb->s = bn_fail(BN_ERR_ARGUMENT, "mesh: block (%lld, %lld, %lld) of level %d is missing: the leaves do not "
                        "tile their root blocks", (long long)c[0], (long long)c[1], (long long)c[2], level);
        return;
    }
    flash_tree *t = tb->t;
    const size_t id = t->n++;
    k->v[1] = (int64_t)id;
    t->level[id] = level;
    t->leaf[id] = k->v[0];
    memcpy(t->ijk + 3 * id, c, 3 * sizeof(int64_t));
    int *g = t->gid + 15 * id;
    for (int i = 0; i < 15; i++) g[i] = -1;
    g[6] = parent >= 0 ? parent + 1 : -1;
    if (k->v[0] >= 0) return;
    for (int o = 0; o < 8 && tb->s == BN_OK; o++) {
        const int64_t ch[3] = {2 * c[0] + (o & 1), 2 * c[1] + ((o >> 1) & 1), 2 * c[2] + ((o >> 2) & 1)};
        g[7 + o] = (int)t->n + 1;
        emit(tb, level + 1, ch, (int)id);
    }
}

/* Same-level neighbours (or -21 at the domain's faces). */
static void neighbours(tree_build *tb)
{
    flash_tree *t = tb->t;
    for (size_t id = 0; id < t->n; id++)
        for (int face = 0; face < 6; face++) {
            const int axis = face / 2, dir = face % 2 ? 1 : -1;
            int64_t c[3] = {t->ijk[3 * id], t->ijk[3 * id + 1], t->ijk[3 * id + 2]};
            c[axis] += dir;
            const int64_t n = (int64_t)t->o.nroot[axis] << (t->level[id] - 1);
            if (c[axis] < 0 || c[axis] >= n) {
                t->gid[15 * id + face] = -21;
                continue;
            }
            const bn_block_slot *k = bn_block_map_find(&tb->map, t->level[id], c);
            t->gid[15 * id + face] = k ? (int)k->v[1] + 1 : -1;
        }
}

static bn_status flash_tree_make(const bn_mesh *m, flash_tree *t)
{
    memset(t, 0, sizeof *t);
    BN_TRY(bn_mesh_octree_make(m, &t->o));
    size_t total = 0;
    for (size_t b = 0; b < m->n_blocks; b++) total += (size_t)m->level[b];
    tree_build tb;
    memset(&tb, 0, sizeof tb);
    tb.t = t;
    tb.s = bn_block_map_init(&tb.map, total);
    t->level = bn_alloc_array(total, sizeof(int), "FLASH tree");
    t->ijk = bn_alloc_array(total, 3 * sizeof(int64_t), "FLASH tree");
    t->gid = bn_alloc_array(total, 15 * sizeof(int), "FLASH tree");
    t->leaf = bn_alloc_array(total, sizeof(int64_t), "FLASH tree");
    if (tb.s == BN_OK && (!t->level || !t->ijk || !t->gid || !t->leaf)) tb.s = BN_ERR_NOMEM;
    for (size_t b = 0; tb.s == BN_OK && b < m->n_blocks; b++)
        for (int L = 1; tb.s == BN_OK && L <= m->level[b]; L++) {
            int64_t c[3];
            bn_mesh_octree_ancestor(&t->o, m, b, L, c);
            bn_block_slot *k = NULL;
            tb.s = bn_block_map_put(&tb.map, L, c, -1, 0, &k);
            if (tb.s == BN_OK && L == m->level[b]) k->v[0] = (int64_t)b;
        }
    for (int64_t rz = 0; tb.s == BN_OK && rz < t->o.nroot[2]; rz++)
        for (int64_t ry = 0; ry < t->o.nroot[1]; ry++)
            for (int64_t rx = 0; rx < t->o.nroot[0]; rx++) {
                const int64_t c[3] = {rx, ry, rz};
                emit(&tb, 1, c, -1);
            }
    if (tb.s == BN_OK) neighbours(&tb);
    bn_block_map_free(&tb.map);
    if (tb.s != BN_OK) flash_tree_free(t);
    return tb.s;
}

/* Parent blocks from their children: the volume average of the 8 child
 * cells under each parent cell, deepest parents first. values: n blocks
 * x cells, leaves filled; leaf_of: the mesh leaf of each block (-1 for
 * parents); gid: 15 per block (children at 7..14, 1-based); order: the
 * blocks by decreasing level. */
static void restrict_parents(double *values, size_t n, const int64_t *leaf_of, const int *gid, const size_t *order,
                             const int nb[3])
{
    const size_t cells = (size_t)nb[0] * (size_t)nb[1] * (size_t)nb[2];
    const int h[3] = {nb[0] / 2, nb[1] / 2, nb[2] / 2};
    for (size_t r = 0; r < n; r++) {
        const size_t p = order[r];
        /* a leaf keeps the mesh's values whatever its gid says */
        if (leaf_of[p] >= 0) continue;
        double *dst = values + p * cells;
        for (int k = 0; k < nb[2]; k++)
            for (int j = 0; j < nb[1]; j++)
                for (int i = 0; i < nb[0]; i++) {
                    const int o = (i >= h[0]) + 2 * (j >= h[1]) + 4 * (k >= h[2]);
                    const double *src = values + (size_t)(gid[15 * p + 7 + o] - 1) * cells;
                    const int ci = 2 * (i % h[0]), cj = 2 * (j % h[1]), ck = 2 * (k % h[2]);
                    double sum = 0;
                    for (int c = 0; c < 8; c++)
                        sum += src[((size_t)(ck + (c >> 2)) * (size_t)nb[1] + (size_t)(cj + ((c >> 1) & 1))) * (size_t)nb[0] +
                                   (size_t)(ci + (c & 1))];
                    dst[((size_t)k * (size_t)nb[1] + (size_t)j) * (size_t)nb[0] + (size_t)i] = 0.125 * sum;
                }
    }
}

typedef struct by_level {
    int level;
    size_t id;
} by_level;

static int cmp_deeper_first(const void *a, const void *b)
{
    const by_level *x = a, *y = b;
    if (x->level != y->level) return y->level - x->level;
    return (x->id > y->id) - (x->id < y->id);
}

/* Block ids by decreasing level. */
static size_t *deepest_first(const int *level, size_t n)
{
    by_level *bl = bn_alloc_array(n, sizeof *bl, "block order");
    size_t *order = bn_alloc_array(n, sizeof *order, "block order");
    if (!bl || !order) {
        free(bl);
        free(order);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) bl[i] = (by_level){level[i], i};
    qsort(bl, n, sizeof *bl, cmp_deeper_first);
    for (size_t i = 0; i < n; i++) order[i] = bl[i].id;
    free(bl);
    return order;
}

/* The values of variable v at every block of the file: leaves from m
 * (leaf_of[id] = mesh block, -1 for parents), parents restricted. */
static bn_status all_blocks(const bn_mesh *m, int v, size_t n, const int64_t *leaf_of, const int *gid,
                            const size_t *order, double **out)
{
    const size_t cells = bn_mesh_block_cells(m);
    double *a = bn_calloc(n, cells * sizeof(double), m->var_name[v]);
    if (!a) return BN_ERR_NOMEM;
    for (size_t id = 0; id < n; id++)
        if (leaf_of[id] >= 0) memcpy(a + id * cells, m->var[v] + (size_t)leaf_of[id] * cells, cells * sizeof(double));
    restrict_parents(a, n, leaf_of, gid, order, m->nb);
    *out = a;
    return BN_OK;
}

static bn_status check_flash_names(const bn_mesh *m)
{
    for (int v = 0; v < m->n_vars; v++)
        if (strlen(m->var_name[v]) > BN_FLASH_VAR_LEN)
            return bn_fail(BN_ERR_ARGUMENT, "variable '%s': FLASH names have at most %d characters", m->var_name[v],
                           BN_FLASH_VAR_LEN);
    for (int k = 0; k < 3; k++)
        if (m->nb[k] % 2)
            return bn_fail(BN_ERR_ARGUMENT, "%d cells per block along %c: PARAMESH blocks have an even number",
                           m->nb[k], "xyz"[k]);
    return BN_OK;
}

/* "sim info": the file format version that yt and FLASH read first. */
static bn_status write_sim_info(hid_t f)
{
    typedef struct {
        int version;
        char flash_version[80];
        char created[80];
    } sim_info;
    sim_info si;
    memset(&si, 0, sizeof si);
    si.version = 9;
    snprintf(si.flash_version, sizeof si.flash_version, "banyan %s", BN_VERSION_STRING);
    const time_t now = time(NULL);
    struct tm tmv;
    if (gmtime_r(&now, &tmv)) strftime(si.created, sizeof si.created, "%Y-%m-%d %H:%M:%S UTC", &tmv);
    hid_t s80 = H5Tcopy(H5T_C_S1);
    H5Tset_size(s80, 80);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof si);
    H5Tinsert(t, "file format version", offsetof(sim_info, version), H5T_NATIVE_INT);
    H5Tinsert(t, "flash version", offsetof(sim_info, flash_version), s80);
    H5Tinsert(t, "file creation time", offsetof(sim_info, created), s80);
    const hsize_t one[1] = {1};
    bn_status s = bn_mh5_write(f, "sim info", 1, one, t, t, &si);
    H5Tclose(t);
    H5Tclose(s80);
    return s;
}

/* The scalar and runtime-parameter tables that yt and FLASH look up. */
static bn_status write_tables(hid_t f, const bn_mesh *m, const flash_tree *t)
{
    int lmax = 1;
    for (size_t b = 0; b < m->n_blocks; b++) lmax = m->level[b] > lmax ? m->level[b] : lmax;
    const bn_flash_param ints[] = {{"nxb", m->nb[0], NULL}, {"nyb", m->nb[1], NULL}, {"nzb", m->nb[2], NULL},
                                   {"dimensionality", 3, NULL}, {"globalnumblocks", (double)t->n, NULL},
                                   {"nstep", 0, NULL}, {"nbegin", 1, NULL}, {"checkpointfilenumber", 0, NULL},
                                   {"plotfilenumber", 0, NULL}};
    const bn_flash_param reals[] = {{"time", m->time, NULL}, {"dt", 0, NULL}, {"dtold", 0, NULL},
                                    {"redshift", 0, NULL}};
    const double *lo = t->o.domain_lo, *side = t->o.root_side;
    /* lrefine_min 1 whatever the leaves: the file's tree holds every level
     * from the root blocks down */
    const bn_flash_param rt_ints[] = {{"lrefine_min", 1, NULL}, {"lrefine_max", lmax, NULL},
                                      {"nblockx", t->o.nroot[0], NULL}, {"nblocky", t->o.nroot[1], NULL},
                                      {"nblockz", t->o.nroot[2], NULL}};
    const bn_flash_param rt_reals[] = {{"xmin", lo[0], NULL}, {"xmax", lo[0] + side[0] * t->o.nroot[0], NULL},
                                       {"ymin", lo[1], NULL}, {"ymax", lo[1] + side[1] * t->o.nroot[1], NULL},
                                       {"zmin", lo[2], NULL}, {"zmax", lo[2] + side[2] * t->o.nroot[2], NULL}};
    const bn_flash_param rt_strs[] = {{"geometry", 0, "cartesian"}, {"xl_boundary_type", 0, "outflow"},
                                      {"xr_boundary_type", 0, "outflow"}, {"yl_boundary_type", 0, "outflow"},
                                      {"yr_boundary_type", 0, "outflow"}, {"zl_boundary_type", 0, "outflow"},
                                      {"zr_boundary_type", 0, "outflow"}, {"grav_boundary_type", 0, "isolated"}};
    const bn_flash_param str_scalars[] = {{"run comment", 0, "written by banyan"}};
    BN_TRY(bn_flash_table_write(f, "integer scalars", BN_FLASH_INT, ints, sizeof ints / sizeof *ints));
    BN_TRY(bn_flash_table_write(f, "real scalars", BN_FLASH_REAL, reals, sizeof reals / sizeof *reals));
    BN_TRY(bn_flash_table_write(f, "string scalars", BN_FLASH_STRING, str_scalars, 1));
    BN_TRY(bn_flash_table_write(f, "integer runtime parameters", BN_FLASH_INT, rt_ints, sizeof rt_ints / sizeof *rt_ints));
    BN_TRY(bn_flash_table_write(f, "real runtime parameters", BN_FLASH_REAL, rt_reals, sizeof rt_reals / sizeof *rt_reals));
    return bn_flash_table_write(f, "string runtime parameters", BN_FLASH_STRING, rt_strs, sizeof rt_strs / sizeof *rt_strs);
}

/* The tree's datasets: bounding box, refine level, node type, which
 * child, gid, coordinates, block size, processor number. */
static bn_status write_tree(hid_t f, const flash_tree *t)
{
    const size_t n = t->n;
    double *box = bn_alloc_array(n, 6 * sizeof(double), "bounding box");
    double *ctr = bn_alloc_array(n, 3 * sizeof(double), "coordinates");
    double *size = bn_alloc_array(n, 3 * sizeof(double), "block size");
    int *type = bn_alloc_array(n, sizeof(int), "node type"), *which = bn_alloc_array(n, sizeof(int), "which child");
    int *proc = bn_calloc(n, sizeof(int), "processor number");
    bn_status s = box && ctr && size && type && which && proc ? BN_OK : BN_ERR_NOMEM;
    for (size_t id = 0; s == BN_OK && id < n; id++) {
        const double scale = ldexp(1.0, 1 - t->level[id]);
        for (int k = 0; k < 3; k++) {
            const double sd = t->o.root_side[k] * scale, lo = t->o.domain_lo[k] + (double)t->ijk[3 * id + k] * sd;
            box[6 * id + 2 * k] = lo;
            box[6 * id + 2 * k + 1] = lo + sd;
            ctr[3 * id + k] = lo + 0.5 * sd;
            size[3 * id + k] = sd;
        }
        const int *g = t->gid + 15 * id;
        int grand = 0;
        for (int o = 0; o < 8 && g[7] > 0; o++) grand |= t->gid[15 * (size_t)(g[7 + o] - 1) + 7] > 0;
        type[id] = g[7] <= 0 ? 1 : grand ? 3 : 2;
        which[id] = g[6] > 0 ? 1 + (int)((t->ijk[3 * id] & 1) + 2 * (t->ijk[3 * id + 1] & 1) + 4 * (t->ijk[3 * id + 2] & 1)) : -1;
    }
    const hsize_t d_box[3] = {n, 3, 2}, d3[2] = {n, 3}, d1[1] = {n}, d_gid[2] = {n, 15};
    if (s == BN_OK) s = bn_mh5_write(f, "bounding box", 3, d_box, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, box);
    if (s == BN_OK) s = bn_mh5_write(f, "coordinates", 2, d3, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, ctr);
    if (s == BN_OK) s = bn_mh5_write(f, "block size", 2, d3, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, size);
    if (s == BN_OK) s = bn_mh5_write(f, "refine level", 1, d1, H5T_STD_I32LE, H5T_NATIVE_INT, t->level);
    if (s == BN_OK) s = bn_mh5_write(f, "node type", 1, d1, H5T_STD_I32LE, H5T_NATIVE_INT, type);
    if (s == BN_OK) s = bn_mh5_write(f, "which child", 1, d1, H5T_STD_I32LE, H5T_NATIVE_INT, which);
    if (s == BN_OK) s = bn_mh5_write(f, "processor number", 1, d1, H5T_STD_I32LE, H5T_NATIVE_INT, proc);
    if (s == BN_OK) s = bn_mh5_write(f, "gid", 2, d_gid, H5T_STD_I32LE, H5T_NATIVE_INT, t->gid);
    free(box);
    free(ctr);
    free(size);
    free(type);
    free(which);
    free(proc);
    return s;
}

typedef struct flash_ctx {
    const bn_mesh *m;
    const flash_tree *t;
} flash_ctx;

static bn_status write_flash(hid_t f, const void *ctx)
{
    const flash_ctx *c = ctx;
    const bn_mesh *m = c->m;
    const flash_tree *t = c->t;
    BN_TRY(write_sim_info(f));
    BN_TRY(write_tables(f, m, t));
    BN_TRY(write_tree(f, t));
    char names[BN_MESH_MAX_VARS][BN_MESH_NAME_LEN];
    for (int v = 0; v < m->n_vars; v++) memcpy(names[v], m->var_name[v], BN_MESH_NAME_LEN);
    BN_TRY(bn_flash_unknowns_write(f, names, m->n_vars));
    size_t *order = deepest_first(t->level, t->n);
    if (!order) return BN_ERR_NOMEM;
    const hsize_t dv[4] = {t->n, (hsize_t)m->nb[2], (hsize_t)m->nb[1], (hsize_t)m->nb[0]};
    bn_status s = BN_OK;
    for (int v = 0; s == BN_OK && v < m->n_vars; v++) {
        double *a = NULL;
        s = all_blocks(m, v, t->n, t->leaf, t->gid, order, &a);
        if (s == BN_OK) s = bn_mh5_write(f, m->var_name[v], 4, dv, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, a);
        free(a);
    }
    free(order);
    return s;
}

bn_status bn_mesh_write_flash(const char *path, const bn_mesh *m)
{
    BN_TRY(check_writable(path, m));
    BN_TRY(check_flash_names(m));
    flash_tree t;
    BN_TRY(flash_tree_make(m, &t));
    const flash_ctx c = {m, &t};
    bn_status s = write_atomic(path, write_flash, &c);
    flash_tree_free(&t);
    return s;
}

/* ---- a copy of a FLASH file with new variables ------------------------------- */

/* What the copy needs of the source file: its tree, and m's leaves as
 * the file's leaves (leaf_of: file block -> mesh block, -1 parents). */
typedef struct flash_src {
    size_t n;
    int *gid, *level;
    int64_t *leaf_of;
} flash_src;

static void flash_src_free(flash_src *fs)
{
    free(fs->gid);
    free(fs->level);
    free(fs->leaf_of);
}

static bn_status match_leaves(const char *src, const bn_mesh *m, const double *box, const int *type, flash_src *fs)
{
    size_t file_leaves = 0;
    for (size_t i = 0; i < fs->n; i++) {
        fs->leaf_of[i] = -1;
        file_leaves += type[i] == 1;
    }
    for (size_t b = 0; b < m->n_blocks; b++) {
        const int64_t i = m->file_block[b];
        if (i < 0 || (size_t)i >= fs->n || type[i] != 1)
            return bn_fail(BN_ERR_ARGUMENT, "mesh block %zu is not a leaf block of %s (block %lld of the file): the mesh "
                           "must be the one read from it", b, src, (long long)i);
        for (int k = 0; k < 3; k++) {
            const double lo = box[6 * i + 2 * k], hi = box[6 * i + 2 * k + 1], tol = 1e-9 * (hi - lo);
            if (fabs(lo - m->lo[3 * b + k]) > tol || fabs(hi - m->hi[3 * b + k]) > tol)
                return bn_fail(BN_ERR_ARGUMENT, "mesh block %zu lies elsewhere than block %lld of %s", b, (long long)i,
                               src);
        }
        fs->leaf_of[i] = (int64_t)b;
    }
    if (file_leaves != m->n_blocks)
        return bn_fail(BN_ERR_ARGUMENT, "%s has %zu leaf blocks, the mesh %zu: the mesh must be the one read from it",
                       src, file_leaves, m->n_blocks);
    return BN_OK;
}

/* Is child block c in octant o of block p ((n, 3, 2) boxes)? PARAMESH
 * numbers the children x fastest, as restrict_parents reads them. */
static int in_octant(const double *box, size_t p, size_t c, int o)
{
    for (int k = 0; k < 3; k++) {
        const double plo = box[6 * p + 2 * k], half = 0.5 * (box[6 * p + 2 * k + 1] - plo);
        const double lo = plo + ((o >> k) & 1) * half, tol = 1e-9 * half;
        if (!(fabs(box[6 * c + 2 * k] - lo) <= tol && fabs(box[6 * c + 2 * k + 1] - (lo + half)) <= tol)) return 0;
    }
    return 1;
}

/* The copy fills parents from the children 'gid' names, so the table must
 * agree with 'node type' and the boxes: 8 children exactly for the
 * non-leaves, none for the leaves, each a block one level deeper in its
 * octant (a leaf with children would be overwritten by their average, a
 * parent that names itself would be filled with zeros). */
static bn_status check_children(const char *src, const flash_src *fs, const int *type, const double *box)
{
    for (size_t i = 0; i < fs->n; i++) {
        const int *g = fs->gid + 15 * i;
        for (int o = 0; o < 8; o++) {
            const int c = g[7 + o];
            if (type[i] == 1) {
                if (c > 0)
                    return bn_fail(BN_ERR_FORMAT, "%s: 'gid' of block %zu names child %d (block %d) but its 'node "
                                   "type' is 1 (a leaf)", src, i, o + 1, c - 1);
                continue;
            }
            if (c < 1 || (size_t)c > fs->n)
                return bn_fail(BN_ERR_FORMAT, "%s: 'gid' of block %zu: child %d is %d (its 'node type' %d needs 8 "
                               "children among the %zu blocks)", src, i, o + 1, c, type[i], fs->n);
            const size_t b = (size_t)c - 1;
            if (b == i)
                return bn_fail(BN_ERR_FORMAT, "%s: 'gid' of block %zu names the block itself as child %d", src, i, o + 1);
            if (fs->level[b] != fs->level[i] + 1)
                return bn_fail(BN_ERR_FORMAT, "%s: 'gid' of block %zu: child %d (block %zu) has 'refine level' %d, "
                               "expected %d", src, i, o + 1, b, fs->level[b], fs->level[i] + 1);
            if (!in_octant(box, i, b, o))
                return bn_fail(BN_ERR_FORMAT, "%s: 'gid' of block %zu: child %d (block %zu) does not lie in octant %d "
                               "of the block's 'bounding box'", src, i, o + 1, b, o + 1);
        }
    }
    return BN_OK;
}

static bn_status read_flash_src(const char *src, const bn_mesh *m, flash_src *fs)
{
    memset(fs, 0, sizeof *fs);
    hid_t f = H5Fopen(src, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot open %s", src);
    hsize_t dims[3];
    const hsize_t want_box[3] = {0, 3, 2};
    void *box = NULL, *type = NULL, *gid = NULL, *lev = NULL;
    bn_status s = bn_mh5_read(f, src, "bounding box", 3, want_box, dims, H5T_NATIVE_DOUBLE, sizeof(double), &box);
    fs->n = s == BN_OK ? dims[0] : 0;
    const hsize_t want_n[1] = {fs->n}, want_gid[2] = {fs->n, 15};
    if (s == BN_OK) s = bn_mh5_read(f, src, "node type", 1, want_n, dims, H5T_NATIVE_INT, sizeof(int), &type);
    if (s == BN_OK) s = bn_mh5_read(f, src, "refine level", 1, want_n, dims, H5T_NATIVE_INT, sizeof(int), &lev);
    if (s == BN_OK) s = bn_mh5_read(f, src, "gid", 2, want_gid, dims, H5T_NATIVE_INT, sizeof(int), &gid);
    fs->gid = gid;
    fs->level = lev;
    if (s == BN_OK) s = check_children(src, fs, type, box);
    if (s == BN_OK && !(fs->leaf_of = bn_alloc_array(fs->n ? fs->n : 1, sizeof(int64_t), "file blocks"))) s = BN_ERR_NOMEM;
    if (s == BN_OK) s = match_leaves(src, m, box, type, fs);
    free(box);
    free(type);
    H5Fclose(f);
    if (s != BN_OK) flash_src_free(fs);
    return s;
}

static bn_status copy_bytes(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
    bn_status s = in && out ? BN_OK : bn_fail(BN_ERR_IO, "cannot copy %s to %s: %s", src, dst, strerror(errno));
    char buf[1 << 16];
    size_t n;
    while (s == BN_OK && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) s = bn_fail(BN_ERR_IO, "cannot write %s: %s", dst, strerror(errno));
    if (s == BN_OK && ferror(in)) s = bn_fail(BN_ERR_IO, "cannot read %s", src);
    if (in) fclose(in);
    if (out && fclose(out) != 0 && s == BN_OK) s = bn_fail(BN_ERR_IO, "cannot write %s: %s", dst, strerror(errno));
    return s;
}

/* May the link `name` of the copy go? Any link but a hard one names
 * something else (a soft link to dens, another file): only the name goes.
 * A dataset of the file's own goes when it has the shape the new one will
 * have: another shape says the file is not laid out as the mesh read
 * from it. */
static bn_status check_replaceable(hid_t f, const char *file, const char *name, const hsize_t dv[4])
{
    H5L_info_t li;
    if (H5Lget_info(f, name, &li, H5P_DEFAULT) < 0) return bn_h5_fail(BN_ERR_FORMAT, "cannot look up %s/%s", file, name);
    if (li.type != H5L_TYPE_HARD) return BN_OK;
    hid_t d = H5Oopen(f, name, H5P_DEFAULT);
    if (d < 0 || H5Iget_type(d) != H5I_DATASET) {
        if (d >= 0) H5Oclose(d);
        H5Eclear2(H5E_DEFAULT);
        return bn_fail(BN_ERR_FORMAT, "%s: '%s' exists and is not a dataset: not replaced", file, name);
    }
    hid_t space = H5Dget_space(d);
    hsize_t got[4] = {0, 0, 0, 0};
    const int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank == 4) H5Sget_simple_extent_dims(space, got, NULL);
    if (space >= 0) H5Sclose(space);
    H5Oclose(d);
    if (rank != 4 || memcmp(got, dv, sizeof got))
        return bn_fail(BN_ERR_FORMAT, "%s: dataset '%s' exists with another shape: not replaced", file, name);
    return BN_OK;
}

/* Write values a (every block) as a new float64 dataset `name` of the
 * copy f. An existing link of that name is removed, never written
 * through: a soft link would overwrite what it names (dens), an external
 * link another file, an integer dataset would truncate the values. */
static bn_status put_var(hid_t f, const char *file, const char *name, const double *a, const hsize_t dv[4])
{
    int present;
    BN_TRY(bn_h5_link_present(f, file, name, &present));
    if (present) {
        BN_TRY(check_replaceable(f, file, name, dv));
        if (H5Ldelete(f, name, H5P_DEFAULT) < 0) return bn_h5_fail(BN_ERR_IO, "%s: cannot replace '%s'", file, name);
    }
    return bn_mh5_write(f, name, 4, dv, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, a);
}

/* "unknown names" with the new names appended (each once). */
static bn_status extend_unknowns(hid_t f, const char *file, char add[][BN_MESH_NAME_LEN], int n_add)
{
    char names[BN_MESH_MAX_VARS][BN_MESH_NAME_LEN];
    int n = 0;
    BN_TRY(bn_flash_unknowns_read(f, file, names, BN_MESH_MAX_VARS, &n));
    for (int a = 0; a < n_add; a++) {
        int seen = 0;
        for (int v = 0; v < n; v++) seen |= !strcmp(names[v], add[a]);
        if (seen) continue;
        if (n >= BN_MESH_MAX_VARS)
            return bn_fail(BN_ERR_FORMAT, "%s: 'unknown names' would list more than %d variables", file, BN_MESH_MAX_VARS);
        memcpy(names[n++], add[a], BN_MESH_NAME_LEN);
    }
    if (H5Ldelete(f, "unknown names", H5P_DEFAULT) < 0)
        return bn_h5_fail(BN_ERR_IO, "%s: cannot replace 'unknown names'", file);
    return bn_flash_unknowns_write(f, names, n);
}

static bn_status fill_copy(hid_t f, const char *file, const bn_mesh *m, const flash_src *fs, char names[][BN_MESH_NAME_LEN],
                           int nv)
{
    size_t *order = deepest_first(fs->level, fs->n);
    if (!order) return BN_ERR_NOMEM;
    const hsize_t dv[4] = {fs->n, (hsize_t)m->nb[2], (hsize_t)m->nb[1], (hsize_t)m->nb[0]};
    bn_status s = BN_OK;
    for (int v = 0; s == BN_OK && v < nv; v++) {
        double *a = NULL;
        s = all_blocks(m, bn_mesh_var_index(m, names[v]), fs->n, fs->leaf_of, fs->gid, order, &a);
        if (s == BN_OK) s = put_var(f, file, names[v], a, dv);
        free(a);
    }
    free(order);
    if (s == BN_OK) s = extend_unknowns(f, file, names, nv);
    return s;
}

/* What the copy is made of: its source, the mesh read from it, the
 * source's tree and the variables to write. */
typedef struct copy_job {
    const char *src;
    const bn_mesh *m;
    const flash_src *fs;
    char (*names)[BN_MESH_NAME_LEN];
    int nv;
} copy_job;

static bn_status copy_and_fill(const char *tmp, void *ctx)
{
    const copy_job *j = ctx;
    BN_TRY(copy_bytes(j->src, tmp));
    hid_t f = H5Fopen(tmp, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot open the copy %s", tmp);
    bn_status s = fill_copy(f, j->src, j->m, j->fs, j->names, j->nv);
    if (H5Fclose(f) < 0 && s == BN_OK) s = bn_h5_fail(BN_ERR_IO, "cannot close %s", tmp);
    return s;
}

/* The copy must not replace its source, whatever names them: the same
 * string, ./x.h5 for x.h5, a hard or a symbolic link (device and inode).
 * The rename would be atomic, but the source is the caller's input and
 * this function promises a copy; the command line checks the same before
 * computing, this protects every other caller. */
static bn_status check_not_source(const char *src, const char *dst)
{
    struct stat ss, ds;
    BN_TRY(bn_check_regular_file(src, src, &ss));
    if (stat(dst, &ds) == 0 && ss.st_dev == ds.st_dev && ss.st_ino == ds.st_ino)
        return bn_fail(BN_ERR_ARGUMENT, "the copy %s is its source %s: refusing to overwrite it", dst, src);
    return BN_OK;
}

bn_status bn_mesh_write_flash_copy(const char *src, const char *dst, const bn_mesh *m, const char *vars)
{
    if (!src || !dst || !m || !vars) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_write_flash_copy: NULL argument");
    BN_TRY(check_not_source(src, dst));
    BN_TRY(check_writable(dst, m));
    BN_TRY(check_flash_names(m));
    char names[BN_MESH_MAX_VARS][BN_MESH_NAME_LEN];
    const int nv = bn_mesh_split_names(vars, names, BN_MESH_MAX_VARS, "variables");
    if (nv < 0) return BN_ERR_ARGUMENT;
    for (int v = 0; v < nv; v++)
        if (bn_mesh_var_index(m, names[v]) < 0)
            return bn_fail(BN_ERR_ARGUMENT, "the mesh has no variable '%s' to write into %s", names[v], dst);
    bn_h5_quiet();
    flash_src fs;
    BN_TRY(read_flash_src(src, m, &fs));
    copy_job j = {src, m, &fs, names, nv};
    const bn_status s = bn_h5_write_atomic(dst, copy_and_fill, &j);
    flash_src_free(&fs);
    return s;
}
