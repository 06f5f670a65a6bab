/* Test problems on AMR meshes (bn_mesh_ic_generate, banyan.h): an octree
 * of blocks over the unit cube refined where the field varies (the body's
 * surface, the rings' vorticity), 2:1 balanced, then filled. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "mesh/mesh_internal.h"

bn_mesh_ic_params bn_mesh_ic_params_default(bn_mesh_problem problem)
{
    bn_mesh_ic_params p;
    memset(&p, 0, sizeof p);
    p.problem = problem;
    p.block = 16;
    p.max_level = 4;
    p.min_level = 1;
    p.radius = problem == BN_MESH_VORTEX_RINGS ? 0.125 : 0.25;
    p.eccentricity = problem == BN_MESH_MACLAURIN ? 0.9 : 0.0;
    p.density = 1.0;
    p.G = 1.0;
    p.c1 = 227.0;
    p.c2 = 20.0;
    p.samples = 8;
    return p;
}

static const char *const problem_names[] = {"sphere", "maclaurin", "vortex-rings"};

const char *bn_mesh_problem_name(bn_mesh_problem p)
{
    return (unsigned)p < 3 ? problem_names[p] : "unknown";
}

bn_status bn_mesh_problem_parse(const char *s, bn_mesh_problem *out)
{
    for (int k = 0; s && k < 3; k++)
        if (!strcmp(s, problem_names[k])) {
            *out = (bn_mesh_problem)k;
            return BN_OK;
        }
    return bn_fail(BN_ERR_ARGUMENT, "unknown mesh problem '%s' (expected sphere, maclaurin or vortex-rings)",
                   s ? s : "(null)");
}

bn_status bn_mesh_ic_check(const bn_mesh_ic_params *p)
{
    if ((unsigned)p->problem > 2) return bn_fail(BN_ERR_ARGUMENT, "mesh problem %d unknown", (int)p->problem);
    if (p->block < 2 || p->block > BN_MESH_MAX_BLOCK_CELLS || p->block % 2)
        return bn_fail(BN_ERR_ARGUMENT, "block = %d cells per edge: must be even, in [2, %d]", p->block,
                       BN_MESH_MAX_BLOCK_CELLS);
    if (p->max_level < 1 || p->max_level > 12)
        return bn_fail(BN_ERR_ARGUMENT, "max_level = %d: must be in [1, 12]", p->max_level);
    if (p->min_level < 1 || p->min_level > p->max_level)
        return bn_fail(BN_ERR_ARGUMENT, "min_level = %d: must be in [1, max_level = %d]", p->min_level, p->max_level);
    if (!(p->radius > 0 && p->radius <= 0.5))
        return bn_fail(BN_ERR_ARGUMENT, "radius = %g: must be in (0, 0.5] (the body fits the unit cube)", p->radius);
    if (!(p->eccentricity >= 0 && p->eccentricity < 1))
        return bn_fail(BN_ERR_ARGUMENT, "eccentricity = %g: must be in [0, 1)", p->eccentricity);
    /* the sphere's exact field is the sphere's: a flattened "sphere" would
     * be meshed as a spheroid and compared with the wrong solution */
    if (p->problem == BN_MESH_SPHERE && p->eccentricity != 0)
        return bn_fail(BN_ERR_ARGUMENT, "eccentricity = %g: the sphere has none (use maclaurin)", p->eccentricity);
    if (!(p->density > 0 && p->density < 1e300) || !(p->G > 0 && p->G < 1e300))
        return bn_fail(BN_ERR_ARGUMENT, "density = %g, G = %g: must be finite and > 0", p->density, p->G);
    if (!(isfinite(p->c1) && p->c2 > 0 && p->c2 < 1e3))
        return bn_fail(BN_ERR_ARGUMENT, "c1 = %g, c2 = %g: c1 finite, c2 in (0, 1000)", p->c1, p->c2);
    if (p->samples < 1 || p->samples > 64) return bn_fail(BN_ERR_ARGUMENT, "samples = %d: must be in [1, 64]", p->samples);
    return BN_OK;
}

/* ---- where the field varies ---------------------------------------------- */

/* Distance-like test of the box [lo, hi] against the body (sphere or
 * spheroid, scaled to the unit sphere): 1 inside, 0 outside, -1 cut. */
static int box_vs_body(const bn_mesh_ic_params *p, const double lo[3], const double hi[3])
{
    const double a = p->radius, c = a * sqrt(1.0 - p->eccentricity * p->eccentricity);
    const double s[3] = {1.0 / a, 1.0 / a, 1.0 / c};
    double near2 = 0.0, far2 = 0.0;
    for (int k = 0; k < 3; k++) {
        const double l = (lo[k] - 0.5) * s[k], h = (hi[k] - 0.5) * s[k];
        const double n = l > 0 ? l : h < 0 ? -h : 0.0, f = fmax(fabs(l), fabs(h));
        near2 += n * n;
        far2 += f * f;
    }
    if (far2 <= 1.0) return 1; /* convex: every corner inside */
    if (near2 >= 1.0) return 0;
    return -1;
}

