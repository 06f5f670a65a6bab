/*
 * The field solver on the CPU (OpenMP), the reference of the GPU's, stage
 * for stage:
 *   tree     the particle tree's keys, sort and level-by-level build over
 *            the sources' positions (tree/tree_cpu.h): the tree does not
 *            care what its bodies are
 *   moments  per node: the box of its sources, its centre c and radius a
 *            (half the box's diagonal), and per component M, D, Q about c
 *            (field_interact.h), leaves from their sources, the others
 *            from their children (shifted), level by level bottom-up;
 *            the largest cell side below the node (for the near field)
 *   walk     per target group (a brick of cells, or 64 points), breadth
 *            first from the root: a node whose centre lies farther than
 *            bn_field_open_radius(a, theta) from the group's box acts
 *            through its moments, an opened leaf through its sources
 *   near     per target group, the source cells within (near_cells + 1/2)
 *            of their sides of a target act as exact cubes: their point
 *            kernel is replaced (bn_field_near_pair); found by a second
 *            descent that opens every node whose reach touches the group
 * Deterministic: one group is one thread's work, sums in a fixed order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/timer.h"
#include "gravity/field_interact.h"
#include "gravity/interact.h"
#include "mesh/field_internal.h"
#include "tree/tree_cpu.h"

typedef struct field_tree {
    bn_tree t;           /* structure: nodes, sorted order             */
    int K;
    double *q;           /* sorted strengths, K per source             */
    int32_t *blk;        /* sorted blocks                              */
    double *centre;      /* 3 per node                                 */
    double *open2;       /* opening radius squared                     */
    double *mom;         /* K * BN_FIELD_MOMENTS per node              */
    double *reach;       /* 3 per node: how far beyond the box a near
                            target can be (near_cells x cell side)    */
    double *lo, *hi;     /* 3 per node: box of the sources (cells as
                            cubes, particles as points)               */
} field_tree;

static void field_tree_free(field_tree *f)
{
    bn_tree_release(&f->t);
    free(f->q);
    free(f->blk);
    free(f->centre);
    free(f->open2);
    free(f->mom);
    free(f->reach);
    free(f->lo);
    free(f->hi);
}

static bn_status field_tree_build(const bn_field_params *prm, const bn_field_sources *s, field_tree *f)
{
    memset(f, 0, sizeof *f);
    f->K = s->K;
    const size_t n = s->n, K = (size_t)s->K;
    double *w = bn_alloc_array(n, sizeof(double), "source weights");
    if (!w) return BN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        w[i] = 0;
        for (size_t k = 0; k < K; k++) w[i] += fabs(s->q[K * i + k]);
    }
    bn_status st = bn_tree_sort_bodies(&f->t, (const double *const *)s->x, w, n, BN_CURVE_HILBERT, NULL, NULL, NULL);
    free(w);
    if (st == BN_OK) st = bn_tree_build(&f->t, prm->leaf_size);
    if (st != BN_OK) return st;
    const size_t nodes = (size_t)f->t.n_nodes;
    int ok = (f->q = bn_alloc_array(n * K, sizeof(double), "sorted strengths")) != NULL;
    ok &= (f->blk = bn_alloc_array(n, sizeof(int32_t), "sorted sources")) != NULL;
    ok &= (f->centre = bn_alloc_array(3 * nodes, sizeof(double), "field tree")) != NULL;
    ok &= (f->open2 = bn_alloc_array(nodes, sizeof(double), "field tree")) != NULL;
    ok &= (f->mom = bn_alloc_array(nodes * K * BN_FIELD_MOMENTS, sizeof(double), "field tree")) != NULL;
    ok &= (f->reach = bn_alloc_array(3 * nodes, sizeof(double), "field tree")) != NULL;
    ok &= (f->lo = bn_alloc_array(3 * nodes, sizeof(double), "field tree")) != NULL;
    ok &= (f->hi = bn_alloc_array(3 * nodes, sizeof(double), "field tree")) != NULL;
    if (!ok) return BN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const size_t o = f->t.order[i];
        for (size_t k = 0; k < K; k++) f->q[K * i + k] = s->q[K * o + k];
        f->blk[i] = s->blk[o];
    }
    return BN_OK;
}

