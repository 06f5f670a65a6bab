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
 * n ~ sqrt(2 t_make / s). So: rebuild once the summed excess reaches the
 * rebuild's cost (work), or will with the next step's, from a linear fit
 * of the excess so far (time: the best integer interval, one step
 * sooner). The excess of a step is its walk's cost minus a fresh
 * tree's per active particle at the same first active bin (bins >= bin_min
 * are active: the active set, and how well the walk fills the machine,
 * depend on it) times the step's active count.
 *
 * Two ways to weigh the costs (bn_integrator_params.rebuild_cost):
 *
 *   work (BN_TUNE_WORK): walk flops from the interaction counts, a rebuild
 *     BN_REBUILD_FLOPS_PER_PARTICLE per particle; the last fresh sample of
 *     a bin, only positive excess counted. Deterministic: the same counts
 *     give the same decisions, bit for bit, on every run (the rule banyan
 *     had before issue 19, unchanged).
 *
 *   time (BN_TUNE_TIME): measured seconds (device event times on the GPU,
 *     wall times on the CPU; the slowest rank's). Measured on an H100 the
 *     walk time on a refreshed tree grows far faster than its flops
 *     (M31 at 2^22: 6.3 ms per step rebuilding every step, 9.0 ms for the
 *     first refresh), so only measured times find where refreshing pays.
 *     A rebuild's cost is its tree time outside the walk (bbox, keys,
 *     sort, build, moments, groups) minus a refresh's (the refresh
 *     recomputes moments and group boxes too: only the difference is
 *     saved by refreshing); before any refresh has been measured, the
 *     build's moments and groups stand in for the refresh's time.
 *     Noise: every cost is the median of the last BN_REBUILD_SAMPLES
 *     samples (one slow or fast outlier moves nothing), and the excess is
 *     summed with its sign (noise averages out instead of piling up as
 *     only its positive half would), floored at 0.
 *
 *     Where the first refresh after a rebuild already costs more excess
 *     than a rebuild, an interval of 2 is slower than 1, and so is any
 *     longer one (the excess only grows): the tuner then rebuilds at every
 *     step and probes with a single refresh after `hold` rebuilds, to
 *     notice when the distribution quiets down. The hold starts at
 *     BN_REBUILD_PROBE_FIRST and grows at each probe that fails again by
 *     how many rebuilds the probe's excess was worth (at least 2), up to
 *     BN_REBUILD_PROBE_MAX (a probe that passes resets it): one noisy
 *     first refresh costs at most 4 steps without refreshes, and in a
 *     lasting every-step regime a probe costs one refresh's excess per
 *     256 steps. Doubling up to 32 was measured too dear where a refresh
 *     costs many rebuilds (M31 and GOTHIC's NFW at 2^24 on an H100: 7%
 *     slower than every step, BENCHMARKS.md session 20); a distribution
 *     that quiets down is then noticed within 256 steps (a few of the
 *     longest cycles). Not bit-reproducible:
 *     two runs may rebuild at different steps, and so give different bits
 *     (each within the tree's error). */
#ifndef BN_REBUILD_TUNER_H
#define BN_REBUILD_TUNER_H
#include "banyan.h"
#include "integrate/timebins.h"

#define BN_REBUILD_SAMPLES 3     /* costs are medians of this many        */
#define BN_REBUILD_PROBE_FIRST 4 /* rebuilds before the first probe        */
#define BN_REBUILD_PROBE_MAX 256 /* ... growing up to this many           */

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
    bn_recent_costs make;    /* time: a rebuild's cost beyond a refresh    */
    bn_recent_costs refresh; /* time: a refresh's tree time (no walk)      */
    double excess;           /* the refreshed walks' excess since the build */
    long refreshes;          /* refreshes since the last rebuild           */
    long hold;               /* time: rebuilds to go before the next probe */
    long probe_every;        /* time: the hold after a failed probe; 0:
                                BN_REBUILD_PROBE_FIRST                     */
    long probes_failed;      /* first refreshes that cost more than a
                                rebuild (diagnostics, tests)               */
} bn_rebuild_tuner;

/* One step's costs, every rank's (times: the slowest rank's; work: the
 * sums). */
typedef struct bn_rebuild_step {
    int bin_min;     /* the step's first active bin                          */
    int rebuilt;     /* the step built a new tree (else refreshed it)        */
    double n_active; /* particles whose forces were computed (> 0)           */
    double walk;     /* the walk's cost: seconds, or flops                   */
    double tree;     /* time: the step's tree time outside the walk          */
    double kept;     /* time, rebuilt steps: the part of `tree` a refresh
                        also pays (moments and groups)                       */
} bn_rebuild_step;

/* Whether the next step, whose first active bin is bin_min, should
 * rebuild (a cycle's end, when every particle is active, rebuilds anyway:
 * the caller's). work_make: a rebuild's cost in flops (work only). time:
 * a rebuild is also asked for where the tuner cannot judge a refresh yet,
 * before it has measured a rebuild or a fresh tree's walk at bin_min (at
 * most one rebuild per bin: otherwise a run's first cycle would refresh
 * blindly until its end, and a bin never rebuilt would never be judged). */
int bn_rebuild_tuner_wants(const bn_rebuild_tuner *t, bn_tune_cost cost, int bin_min, double work_make);
/* After a step's forces. */
void bn_rebuild_tuner_record(bn_rebuild_tuner *t, bn_tune_cost cost, const bn_rebuild_step *s);
/* time: a rebuild's cost as the tuner weighs it (its median); -1 before
 * the first rebuild was recorded. */
double bn_rebuild_tuner_make(const bn_rebuild_tuner *t);
#endif
