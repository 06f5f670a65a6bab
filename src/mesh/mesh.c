/* bn_mesh: leaf blocks, their variables, and their octree (banyan.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "mesh/mesh_internal.h"
#include "tree/keys.h"

bn_status bn_mesh_create(bn_mesh **out, int nx, int ny, int nz)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_create: out is NULL");
    *out = NULL;
    const int nb[3] = {nx, ny, nz};
    for (int k = 0; k < 3; k++)
        if (nb[k] < 1 || nb[k] > BN_MESH_MAX_BLOCK_CELLS)
            return bn_fail(BN_ERR_ARGUMENT, "mesh: %c cells per block = %d (must be in [1, %d])", "xyz"[k], nb[k],
                           BN_MESH_MAX_BLOCK_CELLS);
    bn_mesh *m = bn_calloc(1, sizeof *m, "mesh");
    if (!m) return BN_ERR_NOMEM;
    for (int k = 0; k < 3; k++) m->nb[k] = nb[k];
    *out = m;
    return BN_OK;
}

void bn_mesh_free(bn_mesh *m)
{
    if (!m) return;
    free(m->lo);
    free(m->hi);
    free(m->level);
    free(m->file_block);
    for (int v = 0; v < m->n_vars; v++) free(m->var[v]);
    free(m);
}

size_t bn_mesh_block_cells(const bn_mesh *m) { return (size_t)m->nb[0] * (size_t)m->nb[1] * (size_t)m->nb[2]; }

size_t bn_mesh_cells(const bn_mesh *m) { return m->n_blocks * bn_mesh_block_cells(m); }

/* realloc of count x size bytes, overflow and memory checked. */
static bn_status grow(void **p, size_t count, size_t size, const char *what)
{
    BN_TRY(bn_check_count(count, size, what));
    void *q = realloc(*p, count * size);
    if (!q) return bn_fail(BN_ERR_NOMEM, "out of memory for %zu %s", count, what);
    *p = q;
    return BN_OK;
}

static bn_status reserve_blocks(bn_mesh *m, size_t n)
{
    if (n <= m->capacity) return BN_OK;
    size_t cap = m->capacity ? m->capacity : 16;
    while (cap < n) cap = cap > SIZE_MAX / 2 ? n : 2 * cap;
    const size_t cells = bn_mesh_block_cells(m);
    BN_TRY(bn_check_count(cap, cells * sizeof(double) * (size_t)(m->n_vars + 1), "mesh blocks"));
    BN_TRY(grow((void **)&m->lo, 3 * cap, sizeof(double), "mesh block corners"));
    BN_TRY(grow((void **)&m->hi, 3 * cap, sizeof(double), "mesh block corners"));
    BN_TRY(grow((void **)&m->level, cap, sizeof(int), "mesh block levels"));
    BN_TRY(grow((void **)&m->file_block, cap, sizeof(int64_t), "mesh block indices"));
    for (int v = 0; v < m->n_vars; v++) BN_TRY(grow((void **)&m->var[v], cap * cells, sizeof(double), m->var_name[v]));
    m->capacity = cap;
    return BN_OK;
}

/* A mesh is at most BN_MESH_MAX_LEVEL deep because a leaf's place below
 * its root is a Morton key of the finest level (tree/keys.h's, 21 bits an
 * axis): one limit for both. */
_Static_assert(BN_MESH_MAX_LEVEL == BN_KEY_MAX_LEVEL, "mesh levels are the key's levels");

/* Integer block coordinates stay below 2^30 (and are refused before the
 * conversion from double, which is undefined past int64): nroot fits an
 * int and coordinates at the finest level fit a key. */
#define BN_MESH_MAX_COORD 0x1p30

/* The one check of a block's level and box (bn_mesh_add_block for a new
 * block, bn_mesh_validate for every block): b names it. */
static bn_status check_block(size_t b, int level, const double *lo, const double *hi)
{
    if (level < 1 || level > BN_MESH_MAX_LEVEL)
        return bn_fail(BN_ERR_ARGUMENT, "mesh block %zu: level %d (must be in [1, %d])", b, level, BN_MESH_MAX_LEVEL);
    for (int k = 0; k < 3; k++)
        if (!(isfinite(lo[k]) && isfinite(hi[k]) && lo[k] < hi[k]))
            return bn_fail(BN_ERR_ARGUMENT, "mesh block %zu: %c from %g to %g (must be finite, lower < upper)", b,
                           "xyz"[k], lo[k], hi[k]);
    return BN_OK;
}

