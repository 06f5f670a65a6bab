/* bn_simulation: one step against a KDK written out by hand with the
 * reference forces, diagnostics against analytic values, the adaptive
 * step, and clear failures on bad input. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static bn_gravity_params direct_cpu(double eps)
{
    bn_gravity_params g = bn_gravity_params_default();
    g.method = BN_METHOD_DIRECT;
    g.backend = BN_BACKEND_CPU;
    g.softening = eps;
    return g;
}

/* x' = x + dt (v + dt/2 a(x)), v' = v + dt/2 (a(x) + a(x')), with
 * bn_direct_reference for a: the definition of one KDK step. */
static void test_one_step_is_kdk(void **state)
{
    (void)state;
    const double dt = 0.01, eps = 0.02, G = 1.7;
    bn_particles *p = tu_random_particles(300, 21, 1);
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    bn_gravity_params g = direct_cpu(eps);
    g.G = G;
    TU_OK(bn_simulation_set_gravity(sim, &g));
    bn_integrator_params ip = {dt, 0, 0, 0, 0, BN_STEP_ACCEL, BN_TUNE_TIME};
    TU_OK(bn_simulation_set_integrator(sim, &ip));
    TU_OK(bn_simulation_set_particles(sim, p));
    double taken = 0;
    TU_OK(bn_simulation_step(sim, &taken));
    assert_true(taken == dt && bn_simulation_time(sim) == dt && bn_simulation_steps(sim) == 1);

    size_t n = p->n;
    double *a = malloc(3 * n * sizeof *a), *phi = malloc(n * sizeof *phi);
    TU_OK(bn_direct_reference(p, G, eps, NULL, 0, a, phi));
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            p->vel[k][i] += 0.5 * dt * a[3 * i + k];
            p->pos[k][i] += dt * p->vel[k][i];
        }
    TU_OK(bn_direct_reference(p, G, eps, NULL, 0, a, phi));
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) p->vel[k][i] += 0.5 * dt * a[3 * i + k];

    const bn_particles *q = NULL;
    TU_OK(bn_simulation_particles(sim, &q));
    assert_int_equal(q->n, n);
    for (size_t i = 0; i < n; i++) {
        assert_true(q->id[i] == p->id[i]); /* order kept */
        for (int k = 0; k < 3; k++) {
            TU_NEAR(q->pos[k][i], p->pos[k][i], 1e-14);
            TU_NEAR(q->vel[k][i], p->vel[k][i], 1e-13);
            TU_NEAR(q->acc[k][i], a[3 * i + k], 1e-13);
        }
        TU_NEAR(q->pot[i], phi[i], 1e-13);
    }
    free(a);
    free(phi);
    bn_particles_free(p);
    bn_simulation_free(sim);
}

/* Two bodies: every diagnostic by hand. */
static void test_energies_two_bodies(void **state)
{
    (void)state;
    const double eps = 0.3, G = 2.0;
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    bn_gravity_params g = direct_cpu(eps);
    g.G = G;
    TU_OK(bn_simulation_set_gravity(sim, &g));
    double x1[3] = {1, 2, 0}, v1[3] = {0, 0.5, -1}, x2[3] = {-1, 0, 3}, v2[3] = {2, 0, 0.25};
    const double m1 = 0.25, m2 = 3.0;
    TU_OK(bn_simulation_add_particle(sim, x1, v1, m1, 7));
    TU_OK(bn_simulation_add_particle(sim, x2, v2, m2, 9));
    bn_energies e;
    TU_OK(bn_simulation_energies(sim, &e));
    double r2 = 4 + 4 + 9;
    TU_NEAR(e.kinetic, 0.5 * m1 * (0.25 + 1) + 0.5 * m2 * (4 + 0.0625), 1e-15);
    TU_NEAR(e.potential, -G * m1 * m2 / sqrt(r2 + eps * eps), 1e-15);
    TU_NEAR(e.total, e.kinetic + e.potential, 1e-15);
    double P[3] = {m1 * v1[0] + m2 * v2[0], m1 * v1[1] + m2 * v2[1], m1 * v1[2] + m2 * v2[2]};
    for (int k = 0; k < 3; k++) TU_NEAR(e.momentum[k], P[k], 1e-15);
    /* L = sum m x cross v */
    double L[3] = {m1 * (x1[1] * v1[2] - x1[2] * v1[1]) + m2 * (x2[1] * v2[2] - x2[2] * v2[1]),
                   m1 * (x1[2] * v1[0] - x1[0] * v1[2]) + m2 * (x2[2] * v2[0] - x2[0] * v2[2]),
                   m1 * (x1[0] * v1[1] - x1[1] * v1[0]) + m2 * (x2[0] * v2[1] - x2[1] * v2[0])};
    for (int k = 0; k < 3; k++) TU_NEAR(e.angular_momentum[k], L[k], 1e-15);
    for (int k = 0; k < 3; k++) TU_NEAR(e.com[k], (m1 * x1[k] + m2 * x2[k]) / (m1 + m2), 1e-15);
    bn_simulation_free(sim);
}

