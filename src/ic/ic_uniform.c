/*
 * Uniform sphere (radius 1, cold or with isotropic velocities at a given
 * virial ratio) and uniform cube (at rest).
 */
#include <math.h>
#include "core/error.h"
#include "core/rng.h"
#include "ic/ic_internal.h"

/* Standard normal from two draws (Box-Muller). */
static double normal(uint64_t seed, uint64_t i, uint64_t draw)
{
    const double u1 = bn_rng_uniform(seed, i, draw), u2 = bn_rng_uniform(seed, i, draw + 1);
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/*
 * Draws per particle: 0 radius, 1-2 direction, 3-8 velocity components.
 * Velocities are Gaussian, then scaled so that 2T/|W| = Q with
 * W = -(3/5) (1 - 1/N) G M^2 / R, the expected potential energy of N equal
 * point masses uniform in a sphere (the continuum -3/5 G M^2/R without the
 * N self-pairs). A uniform sphere with Q > 0 is not a steady state: the
 * ratio sets its initial kinetic energy, as in cold-collapse tests.
 */
bn_status ic_uniform_sphere(const bn_ic_params *prm, bn_particles *p)
{
    const long n = (long)p->n;
    const double m = 1.0 / (double)p->n;
    const int warm = prm->virial_ratio > 0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        const uint64_t id = (uint64_t)i;
        double x[3], v[3] = {0, 0, 0};
        ic_isotropic(prm->seed, id, 1, cbrt(bn_rng_uniform(prm->seed, id, 0)), x);
        for (int k = 0; warm && k < 3; k++) v[k] = normal(prm->seed, id, 3 + 2 * (uint64_t)k);
        ic_store3(p->pos, (size_t)i, x);
        ic_store3(p->vel, (size_t)i, v);
        p->mass[i] = m;
    }
    if (!warm) return BN_OK;
    double T;
    BN_TRY(ic_centre(p));
    BN_TRY(ic_kinetic(p, &T));
    if (!(T > 0)) return BN_OK; /* n = 1: no motion relative to the centre of mass */
    const double W = -0.6 * (1 - m);
    const double s = sqrt(prm->virial_ratio * fabs(W) / (2 * T));
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) p->vel[k][i] *= s;
    return BN_OK;
}

/* Draws per particle: 0-2 coordinates, 3 mass (with mass_spread). */
bn_status ic_uniform_cube(const bn_ic_params *prm, bn_particles *p)
{
    const long n = (long)p->n;
    const double h = prm->cube_half_size, m = 1.0 / (double)p->n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        const uint64_t id = (uint64_t)i;
        for (int k = 0; k < 3; k++) {
            p->pos[k][i] = h * (2 * bn_rng_uniform(prm->seed, id, (uint64_t)k) - 1);
            p->vel[k][i] = 0;
        }
        p->mass[i] = prm->mass_spread ? m * bn_rng_uniform(prm->seed, id, 3) : m;
    }
    return BN_OK;
}