bn_status bn_mesh_add_block(bn_mesh *m, const double lo[3], const double hi[3], int level, size_t *index)
{
    if (!m || !lo || !hi) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_add_block: NULL argument");
    BN_TRY(check_block(m->n_blocks, level, lo, hi));
    BN_TRY(reserve_blocks(m, m->n_blocks + 1));
    const size_t b = m->n_blocks++, cells = bn_mesh_block_cells(m);
    for (int k = 0; k < 3; k++) {
        m->lo[3 * b + k] = lo[k];
        m->hi[3 * b + k] = hi[k];
    }
    m->level[b] = level;
    m->file_block[b] = -1;
    for (int v = 0; v < m->n_vars; v++) memset(m->var[v] + b * cells, 0, cells * sizeof(double));
    if (index) *index = b;
    return BN_OK;
}

int bn_mesh_var_index(const bn_mesh *m, const char *name)
{
    for (int v = 0; m && name && v < m->n_vars; v++)
        if (!strcmp(m->var_name[v], name)) return v;
    return -1;
}

bn_status bn_mesh_add_var(bn_mesh *m, const char *name, int *index)
{
    if (!m || !name) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_add_var: NULL argument");
    const size_t len = strlen(name);
    if (len == 0 || len >= BN_MESH_NAME_LEN)
        return bn_fail(BN_ERR_ARGUMENT, "mesh variable name '%.40s': must have 1 to %d characters", name,
                       BN_MESH_NAME_LEN - 1);
    int v = bn_mesh_var_index(m, name);
    if (v < 0) {
        if (m->n_vars >= BN_MESH_MAX_VARS)
            return bn_fail(BN_ERR_ARGUMENT, "mesh: more than %d variables (adding '%s')", BN_MESH_MAX_VARS, name);
        const size_t n = (m->capacity ? m->capacity : 1) * bn_mesh_block_cells(m);
        BN_TRY(bn_check_count(n, sizeof(double), name));
        double *a = bn_calloc(n, sizeof(double), name);
        if (!a) return BN_ERR_NOMEM;
        v = m->n_vars++;
        m->var[v] = a;
        memcpy(m->var_name[v], name, len + 1);
    }
    if (index) *index = v;
    return BN_OK;
}

void bn_mesh_cell(const bn_mesh *m, size_t b, int i, int j, int k, double centre[3], double side[3])
{
    const int ijk[3] = {i, j, k};
    for (int a = 0; a < 3; a++) {
        const double lo = m->lo[3 * b + a], h = (m->hi[3 * b + a] - lo) / m->nb[a];
        if (side) side[a] = h;
        centre[a] = lo + ((double)ijk[a] + 0.5) * h;
    }
}

bn_status bn_mesh_copy(bn_mesh **out, const bn_mesh *src)
{
    if (!out || !src) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_copy: NULL argument");
    BN_TRY(bn_mesh_create(out, src->nb[0], src->nb[1], src->nb[2]));
    bn_mesh *m = *out;
    bn_status s = BN_OK;
    for (int v = 0; s == BN_OK && v < src->n_vars; v++) s = bn_mesh_add_var(m, src->var_name[v], NULL);
    if (s == BN_OK) s = reserve_blocks(m, src->n_blocks);
    if (s != BN_OK) {
        bn_mesh_free(m);
        *out = NULL;
        return s;
    }
    const size_t n = src->n_blocks, cells = bn_mesh_block_cells(src);
    memcpy(m->lo, src->lo, 3 * n * sizeof(double));
    memcpy(m->hi, src->hi, 3 * n * sizeof(double));
    memcpy(m->level, src->level, n * sizeof(int));
    memcpy(m->file_block, src->file_block, n * sizeof(int64_t));
    for (int v = 0; v < src->n_vars; v++) memcpy(m->var[v], src->var[v], n * cells * sizeof(double));
    m->n_blocks = n;
    m->time = src->time;
    m->from_flash = src->from_flash;
    return BN_OK;
}

/* ---- the octree of the leaves ------------------------------------------- */

typedef struct span {
    int64_t root[3];      /* the root block                             */
    uint64_t first, last; /* Morton range below it at the finest level  */
    size_t block;
} span;

/* Roots by z, then y, then x (no linear index: it could overflow), then
 * the ranges in Morton order. */
