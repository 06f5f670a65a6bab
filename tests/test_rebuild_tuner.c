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

/* A made-up machine running block-step cycles: 2^finest steps of the
 * finest bin, count[b] particles in bin b; the step at tick i (1..2^f)
 * has first active bin f - v2(i) (0 at the cycle's end), and its walk
 * costs per (1 + growth k^power) a particle on a tree refreshed k times
 * (times noise); its tree time is build or refresh. */
typedef struct machine {
    int finest;
    double count[BN_TIME_BINS_MAX];
    double per, growth, power, build, refresh, noise;
    double length; /* a cycle's (1; less where it lands on an output) */
    unsigned long long rng;
    long k; /* refreshes since the last build */
} machine;

static double jitter(machine *m)
{
    m->rng = m->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = (double)(m->rng >> 11) / 9007199254740992.0; /* [0, 1) */
    return 1 + m->noise * (2 * u - 1);
}

static int first_active_bin(int finest, long tick)
{
    int b = finest;
    for (long i = tick; i % 2 == 0 && b > 0; i /= 2) b--;
    return b;
}

static double active_at(const machine *m, int bin_min)
{
    double n = 0;
    for (int b = bin_min; b <= m->finest; b++) n += m->count[b];
    return n;
}

/* The cost of the step at `tick` rebuilt or not (noise-free), and the
 * machine's step as the tuner sees it. */
static double step_cost(const machine *m, int bin_min, int rebuild, long k)
{
    const double walk = active_at(m, bin_min) * m->per * (1 + (rebuild ? 0 : m->growth * pow((double)k, m->power)));
    return walk + (rebuild ? m->build : m->refresh);
}

/* The step at tick i of a cycle under the tuner (a rebuild at its end,
 * as the caller makes it); returns its cost. */
static double tick(bn_rebuild_tuner *t, machine *m, long i)
{
    const long steps = 1L << m->finest;
    const int bin_min = i == steps ? 0 : first_active_bin(m->finest, i);
    const int rebuild = i == steps || bn_rebuild_tuner_wants(t, bin_min, m->finest);
    m->k = rebuild ? 0 : m->k + 1;
    const double c = step_cost(m, bin_min, rebuild, m->k);
    const double tree = rebuild ? m->build : m->refresh;
    const int closes = i == steps - 1 || steps == 1; /* the next step ends the cycle */
    bn_rebuild_step s = {bin_min,          rebuild,       i == steps, closes, m->length / (double)steps, m->length,
                         m->length < 1, (c - tree) * jitter(m), tree * jitter(m)};
    bn_rebuild_tuner_record(t, &s);
    return c;
}

/* One cycle under the tuner; returns its cost. */
static double cycle(bn_rebuild_tuner *t, machine *m)
{
    double total = 0;
    for (long i = 1; i <= 1L << m->finest; i++) total += tick(t, m, i);
    return total;
}

/* A tuner that knew nothing after `cycles` cycles of the machine. */
static bn_rebuild_tuner settled(machine *m, int cycles)
{
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < cycles; i++) cycle(&t, m);
    return t;
}

/* A cycle's cost at a fixed period m (noise-free): the rule's target. */
static double cycle_at(const machine *m, long period)
{
    const long steps = 1L << m->finest;
    double total = 0;
    long k = 0;
    for (long i = 1; i <= steps; i++) {
        const int bin_min = i == steps ? 0 : first_active_bin(m->finest, i);
        const int rebuild = i == steps || bin_min <= m->finest - period;
        k = rebuild ? 0 : k + 1;
        total += step_cost(m, bin_min, rebuild, k);
    }
    return total;
}

static long best_period(const machine *m)
{
    long best = 0;
    for (long p = 1; p <= m->finest; p++)
        if (cycle_at(m, p) < cycle_at(m, best)) best = p;
    return best;
}

/* M31-like: 6 bins below the finest, the finer the fewer particles;
 * a rebuild 2.5 times a refresh's tree time, a fresh walk of the finest
 * bin alone about as long as a rebuild. */
static machine galaxy(double growth)
{
    machine m;
    memset(&m, 0, sizeof m);
    m.finest = 6;
    const double count[7] = {4e5, 8e5, 8e5, 7e5, 6e5, 3e5, 2e5};
    memcpy(m.count, count, sizeof count);
    m.per = 6e-9;
    m.growth = growth;
    m.power = 1;
    m.build = 1.7e-3;
    m.refresh = 0.7e-3;
    m.rng = 7;
    m.length = 1;
    return m;
}

