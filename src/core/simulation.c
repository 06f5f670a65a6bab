/* bn_simulation: particles, gravity and a KDK leapfrog over one backend,
 * with one shared step or block (hierarchical) steps. The backend holds
 * the particles (on the device for the GPU); the host mirror is
 * refreshed only when asked for. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/backend.h"
#include "core/error.h"
#include "core/simulation_internal.h"
#include "core/trace.h"
#include "gravity/force_checks.h"
#include "gravity/interact.h"
#include "gravity/tune.h"
#include "parallel/balance.h"
#include "parallel/comm.h"
#include "tree/refresh_lag.h"


bn_status bn_simulation_create(bn_simulation **out)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_create: out is NULL");
    bn_simulation *sim = bn_calloc(1, sizeof *sim, "simulation");
    if (!sim) return BN_ERR_NOMEM;
    sim->grav = bn_gravity_params_default();
    sim->integ = bn_integrator_params_default();
    bn_status s = bn_particles_create(&sim->host, 0);
    if (s != BN_OK) {
        free(sim);
        return s;
    }
    sim->host_current = 1;
    *out = sim;
    return BN_OK;
}

static int ranks(const bn_simulation *sim) { return bn_comm_size(sim->comm); }

static void drop_backend(bn_simulation *sim)
{
    if (sim->ops && sim->state) sim->ops->destroy(sim->state);
    sim->ops = NULL;
    sim->state = NULL;
    sim->backend_current = 0;
    sim->have_forces = 0;
}

void bn_simulation_free(bn_simulation *sim)
{
    if (!sim) return;
    drop_backend(sim);
    bn_particles_free(sim->host);
    bn_domain_release(&sim->cut);
    free(sim);
}

/* Bring the host mirror up to date (before a change made on the host). */
bn_status bn_sim_sync_host(bn_simulation *sim)
{
    if (sim->host_current) return BN_OK;
    BN_TRY(sim->ops->download(sim->state, sim->host));
    sim->host_current = 1;
    return BN_OK;
}

/* Block steps: bins and half-kicked velocities live on the backend
 * until the cycle ends; a change that recreates it must wait for that. */
static bn_status require_synchronised(const bn_simulation *sim, const char *what)
{
    const bn_clock *c = &sim->clock;
    if (c->tick == 0) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "%s: not possible inside a block-step cycle (tick %d of %d); step to its end "
                   "at time %.17g first", what, c->tick, 1 << (sim->integ.time_bins - 1), c->cycle_end);
}

bn_status bn_simulation_set_comm(bn_simulation *sim, const bn_comm *c)
{
    if (!sim) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_set_comm: simulation is NULL");
    BN_TRY(require_synchronised(sim, "bn_simulation_set_comm"));
    BN_TRY(bn_sim_sync_host(sim));
    drop_backend(sim); /* the next one is told the ranks */
    sim->comm = c;
    bn_domain_release(&sim->cut); /* a cut for other ranks */
    return BN_OK;
}

bn_status bn_simulation_set_gravity(bn_simulation *sim, const bn_gravity_params *g)
{
    BN_TRY(bn_gravity_params_validate(g));
    BN_TRY(require_synchronised(sim, "bn_simulation_set_gravity"));
    BN_TRY(bn_sim_sync_host(sim));
    drop_backend(sim);
    sim->grav = *g;
    sim->tuned = 0;
    memset(&sim->acc, 0, sizeof sim->acc);
    return BN_OK;
}

bn_status bn_simulation_set_integrator(bn_simulation *sim, const bn_integrator_params *ip)
{
    if (!ip || !(ip->dt > 0) || !isfinite(ip->dt))
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: dt must be finite and > 0, got %g", ip ? ip->dt : 0.0);
    if (!(ip->eta >= 0) || !isfinite(ip->eta))
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: eta must be finite and >= 0, got %g", ip->eta);
    if (ip->time_bins < 0 || ip->time_bins > BN_TIME_BINS_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: time_bins must be in [0, %d], got %d", BN_TIME_BINS_MAX,
                       ip->time_bins);
    if (ip->time_bins >= 2 && !(ip->eta > 0))
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: time_bins = %d needs eta > 0 to choose the particles' "
                       "steps (eta = 0)", ip->time_bins);
    if ((int)ip->criterion < 0 || ip->criterion > BN_STEP_DYNAMICAL)
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: unknown criterion %d", (int)ip->criterion);
    if (ip->tree_rebuild < 0)
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: tree_rebuild must be >= 0, got %d", ip->tree_rebuild);
    if ((int)ip->rebuild_cost < 0 || ip->rebuild_cost > BN_TUNE_WORK)
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: unknown rebuild_cost %d", (int)ip->rebuild_cost);
    if (!(ip->dt_min >= 0) || !isfinite(ip->dt_min))
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: dt_min must be finite and >= 0, got %g", ip->dt_min);
    if (ip->dt < ip->dt_min)
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: dt = %g is below dt_min = %g", ip->dt, ip->dt_min);
    if (ip->time_bins >= 2 && ldexp(ip->dt, -(ip->time_bins - 1)) < ip->dt_min)
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: the finest block step dt / 2^(time_bins - 1) = %g is below "
                       "dt_min = %g", ldexp(ip->dt, -(ip->time_bins - 1)), ip->dt_min);
    BN_TRY(require_synchronised(sim, "bn_simulation_set_integrator"));
    sim->integ = *ip;
    return BN_OK;
}

