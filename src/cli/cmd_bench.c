/* banyan bench: time the force computation on a model generated in memory,
 * through bn_gravity (so every backend gets the same benchmark), and with
 * --check measure its error against double direct summation. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/bench.h"
#include "cli/cli.h"
#include "cli/gravity_options.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/rng.h"
#include "core/timer.h"
#include "gravity/interact.h"
#include "integrate/timebins.h"
#include "parallel/comm.h"

static void bench_help(void)
{
    printf("usage: banyan bench [--model plummer|hernquist|uniform-cube|...] [--n N] [options]\n\n"
           "Generate a model in memory, compute its forces --repeat times, print the\n"
           "best run's stage times, interactions per particle and rates.\n\n"
           "  --model M     initial-condition model (default plummer; uniform-cube has\n"
           "                masses uniform in [0, 1/N), the standard GPU benchmark)\n"
           "  --n N         particles (default 2^20; 2^K accepted)\n"
           "  --seed S      model seed (default 1)\n"
           "  --repeat R    force evaluations, the fastest is reported (default 3, at\n"
           "                most 10000)\n"
           "  --check       error percentiles against double direct summation on\n"
           "                1000 random particles\n"
           "  --steps K     also time K (at most 1000000) kick-drift-kick steps (dt\n"
           "                1/128) of a simulation whose particles stay on the backend,\n"
           "                in key order, as in a run: the fastest and mean step, and\n"
           "                the force stages of the fastest (the force benchmark above\n"
           "                uploads unsorted particles every time)\n"
           "  --dt D        the steps' dt (the longest step with block steps; default 1/128)\n"
           "  --eta E       step criterion eta sqrt(eps/|a|) (default 0: fixed dt)\n"
           "  --time-bins K block time steps with K bins (at most 30; needs --eta): the\n"
           "                steps are block steps, each computing the forces of the\n"
           "                particles that end their step then; also prints the mean\n"
           "                active fraction\n"
           "  --tree-rebuild R  block steps: rebuild the tree every R steps, refreshed\n"
           "                in between (default 1; 0: self-tuned, as in GOTHIC)\n"
           "  --rebuild-cost C  what --tree-rebuild 0 weighs: time (measured, the\n"
           "                default) or work (walk flops and cells visited: the\n"
           "                same rebuilds every run)\n"
           "  --criterion C block steps' criterion: acceleration (eta sqrt(eps/|a|),\n"
           "                the default) or dynamical (eta sqrt(|phi|)/|a|)\n"
           "  --input FILE  the particles of a snapshot instead of --model (e.g. banyan\n"
           "                ic galaxy's; its units' G unless --G is given)\n"
           "  --json        one JSON object instead of the table\n\n"
           "Under mpirun every rank makes the whole model (or reads --input) and keeps\n"
           "its slice, the domains are cut along the curve, and the calls (and\n"
           "--steps) are timed with every rank together: stage times are the slowest\n"
           "rank's, work counts the sums over the ranks, and a line says how the\n"
           "ranks differed (with the GPU backend, --device auto gives each rank its\n"
           "node's GPU).\n\n"
           "With --error-target E the settings are chosen first (the search's time and\n"
           "choice are printed), then timed as if given; --check measures them on other\n"
           "targets than the search's sample.\n\n");
    cli_gravity_options_help();
}

enum { OPT_MODEL = 2000, OPT_N, OPT_SEED, OPT_REPEAT, OPT_CHECK, OPT_JSON, OPT_STEPS, OPT_DT, OPT_ETA, OPT_BINS,
       OPT_REBUILD, OPT_REBUILD_COST, OPT_CRITERION, OPT_INPUT };

/* 0: parsed, -1: --help printed, else the exit code. */
static int parse(int argc, char **argv, bench_opts *o)
{
    const char *cmd = "bench";
    struct option opts[CLI_GRAVITY_MAX_OPTIONS + 15];
    int n = cli_gravity_options(opts);
    opts[n++] = (struct option){"model", required_argument, 0, OPT_MODEL};
    opts[n++] = (struct option){"n", required_argument, 0, OPT_N};
    opts[n++] = (struct option){"seed", required_argument, 0, OPT_SEED};
    opts[n++] = (struct option){"repeat", required_argument, 0, OPT_REPEAT};
    opts[n++] = (struct option){"check", no_argument, 0, OPT_CHECK};
    opts[n++] = (struct option){"json", no_argument, 0, OPT_JSON};
    opts[n++] = (struct option){"steps", required_argument, 0, OPT_STEPS};
    opts[n++] = (struct option){"dt", required_argument, 0, OPT_DT};
    opts[n++] = (struct option){"eta", required_argument, 0, OPT_ETA};
    opts[n++] = (struct option){"time-bins", required_argument, 0, OPT_BINS};
    opts[n++] = (struct option){"tree-rebuild", required_argument, 0, OPT_REBUILD};
    opts[n++] = (struct option){"rebuild-cost", required_argument, 0, OPT_REBUILD_COST};
    opts[n++] = (struct option){"criterion", required_argument, 0, OPT_CRITERION};
    opts[n++] = (struct option){"input", required_argument, 0, OPT_INPUT};
    opts[n++] = (struct option){"help", no_argument, 0, 'h'};
    opts[n] = (struct option){0, 0, 0, 0};
    int c;
    for (int i = 1; i < argc; i++) o->G_given |= strcmp(argv[i], "--G") == 0 || strncmp(argv[i], "--G=", 4) == 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': bench_help(); return -1;
        case OPT_MODEL:
            if (bn_ic_model_parse(optarg, &o->ic.model) != BN_OK) return cli_usage_error(cmd, "%s", bn_last_error());
            break;
        case OPT_N:
            if (!cli_parse_size(cmd, "--n", optarg, &o->ic.n)) return 2;
            break;
        case OPT_SEED:
            if (!cli_parse_u64(cmd, "--seed", optarg, &o->ic.seed)) return 2;
            break;
        case OPT_REPEAT:
            if (!cli_parse_long_in(cmd, "--repeat", optarg, 1, BENCH_REPEAT_MAX, &o->repeat)) return 2;
            break;
        case OPT_CHECK: o->check = 1; break;
        case OPT_STEPS:
            if (!cli_parse_long_in(cmd, "--steps", optarg, 0, BENCH_STEPS_MAX, &o->steps)) return 2;
            break;
        case OPT_JSON: o->json = 1; break;
        case OPT_DT:
            if (!cli_parse_double_in(cmd, "--dt", optarg, CLI_POSITIVE, &o->integ.dt)) return 2;
            break;
        case OPT_ETA:
            if (!cli_parse_double_in(cmd, "--eta", optarg, CLI_NONNEGATIVE, &o->integ.eta)) return 2;
            break;
        case OPT_BINS:
            if (!cli_parse_int(cmd, "--time-bins", optarg, 0, BN_TIME_BINS_MAX, &o->integ.time_bins)) return 2;
            break;
        case OPT_REBUILD:
            if (!cli_parse_int(cmd, "--tree-rebuild", optarg, 0, BN_TREE_REBUILD_MAX, &o->integ.tree_rebuild)) return 2;
            break;
        case OPT_REBUILD_COST:
            if (bn_tune_cost_parse(optarg, &o->integ.rebuild_cost) != BN_OK)
                return cli_usage_error(cmd, "--rebuild-cost: %s", bn_last_error());
            break;
        case OPT_CRITERION:
            if (bn_step_criterion_parse(optarg, &o->integ.criterion) != BN_OK)
                return cli_usage_error(cmd, "--criterion: %s", bn_last_error());
            break;
        case OPT_INPUT: o->input = optarg; break;
        default: {
            int r = cli_gravity_option(cmd, c, optarg, &o->g);
            if (r != 0) return r;
        }
        }
    }
    if (optind != argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (o->ic.n < 1) return cli_usage_error(cmd, "--n must be >= 1");
    o->ic.G = o->g.G;
    if (o->ic.model == BN_IC_UNIFORM_CUBE) o->ic.mass_spread = 1;
    return 0;
}

