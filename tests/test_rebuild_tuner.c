/* The self-tuned tree rebuild of block steps (integrate/rebuild_tuner.h):
 * its decisions on made-up step costs (deterministic), and simulations
 * with tree_rebuild 0 on the CPU under both cost rules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "core/simulation_internal.h"
#include "gravity/interact.h"
#include "integrate/rebuild_tuner.h"

/* A made-up machine: a walk on a tree refreshed k times costs
 * n_active (per[bin] + slope k^power) (times noise), a rebuild's tree time
 * beyond the walk is make + kept, a refresh's is kept. */
typedef struct machine {
    double per[BN_TIME_BINS_MAX];
    double n_active[BN_TIME_BINS_MAX];
    double slope, power, make, kept, noise;
    int finest; /* the finest occupied bin */
    unsigned long long rng;
} machine;

static double jitter(machine *m)
{
    m->rng = m->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = (double)(m->rng >> 11) / 9007199254740992.0; /* [0, 1) */
    return 1 + m->noise * (2 * u - 1);
}

/* One step at bin_min: the tuner decides, the machine reports. Returns
 * whether it rebuilt; *k the refreshes since the build. */
static int step(bn_rebuild_tuner *t, machine *m, int bin_min, long *k)
{
    const int rebuild = bn_rebuild_tuner_wants(t, bin_min, m->finest);
    *k = rebuild ? 0 : *k + 1;
    const double n = m->n_active[bin_min];
    bn_rebuild_step s = {bin_min, rebuild, n, n * (m->per[bin_min] + m->slope * pow((double)*k, m->power)) * jitter(m), 0, 0, 0};
    s.kept = m->kept * jitter(m);
    s.tree = rebuild ? m->make * jitter(m) + s.kept : m->kept * jitter(m);
    bn_rebuild_tuner_record(t, &s);
    return rebuild;
}

static machine one_bin(double make, double slope)
{
    machine m;
    memset(&m, 0, sizeof m);
    m.per[3] = 1e-6;
    m.n_active[3] = 1e5; /* a fresh walk: 0.1 s */
    m.make = make;
    m.kept = 0.01;
    m.slope = slope;
    m.power = 1;
    m.rng = 42;
    m.finest = 3;
    return m;
}

/* The intervals between rebuilds over `steps` steps at bin 3, after a
 * first rebuild; their histogram in count[] (capped at 99). */
static void intervals(bn_rebuild_tuner *t, machine *m, int steps, long count[100])
{
    memset(count, 0, 100 * sizeof count[0]);
    long k = 0, last = -1;
    for (int i = 0; i < steps; i++)
        if (step(t, m, 3, &k)) {
            if (last >= 0) count[i - last < 99 ? i - last : 99]++;
            last = i;
        }
}

static long mode_of(const long count[100])
{
    long best = 0;
    for (int i = 1; i < 100; i++)
        if (count[i] > count[best]) best = i;
    return best;
}

/* Linear growth: the interval is GOTHIC's optimum, n(n-1)/2 slope ~ make,
 * n ~ sqrt(2 make / slope), and its mean cost within 2% of the best
 * integer interval's. */