/* ---- moments --------------------------------------------------------------- */

/* An empty box (grown by fmin/fmax) and no near-field reach. */
static void box_reset(double *lo, double *hi, double *reach)
{
    for (int a = 0; a < 3; a++) {
        lo[a] = INFINITY;
        hi[a] = -INFINITY;
        reach[a] = 0;
    }
}

/* Node c's box, centre, reach and raw moments (M, D, S = sum q s s) from
 * its sources. */
static void leaf_moments(field_tree *f, const bn_mesh *m, int near, int c)
{
    const bn_tree *t = &f->t;
    const int K = f->K, b0 = t->first_body[c], nb = t->n_bodies[c];
    double *lo = f->lo + 3 * c, *hi = f->hi + 3 * c, *ctr = f->centre + 3 * c, *reach = f->reach + 3 * c;
    box_reset(lo, hi, reach);
    /* the box of the sources as the cubes they are (a particle is a
     * point): the expansion's centre and the criterion's size */
    for (int i = b0; i < b0 + nb; i++)
        for (int a = 0; a < 3; a++) {
            double h = 0;
            if (f->blk[i] >= 0) {
                const size_t b = (size_t)f->blk[i];
                h = (m->hi[3 * b + a] - m->lo[3 * b + a]) / m->nb[a];
                reach[a] = fmax(reach[a], near * h);
            }
            lo[a] = fmin(lo[a], t->pos[a][i] - 0.5 * h);
            hi[a] = fmax(hi[a], t->pos[a][i] + 0.5 * h);
        }
    for (int a = 0; a < 3; a++) ctr[a] = 0.5 * (lo[a] + hi[a]);
    double *mo = f->mom + (size_t)c * K * BN_FIELD_MOMENTS;
    memset(mo, 0, (size_t)K * BN_FIELD_MOMENTS * sizeof(double));
    for (int i = b0; i < b0 + nb; i++) {
        const double s[3] = {t->pos[0][i] - ctr[0], t->pos[1][i] - ctr[1], t->pos[2][i] - ctr[2]};
        for (int k = 0; k < K; k++) bn_field_moments_add(mo + k * BN_FIELD_MOMENTS, f->q[(size_t)K * i + k], s);
    }
}

/* Node c from its children: box, centre, reach, and the children's raw
 * moments shifted to c's centre (t = child centre - c's centre):
 * D += M t, S_ab += D_a t_b + t_a D_b + M t_a t_b. */
static void inner_moments(field_tree *f, int c)
{
    const bn_tree *t = &f->t;
    const int K = f->K, c0 = t->first_child[c], nc = t->n_children[c];
    double *lo = f->lo + 3 * c, *hi = f->hi + 3 * c, *ctr = f->centre + 3 * c, *reach = f->reach + 3 * c;
    box_reset(lo, hi, reach);
    for (int ch = c0; ch < c0 + nc; ch++)
        for (int a = 0; a < 3; a++) {
            lo[a] = fmin(lo[a], f->lo[3 * ch + a]);
            hi[a] = fmax(hi[a], f->hi[3 * ch + a]);
            reach[a] = fmax(reach[a], f->reach[3 * ch + a]);
        }
    for (int a = 0; a < 3; a++) ctr[a] = 0.5 * (lo[a] + hi[a]);
    double *mo = f->mom + (size_t)c * K * BN_FIELD_MOMENTS;
    memset(mo, 0, (size_t)K * BN_FIELD_MOMENTS * sizeof(double));
    for (int ch = c0; ch < c0 + nc; ch++) {
        const double d[3] = {f->centre[3 * ch] - ctr[0], f->centre[3 * ch + 1] - ctr[1], f->centre[3 * ch + 2] - ctr[2]};
        for (int k = 0; k < K; k++)
            bn_field_moments_shift_add(mo + k * BN_FIELD_MOMENTS, f->mom + ((size_t)ch * K + k) * BN_FIELD_MOMENTS, d);
    }
}