/* One ring's support (s < R) against a box: the box's distance to the
 * core circle, bounded by the box's half diagonal. */
static int box_near_ring(const bn_mesh_ic_params *p, const double C[3], int axis, const double lo[3],
                         const double hi[3])
{
    double ctr[3], half = 0.0, z = 0.0, r2 = 0.0;
    for (int k = 0; k < 3; k++) {
        ctr[k] = 0.5 * (lo[k] + hi[k]) - C[k];
        half += 0.25 * (hi[k] - lo[k]) * (hi[k] - lo[k]);
        if (k == axis) z = ctr[k];
        else r2 += ctr[k] * ctr[k];
    }
    const double s = sqrt((sqrt(r2) - p->radius) * (sqrt(r2) - p->radius) + z * z);
    return s < p->radius + sqrt(half);
}

static int needs_refinement(const bn_mesh_ic_params *p, const double lo[3], const double hi[3])
{
    if (p->problem != BN_MESH_VORTEX_RINGS) return box_vs_body(p, lo, hi) < 0;
    static const double C1[3] = {0.25, 0.25, 0.25}, C2[3] = {0.75, 0.75, 0.75};
    return box_near_ring(p, C1, 2, lo, hi) || box_near_ring(p, C2, 0, lo, hi);
}

/* ---- the block octree: the leaves in a list and a map ------------------------- */

typedef struct leaf {
    int level; /* 0: split (a child replaced it) */
    int64_t c[3];
} leaf;

/* Every block made, in a list (the mesh's order) and in a map from
 * (level, corner) to its index in the list (v[0]) and whether it was split
 * (v[1]): a block is found, and split, in constant time. */
typedef struct leaf_set {
    bn_block_map map;
    leaf *list;
    size_t list_n, list_cap;
} leaf_set;

static bn_status leaf_add(leaf_set *s, int level, const int64_t c[3])
{
    if (s->list_n == s->list_cap) {
        const size_t cap = s->list_cap ? 2 * s->list_cap : 64;
        leaf *l = realloc(s->list, cap * sizeof *l);
        if (!l) return bn_fail(BN_ERR_NOMEM, "out of memory for %zu mesh blocks", cap);
        s->list = l;
        s->list_cap = cap;
    }
    s->list[s->list_n] = (leaf){level, {c[0], c[1], c[2]}};
    return bn_block_map_put(&s->map, level, c, (int64_t)s->list_n++, 0, NULL);
}

static void box_of(int level, const int64_t c[3], double lo[3], double hi[3])
{
    const double side = ldexp(1.0, 1 - level);
    for (int k = 0; k < 3; k++) {
        lo[k] = (double)c[k] * side;
        hi[k] = lo[k] + side;
    }
}

/* Replace leaf i of the list by its 8 children, appended; marked split
 * in the list (level 0) and in the map. */
static bn_status leaf_split(leaf_set *s, size_t i)
{
    const leaf l = s->list[i];
    s->list[i].level = 0;
    bn_block_map_find(&s->map, l.level, l.c)->v[1] = 1;
    for (int o = 0; o < 8; o++) {
        const int64_t c[3] = {2 * l.c[0] + (o & 1), 2 * l.c[1] + ((o >> 1) & 1), 2 * l.c[2] + ((o >> 2) & 1)};
        BN_TRY(leaf_add(s, l.level + 1, c));
    }
    return BN_OK;
}

/* The slot of the leaf that covers cell c of level L (an ancestor or c
 * itself), or NULL when finer leaves cover it. The deepest block found
 * decides: a split one has its children below, all the way to level L. */
static bn_block_slot *covering_leaf(const leaf_set *s, int L, const int64_t c[3])
{
    for (int l = L; l >= 1; l--) {
        const int64_t a[3] = {c[0] >> (L - l), c[1] >> (L - l), c[2] >> (L - l)};
        bn_block_slot *k = bn_block_map_find(&s->map, l, a);
        if (k) return k->v[1] ? NULL : k;
    }
    return NULL;
}

/* Leaf i against its 26 neighbours of its level: the leaves that cover
 * them two or more levels coarser are split (their children come later in
 * the list, and are balanced in their turn). *changed when any was. */
