/*
 * The octree as it lives on the device: the contract between the GPU
 * build (keys, sort, build, moments, groups: the src/tree/ CUDA files) and the
 * GPU walk (src/gravity/walk_cuda.cu). Same structure as bn_tree
 * (tree.h): nodes level by level, children contiguous, bodies of every
 * node contiguous in key order, groups = the deepest nodes with at most
 * group_size bodies.
 *
 * Precision: positions are kept in double on the device for the
 * integration; the walk reads float copies relative to `ref` (the centre
 * of mass), so that single-precision forces stay accurate however far
 * the system sits from the origin. Moments are accumulated in double
 * and stored in float.
 *
 * Only CUDA sources include this header.
 */
#ifndef BN_TREE_GPU_H
#define BN_TREE_GPU_H
#include <cuda_runtime.h>
#include <stdint.h>
#include "tree/keys.h"

/* The tree's shape: what its launches need to know. The GPU build keeps
 * it on the device (the host does not wait for it); the host holds a copy
 * that is exact only after a poll (bn_gpu_tree_poll, tree_cuda.h). */
typedef struct bn_gpu_shape {
    int n_nodes, n_leaves, n_levels, n_groups;
    int level_start[BN_KEY_MAX_LEVEL + 2]; /* nodes of level l: [ls[l], ls[l+1]) */
} bn_gpu_shape;

typedef struct bn_gpu_tree {
    int n;                  /* bodies                                   */
    double ref[3];          /* float coordinates are relative to this
                               (the root's centre of mass)              */
    float4 *body;           /* x, y, z (relative to ref), mass; key order */
    int *order;             /* order[i] = index in the uploaded particle
                               set of body i (the backend keeps its
                               arrays in key order: body i = particle i) */

    /* Counts: `shape` on the device is authoritative when not NULL (the
     * GPU build); the host fields below are then a copy made at the last
     * poll, and launches are sized by the bounds instead. */
    const bn_gpu_shape *shape;
    int node_bound, group_bound; /* at least n_nodes, n_groups: launch sizes */
    int n_nodes, n_leaves, n_levels;
    int level_start[BN_KEY_MAX_LEVEL + 2];
    int2 *node_body;        /* first body, body count                   */
    int2 *node_child;       /* first child, child count (0: a leaf)     */
    float4 *node_com;       /* centre of mass (relative to ref), mass   */
    float4 *node_quad0;     /* Qxx, Qyy, Qzz, Qxy (traceless, about com) */
    float4 *node_quad1;     /* Qxz, Qyz, open radius squared, G M l^2   */

    int n_groups;
    int2 *group_body;       /* first body, body count                   */
    float4 *group_box;      /* centre x, y, z (relative to ref), unused */
    float4 *group_half;     /* half sizes x, y, z, alpha * min |a_old|
                               of the group (accel MAC; 0 otherwise)     */
} bn_gpu_tree;

#ifdef __CUDACC__
/* The number of groups, read where kernels run. */
__device__ __forceinline__ int bn_gpu_tree_groups(const bn_gpu_tree *t)
{
    return t->shape ? t->shape->n_groups : t->n_groups;
}
#endif
#endif
