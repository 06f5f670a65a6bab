/* The self-tuned tree rebuild of block steps (TimeIntegration:tree_rebuild
 * 0): GOTHIC's rule (paper 001 sec. 2.6), as a pure function of the costs
 * each step reports, so that its decisions can be tested with made-up
 * costs (tests/test_rebuild_tuner.c).
 *
 * Between two rebuilds the tree is only refreshed, and every walk on it
 * costs more than on a fresh tree as its cells grow. Over an interval of
 * n steps the mean cost is (t_make + sum_i w_i) / n, t_make what a rebuild
 * costs beyond a refresh and w_i the walks; for a walk that grows
 * linearly, w_i = w_1 + (i - 1) s, the mean is least where the walks'
 * excess over a fresh tree, n (n - 1) s / 2, reaches t_make, i.e. at
 * n ~ sqrt(2 t_make / s). So: rebuild once the summed excess will reach
 * the rebuild's cost with the next step's, from a linear fit of the
 * excess so far (the best integer interval). The excess of a step is its
 * walk's cost minus a fresh tree's per active particle at the same first active bin (bins >= bin_min
 * are active: the active set, and how well the walk fills the machine,
 * depend on it) times the step's active count.
 *
 * Two ways to weigh the costs (bn_integrator_params.rebuild_cost), one
 * rule for both:
 *
 *   work (BN_TUNE_WORK): counted work, bn_rebuild_step_work: the walk's
 *     flops from its interaction counts plus its traversal, the cells it
 *     visited weighed as BN_FLOPS_VISIT flops each (a refreshed tree's
 *     walk spends its extra time there: before issue 19's session 25 the
 *     flops alone were weighed, and that rule lost 2-8x on M31 and
 *     GOTHIC's NFW on an H100, BENCHMARKS.md session 20); a rebuild
 *     BN_REBUILD_WORK_PER_PARTICLE per particle beyond a refresh.
 *     Deterministic: the counts are integers, summed exactly, so the
 *     same run makes the same decisions, and bits, every time.
 *
 *   time (BN_TUNE_TIME): measured seconds (device event times on the GPU,
 *     wall times on the CPU; the slowest rank's). A rebuild's cost is its
 *     tree time outside the walk (bbox, keys, sort, build, moments,
 *     groups) minus a refresh's (the refresh recomputes moments and group
 *     boxes too: only the difference is saved by refreshing); before any
 *     refresh has been measured, the build's moments and groups stand in
 *     for the refresh's time. Not bit-reproducible: two runs may rebuild
 *     at different steps, and so give different bits (each within the
 *     tree's error).
 *
 * Steps differ. A step of a coarse first active bin has many times the
 * active particles of the finest's, but its walk's excess relative to
 * its fresh walk is smaller (most of its particles move slowly), and the
 * excess may grow faster than linearly with the refreshes. So the next
 * step's excess is foreseen from its own bin: rho1_b k^p F, with F that
 * step's fresh walk cost (its bin's fresh cost per particle times the
 * bin's last active count), k its refreshes since the build, rho1_b the
 * relative excess of first refreshes at its bin (where none was seen,
 * the nearest finer bin's, which moves faster: a dearer guess; where no
 * finer one has any, the nearest coarser bin's) and p
 * the growth's power, measured at later refreshes against the same
 * tree's earlier one at their bin, else against their bin's rho1 (1,
 * GOTHIC's linear growth, until measured); times this tree's
 * excess so far over what was foreseen of it (a tree that grows slower
 * or faster than the last ones: noise about no growth foresees none).
 * A first refresh at
 * the finest occupied bin is not foreseen: it is the probe below, which
 * measures rho1 anew, so that a quieter distribution is noticed.
 * Before session 27 the rule extrapolated the excess so far linearly
 * over equal steps: the first refresh after a rebuild came blind (often
 * a step of 7.5 M active particles), and after one refresh of the
 * finest bin the next step's excess came 4 times the first's where the
 * rule saw 2; on M31 at 2^23 on an H100 it was 8-23% slower than
 * rebuilding at every step (BENCHMARKS.md, session 27).
 *
 * Noise (time) and variation (both): every cost is the median of the
 * last BN_REBUILD_SAMPLES samples (one slow or fast outlier moves
 * nothing), and the excess is summed with its sign (noise averages out
 * instead of piling up as only its positive half would), floored at 0.
 *
 * Where the first refresh after a rebuild already costs more excess than
 * a rebuild, an interval of 2 is slower than 1, and so is any longer one
 * (the excess only grows): the tuner then rebuilds at every step and
 * probes with a single refresh after `hold` rebuilds, to notice when the
 * distribution quiets down. The hold makes the probe's loss (its excess)
 * BN_REBUILD_PROBE_SHARE (0.2%) of the held steps' cost, each taken as
 * the probe step's with a rebuild (a step of the finest bin, the
 * cheapest: so the share is lower still), between BN_REBUILD_PROBE_MIN
 * and BN_REBUILD_PROBE_MAX steps. A probe that passes ends the holds. A
 * probe waits for a step of only the finest occupied bin (the fewest
 * active particles), unless the last one passed. Holds that doubled from
 * 4 (session 25: up to 256, by each probe's growth) left 6-8 probes in
 * 512 steps, 1.2-1.7% slower than rebuilding at every step where a
 * refresh costs several rebuilds (M31 with bonsai-box and GOTHIC's NFW
 * at 2^24 on an H100, BENCHMARKS.md session 26). A distribution that
 * quiets down is then noticed within one hold (M31: about 500 steps;
 * Plummer, whose refresh almost pays: about 125). A share of 0.5% left
 * M31, GOTHIC's NFW and Plummer 0.5-0.7% slower than every-step
 * rebuilds over 512 steps (session 26). */
