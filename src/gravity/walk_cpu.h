/*
 * Internal: the CPU tree walk (Bonsai's breadth-first group walk, paper 003
 * sec. 4.2.2, the way the GPU walk runs it) and its vectorised interaction
 * kernels.
 */
#ifndef BN_WALK_CPU_H
#define BN_WALK_CPU_H
#include "banyan.h"
#include "tree/tree.h"

/* What the walk reads of a cell, packed in one 64-byte line (the GPU
 * packs the same into float4s): visiting a cell costs one cache line
 * instead of one per tree array. A cell that a receiving rank must never
 * open (the locally essential tree's accepted cells) has r2 < 0 and
 * gml2 = 0. */
typedef struct bn_walk_cell {
    double com[3];
    double r2;   /* opening radius squared            */
    double gml2; /* G M l^2 for the accel criterion   */
    double mass;
    int32_t first_child, n_children;
    int32_t first_body, n_bodies;
} bn_walk_cell;

/* The sources a walk visits: a tree's cells (children contiguous, cell 0
 * the root), their quadrupoles (6 per cell, about the com) and the bodies
 * of its leaves. A rank's own tree, or a tree received from another rank
 * (parallel/let.c). */
typedef struct bn_walk_source {
    int n_cells;
    const bn_walk_cell *cells;
    const double *quad;
    const double *pos[3];
    const double *mass;
} bn_walk_source;

/* Does a group with targets in [lo, hi] open the cell? (alpha_amin: the
 * accel criterion's alpha times the group's smallest |a_old|.) A box
 * holding several groups opens every cell any of them opens: the test is
 * monotonic in the box (and in alpha_amin). */
int bn_walk_opens(const bn_walk_cell *cell, const double lo[3], const double hi[3], bn_mac mac, double alpha_amin);

/* Cells of t as the walk reads them (cells: n_nodes of them, from
 * bn_walk_cells_alloc, 64-byte aligned; free()). */
bn_walk_cell *bn_walk_cells_alloc(int n);
void bn_walk_pack_cells(const bn_tree *t, double G, bn_walk_cell *cells);

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
 * thread's work, in a fixed order, whatever the thread count.
 * cost (NULL: not measured): each walked group's flops (bn_walk_flops of
 * its counts) are ADDED to its bodies' cost, shared equally, ORIGINAL
 * order: the measured cost that domains are cut by (parallel/domain.c). */
bn_status bn_tree_walk_cpu(const bn_tree *t, const bn_gravity_params *g, bn_mac mac, const double *acc_old,
                           const uint8_t *bin, int bin_min, double *out, bn_force_stats *stats, double *cost);

/* The same walk over another rank's tree src: the field of src's sources
 * is ADDED to out (no self term), the interaction counts to stats' and
 * the flops to cost. */
bn_status bn_tree_walk_remote_cpu(const bn_tree *t, const bn_walk_source *src, const bn_gravity_params *g, bn_mac mac,
                                  const double *acc_old, const uint8_t *bin, int bin_min, double *out,
                                  bn_force_stats *stats, double *cost);

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
