/* The self-tuned tree rebuild of block steps: rebuild_tuner.h says the
 * rule and why. */
#include "integrate/rebuild_tuner.h"
#include <math.h>
#include "gravity/interact.h"

int bn_rebuild_tuner_wants(const bn_rebuild_tuner *t, int bin_min, int finest)
{
    return (long)bin_min <= (long)finest - t->period;
}

/* Hold the best period for hold_windows cycles of the last window's
 * length, its last step recorded (it opens the next window where it ends
 * a cycle). */
static void start_hold(bn_rebuild_tuner *t)
{
    if (t->hold_windows < BN_REBUILD_HOLD_MIN) t->hold_windows = BN_REBUILD_HOLD_MIN;
    t->phase = BN_TUNER_HOLD;
    t->period = t->best;
    const long steps = t->window_steps > 0 ? t->window_steps : 1;
    t->hold = t->hold_windows * steps - 1;
    if (t->hold < 1) t->hold = 1;
}

/* A neighbour of the best period in the direction `down` says, where
 * there is one (no period below 0, none beyond the finest bin: its cycle
 * rebuilds only at its end); else, where `either`, the other one. */
static void start_trial(bn_rebuild_tuner *t, int either)
{
    const int can_down = t->best > 0, can_up = t->best < t->finest && t->best < BN_TIME_BINS_MAX;
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
    t->window_open = 0;
    start_hold(t);
}

/* Refreshes that turned dear within a window (its cost so far
 * BN_REBUILD_ABORT times the best rate over its time): a trial fails at
 * once; the best period itself (a collapse that sets in while it is
 * held) gives way to rebuilding at every step, measured anew at the next
 * cycle, and the rule climbs again from there. */
static void refreshes_turned_dear(bn_rebuild_tuner *t)
{
    if (t->phase == BN_TUNER_TRIAL) {
        t->trials++;
        t->window_steps = 1L << t->finest;
        trial_failed(t);
        return;
    }
    t->drops++;
    t->best = t->period = 0;
    t->best_rate = 0;
    t->hold_windows = BN_REBUILD_HOLD_MIN;
    t->hold = 0;
    t->phase = BN_TUNER_REFERENCE;
    t->window_open = 0;
}

/* A whole cycle measured at t->period: the reference's rate, or a
 * trial's verdict; a held period's keeps the best rate current. A window
 * of no time (or no finite cost) is measured again. */
static void close_window(bn_rebuild_tuner *t)
{
    t->finest = t->window_finest;
    const double rate = t->cost / t->span;
    if (!(t->span > 0) || !isfinite(rate)) return;
    if (t->phase == BN_TUNER_HOLD) {
        t->best_rate = rate;
        return;
    }
    if (t->phase == BN_TUNER_REFERENCE) {
        t->best_rate = rate;
        start_trial(t, 1);
        return;
    }
    t->trials++;
    if (rate < t->best_rate * (1 - BN_REBUILD_MARGIN)) { /* keep it, and go on the same way */
        t->best = t->period;
        t->best_rate = rate;
        t->hold_windows = BN_REBUILD_HOLD_MIN;
        start_trial(t, 0);
        return;
    }
    trial_failed(t);
}

void bn_rebuild_tuner_record(bn_rebuild_tuner *t, const bn_rebuild_step *s)
{
    if (t->window_open) {
        t->cost += s->walk + s->tree;
        t->span += s->dt;
        t->window_steps++;
        if (s->bin_min > t->window_finest) t->window_finest = s->bin_min;
        /* refreshes already far dearer than the best rate (a cycle's
         * dearest steps, its coarsest bins', come late in it: an early
         * rate is below the cycle's) are given up at once */
        if (t->period > 0 && t->best_rate > 0 && t->cost > BN_REBUILD_ABORT * t->best_rate * t->span)
            refreshes_turned_dear(t);
    }
    if (t->phase == BN_TUNER_HOLD && --t->hold <= 0) {
        t->hold = 0;
        t->phase = BN_TUNER_REFERENCE;
    }
    if (!s->ends) return;
    if (t->window_open) close_window(t);
    t->window_open = !(t->phase == BN_TUNER_HOLD && t->period == 0); /* held refreshes are watched */
    t->cost = t->span = 0;
    t->window_steps = t->window_finest = 0;
}

bn_rebuild_step bn_rebuild_step_work(int bin_min, int rebuilt, double n_active, const double count[4], double n_global)
{
    bn_rebuild_step s = {bin_min, rebuilt, 0, 0, 0, 0};
    s.walk = bn_walk_work(count[0], count[1], count[2], count[3], n_active);
    s.tree = rebuilt ? BN_REBUILD_WORK_PER_PARTICLE * n_global : 0; /* a refresh's counts as 0 */
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
    return t->phase == BN_TUNER_HOLD && t->period == 0 ? t->hold : 0;
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
