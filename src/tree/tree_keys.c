/* Stages 1-3 of the tree: bounding cube, space-filling-curve keys, sort
 * by key and reorder of the bodies into key order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/timer.h"
#include "tree/tree_cpu.h"

bn_status bn_tree_bbox(const double *const pos[3], size_t n, double lo[3], double *size)
{
    const double none[3] = {0, 0, 0};
    return bn_tree_cube(pos, n, none, 0.0, lo, size);
}

bn_status bn_tree_cube(const double *const pos[3], size_t n, const double align_lo[3], double align_side, double lo[3],
                       double *size)
{
    if (n == 0) return bn_fail(BN_ERR_ARGUMENT, "tree: no particles");
    double mn[3], mx[3], extent = 0;
    for (int k = 0; k < 3; k++) {
        double a = INFINITY, b = -INFINITY;
        long bad = 0;
        const double *x = pos[k];
        const long nn = (long)n;
#pragma omp parallel for reduction(min : a) reduction(max : b) reduction(+ : bad) schedule(static)
        for (long i = 0; i < nn; i++) {
            a = x[i] < a ? x[i] : a;
            b = x[i] > b ? x[i] : b;
            bad += !isfinite(x[i]);
        }
        if (bad) {
            long i = 0;
            while (isfinite(x[i])) i++;
            return bn_fail(BN_ERR_ARGUMENT, "tree: the %c coordinate of particle %ld is %g", "xyz"[k], i, x[i]);
        }
        mn[k] = a;
        mx[k] = b;
        if (b - a > extent) extent = b - a;
    }
    const double side = bn_key_cube_in(mn, mx, align_lo, align_side, lo);
    if (!isfinite(side)) return bn_fail(BN_ERR_ARGUMENT, "tree: the particles span %g: too wide for keys", extent);
    *size = side;
    return BN_OK;
}

void bn_tree_keys(const double *const pos[3], size_t n, const double lo[3], double size, bn_curve curve,
                  uint64_t *keys)
{
    const double inv = 1.0 / size;
    const int hilbert = curve == BN_CURVE_HILBERT;
    const long nn = (long)n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nn; i++) keys[i] = bn_key_of_point(hilbert, pos[0][i], pos[1][i], pos[2][i], lo, inv);
}

bn_status bn_tree_sort_bodies(bn_tree *t, const double *const pos[3], const double *mass, size_t n,
                              bn_curve curve, double *t_bbox, double *t_keys, double *t_sort)
{
    double t0 = bn_wall_seconds();
    BN_TRY(bn_tree_reserve_bodies(t, n));
    t->n = n;
    t->curve = curve;
    BN_TRY(bn_tree_cube(pos, n, t->align_lo, t->align_side, t->box_lo, &t->box_size));
    double t1 = bn_wall_seconds();
    bn_tree_keys(pos, n, t->box_lo, t->box_size, curve, t->keys);
    double t2 = bn_wall_seconds();
    const long nn = (long)n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nn; i++) t->order[i] = (uint32_t)i;
    BN_TRY(bn_tree_sort(n, t->keys, t->order, t->tmp_keys, t->tmp_order));
    /* reorder: a gather, one pass per array (streams well) */
    for (int k = 0; k < 3; k++) {
        double *dst = t->pos[k];
        const double *src = pos[k];
#pragma omp parallel for schedule(static)
        for (long i = 0; i < nn; i++) dst[i] = src[t->order[i]];
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nn; i++) t->mass[i] = mass[t->order[i]];
    double t3 = bn_wall_seconds();
    if (t_bbox) *t_bbox = t1 - t0;
    if (t_keys) *t_keys = t2 - t1;
    if (t_sort) *t_sort = t3 - t2;
    return BN_OK;
}

/* The saved header's cube and curve as a build makes them, for this run's curve. */
static bn_status saved_header_check(const bn_saved_tree *h, size_t n, bn_curve curve)
{
    int sane = h->n == (int64_t)n && isfinite(h->box_size) && h->box_size > 0;
    for (int k = 0; k < 3; k++) sane = sane && isfinite(h->box_lo[k]) && isfinite(h->ref[k]);
    if (!sane) return bn_fail(BN_ERR_FORMAT, "saved tree: its key cube is not a build's");
    if (h->curve == (int64_t)curve) return BN_OK;
    const int known = h->curve == BN_CURVE_HILBERT || h->curve == BN_CURVE_MORTON;
    return bn_fail(BN_ERR_FORMAT, "saved tree: keys of the %s curve (%lld), this run's curve is %s",
                   known ? bn_curve_name((bn_curve)h->curve) : "unknown", (long long)h->curve, bn_curve_name(curve));
}

/* Keys ascending and below 2^(3 BN_KEY_BITS), the curve's range (a larger
 * one names no octree cell: the build would read past its levels). */
static bn_status saved_keys_check(const uint64_t *keys, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (keys[i - 1] > keys[i])
            return bn_fail(BN_ERR_FORMAT, "saved tree: key %zu (%llu) above key %zu (%llu): not a build's order", i - 1,
                           (unsigned long long)keys[i - 1], i, (unsigned long long)keys[i]);
    const uint64_t end = UINT64_C(1) << (3 * BN_KEY_BITS);
    if (n > 0 && keys[n - 1] >= end)
        return bn_fail(BN_ERR_FORMAT, "saved tree: key %zu (%llu) is not below 2^%d, the curve's range", n - 1,
                       (unsigned long long)keys[n - 1], 3 * BN_KEY_BITS);
    return BN_OK;
}

bn_status bn_tree_saved_parse(const void *bytes, size_t size, size_t n, bn_curve curve, bn_saved_tree *h,
                              const uint64_t **keys, const uint32_t **order)
{
    const size_t per = sizeof(uint64_t) + sizeof(uint32_t);
    if (size < sizeof *h || (size - sizeof *h) % per != 0 || (size - sizeof *h) / per != n)
        return bn_fail(BN_ERR_FORMAT, "saved tree: %zu bytes, not a tree of %zu particles", size, n);
    memcpy(h, bytes, sizeof *h);
    const unsigned char *b = bytes;
    *keys = (const uint64_t *)(b + sizeof *h);
    *order = (const uint32_t *)(b + sizeof *h + n * sizeof(uint64_t));
    BN_TRY(saved_header_check(h, n, curve));
    BN_TRY(saved_keys_check(*keys, n));
    uint8_t *seen = bn_calloc(n ? n : 1, 1, "saved tree check");
    if (!seen) return BN_ERR_NOMEM;
    int sane = 1;
    for (size_t i = 0; sane && i < n; i++) {
        const uint32_t o = (*order)[i];
        sane = o < n && !seen[o];
        if (sane) seen[o] = 1;
    }
    free(seen);
    return sane ? BN_OK : bn_fail(BN_ERR_FORMAT, "saved tree: its body order is not a permutation of %zu particles", n);
}

void bn_tree_restore_bodies(bn_tree *t, const bn_saved_tree *h, const uint64_t *keys, const uint32_t *order,
                            const double *const pos[3], const double *mass)
{
    const size_t n = (size_t)h->n;
    t->n = n;
    t->curve = (bn_curve)h->curve;
    memcpy(t->box_lo, h->box_lo, sizeof t->box_lo);
    t->box_size = h->box_size;
    memcpy(t->keys, keys, n * sizeof *keys);
    memcpy(t->order, order, n * sizeof *order);
    const long nn = (long)n;
    for (int k = 0; k < 3; k++) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < nn; i++) t->pos[k][i] = pos[k][order[i]];
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nn; i++) t->mass[i] = mass[order[i]];
}
