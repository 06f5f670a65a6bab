/* Energy conservation of a Plummer sphere integrated with the CPU tree
 * code (issue 3): N = 2^14, 2 N-body time units, theta = 0.5, bonsai
 * criterion, KDK leapfrog with dt = 1/128, eps = 0.01.
 *
 * Bound: |E(t) - E0| / |E0| <= 1e-4 at every output and at the end. Why:
 *  - the leapfrog error is bounded and O(dt^2): a star at the half-mass
 *    radius (orbit time ~ 4) makes ~500 steps per orbit, relative error
 *    ~ (2 pi / 500)^2 / 8 ~ 2e-5; closer encounters are softened at
 *    eps = 0.01, whose crossing time sqrt(eps^3 / (G m)) ~ 0.13 is 16 steps;
 *  - tree forces are not exact gradients of a potential: with a median
 *    relative force error of ~1.2e-4 that is uncorrelated between steps,
 *    the energy takes a random walk of ~1e-4 / sqrt(N) per step, far below
 *    1e-5 after 256 steps;
 *  - Bonsai's merger runs (paper 003 table 4.2) stay within 1.3e-4 over
 *    1000 time units at theta = 0.5.
 * So 1e-4 leaves a margin of about 5 over the expected 2e-5, and a broken
 * walk (wrong quadrupole sign, a missed self term, a lost cell: errors of
 * 1e-2 and more) fails it at once. Heavy (BANYAN_HEAVY_TESTS). */
#include "testutil.h"

static void test_plummer_energy(void **state)
{
    (void)state;
    bn_ic_params ic = bn_ic_params_default();
    ic.n = 1u << 14;
    ic.seed = 14;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&ic, &p));
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    g.theta = 0.5;
    g.softening = 0.01;
    TU_OK(bn_simulation_set_gravity(sim, &g));
    bn_integrator_params ip = bn_integrator_params_default();
    ip.dt = 1.0 / 128;
    ip.eta = 0;
    TU_OK(bn_simulation_set_integrator(sim, &ip));
    TU_OK(bn_simulation_set_particles(sim, p));
    bn_energies e0, e;
    TU_OK(bn_simulation_compute_forces(sim));
    TU_OK(bn_simulation_energies(sim, &e0));
    assert_true(e0.total < 0 && fabs(e0.total + 0.25) < 0.01); /* Henon units */
    double worst = 0;
    for (int k = 1; k <= 8; k++) {
        TU_OK(bn_simulation_integrate(sim, 0.25 * k));
        TU_OK(bn_simulation_energies(sim, &e));
        const double rel = fabs(e.total - e0.total) / fabs(e0.total);
        worst = rel > worst ? rel : worst;
        print_message("t = %.2f  E = %.8f  dE/E = %.2e\n", bn_simulation_time(sim), e.total, rel);
    }
    assert_true(fabs(bn_simulation_time(sim) - 2.0) < 1e-12);
    assert_true(worst <= 1e-4);
    bn_simulation_free(sim);
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_plummer_energy)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
