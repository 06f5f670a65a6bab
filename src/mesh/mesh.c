/* bn_mesh: leaf blocks, their variables, and their octree (banyan.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "mesh/mesh_internal.h"

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

bn_status bn_mesh_add_block(bn_mesh *m, const double lo[3], const double hi[3], int level, size_t *index)
{
    if (!m || !lo || !hi) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_add_block: NULL argument");
    if (level < 1 || level > BN_MESH_MAX_LEVEL)
        return bn_fail(BN_ERR_ARGUMENT, "mesh block %zu: level %d (must be in [1, %d])", m->n_blocks, level,
                       BN_MESH_MAX_LEVEL);
    for (int k = 0; k < 3; k++)
        if (!(isfinite(lo[k]) && isfinite(hi[k]) && lo[k] < hi[k]))
            return bn_fail(BN_ERR_ARGUMENT, "mesh block %zu: %c from %g to %g (must be finite, lower < upper)",
                           m->n_blocks, "xyz"[k], lo[k], hi[k]);
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
    uint64_t root;        /* the root block                             */
    uint64_t first, last; /* Morton range below it at the finest level  */
    size_t block;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->root != y->root) return (x->root > y->root) - (x->root < y->root);
    return (x->first > y->first) - (x->first < y->first);
}

static uint64_t morton3(int64_t x, int64_t y, int64_t z, int bits)
{
    uint64_t key = 0;
    for (int b = bits - 1; b >= 0; b--)
        key = (key << 3) | (uint64_t)(((x >> b) & 1) | (((y >> b) & 1) << 1) | (((z >> b) & 1) << 2));
    return key;
}

/* Root sides and the domain's corner from the blocks. */
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
    if (o->max_level > 21) /* 3 * 21 bits of Morton key below a root */
        return bn_fail(BN_ERR_FORMAT, "mesh: refinement level %d (at most 21 levels are supported)", o->max_level);
    return BN_OK;
}

/* Block b's integer corner at its level, checked against the grid. */
static bn_status block_coords(const bn_mesh *m, bn_mesh_octree *o, size_t b)
{
    const double scale = ldexp(1.0, m->level[b] - 1);
    for (int k = 0; k < 3; k++) {
        const double side = o->root_side[k] / scale, lo = m->lo[3 * b + k], hi = m->hi[3 * b + k];
        const double f = (lo - o->domain_lo[k]) / side, tol = 1e-6;
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

bn_status bn_mesh_octree_make(const bn_mesh *m, bn_mesh_octree *o)
{
    memset(o, 0, sizeof *o);
    if (m->n_blocks == 0) return bn_fail(BN_ERR_FORMAT, "mesh: no blocks");
    BN_TRY(octree_frame(m, o));
    o->ijk = bn_alloc_array(3 * m->n_blocks, sizeof(int64_t), "mesh block coordinates");
    span *sp = o->ijk ? bn_alloc_array(m->n_blocks, sizeof *sp, "mesh block spans") : NULL;
    bn_status s = sp ? BN_OK : BN_ERR_NOMEM;
    for (size_t b = 0; s == BN_OK && b < m->n_blocks; b++) s = block_coords(m, o, b);
    const int L = o->max_level;
    for (size_t b = 0; s == BN_OK && b < m->n_blocks; b++) {
        const int shift = L - m->level[b];
        const int64_t *c = o->ijk + 3 * b;
        int64_t root[3], fine[3];
        for (int k = 0; k < 3; k++) {
            root[k] = c[k] >> (m->level[b] - 1);
            fine[k] = (c[k] - (root[k] << (m->level[b] - 1))) << shift;
        }
        const uint64_t r = ((uint64_t)root[2] * (uint64_t)o->nroot[1] + (uint64_t)root[1]) * (uint64_t)o->nroot[0] +
                           (uint64_t)root[0];
        const uint64_t first = morton3(fine[0], fine[1], fine[2], L - 1);
        sp[b] = (span){r, first, first + ((uint64_t)1 << (3 * shift)) - 1, b};
    }
    if (s == BN_OK) {
        qsort(sp, m->n_blocks, sizeof *sp, cmp_span);
        for (size_t i = 1; s == BN_OK && i < m->n_blocks; i++)
            if (sp[i].root == sp[i - 1].root && sp[i].first <= sp[i - 1].last)
                s = bn_fail(BN_ERR_FORMAT, "mesh blocks %zu (level %d) and %zu (level %d) overlap: leaf blocks must "
                            "tile the domain without overlap", sp[i - 1].block, m->level[sp[i - 1].block],
                            sp[i].block, m->level[sp[i].block]);
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

bn_status bn_mesh_validate(const bn_mesh *m, const char *what)
{
    if (!what) what = "mesh";
    if (!m) return bn_fail(BN_ERR_ARGUMENT, "%s: mesh is NULL", what);
    if (m->n_blocks == 0) return bn_fail(BN_ERR_ARGUMENT, "%s: no blocks", what);
    const size_t cells = bn_mesh_block_cells(m);
    for (int v = 0; v < m->n_vars; v++)
        for (size_t b = 0; b < m->n_blocks; b++)
            for (size_t c = 0; c < cells; c++) {
                const double x = m->var[v][b * cells + c];
                if (isfinite(x)) continue;
                const int i = (int)(c % (size_t)m->nb[0]), j = (int)(c / (size_t)m->nb[0] % (size_t)m->nb[1]),
                          k = (int)(c / ((size_t)m->nb[0] * (size_t)m->nb[1]));
                return bn_fail(BN_ERR_ARGUMENT, "%s: variable %s of block %zu, cell (%d, %d, %d), is %g (must be "
                               "finite)", what, m->var_name[v], b, i, j, k, x);
            }
    bn_mesh_octree o;
    bn_status s = bn_mesh_octree_make(m, &o);
    if (s != BN_OK) return bn_fail_context(s, "%s", what);
    bn_mesh_octree_free(&o);
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
