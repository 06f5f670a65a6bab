/* bn_simulation: particles, gravity and a KDK leapfrog over one backend,
 * with one shared step or block (hierarchical) steps. The backend holds
 * the particles (on the device for the GPU); the host mirror is
 * refreshed only when asked for. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/backend.h"
#include "core/error.h"
#include "gravity/interact.h"

struct bn_simulation {
    bn_gravity_params grav;
    bn_integrator_params integ;
    bn_particles *host;       /* host mirror (or staging before upload) */
    int host_current;         /* host mirror equals the backend state   */
    int backend_current;      /* backend holds the host particles       */
    int have_forces;          /* backend has forces at current positions */
    const bn_backend_ops *ops;
    void *state;
    double time;
    long steps;
    bn_force_stats stats;
    int stats_current;        /* stats hold the last evaluation's        */
    /* block time steps (integ.time_bins > 0), integrate/timebins.h */
    int tick;                 /* within the cycle; 0: synchronised       */
    int max_bin;              /* finest occupied bin                     */
    long n_active;            /* particles kicked at the last tick       */
    long steps_since_build;   /* force evaluations on the current tree   */
    long tree_builds;         /* block steps that rebuilt it             */
    double cycle_start, cycle_length, cycle_end;
    /* the self-tuned rebuild (tree_rebuild = 0): walk flops per active
     * particle on a fresh tree, per smallest active bin, and the flops
     * the refreshed trees have cost beyond that since the last rebuild */
    double fresh_flops[BN_TIME_BINS_MAX];
    double excess_flops;
};

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
    free(sim);
}

/* Bring the host mirror up to date (before a change made on the host). */
static bn_status sync_host(bn_simulation *sim)
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
    if (sim->tick == 0) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "%s: not possible inside a block-step cycle (tick %d of %d); step to its end "
                   "at time %.17g first", what, sim->tick, 1 << (sim->integ.time_bins - 1), sim->cycle_end);
}

bn_status bn_simulation_set_gravity(bn_simulation *sim, const bn_gravity_params *g)
{
    BN_TRY(bn_gravity_params_validate(g));
    BN_TRY(require_synchronised(sim, "bn_simulation_set_gravity"));
    BN_TRY(sync_host(sim));
    drop_backend(sim);
    sim->grav = *g;
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
    if (ip->tree_rebuild < 0)
        return bn_fail(BN_ERR_ARGUMENT, "TimeIntegration: tree_rebuild must be >= 0, got %d", ip->tree_rebuild);
    BN_TRY(require_synchronised(sim, "bn_simulation_set_integrator"));
    sim->integ = *ip;
    return BN_OK;
}