/* Raw S to the traceless Q = 3 S - tr(S) I, and the opening radii. */
static void finish_moments(field_tree *f, double theta, int c)
{
    for (int k = 0; k < f->K; k++) bn_field_moments_finish(f->mom + ((size_t)c * f->K + k) * BN_FIELD_MOMENTS);
    double a2 = 0, l = 0;
    for (int a = 0; a < 3; a++) {
        const double side = f->hi[3 * c + a] - f->lo[3 * c + a];
        a2 += 0.25 * side * side;
        l = fmax(l, side);
    }
    const double r = bn_field_open_radius(l, sqrt(a2), theta);
    f->open2[c] = r * r;
}

static void field_moments(field_tree *f, const bn_mesh *m, const bn_field_params *prm)
{
    const bn_tree *t = &f->t;
    for (int L = t->n_levels - 1; L >= 0; L--) {
        const int lo = t->level_start[L], hi = t->level_start[L + 1];
#pragma omp parallel for schedule(static)
        for (int c = lo; c < hi; c++) {
            if (t->n_children[c] == 0) leaf_moments(f, m, prm->near_cells, c);
            else inner_moments(f, c);
        }
    }
#pragma omp parallel for schedule(static)
    for (int c = 0; c < t->n_nodes; c++) finish_moments(f, prm->theta, c);
}

/* ---- the walk ---------------------------------------------------------------- */

typedef struct walk_buf {
    int32_t *cur, *next;
    double *raw; /* 4K per target of the group */
    double count_pp, count_pc, count_near;
} walk_buf;

static double box_dist2(const double *c, const double *lo, const double *hi)
{
    double d2 = 0;
    for (int a = 0; a < 3; a++) {
        const double d = c[a] < lo[a] ? lo[a] - c[a] : c[a] > hi[a] ? c[a] - hi[a] : 0.0;
        d2 += d * d;
    }
    return d2;
}

/* Sources of leaf c on the group's targets. */
static void leaf_on_group(const field_tree *f, int c, const bn_field_targets *tg, size_t g, double eps2, walk_buf *w)
{
    const bn_tree *t = &f->t;
    const int K = f->K, b0 = t->first_body[c], nb = t->n_bodies[c], cnt = tg->count[g];
    const size_t first = tg->first[g];
    for (int i = 0; i < cnt; i++) {
        double *r = w->raw + (size_t)i * BN_FIELD_RAW(K);
        const double x = tg->x[0][first + i], y = tg->x[1][first + i], z = tg->x[2][first + i];
        for (int j = b0; j < b0 + nb; j++) {
            const double *q = f->q + (size_t)K * j;
            if (eps2 > 0) bn_field_pp_smooth_d(K, t->pos[0][j] - x, t->pos[1][j] - y, t->pos[2][j] - z, q, eps2, r, r + K);
            else bn_field_pp_d(K, t->pos[0][j] - x, t->pos[1][j] - y, t->pos[2][j] - z, q, r, r + K);
        }
    }
    w->count_pp += (double)cnt * nb;
}

static void cell_on_group(const field_tree *f, int c, const bn_field_targets *tg, size_t g, walk_buf *w)
{
    const int K = f->K, cnt = tg->count[g];
    const size_t first = tg->first[g];
    const double *ctr = f->centre + 3 * c, *mo = f->mom + (size_t)c * K * BN_FIELD_MOMENTS;
    for (int i = 0; i < cnt; i++) {
        double *r = w->raw + (size_t)i * BN_FIELD_RAW(K);
        bn_field_pc_d(K, ctr[0] - tg->x[0][first + i], ctr[1] - tg->x[1][first + i], ctr[2] - tg->x[2][first + i],
                      mo, r, r + K);
    }
    w->count_pc += cnt;
}