#ifndef BN_REBUILD_TUNER_H
#define BN_REBUILD_TUNER_H
#include "banyan.h"
#include "integrate/timebins.h"

#define BN_REBUILD_SAMPLES 3     /* costs are medians of this many        */
#define BN_REBUILD_PROBE_SHARE 0.002 /* a failed probe's loss: at most this
                                        share of the steps it holds    */
#define BN_REBUILD_PROBE_MIN 4       /* the hold after a failed probe: at
                                        least this many rebuilds, ...  */
#define BN_REBUILD_PROBE_MAX 1024    /* ... at most this many          */
#define BN_REBUILD_PROBE_PASSED 1    /* probe_every after a passed probe */
#define BN_REBUILD_QUIET_TAIL 16     /* a hold's last steps, recorded (its
                                        earlier ones are not read)      */
#define BN_REBUILD_RHO_MIN 0.05      /* relative excesses that give the
                                        growth's power: above this     */
#define BN_REBUILD_LEAD_DECAY 0.125  /* the weight of the newest interval
                                        in the builds' lead (below)    */

/* The last few samples of a cost, the newest at [0]. */
typedef struct bn_recent_costs {
    double v[BN_REBUILD_SAMPLES];
    int n;
} bn_recent_costs;

/* All zero: a tuner that knows nothing yet (bn_simulation's calloc). It
 * is saved whole in restart files. */
typedef struct bn_rebuild_tuner {
    /* walk cost per active particle on a fresh tree, by first active bin */
    bn_recent_costs fresh[BN_TIME_BINS_MAX];
    bn_recent_costs make;    /* a rebuild's cost beyond a refresh          */
    bn_recent_costs refresh; /* a refresh's tree time (no walk; work: 0)   */
    double excess;           /* the refreshed walks' excess since the build */
    long refreshes;          /* refreshes since the last rebuild           */
    long hold;               /* rebuilds to go before the next probe       */
    long probe_every;        /* the hold after the last failed probe;
                                BN_REBUILD_PROBE_PASSED: the last probe
                                passed; 0: no probe yet                    */
    long probes_failed;      /* first refreshes that cost more than a
                                rebuild (diagnostics, tests)               */
    double active[BN_TIME_BINS_MAX]; /* the last active count at each first
                                        active bin: the next such step's   */
    bn_recent_costs rho1[BN_TIME_BINS_MAX]; /* a first refresh's excess over
                                               its fresh walk's cost, by bin */
    bn_recent_costs power;   /* p of the excess' growth, k^p, from later
                                refreshes against this tree's earlier one
                                at their bin, else the bin's rho1        */
    double foreseen;         /* this tree's refreshes' excess as foreseen:
                                excess / foreseen scales the next one     */
    double last_rho[BN_TIME_BINS_MAX]; /* this tree's last refresh at each
                                          bin: its relative excess, ...   */
    long last_k[BN_TIME_BINS_MAX];     /* ... its number (0: none)        */
    /* The steps a build's tree will serve, for its lead (tree/
     * refresh_lag.h): the intervals the trees the rule built unheld
     * served so far (cycle ends cut some short), weighted by their
     * length (decaying means of k^2 and of k) */
    double lead_k2, lead_k;
    long lead_open;          /* the current tree's interval counts (its
                                build was not held); long: no padding in
                                the saved struct                          */
} bn_rebuild_tuner;

