/* The error target on the GPU backend (issue 14, part 2): the sample's
 * reference (double direct summation on the device) is right, the chosen
 * settings hold p99 <= E on an independent check (1000 random targets,
 * double direct summation on the CPU), and a simulation checks itself as
 * it runs. Skipped (77) without a usable GPU. */
#include "testutil.h"
#include <string.h>

#ifdef BANYAN_HAVE_CUDA
#include "core/backend.h"

/* The GPU's direct summation (float, hi + lo positions) against the
 * sample's double reference: errors at float's level, so the reference
 * is right (a wrong target, mass or reduction would show at 1e-3 or more). */
static void test_sample_reference(void **state)
{
    (void)state;
    bn_particles *p = tu_model(BN_IC_PLUMMER, 20000, 7);
    bn_gravity_params g = bn_gravity_params_default();
    g.method = BN_METHOD_DIRECT;
    g.backend = BN_BACKEND_GPU;
    const bn_backend_ops *ops = bn_cuda_backend_ops();
    void *st = NULL;
    TU_OK(ops->create(&st, &g));
    TU_OK(ops->upload(st, p));
    TU_OK(ops->forces(st, NULL));
    const size_t s = 300;
    double *buf = malloc(8 * s * sizeof *buf);
    TU_OK(ops->sample_forces(st, s, 42, buf, buf + 3 * s, buf + 4 * s, buf + 7 * s));
    bn_error_stats e;
    TU_OK(bn_error_stats_compute(s, buf + 4 * s, buf, buf + 7 * s, buf + 3 * s, &e));
    printf("GPU direct against the sample's reference: p50 %.2e p99 %.2e, potential p99 %.2e\n", e.acc_p50, e.acc_p99,
           e.pot_p99);
    assert_true(e.acc_p99 < 2e-5);
    assert_true(e.pot_p99 < 2e-5);
    free(buf);
    ops->destroy(st);
    bn_particles_free(p);
}

static void check_target(size_t n, double target)
{
    bn_particles *p = tu_model(BN_IC_PLUMMER, n, 3);
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_GPU;
    g.error_target = target;
    bn_gravity *grav = NULL;
    TU_OK(bn_gravity_create(&grav, &g));
    TU_OK(bn_gravity_compute(grav, p));
    const bn_gravity_params *u = bn_gravity_params_used(grav);
    const bn_accuracy *a = bn_gravity_accuracy(grav);
    const bn_error_stats st = tu_errors_vs_direct(p, g.G, g.softening, 1000, 99);
    printf("GPU n=%zu E=%g: %s theta %.3f leaf %d group %d kappa %.1f in %.2f s (%ld evaluations); sample p99 "
           "%.2e, check p50 %.2e p99 %.2e\n", n, target, bn_mac_name(u->mac), u->theta, u->leaf_size, u->group_size,
           u->group_expansion, a->t_tuning, a->evaluations, a->p99, st.acc_p50, st.acc_p99);
    assert_true(a->met);
    assert_true(st.acc_p99 <= target);
    bn_gravity_free(grav);
    bn_particles_free(p);
}

static void test_targets(void **state)
{
    (void)state;
    check_target(1 << 18, 2e-3);
    check_target(1 << 18, 1e-3);
    check_target(1 << 18, 1e-4);
}

/* A simulation with a target: the search before the first step, checks
 * every 8 steps, each within [E/4, E] or followed by a search. */
static void test_simulation(void **state)
{
    (void)state;
    bn_particles *p = tu_model(BN_IC_PLUMMER, 1 << 16, 5);
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_GPU;
    g.softening = 0.01;
    g.error_target = 1e-3;
    g.error_check_interval = 8;
    bn_simulation *sim = tu_make_sim(p, g, bn_integrator_params_default());
    TU_OK(bn_simulation_integrate(sim, 0.25)); /* 32 steps */
    const bn_accuracy *a = bn_simulation_accuracy(sim);
    printf("GPU simulation: %ld checks, %ld searches, last p99 %.2e\n", a->checks, a->tunings, a->p99);
    assert_true(a->checks == 3 && a->tunings >= 1);
    assert_true(a->p99 > 0 && a->p99 <= 1e-3);
    bn_simulation_free(sim);
    bn_particles_free(p);
}
#endif

TU_GPU_TEST_MAIN(cmocka_unit_test(test_sample_reference), cmocka_unit_test(test_targets),
                 cmocka_unit_test(test_simulation))
