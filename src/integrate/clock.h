/*
 * The integrator's clock: the time, the step count and where a block-step
 * cycle stands, with the rules that advance them. They are BN_HD inline
 * functions: the CPU backend runs them on host memory, the GPU backend in
 * one-thread kernels on device memory, so both choose the same steps.
 *
 * Why the backend keeps the clock: a step's length (eta sqrt(eps /
 * max|a|)) and, with block steps, the next tick and its active bins
 * depend on the accelerations, which on the GPU live on the device. With
 * the clock there too, a step is a queue of kernels that reads its length
 * where it is decided, and any number of steps can be queued back to
 * back without the host learning anything in between (bn_simulation
 * reads the clock once per batch: simulation.c).
 *
 * A step queued after the clock reached its limit is idle: live = 0, its
 * kicks, drift and walk do nothing, and its time and bins do not change.
 *
 * Stages of a step, in order (bn_backend_ops.clock_stage):
 *   shared: SHARED_PLAN, HALF_KICK, DRIFT, FORCES, HALF_KICK, SHARED_END
 *   block:  BLOCK_BEGIN, BLOCK_KICK (the cycle's opening kick, when one
 *           begins), BLOCK_PLAN, DRIFT, FORCES, BLOCK_KICK, BLOCK_END
 */
#ifndef BN_CLOCK_H
#define BN_CLOCK_H
#include <math.h>
#include "core/hostdevice.h"
#include "integrate/timebins.h"

/* A step (or cycle) that would end within this fraction of itself before
 * the limit is stretched to land on it: no last step of round-off size
 * when the interval is a multiple of dt up to rounding. */
#define BN_LAND_SLACK 1e-6

/* What decides the steps (from bn_integrator_params). */
typedef struct bn_step_rule {
    double dt;    /* shared: the longest step; block: a cycle's length      */
    double eta;   /* step criterion eta sqrt(eps / |a|); 0: fixed (shared)  */
    double eps;
    int n_bins;   /* K; 0: one shared step                                  */
    int rebuild;  /* FORCES and BLOCK_END: this step rebuilds the tree      */
    int criterion; /* block steps' bn_step_criterion                        */
    int refreshes; /* block steps may refresh the tree between rebuilds
                      (tree_rebuild != 1): a backend keeps what a restart
                      file needs of it (backend.h tree_save)             */
} bn_step_rule;

typedef struct bn_clock {
    double time;
    double t_limit;      /* no step passes it                               */
    double dt;           /* the current step's drift (0: idle)              */
    double next_time;    /* shared: the time at the current step's end      */
    double amax;         /* shared: max |a| at the current step's start     */
    double cycle_start, cycle_length, cycle_end;
    long steps;          /* steps made (idle ones not counted)              */
    long idle_steps;     /* steps queued after the limit was reached        */
    long builds;         /* block steps that rebuilt the tree               */
    double forces;       /* block steps' particle forces (their kicks' counts) */
    bn_block_kick kick;  /* block: what the next BLOCK_KICK does            */
    int live;            /* the current step runs                           */
    int kick_on;         /* the next BLOCK_KICK runs                        */
    int tick, next_tick; /* block: within the cycle; 0: synchronised        */
    int bin_min;         /* block: active bins of the current step (n_bins:
                            none)                                           */
    int ends;            /* block: the current step ends the cycle          */
    int max_bin;         /* block: finest bin after the last kick, and...   */
    int n_active;        /* ...the particles it kicked (adjacent: the GPU's
                            kick adds into both with integer atomics)       */
    unsigned amax2_bits; /* GPU: float bits of max |a|^2 (integer atomicMax) */
} bn_clock;

typedef enum bn_clock_stage {
    /* the clock alone: bn_clock_apply */
    BN_STAGE_SHARED_PLAN, /* the step's length from dt, eta and amax      */
    BN_STAGE_SHARED_END,
    BN_STAGE_BLOCK_BEGIN, /* at tick 0: a new cycle and its opening kick  */
    BN_STAGE_BLOCK_PLAN,  /* the next tick, its drift and active bins     */
    BN_STAGE_BLOCK_END,
    /* the particles (the backend) */
    BN_STAGE_HALF_KICK,   /* shared: v += a dt / 2                        */
    BN_STAGE_DRIFT,       /* x += v dt                                    */
    BN_STAGE_BLOCK_KICK,  /* the kick in clock.kick, when kick_on         */
    BN_STAGE_FORCES       /* forces of the step's active particles        */
} bn_clock_stage;

BN_HD int bn_clock_lands(double dt, double left) { return dt * (1 + BN_LAND_SLACK) >= left; }

BN_HD double bn_clock_tick_seconds(const bn_clock *c, int n_bins) { return ldexp(c->cycle_length, -(n_bins - 1)); }

