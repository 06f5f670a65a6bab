/* The field solver (bn_field_*, banyan.h): sources and targets made from
 * meshes, particles and points, the backend's stages, the results scaled
 * into potentials, accelerations, streamfunctions and velocities. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/timer.h"
#include "gravity/box_kernel.h"
#include "gravity/field_interact.h"
#include "mesh/fft_internal.h"
#include "mesh/field_internal.h"
#include "mesh/mesh_internal.h"
#include "tree/keys.h"

#define BN_PI 3.14159265358979323846

struct bn_field {
    bn_field_params prm;
    bn_backend backend; /* resolved */
    bn_field_gpu *gpu;
    bn_field_stats stats;
};

bn_field_params bn_field_params_default(bn_field_kind kind)
{
    bn_field_params p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    p.G = 1.0;
    p.theta = 0.5;
    p.velocity = 1;
    p.smoothing = 0.0;
    p.near_cells = 1;
    p.leaf_size = 16;
    p.backend = BN_BACKEND_AUTO;
    p.device = BN_DEVICE_AUTO;
    snprintf(p.source_vars, sizeof p.source_vars, "%s", kind == BN_FIELD_VORTICITY ? "vorx,vory,vorz" : "dens");
    return p;
}

bn_status bn_field_params_validate(const bn_field_params *p)
{
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "field parameters are NULL");
    if (p->method != BN_FIELD_TREE && p->method != BN_FIELD_FFT)
        return bn_fail(BN_ERR_ARGUMENT, "field method %d unknown (tree or fft)", (int)p->method);
    if (p->kind != BN_FIELD_GRAVITY && p->kind != BN_FIELD_VORTICITY)
        return bn_fail(BN_ERR_ARGUMENT, "field kind %d unknown", (int)p->kind);
    if (!(p->G > 0 && p->G < 1e300)) return bn_fail(BN_ERR_ARGUMENT, "G = %g: must be finite and > 0", p->G);
    if (!(p->theta >= 0 && p->theta <= 2)) return bn_fail(BN_ERR_ARGUMENT, "theta = %g: must be in [0, 2]", p->theta);
    if (!(p->smoothing >= 0 && p->smoothing <= 100))
        return bn_fail(BN_ERR_ARGUMENT, "smoothing = %g: must be in [0, 100] cell sides", p->smoothing);
    if (p->smoothing > 0 && p->kind != BN_FIELD_VORTICITY)
        return bn_fail(BN_ERR_ARGUMENT, "smoothing = %g: the smoothed kernel is for vorticity sources", p->smoothing);
    if (p->near_cells < 0 || p->near_cells > 4)
        return bn_fail(BN_ERR_ARGUMENT, "near_cells = %d: must be in [0, 4]", p->near_cells);
    if (p->leaf_size < 1 || p->leaf_size > BN_LEAF_SIZE_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "leaf_size = %d: must be in [1, %d]", p->leaf_size, BN_LEAF_SIZE_MAX);
    if (p->backend != BN_BACKEND_AUTO && p->backend != BN_BACKEND_CPU && p->backend != BN_BACKEND_GPU)
        return bn_fail(BN_ERR_ARGUMENT, "backend %d unknown", (int)p->backend);
    if (!(p->error_target >= 0 && p->error_target < 1))
        return bn_fail(BN_ERR_ARGUMENT, "error target %g: must be in [0, 1)", p->error_target);
    if (p->device < BN_DEVICE_AUTO || p->device > BN_DEVICE_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "device = %d: must be in [0, %d] or BN_DEVICE_AUTO (-1)", p->device,
                       BN_DEVICE_MAX);
    char names[4][BN_MESH_NAME_LEN];
    const int n = bn_mesh_split_names(p->source_vars, names, 4, "source variables");
    if (n < 0) return BN_ERR_ARGUMENT;
    const int want = p->kind == BN_FIELD_VORTICITY ? 3 : 1;
    if (n != want)
        return bn_fail(BN_ERR_ARGUMENT, "source variables '%s': %s sources need %d variable%s", p->source_vars,
                       p->kind == BN_FIELD_VORTICITY ? "vorticity" : "gravity", want, want > 1 ? "s" : "");
    return BN_OK;
}

int bn_field_point_values(const bn_field_params *p) { return p->kind == BN_FIELD_VORTICITY ? 6 : 4; }

/* ---- sources and targets ---------------------------------------------------- */

void bn_field_sources_free(bn_field_sources *s)
{
    for (int k = 0; k < 3; k++) free(s->x[k]);
    free(s->q);
    free(s->blk);
    memset(s, 0, sizeof *s);
}

void bn_field_targets_free(bn_field_targets *t)
{
    for (int k = 0; k < 3; k++) free(t->x[k]);
    free(t->dest);
    free(t->first);
    free(t->count);
    free(t->lo);
    free(t->hi);
    free(t->h);
    memset(t, 0, sizeof *t);
}

static bn_status sources_alloc(bn_field_sources *s, size_t n, int K)
{
    memset(s, 0, sizeof *s);
    s->K = K;
    BN_TRY(bn_check_count(n, (size_t)(3 + K) * sizeof(double) + sizeof(int32_t), "field sources"));
    const size_t m = n ? n : 1;
    int ok = 1;
    for (int k = 0; k < 3; k++) ok &= (s->x[k] = bn_alloc_array(m, sizeof(double), "field sources")) != NULL;
    ok &= (s->q = bn_alloc_array(m * (size_t)K, sizeof(double), "field sources")) != NULL;
    ok &= (s->blk = bn_alloc_array(m, sizeof(int32_t), "field sources")) != NULL;
    if (!ok) {
        bn_field_sources_free(s);
        return BN_ERR_NOMEM;
    }
    return BN_OK;
}