static void walk_group(const field_tree *f, const bn_field_targets *tg, size_t g, double eps2, walk_buf *w)
{
    const bn_tree *t = &f->t;
    const double *glo = tg->lo + 3 * g, *ghi = tg->hi + 3 * g;
    int ncur = 1, nnext = 0;
    w->cur[0] = 0;
    while (ncur > 0) {
        for (int i = 0; i < ncur; i++) {
            const int c = w->cur[i];
            if (box_dist2(f->centre + 3 * c, glo, ghi) > f->open2[c]) cell_on_group(f, c, tg, g, w);
            else if (t->n_children[c] == 0) leaf_on_group(f, c, tg, g, eps2, w);
            else
                for (int ch = t->first_child[c]; ch < t->first_child[c] + t->n_children[c]; ch++) w->next[nnext++] = ch;
        }
        int32_t *swap = w->cur;
        w->cur = w->next;
        w->next = swap;
        ncur = nnext;
        nnext = 0;
    }
}

/* The near field of the group: every source cell whose reach touches a
 * target gets its point kernel replaced by the exact cube. */
static void near_group(const field_tree *f, const bn_mesh *m, const bn_field_near_table *tab, const bn_field_targets *tg,
                       size_t g, walk_buf *w)
{
    const bn_tree *t = &f->t;
    const int K = f->K, cnt = tg->count[g];
    const size_t first = tg->first[g];
    const double *glo = tg->lo + 3 * g, *ghi = tg->hi + 3 * g;
    int ncur = 1, nnext = 0;
    w->cur[0] = 0;
    while (ncur > 0) {
        for (int i = 0; i < ncur; i++) {
            const int c = w->cur[i];
            int touch = 1;
            for (int a = 0; a < 3; a++)
                touch &= f->lo[3 * c + a] - f->reach[3 * c + a] < ghi[a] && f->hi[3 * c + a] + f->reach[3 * c + a] > glo[a];
            if (!touch) continue;
            if (t->n_children[c] > 0) {
                for (int ch = t->first_child[c]; ch < t->first_child[c] + t->n_children[c]; ch++) w->next[nnext++] = ch;
                continue;
            }
            for (int j = t->first_body[c]; j < t->first_body[c] + t->n_bodies[c]; j++) {
                if (f->blk[j] < 0) continue;
                for (int k = 0; k < cnt; k++) {
                    const double d[3] = {t->pos[0][j] - tg->x[0][first + k], t->pos[1][j] - tg->x[1][first + k],
                                         t->pos[2][j] - tg->x[2][first + k]};
                    if (!bn_field_is_near(m, tab->near, f->blk[j], d)) continue;
                    const size_t b = (size_t)f->blk[j];
                    const double hs = (m->hi[3 * b] - m->lo[3 * b]) / m->nb[0];
                    double *raw = w->raw + (size_t)k * BN_FIELD_RAW(K);
                    const double *q = f->q + (size_t)K * j;
                    if (!bn_field_near_from_table(tab, hs, tg->h[g], d, K, q, raw))
                        bn_field_near_pair(m, f->blk[j], K, d, q, raw);
                    w->count_near += 1;
                }
            }
        }
        int32_t *swap = w->cur;
        w->cur = w->next;
        w->next = swap;
        ncur = nnext;
        nnext = 0;
    }
}

static int max_group(const bn_field_targets *tg)
{
    int m = 1;
    for (size_t g = 0; g < tg->n_groups; g++) m = tg->count[g] > m ? tg->count[g] : m;
    return m;
}

