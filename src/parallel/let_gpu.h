/*
 * Internal (CUDA sources only): the locally essential trees of a rank
 * whose tree lives on its GPU (let_cuda.cu), the device mirror of the
 * host packer (let.c, forces_dist.c's target boxes). Only the boxes (a
 * few hundred) and the messages themselves cross to the host: the tree
 * is never copied there (issue 18: at 2^25 particles per GPU the host
 * copy and host packing took seconds per step).
 *
 * The selection runs level by level over the device tree (children
 * contiguous, levels in order): a node is sent when its parent was
 * opened, as a closed cell when no box of the receiver opens it (its
 * moments; r2 < 0), with its bodies when it is an opened leaf, with its
 * children otherwise. The sent nodes in node order are a breadth-first
 * layout with children contiguous (what bn_let_unpack checks): the
 * message is bn_let_pack's, cell for cell, the cells' values converted
 * from the tree's units (tree_gpu.h) back to the user's.
 */
#ifndef BN_PARALLEL_LET_GPU_H
#define BN_PARALLEL_LET_GPU_H
#include <cuda_runtime.h>
#include "banyan.h"
#include "tree/tree_gpu.h"
extern "C" {
#include "parallel/let.h"
}

/* A rank's device tree as the exchange reads it (its shape's host copy
 * exact: polled after the build). */
typedef struct bn_gpu_let_tree {
    const bn_gpu_tree *t;
    const double *pos[3]; /* device: the bodies' positions, key order (body i) */
    const float *mass;    /* device: their masses                              */
    double G;
    int group_size;
    bn_mac mac;
    cudaStream_t s;
} bn_gpu_let_tree;

/* This rank's target boxes (forces_dist.c's rule: the shallowest nodes
 * with at most max(group_size, n / 256) bodies, or leaves, in key order),
 * each the exact box of its bodies and, for the accel criterion, alpha
 * times the smallest old |a| of its groups (G included, as the host
 * boxes). *box malloc'd, BN_LET_BOX doubles each. */
bn_status bn_gpu_let_boxes(const bn_gpu_let_tree *lt, double **box, size_t *n);
/* The LET for a receiver's n boxes appended to msg. */
bn_status bn_gpu_let_pack(const bn_gpu_let_tree *lt, const double *boxes, int n, bn_words *msg);
#endif
