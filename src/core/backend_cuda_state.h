/*
 * Internal (CUDA sources only): the CUDA backend's state, shared by its
 * force and integration side (backend_cuda.cu) and its particle transfers
 * (particles_cuda.cu).
 */
#ifndef BN_BACKEND_CUDA_STATE_H
#define BN_BACKEND_CUDA_STATE_H
#include "banyan.h"
#include "core/cuda_check.h"
#include "core/input_summary.h"
#include "core/staging_cuda.h"
#include "gravity/walk_gpu.h"
#include "integrate/clock.h"
#include "tree/tree_cuda.h"

/* CUDA events between the stages of a force evaluation (stage times). */
enum { BN_EV_START, BN_EV_BBOX, BN_EV_KEYS, BN_EV_SORT, BN_EV_BUILD, BN_EV_MOMENTS, BN_EV_GROUPS, BN_EV_WALK,
       BN_EV_LOCAL,  /* several ranks: the local walk queued (before the received trees') */
       BN_EV_REMOTE, /* several ranks: the received trees ready, their walk queued next */
       BN_EV_REMOTE_END, /* several ranks: their walk queued (before the ranks agree: the
                            walk's own time, not the slowest rank's) */
       BN_EV_COUNT };

/* Particles in key order (reordered by every evaluation); positions and
 * velocities in double, accelerations and potentials as float4. */
struct bn_cuda_state {
    bn_gravity_params g;
    cudaStream_t s;
    int n;
    double *pos[3], *vel[3];
    float *mass;
    int *orig;        /* uploaded index of each (key-ordered) particle */
    float4 *acc, *body;
    float4 *body_lo;  /* lo parts of the bodies (tree_gpu.h): only during
                         an evaluation                                  */
    double *host_mass; /* masses and ids on the host, uploaded order */
    uint64_t *host_id;
    size_t host_capacity; /* their room (a migration's growth, migrate_cuda.cu) */
    uint64_t *dev_id;     /* several ranks, from the first migration on: the */
    double *dev_mass;     /* same on the device, which the crossers' moves
                             keep (migrate_cuda.cu); NULL before           */
    int host_stale;       /* BN_STALE_*: host_id, host_mass behind dev_id,
                             dev_mass (bn_cuda_host_copies brings them)  */
    uint8_t *type;    /* part types, uploaded order (read through orig:
                         never permuted); NULL: all PartType1           */
    double type_count[BN_PART_TYPES]; /* particles of each part type    */
    bn_staging stage; /* staging of upload_positions and download_forces,
                         made at their first use                         */
    int have_forces;
    int reorder_narrow; /* the reorder's two extra spares did not fit once:
                           an array a gather from then on (reorder_particles) */
    int have_old_accel; /* forces of an evaluation here, or uploaded with
                           the particles (a restart file's): the accel
                           criterion's old |a| (as on the CPU)           */
    int tree_valid;   /* the tree matches the particles' order: a block
                         step may refresh it instead of rebuilding      */
    /* block steps that refresh (bn_step_rule refreshes): the current
     * tree's build as a restart file saves it (cuda tree_save) */
    int keep_tree_keys;
    uint64_t *tree_keys; /* its sorted keys, key order (n)               */
    double *tree_box;    /* device: its key cube, box_lo[3] and size     */
    int *tree_kept;      /* device: the particles of the build kept there,
                            written by the keep kernel where that build's
                            tree became current; 0: none (the fallback of
                            a build that did not fit keeps nothing)      */
    unsigned long long *tree_growth; /* device: a refresh's groups' growth
                            (tree/refresh_guard.h), or a build ahead's   */
    int refresh_refused; /* the last evaluation was to refresh the tree,
                            but its groups had grown: it rebuilt         */
    int lead_refused;    /* its build ahead was refused (backend_cuda.cu's
                            lead_refused): built again from x            */
    double refresh_growth; /* its refresh's groups' growth (0: none)     */
    double build_ahead;    /* block steps' builds: backend.h's build_ahead() */
    double ahead_now;      /* the current build's lead (0 but inside
                              evaluate_active: full evaluations build
                              from x)                                    */
    /* block time steps (integrate/timebins.h), allocated at the first
     * block kick: 1 byte per particle and 4 per group */
    uint8_t *bin;     /* time bin per particle, key order (sorted along) */
    int *active;      /* the active groups of the current walk          */
    int active_capacity;
    int *block_ints;  /* device: finest kicked bin, kicked count, active
                         groups, first active bin of forces_active     */
    int *block_host;  /* pinned copy of the first two                   */
    bn_clock *clock;  /* the integrator's clock (integrate/clock.h)     */
    bn_clock *clock_host; /* pinned: where clock_read copies it         */
    bn_clock ranks_clock; /* the last clock written from the host: across
                             ranks the device's own (ranks_clock_stage) */
    bn_gpu_tree_store tree;
    bn_gpu_walk_scratch *walk;
    cudaEvent_t ev[BN_EV_COUNT];
    /* several ranks (backend_cuda_ranks.cu): the communicator, and what
     * the last evaluation's exchange moved and its remote walks counted */
    const bn_comm *comm;
    bn_force_stats remote;  /* let_* fields, t_exchange, n_pp, n_pc, n_far */
    float *cost;            /* each particle's walk flops since the upload or
                               the last costs() (backend.h), uploaded order;
                               made by the first evaluation across ranks */
    double walk_seconds;    /* the walks' device time since the upload, a
                               cut or walk_seconds(restart) (backend.h)   */
    int walk_pending;       /* the last evaluation's walk is not in it yet
                               (its events are read once it is done)     */
    cudaStream_t let_s;     /* the locally essential trees' selection and
                               packing, beside the local walk on s        */
    cudaEvent_t let_ready;  /* recorded on s when the tree is made        */
    cudaEvent_t let_done;   /* recorded on let_s when the received trees
                               are converted: the remote walks wait on it */
    cudaEvent_t walk_in;    /* recorded on s when what the local walk reads
                               is made (its active list, its costs): the
                               received walk beside it waits on it       */
    struct bn_gpu_let_link *let_link; /* how the trees travel (let_gpu.h),
                               made at the first exchange               */
};