static bn_status balance_leaf(leaf_set *s, size_t i, int *changed)
{
    const leaf l = s->list[i];
    if (l.level < 3) return BN_OK; /* level 1 and 2 leaves have no coarser neighbour two levels up */
    const int64_t n = (int64_t)1 << (l.level - 1);
    for (int o = 0; o < 27; o++) {
        const int64_t c[3] = {l.c[0] + o % 3 - 1, l.c[1] + o / 3 % 3 - 1, l.c[2] + o / 9 - 1};
        if (o == 13 || c[0] < 0 || c[1] < 0 || c[2] < 0 || c[0] >= n || c[1] >= n || c[2] >= n) continue;
        const bn_block_slot *k = covering_leaf(s, l.level, c);
        if (!k || k->level >= l.level - 1) continue;
        BN_TRY(leaf_split(s, (size_t)k->v[0]));
        *changed = 1;
    }
    return BN_OK;
}

/* Refine by the predicate, then until neighbours differ by at most one
 * level: passes over the list until nothing changes (each split costs
 * O(1) map look-ups, the whole about linear in the blocks). */
static bn_status build_octree(const bn_mesh_ic_params *p, leaf_set *s)
{
    const int64_t root[3] = {0, 0, 0};
    BN_TRY(bn_block_map_init(&s->map, 64));
    BN_TRY(leaf_add(s, 1, root));
    for (size_t i = 0; i < s->list_n; i++) {
        const leaf l = s->list[i];
        double lo[3], hi[3];
        box_of(l.level, l.c, lo, hi);
        if (l.level < p->max_level && (l.level < p->min_level || needs_refinement(p, lo, hi)))
            BN_TRY(leaf_split(s, i));
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < s->list_n; i++) BN_TRY(balance_leaf(s, i, &changed));
    }
    return BN_OK;
}

/* ---- values ---------------------------------------------------------------- */

/* Density times the fraction of the cell [lo, hi] inside the body. */
static double cell_density(const bn_mesh_ic_params *p, const double lo[3], const double hi[3])
{
    const int in = box_vs_body(p, lo, hi);
    if (in >= 0) return in ? p->density : 0.0;
    const int n = p->samples;
    const double a = p->radius, c = a * sqrt(1.0 - p->eccentricity * p->eccentricity);
    long inside = 0;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                const double x = (lo[0] + (i + 0.5) * (hi[0] - lo[0]) / n - 0.5) / a;
                const double y = (lo[1] + (j + 0.5) * (hi[1] - lo[1]) / n - 0.5) / a;
                const double z = (lo[2] + (k + 0.5) * (hi[2] - lo[2]) / n - 0.5) / c;
                inside += x * x + y * y + z * z < 1.0;
            }
    return p->density * (double)inside / ((double)n * n * n);
}

static bn_status fill_values(const bn_mesh_ic_params *p, bn_mesh *m)
{
    int v[3];
    const int rings = p->problem == BN_MESH_VORTEX_RINGS;
    static const char *const names[4] = {"dens", "vorx", "vory", "vorz"};
    for (int k = 0; k < (rings ? 3 : 1); k++) BN_TRY(bn_mesh_add_var(m, names[rings ? 1 + k : 0], &v[k]));
    const int nb = p->block;
    const size_t cells = bn_mesh_block_cells(m);
#pragma omp parallel for schedule(dynamic)
    for (long b = 0; b < (long)m->n_blocks; b++)
        for (int c = 0; c < (int)cells; c++) {
            double x[3], h[3], lo[3], hi[3], out[6], omega[3];
            bn_mesh_cell(m, (size_t)b, c % nb, c / nb % nb, c / (nb * nb), x, h);
            for (int k = 0; k < 3; k++) {
                lo[k] = x[k] - 0.5 * h[k];
                hi[k] = x[k] + 0.5 * h[k];
            }
            const size_t at = (size_t)b * cells + (size_t)c;
            if (!rings) {
                m->var[v[0]][at] = cell_density(p, lo, hi);
                continue;
            }
            bn_mesh_ic_exact(p, x, out, omega);
            for (int k = 0; k < 3; k++) m->var[v[k]][at] = omega[k];
        }
    return BN_OK;
}

bn_status bn_mesh_ic_generate(const bn_mesh_ic_params *p, bn_mesh **out)
{
    if (!p || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_ic_generate: NULL argument");
    *out = NULL;
    BN_TRY(bn_mesh_ic_check(p));
    leaf_set s;
    memset(&s, 0, sizeof s);
    bn_mesh *m = NULL;
    bn_status st = build_octree(p, &s);
    if (st == BN_OK) st = bn_mesh_create(&m, p->block, p->block, p->block);
    for (size_t i = 0; st == BN_OK && i < s.list_n; i++) {
        if (s.list[i].level == 0) continue;
        double lo[3], hi[3];
        box_of(s.list[i].level, s.list[i].c, lo, hi);
        st = bn_mesh_add_block(m, lo, hi, s.list[i].level, NULL);
    }
    if (st == BN_OK) st = fill_values(p, m);
    bn_block_map_free(&s.map);
    free(s.list);
    if (st != BN_OK) {
        bn_mesh_free(m);
        return st;
    }
    *out = m;
    return BN_OK;
}