/* The source variables' indices in m (K of them). */
static bn_status source_var_indices(const bn_field_params *prm, const bn_mesh *m, int *var, int K)
{
    char names[3][BN_MESH_NAME_LEN];
    bn_mesh_split_names(prm->source_vars, names, 3, "source variables");
    for (int k = 0; k < K; k++) {
        var[k] = bn_mesh_var_index(m, names[k]);
        if (var[k] < 0)
            return bn_fail(BN_ERR_ARGUMENT, "the mesh has no variable '%s' (source variables '%s')", names[k],
                           prm->source_vars);
    }
    return BN_OK;
}

bn_status bn_field_bad_source(const bn_field_params *prm, const bn_mesh *m, int v, size_t cell)
{
    const size_t cells = bn_mesh_block_cells(m);
    const double x = m->var[v][cell];
    if (!isfinite(x))
        return bn_fail(BN_ERR_ARGUMENT, "variable %s of block %zu, cell %zu, is %g (must be finite)", m->var_name[v],
                       cell / cells, cell % cells, x);
    if (prm->kind == BN_FIELD_GRAVITY)
        return bn_fail(BN_ERR_ARGUMENT, "variable %s of block %zu, cell %zu, is %g: a density must be >= 0",
                       m->var_name[v], cell / cells, cell % cells, x);
    return bn_fail(BN_ERR_INTERNAL, "variable %s of block %zu, cell %zu, is %g: flagged as a bad source (a vorticity "
                   "may have any sign)", m->var_name[v], cell / cells, cell % cells, x);
}

/* The source variables' indices, and every value finite (a density >= 0),
 * in one parallel pass that also counts the cells with a nonzero
 * component (nonzero may be NULL). The first bad value, by variable then
 * cell, is named. */
static bn_status source_vars(const bn_field_params *prm, const bn_mesh *m, int *var, int K, size_t *nonzero)
{
    BN_TRY(source_var_indices(prm, m, var, K));
    const size_t n = bn_mesh_cells(m);
    const int density = prm->kind == BN_FIELD_GRAVITY;
    size_t bad = (size_t)K * n, count = 0;
#pragma omp parallel for reduction(min : bad) reduction(+ : count) schedule(static)
    for (long c = 0; c < (long)n; c++) {
        int any = 0;
        for (int k = 0; k < K; k++) {
            const double x = m->var[var[k]][c];
            const size_t at = (size_t)k * n + (size_t)c;
            if ((!isfinite(x) || (density && !(x >= 0))) && at < bad) bad = at;
            any |= x != 0.0;
        }
        count += (size_t)any;
    }
    if (bad < (size_t)K * n) return bn_field_bad_source(prm, m, var[bad / n], bad % n);
    if (nonzero) *nonzero = count;
    return BN_OK;
}

bn_status bn_field_sources_make(const bn_field_params *prm, const bn_mesh *m, const bn_particles *p,
                                bn_field_sources *s)
{
    const int K = prm->kind == BN_FIELD_VORTICITY ? 3 : 1;
    int var[3] = {0, 0, 0};
    const size_t cells = m ? bn_mesh_block_cells(m) : 0;
    size_t n = 0;
    if (m) {
        BN_TRY(source_vars(prm, m, var, K, &n));
        if (m->n_blocks > INT32_MAX) return bn_fail(BN_ERR_ARGUMENT, "mesh: %zu blocks (at most 2^31 - 1)", m->n_blocks);
    }
    if (p && K != 1) return bn_fail(BN_ERR_ARGUMENT, "particles as sources carry masses: gravity only");
    if (p) n += p->n;
    BN_TRY(sources_alloc(s, n, K));
    size_t at = 0;
    for (size_t b = 0; m && b < m->n_blocks; b++)
        for (size_t c = 0; c < cells; c++) {
            const size_t g = b * cells + c;
            int any = 0;
            for (int k = 0; k < K; k++) any |= m->var[var[k]][g] != 0.0;
            if (!any) continue;
            double x[3], h[3];
            bn_mesh_cell(m, b, (int)(c % (size_t)m->nb[0]), (int)(c / (size_t)m->nb[0] % (size_t)m->nb[1]),
                         (int)(c / ((size_t)m->nb[0] * (size_t)m->nb[1])), x, h);
            const double vol = h[0] * h[1] * h[2];
            for (int k = 0; k < 3; k++) s->x[k][at] = x[k];
            for (int k = 0; k < K; k++) s->q[(size_t)K * at + (size_t)k] = m->var[var[k]][g] * vol;
            s->blk[at++] = (int32_t)b;
        }
    for (size_t i = 0; p && i < p->n; i++, at++) {
        for (int k = 0; k < 3; k++) s->x[k][at] = p->pos[k][i];
        s->q[at] = p->mass[i];
        s->blk[at] = -1;
    }
    s->n = n;
    for (size_t i = 0; i < n * (size_t)K; i++)
        if (!isfinite(s->q[i])) {
            const double q = s->q[i];
            bn_field_sources_free(s);
            return bn_fail(BN_ERR_ARGUMENT, "source %zu: strength x volume is %g (not finite)", i / (size_t)K, q);
        }
    return BN_OK;
}

static bn_status targets_alloc(bn_field_targets *t, size_t n, size_t groups)
{
    memset(t, 0, sizeof *t);
    BN_TRY(bn_check_count(n, 3 * sizeof(double) + sizeof(size_t), "field targets"));
    const size_t m = n ? n : 1, g = groups ? groups : 1;
    int ok = 1;
    for (int k = 0; k < 3; k++) ok &= (t->x[k] = bn_alloc_array(m, sizeof(double), "field targets")) != NULL;
    ok &= (t->dest = bn_alloc_array(m, sizeof(size_t), "field targets")) != NULL;
    ok &= (t->first = bn_alloc_array(g, sizeof(size_t), "target groups")) != NULL;
    ok &= (t->count = bn_alloc_array(g, sizeof(int), "target groups")) != NULL;
    ok &= (t->lo = bn_alloc_array(3 * g, sizeof(double), "target groups")) != NULL;
    ok &= (t->hi = bn_alloc_array(3 * g, sizeof(double), "target groups")) != NULL;
    ok &= (t->h = bn_calloc(g, sizeof(double), "target groups")) != NULL;
    if (!ok) {
        bn_field_targets_free(t);
        return BN_ERR_NOMEM;
    }
    t->n = n;
    t->n_groups = groups;
    return BN_OK;
}

