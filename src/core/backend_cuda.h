/*
 * Internal, C-callable: what the GPU tests reach inside the CUDA backend
 * (CUDA builds only; tests check BANYAN_HAVE_CUDA).
 */
#ifndef BN_BACKEND_CUDA_H
#define BN_BACKEND_CUDA_H
#include "banyan.h"
#include "tree/tree.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Build the GPU tree of p (keys to groups, no walk) with params g and
 * download it into *out (every field of bn_tree, allocated here; free
 * with bn_gpu_tree_host_free). Node centres and sizes come from the keys
 * as on the device; coms, quadrupoles and group boxes are the device's
 * float values converted to double. stats may be NULL. */
bn_status bn_gpu_tree_download(const bn_particles *p, const bn_gravity_params *g, bn_tree *out,
                               bn_force_stats *stats);
void bn_gpu_tree_host_free(bn_tree *t);
/* The tree of a CUDA backend state's last build (polled: its shape and
 * ref current on the host), downloaded as bn_gpu_tree_download does, with
 * the nodes' body boxes: the source of the backend's locally essential
 * trees (backend_cuda_ranks.cu). Without the keys, node centres and sides
 * unless g's criterion is accel (its M l^2 needs the sides). */
bn_status bn_gpu_tree_to_host(void *state, const bn_gravity_params *g, bn_tree *out);
/* Make device allocations fail once more than `bytes` would be live (0:
 * no limit): tests of the out-of-memory message. */
void bn_gpu_test_set_memory_limit(size_t bytes);
/* Bytes of device memory live in the backend now (all solvers). */
size_t bn_gpu_bytes_in_use(void);
/* Copies from the device to the host so far (all solvers): what a test
 * counts around a batch of steps. */
long bn_gpu_host_reads(void);
/* Tests of a build that outgrows the tree's buffers: make a CUDA backend
 * state's tree buffers count as holding `nodes` nodes (as if a run's
 * tree had outgrown them); and, after a poll (it waits for the device),
 * the number of builds that did not fit and fell back on the last tree,
 * and the node capacity. */
void bn_gpu_test_shrink_tree_capacity(void *state, int nodes);
int bn_gpu_test_tree_fallbacks(void *state, int *node_capacity);
#ifdef __cplusplus
}
#endif
#endif
