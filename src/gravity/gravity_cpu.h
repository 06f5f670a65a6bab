/* Internal: the CPU force stages that the CPU backend calls. */
#ifndef BN_GRAVITY_CPU_H
#define BN_GRAVITY_CPU_H
#include "banyan.h"

/* Double-precision direct summation of all pairs (OpenMP over targets).
 * acc[3]/pot: outputs of length p->n, G included, self term excluded. */
bn_status bn_direct_forces_cpu(const bn_particles *p, double G, double eps, double *acc[3], double *pot);
/* Double direct summation at n points x[3 t + k] from p's particles (p
 * may hold none), particle skip[t] left out of point t's sum (the point's
 * own particle; p->n or more: none): acc_out xyz and pot_out per point. A
 * rank's share of a sample's reference over every rank (forces_dist.h). */
bn_status bn_direct_at_points(const bn_particles *p, double G, double eps, const double *x, const size_t *skip,
                              size_t n, double *acc_out, double *pot_out);

/* Scratch of the CPU tree code kept between evaluations (keys, tree,
 * interaction lists). Opaque; made by the tree module. */
typedef struct bn_tree_workspace bn_tree_workspace;
bn_status bn_tree_workspace_create(bn_tree_workspace **out);
void bn_tree_workspace_free(bn_tree_workspace *ws);
/* From now on every walk adds each particle's share of its group's flops
 * to cost[i] (original order, one per particle of every later
 * evaluation; the caller's array), or to nothing (NULL). */
void bn_tree_workspace_measure(bn_tree_workspace *ws, double *cost);
/* Block steps: the later builds (rebuild = 1 of bn_tree_forces_active_cpu,
 * or a refused refresh's) make the tree's structure from the positions
 * tau ahead, x + tau v, and its moments from x (tree/refresh_lag.h); 0:
 * from x (the default; bn_tree_forces_cpu's full evaluations as well, when
 * the caller sets 0 first). */
void bn_tree_workspace_ahead(bn_tree_workspace *ws, double tau);
/* The cube whose octree cells the next builds' key cubes are (several
 * ranks: the domains' cube, tree_cpu.h's bn_tree_cube); side 0: none. */
void bn_tree_workspace_align(bn_tree_workspace *ws, const double lo[3], double side);
/* The last build's tree as bytes (restart files: its key cube, sorted
 * keys and order; *bytes malloc'd, NULL and 0 when there is none or it
 * is not of n_particles particles), and
 * that tree back for particles p (the build's, in the same order) with
 * g's leaf and group sizes: structure and groups made again from the
 * keys, so that the next refresh (rebuild = 0) gives the bits of the
 * run that saved it. */
bn_status bn_tree_workspace_save(const bn_tree_workspace *ws, size_t n_particles, void **bytes, size_t *size);
bn_status bn_tree_workspace_load(bn_tree_workspace *ws, const void *bytes, size_t size, const bn_gravity_params *g,
                                 const bn_particles *p);

/* Barnes-Hut forces on the CPU: keys, sort, build, moments, groups, walk.
 * acc_old: |a| of each particle from the previous evaluation (original
 * order) for BN_MAC_ACCEL, or NULL (then the bonsai criterion is used).
 * Outputs in the original order, G included, self term excluded. */
bn_status bn_tree_forces_cpu(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p,
                             const double *acc_old, double *acc[3], double *pot, bn_force_stats *stats);

/* The same for block time steps: bin (NULL: every particle) is each
 * particle's bin, original order; only the particles with bin >= bin_min
 * get acc/pot, the others keep theirs (the walk skips the groups without
 * one of them). rebuild = 0 refreshes the last tree for the moved
 * particles (bn_tree_refresh) instead of building one, unless there is
 * none for p->n particles; the masses must be the build's. A refresh's
 * stage times are all in t_moments (t_bbox .. t_build, t_groups 0).
 * bn_tree_forces_cpu is this with bin NULL and rebuild = 1. */
bn_status bn_tree_forces_active_cpu(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p,
                                    const double *acc_old, const uint8_t *bin, int bin_min, int rebuild,
                                    double *acc[3], double *pot, bn_force_stats *stats);
/* Other ranks' part of an evaluation (parallel/forces_dist.c): add()
 * is called once per evaluation on every rank, after the local walk, with
 * the local status (it must agree on it with the other ranks before any
 * other collective), the local tree (NULL when this rank has no
 * particles or failed) and the walk's output in key order without G, to
 * which it adds the remote trees' fields. */
typedef struct bn_tree bn_tree;
typedef struct bn_tree_remote {
    /* after the tree is made, before its walk (may be NULL): the other
     * ranks' part started; local: this rank's status so far */
    bn_status (*begin)(void *ctx, bn_status local, const bn_tree *t, bn_mac mac, const double *acc_old);
    /* after the walk: the other ranks' part added to out (called whenever
     * begin succeeded) */
    bn_status (*add)(void *ctx, bn_status local, const bn_tree *t, bn_mac mac, const double *acc_old,
                     const uint8_t *bin, int bin_min, double *out, bn_force_stats *stats, double *cost);
    void *ctx;
} bn_tree_remote;

/* bn_tree_forces_active_cpu with a remote part (NULL: none). With one, a
 * rank may hold no particles (it then only serves its tree's absence). */
bn_status bn_tree_forces_with_cpu(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p,
                                  const double *acc_old, const uint8_t *bin, int bin_min, int rebuild,
                                  const bn_tree_remote *remote, double *acc[3], double *pot, bn_force_stats *stats);
#endif
