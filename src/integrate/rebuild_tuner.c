/* The self-tuned tree rebuild of block steps: rebuild_tuner.h says the
 * rule and why. */
#include "integrate/rebuild_tuner.h"
#include <math.h>
#include <string.h>
#include "gravity/interact.h"

int bn_rebuild_tuner_wants(const bn_rebuild_tuner *t, int bin_min, int finest)
{
    return (long)bin_min <= (long)finest - t->period;
}

/* The steps of a cycle of the finest bin of the last whole window. */
static long cycle_steps(const bn_rebuild_tuner *t)
{
    return t->finest > 0 && t->finest < BN_TIME_BINS_MAX ? 1L << t->finest : 1;
}

/* Hold the best period for hold_windows cycles (hold_rate: its rate as
 * the hold begins), ending at a window's close: from a close, or from
 * inside an open window (a trial given up), whose step the record still
 * counts down, also the rest of that window. */
static void start_hold(bn_rebuild_tuner *t)
{
    if (t->hold_windows < BN_REBUILD_HOLD_MIN) t->hold_windows = BN_REBUILD_HOLD_MIN;
    t->phase = BN_TUNER_HOLD;
    t->period = t->best;
    t->hold_rate = t->best_rate;
    t->hold = t->hold_windows * cycle_steps(t);
    if (t->window_open && t->window_cycle > t->window_steps) t->hold += t->window_cycle - t->window_steps;
}

/* A neighbour of the best period in the direction `down` says, where
 * there is one (no period below 0, none beyond the finest bin: its cycle
 * rebuilds only at its end); else, where `either`, the other one. With
 * no neighbour at all (every particle in the coarsest bin: every step
 * ends a cycle) the longest hold. */
static void start_trial(bn_rebuild_tuner *t, int either)
{
    const int can_down = t->best > 0, can_up = t->best < t->finest;
    if (!can_down && !can_up) t->hold_windows = BN_REBUILD_HOLD_MAX;
    if (!(t->down ? can_down : can_up)) {
        if (!either || !(t->down ? can_up : can_down)) {
            start_hold(t);
            return;
        }
        t->down = !t->down;
    }
    t->phase = BN_TUNER_TRIAL;
    t->period = t->best + (t->down ? -1 : 1);
}

/* Back to the best period for a hold twice as long as the last, the
 * other neighbour next time. */
static void trial_failed(bn_rebuild_tuner *t)
{
    t->trials_failed++;
    t->down = !t->down;
    t->hold_windows = t->hold_windows >= BN_REBUILD_HOLD_MAX / 2 ? BN_REBUILD_HOLD_MAX : 2 * t->hold_windows;
    start_hold(t);
    t->window_open = 0;
}

/* Refreshes that turned dear within a window: a trial fails at once;
 * the best period itself (a collapse that sets in while it is held)
 * gives way to rebuilding at every step, measured anew from the next
 * window, and the rule climbs again from there. */
static void refreshes_turned_dear(bn_rebuild_tuner *t)
{
    if (t->phase == BN_TUNER_TRIAL) {
        t->trials++;
        trial_failed(t);
        return;
    }
    t->drops++;
    t->best = t->period = 0;
    t->best_rate = 0;
    t->ref_steps = 0;
    t->hold_windows = BN_REBUILD_HOLD_MIN;
    t->hold = 0;
    t->phase = BN_TUNER_REFERENCE;
    t->window_open = 0;
}

/* The best period's last whole window: its rate and its checks, with
 * the steps of the cycle they were taken on. */
static void keep_as_best_window(bn_rebuild_tuner *t, double rate)
{
    t->best_rate = rate;
    memcpy(t->ref_cum, t->cum, sizeof t->cum);
    t->ref_steps = t->window_cycle;
}

/* After each step of an open window: its cost so far at its checks
 * (each 16th of its own cycle; every step in cycles of fewer than 16),
 * and for a period that refreshes (in a cycle not shortened to land on
 * an output), whether its refreshes turned dear: a certain loss (already
 * BN_REBUILD_ABORT times the best rate over the window's cycle); for a
 * trial, from its second step, a rate so far BN_REBUILD_ABORT times the
 * best (refreshes many times dear: a cycle's
 * dearest steps come late in it, so an early rate is below the cycle's);
 * at a check from the second on, behind the best window's cost at the
 * same check by BN_REBUILD_BEHIND (a trial) or BN_REBUILD_ABORT times
 * (the best period itself: one slow step of measured time does not drop
 * it). */
static void watch(bn_rebuild_tuner *t)
{
    const int refreshes = t->period > 0 && t->best_rate > 0 && !t->window_shortened;
    const int trial = t->phase == BN_TUNER_TRIAL;
    if (refreshes && (t->cost > BN_REBUILD_ABORT * t->best_rate * t->window_length ||
                      (trial && t->window_steps >= 2 && t->cost > BN_REBUILD_ABORT * t->best_rate * t->span))) {
        refreshes_turned_dear(t);
        return;
    }
    const long cycle = t->window_cycle;
    const long every = cycle >= BN_REBUILD_CHECKS ? cycle / BN_REBUILD_CHECKS : 1;
    if (t->window_steps % every != 0) return;
    const long j = t->window_steps / every - 1;
    if (j < 0 || j >= BN_REBUILD_CHECKS) return;
    t->cum[j] = t->cost;
    /* the best window's checks where they were taken on a cycle of as
     * many steps (of another finest bin, they are not compared) */
    if (!refreshes || j < 1 || t->ref_steps != cycle || !(t->ref_cum[j] > 0)) return;
    const double behind = trial ? 1 + BN_REBUILD_BEHIND : BN_REBUILD_ABORT;
    if (t->cost > behind * t->ref_cum[j]) refreshes_turned_dear(t);
}

