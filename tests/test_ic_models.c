/*
 * Initial conditions against the analytic models at N = 2^16 (heavy: the
 * virial ratios use double direct summation, eps = 0).
 *
 * Each model's mass profile (half-mass radius within 2%, enclosed mass at
 * three radii within 5 binomial standard deviations), the virial ratio
 * 2T/|W| = 1 within 2% for the equilibrium models, the Plummer energy
 * -1/4 within 3%, and the requested virial ratio of a warm uniform sphere. The
 * analytic profiles are written out here again, independently of
 * src/ic/ic_profiles.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "testutil.h"

#define N_BIG ((size_t)1 << 16)

/* Analytic enclosed mass fraction of a model, M(r) / M_total. */
typedef double (*mass_fn)(double r);

static const double plummer_a = 3 * M_PI / 16;
static const double plummer_cut = 0.999; /* mass fraction kept (ic_plummer.c) */

static double plummer_mass(double r)
{
    const double x = r / plummer_a;
    return fmin(1.0, pow(x * x / (1 + x * x), 1.5) / plummer_cut);
}

/* Truncated halos: rho(r) - rho(rt) inside rt (src/ic/ic_profiles.c). */
static double halo_mass(double r, double rt, int hernquist)
{
    r = fmin(r, rt);
    double m, rho_t;
    if (hernquist) {
        m = r * r / ((1 + r) * (1 + r));
        rho_t = 1 / (2 * M_PI * rt * pow(1 + rt, 3));
    } else {
        m = log(1 + r) - r / (1 + r);
        rho_t = 1 / (4 * M_PI * rt * pow(1 + rt, 2));
    }
    return m - 4 * M_PI / 3 * rho_t * r * r * r;
}
static double hernquist_mass(double r) { return halo_mass(r, 100, 1) / halo_mass(100, 100, 1); }
static double nfw_mass(double r) { return halo_mass(r, 10, 0) / halo_mass(10, 10, 0); }
static double sphere_mass(double r) { return fmin(1.0, r * r * r); }

/* Radius holding a mass fraction m, by bisection. */
static double radius_of(mass_fn mass, double m)
{
    double lo = 0, hi = 1e3;
    for (int i = 0; i < 200; i++) {
        const double mid = 0.5 * (lo + hi);
        if (mass(mid) < m) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bn_particles *generate(bn_ic_model model, size_t n, double q)
{
    bn_ic_params prm = bn_ic_params_default();
    prm.model = model;
    prm.n = n;
    prm.seed = 2026;
    prm.virial_ratio = q;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&prm, &p));
    return p;
}

/* Sorted radii of equal-mass particles: the half-mass radius is the median,
 * M(<r) the rank. */
static double *sorted_radii(const bn_particles *p)
{
    double *r = malloc(p->n * sizeof *r);
    for (size_t i = 0; i < p->n; i++)
        r[i] = sqrt(p->pos[0][i] * p->pos[0][i] + p->pos[1][i] * p->pos[1][i] + p->pos[2][i] * p->pos[2][i]);
    qsort(r, p->n, sizeof *r, cmp_double);
    return r;
}

