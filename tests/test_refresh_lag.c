/* Block steps' refreshed trees and their lag (tree/refresh_lag.h), CPU:
 *  - a refreshed tree's force error is odd in the velocity: built from
 *    the positions a lag L behind (x - v L, as a refresh's tree is) and
 *    refreshed at x, its forces do positive work on the particles
 *    relative to a fresh tree at x (sum m v . da > 0), built a lag ahead
 *    negative work, of about the same size; the effect the drift in
 *    energy of refreshed block steps comes from (BENCHMARKS.md session 29);
 *  - bn_tree_workspace_ahead(tau) builds exactly as a tree built at x +
 *    tau v and refreshed at x (the same bits), and 0 as a fresh tree;
 *  - a lead that scrambles the cells is refused: built again from x;
 *  (the GPU's keys take the same lead, bn_refresh_lead; its energy runs
 *  are scripts/refresh-energy.sh's, on the device).
 * A Hernquist sphere of 2^16 particles, softening 0.01; the lag is a
 * step of 1/512 (the power grows with it and with N; at smaller N or
 * longer lags the part even in the lag, of the cells' stretch, weighs
 * more). */
#include "testutil.h"
#include "gravity/gravity_cpu.h"
#include "tree/refresh_lag.h"

enum { N = 65536 };
static const double kLag = 1.0 / 512.0;

static double *alloc3(double *a[3], size_t n)
{
    for (int k = 0; k < 3; k++) a[k] = calloc(n, sizeof(double));
    return calloc(n, sizeof(double));
}

static void free3(double *a[3], double *pot)
{
    for (int k = 0; k < 3; k++) free(a[k]);
    free(pot);
}

/* x + t v for every particle of x, into p. */
static void lead(bn_particles *p, const bn_particles *x, double t)
{
    for (size_t i = 0; i < x->n; i++)
        for (int k = 0; k < 3; k++) p->pos[k][i] = bn_refresh_lead(x->pos[k][i], x->vel[k][i], t);
}

/* sum m v . (a - ref) */
static double power(const bn_particles *x, double *a[3], double *ref[3])
{
    double s = 0;
    for (size_t i = 0; i < x->n; i++)
        for (int k = 0; k < 3; k++) s += x->mass[i] * x->vel[k][i] * (a[k][i] - ref[k][i]);
    return s;
}

/* Forces at x from a tree built at x + t v and refreshed at x. */
static void built_at(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *x, double t, double *a[3],
                     double *pot)
{
    bn_particles *p = NULL;
    TU_OK(bn_particles_copy(&p, x));
    lead(p, x, t);
    TU_OK(bn_tree_forces_active_cpu(ws, g, p, NULL, NULL, 0, 1, a, pot, NULL));
    TU_OK(bn_tree_forces_active_cpu(ws, g, x, NULL, NULL, 0, 0, a, pot, NULL));
    bn_particles_free(p);
}

static void test_lag_does_work(void **state)
{
    (void)state;
    bn_particles *x = tu_model(BN_IC_HERNQUIST, N, 5);
    bn_gravity_params g = bn_gravity_params_default();
    g.softening = 0.01;
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    double *fresh[3], *past[3], *ahead[3];
    double *p0 = alloc3(fresh, N), *p1 = alloc3(past, N), *p2 = alloc3(ahead, N);
    TU_OK(bn_tree_forces_active_cpu(ws, &g, x, NULL, NULL, 0, 1, fresh, p0, NULL));
    built_at(ws, &g, x, -kLag, past, p1);
    built_at(ws, &g, x, kLag, ahead, p2);
    const double P_past = power(x, past, fresh), P_ahead = power(x, ahead, fresh);
    print_message("power of the lag's error: behind %+.3e, ahead %+.3e\n", P_past, P_ahead);
    assert_true(P_past > 0);
    assert_true(P_ahead < 0);
    /* about opposite: the odd part, which a centred build cancels, at
     * least 3 times the even part it leaves (measured: 6 times) */
    assert_true(fabs(P_past - P_ahead) > 3 * fabs(P_past + P_ahead));
    free3(fresh, p0);
    free3(past, p1);
    free3(ahead, p2);
    bn_tree_workspace_free(ws);
    bn_particles_free(x);
}