static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    for (int k = 2; k >= 0; k--)
        if (x->root[k] != y->root[k]) return (x->root[k] > y->root[k]) - (x->root[k] < y->root[k]);
    return (x->first > y->first) - (x->first < y->first);
}

static int same_root(const span *x, const span *y)
{
    return x->root[0] == y->root[0] && x->root[1] == y->root[1] && x->root[2] == y->root[2];
}

/* Root sides and the domain's corner from the blocks (checked: finite
 * boxes, levels in range). */
static bn_status octree_frame(const bn_mesh *m, bn_mesh_octree *o)
{
    for (int k = 0; k < 3; k++) {
        o->domain_lo[k] = INFINITY;
        o->root_side[k] = 0;
    }
    o->max_level = 1;
    for (size_t b = 0; b < m->n_blocks; b++) {
        const double scale = ldexp(1.0, m->level[b] - 1);
        for (int k = 0; k < 3; k++) {
            o->domain_lo[k] = fmin(o->domain_lo[k], m->lo[3 * b + k]);
            o->root_side[k] = fmax(o->root_side[k], (m->hi[3 * b + k] - m->lo[3 * b + k]) * scale);
        }
        if (m->level[b] > o->max_level) o->max_level = m->level[b];
    }
    for (int k = 0; k < 3; k++)
        if (!isfinite(o->root_side[k]))
            return bn_fail(BN_ERR_FORMAT, "mesh: root blocks of %c side %g (a block's side times 2^(level - 1) "
                           "overflows)", "xyz"[k], o->root_side[k]);
    return BN_OK;
}

/* Block b's integer corner at its level, checked against the grid. */
static bn_status block_coords(const bn_mesh *m, bn_mesh_octree *o, size_t b)
{
    const double scale = ldexp(1.0, m->level[b] - 1);
    for (int k = 0; k < 3; k++) {
        const double side = o->root_side[k] / scale, lo = m->lo[3 * b + k], hi = m->hi[3 * b + k];
        const double f = (lo - o->domain_lo[k]) / side, tol = 1e-6;
        if (!(f < BN_MESH_MAX_COORD))
            return bn_fail(BN_ERR_FORMAT, "mesh block %zu (level %d): %c from %.17g is %.3g of its sides from the "
                           "domain's corner %.17g (at most 2^30)", b, m->level[b], "xyz"[k], lo, f, o->domain_lo[k]);
        const double g = nearbyint(f);
        if (fabs((hi - lo) - side) > tol * side || fabs(f - g) > tol)
            return bn_fail(BN_ERR_FORMAT, "mesh block %zu (level %d): %c from %.17g to %.17g is not a block of its "
                           "level (sides %.17g on a grid from %.17g)", b, m->level[b], "xyz"[k], lo, hi, side,
                           o->domain_lo[k]);
        o->ijk[3 * b + k] = (int64_t)g;
        const int64_t root = o->ijk[3 * b + k] >> (m->level[b] - 1);
        if (root + 1 > o->nroot[k]) o->nroot[k] = (int)(root + 1);
    }
    return BN_OK;
}

/* Block b's root and its Morton range below the root at level L. */
static span block_span(const bn_mesh *m, const bn_mesh_octree *o, size_t b, int L)
{
    const int shift = L - m->level[b];
    const int64_t *c = o->ijk + 3 * b;
    span sp;
    uint32_t fine[3];
    for (int k = 0; k < 3; k++) {
        sp.root[k] = c[k] >> (m->level[b] - 1);
        fine[k] = (uint32_t)((c[k] - (sp.root[k] << (m->level[b] - 1))) << shift);
    }
    sp.first = bn_key_morton(fine[0], fine[1], fine[2]);
    sp.last = sp.first + ((uint64_t)1 << (3 * shift)) - 1;
    sp.block = b;
    return sp;
}

/* The place of finest-level key k below root r, for a message. */
static void key_place(const bn_mesh_octree *o, const int64_t r[3], uint64_t k, double x[3])
{
    uint32_t f[3];
    bn_key_morton_decode(k, &f[0], &f[1], &f[2]);
    for (int a = 0; a < 3; a++)
        x[a] = o->domain_lo[a] + ((double)r[a] + ldexp((double)f[a], 1 - o->max_level)) * o->root_side[a];
}

