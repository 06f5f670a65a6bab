/* Direct summation against analytic values and its own invariants. */
#include <math.h>
#include <stdlib.h>
#include "testutil.h"

/* Two particles: a = G m2 d / (d^2 + eps^2)^{3/2}, phi = -G m2 / sqrt(d^2+eps^2). */
static void test_two_body_analytic(void **state)
{
    (void)state;
    bn_particles *p = NULL;
    TU_OK(bn_particles_create(&p, 2));
    double G = 2.5, eps = 0.1;
    p->pos[0][0] = 0.3; p->pos[1][0] = -0.2; p->pos[2][0] = 0.1; p->mass[0] = 0.7;
    p->pos[0][1] = -0.4; p->pos[1][1] = 0.5; p->pos[2][1] = 0.25; p->mass[1] = 1.9;
    double acc[6], pot[2];
    TU_OK(bn_direct_reference(p, G, eps, NULL, 2, acc, pot));
    double d[3], d2 = eps * eps;
    for (int k = 0; k < 3; k++) {
        d[k] = p->pos[k][1] - p->pos[k][0];
        d2 += d[k] * d[k];
    }
    for (int k = 0; k < 3; k++) {
        TU_NEAR(acc[k], G * 1.9 * d[k] / pow(d2, 1.5), 1e-14);
        TU_NEAR(acc[3 + k], -G * 0.7 * d[k] / pow(d2, 1.5), 1e-14);
    }
    TU_NEAR(pot[0], -G * 1.9 / sqrt(d2), 1e-14);
    TU_NEAR(pot[1], -G * 0.7 / sqrt(d2), 1e-14);
    bn_particles_free(p);
}

/* Newton's third law: sum m a = 0; a subset of targets equals the full sum. */
static void test_momentum_and_subset(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(3000, 7, 1);
    TU_OK(bn_particles_ensure_forces(p));
    double *acc = malloc(3 * p->n * sizeof *acc), *pot = malloc(p->n * sizeof *pot);
    TU_OK(bn_direct_reference(p, 1.0, 1e-2, NULL, 0, acc, pot));
    double f[3] = {0, 0, 0}, fabs_sum = 0;
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) {
            f[k] += p->mass[i] * acc[3 * i + k];
            fabs_sum += fabs(p->mass[i] * acc[3 * i + k]);
        }
    for (int k = 0; k < 3; k++) assert_true(fabs(f[k]) < 1e-13 * fabs_sum);
    size_t idx[3] = {5, 2999, 17};
    double a3[9], p3[3];
    TU_OK(bn_direct_reference(p, 1.0, 1e-2, idx, 3, a3, p3));
    for (int t = 0; t < 3; t++) {
        for (int k = 0; k < 3; k++) assert_true(a3[3 * t + k] == acc[3 * idx[t] + k]);
        assert_true(p3[t] == pot[idx[t]]);
    }
    free(acc);
    free(pot);
    bn_particles_free(p);
}

/* The solver's direct method equals the reference bit for bit, keeps the
 * order, and fails clearly on bad input. */
static void test_solver_direct(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(500, 3, 0);
    bn_gravity_params g = bn_gravity_params_default();
    g.method = BN_METHOD_DIRECT;
    g.backend = BN_BACKEND_CPU;
    bn_gravity *grav = NULL;
    TU_OK(bn_gravity_create(&grav, &g));
    TU_OK(bn_gravity_compute(grav, p));
    double acc[3 * 500], pot[500];
    TU_OK(bn_direct_reference(p, g.G, g.softening, NULL, 0, acc, pot));
    for (size_t i = 0; i < p->n; i++) {
        for (int k = 0; k < 3; k++) assert_true(p->acc[k][i] == acc[3 * i + k]);
        assert_true(p->pot[i] == pot[i]);
        assert_true(p->id[i] == i + 1);
    }
    p->pos[1][42] = NAN;
    TU_FAILS(bn_gravity_compute(grav, p), BN_ERR_ARGUMENT, "non-finite y coordinate");
    p->pos[1][42] = 0;
    p->mass[7] = -1;
    TU_FAILS(bn_gravity_compute(grav, p), BN_ERR_ARGUMENT, "mass -1");
    bn_gravity_free(grav);
    g.softening = -1;
    TU_FAILS(bn_gravity_create(&grav, &g), BN_ERR_ARGUMENT, "Softening");
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_body_analytic),
        cmocka_unit_test(test_momentum_and_subset),
        cmocka_unit_test(test_solver_direct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
