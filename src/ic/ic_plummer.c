/*
 * Plummer sphere by the method of Aarseth, Henon & Wielen (1974, A&A 37,
 * 183, appendix), in Henon units: M = 1, G = 1, E = -1/4, so the scale
 * radius is a = 3 pi / 16 and the velocity unit sqrt(16 / (3 pi)) in units
 * of sqrt(G M / a).
 *
 * Truncation: the mass fraction X1 is drawn uniformly in (0, 0.999)
 * (IC_PLUMMER_MASS_CUT) instead of rejecting large radii, so r < 38.7 a
 * (22.8 Henon units) and every particle uses a fixed set of draws.
 *
 * Draws per particle: 0 mass fraction, 1-2 position direction, 3-4
 * velocity direction, 5 on the von Neumann rejection of q = v / v_esc.
 */
#include <math.h>
#include "core/error.h"
#include "core/rng.h"
#include "ic/ic_internal.h"

#define PLUMMER_TRIES 10000

/* q = v / v_esc has density proportional to g(q) = q^2 (1 - q^2)^(7/2) on
 * [0, 1], whose maximum 0.092 is bounded by 0.1 (AHW 1974). Returns -1 if
 * no draw was accepted (probability ~ 0.8^10000). */
static double plummer_q(uint64_t seed, uint64_t i)
{
    for (uint64_t t = 0; t < PLUMMER_TRIES; t++) {
        const double q = bn_rng_uniform(seed, i, 5 + 2 * t), y = 0.1 * bn_rng_uniform(seed, i, 6 + 2 * t);
        if (y < q * q * pow(1 - q * q, 3.5)) return q;
    }
    return -1;
}

bn_status ic_plummer(const bn_ic_params *prm, bn_particles *p)
{
    const double a = 3 * M_PI / 16, vscale = sqrt(16 / (3 * M_PI));
    const long n = (long)p->n;
    const double m = 1.0 / (double)p->n;
    int failed = 0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        const uint64_t id = (uint64_t)i;
        double x[3], v[3];
        /* Invert M(r) = r^3 / (1 + r^2)^(3/2) (a = 1). */
        const double x1 = IC_PLUMMER_MASS_CUT * bn_rng_uniform(prm->seed, id, 0);
        const double r = 1 / sqrt(pow(x1, -2.0 / 3.0) - 1);
        const double q = plummer_q(prm->seed, id);
        if (q < 0) {
#pragma omp atomic write
            failed = 1;
        }
        /* v_esc = sqrt(2) (1 + r^2)^(-1/4) in units of sqrt(G M / a). */
        const double speed = q * sqrt(2.0) * pow(1 + r * r, -0.25);
        ic_isotropic(prm->seed, id, 1, a * r, x);
        ic_isotropic(prm->seed, id, 3, vscale * speed, v);
        ic_store3(p->pos, (size_t)i, x);
        ic_store3(p->vel, (size_t)i, v);
        p->mass[i] = m;
    }
    if (failed) return bn_fail(BN_ERR_INTERNAL, "plummer: velocity rejection sampling did not converge");
    return BN_OK;
}