static bn_status hole_at(const bn_mesh *m, const bn_mesh_octree *o, const span *sp, uint64_t k)
{
    double x[3];
    key_place(o, sp->root, k, x);
    return bn_fail(BN_ERR_FORMAT, "mesh: no leaf block covers (%.9g, %.9g, %.9g), in root block (%lld, %lld, %lld) "
                   "by block %zu (level %d): leaf blocks must tile their root blocks", x[0], x[1], x[2],
                   (long long)sp->root[0], (long long)sp->root[1], (long long)sp->root[2], sp->block,
                   m->level[sp->block]);
}

/* Sorted spans: no two of a root overlap, then (an overlap leaves a hole
 * where the moved block was: named first) consecutive ones abut, from 0
 * to the root's last key, so that the leaves tile every root present. */
static bn_status check_tiling(const bn_mesh *m, const bn_mesh_octree *o, const span *sp)
{
    const size_t n = m->n_blocks;
    for (size_t i = 1; i < n; i++)
        if (same_root(&sp[i], &sp[i - 1]) && sp[i].first <= sp[i - 1].last)
            return bn_fail(BN_ERR_FORMAT, "mesh blocks %zu (level %d) and %zu (level %d) overlap: leaf blocks must "
                           "tile the domain without overlap", sp[i - 1].block, m->level[sp[i - 1].block], sp[i].block,
                           m->level[sp[i].block]);
    const uint64_t end = (uint64_t)1 << (3 * (o->max_level - 1)); /* keys below a root */
    for (size_t i = 0; i < n; i++) {
        const int starts = i == 0 || !same_root(&sp[i], &sp[i - 1]), ends = i + 1 == n || !same_root(&sp[i], &sp[i + 1]);
        if (starts && sp[i].first != 0) return hole_at(m, o, &sp[i], 0);
        if (!starts && sp[i].first != sp[i - 1].last + 1) return hole_at(m, o, &sp[i], sp[i - 1].last + 1);
        if (ends && sp[i].last != end - 1) return hole_at(m, o, &sp[i], sp[i].last + 1);
    }
    return BN_OK;
}

bn_status bn_mesh_octree_make(const bn_mesh *m, bn_mesh_octree *o)
{
    memset(o, 0, sizeof *o);
    if (m->n_blocks == 0) return bn_fail(BN_ERR_FORMAT, "mesh: no blocks");
    BN_TRY(octree_frame(m, o));
    o->ijk = bn_alloc_array(3 * m->n_blocks, sizeof(int64_t), "mesh block coordinates");
    span *sp = o->ijk ? bn_alloc_array(m->n_blocks, sizeof *sp, "mesh block spans") : NULL;
    bn_status s = sp ? BN_OK : BN_ERR_NOMEM;
    for (size_t b = 0; s == BN_OK && b < m->n_blocks; b++) s = block_coords(m, o, b);
    for (size_t b = 0; s == BN_OK && b < m->n_blocks; b++) sp[b] = block_span(m, o, b, o->max_level);
    if (s == BN_OK) {
        qsort(sp, m->n_blocks, sizeof *sp, cmp_span);
        s = check_tiling(m, o, sp);
    }
    free(sp);
    if (s != BN_OK) bn_mesh_octree_free(o);
    return s;
}

void bn_mesh_octree_free(bn_mesh_octree *o)
{
    free(o->ijk);
    o->ijk = NULL;
}

void bn_mesh_octree_ancestor(const bn_mesh_octree *o, const bn_mesh *m, size_t b, int L, int64_t out[3])
{
    for (int k = 0; k < 3; k++) out[k] = o->ijk[3 * b + k] >> (m->level[b] - L);
}

bn_status bn_mesh_bad_value(const bn_mesh *m, const char *what, int v, size_t cell)
{
    const size_t cells = bn_mesh_block_cells(m), b = cell / cells, c = cell % cells;
    const int i = (int)(c % (size_t)m->nb[0]), j = (int)(c / (size_t)m->nb[0] % (size_t)m->nb[1]),
              k = (int)(c / ((size_t)m->nb[0] * (size_t)m->nb[1]));
    return bn_fail(BN_ERR_ARGUMENT, "%s: variable %s of block %zu, cell (%d, %d, %d), is %g (must be finite)", what,
                   m->var_name[v], b, i, j, k, m->var[v][cell]);
}

