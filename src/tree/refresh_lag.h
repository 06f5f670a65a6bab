/* Block steps refresh the last build's tree between rebuilds, and a
 * refreshed tree's cells are those of the positions at the build: the
 * force error then depends on where the particles were, x - v lag, not
 * only on where they are. That part of the error is odd in the velocity
 * and does work on the particles steadily, as a friction would (of the
 * opposite sign): measured on a Hernquist sphere (scripts/experiments/
 * refresh_lag.c, BENCHMARKS.md session 29), its power grows linearly with
 * the lag and with N (+1.3e-6 |E| per unit time at 2^18 for a lag of
 * 1/512), and a tree built from positions ahead, x + v lag, gives about
 * the opposite. Rebuilt every other step, the energy drifted 10x faster
 * than rebuilt at every step (5.3e-6 against 5.1e-7 at t = 2).
 *
 * So a build whose tree will be refreshed takes its structure (keys,
 * cells, groups) from the positions half its refreshes ahead, x + tau v
 * with tau = (k - 1) dt / 2 for k steps of dt until the next build, and
 * its moments and boxes from x, as a refresh does: the lags then run
 * from -tau to +tau and their work cancels to first order (the same run:
 * 6.2e-7). Both backends predict with this one function. */
#ifndef BN_TREE_REFRESH_LAG_H
#define BN_TREE_REFRESH_LAG_H
#include <math.h>
#include "core/hostdevice.h"

/* The position a build's keys take: x + tau v, or x where that
 * overflows (a finite but enormous velocity must not turn a valid set
 * into a cube the keys refuse). */
BN_HD double bn_refresh_lead(double x, double v, double tau)
{
    const double y = x + tau * v;
    return isfinite(y) ? y : x;
}

/* tau for a build whose tree serves `steps` steps of dt (the build's
 * own and the refreshes until the next build; the self-tuned rule's
 * expected count need not be whole): half the refreshes' span; 0 for one
 * step (a tree rebuilt at every step), or where it is not finite. */
BN_HD double bn_refresh_tau(double steps, double dt)
{
    const double tau = steps > 1 ? 0.5 * (steps - 1) * dt : 0.0;
    return isfinite(tau) ? tau : 0.0; /* the backends take it as it is */
}
#endif