/* The box of group g from its targets. */
static void group_box(bn_field_targets *t, size_t g)
{
    for (int k = 0; k < 3; k++) {
        double lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < t->count[g]; i++) {
            const double x = t->x[k][t->first[g] + (size_t)i];
            lo = fmin(lo, x);
            hi = fmax(hi, x);
        }
        t->lo[3 * g + k] = lo;
        t->hi[3 * g + k] = hi;
    }
}

/* Bricks of a block: the block's cells cut along each axis into pieces
 * of at most 8 cells (a block of 16^3: 8 bricks of 8^3). */
static int brick_cuts(int n) { return (n + 7) / 8; }

bn_status bn_field_targets_mesh(const bn_mesh *m, bn_field_targets *t)
{
    return bn_field_targets_blocks(m, NULL, m->n_blocks, t);
}

bn_status bn_field_targets_blocks(const bn_mesh *m, const size_t *blocks, size_t nsel, bn_field_targets *t)
{
    const int *nb = m->nb;
    const int cx = brick_cuts(nb[0]), cy = brick_cuts(nb[1]), cz = brick_cuts(nb[2]);
    const size_t bricks = (size_t)cx * (size_t)cy * (size_t)cz, cells = bn_mesh_block_cells(m);
    BN_TRY(targets_alloc(t, nsel * cells, nsel * bricks));
    size_t at = 0, g = 0;
    for (size_t sel = 0; sel < nsel; sel++) {
        const size_t b = blocks ? blocks[sel] : sel;
        for (int bz = 0; bz < cz; bz++)
            for (int by = 0; by < cy; by++)
                for (int bx = 0; bx < cx; bx++, g++) {
                    t->first[g] = at;
                    const int i0 = bx * nb[0] / cx, i1 = (bx + 1) * nb[0] / cx, j0 = by * nb[1] / cy,
                              j1 = (by + 1) * nb[1] / cy, k0 = bz * nb[2] / cz, k1 = (bz + 1) * nb[2] / cz;
                    for (int k = k0; k < k1; k++)
                        for (int j = j0; j < j1; j++)
                            for (int i = i0; i < i1; i++, at++) {
                                double x[3];
                                bn_mesh_cell(m, b, i, j, k, x, NULL);
                                for (int a = 0; a < 3; a++) t->x[a][at] = x[a];
                                t->dest[at] = sel * cells +
                                              ((size_t)k * (size_t)nb[1] + (size_t)j) * (size_t)nb[0] + (size_t)i;
                            }
                    t->count[g] = (int)(at - t->first[g]);
                    t->h[g] = (m->hi[3 * b] - m->lo[3 * b]) / nb[0];
                    group_box(t, g);
                }
    }
    return BN_OK;
}

typedef struct keyed {
    uint64_t key;
    size_t index;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key) return (x->key > y->key) - (x->key < y->key);
    return (x->index > y->index) - (x->index < y->index);
}

bn_status bn_field_targets_points(size_t n, const double *pos, bn_field_targets *t)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const double x = pos[3 * i + k];
            if (!isfinite(x)) return bn_fail(BN_ERR_ARGUMENT, "target point %zu: %c = %g (not finite)", i, "xyz"[k], x);
            lo[k] = fmin(lo[k], x);
            hi[k] = fmax(hi[k], x);
        }
    const size_t groups = (n + BN_FIELD_POINT_GROUP - 1) / BN_FIELD_POINT_GROUP;
    BN_TRY(targets_alloc(t, n, groups));
    keyed *k = bn_alloc_array(n ? n : 1, sizeof *k, "target order");
    if (!k) {
        bn_field_targets_free(t);
        return BN_ERR_NOMEM;
    }
    double side = 0;
    for (int a = 0; a < 3; a++) side = fmax(side, hi[a] - lo[a]);
    const double inv = side > 0 ? 1.0 / side : 0.0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c[3];
        for (int a = 0; a < 3; a++) c[a] = (uint32_t)fmin((pos[3 * i + a] - lo[a]) * inv * 2097151.0, 2097151.0);
        k[i] = (keyed){bn_key_morton(c[0], c[1], c[2]), i};
    }
    qsort(k, n, sizeof *k, cmp_keyed);
    for (size_t i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) t->x[a][i] = pos[3 * k[i].index + a];
        t->dest[i] = k[i].index;
    }
    free(k);
    for (size_t g = 0; g < groups; g++) {
        t->first[g] = g * BN_FIELD_POINT_GROUP;
        t->count[g] = (int)(n - t->first[g] < BN_FIELD_POINT_GROUP ? n - t->first[g] : BN_FIELD_POINT_GROUP);
        group_box(t, g);
    }
    return BN_OK;
}

double bn_field_eps2(const bn_field_params *prm, const bn_mesh *m)
{
    if (!(prm->smoothing > 0) || !m) return 0.0;
    double h = INFINITY;
    for (size_t b = 0; b < m->n_blocks; b++)
        for (int k = 0; k < 3; k++) h = fmin(h, (m->hi[3 * b + k] - m->lo[3 * b + k]) / m->nb[k]);
    const double e = prm->smoothing * h;
    return e * e;
}

/* ---- the nearest cells as cubes ------------------------------------------------- */