/* A whole cycle measured at t->period: the reference's rate, or a
 * trial's verdict; a held period's (where the finest bin moved: a
 * reference) keeps the best window current, and
 * where it cost BN_REBUILD_DRIFT more than when the hold began (its
 * refreshes slowly turning dear), the hold ends in a trial of the period
 * below. A period beyond the finest bin (which moved to a coarser one)
 * is the finest's. A window of no time (or no finite cost) is measured
 * again. */
static void close_window(bn_rebuild_tuner *t)
{
    t->closed_steps = t->window_steps;
    if (t->window_shortened) return; /* measured again in the next window */
    if (t->phase == BN_TUNER_HOLD && t->window_finest != t->finest) { /* another cycle: judged anew */
        t->phase = BN_TUNER_REFERENCE;
        t->hold = 0;
    }
    t->finest = t->window_finest;
    if (t->best > t->finest) {
        t->best = t->finest;
        if (t->phase != BN_TUNER_TRIAL) t->period = t->best;
    }
    const double rate = t->cost / t->span;
    if (!(t->span > 0) || !isfinite(rate)) return;
    if (t->phase == BN_TUNER_HOLD) {
        const int drifted = t->period > 0 && t->hold_rate > 0 && rate > (1 + BN_REBUILD_DRIFT) * t->hold_rate;
        keep_as_best_window(t, rate);
        if (drifted) {
            t->down = 1;
            start_trial(t, 1);
        }
        return;
    }
    if (t->phase == BN_TUNER_REFERENCE) {
        keep_as_best_window(t, rate);
        start_trial(t, 1);
        return;
    }
    t->trials++;
    if (rate < t->best_rate * (1 - BN_REBUILD_MARGIN)) { /* keep it, and go on the same way */
        t->best = t->period;
        keep_as_best_window(t, rate);
        t->hold_windows = BN_REBUILD_HOLD_MIN;
        start_trial(t, 0);
        return;
    }
    trial_failed(t);
}

void bn_rebuild_tuner_record(bn_rebuild_tuner *t, const bn_rebuild_step *s)
{
    /* a cycle's end step (every particle active, rebuilt under every
     * period) is in no window, unless it is the whole cycle */
    if (t->window_open && (!s->ends || s->closes)) {
        if (t->window_steps == 0) { /* its first step's first active bin is the finest occupied */
            t->window_cycle = s->bin_min > 0 && s->bin_min < BN_TIME_BINS_MAX ? 1L << s->bin_min : 1;
            t->window_length = s->cycle;
        }
        if (s->shortened) t->window_shortened = 1;
        t->cost += s->walk + s->tree;
        t->span += s->dt;
        t->window_steps++;
        if (s->bin_min > t->window_finest) t->window_finest = s->bin_min;
        watch(t);
    }
    if (t->phase == BN_TUNER_HOLD && --t->hold <= 0) {
        t->hold = 0;
        t->phase = BN_TUNER_REFERENCE;
    }
    if (s->closes) {
        const long was_open = t->window_open;
        t->window_open = 0; /* before the verdict: a hold it starts begins here */
        if (was_open) close_window(t);
        t->pending = !(t->phase == BN_TUNER_HOLD && t->period == 0); /* held refreshes are watched */
    }
    if (s->ends && t->pending) { /* the next window begins after the cycle's end */
        t->window_open = 1;
        t->pending = 0;
        t->cost = t->span = 0;
        t->window_steps = t->window_finest = t->window_shortened = 0;
        memset(t->cum, 0, sizeof t->cum);
    }
}

bn_rebuild_step bn_rebuild_step_work(int bin_min, int rebuilt, double n_active, const double count[4], double n_built)
{
    bn_rebuild_step s = {bin_min, rebuilt, 0, 0, 0, 0, 0, 0, 0};
    s.walk = bn_walk_work(count[0], count[1], count[2], count[3], n_active);
    s.tree = rebuilt ? BN_REBUILD_WORK_PER_PARTICLE * n_built : 0; /* a refresh's counts as 0 */
    return s;
}

double bn_rebuild_tuner_lead_steps(const bn_rebuild_tuner *t)
{
    long m = t->period;
    if (m > t->finest) m = t->finest; /* a cycle's end rebuilds anyway */
    return m > 0 ? ldexp(1.0, (int)m) : 1;
}

long bn_rebuild_tuner_quiet_steps(const bn_rebuild_tuner *t)
{
    return t->phase == BN_TUNER_HOLD && t->period == 0 && t->hold > 1 ? t->hold - 1 : 0;
}

void bn_rebuild_tuner_quiet_done(bn_rebuild_tuner *t, long made)
{
    if (t->phase != BN_TUNER_HOLD) return;
    t->hold -= made;
    if (t->hold <= 0) {
        t->hold = 0;
        t->phase = BN_TUNER_REFERENCE;
    }
}
