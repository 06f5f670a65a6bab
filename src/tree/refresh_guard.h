/* Block steps between rebuilds refresh the last tree for the moved
 * particles (moments and group boxes anew, structure and order kept).
 * A refresh is only worth it while the groups keep roughly their size: a
 * walk's cost grows with its group's box (the cells near it are opened
 * down to the leaves), and a group whose members have scattered opens
 * most of the tree. The self-tuned rebuild (integrate/rebuild_tuner.h)
 * sees a walk's cost only after paying it; in a cold collapse at 2^24 on
 * an H100 one refresh after the bounce, a probe, walked 2.6e15 flops in
 * 94 s against 34 ms for a fresh tree (BENCHMARKS.md session 26): the
 * core's particles cross its leaves many times over in one finest step.
 *
 * So each refresh measures its groups' growth since the build, the body
 * weighted mean of (size / built size)^3 (size: a group box's largest
 * half side), and a refresh whose mean exceeds BN_REFRESH_GROWTH_MAX is
 * refused: the backend rebuilds instead, before walking. A group twice
 * its built size walks about twice the cells a fresh one does (the
 * pp region around a box of side h reaches about 1.5 leaf sizes, ~h/2,
 * beyond it: (2h + 3h/2)^3 / (h + 3h/2)^3 = 2.7 in volume, less in
 * practice), which costs more than a rebuild on every input measured
 * (a rebuild is 0.15-1 fresh walk), and the self-tuned rule's own excess
 * rebuilds long before quiet groups double. Used by both backends (the
 * exact half widths of their own coordinates: double on the CPU, the
 * GPU's float bodies with their lo parts, which may round a case at the
 * threshold differently). The sum is integers (each term rounded down to
 * 1/BN_REFRESH_GROWTH_UNIT, capped at BN_REFRESH_GROWTH_CAP, so that a few
 * scattered groups do not refuse a refresh alone): exact in any order,
 * so the decision is the same at every run. Each rank judges its own
 * tree (a rank may rebuild while others refresh; the tuner then counts
 * the step as a rebuild on every rank). */
#ifndef BN_REFRESH_GUARD_H
#define BN_REFRESH_GUARD_H
#include "core/hostdevice.h"

#define BN_REFRESH_GROWTH_MAX 8.0        /* mean (size / built size)^3  */
#define BN_REFRESH_GROWTH_UNIT 64.0      /* a term's resolution          */
#define BN_REFRESH_GROWTH_CAP 4096.0     /* a term's largest ratio^3: one
                                            group of a scattered few (an
                                            escaper's) cannot refuse a
                                            refresh alone                 */

/* One group's term: n bodies, its largest half side now and at the build. */
BN_HD unsigned long long bn_refresh_growth_term(double size, double built, int n)
{
    double r3 = 1.0; /* not grown (or a box of coincident bodies that stayed so) */
    if (size > built) {
        const double r = built > 0 ? size / built : BN_REFRESH_GROWTH_CAP;
        r3 = r * r * r < BN_REFRESH_GROWTH_CAP ? r * r * r : BN_REFRESH_GROWTH_CAP; /* inf too */
    }
    return (unsigned long long)(r3 * BN_REFRESH_GROWTH_UNIT) * (unsigned long long)(n > 0 ? n : 0);
}

/* Whether the summed terms of n bodies refuse the refresh, above the
 * mean `max` (bn_refresh_growth_max()). */
BN_HD int bn_refresh_refused(unsigned long long sum, double n, double max)
{
    return (double)sum > max * BN_REFRESH_GROWTH_UNIT * n;
}

/* The mean above which a refresh is refused: BN_REFRESH_GROWTH_MAX, or
 * the environment's BANYAN_REFRESH_GROWTH_MAX (a testing aid, >= 1: small
 * test runs never scatter their groups that far, and a lower bound makes
 * them refuse refreshes, so that tests/cli_restart.sh and cli_run_mpi.sh
 * see refusals continue bit for bit). Host code (tree_groups.c). */
#ifdef __cplusplus
extern "C" {
#endif
double bn_refresh_growth_max(void);
/* The judgment of a tree's summed growth terms (sum, n bodies) against
 * bn_refresh_growth_max(), for both backends: whether it is refused, its
 * mean growth into *mean, traced as `what` (BANYAN_GRAVITY_TRACE). */
int bn_refresh_judge(unsigned long long sum, double n, const char *what, double *mean);
#ifdef __cplusplus
}
#endif
#endif