/* Velocities (and the host copies of masses and ids) exist unless the
 * particles came by upload_positions, which makes none (n == 0 makes no
 * arrays either way): the one test of it, for every operation that
 * needs them. */
inline bn_status bn_cuda_need_velocities(const bn_cuda_state *st, const char *op)
{
    if (st->n == 0 || st->vel[0]) return BN_OK;
    return bn_fail(BN_ERR_INTERNAL, "%s: the particles were uploaded without velocities (upload_positions)", op);
}

/* Several ranks (backend_cuda_ranks.cu), after the local tree's build,
 * poll and walk are queued (g: the evaluation's parameters): its host
 * copy packed into locally essential trees for the other ranks, theirs
 * received and walked on the device for the local groups (act: the
 * active groups and bins of a block step, as the local walk's; NULL:
 * all), beside the local walk on the exchange's stream (after it with
 * BANYAN_REMOTE_BESIDE=0 or the host's exchange), added to the forces
 * in rank order. acc_old (the accel criterion:
 * |a| of the last evaluation by uploaded index, bn_cuda_old_accel; else
 * NULL) sets the target boxes' alpha |a|_min. Collective and agreed; a
 * rank without particles sends and receives nothing but takes part. */
bn_status bn_cuda_add_remote(bn_cuda_state *st, const bn_gravity_params *g, const bn_gpu_active *act,
                             const double *acc_old);
/* The exchange's stream, events and link (collective only where the
 * link holds NCCL's communicator: every rank frees its backend). */
void bn_cuda_ranks_free(bn_cuda_state *st);
/* Several ranks: the tree is made (built or refreshed, polled), before
 * the local walk is queued: the exchange's packing on its own stream
 * starts from here, beside the walk. */
bn_status bn_cuda_tree_ready(bn_cuda_state *st);
/* Several ranks: what the local walk reads is made, its walk is queued
 * next: the received walk, on the exchange's stream, waits for this. */
bn_status bn_cuda_walk_inputs_ready(bn_cuda_state *st);
/* Several ranks, the last evaluation's events read (its walk done): the
 * seconds the local and received walks kept the device busy, the union
 * of their spans (the received walk may run beside the local one). */
double bn_cuda_walks_busy(const bn_cuda_state *st);
/* BANYAN_LET_HOST=1: the exchange packs the tree's host copy (the first
 * way, kept to compare against); its accel criterion's boxes need the old
 * |a| on the host (bn_cuda_old_accel), the device's packer does not. */
