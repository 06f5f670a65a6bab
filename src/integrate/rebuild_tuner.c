/* The self-tuned tree rebuild of block steps: rebuild_tuner.h says the
 * rule and why. */
#include "integrate/rebuild_tuner.h"
#include <math.h>
#include <string.h>
#include "gravity/interact.h"

static void push(bn_recent_costs *r, double v)
{
    for (int i = BN_REBUILD_SAMPLES - 1; i > 0; i--) r->v[i] = r->v[i - 1];
    r->v[0] = v;
    if (r->n < BN_REBUILD_SAMPLES) r->n++;
}

/* The median of the samples (of two, their mean); -1 without any. */
static double median(const bn_recent_costs *r)
{
    double s[BN_REBUILD_SAMPLES];
    for (int i = 0; i < r->n; i++) {
        int j = i;
        for (; j > 0 && s[j - 1] > r->v[i]; j--) s[j] = s[j - 1];
        s[j] = r->v[i];
    }
    if (r->n == 0) return -1;
    return r->n % 2 ? s[r->n / 2] : 0.5 * (s[r->n / 2 - 1] + s[r->n / 2]);
}

double bn_rebuild_tuner_make(const bn_rebuild_tuner *t) { return median(&t->make); }

/* The fresh walk's cost of the next step at bin_min: its bin's fresh
 * cost per particle times the bin's last active count. */
static double fresh_cost(const bn_rebuild_tuner *t, int bin) { return median(&t->fresh[bin]) * t->active[bin]; }

/* A first refresh's relative excess at bin, else at the nearest finer
 * bin that has one, else the nearest coarser; -1 where none is known. */
static double rho1_of(const bn_rebuild_tuner *t, int bin)
{
    for (int b = bin; b < BN_TIME_BINS_MAX; b++)
        if (t->rho1[b].n > 0) return median(&t->rho1[b]);
    for (int b = bin - 1; b >= 0; b--)
        if (t->rho1[b].n > 0) return median(&t->rho1[b]);
    return -1;
}

static double power_of(const bn_rebuild_tuner *t) { return t->power.n > 0 ? median(&t->power) : 1; }

/* The excess the next step would add on the refreshed tree:
 * rho1 k^p F (rebuild_tuner.h). A first refresh at the finest occupied
 * bin is not foreseen (0): it is the probe that measures rho1 anew.
 * Where no rho1 is known, the linear fit of the excess so far over
 * equal steps (e_i = i s, so e_(k+1) = 2 E_k / k). */
static double foreseen(const bn_rebuild_tuner *t, int bin, double k)
{
    const double rho1 = rho1_of(t, bin);
    const double e = rho1 >= 0 ? rho1 * pow(k, power_of(t)) * fresh_cost(t, bin) : -1;
    return isfinite(e) ? e : -1; /* unknown */
}

static double next_excess(const bn_rebuild_tuner *t, int bin_min, int finest)
{
    const double k = (double)t->refreshes;
    if (k == 0 && bin_min >= finest) return 0;
    const double e = foreseen(t, bin_min, k + 1);
    if (e < 0) return k > 0 ? t->excess * 2 / k : 0;
    return t->foreseen > 0 ? e * t->excess / t->foreseen : e;
}

int bn_rebuild_tuner_wants(const bn_rebuild_tuner *t, int bin_min, int finest)
{
    if (t->hold > 0) return 1; /* every step, until the next probe */
    if (t->make.n == 0 || bin_min < 0 || bin_min >= BN_TIME_BINS_MAX || t->fresh[bin_min].n == 0) return 1;
    /* A probe (the first refresh after rebuilds, unless the last probe
     * passed: then refreshing pays and each cycle starts at once) waits
     * for a step of only the finest occupied bin (every few steps: the
     * clock steps by that bin's step): the fewest active particles, so
     * the cheapest refresh to lose (M31 at 2^24: a tenth of the
     * particles, against a third on average; the probes cost 5-6% of 64
     * steps on M31 and GOTHIC's NFW, BENCHMARKS.md session 25). */
    if (t->refreshes == 0 && t->probe_every != BN_REBUILD_PROBE_PASSED && bin_min < finest) return 1;
    /* With n steps on this tree so far (k = n - 1 refreshes) another step
     * lowers the mean cost iff the rebuild's cost is at least the excess
     * with it, E_k + e_(k+1). The next excess from the fit of the ones so
     * far (e_i = rho1 i^p F_i; for equal steps and p = 1 e_(k+1) = 2 E_k / k; a fit of
     * the sum, not of the last step, so that one noisy walk moves it
     * little): GOTHIC's optimum n ~ sqrt(2 t_make / s) rounded to the best
     * integer, where "excess >= cost" alone rebuilds a step late. */
    return t->excess + next_excess(t, bin_min, finest) >= median(&t->make);
}

/* A probe that lost `excess` on a step that would have cost `step` with
 * a rebuild: hold rebuilds long enough that the loss is at most
 * BN_REBUILD_PROBE_SHARE of the steps held (at least
 * BN_REBUILD_PROBE_MIN, at most BN_REBUILD_PROBE_MAX). */
static void probe_failed(bn_rebuild_tuner *t, double excess, double step)
{
    t->probes_failed++;
    const double h = step > 0 ? ceil(excess / (BN_REBUILD_PROBE_SHARE * step)) : BN_REBUILD_PROBE_MAX;
    t->probe_every = h < BN_REBUILD_PROBE_MIN ? BN_REBUILD_PROBE_MIN
                   : h > BN_REBUILD_PROBE_MAX ? BN_REBUILD_PROBE_MAX
                                              : (long)h;
    t->hold = t->probe_every;
}

