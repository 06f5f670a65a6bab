/*
 * Internal: the CPU tree walk (Bonsai's breadth-first group walk, paper 003
 * sec. 4.2.2, the way the GPU walk runs it) and its vectorised interaction
 * kernels.
 */
#ifndef BN_WALK_CPU_H
#define BN_WALK_CPU_H
#include "banyan.h"
#include "tree/tree.h"

/* Forces on every body of t in key order: out[4 i + 0..3] = ax, ay, az,
 * phi WITHOUT G (the caller applies it once), self term removed.
 * bin (block time steps; NULL: every body): the bin of each particle in
 * the ORIGINAL order; only the groups holding a body with bin >= bin_min
 * are walked (and counted), the others' out is left untouched.
 * mac: the criterion the tree's opening radii were made for (BN_MAC_ACCEL
 * needs acc_old: |a| of the previous evaluation in the ORIGINAL particle
 * order, G included; t->order maps). Interaction counts to stats->n_pp,
 * n_pc, n_far (self interactions not counted; stats may be NULL). Cells
 * beyond the group-expansion distance (bn_gravity_params.group_expansion)
 * act through one expansion per group (bn_local_*). Deterministic: each group is one
 * thread's work, in a fixed order, whatever the thread count. */
bn_status bn_tree_walk_cpu(const bn_tree *t, const bn_gravity_params *g, bn_mac mac, const double *acc_old,
                           const uint8_t *bin, int bin_min, double *out, bn_force_stats *stats);

/* Particle-particle tile: every target i < nt gets the softened force of
 * every source j < ns (bn_pp_d), added to ax/ay/az/phi[i]. A source at the
 * target's position adds -m/eps to phi and nothing to a. */
void bn_walk_pp_tile(int nt, const double *tx, const double *ty, const double *tz, int ns, const double *sx,
                     const double *sy, const double *sz, const double *sm, double eps2, double *ax, double *ay,
                     double *az, double *phi);

/* Particle-cell tile: sources are cells (com, mass, quadrupole xx..yz as
 * six arrays in q[0..5]), bn_pc_d. */
void bn_walk_pc_tile(int nt, const double *tx, const double *ty, const double *tz, int ns, const double *sx,
                     const double *sy, const double *sz, const double *sm, const double *const q[6], double eps2,
                     double *ax, double *ay, double *az, double *phi);

/* Far-cell tile: the field of ns cells (com x, y, z, mass, quadrupole
 * xx..yz in src[0..9]) joins the expansion about centre, whose
 * BN_LOCAL_TERMS terms are local[] in the order of BN_LOCAL_FIELDS
 * (bn_local_set_d per cell, summed in a fixed order). terms:
 * BN_LOCAL_TERMS scratch arrays of at least ns doubles. */
void bn_walk_far_tile(int ns, const double *const src[10], const double centre[3], double eps2,
                      double *const terms[], double *local);
#endif
