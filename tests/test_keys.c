/* Space-filling-curve keys (keys.h) and the key stages of the tree
 * (bounding cube, keys, radix sort): round trips, locality, prefixes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "tree/keys.h"
#include "tree/tree_cpu.h"

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* decode(encode(x)) == x for random coordinates, both curves. */
static void test_round_trip(void **state)
{
    (void)state;
    uint64_t s = 5;
    for (int hilbert = 0; hilbert < 2; hilbert++)
        for (int i = 0; i < 200000; i++) {
            uint32_t c[3], d[3];
            for (int k = 0; k < 3; k++) c[k] = (uint32_t)(lcg(&s) & BN_KEY_COORD_MAX);
            uint64_t key = bn_key_encode(hilbert, c[0], c[1], c[2]);
            assert_true(key < (1ull << 63));
            bn_key_decode(hilbert, key, &d[0], &d[1], &d[2]);
            for (int k = 0; k < 3; k++) assert_int_equal(c[k], d[k]);
        }
}

/* The top 3L bits of a key name the level-L cell: two points share them
 * exactly when their coordinates agree in the top L bits. */
static void test_prefix_is_cell(void **state)
{
    (void)state;
    uint64_t s = 9;
    for (int hilbert = 0; hilbert < 2; hilbert++)
        for (int i = 0; i < 100000; i++) {
            int L = 1 + (int)(lcg(&s) % BN_KEY_MAX_LEVEL), sh = BN_KEY_BITS - L;
            uint32_t a[3], b[3];
            int same = 1;
            for (int k = 0; k < 3; k++) {
                a[k] = (uint32_t)(lcg(&s) & BN_KEY_COORD_MAX);
                /* b: in the same cell half of the time */
                b[k] = (lcg(&s) & 1) ? ((a[k] >> sh) << sh) | (uint32_t)(lcg(&s) & ((1u << sh) - 1))
                                     : (uint32_t)(lcg(&s) & BN_KEY_COORD_MAX);
                same &= (a[k] >> sh) == (b[k] >> sh);
            }
            uint64_t ka = bn_key_encode(hilbert, a[0], a[1], a[2]), kb = bn_key_encode(hilbert, b[0], b[1], b[2]);
            assert_int_equal(same, (ka >> (3 * sh)) == (kb >> (3 * sh)));
        }
}

/* The GPU's table-driven Hilbert encoder gives the loop's keys: random
 * coordinates, the cube's corners and edges, and every cell of level 4
 * (each state the curve reaches there, with every octant). */
static void test_hilbert_table(void **state)
{
    (void)state;
    uint16_t table[BN_KEY_HILBERT_TABLE];
    bn_key_hilbert_table(table);
    uint64_t s = 17;
    for (int i = 0; i < 300000; i++) {
        uint32_t c[3];
        for (int k = 0; k < 3; k++) c[k] = (uint32_t)(lcg(&s) & BN_KEY_COORD_MAX);
        assert_int_equal(bn_key_hilbert_lut(table, c[0], c[1], c[2]), bn_key_hilbert(c[0], c[1], c[2]));
    }
    const uint32_t edge[4] = {0, 1, BN_KEY_COORD_MAX - 1, BN_KEY_COORD_MAX};
    for (int e = 0; e < 64; e++) {
        const uint32_t a = edge[e & 3], b = edge[(e >> 2) & 3], c = edge[e >> 4];
        assert_int_equal(bn_key_hilbert_lut(table, a, b, c), bn_key_hilbert(a, b, c));
    }
    const int sh = BN_KEY_BITS - 4;
    for (uint32_t cell = 0; cell < 4096; cell++) {
        const uint32_t a = (cell >> 8) << sh, b = ((cell >> 4) & 15u) << sh, c = (cell & 15u) << sh;
        const uint32_t low = (uint32_t)(lcg(&s) & ((1u << sh) - 1));
        assert_int_equal(bn_key_hilbert_lut(table, a | low, b, c), bn_key_hilbert(a | low, b, c));
    }
}

/* bn_key_of_point_table (the GPU's keys of every particle) against
 * bn_key_of_point's loop, both curves: random points in and around the
 * cube, far outside it (clamped), on its faces, and NaN (key 0 axis). */
static void test_key_of_point_table(void **state)
{
    (void)state;
    uint16_t table[BN_KEY_HILBERT_TABLE];
    bn_key_hilbert_table(table);
    const double lo[3] = {-3.5, 0.25, -1e-3}, side = 7.25;
    const double odd[] = {lo[0], lo[0] + side, -1e300, 1e300, 0.0, NAN, -0.0};
    uint64_t s = 99;
    for (int i = 0; i < 200000; i++) {
        double p[3];
        for (int k = 0; k < 3; k++) {
            const uint64_t r = lcg(&s);
            p[k] = r % 16 == 0 ? odd[(r >> 8) % 7] : lo[k] + side * (1.2 * (double)(r >> 20) / 0x1p33 - 0.1);
        }
        for (int h = 0; h < 2; h++)
            assert_int_equal(bn_key_of_point_table(table, h, p[0], p[1], p[2], lo, 1.0 / side),
                             bn_key_of_point(h, p[0], p[1], p[2], lo, 1.0 / side));
    }
}

