/* Hostile inputs through the library (issue 15): counts beyond memory,
 * forces that cannot be finite, outputs that would not be valid inputs,
 * steps that shrink for ever. Each class with at least two instances;
 * every refusal is checked for its status and for the words that say
 * what is wrong. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/error.h"
#include "testutil.h"

/* ---- counts: refused before any allocation, the count named ---------- */
static void test_counts_beyond_memory(void **state)
{
    (void)state;
    bn_particles *p = (bn_particles *)0x1;
    /* 2^61 x 64 bytes overflows size_t: once an allocation of 0 bytes */
    TU_FAILS(bn_particles_create(&p, (size_t)1 << 61), BN_ERR_NOMEM, "2305843009213693952 particles");
    assert_null(p);
    TU_FAILS(bn_particles_create(&p, (size_t)1 << 40), BN_ERR_NOMEM, "1099511627776 particles");
    assert_non_null(strstr(bn_last_error(), "of memory"));
    TU_OK(bn_particles_create(&p, 10));
    TU_FAILS(bn_particles_resize(p, SIZE_MAX / 2), BN_ERR_NOMEM, "more than 2^64");
    assert_int_equal(p->n, 10); /* a refused resize leaves the set as it was */
    bn_particles_free(p);
    TU_FAILS(bn_check_count(SIZE_MAX, 2, "cells"), BN_ERR_NOMEM, "cells");
    TU_OK(bn_check_count(1000, 64, "cells"));
    assert_null(bn_alloc_array(SIZE_MAX / 4, 8, "an array"));
    assert_non_null(strstr(bn_last_error(), "overflows"));
}

/* ---- forces that cannot be finite, refused before the computation ----- */
static bn_particles *small_set(void) { return tu_model(BN_IC_PLUMMER, 64, 5); }

static void expect_force_refusal(bn_particles *p, bn_gravity_params g, const char *needle)
{
    bn_gravity *solver = NULL;
    TU_OK(bn_gravity_create(&solver, &g));
    TU_FAILS(bn_gravity_compute(solver, p), BN_ERR_ARGUMENT, needle);
    bn_gravity_free(solver);
}

static void test_forces_that_overflow(void **state)
{
    (void)state;
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    bn_particles *p = small_set();
    /* coordinates whose differences overflow: the 1e300, and 1e160 */
    p->pos[0][3] = 1e300;
    expect_force_refusal(p, g, "span 1e+300 in x");
    p->pos[0][3] = 0.1;
    p->pos[2][7] = -1e160;
    expect_force_refusal(p, g, "in z");
    p->pos[2][7] = 0.1;
    /* softening or G so large or small that the forces overflow */
    g.softening = 1e-300;
    expect_force_refusal(p, g, "G M / eps^2");
    g.softening = 1e200;
    expect_force_refusal(p, g, "softening 1e+200");
    g.softening = 0.01;
    g.G = 1e308;
    for (size_t i = 0; i < p->n; i++) p->mass[i] = 1e10;
    expect_force_refusal(p, g, "overflows");
    bn_particles_free(p);
}

/* The CPU tree's multipoles in double: coordinates of 1e80 (M S^4 beyond
 * 1e290) or masses of 1e300 once gave NaN forces; refused for the tree,
 * while direct summation computes them. */
static void test_tree_range(void **state)
{
    (void)state;
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    for (int c = 0; c < 2; c++) {
        bn_particles *p = small_set();
        for (size_t i = 0; i < p->n; i++) {
            if (c == 0)
                for (int k = 0; k < 3; k++) p->pos[k][i] *= 1e80;
            else p->mass[i] = 1e300 / (double)p->n;
        }
        g.method = BN_METHOD_TREE;
        g.softening = c == 0 ? 1e77 : 0.01;
        expect_force_refusal(p, g, "the tree's quadrupole terms overflow");
        g.method = BN_METHOD_DIRECT;
        bn_gravity *solver = NULL;
        TU_OK(bn_gravity_create(&solver, &g));
        TU_OK(bn_gravity_compute(solver, p));
        TU_OK(bn_particles_check_forces(p, "direct"));
        bn_gravity_free(solver);
        bn_particles_free(p);
    }
}

/* Relative errors of vectors of 1e-200 and 1e200: no squares that vanish
 * or overflow (compare printed 0 and inf for them). */
static void test_error_stats_range(void **state)
{
    (void)state;
    const double scales[2] = {1e-200, 1e200};
    for (int c = 0; c < 2; c++) {
        double ref[6] = {3, 4, 0, 0, 0, 1}, got[6] = {3, 4, 5e-7, 0, 0, 1 + 1e-7};
        for (int k = 0; k < 6; k++) ref[k] *= scales[c], got[k] *= scales[c];
        bn_error_stats e;
        TU_OK(bn_error_stats_compute(2, got, ref, NULL, NULL, &e));
        TU_NEAR(e.acc_max, 1e-7, 1e-6); /* 1 + 1e-7 is rounded: 1e-9 of the error */
        TU_NEAR(e.acc_p50, 1e-7, 1e-6);
    }
}