/* One step's costs, every rank's (times: the slowest rank's; work: the
 * counts' sums, bn_rebuild_step_work). */
typedef struct bn_rebuild_step {
    int bin_min;     /* the step's first active bin                          */
    int rebuilt;     /* the step built a new tree (else refreshed it)        */
    double n_active; /* particles whose forces were computed (> 0)           */
    double walk;     /* the walk's cost: seconds, or work                    */
    double tree;     /* the step's tree time outside the walk (work: a
                        rebuild's beyond a refresh, 0 for a refresh)         */
    double kept;     /* rebuilt steps: the part of `tree` a refresh also
                        pays (moments and groups; work: 0)                   */
    int refused;     /* rebuilt because the backend refused the refresh the
                        tuner chose (its groups had grown: refresh_guard.h) */
} bn_rebuild_step;

/* Whether the next step, whose first active bin is bin_min, should
 * rebuild (a cycle's end, when every particle is active, rebuilds anyway:
 * the caller's). A rebuild is also asked for where the tuner cannot judge
 * a refresh yet, before it has recorded a rebuild or a fresh tree's walk
 * at bin_min (at most one rebuild per bin: otherwise a run's first cycle
 * would refresh blindly until its end, and a bin never rebuilt would
 * never be judged). finest: the finest bin occupied now (the step's
 * length is its step), where a probe is cheapest. */
int bn_rebuild_tuner_wants(const bn_rebuild_tuner *t, int bin_min, int finest);
/* After a step's forces. */
void bn_rebuild_tuner_record(bn_rebuild_tuner *t, const bn_rebuild_step *s);
/* A step's costs under the work rule: count = the walk's n_pp, n_pc,
 * n_far and n_visit (every rank's), n_global every rank's particles. */
bn_rebuild_step bn_rebuild_step_work(int bin_min, int rebuilt, double n_active, const double count[4], double n_global);
/* A rebuild's cost as the tuner weighs it (its median); -1 before
 * the first rebuild was recorded. */
double bn_rebuild_tuner_make(const bn_rebuild_tuner *t);
/* At a rebuild the rule decided: the steps the new tree will serve, of
 * which its lead is half (tree/refresh_lag.h). 1 while the rule holds
 * (the next step rebuilds too); else the mean interval weighted by
 * length, sum k^2 / sum k over the intervals of the trees it built
 * unheld (decaying by BN_REBUILD_LEAD_DECAY each): the refreshes' lag
 * then does no net work over intervals of varying length to first order
 * (the work of an interval of k steps led by (K - 1) dt / 2 is
 * k (k - K) dt / 2 times the lag's power), where the last interval
 * alone, as a tree_rebuild N takes N, leaves the long intervals' work
 * after short ones (CPU traces of M31 under the counted rule: intervals
 * of 2 to 20 steps, 3-10x less net work). `ended`: the steps the tree
 * this build replaces served, recorded first where its build was not
 * held (a tree the backend built on its own, after a refused refresh or a
 * new cut, counts in the interval of the one it replaced); the estimate
 * until one is recorded. */
double bn_rebuild_tuner_lead_steps(bn_rebuild_tuner *t, long ended);
/* Before held rebuilds that do not call bn_rebuild_tuner_lead_steps (the
 * quiet batches): the current tree's interval, `ended` steps, ends. */
void bn_rebuild_tuner_close_interval(bn_rebuild_tuner *t, long ended);
#endif
