/* banyan bench (cmd_bench.c), and its runs across MPI ranks
 * (cmd_bench_ranks.c): the options, the result, and what both share. */
#ifndef BN_CLI_BENCH_H
#define BN_CLI_BENCH_H
#include "banyan.h"

/* Sane bounds of the repetitions: a benchmark that would run for days is
 * a typo (2^32 + 1 once ran until it was killed). */
#define BENCH_REPEAT_MAX 10000
#define BENCH_STEPS_MAX 1000000

typedef struct bench_opts {
    bn_gravity_params g;
    bn_ic_params ic;
    long repeat;
    long steps; /* --steps: time-step timing */
    bn_integrator_params integ; /* of those steps: --dt, --eta, --time-bins */
    int check, json;
    const char *input; /* --input: a snapshot instead of --model */
    int G_given;       /* --G: kept over the input's units' G */
} bench_opts;

/* Several ranks: the slowest rank decides a step, so times are the
 * largest over the ranks, counts the sums (bench_result.best), and
 * these say how the ranks differed. */
typedef struct bench_ranks {
    int ranks;                  /* 1: one process, none of the rest set */
    int devices_distinct;       /* GPU backend: distinct (host, device) pairs */
    double t_decompose;         /* the first cut of the domains (s) */
    double share_max;           /* largest rank's particles over the mean */
    double t_call_min;          /* the fastest rank's call in the timed repeat */
    double t_exchange_min;      /* locally essential trees: select, pack, exchange */
    double t_walk_min;
    size_t n_local_max;         /* the largest rank's particles */
    double crossers;            /* --steps: particles moved across the cut per
                                   step (every rank's, bn_simulation_crossers) */
    double t_crossers;          /* ... and the slowest rank's time for it per step (s) */
    double cost_imbalance;      /* --steps: the largest rank's counted walk flops
                                   over the mean in those steps (bn_simulation_imbalance) */
} bench_ranks;

typedef struct bench_result {
    bn_gravity_params g; /* the settings timed: an error target's choice */
    bn_accuracy tune;    /* --error-target: the search's record */
    double t_tune;       /* its wall time (s) */
    bn_force_stats best; /* the repeat with the smallest total time */
    double t_call;       /* bn_gravity_compute wall time of that repeat (copies included) */
    bn_error_stats err;
    double step_best, step_mean; /* wall seconds of a kick-drift-kick step */
    double active_mean;          /* block steps: mean fraction of particles active */
    double sim_time;             /* simulated time the steps covered */
    long tree_builds;            /* block steps that rebuilt the tree */
    double batch_mean;           /* wall seconds per step of K more steps
                                    queued as one batch (nothing read back
                                    between them) */
    bn_force_stats step_forces;  /* the force stages of the fastest step */
    bn_force_stats step_stages;  /* the stages' times (t_*) averaged over the
                                    waited steps: where a step's time goes  */
    bench_ranks ranks;
} bench_result;

/* The benchmark across the ranks of c (more than one): every rank holds
 * the whole model `all` (made or read), keeps its slice, the domains are
 * cut, and the forces (and --steps) are timed together; r on every rank
 * (rank 0 prints it). */
bn_status cli_bench_ranks(const bn_comm *c, const bench_opts *o, const bn_particles *all, bench_result *r,
                          const char **backend);
/* --error-target's search on p (over c's ranks when c has several): r->g
 * becomes its choice, fixed. */
bn_status cli_bench_search(const bn_comm *c, const bench_opts *o, bn_particles *p, bench_result *r);
#endif