/* Without softening, two particles 1e-160 apart: 1/r^3 is infinite. The
 * result is checked after the computation and refused. */
static void test_non_finite_results_refused(void **state)
{
    (void)state;
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    g.softening = 0;
    for (int method = 0; method < 2; method++) {
        g.method = method ? BN_METHOD_DIRECT : BN_METHOD_TREE;
        bn_particles *p = small_set();
        for (int k = 0; k < 3; k++) p->pos[k][8] = p->pos[k][9] = 0; /* near 0: 1e-160 is resolved */
        p->pos[0][9] = 1e-160;
        expect_force_refusal(p, g, "the forces overflow");
        assert_non_null(strstr(bn_last_error(), "softening"));
        bn_particles_free(p);
    }
}

/* ---- outputs as valid as inputs -------------------------------------- */
static void test_writer_refuses_what_reader_refuses(void **state)
{
    (void)state;
    char dir[] = "/tmp/bn_hostile_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/out.hdf5", dir);
    bn_particles *p = small_set();
    TU_OK(bn_particles_ensure_forces(p));
    p->acc[1][4] = INFINITY;
    TU_FAILS(bn_snapshot_write(path, p, NULL), BN_ERR_ARGUMENT, "non-finite y acceleration");
    p->acc[1][4] = 0;
    p->pot[2] = NAN;
    TU_FAILS(bn_snapshot_write(path, p, NULL), BN_ERR_ARGUMENT, "non-finite potential");
    p->pot[2] = 0;
    p->id[3] = p->id[5];
    TU_FAILS(bn_snapshot_write(path, p, NULL), BN_ERR_FORMAT, "appears more than once");
    assert_int_equal(access(path, F_OK), -1); /* nothing written */
    p->id[3] = 1000;
    TU_OK(bn_snapshot_write(path, p, NULL));
    unlink(path);
    rmdir(dir);
    bn_particles_free(p);
}

static void test_repeated_ids(void **state)
{
    (void)state;
    bn_particles *p = NULL;
    TU_OK(bn_particles_create(&p, 5000));
    for (size_t i = 0; i < p->n; i++) p->id[i] = (uint64_t)i * 7919u + ((uint64_t)1 << 40); /* many digits */
    TU_OK(bn_particles_check_ids(p, "ids"));
    p->id[4321] = p->id[17];
    TU_FAILS(bn_particles_check_ids(p, "ids"), BN_ERR_FORMAT, "particles 17 and 4321");
    p->id[4321] = UINT64_MAX;
    p->id[0] = UINT64_MAX;
    TU_FAILS(bn_particles_check_ids(p, "ids"), BN_ERR_FORMAT, "18446744073709551615");
    bn_particles_free(p);
}

/* ---- steps that shrink for ever: dt_min -------------------------------- */
static void test_step_floor(void **state)
{
    (void)state;
    bn_particles *p = small_set();
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    g.method = BN_METHOD_DIRECT;
    g.softening = 0.01;
    /* eta so small that the first step is far below dt_min */
    bn_integrator_params ip = {0.01, 1e-12, 0, 1, 1e-6, BN_STEP_ACCEL, BN_TUNE_TIME};
    bn_simulation *sim = tu_make_sim(p, g, ip);
    TU_FAILS(bn_simulation_advance(sim, 1.0, 8, NULL), BN_ERR_ARGUMENT, "TimeIntegration:dt_min = 1e-06");
    bn_simulation_free(sim);
    /* dt itself, and the finest block step, below the floor */
    sim = tu_make_sim(p, g, bn_integrator_params_default());
    ip = (bn_integrator_params){1e-9, 0, 0, 1, 1e-6, BN_STEP_ACCEL, BN_TUNE_TIME};
    TU_FAILS(bn_simulation_set_integrator(sim, &ip), BN_ERR_ARGUMENT, "below dt_min");
    ip = (bn_integrator_params){0.01, 0.1, 20, 1, 1e-6, BN_STEP_ACCEL, BN_TUNE_TIME};
    TU_FAILS(bn_simulation_set_integrator(sim, &ip), BN_ERR_ARGUMENT, "finest block step");
    ip = (bn_integrator_params){0.01, 0.1, 0, 1, NAN, BN_STEP_ACCEL, BN_TUNE_TIME};
    TU_FAILS(bn_simulation_set_integrator(sim, &ip), BN_ERR_ARGUMENT, "dt_min");
    bn_simulation_free(sim);
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_beyond_memory),
        cmocka_unit_test(test_forces_that_overflow),
        cmocka_unit_test(test_non_finite_results_refused),
        cmocka_unit_test(test_tree_range),
        cmocka_unit_test(test_error_stats_range),
        cmocka_unit_test(test_writer_refuses_what_reader_refuses),
        cmocka_unit_test(test_repeated_ids),
        cmocka_unit_test(test_step_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