bn_status bn_simulation_set_particles(bn_simulation *sim, const bn_particles *p)
{
    /* several ranks: a rank may hold none; the set is judged whole, by
     * all ranks together, at the upload */
    if (ranks(sim) <= 1) BN_TRY(bn_particles_validate(p, "particles"));
    else if (!p) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_set_particles: particle set is NULL");
    bn_particles *copy = NULL;
    BN_TRY(bn_particles_copy(&copy, p));
    bn_particles_free(sim->host);
    sim->host = copy;
    sim->host_current = 1;
    sim->backend_current = 0;
    sim->have_forces = 0;
    sim->tuned = 0; /* new particles: a new search (error target) */
    sim->clock.tick = 0; /* new particles: synchronised velocities */
    bn_domain_release(&sim->cut); /* cut for the particles that were: none until the next rebalance */
    return BN_OK;
}

bn_status bn_simulation_add_particle(bn_simulation *sim, const double pos[3], const double vel[3], double mass,
                                     uint64_t id)
{
    if (!(mass >= 0) || !isfinite(mass)) return bn_fail(BN_ERR_ARGUMENT, "particle id %llu: mass %g must be >= 0",
                                                        (unsigned long long)id, mass);
    for (int k = 0; k < 3; k++)
        if (!isfinite(pos[k]) || !isfinite(vel[k]))
            return bn_fail(BN_ERR_ARGUMENT, "particle id %llu: non-finite position or velocity",
                           (unsigned long long)id);
    BN_TRY(require_synchronised(sim, "bn_simulation_add_particle"));
    BN_TRY(bn_sim_sync_host(sim));
    size_t i = sim->host->n;
    BN_TRY(bn_particles_resize(sim->host, i + 1));
    for (int k = 0; k < 3; k++) {
        sim->host->pos[k][i] = pos[k];
        sim->host->vel[k][i] = vel[k];
    }
    sim->host->mass[i] = mass;
    sim->host->id[i] = id;
    sim->backend_current = 0;
    sim->have_forces = 0;
    return BN_OK;
}

/* Several ranks: the particles are checked as one set, as bn_gravity
 * does (each rank judges its own, the range and total mass that the
 * other checks need are every rank's), and counted. A rank may hold
 * none. */
static bn_status check_inputs_ranks(bn_simulation *sim)
{
    const bn_particles *p = sim->host;
    bn_input_summary sum;
    bn_status s = bn_summarize_particles(p, &sum);
    if (s == BN_OK && sum.first_bad < p->n) s = bn_particles_fault(p, sum.first_bad, "particles");
    BN_TRY(bn_comm_agree(sim->comm, s));
    BN_TRY(bn_comm_reduce_box(sim->comm, sum.lo, sum.hi));
    double v[2] = {sum.mass, (double)p->n};
    BN_TRY(bn_comm_allreduce(sim->comm, v, 2, BN_REDUCE_SUM));
    sum.mass = v[0];
    sim->n_global = v[1];
    if (!(v[1] > 0)) return bn_fail(BN_ERR_ARGUMENT, "particles: no particles on any of %d ranks", ranks(sim));
    return bn_force_inputs_judge(&sim->grav, p, &sum); /* the same on every rank */
}

/* The backend for this simulation's ranks: AUTO takes the CPU's across
 * ranks (ranks on one node would share its GPU); GPU when asked. */
static bn_status create_backend(bn_simulation *sim)
{
    const bn_backend want = ranks(sim) > 1 && sim->grav.backend == BN_BACKEND_AUTO ? BN_BACKEND_CPU : sim->grav.backend;
    BN_TRY(bn_backend_select(want, sim->grav.device, &sim->ops));
    bn_status s = sim->ops->create(&sim->state, &sim->grav);
    if (s == BN_OK && ranks(sim) > 1) s = sim->ops->set_comm(sim->state, sim->comm);
    if (s != BN_OK) drop_backend(sim);
    return s;
}

/* The last cut's key cube to the backend (backend.h's set_key_cube()):
 * several ranks' trees then take their octants from it. A host-side copy
 * of four numbers, made wherever a tree may follow: at an upload, after
 * a cut on the device, before a step's crossers move (a restart sets its
 * cut after its upload) and before forces asked for outright. */
static void share_key_cube(bn_simulation *sim)
{
    if (!sim->ops || !sim->state || !sim->ops->set_key_cube) return;
    const int cut = ranks(sim) > 1 && sim->cut.split;
    sim->ops->set_key_cube(sim->state, sim->cut.lo, cut ? sim->cut.side : 0.0);
}

static bn_status upload(bn_simulation *sim)
{
    if (ranks(sim) > 1) {
        BN_TRY(check_inputs_ranks(sim)); /* agreed */
    } else {
        BN_TRY(bn_particles_validate(sim->host, "particles"));
        BN_TRY(bn_force_inputs_check(&sim->grav, sim->host));
        sim->n_global = (double)sim->host->n;
    }
    BN_TRY(bn_comm_agree(sim->comm, sim->ops->upload(sim->state, sim->host)));
    BN_TRY(sim->ops->clock_write(sim->state, &sim->clock));
    share_key_cube(sim);
    sim->backend_current = 1;
    sim->have_forces = sim->forces_moved;
    sim->forces_moved = 0;
    return BN_OK;
}

/* Make sure the backend exists and holds the particles (collective over
 * the ranks, and agreed, whenever it does something: the flags that
 * decide are the same on every rank). */
bn_status bn_sim_ensure_backend(bn_simulation *sim)
{
    if (!sim->ops) BN_TRY(bn_comm_agree(sim->comm, create_backend(sim)));
    if (!sim->backend_current) BN_TRY(upload(sim));
    return BN_OK;
}

