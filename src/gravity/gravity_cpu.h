/* Internal: the CPU force stages that the CPU backend calls. */
#ifndef BN_GRAVITY_CPU_H
#define BN_GRAVITY_CPU_H
#include "banyan.h"

/* Double-precision direct summation of all pairs (OpenMP over targets).
 * acc[3]/pot: outputs of length p->n, G included, self term excluded. */
bn_status bn_direct_forces_cpu(const bn_particles *p, double G, double eps, double *acc[3], double *pot);

/* Scratch of the CPU tree code kept between evaluations (keys, tree,
 * interaction lists). Opaque; made by the tree module. */
typedef struct bn_tree_workspace bn_tree_workspace;
bn_status bn_tree_workspace_create(bn_tree_workspace **out);
void bn_tree_workspace_free(bn_tree_workspace *ws);

/* Barnes-Hut forces on the CPU: keys, sort, build, moments, groups, walk.
 * acc_old: |a| of each particle from the previous evaluation (original
 * order) for BN_MAC_ACCEL, or NULL (then the bonsai criterion is used).
 * Outputs in the original order, G included, self term excluded. */
bn_status bn_tree_forces_cpu(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p,
                             const double *acc_old, double *acc[3], double *pot, bn_force_stats *stats);
#endif
