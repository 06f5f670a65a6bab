/* The error target's search (tune.h). */
#include "gravity/tune.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/timer.h"
#include "gravity/interact.h"
#include "parallel/comm.h"

#define TUNE_SEED 0x7e57u      /* the search's sample: the same targets for
                                  every candidate (paired comparisons)    */
#define THETA_MIN 0.05
#define THETA_MAX 1.0
#define THETA_EVALS 7          /* most evaluations of one theta search    */
#define SEARCH_EVALS 90        /* most evaluations of one whole search    */
#define SHORT_EVAL 0.02        /* BN_TUNE_TIME: evaluations shorter than
                                  this (s) are timed twice, the faster kept */
#define HOPELESS 3.0           /* a theta search stops once a trial costs
                                  this many times the best so far: smaller
                                  thetas only cost more (at 2^24 a theta of
                                  0.1 takes seconds per evaluation)       */
#define BUDGET 100.0           /* the descent stops after this many times
                                  the best evaluation's wall time (at
                                  least BUDGET_MIN s): a search worth 100
                                  steps at most                           */
#define BUDGET_MIN 2.0

/* One evaluated candidate. */
typedef struct trial {
    bn_gravity_params g;
    bn_error_stats err;  /* on the search's sample                  */
    double cost;         /* seconds, or flops (BN_TUNE_WORK)         */
    int ok;              /* p99 <= the aim                           */
} trial;

/* A search under way. */
typedef struct search {
    const bn_tune_env *e;
    double aim;          /* the sample p99 aimed at: BN_TUNE_MARGIN E  */
    bn_accuracy *acc;    /* counts its evaluations                   */
    trial last;          /* the backend's forces are this trial's    */
} search;

/* The error of the backend's current forces on a sample of
 * g->error_sample targets chosen by seed, against double direct summation. */
static bn_status sample_error(const bn_tune_env *e, const bn_gravity_params *g, uint64_t seed, bn_error_stats *out)
{
    size_t s = (size_t)g->error_sample;
    if (s > e->n) s = e->n;
    double *buf = bn_alloc(8 * s * sizeof(double), "error sample");
    if (!buf) return BN_ERR_NOMEM;
    double *ref = buf, *pref = buf + 3 * s, *acc = buf + 4 * s, *pot = buf + 7 * s;
    bn_status r = e->ops->sample_forces(e->state, s, seed, ref, pref, acc, pot);
    if (r == BN_OK) r = bn_error_stats_compute(s, acc, ref, pot, pref, out);
    free(buf);
    return r;
}

/* The cost of the evaluation just made (its stats), timed again when short. */
static bn_status measure(const bn_tune_env *e, const bn_gravity_params *g, const bn_force_stats *st, double wall,
                         double *cost)
{
    if (g->error_cost == BN_TUNE_WORK) {
        /* every rank's interactions (e->n is every rank's particles) */
        double w[3] = {st->n_pp, st->n_pc, st->n_far};
        BN_TRY(bn_comm_allreduce(e->comm, w, 3, BN_REDUCE_SUM));
        *cost = bn_walk_flops(w[0], w[1], w[2], (double)e->n) + BN_REBUILD_FLOPS_PER_PARTICLE * (double)e->n;
        return BN_OK;
    }
    /* the GPU's stage events hold the device's time; the CPU's, the call's;
     * over the ranks the slowest rank's (a collective call takes that long,
     * and every rank must weigh the same number) */
    *cost = e->gpu ? st->t_total : wall;
    BN_TRY(bn_comm_allreduce(e->comm, cost, 1, BN_REDUCE_MAX));
    if (*cost >= SHORT_EVAL) return BN_OK;
    bn_force_stats again;
    const double t0 = bn_wall_seconds();
    BN_TRY(e->ops->forces(e->state, &again));
    double t = e->gpu ? again.t_total : bn_wall_seconds() - t0;
    BN_TRY(bn_comm_allreduce(e->comm, &t, 1, BN_REDUCE_MAX));
    if (t < *cost) *cost = t;
    return BN_OK;
}

/* BANYAN_TUNE_TRACE set: every trial on stderr (a diagnostic). */
static void trace(const trial *t)
{
    static int on = -1;
    if (on < 0) on = getenv("BANYAN_TUNE_TRACE") != NULL;
    if (!on) return;
    fprintf(stderr, "banyan tune: %s theta %.4f leaf %d group %d kappa %.2f: p99 %.3e cost %.4g%s\n",
            bn_mac_name(t->g.mac), t->g.theta, t->g.leaf_size, t->g.group_size, t->g.group_expansion,
            t->err.acc_p99, t->cost, t->ok ? " ok" : "");
}

