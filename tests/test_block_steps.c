/* Block (hierarchical) time steps through bn_simulation on the CPU: one
 * bin is the shared step bit for bit; a hierarchical KDK written out in
 * this file with double direct summation (its own bins, active sets and
 * kicks) gives the same orbits; a Plummer sphere conserves energy while
 * the block steps compute a fraction of the forces; outputs land on
 * cycle ends; bad settings fail clearly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static bn_gravity_params cpu_gravity(bn_method method, double eps)
{
    return tu_block_gravity(BN_BACKEND_CPU, method, eps);
}

static void test_one_bin_is_the_shared_step(void **state)
{
    (void)state;
    tu_check_one_bin_is_shared(BN_BACKEND_CPU);
}

/* ---- an independent hierarchical KDK (GADGET-2's block scheme) ---- */
typedef struct ref_block {
    int K;
    double D, eta, eps;
    int *bin;
    double *acc; /* 3 per particle */
    double *pot;
} ref_block;

/* The bin of a particle: the coarsest b >= lo with D / 2^b <= dt_i. */
static int ref_bin(const ref_block *r, const double *a, int lo)
{
    const double amag = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    const double dt = r->eta * sqrt(r->eps / amag);
    int b = lo;
    while (b < r->K - 1 && r->D / pow(2.0, b) > dt) b++;
    return b;
}

static void ref_kick(bn_particles *p, const ref_block *r, size_t i, int b)
{
    const double h = 0.5 * r->D / pow(2.0, b);
    for (int k = 0; k < 3; k++) p->vel[k][i] += h * r->acc[3 * i + k];
}

/* One cycle: every particle opens, then tick by tick the active ones
 * (their step divides the tick) close and reopen. */
static void ref_cycle(bn_particles *p, ref_block *r, double G, long *n_active, int *n_steps)
{
    const int ticks = 1 << (r->K - 1);
    const double tick_dt = r->D / ticks;
    for (size_t i = 0; i < p->n; i++) {
        r->bin[i] = ref_bin(r, r->acc + 3 * i, 0);
        ref_kick(p, r, i, r->bin[i]);
    }
    int t = 0;
    *n_steps = 0;
    while (t < ticks) {
        int finest = 0;
        for (size_t i = 0; i < p->n; i++) finest = r->bin[i] > finest ? r->bin[i] : finest;
        const int next = t + (ticks >> finest);
        for (size_t i = 0; i < p->n; i++)
            for (int k = 0; k < 3; k++) p->pos[k][i] += (double)(next - t) * tick_dt * p->vel[k][i];
        int lo = 0; /* the coarsest bin whose steps end at `next` */
        while (next % (ticks >> lo) != 0) lo++;
        TU_OK(bn_direct_reference(p, G, r->eps, NULL, 0, r->acc, r->pot));
        long active = 0;
        for (size_t i = 0; i < p->n; i++) {
            if (r->bin[i] < lo) continue;
            active++;
            ref_kick(p, r, i, r->bin[i]);
            if (next == ticks) continue;
            r->bin[i] = ref_bin(r, r->acc + 3 * i, lo);
            ref_kick(p, r, i, r->bin[i]);
        }
        n_active[(*n_steps)++] = active;
        t = next;
    }
}