static size_t count_below(const double *r, size_t n, double x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Half-mass radius and M(<r) where r holds fractions 0.2, 0.5, 0.8 of the
 * mass (times `scale` <= 1 where the analytic M(r) holds only inside). */
static void check_profile(const char *name, const bn_particles *p, mass_fn mass, double scale)
{
    double *r = sorted_radii(p);
    const double n = (double)p->n, rh = r[p->n / 2], rh_model = radius_of(mass, 0.5);
    printf("%-15s half-mass radius %.5f (model %.5f, %+.2f%%)\n", name, rh, rh_model, 100 * (rh / rh_model - 1));
    TU_NEAR(rh, rh_model, 0.02);
    const double fractions[3] = {0.2 * scale, 0.5 * scale, 0.8 * scale};
    for (int k = 0; k < 3; k++) {
        const double x = radius_of(mass, fractions[k]), got = (double)count_below(r, p->n, x) / n;
        const double sigma = sqrt(fractions[k] * (1 - fractions[k]) / n);
        if (fabs(got - mass(x)) > 5 * sigma)
            fail_msg("%s: M(<%g) = %g, model %g (5 sigma = %g)", name, x, got, mass(x), 5 * sigma);
    }
    free(r);
}

/* T over all particles; W = 1/2 sum m phi (direct summation, eps = 0) over
 * every 4th particle as target (the particles are independent draws, so
 * this is an unbiased sample; it adds ~0.4% noise and saves 3/4 of the
 * N^2 work). */
#define W_STRIDE 4
static void energies(const bn_particles *p, double *T, double *W)
{
    const size_t nt = (p->n + W_STRIDE - 1) / W_STRIDE;
    size_t *targets = malloc(nt * sizeof *targets);
    double *acc = malloc(3 * nt * sizeof *acc), *pot = malloc(nt * sizeof *pot);
    for (size_t t = 0; t < nt; t++) targets[t] = W_STRIDE * t;
    TU_OK(bn_direct_reference(p, 1.0, 0.0, targets, nt, acc, pot));
    *T = *W = 0;
    for (size_t i = 0; i < p->n; i++) {
        const double v2 = p->vel[0][i] * p->vel[0][i] + p->vel[1][i] * p->vel[1][i] + p->vel[2][i] * p->vel[2][i];
        *T += 0.5 * p->mass[i] * v2;
    }
    for (size_t t = 0; t < nt; t++) *W += 0.5 * p->mass[targets[t]] * pot[t];
    *W *= (double)p->n / (double)nt;
    free(targets);
    free(acc);
    free(pot);
}

static void check_equilibrium(const char *name, bn_ic_model model, mass_fn mass)
{
    bn_particles *p = generate(model, N_BIG, 0);
    check_profile(name, p, mass, 1.0);
    double T, W;
    energies(p, &T, &W);
    printf("%-15s 2T/|W| = %.4f (T = %.5f, W = %.5f, E = %.5f)\n", name, 2 * T / fabs(W), T, W, T + W);
    TU_NEAR(2 * T / fabs(W), 1.0, 0.02);
    if (model == BN_IC_PLUMMER) TU_NEAR(T + W, -0.25, 0.03);
    bn_particles_free(p);
}

static void test_plummer(void **state)
{
    (void)state;
    check_equilibrium("plummer", BN_IC_PLUMMER, plummer_mass);
}

static void test_hernquist(void **state)
{
    (void)state;
    check_equilibrium("hernquist", BN_IC_HERNQUIST, hernquist_mass);
}

static void test_nfw(void **state)
{
    (void)state;
    check_equilibrium("nfw", BN_IC_NFW, nfw_mass);
}

static void test_uniform_sphere(void **state)
{
    (void)state;
    bn_particles *p = generate(BN_IC_UNIFORM_SPHERE, N_BIG, 0);
    check_profile("uniform-sphere", p, sphere_mass, 1.0);
    bn_particles_free(p);
    p = generate(BN_IC_UNIFORM_SPHERE, N_BIG, 0.5);
    double T, W;
    energies(p, &T, &W);
    printf("%-15s Q = 0.5 requested: 2T/|W| = %.4f\n", "uniform-sphere", 2 * T / fabs(W));
    TU_NEAR(2 * T / fabs(W), 0.5, 0.02);
    bn_particles_free(p);
}

/* A cube of half-side h = 3: the ball of radius r < h holds
 * (4 pi/3) r^3 / (2h)^3 of the mass (0.52 at r = h), so the half-mass
 * radius is h (3/pi)^(1/3). Beyond h the formula does not hold. */
static double cube_mass(double r) { return 4 * M_PI / 3 * r * r * r / 216; }

static void test_uniform_cube(void **state)
{
    (void)state;
    bn_particles *p = generate(BN_IC_UNIFORM_CUBE, N_BIG, 0);
    check_profile("uniform-cube", p, cube_mass, 0.6);
    TU_NEAR(radius_of(cube_mass, 0.5), 3 * cbrt(3 / M_PI), 1e-12);
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plummer),        cmocka_unit_test(test_hernquist), cmocka_unit_test(test_nfw),
        cmocka_unit_test(test_uniform_sphere), cmocka_unit_test(test_uniform_cube),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