/* Consecutive Hilbert keys are face neighbours (at level 5: every cell). */
static void test_hilbert_adjacent(void **state)
{
    (void)state;
    const int L = 5, sh = 3 * (BN_KEY_MAX_LEVEL - L);
    uint32_t prev[3] = {0, 0, 0};
    for (uint64_t c = 0; c < (1ull << (3 * L)); c++) {
        uint32_t d[3];
        bn_key_hilbert_decode(c << sh, &d[0], &d[1], &d[2]);
        if (c > 0) {
            long dist = 0;
            for (int k = 0; k < 3; k++) dist += labs((long)(d[k] >> (BN_KEY_BITS - L)) - (long)(prev[k] >> (BN_KEY_BITS - L)));
            assert_int_equal(dist, 1);
        }
        memcpy(prev, d, sizeof prev);
    }
}

/* The cube holds every particle strictly; keys decode back into the
 * quantum of each particle; the sort is stable and a permutation. */
static void test_bbox_keys_sort(void **state)
{
    (void)state;
    const size_t n = 50000;
    bn_particles *p = tu_random_particles(n, 3, 2);
    /* duplicates: the sort must keep them in index order */
    for (size_t i = 0; i < 1000; i++)
        for (int k = 0; k < 3; k++) p->pos[k][n - 1 - i] = p->pos[k][i];
    double lo[3], size;
    TU_OK(bn_tree_bbox((const double *const *)p->pos, n, lo, &size));
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) assert_true(p->pos[k][i] >= lo[k] && p->pos[k][i] < lo[k] + size);
    uint64_t *keys = malloc(n * sizeof *keys), *tk = malloc(n * sizeof *tk), *k0 = malloc(n * sizeof *k0);
    uint32_t *ord = malloc(n * sizeof *ord), *to = malloc(n * sizeof *to);
    for (int curve = 0; curve < 2; curve++) {
        bn_tree_keys((const double *const *)p->pos, n, lo, size, (bn_curve)curve, keys);
        memcpy(k0, keys, n * sizeof *keys);
        for (size_t i = 0; i < n; i++) {
            uint32_t c[3];
            bn_key_decode(curve == BN_CURVE_HILBERT, keys[i], &c[0], &c[1], &c[2]);
            for (int k = 0; k < 3; k++) {
                double q = size / (double)(1u << BN_KEY_BITS), x0 = lo[k] + c[k] * q;
                assert_true(p->pos[k][i] >= x0 - 1e-12 * size && p->pos[k][i] < x0 + q + 1e-12 * size);
            }
            ord[i] = (uint32_t)i;
        }
        TU_OK(bn_tree_sort(n, keys, ord, tk, to));
        char *seen = calloc(n, 1);
        for (size_t i = 0; i < n; i++) {
            assert_true(ord[i] < n && !seen[ord[i]]);
            seen[ord[i]] = 1;
            assert_true(keys[i] == k0[ord[i]]);
            if (i > 0) {
                assert_true(keys[i - 1] <= keys[i]);
                if (keys[i - 1] == keys[i]) assert_true(ord[i - 1] < ord[i]); /* stable */
            }
        }
        free(seen);
    }
    free(keys); free(tk); free(k0); free(ord); free(to);
    bn_particles_free(p);
}

/* Degenerate boxes: one point gives a unit cube; NaN fails clearly. */
static void test_bbox_degenerate(void **state)
{
    (void)state;
    double x[3] = {2, 2, 2}, y[3] = {-1, -1, -1}, z[3] = {5, 5, 5}, lo[3], size;
    const double *pos[3] = {x, y, z};
    TU_OK(bn_tree_bbox(pos, 3, lo, &size));
    assert_true(size == 1.0);
    assert_true(lo[0] < 2 && lo[0] + size > 2);
    y[1] = NAN;
    TU_FAILS(bn_tree_bbox(pos, 3, lo, &size), BN_ERR_ARGUMENT, "y coordinate of particle 1");
    TU_FAILS(bn_tree_bbox(pos, 0, lo, &size), BN_ERR_ARGUMENT, "no particles");
}

/* Whether x is within 1e-9 of an integer. */
static int near_integer(double x) { return fabs(x - round(x)) < 1e-9; }

/* bn_key_cube_in: the key cube of a box as a cell of another cube's
 * octree (or of an aligned super-cube): it holds the box, its side is
 * the cube's over a power of 2 (or times one), its corner a whole number
 * of its sides from the cube's, and no octant of it holds the box. */