static void test_linear_growth_finds_the_optimum(void **state)
{
    (void)state;
    const double cases[][2] = {{0.05, 1e-3 / 1e5}, {0.02, 4e-3 / 1e5}, {0.2, 1e-3 / 1e5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bn_rebuild_tuner t;
        memset(&t, 0, sizeof t);
        machine m = one_bin(cases[c][0], cases[c][1]);
        long count[100];
        intervals(&t, &m, 2000, count);
        const long n = mode_of(count);
        const double s = m.slope * m.n_active[3], best = sqrt(2 * m.make / s);
        /* the mean step cost at interval j: (make + sum_{k<j} k s) / j + walk */
        double cost_best = INFINITY;
        for (int j = 1; j < 99; j++) cost_best = fmin(cost_best, (m.make + 0.5 * j * (j - 1) * s) / j);
        const double cost_n = (m.make + 0.5 * (double)n * (double)(n - 1) * s) / (double)n;
        print_message("make %g, slope %g: interval %ld (%ld of %d), sqrt(2 make / slope) %.2f, excess cost %.4f "
                      "of the best %.4f\n",
                      m.make, s, n, count[n], 2000, best, cost_n, cost_best);
        assert_true(fabs((double)n - best) <= 1.5);
        assert_true(cost_n <= 1.02 * cost_best);
        assert_int_equal(t.probes_failed, 0);
    }
}

/* The hold after a failed probe: its excess over BN_REBUILD_PROBE_SHARE
 * (0.2%) of the probe step's cost with a rebuild (rebuild_tuner.h). */
static long hold_for(double excess, double step) { return (long)ceil(excess / (BN_REBUILD_PROBE_SHARE * step)); }

/* The first refresh costs more than a rebuild: interval 1, with one
 * probing refresh every `hold` rebuilds, the hold making the probe's
 * loss 0.2% of the held steps (a probe: +0.03 s; a step with a rebuild:
 * the fresh walk 0.1 s and the rebuild 0.02 s beyond a refresh: 125). */
static void test_first_refresh_too_dear_rebuilds_every_step(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    machine m = one_bin(0.02, 0.03 / 1e5); /* one refresh: +0.03 s, a rebuild 0.02 s */
    long k = 0;
    int refresh_at[64], refreshes = 0;
    const int steps = 1000;
    for (int i = 0; i < steps; i++)
        if (!step(&t, &m, 3, &k)) {
            assert_true(refreshes < 64);
            refresh_at[refreshes++] = i;
            assert_int_equal(k, 1); /* never two refreshes in a row */
        }
    print_message("%d refreshes in %d steps, at", refreshes, steps);
    for (int i = 0; i < refreshes; i++) print_message(" %d", refresh_at[i]);
    print_message("\n");
    const long hold = hold_for(0.03, 0.12);
    assert_true(hold >= 125 && hold <= 126);
    assert_true(refreshes >= steps / (hold + 1));
    for (int i = 1; i < refreshes; i++) assert_int_equal(refresh_at[i] - refresh_at[i - 1], hold + 1);
    assert_int_equal(t.probes_failed, refreshes);
}

/* A probe that cost about ten rebuilds holds about 6.7 times longer than
 * one of 1.5 (+0.2 s against +0.03 s: 834 steps), so that dear probes
 * stay rare; the hold is capped at BN_REBUILD_PROBE_MAX. */
static void test_dear_probes_wait_longer(void **state)
{
    (void)state;
    const double slopes[2] = {0.2 / 1e5, 2.0 / 1e5}; /* +0.2 s; +2 s: a hold of 8334, capped */
    for (int c = 0; c < 2; c++) {
        bn_rebuild_tuner t;
        memset(&t, 0, sizeof t);
        machine m = one_bin(0.02, slopes[c]);
        long k = 0;
        int refresh_at[16], refreshes = 0;
        for (int i = 0; i < 2200; i++)
            if (!step(&t, &m, 3, &k)) {
                assert_true(refreshes < 16);
                refresh_at[refreshes++] = i;
            }
        assert_true(refreshes >= 2);
        const long want = c ? BN_REBUILD_PROBE_MAX : hold_for(0.2, 0.12);
        print_message("gap after a probe of +%g s: %d (hold %ld)\n", slopes[c] * 1e5, refresh_at[1] - refresh_at[0],
                      want);
        for (int i = 1; i < refreshes; i++) assert_int_equal(refresh_at[i] - refresh_at[i - 1], want + 1);
    }
}

/* Two bins, a refresh too dear in both: every probe waits for a step of
 * the finest bin (the fewest active particles: the cheapest refresh to
 * lose), the first one too. */
static void test_probes_take_the_finest_bin(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    machine m = one_bin(0.02, 0.3 / 1e5); /* one refresh: +0.3 s at bin 3, +0.03 s at bin 5 */
    m.per[5] = 1e-6;
    m.n_active[5] = 1e4; /* a tenth of bin 3's */
    m.finest = 5;
    long k = 0;
    int probes = 0, at_coarse = 0;
    for (int i = 0; i < 2000; i++) {
        const int bin = i % 3 == 0 ? 3 : 5;
        if (!step(&t, &m, bin, &k)) {
            probes++;
            if (bin == 3) at_coarse++;
        }
    }
    print_message("%d probes in 2000 steps, %d at bin 3\n", probes, at_coarse);
    assert_true(probes >= 2000 / (hold_for(0.03, 0.03) + 3)); /* +0.03 s on a 0.01 s walk and a 0.02 s rebuild */
    assert_int_equal(at_coarse, 0);
    /* bin 5 empties (a close encounter over): the probes go on at bin 3,
     * the finest occupied now, a hold apart (its probes lose +0.3 s: 1250) */
    m.finest = 3;
    int later = 0;
    for (int i = 0; i < 3000; i++) later += !step(&t, &m, 3, &k);
    print_message("after bin 5 emptied: %d probes in 3000 steps\n", later);
    assert_true(later >= 2);
}

/* A distribution that quiets down: within one probe interval the tuner
 * refreshes again, at the interval the new slope asks for. */
static void test_quieting_down_is_noticed(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    machine m = one_bin(0.02, 0.03 / 1e5);
    long k = 0;
    for (int i = 0; i < 300; i++) step(&t, &m, 3, &k);
    m.slope = 4e-4 / 1e5; /* sqrt(2 make / slope) = 10 */
    int first_refresh = -1;
    for (int i = 0; i < 300 && first_refresh < 0; i++)
        if (!step(&t, &m, 3, &k)) first_refresh = i;
    assert_true(first_refresh >= 0 && first_refresh <= hold_for(0.03, 0.12) + 1); /* within one hold */
    long count[100];
    intervals(&t, &m, 500, count);
    print_message("quiet after %d steps: interval %ld\n", first_refresh, mode_of(count));
    assert_true(labs(mode_of(count) - 10) <= 1);
}

/* Bins: each compared with its own fresh walk. Two bins of different
 * cost per active particle and no growth: after one rebuild per bin to
 * learn them, no rebuild at all; a tuner that compared across bins would
 * see the dearer bin's walks as excess. With 5% noise: rebuilds stay
 * rare (signed excess: noise cancels). */
static void test_bins_are_compared_with_their_own(void **state)
{
    (void)state;
    for (int noisy = 0; noisy <= 1; noisy++) {
        bn_rebuild_tuner t;
        memset(&t, 0, sizeof t);
        machine m = one_bin(0.05, 0);
        m.per[5] = 4e-6;
        m.n_active[5] = 1e3;
        m.finest = 5;
        m.noise = noisy ? 0.05 : 0;
        long k = 0, builds = 0, builds_late = 0;
        const int steps = 1000;
        for (int i = 0; i < steps; i++) {
            const int r = step(&t, &m, i % 3 == 2 ? 3 : 5, &k);
            builds += r;
            builds_late += r && i >= 3;
        }
        print_message("two bins, noise %g: %ld rebuilds in %d steps (%ld after the first 3)\n", m.noise, builds, steps,
                      builds_late);
        /* noisy: the fresh walks' medians err by a few %, which the
         * refreshes then show as excess; a rebuild every 20 steps or more
         * costs under 2.5% of the steps' time, against 50% to rebuild at
         * every step (0.05 s on a 0.1 s walk) */
        if (!noisy)
            assert_int_equal(builds_late, 0);
        else
            assert_true(builds_late < steps / 20);
        assert_int_equal(t.probes_failed, 0);
        assert_true(builds >= 2); /* each bin learnt */
        assert_true(t.fresh[3].n > 0 && t.fresh[5].n > 0);
    }
}

/* Steps of two sizes in turn, as on M31 (session 27): the finest bin's
 * 1e4 active particles, then a coarser bin's 1e5. One refresh adds
 * 0.005 s to a walk of the finest bin (a quarter of a rebuild), two add
 * 0.1 s to a coarse one (five rebuilds). The tuner refreshes the finest
 * bin's steps and rebuilds before every coarse one, foreseen from that
 * step's own active count, and beats rebuilding at every step by 10%;
 * the rule before extrapolated the finest step's excess (3 x 0.005 s,
 * below a rebuild), refreshed the coarse step and lost. */
static void test_coarse_steps_are_foreseen(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    machine m = one_bin(0.02, 0.5e-6); /* a first refresh: half its fresh walk more */
    m.per[5] = 1e-6;
    m.n_active[5] = 1e4;
    m.finest = 5;
    long k = 0;
    int coarse_refreshes = 0, fine_refreshes = 0;
    double cost = 0, every = 0;
    for (int i = 0; i < 1000; i++) {
        const int bin = i % 2 ? 3 : 5;
        const double fresh = m.n_active[bin] * m.per[bin];
        const int r = step(&t, &m, bin, &k);
        if (i < 10) continue; /* learning */
        coarse_refreshes += !r && bin == 3;
        fine_refreshes += !r && bin == 5;
        cost += fresh + (r ? m.make : m.slope * m.n_active[bin] * (double)k);
        every += fresh + m.make;
    }
    print_message("fine refreshes %d, coarse %d; %.4f of every step's cost\n", fine_refreshes, coarse_refreshes,
                  cost / every);
    assert_int_equal(coarse_refreshes, 0);
    assert_int_equal(fine_refreshes, 495);
    assert_true(cost < 0.91 * every); /* a pair of steps: 0.01 + 0.005 + 0.1 + 0.02 instead of 0.15 */
    assert_int_equal(t.probes_failed, 0);
}

/* Excess that grows as k^2 (M31 at 2^23: a second refresh of the finest
 * bin cost 4 times the first): the tuner measures the power and stops
 * within 3% of the best interval's mean cost; a linear extrapolation
 * refreshes too long (8% dearer here). */
static void test_superlinear_growth(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    machine m = one_bin(0.2, 1e-3 / 1e5); /* the k-th refresh: + 0.001 k^2 s */
    m.power = 2;
    long count[100];
    intervals(&t, &m, 2000, count);
    const long n = mode_of(count);
    double cost_best = INFINITY, excess = 0;
    for (int j = 1; j < 99; j++) {
        cost_best = fmin(cost_best, (m.make + excess) / j);
        excess += 1e-3 * j * j; /* the excess of j refreshes */
    }
    excess = 0;
    for (long j = 1; j < n; j++) excess += 1e-3 * (double)(j * j);
    const double cost_n = (m.make + excess) / (double)n;
    print_message("k^2 growth: interval %ld (%ld of 2000), power %.3f; mean excess cost %.5f, the best %.5f\n", n,
                  count[n], t.power.v[0], cost_n, cost_best);
    assert_true(fabs(t.power.v[0] - 2) < 1e-9);
    assert_true(cost_n <= 1.03 * cost_best);
}

/* A fresh walk that cost nothing (a walk timed at 0): no relative excess
 * to learn from, and no NaN in the forecast; the refreshed walks' excess
 * still ends the interval once it reaches a rebuild's cost. */
static void test_free_fresh_walk(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    bn_rebuild_step s = {3, 1, 1e5, 0, 0.03, 0.01, 0}; /* a rebuild: 0.02 beyond a refresh */
    bn_rebuild_tuner_record(&t, &s);
    int refreshes = 0;
    while (!bn_rebuild_tuner_wants(&t, 3, 3) && refreshes < 100) {
        s = (bn_rebuild_step){3, 0, 1e5, 0.008, 0.01, 0, 0};
        bn_rebuild_tuner_record(&t, &s);
        refreshes++;
    }
    print_message("free fresh walk: rebuilt after %d refreshes\n", refreshes);
    assert_int_equal(t.rho1[3].n, 0);
    assert_true(refreshes >= 1 && refreshes <= 3); /* 0.008 a refresh against 0.02 */
}

/* Before it knows a rebuild's cost or a bin's fresh walk, the tuner
 * rebuilds (it cannot judge a refresh); then it refreshes. */
static void test_learns_before_refreshing(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    assert_true(bn_rebuild_tuner_wants(&t, 3, 3));
    assert_true(bn_rebuild_tuner_make(&t) < 0);
    machine m = one_bin(0.05, 0);
    long k = 0;
    assert_true(step(&t, &m, 3, &k));
    /* before a refresh is measured, the build's moments and groups stand
     * in for a refresh's tree time */
    assert_true(fabs(bn_rebuild_tuner_make(&t) - 0.05) < 1e-12);
    assert_true(bn_rebuild_tuner_wants(&t, 4, 4)); /* bin 4 unknown */
    assert_false(bn_rebuild_tuner_wants(&t, 3, 3));
    assert_false(step(&t, &m, 3, &k));
    /* a refresh's tree time measured dearer than the build's kept part:
     * the rebuild saves less */
    m.kept = 0.03;
    bn_rebuild_step s = {3, 0, 1e5, 0.1, 0.03, 0, 0};
    bn_rebuild_tuner_record(&t, &s);
    s = (bn_rebuild_step){3, 1, 1e5, 0.1, 0.06, 0.01, 0};
    bn_rebuild_tuner_record(&t, &s);
    /* the makes so far: 0.05, 0.06 - median(0.01, 0.03) = 0.04 */
    assert_true(fabs(bn_rebuild_tuner_make(&t) - 0.045) < 1e-12);
}

/* The backend refused a refresh the tuner chose (its groups had
 * scattered, tree/refresh_guard.h) and rebuilt: reported as a rebuild.
 * Refused as a probe (the first refresh after a rebuild) it fails as one
 * that lost two rebuilds (its hold: 0.04 s over 0.2% of 0.17 s, 118);
 * refused later in a cycle it only ends the cycle early. Its walk and
 * tree time are no sample of a rebuild's (on several ranks the others
 * walked refreshed trees). */
static void test_refused_refreshes(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    machine m = one_bin(0.02, 0.002 / 1e5); /* cheap refreshes: cycles of about 4-5 steps */
    long k = 0;
    for (int i = 0; i < 40; i++) step(&t, &m, 3, &k);
    while (!bn_rebuild_tuner_wants(&t, 3, 3)) step(&t, &m, 3, &k); /* to the end of a cycle */
    step(&t, &m, 3, &k);                                           /* its rebuild */
    assert_false(bn_rebuild_tuner_wants(&t, 3, 3));                /* a refresh next: refuse it */
    bn_rebuild_step s = {3, 1, 1e5, 0.15, 0.05, 0.01, 1}; /* a walk and a tree time of no plain rebuild */
    for (int round = 0; round < 2; round++) {
        const bn_recent_costs fresh = t.fresh[3], make = t.make;
        bn_rebuild_tuner_record(&t, &s);
        /* no sample of it (on several ranks the others walked refreshed
         * trees) */
        assert_memory_equal(&t.fresh[3], &fresh, sizeof fresh);
        assert_memory_equal(&t.make, &make, sizeof make);
        assert_int_equal(t.probes_failed, round + 1);
        const long hold = hold_for(2 * 0.02, 0.15 + 0.02);
        for (long h = 0; h < hold; h++) {
            assert_true(bn_rebuild_tuner_wants(&t, 3, 3));
            bn_rebuild_step r = {3, 1, 1e5, 0.1, 0.03, 0.01, 0};
            bn_rebuild_tuner_record(&t, &r);
        }
        assert_false(bn_rebuild_tuner_wants(&t, 3, 3)); /* the next probe */
    }
    /* a probe that passes, then a refusal inside the cycle: no failure,
     * and the next step may refresh again */
    k = 0;
    step(&t, &m, 3, &k);
    assert_int_equal(k, 1);
    assert_int_equal(t.probes_failed, 2);
    assert_false(bn_rebuild_tuner_wants(&t, 3, 3));
    bn_rebuild_tuner_record(&t, &s);
    assert_int_equal(t.probes_failed, 2);
    assert_int_equal(t.refreshes, 0);
    assert_false(bn_rebuild_tuner_wants(&t, 3, 3));
}

/* work: a step's costs from its counts: the walk's flops (interact.h)
 * plus its visits at BN_FLOPS_VISIT, a rebuild BN_REBUILD_WORK_PER_PARTICLE
 * a particle of every rank's, a refresh's tree 0. */
static void test_work_step_costs(void **state)
{
    (void)state;
    const double count[4] = {1e6, 2e5, 3e3, 5e4}, n_active = 1e4;
    bn_rebuild_step s = bn_rebuild_step_work(2, 1, n_active, count, 1e5);
    const double flops = 23 * 1e6 + 65 * 2e5 + 180 * 3e3 + 95 * n_active;
    assert_int_equal(s.bin_min, 2);
    assert_int_equal(s.rebuilt, 1);
    assert_true(s.n_active == n_active);
    assert_true(fabs(s.walk - (flops + 430 * 5e4)) <= 1e-9 * s.walk);
    assert_true(s.tree == BN_REBUILD_WORK_PER_PARTICLE * 1e5);
    assert_true(s.kept == 0);
    s = bn_rebuild_step_work(2, 0, n_active, count, 1e5);
    assert_true(s.tree == 0 && s.kept == 0);
}

/* A made-up walk under the work rule: flops that do not grow on a
 * refreshed tree and visits that do (as on M31, where the flop rule lost
 * 2-8x): the interval follows the visits, GOTHIC's optimum
 * sqrt(2 make / slope); without growth nothing is rebuilt after the
 * first; and where one refresh's visits cost more than a rebuild, every
 * step rebuilds, with probes. */
static int work_step(bn_rebuild_tuner *t, double visit_slope, long *k)
{
    const int rebuild = bn_rebuild_tuner_wants(t, 3, 3);
    *k = rebuild ? 0 : *k + 1;
    const double n = 1e4, n_global = 1e5;
    const double count[4] = {n * 500, n * 50, 1e3, n * (20 + visit_slope * (double)*k)};
    const bn_rebuild_step s = bn_rebuild_step_work(3, rebuild, n, count, n_global);
    bn_rebuild_tuner_record(t, &s);
    return rebuild;
}

static void test_work_rule_follows_visits(void **state)
{
    (void)state;
    /* make = BN_REBUILD_WORK_PER_PARTICLE * 1e5 work; the excess per refresh k: 430 slope k n */
    const double slopes[] = {2.0, 0.0, 200.0};
    for (int c = 0; c < 3; c++) {
        bn_rebuild_tuner t;
        memset(&t, 0, sizeof t);
        long k = 0, builds = 0, last = -1, gap = 0;
        for (int i = 0; i < 400; i++)
            if (work_step(&t, slopes[c], &k)) {
                builds++;
                if (i > 100 && last > 100) gap = i - last;
                last = i;
            }
        const double s = 430 * slopes[c] * 1e4, best = s > 0 ? sqrt(2 * BN_REBUILD_WORK_PER_PARTICLE * 1e5 / s) : 0;
        print_message("work, visit slope %g: %ld rebuilds in 400 steps, last gap %ld (sqrt(2 make / slope) %.2f)\n",
                      slopes[c], builds, gap, best);
        if (c == 0) assert_true(fabs((double)gap - best) <= 1.5);
        if (c == 1) assert_int_equal(builds, 1);
        if (c == 2) assert_true(builds > 380 && t.probes_failed > 0);
    }
}

/* ---- simulations (CPU) ---- */

static bn_simulation *plummer_sim(bn_particles **p, bn_tune_cost cost)
{
    bn_ic_params icp = bn_ic_params_default();
    icp.n = 4096;
    icp.seed = 3;
    TU_OK(bn_ic_generate(&icp, p));
    bn_gravity_params g = tu_block_gravity(BN_BACKEND_CPU, BN_METHOD_TREE, 0.01);
    g.theta = 0.5;
    const bn_integrator_params ip = {1.0 / 16, 0.1, 5, 0, 0, BN_STEP_ACCEL, cost};
    return tu_make_sim(*p, g, ip);
}

typedef struct run_result {
    long steps, builds, refreshes;
    double rel;
} run_result;

static run_result run_to(bn_simulation *sim, double t_end)
{
    run_result r = {0, 0, 0, 0};
    bn_energies e0, e1;
    TU_OK(bn_simulation_energies(sim, &e0));
    long builds = bn_simulation_block_info(sim).tree_builds;
    while (bn_simulation_time(sim) < t_end) {
        TU_OK(bn_simulation_step_to(sim, t_end, NULL));
        const long b = bn_simulation_block_info(sim).tree_builds;
        r.builds += b > builds;
        r.refreshes += b == builds;
        builds = b;
        r.steps++;
    }
    TU_OK(bn_simulation_energies(sim, &e1));
    r.rel = fabs((e1.total - e0.total) / e0.total);
    return r;
}

/* Two runs' particles: the same positions and velocities, bit for bit;
 * then both runs freed. */
static void same_bits_then_free(bn_simulation *a, bn_simulation *b, bn_particles *p, bn_particles *p2)
{
    tu_assert_same_particles(a, b);
    bn_simulation_free(a);
    bn_simulation_free(b);
    bn_particles_free(p);
    bn_particles_free(p2);
}

/* rebuild_cost work: two runs, the same rebuilds and the same bits. */
static void test_work_runs_are_bit_reproducible(void **state)
{
    (void)state;
    bn_particles *p = NULL, *p2 = NULL;
    bn_simulation *a = plummer_sim(&p, BN_TUNE_WORK), *b = plummer_sim(&p2, BN_TUNE_WORK);
    const run_result ra = run_to(a, 0.5), rb = run_to(b, 0.5);
    print_message("work: %ld steps, %ld rebuilds, %ld refreshes, energy error %.2e\n", ra.steps, ra.builds,
                  ra.refreshes, ra.rel);
    assert_int_equal(ra.steps, rb.steps);
    assert_int_equal(ra.builds, rb.builds);
    assert_true(ra.refreshes > 0 && ra.builds > 0);
    same_bits_then_free(a, b, p, p2);
}

/* The tuner's held rebuilds run in batches with nothing read per step
 * (simulation.c's quiet steps). A hold of 60 set after the first step:
 * stepped a step at a time, it counts down by one a step, every step a
 * rebuild, and is over after exactly 60 (the quiet steps and the last 16,
 * which the tuner records, alike); a run advanced in long batches (the
 * hold but its last 16 in one) makes the same rebuilds and bits, then
 * and after it, when refreshes pay again. */
static void test_held_rebuilds_in_batches(void **state)
{
    (void)state;
    bn_particles *p = NULL, *p2 = NULL;
    bn_simulation *a = plummer_sim(&p, BN_TUNE_WORK), *b = plummer_sim(&p2, BN_TUNE_WORK);
    const double t_end = 1;
    TU_OK(bn_simulation_step(a, NULL));
    TU_OK(bn_simulation_step(b, NULL));
    a->tuner.hold = b->tuner.hold = a->tuner.probe_every = b->tuner.probe_every = 60;
    const long builds_before = bn_simulation_block_info(a).tree_builds;
    for (long i = 1; i <= 60; i++) {
        TU_OK(bn_simulation_step(a, NULL));
        assert_int_equal(a->tuner.hold, 60 - i);
    }
    assert_int_equal(bn_simulation_block_info(a).tree_builds, builds_before + 60);
    const run_result ra = run_to(a, 0.5); /* the steps after the hold */
    const long builds_held = bn_simulation_block_info(a).tree_builds;
    long batches_held = 0;
    for (; bn_simulation_time(b) < 0.5; batches_held++) TU_OK(bn_simulation_advance(b, 0.5, 100000, NULL));
    print_message("to t = 0.5: %ld steps, %ld rebuilds stepped, %ld in %ld batches\n", 60 + ra.steps, builds_held,
                  bn_simulation_block_info(b).tree_builds, batches_held);
    assert_true(batches_held <= ra.steps + 16 + 1); /* the hold but its last 16 steps in one batch */
    assert_int_equal(bn_simulation_block_info(b).tree_builds, builds_held);
    assert_int_equal(a->tuner.hold, b->tuner.hold);
    run_to(a, t_end);
    long batches = 0;
    while (bn_simulation_time(b) < t_end) {
        TU_OK(bn_simulation_advance(b, t_end, 100000, NULL));
        batches++;
    }
    const long builds_a = bn_simulation_block_info(a).tree_builds, builds_b = bn_simulation_block_info(b).tree_builds;
    print_message("held 60: %ld steps to t = 0.5, %ld rebuilds; to t = 1: %ld rebuilds stepped, %ld in %ld batches\n",
                  60 + ra.steps, builds_held, builds_a, builds_b, batches);
    assert_int_equal(builds_a, builds_b);
    assert_true(builds_a < builds_held + (long)ra.steps / 2); /* refreshes after the hold */
    same_bits_then_free(a, b, p, p2);
}

/* Direct summation has no tree to refresh: its block steps under
 * tree_rebuild 0 run in batches, as with tree_rebuild 1, not a step per
 * batch for a tuner that has nothing to weigh. */
static void test_direct_summation_batches(void **state)
{
    (void)state;
    bn_ic_params icp = bn_ic_params_default();
    icp.n = 512;
    icp.seed = 5;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&icp, &p));
    bn_integrator_params ip = bn_integrator_params_default();
    ip.dt = 1.0 / 16, ip.eta = 0.1, ip.time_bins = 5, ip.tree_rebuild = 0;
    bn_simulation *sim = tu_make_sim(p, tu_block_gravity(BN_BACKEND_CPU, BN_METHOD_DIRECT, 0.01), ip);
    long made = 0;
    TU_OK(bn_simulation_advance(sim, 0.5, 1000, &made));
    print_message("direct summation, block steps: %ld steps in the first batch\n", made);
    assert_true(made > 1);
    bn_simulation_free(sim);
    bn_particles_free(p);
}

