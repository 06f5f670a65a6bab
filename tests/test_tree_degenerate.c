/* Degenerate inputs for the CPU tree code: each works (forces checked
 * against double direct summation of every particle) or fails clearly.
 * Run with the bonsai criterion, then with bonsai-box, whose cells of one
 * body (or of bodies at one point) have opening radius 0. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static bn_mac mac_under_test = BN_MAC_BONSAI;

static int use_box_criterion(void **state)
{
    (void)state;
    mac_under_test = BN_MAC_BONSAI_BOX;
    return 0;
}

/* Tree forces of p (theta, eps), then the largest relative acceleration
 * and potential errors against direct summation over all particles. */
static bn_error_stats tree_vs_direct(bn_particles *p, double theta, double eps)
{
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    g.mac = mac_under_test;
    g.theta = theta;
    g.softening = eps;
    bn_gravity *grav = NULL;
    TU_OK(bn_gravity_create(&grav, &g));
    TU_OK(bn_gravity_compute(grav, p));
    bn_gravity_free(grav);
    double *ref = malloc(3 * p->n * sizeof *ref), *pref = malloc(p->n * sizeof *pref);
    double *got = malloc(3 * p->n * sizeof *got);
    TU_OK(bn_direct_reference(p, 1.0, eps, NULL, p->n, ref, pref));
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) got[3 * i + k] = p->acc[k][i];
    bn_error_stats e;
    TU_OK(bn_error_stats_compute(p->n, got, ref, p->pot, pref, &e));
    free(ref);
    free(pref);
    free(got);
    return e;
}

static void test_one_particle(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(1, 31, 0);
    p->pos[0][0] = 1e5;
    tree_vs_direct(p, 0.5, 1e-3);
    for (int k = 0; k < 3; k++) assert_true(p->acc[k][0] == 0.0);
    assert_true(fabs(p->pot[0]) <= 1e-15 * p->mass[0] / 1e-3); /* self term removed */
    bn_particles_free(p);
}

static void test_two_particles(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(2, 32, 1);
    bn_error_stats e = tree_vs_direct(p, 0.5, 1e-3);
    print_message("two: acc %.2e pot %.2e\n", e.acc_max, e.pot_max);
    /* phi carries -m_i/eps of the self pair, added back at the end: the
     * rounding of m_i/eps = 500 |phi| costs ~1e-13 of phi here (only
     * with few, heavy particles: 1e-18 for a Plummer 2^16 sphere) */
    assert_true(e.acc_max < 1e-14 && e.pot_max < 1e-12);
    e = tree_vs_direct(p, 0.5, 0.0); /* no softening */
    assert_true(e.acc_max < 1e-14 && e.pot_max < 1e-14);
    bn_particles_free(p);
}

/* Every particle at one point: one leaf at the deepest level holding all
 * of them; no force, phi = -sum m_j/eps (softened) or 0 (eps = 0). */
static void test_all_at_one_point(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(300, 33, 0);
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) p->pos[k][i] = 0.7;
    bn_error_stats e = tree_vs_direct(p, 0.5, 1e-2);
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) assert_true(p->acc[k][i] == 0.0);
    assert_true(e.pot_max < 1e-13);
    /* the point far from the origin (1e100, 7.8e97: a unit key cube
     * vanished in lo + side there, and the keys became NaN), and a
     * cluster of extent 1 there, whose differences round to zero */
    for (int trial = 0; trial < 3; trial++) {
        const double at = trial == 0 ? 1e100 : trial == 1 ? -7.8125e97 : 1e130;
        for (size_t i = 0; i < p->n; i++)
            for (int k = 0; k < 3; k++) p->pos[k][i] = at + (trial == 2 ? (double)(i % 7) : 0.0);
        e = tree_vs_direct(p, 0.5, 1e-2);
        assert_true(e.pot_max < 1e-13);
        for (size_t i = 0; i < p->n; i++) assert_true(p->acc[0][i] == 0.0 && isfinite(p->pot[i]));
    }
    tree_vs_direct(p, 0.5, 0.0);
    for (size_t i = 0; i < p->n; i++) assert_true(p->pot[i] == 0.0 && p->acc[0][i] == 0.0);
    bn_particles_free(p);
}

/* One particle 1e6 times the system size away: the rest shares a few
 * keys at the deepest level (leaves of hundreds of bodies, opened into
 * exact particle-particle sums); the far particle sees a monopole. */
static void test_far_particle(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(3000, 34, 2);
    p->pos[0][7] = 1e6;
    p->pos[1][7] = -3e5;
    bn_error_stats e = tree_vs_direct(p, 0.5, 1e-3);
    print_message("far particle: acc p50 %.2e p99 %.2e max %.2e\n", e.acc_p50, e.acc_p99, e.acc_max);
    assert_true(e.acc_p99 < 2e-3 && e.acc_max < 1e-2);
    bn_particles_free(p);
}

/* Masses spanning 24 orders of magnitude: one body 1e12 times the mean,
 * one 1e-12 times; the centre of mass of their cells sits on the heavy
 * body and the quadrupole stays exact in double. */
static void test_mass_ratios(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(4000, 35, 2);
    p->mass[11] *= 1e12;
    p->mass[12] *= 1e-12;
    bn_error_stats e = tree_vs_direct(p, 0.5, 1e-3);
    print_message("mass ratios: acc p50 %.2e p99 %.2e max %.2e\n", e.acc_p50, e.acc_p99, e.acc_max);
    assert_true(e.acc_p50 < 2e-4 && e.acc_p99 < 2e-3);
    bn_particles_free(p);
}

/* Bad input fails with a message naming the particle and field. */
static void test_bad_input(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(100, 36, 0);
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    bn_gravity *grav = NULL;
    TU_OK(bn_gravity_create(&grav, &g));
    p->pos[2][5] = INFINITY;
    TU_FAILS(bn_gravity_compute(grav, p), BN_ERR_ARGUMENT, "z coordinate");
    p->pos[2][5] = 0;
    p->mass[3] = -1;
    TU_FAILS(bn_gravity_compute(grav, p), BN_ERR_ARGUMENT, "mass");
    p->mass[3] = p->mass[4] = 1e308; /* each finite, their sum not */
    TU_FAILS(bn_gravity_compute(grav, p), BN_ERR_ARGUMENT, "total mass is inf");
    bn_gravity_free(grav);
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_particle),  cmocka_unit_test(test_two_particles),
        cmocka_unit_test(test_all_at_one_point), cmocka_unit_test(test_far_particle),
        cmocka_unit_test(test_mass_ratios),   cmocka_unit_test(test_bad_input),
    };
    const int failed = cmocka_run_group_tests_name("bonsai", tests, NULL, NULL);
    return failed + cmocka_run_group_tests_name("bonsai-box", tests, use_box_criterion, NULL);
}