/* eta > 0: dt = eta sqrt(eps / max|a|) when below the cap dt. */
static void test_adaptive_step(void **state)
{
    (void)state;
    const double eps = 0.01, eta = 0.05;
    bn_particles *p = tu_random_particles(200, 4, 2);
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    bn_gravity_params g = direct_cpu(eps);
    TU_OK(bn_simulation_set_gravity(sim, &g));
    bn_integrator_params ip = {1.0, eta, 0, 0, 0, BN_STEP_ACCEL, BN_TUNE_TIME};
    TU_OK(bn_simulation_set_integrator(sim, &ip));
    TU_OK(bn_simulation_set_particles(sim, p));
    double *a = malloc(3 * p->n * sizeof *a), *phi = malloc(p->n * sizeof *phi);
    TU_OK(bn_direct_reference(p, 1.0, eps, NULL, 0, a, phi));
    double amax = 0;
    for (size_t i = 0; i < p->n; i++)
        amax = fmax(amax, sqrt(a[3 * i] * a[3 * i] + a[3 * i + 1] * a[3 * i + 1] + a[3 * i + 2] * a[3 * i + 2]));
    double taken = 0;
    TU_OK(bn_simulation_step(sim, &taken));
    TU_NEAR(taken, eta * sqrt(eps / amax), 1e-14);
    assert_true(taken < 1.0);
    free(a);
    free(phi);
    bn_particles_free(p);
    bn_simulation_free(sim);
}

/* Stats of a step: the last evaluation's (the GPU reads them lazily). */
static void test_step_stats(void **state)
{
    (void)state;
    tu_check_step_stats(BN_BACKEND_CPU);
}

static void test_bad_input(void **state)
{
    (void)state;
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    bn_integrator_params ip = {0.0, 0.0, 0, 0, 0, BN_STEP_ACCEL, BN_TUNE_TIME};
    TU_FAILS(bn_simulation_set_integrator(sim, &ip), BN_ERR_ARGUMENT, "dt");
    ip.dt = NAN;
    TU_FAILS(bn_simulation_set_integrator(sim, &ip), BN_ERR_ARGUMENT, "dt");
    ip.dt = 0.1;
    ip.eta = -1;
    TU_FAILS(bn_simulation_set_integrator(sim, &ip), BN_ERR_ARGUMENT, "eta");
    bn_gravity_params g = direct_cpu(-1);
    TU_FAILS(bn_simulation_set_gravity(sim, &g), BN_ERR_ARGUMENT, "Softening");
    /* no particles: the first step fails with a message, no crash */
    g = direct_cpu(0.1);
    TU_OK(bn_simulation_set_gravity(sim, &g));
    assert_int_not_equal(bn_simulation_step(sim, NULL), BN_OK);
    assert_true(strlen(bn_last_error()) > 0);

    bn_particles *p = tu_random_particles(10, 1, 0);
    p->vel[1][4] = NAN;
    assert_int_not_equal(bn_simulation_set_particles(sim, p), BN_OK);
    p->vel[1][4] = 0;
    p->mass[2] = -1;
    assert_int_not_equal(bn_simulation_set_particles(sim, p), BN_OK);
    double x[3] = {0, 0, 0}, v[3] = {INFINITY, 0, 0};
    TU_FAILS(bn_simulation_add_particle(sim, x, v, 1.0, 3), BN_ERR_ARGUMENT, "non-finite");
    bn_particles_free(p);

    if (!bn_gpu_available()) {
        g.backend = BN_BACKEND_GPU;
        TU_OK(bn_simulation_set_gravity(sim, &g));
        p = tu_random_particles(10, 1, 0);
        TU_OK(bn_simulation_set_particles(sim, p));
        bn_status s = bn_simulation_step(sim, NULL);
        assert_true(s == BN_ERR_UNSUPPORTED || s == BN_ERR_DEVICE);
        assert_non_null(strstr(bn_last_error(), "gpu"));
        bn_particles_free(p);
    }
    bn_simulation_free(sim);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_step_is_kdk),
        cmocka_unit_test(test_energies_two_bodies),
        cmocka_unit_test(test_adaptive_step),
        cmocka_unit_test(test_step_stats),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