/* rebuild_cost time: the run completes with the energy
 * error of the work rule's (whatever the timing: every rebuild choice is
 * a valid tree), and the tuner measured a rebuild. */
static void test_timed_runs_conserve_energy(void **state)
{
    (void)state;
    bn_particles *p = NULL;
    bn_simulation *sim = plummer_sim(&p, BN_TUNE_TIME);
    const run_result r = run_to(sim, 0.5);
    print_message("time: %ld steps, %ld rebuilds, %ld refreshes, energy error %.2e\n", r.steps, r.builds,
                  r.refreshes, r.rel);
    assert_true(r.steps > 20);
    assert_true(r.builds > 0);
    assert_true(r.rel < 2e-4);
    bn_simulation_free(sim);
    bn_particles_free(p);
}

/* The default rebuilds at every step (refreshed trees drift in energy at
 * large N: BENCHMARKS.md session 28); the self-tuned rebuild weighs
 * counted work by default (the same bits every run); an unknown cost rule
 * is refused. */
static void test_bad_rebuild_cost(void **state)
{
    (void)state;
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    bn_integrator_params ip = bn_integrator_params_default();
    assert_int_equal(ip.tree_rebuild, 1);
    assert_int_equal(ip.rebuild_cost, BN_TUNE_WORK);
    ip.rebuild_cost = (bn_tune_cost)2;
    TU_FAILS(bn_simulation_set_integrator(sim, &ip), BN_ERR_ARGUMENT, "rebuild_cost");
    bn_simulation_free(sim);
}

