/* bn_simulation: particles, gravity and a shared-step KDK leapfrog over
 * one backend. The backend holds the particles (on the device for the
 * GPU); the host mirror is refreshed only when asked for. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/backend.h"
#include "core/error.h"

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

bn_status bn_simulation_set_gravity(bn_simulation *sim, const bn_gravity_params *g)
{
    BN_TRY(bn_gravity_params_validate(g));
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
    return BN_OK;
}

/* The shared step: fixed dt, or eta sqrt(eps / max|a|) capped at dt. */
static bn_status choose_step(bn_simulation *sim, double *dt)
{
    *dt = sim->integ.dt;
    if (sim->integ.eta > 0) {
        double amax = 0;
        BN_TRY(sim->ops->max_accel(sim->state, &amax));
        double eps = sim->grav.softening > 0 ? sim->grav.softening : 1e-3;
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

bn_status bn_simulation_step_to(bn_simulation *sim, double t_limit, double *dt_taken)
{
    if (!isfinite(t_limit)) return bn_fail(BN_ERR_ARGUMENT, "step: time limit %g is not finite", t_limit);
    if (dt_taken) *dt_taken = 0;
    if (!(t_limit > sim->time)) return BN_OK;
    BN_TRY(ensure_backend(sim));
    if (!sim->have_forces) BN_TRY(bn_simulation_compute_forces(sim));
    double dt;
    BN_TRY(choose_step(sim, &dt));
    const double left = t_limit - sim->time;
    const int lands = dt * (1 + BN_LAND_SLACK) >= left;
    if (lands) dt = left;
    BN_TRY(kdk(sim, dt));
    /* time + (t_limit - time) may differ from t_limit in the last bit */
    if (lands) sim->time = t_limit;
    if (dt_taken) *dt_taken = dt;
    return BN_OK;
}

bn_status bn_simulation_step(bn_simulation *sim, double *dt_taken)
{
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