/* Over growths from none to dear, the rule settles on the period whose
 * cycle costs least (brute force over the periods of the same machine),
 * or one within its margin of it (it stops climbing where the next
 * period gains less), and its run costs at most 2% more than that
 * period's would have from the start: the reference, the trials and the
 * lead-in included. */
static void test_settles_on_the_cheapest_period(void **state)
{
    (void)state;
    const double growths[] = {0, 0.02, 0.1, 0.3, 1, 5};
    long seen[BN_TIME_BINS_MAX + 1] = {0};
    for (int c = 0; c < 6; c++) {
        machine m = galaxy(growths[c]);
        bn_rebuild_tuner t;
        memset(&t, 0, sizeof t);
        double total = 0;
        for (int i = 0; i < 300; i++) total += cycle(&t, &m);
        const long want = best_period(&m);
        const double ideal = 300 * cycle_at(&m, want), every = 300 * cycle_at(&m, 0);
        print_message("growth %g: best period %ld (tuner %ld), cost %.4f of the best's, %.4f of every step's; %ld "
                      "trials, %ld failed\n", growths[c], want, t.best, total / ideal, total / every, t.trials,
                      t.trials_failed);
        assert_true(cycle_at(&m, t.best) <= (1 + 2 * BN_REBUILD_MARGIN) * cycle_at(&m, want));
        assert_true(total <= 1.02 * ideal);
        seen[want]++;
    }
    /* the machines span the choices: rebuilding only at cycles' ends,
     * at every step, and between */
    assert_true(seen[6] > 0 && seen[0] > 0 && (seen[1] + seen[2] + seen[3]) > 0);
}

/* Measured times jitter: with 5% noise a step, the rule still finds a
 * period within 3% of the best, and costs at most 3% over the best's. */
static void test_noise(void **state)
{
    (void)state;
    const double growths[] = {0.02, 0.3, 5};
    for (int c = 0; c < 3; c++) {
        machine m = galaxy(growths[c]);
        m.noise = 0.05;
        bn_rebuild_tuner t;
        memset(&t, 0, sizeof t);
        double total = 0;
        for (int i = 0; i < 400; i++) total += cycle(&t, &m);
        const long want = best_period(&m);
        print_message("noise 5%%, growth %g: best %ld, tuner %ld, cost %.4f of the best's\n", growths[c], want, t.best,
                      total / (400 * cycle_at(&m, want)));
        assert_true(total <= 1.03 * 400 * cycle_at(&m, want));
        assert_true(cycle_at(&m, t.best) <= 1.03 * cycle_at(&m, want));
    }
}

/* Failed trials hold the best period longer each time (up to
 * BN_REBUILD_HOLD_MAX cycles), so where refreshing never pays they cost
 * ever less: over 1000 cycles under 0.5% more than rebuilding at every
 * step; and a hold of period 0 is quiet (no read a step) but its last
 * step. */
static void test_dear_refreshes_hold_longer(void **state)
{
    (void)state;
    machine m = galaxy(20);
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    double total = 0;
    long quiet = 0, trials = 0;
    for (int i = 0; i < 1000; i++) {
        if (bn_rebuild_tuner_quiet_steps(&t) > 0) quiet++;
        total += cycle(&t, &m);
        if (i == 100) trials = t.trials;
    }
    print_message("refreshes 20x dear: %ld trials (%ld by cycle 100), cost %.4f of every step's\n", t.trials, trials,
                  total / (1000 * cycle_at(&m, 0)));
    assert_int_equal(t.best, 0);
    assert_int_equal(t.trials, t.trials_failed);
    assert_true(t.trials <= trials + 900 / BN_REBUILD_HOLD_MAX + 1);
    assert_true(total < 1.005 * 1000 * cycle_at(&m, 0));
    assert_true(quiet > 500);
    /* a hold at period 0: the quiet steps are the hold's but its last */
    memset(&t, 0, sizeof t);
    t.phase = BN_TUNER_HOLD, t.hold = 63;
    assert_int_equal(bn_rebuild_tuner_quiet_steps(&t), 62);
    bn_rebuild_tuner_quiet_done(&t, 62);
    assert_int_equal(t.hold, 1);
    assert_int_equal(t.phase, BN_TUNER_HOLD);
    assert_int_equal(bn_rebuild_tuner_quiet_steps(&t), 0); /* the last, recorded: */
    const bn_rebuild_step last = {7, 1, 0, 1, 0.01, 1, 0, 1, 1}; /* it closes a window */
    bn_rebuild_tuner_record(&t, &last);
    assert_int_equal(t.phase, BN_TUNER_REFERENCE);
    assert_int_equal(t.pending, 1); /* the next window begins after the cycle's end */
    assert_int_equal(bn_rebuild_tuner_quiet_steps(&t), 0);
    t.phase = BN_TUNER_HOLD, t.hold = 5, t.period = 1; /* a period of 1 reads the clock at every step */
    assert_int_equal(bn_rebuild_tuner_quiet_steps(&t), 0);
}