static void test_cube_in(void **state)
{
    (void)state;
    uint64_t seed = 12345;
    for (int c = 0; c < 4000; c++) {
        double a_lo[3], mn[3], mx[3], lo[3], own_lo[3];
        const double a_side = ldexp(1.0 + (double)(lcg(&seed) % 1000) / 1000.0, (int)(lcg(&seed) % 10) - 3);
        const int d = (int)(lcg(&seed) % 9), outside = c % 4 == 0;
        const double cell = ldexp(a_side, -d);
        for (int k = 0; k < 3; k++) {
            a_lo[k] = (double)(lcg(&seed) % 20001) / 100.0 - 100.0;
            const double at = a_lo[k] + cell * (double)(lcg(&seed) % (1u << d));
            const double u = (double)(lcg(&seed) % 1000) / 1000.0, v = (double)(lcg(&seed) % 1000) / 1000.0;
            mn[k] = at + cell * 0.45 * fmin(u, v);
            mx[k] = at + cell * (0.5 + 0.45 * fmax(u, v));
        }
        if (outside) mn[c % 3] = a_lo[c % 3] - 0.3 * a_side; /* below the cube: a super-cube */
        const double side = bn_key_cube_in(mn, mx, a_lo, a_side, lo);
        const double own = bn_key_cube(mn, mx, own_lo);
        for (int k = 0; k < 3; k++) /* the keys' quantiser takes both corners without clamping */
            assert_true(mn[k] >= lo[k] && (mx[k] - lo[k]) * (1.0 / side) * 2097152.0 < 2097152.0);
        int e = 0;
        assert_true(frexp(side / a_side, &e) == 0.5);
        assert_true(outside ? side > a_side : side <= a_side);
        for (int k = 0; k < 3; k++) /* a cell of the cube's octree, or a super-cube the cube is a cell of */
            assert_true(outside ? near_integer((a_lo[k] - lo[k]) / a_side) : near_integer((lo[k] - a_lo[k]) / side));
        double o[3];
        for (int k = 0; k < 3; k++) o[k] = mn[k] >= lo[k] + 0.5 * side ? lo[k] + 0.5 * side : lo[k];
        assert_true(0.5 * side < own || !bn_key_cube_holds(o, 0.5 * side, mn, mx));
    }
    /* the domains' cube holds its own box: it is its own cell (not doubled) */
    {
        double bmn[3] = {-21.9, -22.4, -21.8}, bmx[3] = {22.1, 21.6, 22.2}, blo[3], clo[3];
        const double b = bn_key_cube(bmn, bmx, blo);
        assert_true(bn_key_cube_in(bmn, bmx, blo, b, clo) == b && clo[0] == blo[0] && clo[2] == blo[2]);
    }
    /* tiny boxes far from the origin (sides down to 2^-40 of the
     * coordinates): still held in the quantiser's arithmetic */
    for (int c = 0; c < 4000; c++) {
        double a_lo[3], mn[3], mx[3], lo[3];
        const double at = 1e6 * (1.0 + (double)(lcg(&seed) % 1000)), a_side = ldexp(at, -(int)(lcg(&seed) % 30) - 8);
        for (int k = 0; k < 3; k++) {
            a_lo[k] = at;
            const double u = (double)(lcg(&seed) % 1000000) / 1e6, v = (double)(lcg(&seed) % 1000000) / 1e6;
            mn[k] = at + a_side * fmin(u, v);
            mx[k] = fmax(mn[k], at + a_side * fmax(u, v) * 0.999);
        }
        const double side = bn_key_cube_in(mn, mx, a_lo, a_side, lo);
        for (int k = 0; k < 3; k++)
            assert_true(mn[k] >= lo[k] && (mx[k] - lo[k]) * (1.0 / side) * 2097152.0 < 2097152.0);
    }
    /* no cube to align with, a small box across the cube's centre (its
     * cell would be the cube: keys too coarse): the box's own cube */
    double mn[3] = {0.4999, 0.4998, 0.4999}, mx[3] = {0.5001, 0.5002, 0.5001}, lo[3], own_lo[3];
    const double zero[3] = {0, 0, 0}, own = bn_key_cube(mn, mx, own_lo);
    assert_true(bn_key_cube_in(mn, mx, zero, 0.0, lo) == own && lo[1] == own_lo[1]);
    assert_true(bn_key_cube_in(mn, mx, zero, 1.0, lo) == own && lo[2] == own_lo[2]);
    mx[0] = NAN; /* as bn_key_cube (a NaN corner; the callers refuse NaN coordinates) */
    assert_true(bn_key_cube_in(mn, mx, zero, 1.0, lo) == bn_key_cube(mn, mx, own_lo) && isnan(lo[0]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_prefix_is_cell),
        cmocka_unit_test(test_hilbert_adjacent),
        cmocka_unit_test(test_hilbert_table),
        cmocka_unit_test(test_key_of_point_table),
        cmocka_unit_test(test_bbox_keys_sort),
        cmocka_unit_test(test_bbox_degenerate),
        cmocka_unit_test(test_cube_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