bn_status bn_simulation_particles(bn_simulation *sim, const bn_particles **out)
{
    BN_TRY(bn_sim_sync_host(sim));
    *out = sim->host;
    return BN_OK;
}

double bn_simulation_time(const bn_simulation *sim) { return sim->clock.time; }
long bn_simulation_steps(const bn_simulation *sim) { return sim->clock.steps; }
long bn_simulation_idle_steps(const bn_simulation *sim) { return sim->clock.idle_steps; }

bn_status bn_simulation_set_time(bn_simulation *sim, double t)
{
    if (!isfinite(t)) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_set_time: time %g is not finite", t);
    sim->clock.time = t;
    return sim->ops && sim->backend_current ? sim->ops->clock_write(sim->state, &sim->clock) : BN_OK;
}
const bn_force_stats *bn_simulation_force_stats(bn_simulation *sim)
{
    if (!sim->stats_current && sim->ops && sim->have_forces) {
        if (sim->ops->stats(sim->state, &sim->stats) != BN_OK) memset(&sim->stats, 0, sizeof sim->stats);
        sim->stats_current = 1;
    }
    return &sim->stats;
}

bn_status bn_simulation_finish(bn_simulation *sim)
{
    return sim->ops ? sim->ops->finish(sim->state) : BN_OK;
}

bn_backend bn_simulation_backend(const bn_simulation *sim)
{
    if (sim->ops) return sim->ops == &bn_cpu_backend_ops ? BN_BACKEND_CPU : BN_BACKEND_GPU;
    return sim->grav.backend;
}

const bn_gravity_params *bn_simulation_gravity(const bn_simulation *sim) { return &sim->grav; }
const bn_accuracy *bn_simulation_accuracy(const bn_simulation *sim) { return &sim->acc; }

static int has_target(const bn_simulation *sim)
{
    return sim->grav.method == BN_METHOD_TREE && sim->grav.error_target > 0;
}

static bn_tune_env tune_env(const bn_simulation *sim)
{
    const bn_tune_env e = {sim->ops, sim->state, sim->host->n, sim->ops != &bn_cpu_backend_ops, sim->comm};
    return e;
}

/* The error target's check of the current forces on a fresh sample (its
 * seed: the step), and a re-tune when it asks for one: theta first, the
 * whole search when theta moved by more than 30%. The search leaves the
 * forces of the chosen settings at the current positions. */
static bn_status check_accuracy(bn_simulation *sim)
{
    const bn_tune_env env = tune_env(sim);
    int retune = 0;
    BN_TRY(bn_tune_check_record(&env, &sim->grav, (uint64_t)sim->clock.steps + 1, &sim->acc, &retune));
    sim->last_check = sim->clock.steps;
    if (!retune) return BN_OK;
    const double theta = sim->grav.theta;
    BN_TRY(bn_tune_search(&env, &sim->grav, 1, &sim->acc));
    if (fabs(log(sim->grav.theta / theta)) > log(1.3)) BN_TRY(bn_tune_search(&env, &sim->grav, 0, &sim->acc));
    sim->stats_current = 0;
    return BN_OK;
}

/* The first forces with an error target: the search, which ends with the
 * chosen settings' forces. */
static bn_status tune_forces(bn_simulation *sim)
{
    const bn_tune_env env = tune_env(sim);
    BN_TRY(bn_tune_search(&env, &sim->grav, 0, &sim->acc));
    sim->tuned = 1;
    sim->last_check = sim->clock.steps;
    return BN_OK;
}

bn_status bn_simulation_compute_forces(bn_simulation *sim)
{
    BN_TRY(bn_sim_ensure_backend(sim));
    share_key_cube(sim);
    memset(&sim->stats, 0, sizeof sim->stats);
    sim->stats_current = 0;
    if (has_target(sim) && !sim->tuned && sim->clock.tick == 0)
        BN_TRY(tune_forces(sim));
    else
        BN_TRY(sim->ops->forces(sim->state, NULL)); /* the stats only when asked */
    sim->have_forces = 1;
    sim->host_current = 0;
    sim->steps_since_build = 1;
    return BN_OK;
}

/* The eps of the step criteria eta sqrt(eps / |a|) (shared and block):
 * the softening, or 1e-3 without one. */
static double step_softening(const bn_simulation *sim)
{
    return sim->grav.softening > 0 ? sim->grav.softening : 1e-3;
}

static bn_step_rule step_rule(const bn_simulation *sim)
{
    bn_step_rule r;
    r.dt = sim->integ.dt;
    r.eta = sim->integ.eta;
    r.eps = step_softening(sim);
    r.criterion = (int)sim->integ.criterion;
    r.n_bins = sim->integ.time_bins;
    r.rebuild = 1;
    r.refreshes = bn_block_steps_refresh(sim->grav.method, sim->integ.time_bins, sim->integ.tree_rebuild);
    return r;
}

static bn_status stage(bn_simulation *sim, const bn_step_rule *r, bn_clock_stage st)
{
    return sim->ops->clock_stage(sim->state, r, st);
}

static bn_status read_clock(bn_simulation *sim) { return sim->ops->clock_read(sim->state, &sim->clock); }

/* A step's forces are queued: the stats to come are theirs. */
static bn_status queue_forces(bn_simulation *sim, const bn_step_rule *r)
{
    memset(&sim->stats, 0, sizeof sim->stats);
    sim->stats_current = 0;
    return stage(sim, r, BN_STAGE_FORCES);
}