/* A distribution that quiets down (a collapse that virialises) is
 * noticed within a hold: refreshing at first 20x dear, then cheap. */
static void test_quieting_down_is_noticed(void **state)
{
    (void)state;
    machine m = galaxy(20);
    bn_rebuild_tuner t = settled(&m, 500);
    assert_int_equal(t.best, 0);
    m.growth = 0.02;
    const long want = best_period(&m);
    int when = -1;
    for (int i = 0; i < 3 * BN_REBUILD_HOLD_MAX && when < 0; i++) {
        cycle(&t, &m);
        if (cycle_at(&m, t.best) <= (1 + 2 * BN_REBUILD_MARGIN) * cycle_at(&m, want)) when = i;
    }
    print_message("quieted down: the best period %ld, the tuner's %ld after %d cycles\n", want, t.best, when);
    assert_true(want >= 2);
    assert_true(when >= 0 && when <= BN_REBUILD_HOLD_MAX + 2 * (want + 2));
}

/* A trial that loses 20-50% a cycle is given up at the cycle's checks,
 * within its first quarter, not at its end (and not by the 1.5x rate
 * abort, which waits for dearer refreshes). */
static void test_losing_trial_given_up_early(void **state)
{
    (void)state;
    double g = 0.5;
    machine m = galaxy(g);
    while (cycle_at(&m, 1) < 1.2 * cycle_at(&m, 0) && g < 100) m = galaxy(g *= 1.25);
    const double loss = cycle_at(&m, 1) / cycle_at(&m, 0);
    assert_true(loss >= 1.2 && loss < 1.5);
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    cycle(&t, &m); /* opens the first window */
    cycle(&t, &m); /* the reference at period 0; then the trial of 1 */
    assert_int_equal(t.phase, BN_TUNER_TRIAL);
    assert_int_equal(t.period, 1);
    const long steps = 1L << m.finest;
    long given_up = 0;
    for (long i = 1; i <= steps; i++) {
        tick(&t, &m, i);
        if (!given_up && t.phase != BN_TUNER_TRIAL) given_up = i;
    }
    print_message("a trial %.0f%% dearer given up at step %ld of %ld\n", 100 * (loss - 1), given_up, steps);
    assert_true(given_up > 0 && given_up <= steps / 4);
    assert_int_equal(t.period, 0);
    assert_int_equal(t.trials_failed, 1);
}

/* A collapse that sets in while a period is held: its refreshes turn
 * 50 times dear; the held period gives way within the cycle's first
 * quarter (not after the hold), and the next 100 cycles cost at most 3% more than
 * rebuilding at every step. */
static void test_held_period_turning_dear(void **state)
{
    (void)state;
    machine m = galaxy(0.02);
    bn_rebuild_tuner t = settled(&m, 100);
    const long held = t.best;
    assert_true(held >= 2);
    m.growth = 50;
    long dropped = 0;
    for (long i = 1; i <= 1L << m.finest; i++) {
        tick(&t, &m, i);
        if (!dropped && t.drops) dropped = i;
    }
    assert_true(dropped > 0 && dropped <= 1L << (m.finest - 2)); /* within the cycle's first quarter */
    assert_int_equal(t.drops, 1);
    assert_int_equal(t.period, 0);
    double total = 0;
    for (int i = 0; i < 100; i++) total += cycle(&t, &m);
    print_message("held period %ld dropped; the next 100 cycles cost %.4f of every step's\n", held,
                  total / (100 * cycle_at(&m, 0)));
    assert_int_equal(t.best, 0);
    assert_true(total <= 1.03 * 100 * cycle_at(&m, 0));
}