/* The refreshes' lag does net work k (k - K) dt / 2 (times its power)
 * over an interval of k steps whose build led by (K - 1) dt / 2, so a
 * lead from the intervals' length-weighted mean (sum k^2 / sum k) leaves
 * far less net work than one from the last interval when the rule's
 * intervals vary; held builds (the next step rebuilds as well) lead by
 * nothing and their intervals are not counted. */
static double lag_work(const long *k, int n, int last_interval)
{
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    double work = 0, K = 1;
    long ended = 1;
    for (int i = 0; i < n; i++) {
        const double lead = bn_rebuild_tuner_lead_steps(&t, ended);
        K = last_interval ? (double)ended : lead;
        work += (double)k[i] * ((double)k[i] - K) / 2;
        ended = k[i];
    }
    return work;
}

static void test_builds_lead_by_the_intervals_length_weighted(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    assert_true(bn_rebuild_tuner_lead_steps(&t, 3) == 3); /* nothing recorded yet: the interval that ends */
    assert_true(bn_rebuild_tuner_lead_steps(&t, 2) == 2); /* one interval of 2 */
    const double k = bn_rebuild_tuner_lead_steps(&t, 6); /* 2 and 6, weights 1/8 and 7/64 (decayed) */
    const double w = BN_REBUILD_LEAD_DECAY;
    const double want = ((1 - w) * w * 4 + w * 36) / ((1 - w) * w * 2 + w * 6);
    assert_true(fabs(k - want) < 1e-12 && k > 4.0); /* above the mean: long intervals weigh more */
    t.hold = 3; /* held: the next step rebuilds, no lead, and its interval is not counted */
    assert_true(bn_rebuild_tuner_lead_steps(&t, 5) == 1);
    const double k2 = t.lead_k2, k1 = t.lead_k;
    t.hold = 1; /* the last held rebuild: the next step may refresh */
    assert_true(bn_rebuild_tuner_lead_steps(&t, 1) > 1);
    assert_true(t.lead_k2 == k2 && t.lead_k == k1);
    /* a quiet batch of held rebuilds closes the interval first (2 steps:
     * the build and a probe); the next recorded build, after the batch
     * (steps_since_build 1), records nothing more */
    t.hold = 0;
    (void)bn_rebuild_tuner_lead_steps(&t, 4);
    const double before2 = t.lead_k2;
    bn_rebuild_tuner_close_interval(&t, 2);
    assert_true(t.lead_k2 == (1 - w) * before2 + w * 4);
    const double closed2 = t.lead_k2;
    (void)bn_rebuild_tuner_lead_steps(&t, 1);
    assert_true(t.lead_k2 == closed2);
    /* intervals of the counted rule on M31 (2 and 4 mostly, now and then
     * 8 to 19 after short ones): the net work of the lag */
    long seq[400];
    unsigned long long r = 12345;
    for (int i = 0; i < 400; i++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        const int u = (int)((r >> 33) % 100);
        seq[i] = u < 55 ? 2 : u < 85 ? 4 : u < 95 ? 8 : 12 + u % 8;
    }
    const double mean = lag_work(seq, 400, 0), last = lag_work(seq, 400, 1);
    print_message("net lag work over 400 intervals: length-weighted lead %.1f, last interval %.1f\n", mean, last);
    assert_true(fabs(mean) < 0.25 * fabs(last));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_growth_finds_the_optimum),
        cmocka_unit_test(test_builds_lead_by_the_intervals_length_weighted),
        cmocka_unit_test(test_first_refresh_too_dear_rebuilds_every_step),
        cmocka_unit_test(test_dear_probes_wait_longer),
        cmocka_unit_test(test_probes_take_the_finest_bin),
        cmocka_unit_test(test_quieting_down_is_noticed),
        cmocka_unit_test(test_bins_are_compared_with_their_own),
        cmocka_unit_test(test_coarse_steps_are_foreseen),
        cmocka_unit_test(test_superlinear_growth),
        cmocka_unit_test(test_free_fresh_walk),
        cmocka_unit_test(test_learns_before_refreshing),
        cmocka_unit_test(test_refused_refreshes),
        cmocka_unit_test(test_work_step_costs),
        cmocka_unit_test(test_work_rule_follows_visits),
        cmocka_unit_test(test_work_runs_are_bit_reproducible),
        cmocka_unit_test(test_held_rebuilds_in_batches),
        cmocka_unit_test(test_direct_summation_batches),
        cmocka_unit_test(test_timed_runs_conserve_energy),
        cmocka_unit_test(test_bad_rebuild_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
