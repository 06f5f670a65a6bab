/*
 * Plummer sphere by the method of Aarseth, Henon & Wielen (1974, A&A 37,
 * 183, appendix), in Henon units: M = 1, G = 1, E = -1/4, so the scale
 * radius is a = 3 pi / 16 and the velocity unit sqrt(16 / (3 pi)) in units
 * of sqrt(G M / a).
 *
 * Truncation: the mass fraction X1 is drawn uniformly in (0, 0.999)
 * (IC_PLUMMER_MASS_CUT) instead of rejecting large radii, so r < 38.7 a
 * (22.8 Henon units) and every particle uses a fixed set of draws.
 */
#include <math.h>
#include "core/rng.h"
#include "ic/ic_internal.h"

#define PLUMMER_A (3 * M_PI / 16)
#define PLUMMER_TRIES 10000

/* Invert M(r) = r^3 / (1 + r^2)^(3/2) (a = 1), then to Henon units. */
static double plummer_radius(const void *ctx, double mass_fraction)
{
    (void)ctx;
    const double x1 = IC_PLUMMER_MASS_CUT * mass_fraction;
    return PLUMMER_A / sqrt(pow(x1, -2.0 / 3.0) - 1);
}

/*
 * q = v / v_esc has density proportional to g(q) = q^2 (1 - q^2)^(7/2) on
 * [0, 1], whose maximum 0.092 is bounded by 0.1 (von Neumann rejection,
 * AHW 1974); v_esc = sqrt(2) (1 + r^2)^(-1/4) sqrt(G M / a). Returns -1 if
 * no draw was accepted (probability ~ 0.8^10000).
 */
static double plummer_speed(const void *ctx, double r, uint64_t seed, uint64_t i, uint64_t draw)
{
    (void)ctx;
    const double x = r / PLUMMER_A, vscale = sqrt(16 / (3 * M_PI));
    for (uint64_t t = 0; t < PLUMMER_TRIES; t++) {
        const double q = bn_rng_uniform(seed, i, draw + 2 * t), y = 0.1 * bn_rng_uniform(seed, i, draw + 2 * t + 1);
        if (y < q * q * pow(1 - q * q, 3.5)) return vscale * q * sqrt(2.0) * pow(1 + x * x, -0.25);
    }
    return -1;
}

bn_status ic_plummer(const bn_ic_params *prm, bn_particles *p)
{
    const ic_spherical model = {"plummer", NULL, plummer_radius, plummer_speed};
    return ic_sample_spherical(prm->seed, p, 0, p->n, 1.0 / (double)p->n, &model);
}
