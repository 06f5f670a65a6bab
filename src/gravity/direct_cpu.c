/* Direct summation in double precision: the reference of every force. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "gravity/gravity_cpu.h"
#include "gravity/interact.h"

/* Force at (xi, yi, zi) from every particle of p but `skip` (the target
 * itself; p->n or more: none). */
static void direct_at(const bn_particles *p, double xi, double yi, double zi, size_t skip, double eps2,
                      double out[4])
{
    double ax = 0, ay = 0, az = 0, phi = 0;
    const double *x = p->pos[0], *y = p->pos[1], *z = p->pos[2], *m = p->mass;
    const size_t cut = skip < p->n ? skip : p->n;
    /* Two loops around the skipped one instead of a branch keep the inner
     * loop vectorisable. */
    for (size_t j = 0; j < cut; j++) bn_pp_d(x[j] - xi, y[j] - yi, z[j] - zi, m[j], eps2, &ax, &ay, &az, &phi);
    for (size_t j = cut + 1; j < p->n; j++)
        bn_pp_d(x[j] - xi, y[j] - yi, z[j] - zi, m[j], eps2, &ax, &ay, &az, &phi);
    out[0] = ax;
    out[1] = ay;
    out[2] = az;
    out[3] = phi;
}

/* Force on target i of p (itself skipped). */
static void direct_one(const bn_particles *p, size_t i, double eps2, double out[4])
{
    direct_at(p, p->pos[0][i], p->pos[1][i], p->pos[2][i], i, eps2, out);
}

static bn_status direct_check(const bn_particles *p, double G, double eps)
{
    if (!p || p->n == 0) return bn_fail(BN_ERR_ARGUMENT, "direct summation: no particles");
    if (!(G > 0) || !(eps >= 0) || !isfinite(eps))
        return bn_fail(BN_ERR_ARGUMENT, "direct summation: G = %g and eps = %g must be > 0 and >= 0", G, eps);
    return BN_OK;
}

bn_status bn_direct_forces_cpu(const bn_particles *p, double G, double eps, double *acc[3], double *pot)
{
    BN_TRY(direct_check(p, G, eps));
    const double eps2 = eps * eps;
    const long n = (long)p->n;
#pragma omp parallel for schedule(dynamic, 64)
    for (long i = 0; i < n; i++) {
        double f[4];
        direct_one(p, (size_t)i, eps2, f);
        for (int k = 0; k < 3; k++) acc[k][i] = G * f[k];
        pot[i] = G * f[3];
    }
    return BN_OK;
}

bn_status bn_direct_reference(const bn_particles *p, double G, double eps, const size_t *targets,
                              size_t n_targets, double *acc_out, double *pot_out)
{
    BN_TRY(direct_check(p, G, eps));
    if (!targets) n_targets = p->n;
    if (!acc_out || !pot_out) return bn_fail(BN_ERR_ARGUMENT, "bn_direct_reference: output arrays are NULL");
    for (size_t t = 0; targets && t < n_targets; t++)
        if (targets[t] >= p->n)
            return bn_fail(BN_ERR_ARGUMENT, "bn_direct_reference: target %zu is index %zu >= n = %zu", t,
                           targets[t], p->n);
    const double eps2 = eps * eps;
    const long nt = (long)n_targets;
#pragma omp parallel for schedule(dynamic, 16)
    for (long t = 0; t < nt; t++) {
        double f[4];
        direct_one(p, targets ? targets[t] : (size_t)t, eps2, f);
        for (int k = 0; k < 3; k++) acc_out[3 * t + k] = G * f[k];
        pot_out[t] = G * f[3];
    }
    return BN_OK;
}

bn_status bn_direct_at_points(const bn_particles *p, double G, double eps, const double *x, const size_t *skip,
                              size_t n, double *acc_out, double *pot_out)
{
    if (!p || !(G > 0) || !(eps >= 0) || !isfinite(eps))
        return bn_fail(BN_ERR_ARGUMENT, "direct summation at points: no particles, or G = %g, eps = %g", G, eps);
    const double eps2 = eps * eps;
    const long nt = (long)n;
#pragma omp parallel for schedule(dynamic, 16)
    for (long t = 0; t < nt; t++) {
        double f[4];
        direct_at(p, x[3 * t], x[3 * t + 1], x[3 * t + 2], skip[t], eps2, f);
        for (int k = 0; k < 3; k++) acc_out[3 * t + k] = G * f[k];
        pot_out[t] = G * f[3];
    }
    return BN_OK;
}
