/* The per-interaction math of interact.h against exact sums over the
 * particles of a cell, in double: the particle-cell quadrupole force and
 * the group's far-field expansion (bn_local_*). The expansion must
 * reproduce the cell's multipole force at its centre, and its error must
 * fall as the cube of the target's offset (a second-order expansion): a
 * wrong Hessian or third-derivative term would leave a linear or
 * quadratic error. Also the float build of the same header against the
 * double one. */
#include <stdlib.h>
#include "gravity/interact.h"
#include "testutil.h"

#define NB 40

typedef struct cell {
    double x[NB][3], m[NB];
    double mass, com[3], q[6];
} cell;

static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-53;
}

/* NB random bodies in a cube of side l centred at c, their moments. */
static void make_cell(cell *k, const double c[3], double l, uint64_t seed)
{
    uint64_t s = seed;
    k->mass = 0;
    for (int d = 0; d < 3; d++) k->com[d] = 0;
    for (int i = 0; i < NB; i++) {
        k->m[i] = 0.5 + urand(&s);
        k->mass += k->m[i];
        for (int d = 0; d < 3; d++) {
            k->x[i][d] = c[d] + l * (urand(&s) - 0.5);
            k->com[d] += k->m[i] * k->x[i][d];
        }
    }
    for (int d = 0; d < 3; d++) k->com[d] /= k->mass;
    for (int j = 0; j < 6; j++) k->q[j] = 0;
    for (int i = 0; i < NB; i++) {
        const double s0 = k->x[i][0] - k->com[0], s1 = k->x[i][1] - k->com[1], s2 = k->x[i][2] - k->com[2];
        const double r2 = s0 * s0 + s1 * s1 + s2 * s2, m = k->m[i];
        k->q[BN_QXX] += m * (3 * s0 * s0 - r2);
        k->q[BN_QYY] += m * (3 * s1 * s1 - r2);
        k->q[BN_QZZ] += m * (3 * s2 * s2 - r2);
        k->q[BN_QXY] += 3 * m * s0 * s1;
        k->q[BN_QXZ] += 3 * m * s0 * s2;
        k->q[BN_QYZ] += 3 * m * s1 * s2;
    }
}

/* Exact field of the cell's bodies at y (a[3], phi). */
static void exact(const cell *k, const double y[3], double eps2, double out[4])
{
    out[0] = out[1] = out[2] = out[3] = 0;
    for (int i = 0; i < NB; i++)
        bn_pp_d(k->x[i][0] - y[0], k->x[i][1] - y[1], k->x[i][2] - y[2], k->m[i], eps2, &out[0], &out[1], &out[2],
                &out[3]);
}

static double acc_err(const double a[4], const double ref[4])
{
    const double dx = a[0] - ref[0], dy = a[1] - ref[1], dz = a[2] - ref[2];
    return sqrt(dx * dx + dy * dy + dz * dz) / sqrt(ref[0] * ref[0] + ref[1] * ref[1] + ref[2] * ref[2]);
}

/* Largest acceleration error of the expansion over targets at |y| = r in
 * several directions (expansion about the origin). */
static double expansion_error(const cell *k, const bn_local_d *L, double r, double eps2)
{
    static const double dirs[6][3] = {{1, 0, 0}, {0, -1, 0}, {0, 0, 1}, {0.6, 0.8, 0}, {-0.48, 0.6, 0.64}, {0.8, 0, -0.6}};
    double worst = 0;
    for (int j = 0; j < 6; j++) {
        const double y[3] = {r * dirs[j][0], r * dirs[j][1], r * dirs[j][2]};
        double ref[4], a[4] = {0, 0, 0, 0};
        exact(k, y, eps2, ref);
        bn_local_eval_d(L, y[0], y[1], y[2], &a[0], &a[1], &a[2], &a[3]);
        const double e = acc_err(a, ref);
        worst = e > worst ? e : worst;
    }
    return worst;
}

static void local_of(const cell *k, double eps2, bn_local_d *L)
{
    bn_local_set_d(k->com[0], k->com[1], k->com[2], k->mass, k->q[0], k->q[1], k->q[2], k->q[3], k->q[4], k->q[5],
                   eps2, L);
}

/* Quadrupole truncation: error ~ (l/d)^3, so halving l divides it by ~8. */
static void test_pc_quadrupole_order(void **state)
{
    (void)state;
    const double y[3] = {0, 0, 0};
    double prev = 0;
    for (int i = 0; i < 3; i++) {
        const double l = 1.0 / (1 << i), c[3] = {6.0, -5.0, 4.0};
        cell k;
        make_cell(&k, c, l, 11);
        double ref[4], a[4] = {0, 0, 0, 0}, mono[4] = {0, 0, 0, 0};
        exact(&k, y, 0, ref);
        bn_pc_d(k.com[0], k.com[1], k.com[2], k.mass, k.q, 0, &a[0], &a[1], &a[2], &a[3]);
        const double zero[6] = {0, 0, 0, 0, 0, 0};
        bn_pc_d(k.com[0], k.com[1], k.com[2], k.mass, zero, 0, &mono[0], &mono[1], &mono[2], &mono[3]);
        const double e = acc_err(a, ref), em = acc_err(mono, ref);
        print_message("cell side %.3f at d = 8.8: quadrupole error %.3e, monopole %.3e\n", l, e, em);
        assert_true(e < 0.2 * em); /* the quadrupole helps */
        if (i > 0) assert_true(e < prev / 5 && e > prev / 12);
        prev = e;
    }
}