/* Errors of p's forces on 1000 random particles against direct summation. */
static bn_status check_errors(const bn_particles *p, const bn_gravity_params *g, uint64_t seed, bn_error_stats *e)
{
    size_t ns = p->n < 1000 ? p->n : 1000;
    size_t *idx = malloc(ns * sizeof *idx);
    double *ref = malloc(3 * ns * sizeof *ref), *pref = malloc(ns * sizeof *pref);
    double *got = malloc(3 * ns * sizeof *got), *pgot = malloc(ns * sizeof *pgot);
    bn_status s = (idx && ref && pref && got && pgot) ? BN_OK : BN_ERR_NOMEM;
    for (size_t t = 0; s == BN_OK && t < ns; t++) {
        idx[t] = ns == p->n ? t : (size_t)(bn_rng_uniform(seed, t, 7) * (double)p->n) % p->n;
        for (int k = 0; k < 3; k++) got[3 * t + k] = p->acc[k][idx[t]];
        pgot[t] = p->pot[idx[t]];
    }
    if (s == BN_OK) s = bn_direct_reference(p, g->G, g->softening, idx, ns, ref, pref);
    if (s == BN_OK) s = bn_error_stats_compute(ns, got, ref, pgot, pref, e);
    free(idx);
    free(ref);
    free(pref);
    free(got);
    free(pgot);
    return s;
}

