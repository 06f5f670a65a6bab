/*
 * Internal: what a compute backend provides. The CPU backend
 * (backend_cpu.c) works on host arrays; the CUDA backend keeps the
 * particles on the device between steps, so that a step copies nothing to
 * the host (the *_cuda.cu files). bn_gravity and bn_simulation only talk to
 * this table.
 *
 * Contract: upload() takes a particle set; download() returns it in the
 * order it was uploaded (the backend may reorder internally, e.g. by key,
 * and keeps the permutation). forces() computes acceleration and
 * potential of every particle (G included, self term removed) at the
 * current positions. kick/drift advance velocities/positions. Calls are
 * ordered: each sees the results of the ones before, even when the
 * device has not finished them yet.
 */
#ifndef BN_BACKEND_H
#define BN_BACKEND_H
#include "banyan.h"
#include "core/input_summary.h"
#include "integrate/clock.h"

typedef struct bn_backend_ops {
    const char *name;
    bn_status (*create)(void **state, const bn_gravity_params *g);
    void (*destroy)(void *state);
    bn_status (*upload)(void *state, const bn_particles *p);
    /* Fill p (resized to n) with positions, velocities, masses, ids, and
     * acc/pot when forces were computed. */
    bn_status (*download)(void *state, bn_particles *p);
    /* With stats NULL the GPU queues the work and returns (a step then
     * waits for nothing); stats() fetches them later. */
    bn_status (*forces)(void *state, bn_force_stats *stats);
    /* Stats of the last forces() (waits for it to finish). */
    bn_status (*stats)(void *state, bn_force_stats *stats);
    /* Wait until the queued work is done (timings). */
    bn_status (*finish)(void *state);
    /* The stages of a step with their parameters from the host: kick,
     * drift, forces_active, block_kick and max_accel. bn_simulation
     * steps with clock_stage() instead (below), whose stages take them
     * from the clock; these serve the tests of each stage. */
    bn_status (*kick)(void *state, double dt);
    bn_status (*drift)(void *state, double dt);
    /* Block time steps (integrate/timebins.h); the backend keeps every
     * particle's bin (0 after upload). forces_active(): the forces of
     * the particles in bins >= bin_min only, the others keep theirs;
     * rebuild = 0 keeps the last tree's structure and body order and
     * refreshes its moments and boxes from the moved particles (a tree
     * is built when there is none). */
    bn_status (*forces_active)(void *state, int bin_min, int rebuild);
    /* The block kick of the active particles; with max_bin not NULL it
     * returns the finest bin among them and their number (the GPU reads
     * these 8 bytes back). */
    bn_status (*block_kick)(void *state, const bn_block_kick *k, int *max_bin, long *n_kicked);
    /* Largest |a| over all particles (read back). */
    bn_status (*max_accel)(void *state, double *amax);
    /* Kinetic, potential (from the last forces), momenta, com. */
    bn_status (*energies)(void *state, bn_energies *e);
    /* The integrator's clock (integrate/clock.h), kept with the particles
     * so that the steps of a simulation are decided where the
     * accelerations are. clock_stage() queues one stage of a step (the
     * GPU returns at once; r->rebuild matters to FORCES and BLOCK_END);
     * clock_read() waits for the queued work and copies the clock (the
     * only copy to the host a queue of steps needs); clock_write()
     * replaces it (after upload() or to set the time). */
    bn_status (*clock_stage)(void *state, const bn_step_rule *r, bn_clock_stage stage);
    bn_status (*clock_read)(void *state, bn_clock *c);
    bn_status (*clock_write)(void *state, const bn_clock *c);
    /* The error target (gravity/tune.h): set_params() replaces the
     * gravity parameters (the next forces() builds a new tree);
     * sample_forces() takes n targets spread over the particles (one at
     * random in each of n equal runs of the backend's order: key order on
     * the GPU, so the sample covers space; seed fixes them), and gives
     * their forces by double-precision direct summation over every
     * particle, computed by the backend (the GPU's on the device), and
     * those of the last forces(): acc_ref/acc xyz per target, pot_ref/pot. */
    bn_status (*set_params)(void *state, const bn_gravity_params *g);
    bn_status (*sample_forces)(void *state, size_t n, uint64_t seed, double *acc_ref, double *pot_ref, double *acc,
                               double *pot);
    /* One force computation from host arrays (bn_gravity_compute) moves
     * only what it needs and reads each array once: upload_positions()
     * takes positions and masses (no velocities: the state then holds
     * none, and download() fails) and fills sum (input_summary.h: the
     * first bad particle, the range, the total mass) in the same pass;
     * the caller judges it before forces(). download_forces() fills
     * p->acc and p->pot alone (allocated if missing), in the uploaded
     * order, and sets *first_bad to the first particle whose force is not
     * finite (p->n if none). The GPU's go through pinned staging buffers,
     * pipelined, inspected while they are copied. */
    bn_status (*upload_positions)(void *state, const bn_particles *p, bn_input_summary *sum);
    bn_status (*download_forces)(void *state, bn_particles *p, size_t *first_bad);
    /* The ranks whose particles are sources too (parallel/): forces() then
     * is collective over c and gives this rank's particles the field of
     * every rank's. NULL or one rank: this process alone. */
    bn_status (*set_comm)(void *state, const bn_comm *c);
    /* Several ranks: each particle's measured cost since the upload or
     * the last reset (the flops of every walk that computed its forces,
     * its own tree's and the received ones'), uploaded order. *total gets
     * their sum (summed in a fixed order: the same bits every run); with
     * out (n doubles) not NULL, the costs too, and they count again from
     * 0. *measured 0 (one rank, or before the first evaluation): nothing
     * was, *total is 0 and out untouched. The domains' weights and their
     * imbalance (simulation.c). */
    bn_status (*costs)(void *state, double *out, double *total, int *measured);
    /* Several ranks, or NULL (the CPU's: its particles live on the host,
     * where bn_domain_decompose moves them): cut the domains again where
     * the particles live, each weighted by its measured cost (costs()
     * start again from 0), and move them to their ranks with their
     * forces. host (the caller's mirror) gets the new set's count, ids,
     * masses and part types in the backend's new uploaded order; its
     * positions, velocities and forces are stale (download() brings
     * them). Collective and agreed. st: the cut's numbers; cut (or NULL):
     * the cut made, for migrate(). */
    bn_status (*rebalance)(void *state, bn_particles *host, bn_curve curve, bn_domain_stats *st, bn_domain *cut);
    /* Several ranks: the particles that crossed the cut (cut, kept from
     * the last rebalance) go to the ranks that own their keys, with their
     * velocities and forces; the rest stay. A step calls it between its
     * drift and its forces (simulation.c), so that every rank's tree
     * holds only its own region (block steps too, where they rebuild
     * the tree: the bins travel along). host (the caller's mirror) gets
     * only the new count on both backends: its contents are stale until
     * download() (the GPU's host copies of ids and masses too, brought
     * when asked for: bn_cuda_host_copies). The
     * measured costs and bins travel with their particles; the tree is
     * rebuilt.
     * Collective and agreed. */
    bn_status (*migrate)(void *state, bn_particles *host, const bn_domain *cut, bn_domain_stats *st);
    /* Block steps' bins of the n uploaded particles, in the uploaded
     * order (restart files: simulation_state.c). bins_read() gives all 0
     * before the first block kick; bins_write() after upload() replaces
     * them (a cycle continued where it stood). */
    bn_status (*bins_read)(void *state, uint8_t *out, size_t n);
    bn_status (*bins_write)(void *state, const uint8_t *in, size_t n);
    /* Several ranks (restart files): the measured costs of costs() put
     * back (n, uploaded order) after an upload, so that the next cut is
     * the unstopped run's. NULL: a continued run measures from 0 and may
     * cut its domains elsewhere (not bitwise). */
    bn_status (*costs_set)(void *state, const double *in, size_t n);
    /* Block steps between rebuilds (restart files): the tree that the
     * next refresh starts from, as bytes (*bytes malloc'd; NULL and 0
     * when there is none), and that tree back after upload(), so that a
     * continued run refreshes the unstopped run's tree. NULL: not saved
     * (the continued run builds a tree at its first step: not bitwise). */
    bn_status (*tree_save)(void *state, void **bytes, size_t *size);
    bn_status (*tree_load)(void *state, const void *bytes, size_t size);
    /* Several ranks: the own time of the walks whose costs costs() holds
     * (seconds, waits for other ranks left out), counted since the
     * upload, the last cut or the last call with restart = 1, which
     * starts the count from 0 after reading it (the costs and this time
     * start together at a cut; a restart file keeps the costs but not the
     * time). Gravity:balance_cost time scales the cut's weights by it
     * (parallel/balance.h). NULL: not measured (the cut weighs work). */
    bn_status (*walk_seconds)(void *state, double *seconds, int restart);
    /* Block steps that refresh the tree: forces_active()'s later builds
     * take their structure from the positions tau ahead, x + tau v, and
     * their moments from x (tree/refresh_lag.h: the refreshes' lags then
     * cancel); 0 (the start): from x. Full evaluations (forces()) always
     * build from x. */
    void (*build_ahead)(void *state, double tau);
    /* Several ranks: the domains' key cube [lo, lo + side)^3, the same on
     * every rank (bn_domain's). The builds that follow make their key
     * cubes cells of its octree (tree/keys.h's bn_key_cube_in), so that
     * a cell inside this rank's domain holds the bodies of one tree of
     * every rank's; side 0: each build's own cube (one rank). */
    void (*set_key_cube)(void *state, const double lo[3], double side);
} bn_backend_ops;

/* Target j of an error sample of s among n particles (s <= n): one at
 * random (seed) in the j-th of s equal runs of indices. */
size_t bn_sample_target(uint64_t seed, size_t j, size_t s, size_t n);

extern const bn_backend_ops bn_cpu_backend_ops;
/* The CUDA backend's table, or NULL in a CPU-only build. */
const bn_backend_ops *bn_cuda_backend_ops(void);
/* Choose the backend for a request: AUTO takes the GPU when usable. A GPU
 * request without a GPU fails with a message saying why. */
bn_status bn_backend_select(bn_backend want, int device, const bn_backend_ops **out);
#endif