int bn_field_is_near(const bn_mesh *m, int near_cells, int32_t b, const double d[3])
{
    if (b < 0 || !m) return 0;
    for (int k = 0; k < 3; k++) {
        const double h = (m->hi[3 * (size_t)b + k] - m->lo[3 * (size_t)b + k]) / m->nb[k];
        if (!(fabs(d[k]) < ((double)near_cells + 0.5) * h)) return 0;
    }
    return 1;
}

void bn_field_near_pair(const bn_mesh *m, int32_t b, int K, const double d[3], const double *q, double *raw)
{
    double h[3];
    for (int k = 0; k < 3; k++) h[k] = (m->hi[3 * (size_t)b + k] - m->lo[3 * (size_t)b + k]) / m->nb[k];
    double cube_phi = 0.0, cube_g[3] = {0, 0, 0}, pt_phi[3] = {0, 0, 0}, pt_g[9] = {0};
    bn_box_field_at(d, h, &cube_phi, cube_g);
    bn_field_pp_d(K, d[0], d[1], d[2], q, pt_phi, pt_g);
    const double inv_vol = 1.0 / (h[0] * h[1] * h[2]);
    for (int k = 0; k < K; k++) {
        const double rho = q[k] * inv_vol;
        raw[k] += rho * cube_phi - pt_phi[k];
        for (int a = 0; a < 3; a++) raw[K + 3 * k + a] += rho * cube_g[a] - pt_g[3 * k + a];
    }
}

bn_status bn_field_near_table_make(const bn_mesh *m, int near, bn_field_near_table *tab)
{
    memset(tab, 0, sizeof *tab);
    tab->near = near;
    const double hx = (m->hi[0] - m->lo[0]) / m->nb[0];
    for (int k = 0; k < 3; k++) tab->aspect[k] = (m->hi[k] - m->lo[k]) / m->nb[k] / hx;
    const int w = 2 * near + 1;
    tab->t = bn_alloc_array((size_t)w * w * w, 4 * sizeof(double), "near-field table");
    if (!tab->t) return BN_ERR_NOMEM;
    const double *a = tab->aspect, area = a[1] * a[2];
    for (int o = 0; o < w * w * w; o++) {
        const double u[3] = {(double)(o % w - near) * a[0], (double)(o / w % w - near) * a[1],
                             (double)(o / (w * w) - near) * a[2]};
        double phi = 0, g[3] = {0, 0, 0};
        bn_box_field_at(u, a, &phi, g); /* the box at +u from the target: d = u */
        const double r2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2], rinv = r2 > 0 ? 1.0 / sqrt(r2) : 0.0;
        double *t = tab->t + 4 * o;
        t[0] = phi / area + rinv;
        for (int k = 0; k < 3; k++) t[1 + k] = g[k] / area - u[k] * rinv * rinv * rinv;
    }
    return BN_OK;
}

void bn_field_near_table_free(bn_field_near_table *tab)
{
    free(tab->t);
    tab->t = NULL;
}

int bn_field_near_from_table(const bn_field_near_table *tab, double hs, double ht, const double d[3], int K,
                             const double *q, double *raw)
{
    if (!(fabs(hs - ht) <= 1e-9 * hs)) return 0;
    const int n = tab->near, w = 2 * n + 1;
    int o[3];
    for (int k = 0; k < 3; k++) {
        const double u = d[k] / (hs * tab->aspect[k]), r = nearbyint(u);
        if (fabs(u - r) > 1e-6 || fabs(r) > n) return 0;
        o[k] = (int)r + n;
    }
    const double *t = tab->t + 4 * (o[0] + w * (o[1] + w * o[2]));
    for (int k = 0; k < K; k++) {
        const double f = q[k] / hs;
        raw[k] += f * t[0];
        for (int a = 0; a < 3; a++) raw[K + 3 * k + a] += f / hs * t[1 + a];
    }
    return 1;
}

/* ---- the solver ---------------------------------------------------------------- */

bn_status bn_field_create(bn_field **out, const bn_field_params *p)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_field_create: out is NULL");
    *out = NULL;
    BN_TRY(bn_field_params_validate(p));
    bn_backend be = p->backend;
    if (be == BN_BACKEND_AUTO) be = bn_gpu_available() ? BN_BACKEND_GPU : BN_BACKEND_CPU;
    bn_field *f = bn_calloc(1, sizeof *f, "field solver");
    if (!f) return BN_ERR_NOMEM;
    f->prm = *p;
    f->backend = be;
    if (be == BN_BACKEND_GPU) {
        bn_status s = bn_field_gpu_create(&f->gpu, p->device);
        if (s != BN_OK) {
            free(f);
            return s;
        }
    }
    *out = f;
    return BN_OK;
}

void bn_field_free(bn_field *f)
{
    if (!f) return;
    bn_field_gpu_free(f->gpu);
    free(f);
}

bn_backend bn_field_backend(const bn_field *f) { return f->backend; }

const bn_field_stats *bn_field_stats_get(const bn_field *f) { return &f->stats; }

/* Raw sums (4K per target, in target order) into per-destination values:
 * gravity pot, ax, ay, az; vorticity psi xyz and u xyz (u = curl psi). */
static void finish_values(const bn_field_params *prm, int K, const double *raw, double *v)
{
    if (prm->kind == BN_FIELD_GRAVITY) {
        v[0] = prm->G * raw[0];
        for (int a = 0; a < 3; a++) v[1 + a] = prm->G * raw[1 + a];
        return;
    }
    const double f = 1.0 / (4.0 * BN_PI);
    const double *g = raw + K; /* g[3 k + j] = d psi_k / d x_j times 4 pi */
    for (int k = 0; k < 3; k++) v[k] = -f * raw[k];
    v[3] = prm->velocity ? f * (g[3 * 2 + 1] - g[3 * 1 + 2]) : 0.0;
    v[4] = prm->velocity ? f * (g[3 * 0 + 2] - g[3 * 2 + 0]) : 0.0;
    v[5] = prm->velocity ? f * (g[3 * 1 + 0] - g[3 * 0 + 1]) : 0.0;
}