bn_status cli_bench_search(const bn_comm *c, const bench_opts *o, bn_particles *p, bench_result *r)
{
    bn_gravity *grav = NULL;
    bn_status s = bn_gravity_create(&grav, &o->g);
    if (s == BN_OK && bn_comm_size(c) > 1) s = bn_gravity_set_comm(grav, c);
    if (bn_comm_size(c) > 1) s = bn_comm_agree(c, s); /* one rank's failure stops them all here */
    if (s != BN_OK) {
        bn_gravity_free(grav);
        return s;
    }
    const double t0 = bn_wall_seconds();
    s = bn_gravity_compute(grav, p);
    r->t_tune = bn_wall_seconds() - t0;
    if (s == BN_OK) {
        r->g = *bn_gravity_params_used(grav);
        r->g.error_target = 0;
        r->tune = *bn_gravity_accuracy(grav);
    }
    bn_gravity_free(grav);
    return s;
}

static bn_status run_bench(const bench_opts *o, bn_particles *p, bench_result *r, const char **backend)
{
    r->g = o->g;
    bn_status s = BN_OK;
    if (o->g.error_target > 0 && o->g.method == BN_METHOD_TREE) s = cli_bench_search(NULL, o, p, r);
    if (s != BN_OK) return s;
    bn_gravity *grav = NULL;
    s = bn_gravity_create(&grav, &r->g);
    r->best.t_total = -1;
    for (long k = 0; s == BN_OK && k < o->repeat; k++) {
        const double t0 = bn_wall_seconds();
        s = bn_gravity_compute(grav, p);
        const double t_call = bn_wall_seconds() - t0;
        if (s != BN_OK) break;
        const bn_force_stats *st = bn_gravity_stats(grav);
        if (r->best.t_total < 0 || st->t_total < r->best.t_total) {
            r->best = *st;
            r->t_call = t_call;
        }
    }
    if (s == BN_OK) *backend = bn_backend_name(bn_gravity_backend(grav));
    if (s == BN_OK && o->check) s = check_errors(p, &r->g, o->ic.seed + 12345, &r->err);
    bn_gravity_free(grav);
    return s;
}

/* K more steps as one batch: the host queues them all and waits once
 * (block steps that choose their rebuilds on the host, tree_rebuild != 1,
 * come one step per batch but during the self-tuned rule's long holds). */
static bn_status run_batch(const bench_opts *o, bn_simulation *sim, bench_result *r)
{
    long made = 0, more = 0;
    const double t0 = bn_wall_seconds();
    bn_status s = BN_OK;
    while (s == BN_OK && made < o->steps) {
        s = bn_simulation_advance(sim, INFINITY, o->steps - made, &more);
        made += more;
    }
    if (s == BN_OK) s = bn_simulation_finish(sim);
    r->batch_mean = made > 0 ? (bn_wall_seconds() - t0) / (double)made : 0;
    return s;
}

/* sum += w * each stage time of f: the mean stages of the steps. */
static void add_stage_times(bn_force_stats *sum, const bn_force_stats *f, double w)
{
    sum->t_bbox += w * f->t_bbox, sum->t_keys += w * f->t_keys, sum->t_sort += w * f->t_sort;
    sum->t_build += w * f->t_build, sum->t_moments += w * f->t_moments, sum->t_groups += w * f->t_groups;
    sum->t_walk += w * f->t_walk, sum->t_total += w * f->t_total;
}

