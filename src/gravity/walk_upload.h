/*
 * Test and benchmark support for the GPU force kernels (CUDA builds only):
 * a plain host-side octree built straight from the layout contract
 * (tree_gpu.h) and copied to the device, so that the walk can be tested
 * and timed independently of the GPU build pipeline. Not used by the
 * backend. The construction follows tree.h / issue 3 (keys, stable sort,
 * level-by-level split of nodes with more than leaf_size bodies, moments
 * in double about the centre of mass, groups = deepest nodes with at most
 * group_size bodies), written for clarity, not speed.
 */
#ifndef BN_WALK_UPLOAD_H
#define BN_WALK_UPLOAD_H
#include "banyan.h"
#include "tree/tree_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Build the tree of p for the criterion of g (mac, theta, G, leaf_size,
 * group_size, curve) and copy it to the device. acc_old_mag: |a_old| of
 * each particle (original order) for BN_MAC_ACCEL, or NULL. t->order is
 * a device array; *order_host (malloc'd, may be NULL) gets a host copy:
 * body i of the tree is particle order_host[i] of p. */
bn_status bn_gpu_tree_from_host(const bn_particles *p, const bn_gravity_params *g, const double *acc_old_mag,
                                bn_gpu_tree *t, int **order_host);
void bn_gpu_tree_free_host_built(bn_gpu_tree *t);

/* The direct kernel's variants, for the benchmark: 0 = the production
 * choice, 1 = bn_pp_f with its r^2 > 0 guard (always used when eps = 0),
 * 2 = bn_pp_soft_f, softened without the guard (both with the flush-to-
 * zero rsqrt of interact.h). */
bn_status bn_gpu_direct_variant(const float4 *body, const float4 *body_lo, int n, double G, double eps,
                                double len_scale, double mass_scale, float4 *out, cudaStream_t stream, int variant);

#ifdef __cplusplus
}
#endif
#endif
