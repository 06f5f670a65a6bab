/* Initial conditions, fast checks: names, errors, invariants of every model,
 * determinism across thread counts, and the Eddington distribution function
 * against Hernquist's analytic f(E) and against the density it must give. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "ic/ic_internal.h"

static const bn_ic_model all_models[] = {BN_IC_PLUMMER, BN_IC_HERNQUIST, BN_IC_NFW, BN_IC_UNIFORM_SPHERE,
                                         BN_IC_UNIFORM_CUBE};
#define N_MODELS 5

static bn_particles *make(bn_ic_model m, size_t n, uint64_t seed)
{
    bn_ic_params prm = bn_ic_params_default();
    prm.model = m;
    prm.n = n;
    prm.seed = seed;
    if (m == BN_IC_UNIFORM_SPHERE) prm.virial_ratio = 0.5;
    if (m == BN_IC_UNIFORM_CUBE) prm.mass_spread = 1;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&prm, &p));
    return p;
}

static void test_names(void **state)
{
    (void)state;
    const char *names[N_MODELS] = {"plummer", "hernquist", "nfw", "uniform-sphere", "uniform-cube"};
    for (int i = 0; i < N_MODELS; i++) {
        bn_ic_model m;
        TU_OK(bn_ic_model_parse(names[i], &m));
        assert_int_equal(m, all_models[i]);
        assert_string_equal(bn_ic_model_name(all_models[i]), names[i]);
    }
    bn_ic_model m;
    TU_FAILS(bn_ic_model_parse("king", &m), BN_ERR_ARGUMENT, "'king'");
    TU_FAILS(bn_ic_model_parse("king", &m), BN_ERR_ARGUMENT, "uniform-cube");
    TU_FAILS(bn_ic_model_parse(NULL, &m), BN_ERR_ARGUMENT, "model");
    assert_string_equal(bn_ic_model_name((bn_ic_model)42), "unknown");
}

static void expect_bad(bn_ic_params prm, const char *needle)
{
    static bn_particles sentinel;
    bn_particles *p = &sentinel; /* must be reset to NULL */
    TU_FAILS(bn_ic_generate(&prm, &p), BN_ERR_ARGUMENT, needle);
    assert_null(p);
}

static void test_errors(void **state)
{
    (void)state;
    bn_ic_params ok = bn_ic_params_default(), prm;
    ok.n = 10;
    prm = ok, prm.n = 0, expect_bad(prm, "n (number of particles)");
    prm = ok, prm.virial_ratio = -0.5, expect_bad(prm, "virial_ratio must be finite and >= 0, got -0.5");
    prm = ok, prm.virial_ratio = NAN, expect_bad(prm, "virial_ratio");
    prm = ok, prm.G = 0, expect_bad(prm, "G must be");
    prm = ok, prm.G = INFINITY, expect_bad(prm, "G must be");
    prm = ok, prm.truncation = -1, expect_bad(prm, "truncation");
    prm = ok, prm.truncation = 1e9, expect_bad(prm, "truncation");
    prm = ok, prm.cube_half_size = 0, expect_bad(prm, "cube_half_size");
    prm = ok, prm.mass_spread = 2, expect_bad(prm, "mass_spread must be 0 or 1, got 2");
    prm = ok, prm.model = (bn_ic_model)7, expect_bad(prm, "unknown model 7");
    TU_FAILS(bn_ic_generate(&ok, NULL), BN_ERR_ARGUMENT, "out");
    bn_particles *p = NULL;
    TU_FAILS(bn_ic_generate(NULL, &p), BN_ERR_ARGUMENT, "params");
}

/* Ids 1..n, total mass, centre of mass at rest at the origin, finite values,
 * and each model's bounds. */