/* At the centre the expansion is exactly the particle-cell interaction. */
static void test_local_centre_is_pc(void **state)
{
    (void)state;
    const double c[3] = {3.0, 1.0, -2.0}, eps2 = 1e-4;
    cell k;
    make_cell(&k, c, 0.5, 5);
    bn_local_d L;
    local_of(&k, eps2, &L);
    double a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
    bn_local_eval_d(&L, 0, 0, 0, &a[0], &a[1], &a[2], &a[3]);
    bn_pc_d(k.com[0], k.com[1], k.com[2], k.mass, k.q, eps2, &b[0], &b[1], &b[2], &b[3]);
    for (int d = 0; d < 4; d++) TU_NEAR(a[d], b[d], 1e-13);
}

/* Away from the centre: error of a second-order expansion ~ (|y|/d)^3.
 * The cell is small (l/d = 1/40) so that the multipole error (~(l/d)^3,
 * 1e-6 here) stays below the expansion's over the range tested. */
static void test_local_third_order(void **state)
{
    (void)state;
    const double c[3] = {24.0, -24.0, 28.0}, eps2 = 0; /* d = 44 */
    cell k;
    make_cell(&k, c, 1.1, 9);
    bn_local_d L;
    local_of(&k, eps2, &L);
    double prev = 0;
    for (int i = 0; i < 4; i++) {
        const double r = 8.0 / (1 << i); /* |y|/d from 0.18 to 0.023 */
        const double e = expansion_error(&k, &L, r, eps2);
        print_message("|y|/d = %.3f: expansion error %.3e\n", r / 44, e);
        if (i > 0) assert_true(e < prev / 6 && e > prev / 10);
        prev = e;
    }
    assert_true(prev < 1e-4);
}

/* Expansions add: two cells' expansion = sum of each, checked against
 * the exact field of both at an offset target. */
static void test_local_sum(void **state)
{
    (void)state;
    const double c1[3] = {20, 2, 1}, c2[3] = {-3, -18, 9}, eps2 = 1e-6, y[3] = {0.3, -0.2, 0.25};
    cell k1, k2;
    make_cell(&k1, c1, 1.0, 1);
    make_cell(&k2, c2, 1.0, 2);
    bn_local_d L, L2; /* summed term by term, as the walks sum their cells */
    local_of(&k1, eps2, &L);
    local_of(&k2, eps2, &L2);
#define SUM_TERM(f) L.f += L2.f;
    BN_LOCAL_FIELDS(SUM_TERM)
#undef SUM_TERM
    double r1[4], r2[4], a[4] = {0, 0, 0, 0};
    exact(&k1, y, eps2, r1);
    exact(&k2, y, eps2, r2);
    const double ref[4] = {r1[0] + r2[0], r1[1] + r2[1], r1[2] + r2[2], r1[3] + r2[3]};
    bn_local_eval_d(&L, y[0], y[1], y[2], &a[0], &a[1], &a[2], &a[3]);
    assert_true(acc_err(a, ref) < 1e-4);
    TU_NEAR(a[3], ref[3], 1e-5);
}

/* The float build (the GPU walk's) against the double one. */
static void test_local_float(void **state)
{
    (void)state;
    const double c[3] = {5.0, 4.0, -6.0}, eps2 = 1e-6, y[3] = {0.4, -0.3, 0.2};
    cell k;
    make_cell(&k, c, 1.0, 3);
    bn_local_d Ld;
    local_of(&k, eps2, &Ld);
    bn_local_f Lf;
    bn_local_set_f((float)k.com[0], (float)k.com[1], (float)k.com[2], (float)k.mass, (float)k.q[0], (float)k.q[1],
                   (float)k.q[2], (float)k.q[3], (float)k.q[4], (float)k.q[5], (float)eps2, &Lf);
    double ad[4] = {0, 0, 0, 0};
    float af[4] = {0, 0, 0, 0};
    bn_local_eval_d(&Ld, y[0], y[1], y[2], &ad[0], &ad[1], &ad[2], &ad[3]);
    bn_local_eval_f(&Lf, (float)y[0], (float)y[1], (float)y[2], &af[0], &af[1], &af[2], &af[3]);
    for (int d = 0; d < 4; d++) TU_NEAR(af[d], ad[d], 2e-5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pc_quadrupole_order), cmocka_unit_test(test_local_centre_is_pc),
        cmocka_unit_test(test_local_third_order),   cmocka_unit_test(test_local_sum),
        cmocka_unit_test(test_local_float),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