static void test_matches_an_independent_block_kdk(void **state)
{
    (void)state;
    const double G = 1.0, eps = 0.05, D = 1.0 / 8, eta = 0.2;
    const int K = 5;
    bn_particles *p = tu_random_particles(160, 8, 1);
    bn_integrator_params ip = {D, eta, K, 0, 0, BN_STEP_ACCEL, BN_TUNE_TIME};
    bn_simulation *sim = tu_make_sim(p, cpu_gravity(BN_METHOD_DIRECT, eps), ip);
    ref_block r = {K, D, eta, eps, calloc(p->n, sizeof(int)), malloc(3 * p->n * sizeof(double)),
                   malloc(p->n * sizeof(double))};
    TU_OK(bn_direct_reference(p, G, eps, NULL, 0, r.acc, r.pot));
    long ref_active[64];
    int bins_seen = 0;
    for (int cycle = 0; cycle < 2; cycle++) {
        int n_steps = 0;
        ref_cycle(p, &r, G, ref_active, &n_steps);
        for (int s = 0; s < n_steps; s++) {
            TU_OK(bn_simulation_step(sim, NULL));
            assert_int_equal(bn_simulation_block_info(sim).n_active, ref_active[s]);
        }
        assert_int_equal(bn_simulation_block_info(sim).tick, 0); /* the cycle ended with the reference's */
        for (size_t i = 0; i < p->n; i++) bins_seen |= 1 << r.bin[i];
    }
    assert_true(fabs(bn_simulation_time(sim) - 2 * D) < 1e-15);
    assert_true(bins_seen & ~3); /* the test reaches bins beyond 1 */
    const bn_particles *q = NULL;
    TU_OK(bn_simulation_particles(sim, &q));
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) {
            TU_NEAR(q->pos[k][i], p->pos[k][i], 1e-11);
            TU_NEAR(q->vel[k][i], p->vel[k][i], 1e-10);
        }
    free(r.bin);
    free(r.acc);
    free(r.pot);
    bn_simulation_free(sim);
    bn_particles_free(p);
}

static void test_batches_are_the_steps(void **state)
{
    (void)state;
    tu_check_batches(BN_BACKEND_CPU);
}

static void test_idle_steps_change_nothing(void **state)
{
    (void)state;
    tu_check_idle_steps(BN_BACKEND_CPU);
}

static void test_plummer_energy_with_block_steps(void **state)
{
    (void)state;
    tu_check_block_energy(BN_BACKEND_CPU);
}

/* Cycles are shortened to land on the limit; a limit inside a running
 * cycle, and changes that would lose its state, fail with a message. */
static void test_landing_and_mid_cycle_errors(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(200, 9, 1);
    bn_gravity_params g = cpu_gravity(BN_METHOD_TREE, 0.02);
    bn_integrator_params ip = {0.125, 0.05, 4, 2, 0, BN_STEP_ACCEL, BN_TUNE_TIME};
    bn_simulation *sim = tu_make_sim(p, g, ip);
    TU_OK(bn_simulation_integrate(sim, 0.3));
    assert_true(bn_simulation_time(sim) == 0.3);
    assert_int_equal(bn_simulation_block_info(sim).tick, 0);
    do TU_OK(bn_simulation_step(sim, NULL));
    while (bn_simulation_block_info(sim).tick == 0);
    TU_FAILS(bn_simulation_step_to(sim, bn_simulation_time(sim) + 1e-6, NULL), BN_ERR_ARGUMENT, "inside the running");
    TU_FAILS(bn_simulation_set_gravity(sim, &g), BN_ERR_ARGUMENT, "block-step cycle");
    TU_FAILS(bn_simulation_set_integrator(sim, &ip), BN_ERR_ARGUMENT, "block-step cycle");
    const double x[3] = {0, 0, 0};
    TU_FAILS(bn_simulation_add_particle(sim, x, x, 1.0, 7), BN_ERR_ARGUMENT, "block-step cycle");
    bn_simulation_free(sim);

    bn_simulation *s2 = NULL;
    TU_OK(bn_simulation_create(&s2));
    bn_integrator_params bad = {0.1, 0, 3, 0, 0, BN_STEP_ACCEL, BN_TUNE_TIME};
    TU_FAILS(bn_simulation_set_integrator(s2, &bad), BN_ERR_ARGUMENT, "needs eta > 0");
    bad.eta = 0.1;
    bad.time_bins = 31;
    TU_FAILS(bn_simulation_set_integrator(s2, &bad), BN_ERR_ARGUMENT, "time_bins");
    bad.time_bins = 3;
    bad.tree_rebuild = -1;
    TU_FAILS(bn_simulation_set_integrator(s2, &bad), BN_ERR_ARGUMENT, "tree_rebuild");
    bn_simulation_free(s2);
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_bin_is_the_shared_step),
        cmocka_unit_test(test_matches_an_independent_block_kdk),
        cmocka_unit_test(test_plummer_energy_with_block_steps),
        cmocka_unit_test(test_batches_are_the_steps),
        cmocka_unit_test(test_idle_steps_change_nothing),
        cmocka_unit_test(test_landing_and_mid_cycle_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