/* --steps: K steps of a simulation of p; the first forces are outside
 * the timing (the particles arrive unsorted, as in the force benchmark). */
static bn_status run_steps(const bench_opts *o, const bn_particles *p, bench_result *r)
{
    bn_simulation *sim = NULL;
    bn_status s = bn_simulation_create(&sim);
    if (s == BN_OK) s = bn_simulation_set_gravity(sim, &r->g); /* an error target's choice, fixed */
    if (s == BN_OK) s = bn_simulation_set_integrator(sim, &o->integ);
    if (s == BN_OK) s = bn_simulation_set_particles(sim, p);
    if (s == BN_OK) s = bn_simulation_compute_forces(sim);
    r->step_best = -1;
    r->step_mean = 0;
    memset(&r->step_stages, 0, sizeof r->step_stages);
    r->active_mean = 0;
    const double t_start = bn_simulation_time(sim);
    for (long k = 0; s == BN_OK && k < o->steps; k++) {
        const double t0 = bn_wall_seconds();
        s = bn_simulation_step(sim, NULL);
        if (s == BN_OK) s = bn_simulation_finish(sim); /* a GPU step returns before it is done */
        if (s != BN_OK) /* --dt 1e308 throws the particles to infinity: name the step */
            s = bn_fail_context(s, "step %ld of --steps (--dt %g, --eta %g)", k + 1, o->integ.dt, o->integ.eta);
        const double t = bn_wall_seconds() - t0;
        if (s != BN_OK) break;
        r->step_mean += t / (double)o->steps;
        const bn_block_info b = bn_simulation_block_info(sim);
        r->active_mean += (b.n_bins > 0 ? (double)b.n_active / (double)p->n : 1.0) / (double)o->steps;
        add_stage_times(&r->step_stages, bn_simulation_force_stats(sim), 1.0 / (double)o->steps);
        if (r->step_best < 0 || t < r->step_best) {
            r->step_best = t;
            r->step_forces = *bn_simulation_force_stats(sim);
        }
    }
    r->sim_time = bn_simulation_time(sim) - t_start;
    r->tree_builds = bn_simulation_block_info(sim).tree_builds;
    if (s == BN_OK) s = run_batch(o, sim, r);
    bn_simulation_free(sim);
    return s;
}

/* The force time, and the time of the interactions: the walk, or for a
 * method without stage times (direct summation) the whole call. */
static double force_seconds(const bench_result *r)
{
    return r->best.t_total > 0 ? r->best.t_total : r->t_call;
}

static double interaction_seconds(const bench_result *r)
{
    return r->best.t_walk > 0 ? r->best.t_walk : force_seconds(r);
}

/* What was timed: the model generated, or the --input file. */
static const char *model_label(const bench_opts *o) { return o->input ? o->input : bn_ic_model_name(o->ic.model); }

/* Several ranks: how they shared the work (stage times below are the
 * slowest rank's, counts the sums over the ranks). */
static void print_ranks(const bench_result *r)
{
    const bench_ranks *k = &r->ranks;
    const bn_force_stats *s = &r->best;
    printf("ranks: %d", k->ranks);
    if (k->devices_distinct > 0) printf(" on %d GPU%s", k->devices_distinct, k->devices_distinct > 1 ? "s" : "");
    printf(", domains cut in %.3f s, largest share %zu (%.4f of the mean); the call %.4f s on the slowest rank, "
           "%.4f s on the fastest\n",
           k->t_decompose, k->n_local_max, k->share_max, r->t_call, k->t_call_min);
    printf("locally essential trees: exchange %.4f s on the slowest rank (%.4f fastest), walks %.4f s (%.4f "
           "fastest); sent %zu cells and %zu bodies in all\n",
           s->t_exchange, k->t_exchange_min, s->t_walk, k->t_walk_min, s->let_cells_sent, s->let_bodies_sent);
}