int bn_cuda_let_on_host(void);
/* Several ranks: the last evaluation's walk time (local and received
 * trees, from its events) added to walk_seconds, once; waits for it. */
void bn_cuda_note_walk_time(bn_cuda_state *st);
/* backend.h's walk_seconds(). */
bn_status bn_cuda_walk_seconds(void *state, double *seconds, int restart);
/* Several ranks: the particles' measured costs (backend.h's costs()). */
bn_status bn_cuda_costs(void *state, double *out, double *total, int *measured);
/* ... and put back (backend.h's costs_set(): restart files). */
bn_status bn_cuda_costs_set(void *state, const double *in, size_t n);

/* Several ranks, direct summation: the forces of this rank's particles
 * from every rank's (their positions and masses gathered on every rank,
 * summed on the device, bn_gpu_direct_targets; the same bits whatever
 * the split, as the sums run over the gathered set in one order).
 * Collective and agreed; a rank without particles only gives nothing. */
bn_status bn_cuda_direct_ranks(bn_cuda_state *st);
/* |a| of the last evaluation per particle, by uploaded index (*out,
 * malloc'd): read after a build (which reorders them) and before the walk
 * that overwrites them. */
bn_status bn_cuda_old_accel(const bn_cuda_state *st, double **out);

/* Several ranks: the error target's sample over every rank's particles
 * (backend.h's sample_forces), from this rank's forces of the last
 * evaluation brought to the host and the CPU's distributed reference
 * (bn_sample_forces_dist_cpu). Collective and agreed. */
bn_status bn_cuda_sample_ranks(bn_cuda_state *st, size_t n, uint64_t seed, double *acc_ref, double *pot_ref,
                               double *acc, double *pot);

/* particles_cuda.cu: device particle arrays and the host copies of
 * masses and ids; upload (in the given order, orig = identity) and
 * download (scattered back to the uploaded order). */
void bn_cuda_particles_free(bn_cuda_state *st);
bn_status bn_cuda_particles_upload(void *state, const bn_particles *in);
bn_status bn_cuda_particles_download(void *state, bn_particles *out);
/* A force call's transfers: positions and masses up, forces down, through
 * pinned staging buffers (backend.h). */
bn_status bn_cuda_particles_upload_positions(void *state, const bn_particles *in, bn_input_summary *sum);
/* The device arrays and host copies for n particles (after
 * bn_cuda_particles_free), and the float units of a set of this cube
 * side and total mass (tree_gpu.h), as an upload makes them. */
bn_status bn_cuda_particles_alloc(bn_cuda_state *st, int n);
void bn_cuda_set_scales(bn_cuda_state *st, double side, double mass);
/* The part types of in (the particles just installed, uploaded order) on
 * the device, and their counts (the per-component energies). */
bn_status bn_cuda_particles_set_types(bn_cuda_state *st, const bn_particles *in);
/* Several ranks (rebalance_cuda.cu, backend.h's rebalance()): the
 * domains cut again from the particles where they are, and the
 * particles moved to their ranks. */
bn_status bn_cuda_rebalance(void *state, bn_particles *host, bn_curve curve, bn_domain_stats *st, bn_domain *cut);
/* Several ranks (migrate_cuda.cu, backend.h's migrate()): the particles
 * whose keys left this rank's part of the cut go to their owners; only
 * they cross PCIe and MPI. */
bn_status bn_cuda_migrate(void *state, bn_particles *host, const bn_domain *cut, bn_domain_stats *st);
/* The host copies of ids and masses brought up to date where a
 * migration left them behind (particles_cuda.cu); and with them the
 * mirror's ids, masses and part types (host may be NULL). */
enum { BN_STALE_IDS = 1, BN_STALE_MASSES = 2 };
bn_status bn_cuda_host_copies(bn_cuda_state *st);
bn_status bn_cuda_host_masses(bn_cuda_state *st); /* the masses only (a total mass) */
bn_status bn_cuda_mirror_ids(bn_cuda_state *st, bn_particles *host);
/* The float units (tree_gpu.h) of the set the device now holds, as an
 * upload makes them (rebalance_cuda.cu; a migration into an empty rank). */
bn_status bn_cuda_new_scales(bn_cuda_state *st);
bn_status bn_cuda_particles_download_forces(void *state, bn_particles *out, size_t *first_bad);
#endif