bn_status bn_mesh_check_geometry(const bn_mesh *m, const char *what)
{
    if (!what) what = "mesh";
    if (!m) return bn_fail(BN_ERR_ARGUMENT, "%s: mesh is NULL", what);
    if (m->n_blocks == 0) return bn_fail(BN_ERR_ARGUMENT, "%s: no blocks", what);
    bn_status s = BN_OK;
    for (size_t b = 0; s == BN_OK && b < m->n_blocks; b++) s = check_block(b, m->level[b], m->lo + 3 * b, m->hi + 3 * b);
    bn_mesh_octree o;
    if (s == BN_OK) s = bn_mesh_octree_make(m, &o);
    if (s != BN_OK) return bn_fail_context(s, "%s", what);
    bn_mesh_octree_free(&o);
    return BN_OK;
}

bn_status bn_mesh_validate(const bn_mesh *m, const char *what)
{
    if (!what) what = "mesh";
    BN_TRY(bn_mesh_check_geometry(m, what));
    const size_t n = bn_mesh_cells(m);
    for (int v = 0; v < m->n_vars; v++) {
        size_t bad = n;
        const double *x = m->var[v];
#pragma omp parallel for reduction(min : bad) schedule(static)
        for (long c = 0; c < (long)n; c++)
            if (!isfinite(x[c]) && (size_t)c < bad) bad = (size_t)c;
        if (bad < n) return bn_mesh_bad_value(m, what, v, bad);
    }
    return BN_OK;
}

int bn_mesh_split_names(const char *list, char names[][BN_MESH_NAME_LEN], int max, const char *what)
{
    int n = 0;
    for (const char *c = list; c && *c;) {
        const size_t len = strcspn(c, ",");
        if (len == 0 || len >= BN_MESH_NAME_LEN || n >= max) {
            bn_fail(BN_ERR_ARGUMENT, "%s '%s': expected up to %d names of 1 to %d characters, comma separated", what,
                    list, max, BN_MESH_NAME_LEN - 1);
            return -1;
        }
        memcpy(names[n], c, len);
        names[n++][len] = '\0';
        c += len;
        if (*c == ',') c++;
    }
    return n;
}

/* ---- a map of blocks ------------------------------------------------------ */

static size_t block_hash(int level, const int64_t c[3], size_t cap)
{
    uint64_t h = (uint64_t)level * 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < 3; k++) h = (h ^ (uint64_t)c[k]) * 0xBF58476D1CE4E5B9ull;
    return (size_t)(h ^ (h >> 31)) & (cap - 1);
}

/* The slot of (level, c): its own, or the empty one where it would go. */
static bn_block_slot *block_slot(const bn_block_map *m, int level, const int64_t c[3])
{
    for (size_t i = block_hash(level, c, m->cap);; i = (i + 1) & (m->cap - 1)) {
        bn_block_slot *s = &m->slot[i];
        if (!s->level || (s->level == level && s->c[0] == c[0] && s->c[1] == c[1] && s->c[2] == c[2])) return s;
    }
}

bn_status bn_block_map_init(bn_block_map *m, size_t expected)
{
    size_t cap = 64;
    while (cap < 2 * expected) cap *= 2;
    m->slot = bn_calloc(cap, sizeof *m->slot, "block map");
    m->cap = cap;
    m->n = 0;
    return m->slot ? BN_OK : BN_ERR_NOMEM;
}

void bn_block_map_free(bn_block_map *m)
{
    free(m->slot);
    memset(m, 0, sizeof *m);
}

bn_block_slot *bn_block_map_find(const bn_block_map *m, int level, const int64_t c[3])
{
    bn_block_slot *s = block_slot(m, level, c);
    return s->level ? s : NULL;
}

bn_status bn_block_map_put(bn_block_map *m, int level, const int64_t c[3], int64_t v0, int64_t v1, bn_block_slot **out)
{
    if (2 * (m->n + 1) > m->cap) { /* grow: every block put again */
        bn_block_map bigger;
        BN_TRY(bn_block_map_init(&bigger, m->cap));
        for (size_t i = 0; i < m->cap; i++)
            if (m->slot[i].level) *block_slot(&bigger, m->slot[i].level, m->slot[i].c) = m->slot[i];
        bigger.n = m->n;
        free(m->slot);
        *m = bigger;
    }
    bn_block_slot *s = block_slot(m, level, c);
    if (!s->level) {
        *s = (bn_block_slot){level, {c[0], c[1], c[2]}, {v0, v1}};
        m->n++;
    }
    if (out) *out = s;
    return BN_OK;
}