/* Several ranks, after a drift (shared steps, and block steps that
 * rebuild the tree, their bins along): the particles that crossed the last
 * cut go to the ranks that own their keys (backend.h's migrate()), so
 * that each rank's tree holds its own region only. Without it the
 * crossers' nodes and groups span the other ranks' regions and the
 * locally essential trees grow with every step (2 GPUs, 2^25 each: from
 * 1.3 M to 31 M bodies in 6 steps, BENCHMARKS.md session 20).
 * BANYAN_MIGRATE=0 leaves them (a measuring aid). */
static bn_status migrate_crossers(bn_simulation *sim)
{
    if (ranks(sim) <= 1 || !sim->cut.split || !sim->ops->migrate) return BN_OK;
    const char *env = getenv("BANYAN_MIGRATE");
    if (env && !strcmp(env, "0")) return BN_OK;
    bn_domain_stats st;
    memset(&st, 0, sizeof st);
    sim->host_current = 0; /* positions, velocities and forces: the backend's */
    share_key_cube(sim);
    BN_TRY(sim->ops->migrate(sim->state, sim->host, &sim->cut, &st));
    sim->migrated.sent += st.sent;
    sim->migrated.received += st.received;
    sim->migrated.t_total += st.t_total;
    return BN_OK;
}

/* One kick-drift-kick step, its length chosen by the backend's clock. The
 * forces at the start are those of the previous step's end (computed once
 * per step). Nothing is copied to the host (across ranks the crossers'
 * move brings only them). */
static bn_status queue_shared_step(bn_simulation *sim, const bn_step_rule *r)
{
    BN_TRY(stage(sim, r, BN_STAGE_SHARED_PLAN));
    BN_TRY(stage(sim, r, BN_STAGE_HALF_KICK));
    BN_TRY(stage(sim, r, BN_STAGE_DRIFT));
    BN_TRY(migrate_crossers(sim));
    BN_TRY(queue_forces(sim, r));
    BN_TRY(stage(sim, r, BN_STAGE_HALF_KICK));
    return stage(sim, r, BN_STAGE_SHARED_END);
}

/* ---- block (hierarchical) time steps: integrate/timebins.h, clock.h ---- */

/* The self-tuned rebuild (tree_rebuild 0, after GOTHIC's paper 001 sec.
 * 2.6): rebuild on a period of 2^m steps aligned with the block-step
 * cycle (at the steps with the most active particles), m chosen by
 * measuring whole cycles at the best m so far and at a neighbour; the
 * rule, and why, is integrate/rebuild_tuner.h. rebuild_cost chooses what
 * it weighs: measured seconds (time) or the walk's counted work, its
 * flops and the cells it visited (work, the default: the same decisions,
 * and bits, at every run). Each build leads its refreshes (lead_build
 * below), since refreshed trees of the build's positions drifted in
 * energy (BENCHMARKS.md, sessions 27-29). */

/* Rebuilding at every step (tree_rebuild 1) needs nothing from the
 * device; the other intervals decide on the host, from the clock (a
 * cycle's end) and the walk's counts or times read after each step (but
 * for the quiet steps below). */
static int block_host_decides(const bn_simulation *sim)
{
    return bn_block_steps_refresh(sim->grav.method, sim->integ.time_bins, sim->integ.tree_rebuild);
}

/* The tuner's held rebuilds at every step (a held period of 0), but the
 * hold's last step, which it records (its window opens there): they need
 * nothing from the device, so a batch of them is queued back to back as
 * tree_rebuild 1's steps are (a read of the clock and the counts after
 * each step cost 0.5-0.9% where refreshes never pay, BENCHMARKS.md
 * session 27). The hold then counts the steps made. */
static long quiet_steps(const bn_simulation *sim)
{
    if (!block_host_decides(sim) || sim->integ.tree_rebuild != 0) return 0;
    return bn_rebuild_tuner_quiet_steps(&sim->tuner);
}

/* A rebuild whatever the plan says: a fixed interval that is up, or the
 * tuner's period 0 (every step). The host then needs no read of the
 * plan, and the device does not wait for it. */
static int block_rebuild_certain(const bn_simulation *sim)
{
    if (sim->integ.tree_rebuild > 0) return sim->steps_since_build >= sim->integ.tree_rebuild;
    return sim->tuner.period == 0;
}

static int block_wants_rebuild(const bn_simulation *sim)
{
    if (sim->clock.ends) return 1; /* every particle active */
    if (sim->integ.tree_rebuild > 0) return sim->steps_since_build >= sim->integ.tree_rebuild;
    /* the finest occupied bin: the plan steps the tick by its step, a
     * power of two whose bin is the one active alone at that tick */
    const int finest = bn_time_bin_min_active(sim->clock.next_tick - sim->clock.tick, sim->integ.time_bins);
    return bn_rebuild_tuner_wants(&sim->tuner, sim->clock.bin_min, finest);
}

/* BANYAN_GRAVITY_TRACE=1: this rank's view of a step the tuner weighs,
 * both ways (how far counted work follows the measured times). */
static void trace_tuner_step(const bn_force_stats *st, int bin_min, int rebuilt, double n_active)
{
    if (!bn_trace_on()) return;
    bn_trace_count("tuner: first active bin", bin_min);
    bn_trace_count("tuner: rebuilt", rebuilt);
    bn_trace_count("tuner: active", n_active);
    bn_trace_ms("tuner: walk", 1e3 * st->t_walk);
    bn_trace_ms("tuner: tree", 1e3 * (st->t_bbox + st->t_keys + st->t_sort + st->t_build + st->t_moments + st->t_groups));
    bn_trace_count("tuner: walk flops", bn_walk_flops(st->n_pp, st->n_pc, st->n_far, n_active));
    bn_trace_count("tuner: cells visited", st->n_visit);
}