static void test_ahead_is_a_lead_build(void **state)
{
    (void)state;
    bn_particles *x = tu_model(BN_IC_HERNQUIST, 4096, 6);
    bn_gravity_params g = bn_gravity_params_default();
    g.softening = 0.01;
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    double *want[3], *got[3], *fresh[3];
    double *pw = alloc3(want, x->n), *pg = alloc3(got, x->n), *pf = alloc3(fresh, x->n);
    built_at(ws, &g, x, kLag, want, pw);
    bn_tree_workspace_ahead(ws, kLag);
    bn_force_stats st;
    TU_OK(bn_tree_forces_active_cpu(ws, &g, x, NULL, NULL, 0, 1, got, pg, &st));
    assert_int_equal(st.lead_refused, 0); /* a quiet sphere's lead is kept */
    int same = 1, differs = 0;
    for (size_t i = 0; i < x->n; i++) {
        same &= pg[i] == pw[i];
        for (int k = 0; k < 3; k++) same &= got[k][i] == want[k][i];
    }
    bn_tree_workspace_ahead(ws, 0.0);
    TU_OK(bn_tree_forces_active_cpu(ws, &g, x, NULL, NULL, 0, 1, fresh, pf, NULL));
    for (size_t i = 0; i < x->n; i++) differs |= fresh[0][i] != got[0][i];
    assert_true(same);
    assert_true(differs); /* the lead changed the tree */
    assert_true(bn_refresh_tau(1, 0.25) == 0.0 && bn_refresh_tau(2, 0.25) == 0.125 && bn_refresh_tau(5, 0.25) == 0.5);
    /* a lead that is not finite is none: the backends take tau as it is */
    assert_true(bn_refresh_tau(3, INFINITY) == 0.0 && bn_refresh_tau(3, NAN) == 0.0 && bn_refresh_tau(3.5, 0.5) == 0.625);
    /* an enormous velocity whose lead overflows keys the particle at x */
    assert_true(bn_refresh_lead(1.0, 1e308, 4.0) == 1.0 && bn_refresh_lead(1.0, 2.0, 0.25) == 1.5);
    free3(want, pw);
    free3(got, pg);
    free3(fresh, pf);
    bn_tree_workspace_free(ws);
    bn_particles_free(x);
}

/* A lead that scrambles the cells (each particle's velocity carries it
 * to another one's position within tau, as the core of a cold collapse
 * does: its particles cross each other) is refused as a scattered
 * refresh is (tree/refresh_guard.h): the tree is built again from x,
 * with a fresh build's forces, bit for bit. */
static void test_scrambling_lead_is_refused(void **state)
{
    (void)state;
    bn_particles *x = tu_model(BN_IC_HERNQUIST, 4096, 8);
    const size_t n = x->n;
    tu_scramble_velocities(x, kLag);
    bn_gravity_params g = bn_gravity_params_default();
    g.softening = 0.01;
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    double *got[3], *fresh[3];
    double *pg = alloc3(got, n), *pf = alloc3(fresh, n);
    bn_force_stats st;
    bn_tree_workspace_ahead(ws, kLag);
    TU_OK(bn_tree_forces_active_cpu(ws, &g, x, NULL, NULL, 0, 1, got, pg, &st));
    assert_int_equal(st.lead_refused, 1);
    bn_tree_workspace_ahead(ws, 0.0);
    TU_OK(bn_tree_forces_active_cpu(ws, &g, x, NULL, NULL, 0, 1, fresh, pf, &st));
    assert_int_equal(st.lead_refused, 0);
    for (size_t i = 0; i < n; i++) {
        assert_true(pg[i] == pf[i]);
        for (int k = 0; k < 3; k++) assert_true(got[k][i] == fresh[k][i]);
    }
    free3(got, pg);
    free3(fresh, pf);
    bn_tree_workspace_free(ws);
    bn_particles_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lag_does_work),
        cmocka_unit_test(test_ahead_is_a_lead_build),
        cmocka_unit_test(test_scrambling_lead_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