/* Refreshes that turn dear slowly while a period is held (15% more a
 * cycle): each held window is within the abort of the last, but the
 * hold ends in a trial of the period below once a window costs 10% more
 * than the hold's first; 80 such cycles cost at most 10% more than the
 * best period's of each cycle. */
static void test_slow_drift_ends_the_hold(void **state)
{
    (void)state;
    machine m = galaxy(0.02);
    bn_rebuild_tuner t = settled(&m, 200);
    assert_true(t.best >= 2);
    while (t.phase != BN_TUNER_HOLD) cycle(&t, &m);
    double total = 0, ideal = 0;
    for (int i = 0; i < 80; i++) {
        m.growth *= 1.15;
        total += cycle(&t, &m);
        ideal += cycle_at(&m, best_period(&m));
    }
    print_message("refreshes 15%% dearer a cycle: 80 cycles cost %.4f of the best periods', the tuner's period now %ld\n",
                  total / ideal, t.best);
    assert_int_equal(t.best, best_period(&m));
    assert_true(total <= 1.1 * ideal);
}

/* `cycles` more cycles of the changed machine m under t: the rule ends
 * on a period within twice its margin of the best's, and they cost at
 * most 3% more than the best period's. */
static void settles_after_change(bn_rebuild_tuner *t, machine *m, int cycles, const char *what)
{
    double total = 0;
    for (int i = 0; i < cycles; i++) total += cycle(t, m);
    const long want = best_period(m);
    print_message("%s: best period %ld (tuner %ld), cost %.4f of the best's, %ld drops\n", what, want, t->best,
                  total / (cycles * cycle_at(m, want)), t->drops);
    assert_true(cycle_at(m, t->best) <= (1 + 2 * BN_REBUILD_MARGIN) * cycle_at(m, want));
    assert_true(total <= 1.03 * cycles * cycle_at(m, want));
}

/* The finest bin moves to a coarser one (3 from 6) while period 4 is
 * best: the period becomes the finest's (3: rebuilds at the cycles' ends
 * alone), and the rule tries the periods below it, not the ones that
 * all mean the same. */
static void test_finest_moves_coarser(void **state)
{
    (void)state;
    machine m = galaxy(0);
    bn_rebuild_tuner t = settled(&m, 100);
    assert_true(t.best >= 4);
    m.finest = 3;
    m.growth = 0.3; /* now the best is below 3 */
    settles_after_change(&t, &m, 300, "finest bin 3 from 6");
    assert_true(t.best <= 3);
}

/* The finest bin moves to a finer one (7 from 6) while a period is
 * held: no drop (the checks of a 64-step cycle are not compared with a
 * 128-step one's), and the rule settles near the new best. */
static void test_finest_moves_finer(void **state)
{
    (void)state;
    machine m = galaxy(0.02);
    bn_rebuild_tuner t = settled(&m, 100);
    assert_true(t.best >= 2);
    m.finest = 7;
    m.count[7] = 1e5;
    settles_after_change(&t, &m, 200, "finest bin 7 from 6");
    assert_int_equal(t.drops, 0);
}

/* Cycles shortened to land on output times (a quarter of a cycle, now
 * and then, here with a cycle's steps and costs: 4 times the rate) are
 * not measured: they neither drop a held period nor fail a trial. */
static void test_landing_cycles(void **state)
{
    (void)state;
    machine m = galaxy(0.02);
    bn_rebuild_tuner t = settled(&m, 100);
    const long best = t.best, failed = t.trials_failed;
    for (int i = 0; i < 200; i++) {
        m.length = i % 10 == 9 ? 0.25 : 1;
        cycle(&t, &m);
    }
    print_message("landing cycles: best %ld -> %ld, %ld drops, %ld more failed trials\n", best, t.best, t.drops,
                  t.trials_failed - failed);
    assert_int_equal(t.drops, 0);
    assert_int_equal(t.best, best);
}

/* Every particle in the coarsest bin (cycles of one step, every step
 * rebuilt at its end): nothing to try; the rule holds period 0 for the
 * longest hold, quiet (no read a step) but its last step. */
