/* The CPU tree walk through the public solver, against double direct
 * summation on fresh random inputs (small N: the heavy accuracy test is
 * test_tree_accuracy). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static bn_gravity_params tree_params(bn_mac mac, double theta)
{
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    g.method = BN_METHOD_TREE;
    g.mac = mac;
    g.theta = theta;
    return g;
}

static bn_error_stats run(bn_particles *p, const bn_gravity_params *g, bn_force_stats *st)
{
    bn_gravity *grav = NULL;
    TU_OK(bn_gravity_create(&grav, g));
    TU_OK(bn_gravity_compute(grav, p));
    if (st) *st = *bn_gravity_stats(grav);
    bn_gravity_free(grav);
    return tu_errors_vs_direct(p, g->G, g->softening, 400, 3);
}

/* theta -> small opens (nearly) everything: direct summation. */
static void test_small_theta_is_direct(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(3000, 21, 2);
    bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.05);
    bn_error_stats e = run(p, &g, NULL);
    assert_true(e.acc_max < 1e-6);
    assert_true(e.pot_max < 1e-6);
    g.theta = 0; /* opens everything: equal to direct up to rounding */
    e = run(p, &g, NULL);
    assert_true(e.acc_max < 1e-12);
    assert_true(e.pot_max < 1e-12);
    bn_particles_free(p);
}

/* Each criterion: errors in the expected range, more work at smaller theta. */
static void test_macs(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(12000, 22, 2);
    bn_force_stats s5, s75;
    bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.5);
    bn_error_stats e = run(p, &g, &s5);
    print_message("bonsai 0.5: p50 %.2e p99 %.2e pp %.0f pc %.0f\n", e.acc_p50, e.acc_p99, s5.n_pp / 12e3, s5.n_pc / 12e3);
    assert_true(e.acc_p50 < 2e-4 && e.acc_p99 < 2e-3);
    g.theta = 0.75;
    e = run(p, &g, &s75);
    print_message("bonsai 0.75: p50 %.2e p99 %.2e\n", e.acc_p50, e.acc_p99);
    assert_true(e.acc_p50 < 1e-3 && e.acc_p99 < 1e-2);
    assert_true(s75.n_pp < s5.n_pp && s75.n_pc + s75.n_pp < s5.n_pc + s5.n_pp);
    g = tree_params(BN_MAC_BH, 0.5);
    e = run(p, &g, NULL);
    print_message("bh 0.5: p50 %.2e p99 %.2e\n", e.acc_p50, e.acc_p99);
    assert_true(e.acc_p50 < 2e-3 && e.acc_p99 < 2e-2);
    g = tree_params(BN_MAC_ACCEL, 0.5);
    g.accel_alpha = 1e-4;
    e = run(p, &g, NULL);
    print_message("accel 1e-4: p50 %.2e p99 %.2e\n", e.acc_p50, e.acc_p99);
    assert_true(e.acc_p50 < 1e-3 && e.acc_p99 < 1e-2);
    /* monopole only: clearly worse than with the quadrupole */
    g = tree_params(BN_MAC_BONSAI, 0.5);
    g.quadrupole = 0;
    bn_error_stats em = run(p, &g, NULL);
    g.quadrupole = 1;
    e = run(p, &g, NULL);
    print_message("monopole 0.5: p50 %.2e\n", em.acc_p50);
    assert_true(em.acc_p50 > 1.5 * e.acc_p50);
    bn_particles_free(p);
}

/* Same input: bit-identical output (with 1 or 2 threads too); order, ids
 * and G handled; Morton
 * gives the same accuracy. */
static void test_determinism_and_g(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(5000, 23, 1);
    bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.6);
    run(p, &g, NULL);
    bn_particles *q = NULL;
    TU_OK(bn_particles_copy(&q, p));
    run(q, &g, NULL);
    for (size_t i = 0; i < p->n; i++) {
        for (int k = 0; k < 3; k++) assert_true(p->acc[k][i] == q->acc[k][i]);
        assert_true(p->pot[i] == q->pot[i] && q->id[i] == i + 1);
    }
    /* each group is one thread's work in a fixed order: the thread count
     * changes nothing either */
    omp_set_num_threads(1);
    run(q, &g, NULL);
    omp_set_num_threads(2);
    for (size_t i = 0; i < p->n; i++) {
        for (int k = 0; k < 3; k++) assert_true(p->acc[k][i] == q->acc[k][i]);
        assert_true(p->pot[i] == q->pot[i]);
    }
    g.G = 3.0;
    run(q, &g, NULL);
    for (size_t i = 0; i < p->n; i++) TU_NEAR(q->pot[i], 3.0 * p->pot[i], 1e-15);
    g.G = 1.0;
    g.curve = BN_CURVE_MORTON;
    g.leaf_size = 8;
    g.group_size = 32;
    bn_error_stats e = run(q, &g, NULL);
    assert_true(e.acc_p50 < 3e-4 && e.acc_p99 < 3e-3);
    bn_particles_free(q);
    bn_particles_free(p);
}

/* Work statistics are filled and consistent. */
static void test_stats(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(10000, 24, 2);
    bn_force_stats s;
    bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.5);
    run(p, &g, &s);
    assert_string_equal(s.backend, "cpu");
    assert_true(s.n_nodes > s.n_leaves && s.n_leaves > 10000 / 16 && s.n_groups > 10000 / 64);
    assert_true(s.depth >= 4 && s.depth <= 21);
    assert_true(s.n_pp > 10000 * 100.0 && s.n_pc > 10000 * 100.0 && s.n_pp + s.n_pc < 1e4 * 1e4);
    assert_true(s.t_total >= s.t_walk && s.t_walk > 0);
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_theta_is_direct),
        cmocka_unit_test(test_macs),
        cmocka_unit_test(test_determinism_and_g),
        cmocka_unit_test(test_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
