/* The self-tuned tree rebuild of block steps (TimeIntegration:tree_rebuild
 * 0): GOTHIC's idea (paper 001 sec. 2.6), an interval between rebuilds
 * chosen from the measured cost of the steps, as a pure function of the
 * costs each step reports, so that its decisions can be tested with
 * made-up costs (tests/test_rebuild_tuner.c).
 *
 * Between two rebuilds the tree is only refreshed (its moments and group
 * boxes recomputed): cheaper than a rebuild by the sort, the gathers and
 * the build, but every walk on it costs more as its cells grow, and more
 * the more particles are active. A block-step cycle of 2^f steps of its
 * finest occupied bin f has one step at each odd tick whose only active
 * bin is f (the fewest particles), one at each tick 2 mod 4 with bins f-1
 * and f, and so on. So the rule rebuilds on a period of 2^m steps aligned
 * with the cycle: at the steps whose first active bin is at most f - m,
 * the steps with the most active particles, and refreshes the tree for
 * the 2^m - 1 steps between (m = 0: every step; m = 1: every other step,
 * refreshing only for steps of the finest bin alone).
 *
 * Why not GOTHIC's rule as such (rebuild once the refreshed walks' summed
 * excess over fresh ones reaches a rebuild's cost; sessions 20-30): its
 * intervals do not follow the cycle. On M31 at 2^22 under the dynamical
 * criterion (BENCHMARKS.md session 31) it rebuilt at steps of the finest
 * bin, where a refresh costs least, and then refreshed through the steps
 * of coarser bins, where it costs most, and its varying intervals gave
 * each build a lead (tree/refresh_lag.h) of their mean, 1.4-1.6 times
 * the walk time of an every-other-step build: 15% slower than rebuilding
 * every other step with as many builds, and 7% slower than every step.
 * A period of 2^m has a known lead, 2^m steps.
 *
 * The period is chosen by measuring: a window is a cycle's steps but its
 * end (every period sees the same steps; the end step, every particle
 * active, is rebuilt under every period, and the decision at the window's
 * close comes before it, so that its build leads by the new period), its
 * cost rate the steps' summed cost over the window's simulated time. The
 * rule measures the best period so far (the reference), then a
 * neighbour (one more or one less), and keeps the neighbour where its
 * rate is lower by more than BN_REBUILD_MARGIN (then tries the next one
 * the same way); else it holds the best period for `hold_windows`
 * cycles, doubling from BN_REBUILD_HOLD_MIN to BN_REBUILD_HOLD_MAX with
 * each failed trial (a trial that loses x costs at most x / (hold + 2) of
 * the time), and tries the other neighbour next.
 *
 * Watched as it runs (bn_rebuild_tuner_record): a window's cost so far
 * is kept at BN_REBUILD_CHECKS points of the cycle (each 16th), and a
 * period that refreshes is given up, a trial failing and the best period
 * itself giving way to rebuilding at every step (from which the rule
 * climbs again), where its window is a certain loss (it already cost
 * BN_REBUILD_ABORT times the best rate over its whole cycle), where a
 * trial's rate so far is BN_REBUILD_ABORT times the best, or at a check
 * from the second on, where it is behind the best window (taken on a
 * cycle of as many steps) at the same check
 * by BN_REBUILD_BEHIND (a trial: one that loses 40% costs an eighth of a
 * cycle, not a cycle) or by BN_REBUILD_ABORT times (the best period: a
 * collapse that sets in while it is held; session 31's first version
 * held a period through a cold collapse and took 12 times as long as
 * rebuilding at every step).
 * A cycle shortened to land on an output time (its steps shorter, its
 * bins others) is in no measured window and watched for nothing.
 * A held period other than 0 is measured too: its windows keep the best
 * window current, and one that costs BN_REBUILD_DRIFT more than the
 * hold's first ends the hold in a trial of the period below (refreshes
 * turning dear slowly); where the finest bin moved, it ends the hold as
 * a reference, and a period beyond the finest bin (when it moves to a
 * coarser one) becomes the finest's.
 *
 * Two ways to weigh a step's cost (bn_integrator_params.rebuild_cost):
 *   work (BN_TUNE_WORK): counted work, bn_rebuild_step_work: the walk's
 *     flops from its interaction counts plus its cells visited, weighed
 *     as BN_FLOPS_VISIT flops each, and a rebuild's
 *     BN_REBUILD_WORK_PER_PARTICLE per particle beyond a refresh.
 *     Deterministic: the same run makes the same decisions, and bits.
 *   time (BN_TUNE_TIME): measured seconds of the walk and the tree
 *     (device event times on the GPU, wall times on the CPU; the slowest
 *     rank's). Not bit-reproducible: two runs may choose differently.
 * A period of 0 needs no read of the device within a step; the others
 * read the clock once more a step (0.5-0.9% of a step, BENCHMARKS.md
 * session 27), which the margin covers; a held period of 0 queues its
 * steps but the last in batches, reading nothing
 * (bn_rebuild_tuner_quiet_steps). */
#ifndef BN_REBUILD_TUNER_H
#define BN_REBUILD_TUNER_H
#include "banyan.h"
#include "integrate/timebins.h"