static bn_status backend_solve(bn_field *f, const bn_field_params *prm, const bn_mesh *m, const bn_field_sources *s,
                               const bn_field_targets *t, double *raw)
{
    const double keep_theta = f->stats.theta, keep_p99 = f->stats.sample_p99, keep_tuning = f->stats.t_tuning;
    bn_status st = f->backend == BN_BACKEND_GPU ? bn_field_gpu_solve(f->gpu, prm, m, s, t, raw, &f->stats)
                                                : bn_field_cpu_solve(prm, m, s, t, raw, &f->stats);
    f->stats.theta = keep_theta;
    f->stats.sample_p99 = keep_p99;
    f->stats.t_tuning = keep_tuning;
    return st;
}

/* The error of raw values against the reference (4K per point): gravity
 * |g - g_ref| / |g_ref|, vorticity |psi - psi_ref| / max |psi_ref|. */
static double sample_p99(int K, size_t n, const double *raw, const double *ref)
{
    double *e = malloc(n * sizeof *e), scale = 0, p99 = INFINITY;
    if (!e) return p99;
    for (size_t i = 0; K == 3 && i < n; i++)
        for (int k = 0; k < 3; k++) scale = fmax(scale, fabs(ref[12 * i + k]));
    for (size_t i = 0; i < n; i++) {
        const double *a = raw + BN_FIELD_RAW(K) * i, *r = ref + BN_FIELD_RAW(K) * i;
        double d2 = 0, r2 = 0;
        for (int k = 0; k < (K == 1 ? 3 : 3); k++) {
            const int at = K == 1 ? 1 + k : k;
            d2 += (a[at] - r[at]) * (a[at] - r[at]);
            r2 += r[at] * r[at];
        }
        e[i] = K == 1 ? (r2 > 0 ? sqrt(d2 / r2) : sqrt(d2)) : (scale > 0 ? sqrt(d2) / scale : sqrt(d2));
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: n is a few hundred */
        for (size_t j = i; j > 0 && e[j - 1] > e[j]; j--) {
            const double x = e[j];
            e[j] = e[j - 1];
            e[j - 1] = x;
        }
    p99 = n ? e[(size_t)ceil(0.99 * (double)n) - 1] : 0.0;
    free(e);
    return p99;
}

/* An error target: the largest theta of the list whose p99 on a sample
 * of the targets meets it (the last one when none does). */
static bn_status choose_theta(bn_field *f, const bn_mesh *m, const bn_field_sources *s, const bn_field_targets *t,
                              bn_field_params *prm)
{
    static const double thetas[] = {1.0, 0.8, 0.65, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05};
    const double t0 = bn_wall_seconds();
    const size_t n = t->n < 256 ? t->n : 256, K = (size_t)s->K;
    double *pos = bn_alloc_array(n ? n : 1, 3 * sizeof(double), "error sample");
    double *ref = bn_calloc(n ? n : 1, BN_FIELD_RAW(K) * sizeof(double), "error sample");
    double *raw = bn_calloc(n ? n : 1, BN_FIELD_RAW(K) * sizeof(double), "error sample");
    bn_field_targets st;
    memset(&st, 0, sizeof st);
    bn_status r = pos && ref && raw ? BN_OK : BN_ERR_NOMEM;
    for (size_t i = 0; r == BN_OK && i < n; i++) /* spread over the targets, deterministically */
        for (int k = 0; k < 3; k++) pos[3 * i + k] = t->x[k][i * t->n / n];
    if (r == BN_OK) r = bn_field_cpu_direct(prm, m, s, n, pos, ref);
    if (r == BN_OK) r = bn_field_targets_points(n, pos, &st);
    double p99 = INFINITY;
    for (size_t c = 0; r == BN_OK && c < sizeof thetas / sizeof *thetas; c++) {
        prm->theta = thetas[c];
        memset(raw, 0, n * BN_FIELD_RAW(K) * sizeof(double));
        r = backend_solve(f, prm, m, s, &st, raw);
        double *sorted_raw = raw; /* st's order: map back to the sample's */
        double *back = r == BN_OK ? bn_alloc_array(n ? n : 1, BN_FIELD_RAW(K) * sizeof(double), "error sample") : NULL;
        if (r == BN_OK && !back) r = BN_ERR_NOMEM;
        for (size_t i = 0; r == BN_OK && i < n; i++)
            memcpy(back + BN_FIELD_RAW(K) * st.dest[i], sorted_raw + BN_FIELD_RAW(K) * i, BN_FIELD_RAW(K) * sizeof(double));
        if (r == BN_OK) p99 = sample_p99((int)K, n, back, ref);
        free(back);
        if (p99 <= prm->error_target) break;
    }
    f->stats.sample_p99 = p99;
    f->stats.t_tuning = bn_wall_seconds() - t0;
    bn_field_targets_free(&st);
    free(pos);
    free(ref);
    free(raw);
    return r;
}

/* BANYAN_FIELD_TRACE=1: the host's stages timed to stderr (with the
 * GPU's, field_cuda.cu). */
static void host_trace(const char *stage, double *t)
{
    static int on = -1;
    if (on < 0) on = getenv("BANYAN_FIELD_TRACE") != NULL;
    const double now = bn_wall_seconds();
    if (on && stage) fprintf(stderr, "field trace: %-28s %9.3f ms\n", stage, 1e3 * (now - *t));
    *t = now;
}

/* The field at targets t; an error target chooses theta on a sample of
 * the targets `sample` (t itself, or, when t is a part of a mesh's cells,
 * every cell of it: the same choice whatever the part). */
static bn_status solve(bn_field *f, const bn_mesh *m, const bn_particles *extra, const bn_field_targets *t,
                       const bn_field_targets *sample, double **raw_out)
{
    const double t0 = bn_wall_seconds();
    double tr = t0;
    memset(&f->stats, 0, sizeof f->stats);
    f->stats.theta = f->prm.theta;
    if (m) BN_TRY(bn_mesh_validate(m, "the mesh"));
    if (extra) BN_TRY(bn_particles_validate(extra, "the particle sources"));
    host_trace("validate", &tr);
    bn_field_sources s;
    BN_TRY(bn_field_sources_make(&f->prm, m, extra, &s));
    f->stats.t_sources = bn_wall_seconds() - t0;
    host_trace("sources (host)", &tr);
    const int K = s.K;
    double *raw = bn_calloc(t->n ? t->n : 1, BN_FIELD_RAW(K) * sizeof(double), "field values");
    bn_status st = raw ? BN_OK : BN_ERR_NOMEM;
    bn_field_params prm = f->prm;
    if (st == BN_OK && s.n > 0 && prm.error_target > 0) st = choose_theta(f, m, &s, sample, &prm);
    f->stats.theta = prm.theta;
    if (st == BN_OK && s.n > 0) st = backend_solve(f, &prm, m, &s, t, raw);
    f->stats.n_sources = s.n;
    f->stats.n_targets = t->n;
    f->stats.backend = bn_backend_name(f->backend);
    bn_field_sources_free(&s);
    for (size_t i = 0; st == BN_OK && i < t->n * BN_FIELD_RAW(K); i++)
        if (!isfinite(raw[i]))
            st = bn_fail(BN_ERR_ARGUMENT, "the field at target %zu is not finite (%g): strengths or G overflow",
                         i / BN_FIELD_RAW(K), raw[i]);
    if (st != BN_OK) {
        free(raw);
        return st;
    }
    f->stats.t_total = bn_wall_seconds() - t0;
    host_trace("solve and finite check", &tr);
    *raw_out = raw;
    return BN_OK;
}


static const char *const out_names[2][6] = {{"gpot", "gacx", "gacy", "gacz", "", ""},
                                            {"psix", "psiy", "psiz", "velx", "vely", "velz"}};

/* The GPU's mesh path: sources, targets and results on the device; the
 * host checks the mesh (its octree and the source variables) and makes
 * the output variables. An error target chooses theta first, on a
 * sample through the points path. */
/* What the GPU's solve needs before anything is written: the mesh's
 * octree and source variables (var), the particles, an error target's
 * theta (sampled over every cell; into *prm). */
static bn_status gpu_mesh_prepare(bn_field *f, const bn_mesh *m, const bn_particles *extra, bn_field_params *prm,
                                  int var[3])
{
    double tr = bn_wall_seconds();
    memset(&f->stats, 0, sizeof f->stats);
    *prm = f->prm;
    const int K = prm->kind == BN_FIELD_VORTICITY ? 3 : 1;
    bn_mesh_octree o;
    BN_TRY(bn_mesh_octree_make(m, &o));
    bn_mesh_octree_free(&o);
    BN_TRY(source_var_indices(prm, m, var, K)); /* the values: checked on the device */
    if (extra) BN_TRY(bn_particles_validate(extra, "the particle sources"));
    if (extra && K != 1) return bn_fail(BN_ERR_ARGUMENT, "particles as sources carry masses: gravity only");
    host_trace("validate", &tr);
    if (prm->error_target > 0) {
        bn_field_sources s;
        bn_field_targets t;
        BN_TRY(bn_field_sources_make(prm, m, extra, &s));
        bn_status st = bn_field_targets_mesh(m, &t);
        if (st == BN_OK && s.n > 0) st = choose_theta(f, m, &s, &t, prm);
        bn_field_sources_free(&s);
        bn_field_targets_free(&t);
        BN_TRY(st);
        host_trace("error target", &tr);
    }
    return BN_OK;
}

/* The GPU's values at the part's blocks (every block: part NULL) into
 * out[0..nv) (the part's cells, its blocks in its order), after
 * gpu_mesh_prepare. */
static bn_status gpu_mesh_values(bn_field *f, const bn_mesh *m, const bn_particles *extra,
                                 const bn_field_params *prm, const int var[3], const bn_mesh_part *part,
                                 double *const *out)
{
    double tr = bn_wall_seconds();
    const double keep_p99 = f->stats.sample_p99, keep_tuning = f->stats.t_tuning;
    BN_TRY(bn_field_gpu_mesh(f->gpu, prm, m, var, extra, part, out, &f->stats));
    f->stats.sample_p99 = keep_p99;
    f->stats.t_tuning = keep_tuning;
    f->stats.theta = prm->theta;
    f->stats.backend = bn_backend_name(f->backend);
    host_trace("gpu mesh path", &tr);
    return BN_OK;
}

/* The output variables are added after the checks (a failed call leaves
 * the mesh as it was; a source variable named like an output is the
 * caller's, not a new zero one). */
static bn_status gpu_mesh(bn_field *f, bn_mesh *m, const bn_particles *extra)
{
    const double t0 = bn_wall_seconds();
    const int vort = f->prm.kind == BN_FIELD_VORTICITY, nv = bn_field_mesh_values(&f->prm);
    bn_field_params prm;
    int var[3];
    BN_TRY(gpu_mesh_prepare(f, m, extra, &prm, var));
    int out_var[6];
    for (int k = 0; k < nv; k++) BN_TRY(bn_mesh_add_var(m, out_names[vort][k], &out_var[k]));
    double *out[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    for (int k = 0; k < nv; k++) out[k] = m->var[out_var[k]];
    BN_TRY(gpu_mesh_values(f, m, extra, &prm, var, NULL, out));
    f->stats.t_total = bn_wall_seconds() - t0;
    return BN_OK;
}

/* The GPU's values at a part's blocks, nv per cell (bn_field_mesh_blocks'
 * layout), from the device's planes. */
static bn_status gpu_mesh_blocks(bn_field *f, const bn_mesh *m, const bn_particles *extra, const size_t *blocks,
                                 size_t nsel, double *out)
{
    const double t0 = bn_wall_seconds();
    const int nv = bn_field_mesh_values(&f->prm);
    const size_t n = nsel * bn_mesh_block_cells(m);
    double *plane[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    bn_status s = BN_OK;
    for (int k = 0; k < nv && s == BN_OK; k++)
        if (!(plane[k] = bn_alloc_array(n ? n : 1, sizeof(double), "the part's field values"))) s = BN_ERR_NOMEM;
    const bn_mesh_part part = {blocks, nsel};
    bn_field_params prm;
    int var[3];
    if (s == BN_OK) s = gpu_mesh_prepare(f, m, extra, &prm, var);
    if (s == BN_OK) s = gpu_mesh_values(f, m, extra, &prm, var, &part, plane);
    if (s == BN_OK)
#pragma omp parallel for schedule(static)
        for (long c = 0; c < (long)n; c++)
            for (int k = 0; k < nv; k++) out[(size_t)nv * (size_t)c + (size_t)k] = plane[k][c];
    for (int k = 0; k < 6; k++) free(plane[k]);
    f->stats.t_total = bn_wall_seconds() - t0;
    return s;
}

/* The values written are finite (an FFT of extreme strengths can
 * overflow where the tree's sums would not): the first one that is not is
 * named, and the call fails rather than leave it for a writer. */
static bn_status check_values(const bn_mesh *m, const int *var, int nv)
{
    const size_t n = bn_mesh_cells(m);
    for (int k = 0; k < nv; k++) {
        size_t bad = n;
#pragma omp parallel for reduction(min : bad) schedule(static)
        for (long c = 0; c < (long)n; c++)
            if (!isfinite(m->var[var[k]][c]) && (size_t)c < bad) bad = (size_t)c;
        if (bad < n)
            return bn_fail_context(bn_mesh_bad_value(m, "the solution", var[k], bad),
                                   "the sources' values overflow the solver");
    }
    return BN_OK;
}

/* The FFT solver on a uniform mesh: the strengths on the grid, the
 * convolutions on the backend, the values into the mesh's variables. */
static bn_status fft_mesh(bn_field *f, bn_mesh *m, const bn_particles *extra)
{
    const double t0 = bn_wall_seconds();
    memset(&f->stats, 0, sizeof f->stats);
    const bn_field_params *prm = &f->prm;
    if (extra) return bn_fail(BN_ERR_ARGUMENT, "the FFT solver takes mesh sources only (particles need the tree)");
    if (prm->smoothing > 0) return bn_fail(BN_ERR_ARGUMENT, "the FFT solver has no smoothed kernel (use the tree)");
    const int K = prm->kind == BN_FIELD_VORTICITY ? 3 : 1, vort = K == 3, nv = vort ? (prm->velocity ? 6 : 3) : 4;
    int var[3], out_var[6];
    BN_TRY(bn_mesh_check_geometry(m, "the mesh"));
    BN_TRY(source_vars(prm, m, var, K, NULL));
    bn_fft_grid g;
    BN_TRY(bn_fft_grid_make(m, f->backend != BN_BACKEND_GPU, &g));
    const size_t n = bn_mesh_cells(m);
    for (int k = 0; k < nv; k++) BN_TRY(bn_mesh_add_var(m, out_names[vort][k], &out_var[k]));
    if (f->backend == BN_BACKEND_GPU) { /* on the device from the variables to the variables */
        double *out[6];
        for (int k = 0; k < nv; k++) out[k] = m->var[out_var[k]];
        bn_status s = bn_fft_gpu_mesh(f->gpu, prm, m, &g, var, out, &f->stats);
        if (s == BN_OK) s = check_values(m, out_var, nv);
        bn_fft_grid_free(&g);
        f->stats.n_sources = f->stats.n_targets = n;
        f->stats.backend = bn_backend_name(f->backend);
        f->stats.t_total = bn_wall_seconds() - t0;
        return s;
    }
    const double vol = g.h[0] * g.h[1] * g.h[2];
    double *q = bn_alloc_array(n, (size_t)K * sizeof(double), "FFT strengths");
    double *raw = q ? bn_alloc_array(n, BN_FIELD_RAW(K) * sizeof(double), "FFT values") : NULL;
    bn_status s = raw ? BN_OK : BN_ERR_NOMEM;
    if (s == BN_OK) {
#pragma omp parallel for schedule(static)
        for (long at = 0; at < (long)n; at++)
            for (int k = 0; k < K; k++) q[(size_t)K * (size_t)at + (size_t)k] = m->var[var[k]][g.cell[at]] * vol;
        s = bn_fft_cpu_solve(&g, K, prm->near_cells, !vort || prm->velocity, q, raw);
    }
    if (s == BN_OK) {
#pragma omp parallel for schedule(static)
        for (long at = 0; at < (long)n; at++) {
            double v[6];
            finish_values(prm, K, raw + BN_FIELD_RAW(K) * (size_t)at, v);
            for (int k = 0; k < nv; k++) m->var[out_var[k]][g.cell[at]] = v[k];
        }
        s = check_values(m, out_var, nv);
    }
    f->stats.n_sources = f->stats.n_targets = n;
    f->stats.backend = bn_backend_name(f->backend);
    f->stats.t_total = bn_wall_seconds() - t0;
    free(q);
    free(raw);
    bn_fft_grid_free(&g);
    return s;
}

bn_status bn_field_mesh(bn_field *f, bn_mesh *m, const bn_particles *extra)
{
    if (!f || !m) return bn_fail(BN_ERR_ARGUMENT, "bn_field_mesh: NULL argument");
    if (f->prm.method == BN_FIELD_FFT) return fft_mesh(f, m, extra);
    if (f->backend == BN_BACKEND_GPU) return gpu_mesh(f, m, extra);
    const int kind = f->prm.kind == BN_FIELD_VORTICITY, nv = kind ? (f->prm.velocity ? 6 : 3) : 4;
    const int K = kind ? 3 : 1;
    double tr = bn_wall_seconds();
    bn_field_targets t;
    BN_TRY(bn_field_targets_mesh(m, &t));
    host_trace("targets (host)", &tr);
    double *raw = NULL;
    bn_status s = solve(f, m, extra, &t, &t, &raw);
    tr = bn_wall_seconds();
    int var[6];
    for (int k = 0; s == BN_OK && k < nv; k++) s = bn_mesh_add_var(m, out_names[kind][k], &var[k]);
    for (size_t i = 0; s == BN_OK && i < t.n; i++) {
        double v[6];
        finish_values(&f->prm, K, raw + BN_FIELD_RAW(K) * i, v);
        for (int k = 0; k < nv; k++) m->var[var[k]][t.dest[i]] = v[k];
    }
    if (s == BN_OK) s = check_values(m, var, nv);
    host_trace("results into the mesh", &tr);
    free(raw);
    bn_field_targets_free(&t);
    return s;
}

const bn_field_params *bn_field_params_of(const bn_field *f) { return &f->prm; }

int bn_field_mesh_values(const bn_field_params *p)
{
    return p->kind == BN_FIELD_VORTICITY ? (p->velocity ? 6 : 3) : 4;
}

const char *bn_field_mesh_var_name(const bn_field_params *p, int k)
{
    return out_names[p->kind == BN_FIELD_VORTICITY][k];
}

bn_status bn_field_mesh_blocks(bn_field *f, const bn_mesh *m, const bn_particles *extra, const size_t *blocks,
                               size_t nsel, double *out)
{
    if (!f || !m || (nsel && (!blocks || !out))) return bn_fail(BN_ERR_ARGUMENT, "bn_field_mesh_blocks: NULL argument");
    if (f->prm.method != BN_FIELD_TREE)
        return bn_fail(BN_ERR_UNSUPPORTED, "the field at a part of a mesh's blocks: the tree only");
    for (size_t i = 0; i < nsel; i++)
        if (blocks[i] >= m->n_blocks)
            return bn_fail(BN_ERR_ARGUMENT, "block %zu of the part: the mesh has %zu", blocks[i], m->n_blocks);
    if (f->backend == BN_BACKEND_GPU) return gpu_mesh_blocks(f, m, extra, blocks, nsel, out);
    const int K = f->prm.kind == BN_FIELD_VORTICITY ? 3 : 1, nv = bn_field_mesh_values(&f->prm);
    bn_field_targets t, all;
    memset(&all, 0, sizeof all);
    BN_TRY(bn_field_targets_blocks(m, blocks, nsel, &t));
    bn_status s = f->prm.error_target > 0 ? bn_field_targets_mesh(m, &all) : BN_OK;
    double *raw = NULL;
    if (s == BN_OK) s = solve(f, m, extra, &t, f->prm.error_target > 0 ? &all : &t, &raw);
    for (size_t i = 0; s == BN_OK && i < t.n; i++) {
        double v[6];
        finish_values(&f->prm, K, raw + BN_FIELD_RAW(K) * i, v);
        for (int k = 0; k < nv; k++) out[(size_t)nv * t.dest[i] + (size_t)k] = v[k];
    }
    for (size_t i = 0; s == BN_OK && i < t.n * (size_t)nv; i++)
        if (!isfinite(out[i]))
            s = bn_fail(BN_ERR_ARGUMENT, "the solution at cell %zu of the part is %g: the sources' values overflow the "
                        "solver", i / (size_t)nv, out[i]);
    free(raw);
    bn_field_targets_free(&t);
    bn_field_targets_free(&all);
    return s;
}

bn_status bn_field_points(bn_field *f, const bn_mesh *m, const bn_particles *extra, size_t n, const double *pos,
                          double *out)
{
    if (!f || !pos || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_field_points: NULL argument");
    const int K = f->prm.kind == BN_FIELD_VORTICITY ? 3 : 1, nv = bn_field_point_values(&f->prm);
    bn_field_targets t;
    BN_TRY(bn_field_targets_points(n, pos, &t));
    double *raw = NULL;
    bn_status s = solve(f, m, extra, &t, &t, &raw);
    for (size_t i = 0; s == BN_OK && i < t.n; i++)
        finish_values(&f->prm, K, raw + BN_FIELD_RAW(K) * i, out + (size_t)nv * t.dest[i]);
    free(raw);
    bn_field_targets_free(&t);
    return s;
}

bn_status bn_field_direct(const bn_field_params *p, const bn_mesh *m, const bn_particles *extra, size_t n,
                          const double *pos, double *out)
{
    if (!p || !pos || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_field_direct: NULL argument");
    BN_TRY(bn_field_params_validate(p));
    if (m) BN_TRY(bn_mesh_validate(m, "the mesh"));
    bn_field_sources s;
    BN_TRY(bn_field_sources_make(p, m, extra, &s));
    const int K = s.K, nv = bn_field_point_values(p);
    double *raw = bn_calloc(n ? n : 1, BN_FIELD_RAW(K) * sizeof(double), "field values");
    bn_status st = raw ? bn_field_cpu_direct(p, m, &s, n, pos, raw) : BN_ERR_NOMEM;
    for (size_t i = 0; st == BN_OK && i < n; i++) finish_values(p, K, raw + BN_FIELD_RAW(K) * i, out + (size_t)nv * i);
    free(raw);
    bn_field_sources_free(&s);
    return st;
}
