/*
 * Internal (CUDA sources, and C tests that link them): the locally essential trees of a rank
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
#ifdef __cplusplus
extern "C" {
#endif
#include "parallel/comm.h"
#include "parallel/forces_dist.h"
#include "parallel/let.h"

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
 * with at most bn_let_box_bodies(n, group_size) bodies, or leaves, in key order),
 * each the exact box of its bodies and, for the accel criterion, alpha
 * times the smallest old |a| of its groups (G included, as the host
 * boxes). *box malloc'd, BN_LET_BOX doubles each. */
bn_status bn_gpu_let_boxes(const bn_gpu_let_tree *lt, double **box, size_t *n);
/* A message on the device: bn_let_pack's words (n_cells, n_bodies, the
 * cells, their quadrupoles, the bodies' x, y, z, m), `words` of them. */
typedef struct bn_gpu_let_msg {
    uint64_t *w; /* device; NULL: none */
    size_t words;
    long n_cells, n_bodies;
} bn_gpu_let_msg;
/* The LET for a receiver's n boxes as a device message of its own
 * (*out; w NULL when there is nothing to send; bn_cuda_free on lt->s). */
bn_status bn_gpu_let_pack_device(const bn_gpu_let_tree *lt, const double *boxes, int n, bn_gpu_let_msg *out);

/* ---- the exchange between devices (let_exchange_cuda.cu) ----
 * The messages travel from device to device: through NCCL where every
 * rank has a GPU of its own and libnccl.so.2 loads (over NVLink on one
 * host: issue 18 measured 0.23 GB/s end to end through host memory and
 * MPI), otherwise through pinned host buffers and MPI. Either way the
 * receiver checks each message on the device (bn_gpu_let_check) and
 * converts it there: no message is unpacked or staged on the host. */
typedef struct bn_gpu_let_link bn_gpu_let_link;
/* Collective: the link for the ranks of c (NCCL where it can be made,
 * the same choice on every rank; BANYAN_NCCL=0 refuses it). */
bn_status bn_gpu_let_link_create(const bn_comm *c, bn_gpu_let_link **out);
void bn_gpu_let_link_free(bn_gpu_let_link *l);
/* "nccl" or "host". */
const char *bn_gpu_let_link_kind(const bn_gpu_let_link *l);
/* The messages out[d] (to rank d) sent and got[q] (from rank q, their
 * buffers made, `words` each as the senders said) received, on s
 * (NCCL: queued; the host path waits for s). Collective, agreed. */
bn_status bn_gpu_let_link_send(const bn_comm *c, bn_gpu_let_link *l, const bn_gpu_let_msg *out,
                               bn_gpu_let_msg *got, cudaStream_t s);

/* One exchange (collective, agreed): this rank's target boxes (lt NULL: a
 * rank without particles), every rank's boxes to every rank, the LET for
 * each other rank packed on the device and sent, and theirs received
 * into got[r] (P of them, w NULL for none and for this rank), queued on
 * lt's stream `s` (the caller makes its walk wait for it). x gets what
 * moved (x->t_exchange the host's time in here). */
bn_status bn_gpu_let_exchange(const bn_comm *c, bn_gpu_let_link *link, const bn_gpu_let_tree *lt, cudaStream_t s,
                              bn_gpu_let_msg *got, bn_let_stats *x);
void bn_gpu_let_msgs_free(bn_gpu_let_msg *m, int n, cudaStream_t s);
/* Is the received m a tree the GPU walk can take (walk_remote.h's checks
 * on the device: its counts, the breadth-first shape, ranges, finite
 * moments and bodies, closed cells that stay closed)? Waits for s; the
 * message names the cell or body at fault. The walk's stack bound is
 * not computed here: the walk itself refuses to overflow and fails. */
bn_status bn_gpu_let_check(const bn_gpu_let_msg *m, cudaStream_t s);
#ifdef __cplusplus
}
#endif
#endif