/* A refresh the backend refused (tree/refresh_guard.h) is a rebuild,
 * on any rank: the interval counts from it. A refused build ahead
 * (backend_cuda.cu's lead_refused) built twice: one build more. */
static void count_refusal(bn_simulation *sim, int refused, int lead_refused)
{
    sim->refused_builds += lead_refused != 0;
    if (!refused) return;
    sim->refused_builds++;
    sim->steps_since_build = 1;
}

/* Whether the tuner's window closes after the step just made (read at
 * its end): where the next step ends the cycle (the plan's test, from the
 * finest bin the kick left), so that the decision at the close comes
 * before that step's build, every particle active, which then leads by
 * the new period; or where this step was a whole cycle (every particle
 * in the coarsest bin). */
static int window_closes(const bn_simulation *sim)
{
    const bn_clock *c = &sim->clock;
    const int K = sim->integ.time_bins;
    if (c->tick != 0) return c->tick + bn_time_bin_ticks(c->max_bin, K) == 1 << (K - 1);
    return c->dt >= 0.75 * c->cycle_length;
}

/* After a step's forces: its costs to the tuner, the same on every rank
 * (n_active is every rank's; work: the counts summed over the ranks;
 * time: the slowest rank's times, since the step waits for it). A fixed
 * interval only asks whether a rank refused its refresh or its build
 * ahead. */
static bn_status block_tune_rebuild(bn_simulation *sim, int bin_min, int rebuilt)
{
    const double n_active = (double)sim->clock.n_active;
    if (n_active <= 0) return BN_OK;
    const bn_force_stats *st = bn_simulation_force_stats(sim);
    if (sim->integ.tree_rebuild > 0) { /* a fixed interval */
        double refused[2] = {st->refresh_refused, st->lead_refused};
        BN_TRY(bn_comm_allreduce(sim->comm, refused, 2, BN_REDUCE_MAX));
        count_refusal(sim, refused[0] > 0, refused[1] > 0);
        trace_tuner_step(st, bin_min, rebuilt || refused[0] > 0, n_active);
        return BN_OK;
    }
    bn_rebuild_step s = {bin_min, rebuilt, 0, 0, 0, 0, 0, 0, 0};
    int refused = 0, lead_refused = 0;
    if (sim->integ.rebuild_cost == BN_TUNE_WORK) { /* exact integer counts: the same sums on every rank */
        double count[6] = {st->n_pp, st->n_pc, st->n_far, st->n_visit, st->refresh_refused, st->lead_refused};
        BN_TRY(bn_comm_allreduce(sim->comm, count, 6, BN_REDUCE_SUM));
        refused = count[4] > 0, lead_refused = count[5] > 0;
        /* a refused build ahead built twice, on the ranks that refused it
         * (their share of the particles taken as the mean's) */
        const double built = (double)sim->n_global * (1 + count[5] / ranks(sim));
        s = bn_rebuild_step_work(bin_min, rebuilt || refused, n_active, count, built);
    } else {
        /* A refresh reports its whole tree time (gather, moments, group
         * boxes) in some of these fields and a build in all of them: only
         * their sum is weighed. */
        double t[4] = {st->t_walk, st->t_bbox + st->t_keys + st->t_sort + st->t_build + st->t_moments + st->t_groups,
                       st->refresh_refused, st->lead_refused};
        BN_TRY(bn_comm_allreduce(sim->comm, t, 4, BN_REDUCE_MAX));
        s.walk = t[0], s.tree = t[1];
        refused = t[2] > 0, lead_refused = t[3] > 0;
        s.rebuilt = rebuilt || refused;
    }
    s.ends = sim->clock.ends;
    s.closes = window_closes(sim);
    s.dt = sim->clock.dt;
    s.cycle = sim->clock.cycle_length;
    s.shortened = s.cycle < sim->integ.dt * (1 - 1e-9); /* landing on an output time */
    count_refusal(sim, refused, lead_refused);
    trace_tuner_step(st, bin_min, s.rebuilt, n_active);
    bn_rebuild_tuner_record(&sim->tuner, &s);
    if (bn_trace_on()) { /* the rule's state after the step: what the next decision sees */
        bn_trace_count("tuner: period", (double)sim->tuner.period);
        bn_trace_count("tuner: hold", (double)sim->tuner.hold);
    }
    return BN_OK;
}

/* A build whose tree the next steps refresh takes its structure from
 * the positions half their span ahead (tree/refresh_lag.h), as many
 * steps as tree_rebuild N, or the self-tuned rule's period (2^m,
 * bn_rebuild_tuner_lead_steps), of the step's
 * drift dt (the last one read where the rebuild was certain: block steps
 * keep their length within a cycle). Set at every
 * step, from the saved state alone (a continued run sets the same): 0
 * where no rebuild was asked for, so that a build the backend makes on
 * its own (no tree after a cut or an upload, a refused refresh) is of x
 * in every run, and for the tuner's quiet held rebuilds (every step). */
static void lead_build(bn_simulation *sim, int rebuild, int host_decides)
{
    /* no refreshes (tree_rebuild 1, set anew by bn_simulation_set_integrator): 0 */
    const int refreshes = block_host_decides(sim);
    const double steps = !refreshes || !rebuild || !host_decides ? 1
                         : sim->integ.tree_rebuild > 0       ? sim->integ.tree_rebuild
                                                             : bn_rebuild_tuner_lead_steps(&sim->tuner);
    /* the tuner's record above whatever the backend (its saved state) */
    if (sim->ops->build_ahead) sim->ops->build_ahead(sim->state, bn_refresh_tau(steps, sim->clock.dt));
}