static void test_cycles_of_one_step(void **state)
{
    (void)state;
    machine m = galaxy(0);
    m.finest = 0;
    bn_rebuild_tuner t = settled(&m, 4);
    assert_int_equal(t.phase, BN_TUNER_HOLD);
    assert_int_equal(t.period, 0);
    assert_int_equal(t.hold_windows, BN_REBUILD_HOLD_MAX);
    assert_true(bn_rebuild_tuner_quiet_steps(&t) >= BN_REBUILD_HOLD_MAX - 4);
    assert_int_equal(t.trials, 0);
    /* one bin: the host never chooses (every step ends a cycle) */
    assert_false(bn_block_steps_refresh(BN_METHOD_TREE, 1, 0));
    assert_true(bn_block_steps_refresh(BN_METHOD_TREE, 2, 0));
}

/* The period is aligned with the cycle: period m rebuilds exactly at the
 * steps whose first active bin is at most finest - m, so a period of 1
 * refreshes only for steps of the finest bin alone; a tree built under
 * period m leads by 2^m steps, at most the cycle's. */
static void test_aligned_period_and_lead(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    assert_true(bn_rebuild_tuner_wants(&t, 7, 7)); /* nothing known: every step */
    assert_true(bn_rebuild_tuner_lead_steps(&t) == 1);
    t.period = 1, t.finest = 7;
    assert_false(bn_rebuild_tuner_wants(&t, 7, 7));
    assert_true(bn_rebuild_tuner_wants(&t, 6, 7));
    assert_true(bn_rebuild_tuner_lead_steps(&t) == 2);
    t.period = 3;
    assert_false(bn_rebuild_tuner_wants(&t, 5, 7));
    assert_true(bn_rebuild_tuner_wants(&t, 4, 7));
    assert_true(bn_rebuild_tuner_lead_steps(&t) == 8);
    t.finest = 2; /* a cycle of 4 steps rebuilt at its end alone */
    assert_true(bn_rebuild_tuner_lead_steps(&t) == 4);
    /* steps between the rebuilds of period 2 in a cycle of 8 */
    memset(&t, 0, sizeof t);
    t.period = 2, t.phase = BN_TUNER_HOLD, t.hold = 100, t.best = 2;
    char pattern[9] = {0};
    for (long i = 1; i <= 8; i++) {
        const int b = i == 8 ? 0 : first_active_bin(3, i);
        pattern[i - 1] = i == 8 || bn_rebuild_tuner_wants(&t, b, 3) ? 'B' : 'r';
    }
    assert_string_equal(pattern, "rrrBrrrB");
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
    assert_true(fabs(s.walk - (flops + 430 * 5e4)) <= 1e-9 * s.walk);
    assert_true(s.tree == BN_REBUILD_WORK_PER_PARTICLE * 1e5);
    s = bn_rebuild_step_work(2, 0, n_active, count, 1e5);
    assert_true(s.tree == 0);
}

/* A window of no time, or of a cost that is not finite, decides
 * nothing: it is measured again. */
static void test_empty_window(void **state)
{
    (void)state;
    bn_rebuild_tuner t;
    memset(&t, 0, sizeof t);
    bn_rebuild_step end = {0, 1, 1, 1, 0, 1, 0, 1, 1}; /* whole cycles of one step */
    bn_rebuild_tuner_record(&t, &end);           /* opens a window */
    assert_int_equal(t.window_open, 1);
    bn_rebuild_tuner_record(&t, &end); /* no time */
    assert_int_equal(t.phase, BN_TUNER_REFERENCE);
    end.dt = 1, end.walk = NAN;
    bn_rebuild_tuner_record(&t, &end);
    assert_int_equal(t.phase, BN_TUNER_REFERENCE);
    assert_int_equal(t.period, 0);
}

/* ---- simulations (CPU) ---- */