/* The shared step: dt, or eta sqrt(eps / amax) when shorter, shortened
 * (or stretched by at most BN_LAND_SLACK) to land on the limit. */
BN_HD void bn_clock_shared_plan(bn_clock *c, const bn_step_rule *r)
{
    c->live = c->time < c->t_limit;
    c->dt = 0;
    c->next_time = c->time;
    if (!c->live) return;
    double dt = r->dt;
    if (r->eta > 0 && c->amax > 0) {
        const double adaptive = r->eta * sqrt(r->eps / c->amax);
        if (adaptive < dt) dt = adaptive;
    }
    const double left = c->t_limit - c->time;
    const int lands = bn_clock_lands(dt, left);
    c->dt = lands ? left : dt;
    /* time + (t_limit - time) may differ from t_limit in the last bit */
    c->next_time = lands ? c->t_limit : c->time + dt;
}

BN_HD void bn_clock_shared_end(bn_clock *c)
{
    if (!c->live) {
        c->idle_steps++;
        return;
    }
    c->time = c->next_time;
    c->steps++;
}

BN_HD bn_block_kick bn_clock_block_kick(const bn_clock *c, const bn_step_rule *r, int bin_min, int close, int open)
{
    bn_block_kick k;
    k.bin_min = bin_min;
    k.close = close;
    k.open = open;
    k.n_bins = r->n_bins;
    k.tick = bn_clock_tick_seconds(c, r->n_bins);
    k.eta = r->eta;
    k.eps = r->eps;
    k.criterion = r->criterion;
    return k;
}

/* At tick 0 with time left: a cycle of length dt (or less, to land on the
 * limit) and its opening kick, which gives every particle its bin. */
BN_HD void bn_clock_block_begin(bn_clock *c, const bn_step_rule *r)
{
    c->kick_on = 0;
    if (c->tick != 0) {
        c->live = 1;
        return;
    }
    c->live = c->time < c->t_limit;
    if (!c->live) return;
    double D = r->dt;
    const double left = c->t_limit - c->time;
    const int lands = bn_clock_lands(D, left);
    if (lands) D = left;
    c->cycle_start = c->time;
    c->cycle_length = D;
    c->cycle_end = lands ? c->t_limit : c->time + D;
    c->kick = bn_clock_block_kick(c, r, 0, 0, 1);
    c->kick_on = 1;
    c->max_bin = 0;
    c->n_active = 0;
}

/* The next tick where some particle ends its step (the finest occupied
 * bin's), the drift there, the bins active there and their kick: the
 * closing half kick and, inside the cycle, new bins and opening kicks. */
BN_HD void bn_clock_block_plan(bn_clock *c, const bn_step_rule *r)
{
    const int K = r->n_bins;
    c->kick_on = c->live;
    c->dt = 0;
    c->bin_min = K; /* no particle */
    c->ends = 0;
    if (!c->live) return;
    const int next = c->tick + bn_time_bin_ticks(c->max_bin, K);
    c->dt = (double)(next - c->tick) * bn_clock_tick_seconds(c, K);
    c->bin_min = bn_time_bin_min_active(next, K);
    c->ends = next == 1 << (K - 1);
    c->next_tick = next;
    /* at the cycle's end every particle closes and nothing opens */
    c->kick = bn_clock_block_kick(c, r, c->bin_min, 1, !c->ends);
    c->max_bin = 0;
    c->n_active = 0;
}

BN_HD void bn_clock_block_end(bn_clock *c, const bn_step_rule *r)
{
    if (!c->live) {
        c->idle_steps++;
        return;
    }
    const int next = c->next_tick;
    c->time = c->ends ? c->cycle_end : c->cycle_start + (double)next * bn_clock_tick_seconds(c, r->n_bins);
    c->tick = c->ends ? 0 : next;
    c->steps++;
    c->builds += r->rebuild != 0;
    c->forces += (double)c->n_active; /* this step's kick: its active particles */
}

/* The stages that change the clock alone; returns 0 for the others. */
BN_HD int bn_clock_apply(bn_clock *c, const bn_step_rule *r, int stage)
{
    switch (stage) {
    case BN_STAGE_SHARED_PLAN: bn_clock_shared_plan(c, r); return 1;
    case BN_STAGE_SHARED_END: bn_clock_shared_end(c); return 1;
    case BN_STAGE_BLOCK_BEGIN: bn_clock_block_begin(c, r); return 1;
    case BN_STAGE_BLOCK_PLAN: bn_clock_block_plan(c, r); return 1;
    case BN_STAGE_BLOCK_END: bn_clock_block_end(c, r); return 1;
    default: return 0;
    }
}
#endif