/* One block step: a new cycle if the last one ended (bins of every
 * particle and their opening kicks), the drift of everything to the next
 * tick where some particle ends its step, forces of the particles active
 * there, their closing kicks and, inside the cycle, their new bins and
 * opening kicks. With tree_rebuild != 1 the host reads the clock twice
 * per step to choose between rebuilding and refreshing the tree: after
 * the plan (the cycle's end; not where a rebuild is certain) and at the
 * step's end (the kick's count, and the walk's); the second read leaves
 * sim->clock current. A quiet step (a batch of the tuner's held
 * rebuilds) reads nothing. */
static bn_status queue_block_step(bn_simulation *sim, bn_step_rule *r)
{
    const int host_decides = block_host_decides(sim) && !sim->quiet;
    BN_TRY(stage(sim, r, BN_STAGE_BLOCK_BEGIN));
    BN_TRY(stage(sim, r, BN_STAGE_BLOCK_KICK));
    BN_TRY(stage(sim, r, BN_STAGE_BLOCK_PLAN));
    if (host_decides && block_rebuild_certain(sim)) {
        r->rebuild = 1;
    } else if (host_decides) {
        BN_TRY(read_clock(sim));
        r->rebuild = block_wants_rebuild(sim);
    }
    BN_TRY(stage(sim, r, BN_STAGE_DRIFT));
    if (r->rebuild) BN_TRY(migrate_crossers(sim)); /* a refreshed tree keeps its particles */
    lead_build(sim, r->rebuild, host_decides);
    BN_TRY(queue_forces(sim, r));
    BN_TRY(stage(sim, r, BN_STAGE_BLOCK_KICK));
    BN_TRY(stage(sim, r, BN_STAGE_BLOCK_END));
    if (!host_decides) return BN_OK;
    BN_TRY(read_clock(sim));
    sim->steps_since_build = r->rebuild ? 1 : sim->steps_since_build + 1;
    return block_tune_rebuild(sim, sim->clock.bin_min, r->rebuild); /* the end keeps the plan's bins */
}

/* ---- batches ---- */

/* Most steps queued before the clock is read: bounds the queue and the
 * host's prediction loop. */
#define BN_BATCH_MAX 4096

/* How many steps reach t_limit from the clock as last read, if the steps
 * stay as long as the last one (shared: its max |a|; block: the finest
 * bin seen last). Shorter steps leave the batch short of t_limit (the
 * next batch goes on); longer ones leave idle steps at its end. */
static long predict_steps(const bn_simulation *sim, const bn_step_rule *r, double t_limit, long max_steps)
{
    bn_clock c = sim->clock;
    c.t_limit = t_limit;
    const int guess_bin = c.max_bin;
    long m = 0;
    while (m < max_steps) {
        if (r->n_bins == 0) {
            bn_clock_shared_plan(&c, r);
            bn_clock_shared_end(&c);
        } else {
            bn_clock_block_begin(&c, r);
            c.max_bin = guess_bin;
            bn_clock_block_plan(&c, r);
            bn_clock_block_end(&c, r);
        }
        if (!c.live) break;
        m++;
    }
    return m > 0 ? m : 1;
}

/* The checks before a batch toward t_limit: 0 when there is nothing to
 * do. An error target's check is due every error_check_interval steps,
 * at a synchronised time (block steps: a cycle's end). */
static bn_status batch_ready(bn_simulation *sim, double t_limit, int *go)
{
    *go = 0;
    if (!(t_limit > sim->clock.time)) return BN_OK;
    if (sim->integ.time_bins > 0 && sim->clock.tick != 0 && t_limit < sim->clock.cycle_end)
        return bn_fail(BN_ERR_ARGUMENT, "step: time limit %.17g falls inside the running block-step cycle, which "
                       "ends at %.17g (output times must lie on cycle ends)", t_limit, sim->clock.cycle_end);
    BN_TRY(bn_sim_ensure_backend(sim));
    if (!sim->have_forces) BN_TRY(bn_simulation_compute_forces(sim));
    const int every = sim->grav.error_check_interval;
    if (has_target(sim) && every > 0 && sim->clock.tick == 0 && sim->clock.steps - sim->last_check >= every)
        BN_TRY(check_accuracy(sim));
    *go = 1;
    return BN_OK;
}

/* Shared steps with an error target stop for its next check. */
static long steps_to_check(const bn_simulation *sim, long m)
{
    const long every = sim->grav.error_check_interval;
    if (!has_target(sim) || every <= 0 || sim->integ.time_bins > 0) return m;
    const long left = every - (sim->clock.steps - sim->last_check);
    return left < 1 ? 1 : left < m ? left : m;
}

/* The shared step the criterion asks for now (before any shortening to
 * land on an output) against dt_min: below it the run would creep on
 * for ever (GADGET's MinSizeTimestep, SWIFT's dt_min). Block steps have
 * a floor of their own, dt / 2^(K-1), checked against dt_min when set. */
static bn_status check_step_floor(const bn_simulation *sim, const bn_step_rule *r)
{
    if (!(sim->integ.dt_min > 0) || r->n_bins > 0 || !(r->eta > 0) || !(sim->clock.amax > 0)) return BN_OK;
    const double dt = fmin(r->dt, r->eta * sqrt(r->eps / sim->clock.amax));
    if (dt >= sim->integ.dt_min) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "the time step eta sqrt(eps / max|a|) = %g fell below TimeIntegration:dt_min = "
                   "%g (max|a| = %g): a close encounter or a collapse that the softening %g does not resolve; raise "
                   "the softening or lower dt_min", dt, sim->integ.dt_min, sim->clock.amax, r->eps);
}