static void test_invariants(void **state)
{
    (void)state;
    const size_t n = 3000;
    for (int mi = 0; mi < N_MODELS; mi++) {
        bn_particles *p = make(all_models[mi], n, 5);
        assert_int_equal(p->n, n);
        TU_OK(bn_particles_validate(p, "ic"));
        double mx[3] = {0, 0, 0}, mv[3] = {0, 0, 0}, mtot = 0, rmax = 0, scale = 0;
        for (size_t i = 0; i < n; i++) {
            assert_true(p->id[i] == i + 1);
            assert_true(p->mass[i] > 0);
            mtot += p->mass[i];
            double r2 = 0;
            for (int k = 0; k < 3; k++) {
                mx[k] += p->mass[i] * p->pos[k][i];
                mv[k] += p->mass[i] * p->vel[k][i];
                r2 += p->pos[k][i] * p->pos[k][i];
                scale += p->mass[i] * (fabs(p->pos[k][i]) + fabs(p->vel[k][i]));
            }
            rmax = fmax(rmax, sqrt(r2));
        }
        for (int k = 0; k < 3; k++) {
            assert_true(fabs(mx[k]) < 1e-13 * scale);
            assert_true(fabs(mv[k]) < 1e-13 * scale);
        }
        /* Bounds, allowing for the centre-of-mass shift (~ size / sqrt(n)). */
        const double bound[N_MODELS] = {38.7 * 3 * M_PI / 16, 100, 10, 1, 3 * sqrt(3.0)};
        assert_true(rmax < bound[mi] * 1.05);
        if (all_models[mi] == BN_IC_UNIFORM_CUBE) {
            TU_NEAR(mtot, 0.5, 0.03); /* masses uniform in [0, 1/n) */
            for (size_t i = 0; i < n; i++) assert_true(p->mass[i] < 1.0 / (double)n);
        } else {
            TU_NEAR(mtot, 1.0, 1e-12);
        }
        bn_particles_free(p);
    }
}

static void test_cold_and_static_models(void **state)
{
    (void)state;
    bn_ic_params prm = bn_ic_params_default();
    prm.model = BN_IC_UNIFORM_SPHERE;
    prm.n = 500;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&prm, &p));
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) assert_true(p->vel[k][i] == 0);
    bn_particles_free(p);
    prm.model = BN_IC_UNIFORM_CUBE;
    prm.cube_half_size = 0.25;
    TU_OK(bn_ic_generate(&prm, &p));
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) {
            assert_true(p->vel[k][i] == 0);
            assert_true(fabs(p->pos[k][i]) < 0.25 * 1.1);
            assert_true(p->mass[i] == 1.0 / 500);
        }
    bn_particles_free(p);
    prm.model = BN_IC_PLUMMER; /* a single particle sits at rest at the origin */
    prm.n = 1;
    TU_OK(bn_ic_generate(&prm, &p));
    assert_true(p->pos[0][0] == 0 && p->vel[2][0] == 0 && p->mass[0] == 1);
    bn_particles_free(p);
}

static int same_bits(const bn_particles *a, const bn_particles *b)
{
    if (a->n != b->n) return 0;
    size_t bytes = a->n * sizeof(double);
    for (int k = 0; k < 3; k++)
        if (memcmp(a->pos[k], b->pos[k], bytes) || memcmp(a->vel[k], b->vel[k], bytes)) return 0;
    return !memcmp(a->mass, b->mass, bytes) && !memcmp(a->id, b->id, a->n * sizeof(uint64_t));
}

/* Same seed: bit-identical with 1 and 2 threads; another seed differs. */
static void test_deterministic_across_threads(void **state)
{
    (void)state;
    const int saved = omp_get_max_threads();
    for (int mi = 0; mi < N_MODELS; mi++) {
        omp_set_num_threads(1);
        bn_particles *one = make(all_models[mi], 20001, 9);
        omp_set_num_threads(2);
        bn_particles *two = make(all_models[mi], 20001, 9);
        bn_particles *other = make(all_models[mi], 20001, 10);
        if (!same_bits(one, two)) fail_msg("%s differs between 1 and 2 threads", bn_ic_model_name(all_models[mi]));
        assert_false(same_bits(one, other));
        bn_particles_free(one);
        bn_particles_free(two);
        bn_particles_free(other);
    }
    omp_set_num_threads(saved);
}

/* Velocities scale as sqrt(G); positions and masses do not depend on G. */
static void test_G_scaling(void **state)
{
    (void)state;
    bn_ic_params prm = bn_ic_params_default();
    prm.model = BN_IC_HERNQUIST;
    prm.n = 1000;
    bn_particles *a = NULL, *b = NULL;
    TU_OK(bn_ic_generate(&prm, &a));
    prm.G = 4;
    TU_OK(bn_ic_generate(&prm, &b));
    for (size_t i = 0; i < a->n; i++)
        for (int k = 0; k < 3; k++) {
            assert_true(a->pos[k][i] == b->pos[k][i]);
            TU_NEAR(b->vel[k][i], 2 * a->vel[k][i], 1e-15);
        }
    bn_particles_free(a);
    bn_particles_free(b);
}

/* Hernquist (1990) eq. 17, G = M = a = 1, E the (positive) binding energy. */
static double hernquist_f(double E)
{
    const double q = sqrt(E), q2 = E;
    return (3 * asin(q) + q * sqrt(1 - q2) * (1 - 2 * q2) * (8 * q2 * q2 - 8 * q2 - 3)) /
           (8 * sqrt(2.0) * M_PI * M_PI * M_PI * pow(1 - q2, 2.5));
}