static void print_table(const bench_opts *o, const bench_result *r, const char *backend, size_t n)
{
    const bn_force_stats *s = &r->best;
    const double nd = (double)n, walk = interaction_seconds(r);
    const bn_gravity_params *g = &r->g;
    printf("banyan bench: %s, N = %zu, backend %s, method %s, mac %s, theta %g, eps %g, leaf %d, group %d, "
           "group expansion %g\n",
           model_label(o), n, backend, bn_method_name(g->method), bn_mac_name(g->mac), g->theta,
           g->softening, g->leaf_size, g->group_size, g->group_expansion);
    if (r->tune.tunings > 0) cli_print_accuracy(stdout, "chosen for ", g, &r->tune);
    if (r->ranks.ranks > 1) print_ranks(r);
    printf("stage times (s, best of %ld): bbox %.4f keys %.4f sort %.4f build %.4f moments %.4f groups %.4f "
           "walk %.4f total %.4f (call %.4f)\n",
           o->repeat, s->t_bbox, s->t_keys, s->t_sort, s->t_build, s->t_moments, s->t_groups, s->t_walk,
           s->t_total, r->t_call);
    printf("tree: %ld nodes, %ld leaves, %ld groups, depth %ld\n", s->n_nodes, s->n_leaves, s->n_groups, s->depth);
    printf("interactions per particle: pp %.1f pc %.1f; far cells per group %.1f; cells visited per particle "
           "%.2f\n",
           s->n_pp / nd, s->n_pc / nd, s->n_groups > 0 ? s->n_far / (double)s->n_groups : 0.0, s->n_visit / nd);
    printf("rates: %.3e interactions/s, %.1f Gflop/s (%d per pp, %d per pc, %d per far cell, %d per body for "
           "the expansion), %.3e particles/s\n",
           (s->n_pp + s->n_pc + s->n_far) / walk, bn_walk_flops(s->n_pp, s->n_pc, s->n_far, nd) / walk * 1e-9,
           BN_FLOPS_PP, BN_FLOPS_PC, BN_FLOPS_FAR, BN_FLOPS_FAR_EVAL, nd / force_seconds(r));
    if (s->device_bytes_peak) printf("peak device memory: %.1f bytes per particle\n", (double)s->device_bytes_peak / nd);
    if (o->check)
        printf("relative acceleration error (%zu particles): p50 %.3e p90 %.3e p99 %.3e p99.9 %.3e max %.3e\n",
               r->err.n, r->err.acc_p50, r->err.acc_p90, r->err.acc_p99, r->err.acc_p999, r->err.acc_max);
    if (o->steps > 0) {
        const bn_force_stats *f = &r->step_forces;
        printf("time steps (%ld, kick-drift-kick): fastest %.4f s, mean %.4f s; forces in the fastest: sort %.4f "
               "walk %.4f total %.4f\n",
               o->steps, r->step_best, r->step_mean, f->t_sort, f->t_walk, f->t_total);
        printf("the next %ld steps through bn_simulation_advance (one batch, the clock read once; with block "
               "steps and tree_rebuild != 1 mostly one per step): mean %.4f s\n",
               o->steps, r->batch_mean);
        if (o->integ.time_bins > 0)
            printf("block steps (%d bins, dt %g, eta %g, tree_rebuild %d%s%s): mean active fraction %.4f, %ld tree "
                   "builds, simulated time %.6g (%.4g wall s per unit time)\n",
                   o->integ.time_bins, o->integ.dt, o->integ.eta, o->integ.tree_rebuild,
                   o->integ.tree_rebuild == 0 ? " " : "",
                   o->integ.tree_rebuild == 0 ? bn_tune_cost_name(o->integ.rebuild_cost) : "", r->active_mean,
                   r->tree_builds, r->sim_time,
                   r->sim_time > 0 ? r->step_mean * (double)o->steps / r->sim_time : 0.0);
    }
}