static bn_status evaluate(search *sr, const bn_gravity_params *g, trial *t)
{
    const bn_tune_env *e = sr->e;
    memset(t, 0, sizeof *t);
    t->g = *g;
    BN_TRY(e->ops->set_params(e->state, g));
    bn_force_stats st;
    const double t0 = bn_wall_seconds();
    BN_TRY(e->ops->forces(e->state, &st));
    const double wall = bn_wall_seconds() - t0;
    BN_TRY(measure(e, g, &st, wall, &t->cost));
    BN_TRY(sample_error(e, g, TUNE_SEED, &t->err));
    t->ok = t->err.acc_p99 <= sr->aim;
    sr->acc->evaluations++;
    sr->last = *t;
    trace(t);
    return BN_OK;
}

/* a is better than b: it meets the aim and costs less (2% hysteresis
 * against timing noise), or neither meets it and a errs less. */
static int better(const trial *a, const trial *b)
{
    if (a->ok != b->ok) return a->ok;
    if (a->ok) return a->cost < 0.98 * b->cost;
    return a->err.acc_p99 < b->err.acc_p99;
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The next theta: p99 ~ theta^k through the last trial (k from the last
 * two, else 3), aiming a little under the aim; inside the bracket
 * (lo feasible, hi not) when the model steps out of it. */
static double next_theta(const trial *t, const trial *prev, double aim, double lo, double hi)
{
    double k = 3;
    if (prev && prev->g.theta != t->g.theta && prev->err.acc_p99 > 0 && t->err.acc_p99 > 0)
        k = clampd(log(t->err.acc_p99 / prev->err.acc_p99) / log(t->g.theta / prev->g.theta), 1.0, 8.0);
    double th = t->err.acc_p99 > 0 ? t->g.theta * pow(0.95 * aim / t->err.acc_p99, 1.0 / k) : 2 * t->g.theta;
    if (lo > 0 && hi < INFINITY && (th <= lo || th >= hi)) th = sqrt(lo * hi);
    else if (hi < INFINITY && th >= hi) th = 0.9 * hi;
    else if (lo > 0 && th <= lo) th = 1.1 * lo;
    return clampd(th, THETA_MIN, THETA_MAX);
}

/* The largest theta meeting the aim for g's structure, from theta0: the
 * trial of that theta in *best (ok), or the most accurate one tried.
 * Gives up once a trial costs more than `limit` (it cannot win; without
 * one, 30 times the first trial's cost: smaller thetas cost more). */
static bn_status find_theta(search *sr, bn_gravity_params g, double theta0, double limit, trial *best)
{
    const double aim = sr->aim;
    if (g.error_fixed & BN_TUNE_THETA) return evaluate(sr, &g, best);
    double lo = 0, hi = INFINITY;
    trial t, prev = {0}, low = {0}, accurate = {0};
    int have_prev = 0;
    g.theta = clampd(theta0, THETA_MIN, THETA_MAX);
    for (int it = 0; it < THETA_EVALS; it++) {
        BN_TRY(evaluate(sr, &g, &t));
        if (it == 0 && limit == INFINITY) limit = 30 * t.cost;
        if (t.ok && g.theta > lo) {
            lo = g.theta;
            low = t;
        } else if (!t.ok && g.theta < hi) {
            hi = g.theta;
        }
        if (!have_prev || t.err.acc_p99 < accurate.err.acc_p99) accurate = t;
        if (lo > 0 && (low.err.acc_p99 >= 0.88 * aim || hi / lo < 1.03 || lo >= THETA_MAX)) break;
        if (hi <= THETA_MIN) break; /* not even the smallest theta meets it */
        if (t.cost > limit) break;
        /* a smaller theta that errs more: the floor of this structure (on
         * the GPU, float sums over 10^5 and more interactions per body
         * below theta ~0.2 at 2^24: BENCHMARKS.md, session 13) */
        if (have_prev && g.theta < prev.g.theta && t.err.acc_p99 >= prev.err.acc_p99) break;
        const double th = next_theta(&t, have_prev ? &prev : NULL, aim, lo, hi);
        prev = t;
        have_prev = 1;
        if (th == g.theta) break;
        g.theta = th;
    }
    *best = lo > 0 ? low : accurate;
    return BN_OK;
}

/* ---- the structure: mac, leaf size, group size, expansion ---- */
enum { DIM_MAC, DIM_LEAF, DIM_GROUP, DIM_KAPPA, N_DIMS };
static const double dim_values[N_DIMS][5] = {
    {BN_MAC_BONSAI, BN_MAC_BONSAI_BOX}, {8, 16, 32, 64}, {32, 64, 128, 256}, {0, 0.2, 0.3, 0.4, 0.6}};
static const int dim_count[N_DIMS] = {2, 4, 4, 5};

/* The first value a backend may take: the GPU's leaves hold at least 16
 * bodies (leaves of 8 take its memory from about 140 to 176-183 bytes
 * per particle, past the 150 it is held to: BENCHMARKS.md, session 13). */
static int dim_first(const bn_tune_env *e, int d) { return e->gpu && d == DIM_LEAF ? 1 : 0; }
static const unsigned dim_fixed_bit[N_DIMS] = {BN_TUNE_MAC, BN_TUNE_LEAF, BN_TUNE_GROUP, BN_TUNE_EXPANSION};

static void apply(bn_gravity_params *g, const int idx[N_DIMS])
{
    if (!(g->error_fixed & BN_TUNE_MAC)) g->mac = (bn_mac)(int)dim_values[DIM_MAC][idx[DIM_MAC]];
    if (!(g->error_fixed & BN_TUNE_LEAF)) g->leaf_size = (int)dim_values[DIM_LEAF][idx[DIM_LEAF]];
    if (!(g->error_fixed & BN_TUNE_GROUP)) g->group_size = (int)dim_values[DIM_GROUP][idx[DIM_GROUP]];
    if (!(g->error_fixed & BN_TUNE_EXPANSION)) g->group_expansion = dim_values[DIM_KAPPA][idx[DIM_KAPPA]];
}

/* Where the descent starts: the settings measured best for Plummer at
 * the GPU's sizes (BENCHMARKS.md), the library's defaults on the CPU;
 * small targets start from groups of 128 and expansion 0.2 (what the
 * searches chose at 1e-4, session 13). */
static void start_point(const bn_tune_env *e, double target, int idx[N_DIMS])
{
    idx[DIM_MAC] = 1; /* bonsai-box */
    if (e->gpu && e->n >= ((size_t)1 << 18) && target <= 2e-4) {
        idx[DIM_LEAF] = 1, idx[DIM_GROUP] = 2, idx[DIM_KAPPA] = 1; /* 16, 128, 0.2 */
    } else if (e->gpu && e->n >= ((size_t)1 << 22)) {
        idx[DIM_LEAF] = 2, idx[DIM_GROUP] = 3, idx[DIM_KAPPA] = 3; /* 32, 256, 0.4 */
    } else if (e->gpu && e->n >= ((size_t)1 << 18)) {
        idx[DIM_LEAF] = 2, idx[DIM_GROUP] = 2, idx[DIM_KAPPA] = 2; /* 32, 128, 0.3 */
    } else {
        idx[DIM_LEAF] = 1, idx[DIM_GROUP] = 1, idx[DIM_KAPPA] = 1; /* 16, 64, 0.2 */
    }
}

/* Seconds since t0, the largest over the ranks: the budget's decisions
 * the same on every rank. */
static bn_status elapsed(const bn_tune_env *e, double t0, double *t)
{
    *t = bn_wall_seconds() - t0;
    return bn_comm_allreduce(e->comm, t, 1, BN_REDUCE_MAX);
}

/* Coordinate descent from the start: each setting in turn moves to a
 * neighbouring value, and on in that direction, while the cost falls. */
static bn_status descend(search *sr, bn_gravity_params *g, trial *best)
{
    const bn_tune_env *e = sr->e;
    bn_accuracy *acc = sr->acc;
    int cur[N_DIMS];
    start_point(e, g->error_target, cur);
    bn_gravity_params c = *g;
    apply(&c, cur);
    const long evals0 = acc->evaluations;
    const double t0 = bn_wall_seconds();
    BN_TRY(find_theta(sr, c, g->theta, INFINITY, best));
    double wall0;
    BN_TRY(elapsed(e, t0, &wall0));
    const double first_cost = best->cost;
    /* the budget in wall seconds: BUDGET mean evaluations (and checks) of
     * the first structure's search; none for counted work (the same
     * search on every run) */
    double budget = BUDGET * wall0 / (acc->evaluations - evals0);
    if (budget < BUDGET_MIN) budget = BUDGET_MIN;
    if (g->error_cost == BN_TUNE_WORK) budget = INFINITY; /* counts alone: the same search every run */
    for (int round = 0, moved = 1; moved && round < 3; round++) {
        moved = 0;
        for (int d = 0; d < N_DIMS && acc->evaluations - evals0 < SEARCH_EVALS; d++) {
            double spent;
            BN_TRY(elapsed(e, t0, &spent));
            if (spent >= budget) break;
            if (g->error_fixed & dim_fixed_bit[d]) continue;
            for (int dir = 1; dir >= -1; dir -= 2) {
                int step = 0;
                while (cur[d] + dir >= dim_first(e, d) && cur[d] + dir < dim_count[d] &&
                       acc->evaluations - evals0 < SEARCH_EVALS) {
                    int next[N_DIMS];
                    memcpy(next, cur, sizeof next);
                    next[d] += dir;
                    c = *g;
                    apply(&c, next);
                    trial t;
                    const double limit = HOPELESS * (best->ok ? best->cost : 10 * first_cost);
                    BN_TRY(find_theta(sr, c, best->g.theta, limit, &t));
                    if (!better(&t, best)) break;
                    *best = t;
                    memcpy(cur, next, sizeof cur);
                    moved = 1;
                    step++;
                }
                if (step > 0) break; /* this setting moved: the other way is worse */
            }
        }
    }
    return BN_OK;
}

/* The error of a sample into the record. */
static void record_error(bn_accuracy *a, const bn_error_stats *es)
{
    a->p50 = es->acc_p50;
    a->p99 = es->acc_p99;
    a->max = es->acc_max;
    a->pot_p99 = es->pot_p99;
    a->sample = es->n;
}

/* The settings a search chooses are the same (the rest it never moves). */
static int same_settings(const bn_gravity_params *a, const bn_gravity_params *b)
{
    return a->theta == b->theta && a->mac == b->mac && a->leaf_size == b->leaf_size &&
           a->group_size == b->group_size && a->group_expansion == b->group_expansion;
}

bn_status bn_tune_total(const bn_tune_env *e, size_t *total)
{
    double n = (double)e->n; /* exact below 2^53 */
    BN_TRY(bn_comm_allreduce(e->comm, &n, 1, BN_REDUCE_SUM));
    *total = (size_t)n;
    return BN_OK;
}

/* The environment of a search or a check: every rank's particles in n
 * (the backends draw the sample over every rank's particles). */
static bn_status global_env(const bn_tune_env *e, const bn_gravity_params *g, bn_tune_env *out)
{
    (void)g;
    *out = *e;
    return bn_tune_total(e, &out->n);
}

bn_status bn_tune_search(const bn_tune_env *local, bn_gravity_params *g, int theta_only, bn_accuracy *acc)
{
    const double t0 = bn_wall_seconds();
    bn_tune_env env;
    BN_TRY(global_env(local, g, &env));
    const bn_tune_env *e = &env;
    search sr;
    memset(&sr, 0, sizeof sr);
    sr.e = e;
    sr.aim = BN_TUNE_MARGIN * g->error_target;
    sr.acc = acc;
    trial best;
    if (theta_only)
        BN_TRY(find_theta(&sr, *g, g->theta, INFINITY, &best));
    else
        BN_TRY(descend(&sr, g, &best));
    /* the backend ends with the chosen settings' forces: evaluated again
     * only when another trial came after them */
    if (!same_settings(&sr.last.g, &best.g)) {
        trial t;
        BN_TRY(evaluate(&sr, &best.g, &t));
    }
    *g = best.g;
    acc->target = g->error_target;
    record_error(acc, &sr.last.err);
    acc->met = best.ok;
    acc->t_eval = best.cost;
    acc->tunings++;
    acc->t_tuning += bn_wall_seconds() - t0;
    return BN_OK;
}

bn_status bn_tune_check_record(const bn_tune_env *local, const bn_gravity_params *g, uint64_t seed,
                               bn_accuracy *acc, int *retune)
{
    const double t0 = bn_wall_seconds();
    bn_tune_env env;
    BN_TRY(global_env(local, g, &env));
    const bn_tune_env *e = &env;
    bn_error_stats es;
    BN_TRY(sample_error(e, g, seed, &es));
    record_error(acc, &es);
    acc->checks++;
    const double t = bn_wall_seconds() - t0;
    acc->t_checks += t;
    acc->t_tuning += t;
    *retune = es.acc_p99 > g->error_target || es.acc_p99 < 0.25 * g->error_target;
    return BN_OK;
}