#define BN_REBUILD_MARGIN 0.01   /* a trial must cost this much less      */
#define BN_REBUILD_HOLD_MIN 2    /* cycles a chosen period is held, ...   */
#define BN_REBUILD_HOLD_MAX 64   /* ... at most, after failed trials      */
#define BN_REBUILD_CHECKS 16     /* a window's cost so far at its 16ths  */
#define BN_REBUILD_BEHIND 0.05   /* a trial this far behind the best
                                    window at a check is given up, ...   */
#define BN_REBUILD_ABORT 1.5     /* ... the best period this many times  */
#define BN_REBUILD_DRIFT 0.1     /* a held window this much dearer than
                                    the hold's first ends the hold       */

/* Where the rule is (bn_rebuild_tuner.phase). */
enum {
    BN_TUNER_REFERENCE = 0, /* measuring the best period's next window      */
    BN_TUNER_TRIAL = 1,     /* measuring a neighbour's                      */
    BN_TUNER_HOLD = 2       /* the best period for `hold` steps (measured
                               but at period 0)                          */
};

/* All zero: a tuner that knows nothing yet (bn_simulation's calloc):
 * period 0 until its first window is measured. Saved whole in restart
 * files (longs and doubles: no padding). */
typedef struct bn_rebuild_tuner {
    long period;       /* m in use: rebuild where the first active bin is
                          at most the finest occupied bin - m            */
    long best;         /* the period of the lowest rate measured ...     */
    double best_rate;  /* ... that rate, as last measured                */
    long phase;        /* BN_TUNER_*                                     */
    long down;         /* the next trial is best - 1 (else best + 1)    */
    long hold;         /* steps to go in BN_TUNER_HOLD                   */
    long hold_windows; /* cycles of the next hold                       */
    long window_open;  /* a window is being measured: it began after a
                          cycle's end, ...                               */
    long pending;      /* ... or will after the next one                 */
    double cost, span; /* the open window's summed cost and time         */
    long window_steps, window_finest; /* its steps, its finest first
                                         active bin so far ...          */
    long finest;       /* ... and the last whole window's: no period
                          beyond it changes anything                     */
    long trials, trials_failed; /* diagnostics, tests: trials made and
                                   lost, ...                             */
    long drops;        /* ... held periods given up for every step, ...   */
    long closed_steps; /* ... the last closed window's steps              */
    double cum[BN_REBUILD_CHECKS];     /* the open window's cost so far at
                                          its checks, ...               */
    double ref_cum[BN_REBUILD_CHECKS]; /* ... and the best period's last
                                          whole window's                */
    long ref_steps;    /* its cycle's steps (0: none): checked against
                          where the cycle is the same                    */
    long window_cycle; /* the open window's cycle: its steps (of its
                          first step's bin, the finest occupied), ...    */
    double window_length; /* ... its length in time, ...                 */
    long window_shortened; /* ... shortened to land on an output: the
                          window is not measured                         */
    double hold_rate;  /* the best rate as the hold began                */
} bn_rebuild_tuner;

/* One step's costs, every rank's (times: the slowest rank's; work: the
 * counts' sums, bn_rebuild_step_work). */
typedef struct bn_rebuild_step {
    int bin_min;     /* the step's first active bin                          */
    int rebuilt;     /* the step built a new tree (else refreshed it)        */
    int ends;        /* the step ended a cycle (every particle active)       */
    int closes;      /* the window closes after this step: the next one ends
                        a cycle (or this one was a whole cycle)              */
    double dt;       /* its simulated time                                   */
    double cycle;    /* the length of the cycle it is in, ...                */
    int shortened;   /* ... shorter than the integrator's dt (it lands on an
                        output time: its windows are not measured)           */
    double walk;     /* the walk's cost: seconds, or work                    */
    double tree;     /* the tree's outside the walk (seconds: build or
                        refresh; work: a rebuild's beyond a refresh, 0 for
                        a refresh)                                           */
} bn_rebuild_step;

/* Whether the next step, whose first active bin is bin_min, should
 * rebuild (a cycle's end, when every particle is active, rebuilds anyway:
 * the caller's); finest: the finest bin occupied now (the step's length
 * is its step). */
int bn_rebuild_tuner_wants(const bn_rebuild_tuner *t, int bin_min, int finest);
/* After a step's forces. */
void bn_rebuild_tuner_record(bn_rebuild_tuner *t, const bn_rebuild_step *s);
/* A step's costs under the work rule: count = the walk's n_pp, n_pc,
 * n_far and n_visit (every rank's); n_built: the particles a rebuild
 * sorted, every rank's (twice where a build ahead was refused). */
bn_rebuild_step bn_rebuild_step_work(int bin_min, int rebuilt, double n_active, const double count[4], double n_built);
/* The steps a tree built now will serve (2^period, at most a cycle), of
 * which its lead is half (tree/refresh_lag.h). */
double bn_rebuild_tuner_lead_steps(const bn_rebuild_tuner *t);
/* Steps that may be queued without any read of the device: a held
 * period of 0 (every step rebuilds); 0 otherwise. */
long bn_rebuild_tuner_quiet_steps(const bn_rebuild_tuner *t);
/* After `made` such quiet steps, which were not recorded. */
void bn_rebuild_tuner_quiet_done(bn_rebuild_tuner *t, long made);
#endif