static void print_json(const bench_opts *o, const bench_result *r, const char *backend, size_t n)
{
    const bn_force_stats *s = &r->best;
    const bn_gravity_params *g = &r->g;
    const double nd = (double)n, walk = interaction_seconds(r);
    printf("{\"model\": \"%s\", \"n\": %zu, \"seed\": %llu, \"backend\": \"%s\", \"method\": \"%s\", "
           "\"mac\": \"%s\", \"theta\": %g, \"eps\": %g, \"leaf_size\": %d, \"group_size\": %d, "
           "\"group_expansion\": %g, \"repeat\": %ld,\n",
           model_label(o), n, (unsigned long long)o->ic.seed, backend, bn_method_name(g->method),
           bn_mac_name(g->mac), g->theta, g->softening, g->leaf_size, g->group_size, g->group_expansion, o->repeat);
    if (r->tune.tunings > 0)
        printf(" \"error_target\": %g, \"error_cost\": \"%s\", \"tune_met\": %d, \"tune_evaluations\": %ld, "
               "\"tune_seconds\": %.4g, \"tune_sample\": %zu, \"tune_p50\": %.4e, \"tune_p99\": %.4e,\n",
               r->tune.target, bn_tune_cost_name(o->g.error_cost), r->tune.met, r->tune.evaluations, r->t_tune,
               r->tune.sample, r->tune.p50, r->tune.p99);
    printf(" \"t_bbox\": %.6g, \"t_keys\": %.6g, \"t_sort\": %.6g, \"t_build\": %.6g, \"t_moments\": %.6g, "
           "\"t_groups\": %.6g, \"t_walk\": %.6g, \"t_total\": %.6g, \"t_call\": %.6g,\n",
           s->t_bbox, s->t_keys, s->t_sort, s->t_build, s->t_moments, s->t_groups, s->t_walk, s->t_total, r->t_call);
    printf(" \"nodes\": %ld, \"leaves\": %ld, \"groups\": %ld, \"depth\": %ld, \"pp_per_particle\": %.2f, "
           "\"pc_per_particle\": %.2f, \"far_per_group\": %.2f, \"visits_per_particle\": %.4f, "
           "\"interactions_per_s\": %.6g, \"gflops\": %.4g, \"particles_per_s\": %.6g, "
           "\"device_bytes_per_particle\": %.2f",
           s->n_nodes, s->n_leaves, s->n_groups, s->depth, s->n_pp / nd, s->n_pc / nd,
           s->n_groups > 0 ? s->n_far / (double)s->n_groups : 0.0, s->n_visit / nd, (s->n_pp + s->n_pc + s->n_far) / walk,
           bn_walk_flops(s->n_pp, s->n_pc, s->n_far, nd) / walk * 1e-9, nd / force_seconds(r),
           (double)s->device_bytes_peak / nd);
    if (r->ranks.ranks > 1)
        printf(",\n \"ranks\": %d, \"gpus\": %d, \"t_decompose\": %.6g, \"n_local_max\": %zu, \"share_max\": %.6g, "
               "\"t_call_min\": %.6g, \"t_exchange\": %.6g, \"t_exchange_min\": %.6g, \"t_walk_min\": %.6g, "
               "\"let_cells_sent\": %zu, \"let_bodies_sent\": %zu, \"balance_cost\": \"%s\"",
               r->ranks.ranks, r->ranks.devices_distinct, r->ranks.t_decompose, r->ranks.n_local_max,
               r->ranks.share_max, r->ranks.t_call_min, s->t_exchange, r->ranks.t_exchange_min, r->ranks.t_walk_min,
               s->let_cells_sent, s->let_bodies_sent, bn_tune_cost_name(r->g.balance_cost));
    if (o->check)
        printf(",\n \"check_n\": %zu, \"err_p50\": %.4e, \"err_p90\": %.4e, \"err_p99\": %.4e, "
               "\"err_p999\": %.4e, \"err_max\": %.4e",
               r->err.n, r->err.acc_p50, r->err.acc_p90, r->err.acc_p99, r->err.acc_p999, r->err.acc_max);
    if (o->steps > 0)
        printf(",\n \"steps\": %ld, \"step_best\": %.6g, \"step_mean\": %.6g, \"step_t_sort\": %.6g, "
               "\"step_t_walk\": %.6g, \"step_t_total\": %.6g, \"batch_mean\": %.6g",
               o->steps, r->step_best, r->step_mean, r->step_forces.t_sort, r->step_forces.t_walk,
               r->step_forces.t_total, r->batch_mean);
    if (o->steps > 0 && r->ranks.ranks <= 1) { /* the mean step's stages (device events; t_total: the forces
                                                     call, gaps included); one process's (cmd_bench_ranks.c
                                                     times the ranks' steps) */
        const bn_force_stats *m = &r->step_stages;
        printf(",\n \"mean_t_bbox\": %.6g, \"mean_t_keys\": %.6g, \"mean_t_sort\": %.6g, \"mean_t_build\": %.6g, "
               "\"mean_t_moments\": %.6g, \"mean_t_groups\": %.6g, \"mean_t_walk\": %.6g, \"mean_t_total\": %.6g",
               m->t_bbox, m->t_keys, m->t_sort, m->t_build, m->t_moments, m->t_groups, m->t_walk, m->t_total);
    }
    if (o->steps > 0 && r->ranks.ranks > 1)
        printf(",\n \"step_t_exchange\": %.6g, \"step_let_cells_sent\": %zu, \"step_let_bodies_sent\": %zu",
               r->step_forces.t_exchange, r->step_forces.let_cells_sent, r->step_forces.let_bodies_sent);
    if (o->steps > 0 && r->ranks.ranks > 1)
        printf(",\n \"step_crossers\": %.6g, \"step_t_crossers\": %.6g, \"step_cost_imbalance\": %.6g",
               r->ranks.crossers, r->ranks.t_crossers, r->ranks.cost_imbalance);
    if (o->steps > 0 && o->integ.time_bins > 0)
        printf(",\n \"criterion\": \"%s\"", bn_step_criterion_name(o->integ.criterion));
    if (o->steps > 0 && o->integ.time_bins > 0)
        printf(",\n \"time_bins\": %d, \"dt\": %g, \"eta\": %g, \"tree_rebuild\": %d, \"rebuild_cost\": \"%s\", "
               "\"active_mean\": %.6g, \"sim_time\": %.6g, \"tree_builds\": %ld",
               o->integ.time_bins, o->integ.dt, o->integ.eta, o->integ.tree_rebuild,
               bn_tune_cost_name(o->integ.rebuild_cost), r->active_mean, r->sim_time, r->tree_builds);
    printf("}\n");
}

