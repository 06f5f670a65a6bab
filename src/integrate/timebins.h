/*
 * Block (hierarchical) time steps: the per-particle rules, one inline
 * function for the CPU and for CUDA, so that both backends put every
 * particle in the same bin from the same acceleration.
 *
 * A cycle of length D (the longest step, TimeIntegration:dt, shortened to
 * land on output times) runs from one full synchronisation to the next.
 * It is cut into 2^(K-1) ticks (K = time_bins); a particle in bin b takes
 * steps of 2^(K-1-b) ticks = D / 2^b. A particle is active at tick t (it
 * ends a step there) when its step divides t, i.e. when b >= the
 * tick's smallest active bin (bn_time_bin_min_active): the active set is
 * always "every bin from some b up", one integer on both backends.
 *
 * Scheme (GADGET-2's block KDK): at a tick where particle i is active it
 * receives the closing half kick of its old step (v += a dt_old / 2),
 * chooses its new bin from its new acceleration, and the opening half
 * kick of the new step (v += a dt_new / 2); all particles drift between
 * ticks. A particle may move to a finer bin at any of its ticks, to a
 * coarser one only where that bin's steps begin (b >= the tick's smallest
 * active bin), so that every step ends on a tick.
 */
#ifndef BN_TIMEBINS_H
#define BN_TIMEBINS_H
#include <math.h>
#include "banyan.h"
#include "core/hostdevice.h"

#define BN_TIME_BINS_MAX 30 /* 2^29 ticks per cycle at most (int ticks) */

/* What a block kick does (bn_backend_ops.block_kick). */
typedef struct bn_block_kick {
    int bin_min;    /* particles in bins >= bin_min are active               */
    int close;      /* give them the closing half kick of their old step     */
    int open;       /* choose their new bin and give the opening half kick   */
    int n_bins;     /* K                                                     */
    double tick;    /* seconds per tick: D / 2^(K-1)                         */
    double eta;     /* step criterion dt_i = eta sqrt(eps / |a_i|)           */
    double eps;
    int criterion;  /* bn_step_criterion: ... or eta sqrt(|phi_i|) / |a_i|    */
} bn_block_kick;

/* Ticks per step of bin b. */
BN_HD int bn_time_bin_ticks(int b, int n_bins) { return 1 << (n_bins - 1 - b); }

/* Half of bin b's step in seconds: the kick v += a * this. For K = 1 it
 * is 0.5 * D, as the shared step's kick(dt / 2). */
BN_HD double bn_time_bin_half_step(int b, int n_bins, double tick)
{
    return 0.5 * (tick * (double)bn_time_bin_ticks(b, n_bins));
}

/* Smallest active bin at tick t of a cycle of 2^(K-1) ticks (t >= 1):
 * bin b is active when 2^(K-1-b) divides t; at the cycle's end (and
 * start) every bin is. */
BN_HD int bn_time_bin_min_active(int t, int n_bins)
{
    const int ticks = 1 << (n_bins - 1);
    if (t % ticks == 0) return 0;
    int tz = 0;
    while (((t >> tz) & 1) == 0) tz++;
    return n_bins - 1 - tz;
}

/* The step a particle with |a|^2 = a2 and potential phi asks for under
 * k's criterion (bn_step_criterion): eta sqrt(eps / |a|), or its local
 * dynamical time eta sqrt(|phi|) / |a|; infinite without an acceleration.
 * sqrt is correctly rounded on both backends: equal inputs, equal steps. */
BN_HD double bn_time_step_wanted(const bn_block_kick *k, double a2, double phi)
{
    if (!(a2 > 0)) return INFINITY;
    if (k->criterion == 1) return k->eta * sqrt(fabs(phi)) / sqrt(a2);
    return k->eta * sqrt(k->eps / sqrt(a2));
}

/* The bin of a particle that asks for step dt: the coarsest b >= bin_min
 * whose step D / 2^b does not exceed dt, at most K - 1. Halving is exact
 * in binary floating point, so equal inputs give equal bins. */
BN_HD int bn_time_bin(double dt, double tick, int n_bins, int bin_min)
{
    int b = bin_min;
    double step = tick * (double)bn_time_bin_ticks(b, n_bins);
    while (b < n_bins - 1 && step > dt) {
        step *= 0.5;
        b++;
    }
    return b;
}
/* Block steps that refresh the tree between rebuilds (the tree method,
 * tree_rebuild 0: self-tuned, or an interval above 1; direct summation
 * has no tree): the runs whose rebuilds the host chooses and whose
 * restart files hold the tree the next refresh starts from. The one test
 * of it (the step rule, the host's choice, the restart file, the CLI's
 * notice). method: bn_gravity_params'; time_bins and tree_rebuild:
 * bn_integrator_params'. */
static inline int bn_block_steps_refresh(bn_method method, int time_bins, int tree_rebuild)
{
    return method == BN_METHOD_TREE && time_bins > 1 && tree_rebuild != 1; /* 1 bin: every step ends a cycle */
}
#endif
