/* Finite forces in, finite forces out: see force_checks.h. */
#include "gravity/force_checks.h"
#include <math.h>
#include "core/error.h"

/* Coordinates whose differences overflow: beyond BN_MAX_SPAN apart, the
 * squared distances of the force (and the tree's boxes) are infinite.
 * *span gets the widest extent. */
static bn_status check_span(const bn_input_summary *s, double *span)
{
    static const char *axis = "xyz";
    *span = 0;
    for (int k = 0; k < 3; k++) {
        const double lo = s->lo[k], hi = s->hi[k];
        if (!(hi - lo < BN_MAX_SPAN))
            return bn_fail(BN_ERR_ARGUMENT, "the particles span %g in %c (from %g to %g): beyond %g squared "
                           "distances overflow", hi - lo, axis[k], lo, hi, BN_MAX_SPAN);
        *span = fmax(*span, hi - lo);
    }
    return BN_OK;
}

/* The CPU tree's multipole terms in double (the GPU walk rescales its
 * floats): a cell's d.Q.d grows as M S^4 and its far-field terms as
 * m / eps^7; beyond ~1e290 they overflow and the forces turn NaN
 * (coordinates of 1e80, masses of 1e300). Direct summation has no such
 * terms. Compared in logarithms, which cannot overflow. */
#define BN_TREE_LOG10_MAX 290.0
static bn_status check_tree_range(const bn_gravity_params *g, double M, double span)
{
    if (g->method != BN_METHOD_TREE || !(M > 0) || !(span > 0)) return BN_OK;
    const double big = log10(M) + 4 * log10(span);
    if (!(big < BN_TREE_LOG10_MAX))
        return bn_fail(BN_ERR_ARGUMENT, "the tree's quadrupole terms overflow: total mass %g and span %g give M S^4 = "
                       "1e%.0f (at most 1e%.0f); use direct summation or smaller units", M, span, big,
                       BN_TREE_LOG10_MAX);
    const double eps = g->softening;
    if (eps > 0 && !(log10(M) - 7 * log10(eps) < BN_TREE_LOG10_MAX))
        return bn_fail(BN_ERR_ARGUMENT, "the tree's far-field terms overflow: total mass %g and softening %g give "
                       "M / eps^7 = 1e%.0f (at most 1e%.0f); use larger units", M, eps, log10(M) - 7 * log10(eps),
                       BN_TREE_LOG10_MAX);
    return BN_OK;
}

bn_status bn_force_inputs_judge(const bn_gravity_params *g, const bn_particles *p, const bn_input_summary *sum)
{
    const char *what = "force computation";
    if (sum->first_bad < p->n) return bn_particles_fault(p, sum->first_bad, what);
    const double M = sum->mass, eps = g->softening;
    if (!(M > 0.0 && isfinite(M)))
        return bn_fail(BN_ERR_ARGUMENT, "%s: total mass is %g (must be finite and > 0)", what, M);
    double span = 0;
    BN_TRY(check_span(sum, &span));
    if (!isfinite(g->G * M))
        return bn_fail(BN_ERR_ARGUMENT, "G = %g times the total mass %g overflows: the forces cannot be finite", g->G,
                       M);
    if (!isfinite(eps * eps))
        return bn_fail(BN_ERR_ARGUMENT, "softening %g: its square overflows", eps);
    /* |a| <= G M / eps^2 for Plummer softening: finite when that is */
    if (eps > 0 && !isfinite(g->G * M / (eps * eps)))
        return bn_fail(BN_ERR_ARGUMENT, "G M / eps^2 = %g x %g / %g^2 overflows: the accelerations cannot be finite",
                       g->G, M, eps);
    return check_tree_range(g, M, span);
}

bn_status bn_force_inputs_check(const bn_gravity_params *g, const bn_particles *p)
{
    bn_input_summary sum;
    BN_TRY(bn_summarize_particles(p, &sum));
    return bn_force_inputs_judge(g, p, &sum);
}

bn_status bn_force_outputs_check(const bn_gravity_params *g, const bn_particles *p, size_t first_bad)
{
    if (first_bad >= p->n) return BN_OK;
    bn_particles_forces_fault(p, first_bad, "forces");
    if (g->softening > 0)
        return bn_fail_context(BN_ERR_ARGUMENT, "the forces are not finite (G = %g, softening %g, total mass %g, %s)",
                               g->G, g->softening, bn_particles_total_mass(p), bn_method_name(g->method));
    return bn_fail_context(BN_ERR_ARGUMENT, "the forces overflow: without softening, particles closer than about "
                           "1e-100 give infinite forces (set a softening > 0)");
}