/* Up to max_steps steps toward t_limit, queued back to back; the clock is
 * read once at the end (and, on a failure, to stay true). */
static bn_status run_batch(bn_simulation *sim, double t_limit, long max_steps)
{
    int go = 0;
    BN_TRY(batch_ready(sim, t_limit, &go));
    if (!go) return BN_OK;
    bn_step_rule r = step_rule(sim);
    if (max_steps > BN_BATCH_MAX) max_steps = BN_BATCH_MAX;
    const long quiet = quiet_steps(sim);
    if (quiet > 0 && max_steps > quiet) max_steps = quiet;
    const int one_step = block_host_decides(sim) && !quiet; /* its step reads the clock at its end */
    const long m = one_step ? 1 : steps_to_check(sim, predict_steps(sim, &r, t_limit, max_steps));
    sim->clock.t_limit = t_limit;
    bn_status s = sim->ops->clock_write(sim->state, &sim->clock);
    sim->host_current = 0; /* the first kick changes the particles */
    const long before = sim->clock.steps;
    sim->quiet = quiet > 0;
    for (long k = 0; s == BN_OK && k < m; k++)
        s = r.n_bins > 0 ? queue_block_step(sim, &r) : queue_shared_step(sim, &r);
    sim->quiet = 0;
    if (s == BN_OK && one_step) return BN_OK;
    const bn_status read = read_clock(sim);
    if (quiet && read == BN_OK) { /* every step made rebuilt (also before a failure) */
        bn_rebuild_tuner_quiet_done(&sim->tuner, sim->clock.steps - before);
        sim->steps_since_build = 1;
    }
    BN_TRY(s != BN_OK ? s : read);
    return check_step_floor(sim, &r);
}

bn_status bn_simulation_advance(bn_simulation *sim, double t_limit, long max_steps, long *steps_taken)
{
    if (steps_taken) *steps_taken = 0;
    if (isnan(t_limit)) return bn_fail(BN_ERR_ARGUMENT, "advance: time limit is NaN");
    if (max_steps < 1) return bn_fail(BN_ERR_ARGUMENT, "advance: max_steps must be >= 1, got %ld", max_steps);
    const long before = sim->clock.steps;
    const bn_status s = run_batch(sim, t_limit, max_steps);
    if (steps_taken) *steps_taken = sim->clock.steps - before;
    return s;
}

/* One step: a batch of one (the clock read at its end gives its length). */
static bn_status one_step(bn_simulation *sim, double t_limit, double *dt_taken)
{
    if (dt_taken) *dt_taken = 0;
    long made = 0;
    BN_TRY(bn_simulation_advance(sim, t_limit, 1, &made));
    if (dt_taken && made) *dt_taken = sim->clock.dt;
    return BN_OK;
}

bn_status bn_simulation_step_to(bn_simulation *sim, double t_limit, double *dt_taken)
{
    if (!isfinite(t_limit)) return bn_fail(BN_ERR_ARGUMENT, "step: time limit %g is not finite", t_limit);
    return one_step(sim, t_limit, dt_taken);
}

bn_status bn_simulation_step(bn_simulation *sim, double *dt_taken) { return one_step(sim, INFINITY, dt_taken); }

bn_status bn_simulation_integrate(bn_simulation *sim, double t_end)
{
    if (!isfinite(t_end)) return bn_fail(BN_ERR_ARGUMENT, "integrate: t_end = %g is not finite", t_end);
    while (sim->clock.time < t_end) BN_TRY(bn_simulation_advance(sim, t_end, BN_BATCH_MAX, NULL));
    return BN_OK;
}

bn_status bn_simulation_energies(bn_simulation *sim, bn_energies *out)
{
    BN_TRY(bn_sim_ensure_backend(sim));
    if (!sim->have_forces) BN_TRY(bn_simulation_compute_forces(sim));
    return sim->ops->energies(sim->state, out);
}

bn_block_info bn_simulation_block_info(const bn_simulation *sim)
{
    bn_block_info b;
    memset(&b, 0, sizeof b);
    b.n_bins = sim->integ.time_bins;
    if (b.n_bins <= 0) return b;
    const bn_clock *c = &sim->clock;
    b.tick = c->tick;
    b.ticks = 1 << (b.n_bins - 1);
    b.max_bin = c->max_bin;
    b.n_active = c->n_active;
    b.tree_builds = c->builds + sim->refused_builds;
    b.cycle_start = c->cycle_start;
    b.cycle_length = c->cycle_length;
    b.forces = c->forces;
    return b;
}

/* ---- several ranks: load balance ---- */

/* Gravity:balance_cost time: this rank's factor for its counted costs
 * `flops` (parallel/balance.h), from the backend's measured walk time
 * (restart: counted from 0 again, as the costs are at a cut); 1 for
 * work. Collective. */
static bn_status time_scale(bn_simulation *sim, double flops, int restart, double *scale)
{
    *scale = 1;
    if (sim->grav.balance_cost != BN_TUNE_TIME) return BN_OK;
    double seconds = 0;
    const bn_status s = sim->ops->walk_seconds ? sim->ops->walk_seconds(sim->state, &seconds, restart) : BN_OK;
    BN_TRY(bn_comm_agree(sim->comm, s));
    return bn_balance_time_scale(sim->comm, seconds, flops, scale);
}