static bn_simulation *plummer_sim(bn_particles **p, bn_tune_cost cost)
{
    bn_ic_params icp = bn_ic_params_default();
    icp.n = 2048;
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
 * (simulation.c's quiet steps). A hold of 60 at period 0 set after the
 * first step: stepped a step at a time, it counts down by one a step,
 * every step a rebuild, and is over after exactly 60; a run advanced in
 * long batches (the hold in one) makes the same rebuilds and bits, then
 * and after it, when the tuner tries refreshes again. */
static void test_held_rebuilds_in_batches(void **state)
{
    (void)state;
    bn_particles *p = NULL, *p2 = NULL;
    bn_simulation *a = plummer_sim(&p, BN_TUNE_WORK), *b = plummer_sim(&p2, BN_TUNE_WORK);
    const double t_end = 1;
    TU_OK(bn_simulation_step(a, NULL));
    TU_OK(bn_simulation_step(b, NULL));
    a->tuner.phase = b->tuner.phase = BN_TUNER_HOLD;
    a->tuner.period = b->tuner.period = 0;
    a->tuner.hold = b->tuner.hold = 60;
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
    assert_true(batches_held <= ra.steps + 2); /* the hold but its last step in one batch */
    assert_int_equal(bn_simulation_block_info(b).tree_builds, builds_held);
    assert_int_equal(a->tuner.hold, b->tuner.hold);
    const run_result after = run_to(a, t_end);
    assert_true(after.refreshes > 0); /* the tuner tried refreshes after the hold */
    long batches = 0;
    while (bn_simulation_time(b) < t_end) {
        TU_OK(bn_simulation_advance(b, t_end, 100000, NULL));
        batches++;
    }
    const long builds_a = bn_simulation_block_info(a).tree_builds, builds_b = bn_simulation_block_info(b).tree_builds;
    print_message("held 60: %ld steps to t = 0.5, %ld rebuilds; to t = 1: %ld rebuilds stepped, %ld in %ld batches\n",
                  60 + ra.steps, builds_held, builds_a, builds_b, batches);
    assert_int_equal(builds_a, builds_b);
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
    assert_true(r.builds > 0 && r.refreshes > 0);
    /* it measured whole cycles: a trial's verdict, or a drop to every step
     * (measured times: one step of a 2048-particle run slowed several
     * times by the machine, under the sanitizers, can drop a period) */
    assert_true(sim->tuner.trials > 0 || sim->tuner.drops > 0);
    assert_true(sim->tuner.best_rate > 0 || sim->tuner.drops > 0);
    print_message("last window: %ld steps of a cycle of %ld\n", sim->tuner.closed_steps, sim->tuner.window_cycle);
    assert_true(sim->tuner.window_cycle > 1); /* a cycle's steps but its end (simulation.c's closes) */
    assert_int_equal(sim->tuner.closed_steps, sim->tuner.window_cycle - 1);
    assert_true(r.rel < 2e-4);
    bn_simulation_free(sim);
    bn_particles_free(p);
}

/* The default is the self-tuned rebuild (never slower than every step on
 * the five models of issue 19: BENCHMARKS.md session 31), weighing
 * counted work (the same bits every run); an unknown cost rule is
 * refused. */
static void test_bad_rebuild_cost(void **state)
{
    (void)state;
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    bn_integrator_params ip = bn_integrator_params_default();
    assert_int_equal(ip.tree_rebuild, 0);
    assert_int_equal(ip.rebuild_cost, BN_TUNE_WORK);
    ip.rebuild_cost = (bn_tune_cost)2;
    TU_FAILS(bn_simulation_set_integrator(sim, &ip), BN_ERR_ARGUMENT, "rebuild_cost");
    bn_simulation_free(sim);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settles_on_the_cheapest_period),
        cmocka_unit_test(test_noise),
        cmocka_unit_test(test_dear_refreshes_hold_longer),
        cmocka_unit_test(test_quieting_down_is_noticed),
        cmocka_unit_test(test_held_period_turning_dear),
        cmocka_unit_test(test_losing_trial_given_up_early),
        cmocka_unit_test(test_slow_drift_ends_the_hold),
        cmocka_unit_test(test_finest_moves_coarser),
        cmocka_unit_test(test_finest_moves_finer),
        cmocka_unit_test(test_landing_cycles),
        cmocka_unit_test(test_cycles_of_one_step),
        cmocka_unit_test(test_aligned_period_and_lead),
        cmocka_unit_test(test_work_step_costs),
        cmocka_unit_test(test_empty_window),
        cmocka_unit_test(test_work_runs_are_bit_reproducible),
        cmocka_unit_test(test_held_rebuilds_in_batches),
        cmocka_unit_test(test_direct_summation_batches),
        cmocka_unit_test(test_timed_runs_conserve_energy),
        cmocka_unit_test(test_bad_rebuild_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