/*
 * Truncated far out (rt = 1e6), the numerical DF must match Hernquist's
 * analytic one. With mass normalisation mu = M(rt) - (4 pi/3) rho(rt) rt^3
 * and Psi shifted by Psi_u(rt) = 1/(1+rt), rho_t(Psi) = rho_u(mu Psi +
 * Psi_u(rt)) / mu up to terms of order 1/rt^2, so
 * f_t(E) = sqrt(mu) f_H(mu E + 1/(1+rt)).
 */
static void test_eddington_matches_hernquist(void **state)
{
    (void)state;
    ic_profile pr;
    ic_df df;
    const double rt = 1e6, mu = rt * rt / ((1 + rt) * (1 + rt)) - (2.0 / 3) * rt * rt / pow(1 + rt, 3);
    TU_OK(ic_profile_init(&pr, BN_IC_HERNQUIST, rt));
    TU_OK(ic_df_build(&df, &pr));
    const double frac[] = {1e-3, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.999, 0.99999};
    for (size_t i = 0; i < sizeof frac / sizeof frac[0]; i++) {
        const double E = frac[i] * pr.psi_max, depth = (1 - frac[i]) * pr.psi_max;
        TU_NEAR(ic_df_eval(&df, E, depth), sqrt(mu) * hernquist_f(mu * E + 1 / (1 + rt)), 1e-5);
    }
    ic_df_free(&df);
}

/* rho(r) = 4 pi int_0^vmax v^2 f(Psi - v^2/2) dv (BT eq. 4.43) for the
 * truncated models themselves, with v = vmax sin(theta). */
static void test_eddington_gives_density(void **state)
{
    (void)state;
    const bn_ic_model models[2] = {BN_IC_HERNQUIST, BN_IC_NFW};
    const double trunc[2] = {100, 10};
    for (int m = 0; m < 2; m++) {
        ic_profile pr;
        ic_df df;
        TU_OK(ic_profile_init(&pr, models[m], trunc[m]));
        TU_OK(ic_df_build(&df, &pr));
        const double radii[] = {1e-3, 0.1, 1, 3, 0.5 * trunc[m], 0.95 * trunc[m]};
        for (size_t i = 0; i < sizeof radii / sizeof radii[0]; i++) {
            const double r = radii[i], psi = ic_profile_psi(&pr, r), depth = ic_profile_depth(&pr, r);
            const double vmax = sqrt(2 * psi);
            const int nq = 4000;
            double sum = 0;
            for (int q = 0; q < nq; q++) {
                const double th = (q + 0.5) / nq * 0.5 * M_PI, v = vmax * sin(th);
                sum += v * v * ic_df_eval(&df, psi - 0.5 * v * v, depth + 0.5 * v * v) * vmax * cos(th);
            }
            TU_NEAR(4 * M_PI * sum * 0.5 * M_PI / nq, ic_profile_density(&pr, r), 1e-4);
        }
        ic_df_free(&df);
    }
}

/* Every halo particle is inside rt and bound to it: v^2 <= 2 G Psi(r). */
static void test_halo_bound(void **state)
{
    (void)state;
    ic_profile pr;
    TU_OK(ic_profile_init(&pr, BN_IC_NFW, 10));
    bn_ic_params prm = bn_ic_params_default();
    prm.model = BN_IC_NFW;
    prm.n = 4000;
    prm.G = 2;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&prm, &p));
    /* Margins for the centre-of-mass shift (~ 0.01 in r, 0.005 in v). */
    int near_edge = 0;
    for (size_t i = 0; i < p->n; i++) {
        double r2 = 0, v2 = 0;
        for (int k = 0; k < 3; k++) {
            r2 += p->pos[k][i] * p->pos[k][i];
            v2 += p->vel[k][i] * p->vel[k][i];
        }
        const double r = sqrt(r2);
        assert_true(r < 10.1);
        assert_true(sqrt(v2) < sqrt(2 * prm.G * ic_profile_psi(&pr, fmax(r - 0.1, 1e-6))) + 0.02);
        near_edge += r > 8;
    }
    assert_true(near_edge > 0);
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_cold_and_static_models),
        cmocka_unit_test(test_deterministic_across_threads),
        cmocka_unit_test(test_G_scaling),
        cmocka_unit_test(test_eddington_matches_hernquist),
        cmocka_unit_test(test_eddington_gives_density),
        cmocka_unit_test(test_halo_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
