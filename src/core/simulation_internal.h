/* Internal: bn_simulation's fields, shared by simulation.c (the steps)
 * and simulation_state.c (restart files: what is saved is what is here). */
#ifndef BN_SIMULATION_INTERNAL_H
#define BN_SIMULATION_INTERNAL_H
#include "banyan.h"
#include "core/backend.h"
#include "gravity/tune.h"
#include "integrate/rebuild_tuner.h"

struct bn_simulation {
    bn_gravity_params grav;
    bn_integrator_params integ;
    bn_particles *host;       /* host mirror (or staging before upload) */
    int host_current;         /* host mirror equals the backend state   */
    int backend_current;      /* backend holds the host particles       */
    int have_forces;          /* backend has forces at current positions */
    const bn_backend_ops *ops;
    void *state;
    /* The backend's clock (integrate/clock.h) as last read: the time, the
     * steps and, with block steps, where the cycle stands. Current
     * whenever a call returns: the steps of a batch are queued without
     * it, and it is read once at the batch's end. */
    bn_clock clock;
    bn_force_stats stats;
    int stats_current;        /* stats hold the last evaluation's        */
    /* block steps with tree_rebuild != 1, decided on the host */
    long steps_since_build;   /* force evaluations on the current tree   */
    int quiet;                /* a batch of the tuner's held rebuilds runs:
                                 nothing read per step (simulation.c)   */
    long refused_builds;      /* steps whose refresh some rank refused and
                                 built instead (tree/refresh_guard.h), or
                                 whose build ahead it refused and made
                                 again from x, since this simulation's
                                 start or load (not saved): block_info's
                                 tree_builds                              */
    /* the self-tuned rebuild (tree_rebuild = 0): its period, the best
     * one's measured cycle and where its trials and holds are
     * (integrate/rebuild_tuner.h) */
    bn_rebuild_tuner tuner;
    /* an error target (gravity/tune.h): grav holds the chosen settings */
    bn_accuracy acc;
    int tuned;                /* a search was made for these particles  */
    long last_check;          /* the step of the last check             */
    /* several ranks (bn_simulation_set_comm): host holds this rank's
     * particles; every decision of a step is taken from numbers that
     * are the same on every rank */
    const bn_comm *comm;
    double n_global;          /* particles on all ranks (at the upload)  */
    int forces_moved;         /* a re-balance moved the forces with the
                                 particles: the upload keeps them         */
    bn_domain cut;            /* the last re-balance's cut (split NULL:
                                 none yet): shared steps move the
                                 particles that cross it (backend.h's
                                 migrate()) before their forces          */
    bn_domain_stats migrated; /* what the migrations moved, summed:
                                 sent, received, t_total                 */
};

/* Bring the host mirror up to date (before a change made on the host). */
bn_status bn_sim_sync_host(bn_simulation *sim);
/* Make sure the backend exists and holds the particles (collective over
 * the ranks, and agreed). */
bn_status bn_sim_ensure_backend(bn_simulation *sim);
#endif