/* This rank's load since the domains were last cut: its particles'
 * measured costs (backend.h's costs(): every walk's flops since then, the
 * sub-steps of block steps included), or the last evaluation's flops
 * where none were measured (direct summation). Counts, not seconds, so
 * that the decisions are the same in every run, unless
 * Gravity:balance_cost is time (the counts scaled by the measured time,
 * as the cut weighs them). */
static bn_status rank_load(bn_simulation *sim, double *load)
{
    *load = 0;
    if (!sim->ops || !sim->have_forces || !sim->backend_current) return BN_OK;
    int measured = 0;
    BN_TRY(bn_comm_agree(sim->comm, sim->ops->costs(sim->state, NULL, load, &measured)));
    /* every rank the same measure (an empty rank's 0 is a measured 0) */
    double all = measured;
    BN_TRY(bn_comm_allreduce(sim->comm, &all, 1, BN_REDUCE_MIN));
    if (all > 0) {
        double scale = 1;
        BN_TRY(time_scale(sim, *load, 0, &scale));
        *load *= scale;
        return BN_OK;
    }
    const bn_force_stats *st = bn_simulation_force_stats(sim);
    *load = bn_walk_flops(st->n_pp, st->n_pc, st->n_far, (double)sim->host->n);
    return BN_OK;
}

bn_status bn_simulation_imbalance(bn_simulation *sim, double *imbalance)
{
    if (!sim || !imbalance) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_imbalance: NULL argument");
    *imbalance = 1;
    if (ranks(sim) <= 1) return BN_OK;
    double sum = 0;
    BN_TRY(rank_load(sim, &sum)); /* its collectives are reached by every rank: the flags are the same */
    double max = sum;
    BN_TRY(bn_comm_allreduce(sim->comm, &sum, 1, BN_REDUCE_SUM));
    BN_TRY(bn_comm_allreduce(sim->comm, &max, 1, BN_REDUCE_MAX));
    if (sum > 0) *imbalance = max / (sum / ranks(sim));
    return BN_OK;
}

/* Each particle's weight for the cut: its measured cost, the flops of
 * the walks that computed its forces since the last upload (backend.h's
 * costs(): fine time bins, dense regions and the particles that need
 * much of other ranks' trees weigh more), scaled by the rank's measured
 * time where Gravity:balance_cost is time; NULL (by count) while some
 * rank has measured nothing. */
static bn_status cost_weights(bn_simulation *sim, double **w)
{
    *w = NULL;
    const size_t n = sim->host->n;
    double *v = bn_alloc((n ? n : 1) * sizeof *v, "load-balance weights");
    int measured = 0;
    double total = 0;
    bn_status s = v ? BN_OK : BN_ERR_NOMEM;
    /* a backend not holding the host's set measured other particles */
    if (s == BN_OK && sim->ops && sim->backend_current) s = sim->ops->costs(sim->state, v, &total, &measured);
    s = bn_comm_agree(sim->comm, s);
    double all = measured;
    if (s == BN_OK) s = bn_comm_allreduce(sim->comm, &all, 1, BN_REDUCE_MIN);
    double scale = 1;
    if (s == BN_OK && all > 0) s = time_scale(sim, total, 1, &scale);
    for (size_t i = 0; s == BN_OK && all > 0 && scale != 1 && i < n; i++) v[i] *= scale;
    if (s == BN_OK && all > 0) *w = v;
    else free(v);
    return s;
}

/* A backend whose particles live on a device moves them there (backend.h's
 * rebalance()); the host mirror gets the new set's ids, masses and types,
 * and downloads the rest when it needs them. A failure stops the run (the
 * backend's set is then not whole). */
static bn_status rebalance_in_place(bn_simulation *sim, bn_domain_stats *st)
{
    bn_domain_stats local;
    sim->host_current = 0; /* positions, velocities and forces: the backend's */
    sim->stats_current = 0;
    bn_domain_release(&sim->cut);
    const bn_status s = sim->ops->rebalance(sim->state, sim->host, sim->grav.curve, st ? st : &local, &sim->cut);
    share_key_cube(sim); /* the new cut's (forces moved along) */
    return s;
}

bn_status bn_simulation_crossers(const bn_simulation *sim, bn_domain_stats *st)
{
    if (!sim || !st) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_crossers: NULL argument");
    *st = sim->migrated;
    return BN_OK;
}

bn_status bn_simulation_rebalance(bn_simulation *sim, bn_domain_stats *st)
{
    if (!sim) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_rebalance: simulation is NULL");
    if (st) memset(st, 0, sizeof *st);
    if (ranks(sim) <= 1) return BN_OK;
    BN_TRY(require_synchronised(sim, "bn_simulation_rebalance")); /* the same clock on every rank */
    if (sim->ops && sim->ops->rebalance && sim->backend_current) return rebalance_in_place(sim, st);
    BN_TRY(bn_comm_agree(sim->comm, bn_sim_sync_host(sim)));
    double *w = NULL;
    BN_TRY(cost_weights(sim, &w));
    const int had_forces = sim->have_forces && sim->host->acc[0] && sim->host->pot;
    bn_domain_release(&sim->cut);
    const bn_status s = bn_domain_decompose(sim->comm, sim->host, w, sim->grav.curve, &sim->cut, st);
    free(w);
    /* the host holds the new domain (with its forces, which travelled
     * with the particles); the backend gets it at the next upload */
    sim->backend_current = 0;
    sim->have_forces = 0;
    sim->forces_moved = s == BN_OK && had_forces;
    sim->stats_current = 0;
    return s;
}
