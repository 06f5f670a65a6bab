/* Finite forces in, finite forces out: see force_checks.h. */
#include "gravity/force_checks.h"
#include <math.h>
#include "core/error.h"

/* Coordinates whose differences overflow: beyond BN_MAX_SPAN apart, the
 * squared distances of the force (and the tree's boxes) are infinite. */
static bn_status check_span(const bn_particles *p)
{
    static const char *axis = "xyz";
    for (int k = 0; k < 3; k++) {
        double lo = p->pos[k][0], hi = lo;
        for (size_t i = 1; i < p->n; i++) {
            lo = fmin(lo, p->pos[k][i]);
            hi = fmax(hi, p->pos[k][i]);
        }
        if (!(hi - lo < BN_MAX_SPAN))
            return bn_fail(BN_ERR_ARGUMENT, "the particles span %g in %c (from %g to %g): beyond %g squared "
                           "distances overflow", hi - lo, axis[k], lo, hi, BN_MAX_SPAN);
    }
    return BN_OK;
}

bn_status bn_force_inputs_check(const bn_gravity_params *g, const bn_particles *p)
{
    BN_TRY(check_span(p));
    const double M = bn_particles_total_mass(p), eps = g->softening;
    if (!isfinite(g->G * M))
        return bn_fail(BN_ERR_ARGUMENT, "G = %g times the total mass %g overflows: the forces cannot be finite", g->G,
                       M);
    if (!isfinite(eps * eps))
        return bn_fail(BN_ERR_ARGUMENT, "softening %g: its square overflows", eps);
    /* |a| <= G M / eps^2 for Plummer softening: finite when that is */
    if (eps > 0 && !isfinite(g->G * M / (eps * eps)))
        return bn_fail(BN_ERR_ARGUMENT, "G M / eps^2 = %g x %g / %g^2 overflows: the accelerations cannot be finite",
                       g->G, M, eps);
    return BN_OK;
}

bn_status bn_force_outputs_check(const bn_gravity_params *g, const bn_particles *p)
{
    if (bn_particles_check_forces(p, "forces") == BN_OK) return BN_OK;
    if (g->softening > 0)
        return bn_fail_context(BN_ERR_ARGUMENT, "the forces overflow (G = %g, softening %g)", g->G, g->softening);
    return bn_fail_context(BN_ERR_ARGUMENT, "the forces overflow: without softening, particles closer than about "
                           "1e-100 give infinite forces (set a softening > 0)");
}