/* A refresh's relative excess rho (its excess over its fresh walk's
 * cost), the k-th since the build: a first refresh's is its bin's rho1;
 * a later one's gives the power p of rho ~ k^p against this tree's last
 * refresh at its bin, else against the bin's rho1 (at k = 1), where both
 * stand out of the timed rule's noise (BN_REBUILD_RHO_MIN; p clamped to
 * [1/2, 4]). */
static void learn_growth(bn_rebuild_tuner *t, int bin, double rho)
{
    const long k = t->refreshes;
    double ref = -1, k_ref = 1;
    if (t->last_k[bin] > 0) ref = t->last_rho[bin], k_ref = (double)t->last_k[bin];
    else if (k > 1 && t->rho1[bin].n > 0) ref = median(&t->rho1[bin]);
    t->last_k[bin] = k;
    t->last_rho[bin] = rho;
    if (k == 1) push(&t->rho1[bin], rho > 0 ? rho : 0);
    if (!(ref > BN_REBUILD_RHO_MIN && rho > BN_REBUILD_RHO_MIN)) return;
    const double p = log(rho / ref) / log((double)k / k_ref);
    push(&t->power, p < 0.5 ? 0.5 : p > 4 ? 4 : p);
}

void bn_rebuild_tuner_record(bn_rebuild_tuner *t, const bn_rebuild_step *s)
{
    if (!(s->n_active > 0) || s->bin_min < 0 || s->bin_min >= BN_TIME_BINS_MAX) return;
    bn_recent_costs *f = &t->fresh[s->bin_min];
    t->active[s->bin_min] = s->n_active;
    if (s->rebuilt) {
        /* A step whose refresh some rank refused is no sample: the other
         * ranks walked refreshed trees, and the refusing one measured its
         * refresh and its build together. */
        if (!s->refused) {
            push(f, s->walk / s->n_active);
            /* what refreshing saves: this build's tree time beyond a
             * refresh's (as measured, else the build's own moments and
             * groups, which a refresh redoes) */
            const double refresh = t->refresh.n > 0 ? median(&t->refresh) : s->kept;
            const double make = s->tree - refresh;
            push(&t->make, make > 0 ? make : 0);
        }
        /* a probe the backend refused (its groups had scattered: the
         * refresh would have cost many rebuilds) fails as one that lost
         * two rebuilds (it lost one refresh) */
        const int refused_probe = s->refused && t->refreshes == 0 && t->hold == 0;
        t->excess = 0;
        t->foreseen = 0;
        memset(t->last_k, 0, sizeof t->last_k);
        t->refreshes = 0;
        if (t->hold > 0) t->hold--;
        if (refused_probe) probe_failed(t, 2 * median(&t->make), s->walk + median(&t->make));
        return;
    }
    t->refreshes++;
    push(&t->refresh, s->tree);
    /* No fresh sample at this bin (a refresh the caller chose against
     * bn_rebuild_tuner_wants): the excess is unknown and counts nothing
     * (a refreshed tree's walk taken as fresh would hide the excess of
     * every later one). */
    if (f->n == 0) return;
    const double excess = s->walk - median(f) * s->n_active;
    t->excess += excess;
    if (t->excess < 0) t->excess = 0;
    const double e = foreseen(t, s->bin_min, (double)t->refreshes); /* before this step's lesson */
    t->foreseen += e >= 0 ? e : fmax(excess, 0);
    if (median(f) > 0) learn_growth(t, s->bin_min, excess / (median(f) * s->n_active)); /* else no relative excess */
    if (t->refreshes != 1 || t->make.n == 0) return;
    /* the first refresh after a rebuild: a probe of whether refreshing
     * pays at all */
    const double make = median(&t->make);
    if (excess >= make) probe_failed(t, excess, median(f) * s->n_active + make);
    else t->probe_every = BN_REBUILD_PROBE_PASSED;
}

bn_rebuild_step bn_rebuild_step_work(int bin_min, int rebuilt, double n_active, const double count[4], double n_global)
{
    bn_rebuild_step s = {bin_min, rebuilt, n_active, 0, 0, 0, 0};
    s.walk = bn_walk_work(count[0], count[1], count[2], count[3], n_active);
    s.tree = rebuilt ? BN_REBUILD_WORK_PER_PARTICLE * n_global : 0; /* a refresh's counts as 0 */
    return s;
}

void bn_rebuild_tuner_close_interval(bn_rebuild_tuner *t, long ended)
{
    if (t->lead_open && ended > 0) {
        const double w = BN_REBUILD_LEAD_DECAY, k = (double)ended;
        t->lead_k2 = (1 - w) * t->lead_k2 + w * k * k;
        t->lead_k = (1 - w) * t->lead_k + w * k;
    }
    t->lead_open = 0;
}

double bn_rebuild_tuner_lead_steps(bn_rebuild_tuner *t, long ended)
{
    bn_rebuild_tuner_close_interval(t, ended);
    t->lead_open = t->hold <= 1; /* held: the next step rebuilds as well */
    if (!t->lead_open) return 1;
    return t->lead_k > 0 ? t->lead_k2 / t->lead_k : (double)(ended > 0 ? ended : 1);
}