bn_status bn_simulation_set_particles(bn_simulation *sim, const bn_particles *p)
{
    BN_TRY(bn_particles_validate(p, "bn_simulation_set_particles"));
    bn_particles *copy = NULL;
    BN_TRY(bn_particles_copy(&copy, p));
    bn_particles_free(sim->host);
    sim->host = copy;
    sim->host_current = 1;
    sim->backend_current = 0;
    sim->have_forces = 0;
    sim->tick = 0; /* new particles: synchronised velocities */
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
    BN_TRY(sync_host(sim));
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

/* Make sure the backend exists and holds the particles. */
static bn_status ensure_backend(bn_simulation *sim)
{
    if (!sim->ops) {
        BN_TRY(bn_backend_select(sim->grav.backend, sim->grav.device, &sim->ops));
        bn_status s = sim->ops->create(&sim->state, &sim->grav);
        if (s != BN_OK) {
            sim->ops = NULL;
            return s;
        }
    }
    if (!sim->backend_current) {
        BN_TRY(bn_particles_validate(sim->host, "simulation"));
        BN_TRY(sim->ops->upload(sim->state, sim->host));
        sim->backend_current = 1;
        sim->have_forces = 0;
    }
    return BN_OK;
}

bn_status bn_simulation_particles(bn_simulation *sim, const bn_particles **out)
{
    BN_TRY(sync_host(sim));
    *out = sim->host;
    return BN_OK;
}

double bn_simulation_time(const bn_simulation *sim) { return sim->time; }
void bn_simulation_set_time(bn_simulation *sim, double t) { sim->time = t; }
long bn_simulation_steps(const bn_simulation *sim) { return sim->steps; }
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

bn_status bn_simulation_compute_forces(bn_simulation *sim)
{
    BN_TRY(ensure_backend(sim));
    memset(&sim->stats, 0, sizeof sim->stats);
    sim->stats_current = 0;
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

/* The shared step: fixed dt, or eta sqrt(eps / max|a|) capped at dt. */
static bn_status choose_step(bn_simulation *sim, double *dt)
{
    *dt = sim->integ.dt;
    if (sim->integ.eta > 0) {
        double amax = 0;
        BN_TRY(sim->ops->max_accel(sim->state, &amax));
        const double eps = step_softening(sim);
        if (amax > 0) {
            double adaptive = sim->integ.eta * sqrt(eps / amax);
            if (adaptive < *dt) *dt = adaptive;
        }
    }
    return BN_OK;
}

/* One kick-drift-kick step of length dt. The forces at the start are those
 * of the previous step's end (computed once per step). Everything stays
 * on the backend: nothing is copied to the host. */
static bn_status kdk(bn_simulation *sim, double dt)
{
    if (!sim->have_forces) BN_TRY(bn_simulation_compute_forces(sim));
    BN_TRY(sim->ops->kick(sim->state, 0.5 * dt));
    BN_TRY(sim->ops->drift(sim->state, dt));
    BN_TRY(bn_simulation_compute_forces(sim));
    BN_TRY(sim->ops->kick(sim->state, 0.5 * dt));
    sim->time += dt;
    sim->steps++;
    sim->host_current = 0;
    return BN_OK;
}

/* A step that would end within this fraction of itself before t_limit is
 * stretched to land on t_limit: this avoids a last step of round-off
 * size when t_limit - t is a multiple of dt up to rounding. */
#define BN_LAND_SLACK 1e-6

/* Does a step (or block cycle) of length dt, with `left` to go until the
 * time limit, end on the limit instead? */
static int lands_on_limit(double dt, double left)
{
    return dt * (1 + BN_LAND_SLACK) >= left;
}

static bn_status block_step(bn_simulation *sim, double t_limit, double *dt_taken);

bn_status bn_simulation_step_to(bn_simulation *sim, double t_limit, double *dt_taken)
{
    if (!isfinite(t_limit)) return bn_fail(BN_ERR_ARGUMENT, "step: time limit %g is not finite", t_limit);
    if (dt_taken) *dt_taken = 0;
    if (!(t_limit > sim->time)) return BN_OK;
    if (sim->integ.time_bins > 0) return block_step(sim, t_limit, dt_taken);
    BN_TRY(ensure_backend(sim));
    if (!sim->have_forces) BN_TRY(bn_simulation_compute_forces(sim));
    double dt;
    BN_TRY(choose_step(sim, &dt));
    const double left = t_limit - sim->time;
    const int lands = lands_on_limit(dt, left);
    if (lands) dt = left;
    BN_TRY(kdk(sim, dt));
    /* time + (t_limit - time) may differ from t_limit in the last bit */
    if (lands) sim->time = t_limit;
    if (dt_taken) *dt_taken = dt;
    return BN_OK;
}

bn_status bn_simulation_step(bn_simulation *sim, double *dt_taken)
{
    if (sim->integ.time_bins > 0) return block_step(sim, INFINITY, dt_taken);
    BN_TRY(ensure_backend(sim));
    if (!sim->have_forces) BN_TRY(bn_simulation_compute_forces(sim));
    double dt;
    BN_TRY(choose_step(sim, &dt));
    BN_TRY(kdk(sim, dt));
    if (dt_taken) *dt_taken = dt;
    return BN_OK;
}

bn_status bn_simulation_integrate(bn_simulation *sim, double t_end)
{
    if (!isfinite(t_end)) return bn_fail(BN_ERR_ARGUMENT, "integrate: t_end = %g is not finite", t_end);
    while (sim->time < t_end) BN_TRY(bn_simulation_step_to(sim, t_end, NULL));
    return BN_OK;
}

bn_status bn_simulation_energies(bn_simulation *sim, bn_energies *out)
{
    BN_TRY(ensure_backend(sim));
    if (!sim->have_forces) BN_TRY(bn_simulation_compute_forces(sim));
    return sim->ops->energies(sim->state, out);
}

/* ---- block (hierarchical) time steps: integrate/timebins.h ---- */

static double block_tick_seconds(const bn_simulation *sim)
{
    return ldexp(sim->cycle_length, -(sim->integ.time_bins - 1));
}

static bn_block_kick block_kick_params(const bn_simulation *sim, int bin_min, int close, int open)
{
    bn_block_kick k;
    k.bin_min = bin_min;
    k.close = close;
    k.open = open;
    k.n_bins = sim->integ.time_bins;
    k.tick = block_tick_seconds(sim);
    k.eta = sim->integ.eta;
    k.eps = step_softening(sim);
    return k;
}

/* At a full synchronisation (forces of every particle known): the
 * cycle's length (dt, or less to land on t_limit), every particle's bin
 * and its opening half kick. */
static bn_status block_begin_cycle(bn_simulation *sim, double t_limit)
{
    BN_TRY(ensure_backend(sim));
    if (!sim->have_forces) BN_TRY(bn_simulation_compute_forces(sim));
    double D = sim->integ.dt;
    const double left = t_limit - sim->time;
    const int lands = lands_on_limit(D, left);
    if (lands) D = left;
    sim->cycle_start = sim->time;
    sim->cycle_length = D;
    sim->cycle_end = lands ? t_limit : sim->time + D;
    const bn_block_kick k = block_kick_params(sim, 0, 0, 1);
    return sim->ops->block_kick(sim->state, &k, &sim->max_bin, &sim->n_active);
}

/* GOTHIC's self-tuned rebuild interval (paper 001 sec. 2.6): a refreshed
 * tree's cells grow as their bodies spread, so every walk on it costs
 * more than on a fresh tree; rebuild once that excess adds up to the cost
 * of a rebuild (for a linear growth this is GOTHIC's optimum,
 * n = sqrt(2 t_make / slope)). Costs are counted in walk flops from the
 * interaction counts, not in seconds, so that a run stays deterministic;
 * a rebuild (keys, sort, build) costs about as long as this many walk
 * flops per particle on an H100 (4.5 ms at 2^24 against 15 Tflop/s).
 * Measured (BENCHMARKS.md): as fast as the best fixed interval on
 * Hernquist and NFW halos, but 25% slower than rebuilding every step on
 * a Plummer sphere, where walk time on a refreshed tree grows faster
 * than its flop count; hence not the default. */
#define BN_REBUILD_FLOPS_PER_PARTICLE 4000.0

static int block_wants_rebuild(const bn_simulation *sim, int cycle_ends)
{
    if (cycle_ends) return 1;
    if (sim->integ.tree_rebuild > 0) return sim->steps_since_build >= sim->integ.tree_rebuild;
    return sim->excess_flops >= BN_REBUILD_FLOPS_PER_PARTICLE * (double)sim->host->n;
}

/* After a step's forces: its walk flops per active particle against a
 * fresh tree's for the same active bins. */
static void block_tune_rebuild(bn_simulation *sim, int bin_min, int rebuilt)
{
    if (sim->integ.tree_rebuild > 0 || sim->n_active <= 0) return;
    const bn_force_stats *st = bn_simulation_force_stats(sim);
    const double flops = bn_walk_flops(st->n_pp, st->n_pc, st->n_far, (double)sim->n_active);
    const double per = flops / (double)sim->n_active;
    if (rebuilt) sim->excess_flops = 0;
    if (rebuilt || !(sim->fresh_flops[bin_min] > 0)) {
        sim->fresh_flops[bin_min] = per;
        return;
    }
    const double excess = flops - sim->fresh_flops[bin_min] * (double)sim->n_active;
    if (excess > 0) sim->excess_flops += excess;
}

/* One block step: drift everything to the next tick where some particle
 * ends its step (the finest occupied bin's), forces of the particles
 * active there, their closing kicks and, inside the cycle, their new bins
 * and opening kicks. The tree is rebuilt at the end of a cycle (every
 * particle active) and as block_wants_rebuild says; refreshed otherwise. */
static bn_status block_step(bn_simulation *sim, double t_limit, double *dt_taken)
{
    if (sim->tick == 0) BN_TRY(block_begin_cycle(sim, t_limit));
    else if (t_limit < sim->cycle_end)
        return bn_fail(BN_ERR_ARGUMENT, "step: time limit %.17g falls inside the running block-step cycle, which "
                       "ends at %.17g (output times must lie on cycle ends)", t_limit, sim->cycle_end);
    const int K = sim->integ.time_bins, ticks = 1 << (K - 1);
    const int next = sim->tick + bn_time_bin_ticks(sim->max_bin, K);
    const double dt = (double)(next - sim->tick) * block_tick_seconds(sim);
    BN_TRY(sim->ops->drift(sim->state, dt));
    const int bin_min = bn_time_bin_min_active(next, K), ends = next == ticks;
    const int rebuild = block_wants_rebuild(sim, ends);
    memset(&sim->stats, 0, sizeof sim->stats);
    sim->stats_current = 0;
    BN_TRY(sim->ops->forces_active(sim->state, bin_min, rebuild));
    sim->steps_since_build = rebuild ? 1 : sim->steps_since_build + 1;
    sim->tree_builds += rebuild;
    sim->have_forces = 1;
    sim->host_current = 0;
    /* at the cycle's end every particle closes and nothing opens: no bin
     * to learn, nothing to read back (the next cycle's opening kick does) */
    const bn_block_kick k = block_kick_params(sim, bin_min, 1, !ends);
    BN_TRY(sim->ops->block_kick(sim->state, &k, ends ? NULL : &sim->max_bin, &sim->n_active));
    if (ends) sim->n_active = (long)sim->host->n;
    block_tune_rebuild(sim, bin_min, rebuild);
    sim->tick = ends ? 0 : next;
    sim->time = ends ? sim->cycle_end : sim->cycle_start + (double)next * block_tick_seconds(sim);
    sim->steps++;
    if (dt_taken) *dt_taken = dt;
    return BN_OK;
}

bn_block_info bn_simulation_block_info(const bn_simulation *sim)
{
    bn_block_info b;
    memset(&b, 0, sizeof b);
    b.n_bins = sim->integ.time_bins;
    if (b.n_bins <= 0) return b;
    b.tick = sim->tick;
    b.ticks = 1 << (b.n_bins - 1);
    b.max_bin = sim->max_bin;
    b.n_active = sim->n_active;
    b.tree_builds = sim->tree_builds;
    b.cycle_start = sim->cycle_start;
    b.cycle_length = sim->cycle_length;
    return b;
}