/* --input: a snapshot's particles, and its units' G unless --G was given
 * (a galaxy in kpc, Msun and km/s). */
static bn_status read_input(bench_opts *o, bn_particles **p)
{
    bn_snapshot_meta meta;
    BN_TRY(bn_snapshot_read(o->input, p, &meta));
    if (!o->G_given && meta.units.G > 0) o->g.G = meta.units.G;
    o->ic.n = (*p)->n;
    return BN_OK;
}

int bn_cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* the field solver on a mesh: its own options */
        if (!strcmp(argv[i], "--mesh") || !strncmp(argv[i], "--mesh=", 7)) {
            if (bn_comm_size(cli_comm()) > 1) /* its ranks: banyan potential, which reports its solve */
                return cli_usage_error("bench", "--mesh runs in one process; across ranks time `banyan potential`");
            return cli_bench_mesh(argc, argv);
        }
    bench_opts o;
    memset(&o, 0, sizeof o);
    o.g = bn_gravity_params_default();
    o.ic = bn_ic_params_default();
    o.ic.n = (size_t)1 << 20;
    o.repeat = 3;
    o.integ = bn_integrator_params_default();
    int rc = parse(argc, argv, &o);
    if (rc != 0) return rc < 0 ? 0 : rc;
    bn_particles *p = NULL;
    bench_result r;
    memset(&r, 0, sizeof r);
    const char *backend = "?";
    const bn_comm *c = cli_comm();
    bn_status s = bn_comm_agree(c, o.input ? read_input(&o, &p) : bn_ic_generate(&o.ic, &p));
    if (s == BN_OK && bn_comm_size(c) > 1) s = cli_bench_ranks(c, &o, p, &r, &backend);
    else if (s == BN_OK) s = run_bench(&o, p, &r, &backend);
    if (s == BN_OK && o.steps > 0 && bn_comm_size(c) == 1) s = run_steps(&o, p, &r);
    if (s == BN_OK && bn_comm_rank(c) == 0) {
        if (o.json) print_json(&o, &r, backend, p->n);
        else print_table(&o, &r, backend, p->n);
    }
    rc = s == BN_OK ? 0 : cli_fail("bench", s);
    bn_particles_free(p);
    return rc;
}