bn_status bn_field_cpu_solve(const bn_field_params *prm, const bn_mesh *m, const bn_field_sources *s,
                             const bn_field_targets *tg, double *raw, bn_field_stats *st)
{
    double t0 = bn_wall_seconds();
    field_tree f;
    bn_status status = field_tree_build(prm, s, &f);
    if (status != BN_OK) {
        field_tree_free(&f);
        return status;
    }
    st->t_tree = bn_wall_seconds() - t0;
    t0 = bn_wall_seconds();
    field_moments(&f, m, prm);
    st->t_moments = bn_wall_seconds() - t0;
    const double eps2 = bn_field_eps2(prm, m);
    const int K = s->K, gmax = max_group(tg), nodes = f.t.n_nodes, with_near = m && !(eps2 > 0);
    double pp = 0, pc = 0, nn = 0, t_walk = 0, t_near = 0;
    bn_field_near_table tab;
    memset(&tab, 0, sizeof tab);
    int failed = with_near && bn_field_near_table_make(m, prm->near_cells, &tab) != BN_OK;
    t0 = bn_wall_seconds();
#pragma omp parallel reduction(+ : pp, pc, nn) reduction(| : failed)
    {
        walk_buf w = {malloc((size_t)nodes * sizeof(int32_t)), malloc((size_t)nodes * sizeof(int32_t)),
                      malloc((size_t)gmax * BN_FIELD_RAW(K) * sizeof(double)), 0, 0, 0};
        failed |= !w.cur || !w.next || !w.raw;
#pragma omp for schedule(dynamic, 4)
        for (long g = 0; g < (long)tg->n_groups; g++) {
            if (failed) continue;
            memset(w.raw, 0, (size_t)tg->count[g] * BN_FIELD_RAW(K) * sizeof(double));
            walk_group(&f, tg, (size_t)g, eps2, &w);
            if (with_near) near_group(&f, m, &tab, tg, (size_t)g, &w);
            memcpy(raw + tg->first[g] * BN_FIELD_RAW(K), w.raw, (size_t)tg->count[g] * BN_FIELD_RAW(K) * sizeof(double));
        }
        pp = w.count_pp;
        pc = w.count_pc;
        nn = w.count_near;
        free(w.cur);
        free(w.next);
        free(w.raw);
    }
    t_walk = bn_wall_seconds() - t0;
    (void)t_near;
    st->t_walk = t_walk;
    st->n_pp = pp;
    st->n_pc = pc;
    st->n_near = nn;
    st->n_nodes = nodes;
    st->n_groups = (long)tg->n_groups;
    field_tree_free(&f);
    bn_field_near_table_free(&tab);
    if (failed) return bn_fail(BN_ERR_NOMEM, "out of memory for the walk's scratch (%d nodes)", nodes);
    return BN_OK;
}

bn_status bn_field_cpu_direct(const bn_field_params *prm, const bn_mesh *m, const bn_field_sources *s, size_t n,
                              const double *pos, double *raw)
{
    const int K = s->K;
    const double eps2 = bn_field_eps2(prm, m);
    const int with_near = m && !(eps2 > 0);
#pragma omp parallel for schedule(dynamic, 16)
    for (long i = 0; i < (long)n; i++) {
        double *r = raw + (size_t)i * BN_FIELD_RAW(K);
        const double *x = pos + 3 * i;
        for (size_t j = 0; j < s->n; j++) {
            const double d[3] = {s->x[0][j] - x[0], s->x[1][j] - x[1], s->x[2][j] - x[2]};
            const double *q = s->q + (size_t)K * j;
            if (eps2 > 0) bn_field_pp_smooth_d(K, d[0], d[1], d[2], q, eps2, r, r + K);
            else bn_field_pp_d(K, d[0], d[1], d[2], q, r, r + K);
            if (with_near && bn_field_is_near(m, prm->near_cells, s->blk[j], d)) bn_field_near_pair(m, s->blk[j], K, d, q, r);
        }
    }
    return BN_OK;
}
