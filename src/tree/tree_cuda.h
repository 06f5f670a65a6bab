/*
 * Internal (CUDA sources only): the GPU tree stages, one file each, in the
 * order a force evaluation runs them. Each mirrors its CPU stage one to
 * one (src/tree/*_cpu.c): bounding cube and keys (keys_cuda.cu), stable
 * radix sort and reordering into key order (sort_cuda.cu), nodes and
 * groups from the sorted keys (build_cuda.cu), moments bottom-up
 * (moments_cuda.cu), group boxes (groups_cuda.cu). Every device buffer
 * is tallied (core/cuda_check.h).
 */
#ifndef BN_TREE_CUDA_H
#define BN_TREE_CUDA_H
#include <stdint.h>
#include "banyan.h"
#include "core/cuda_check.h"
#include "tree/tree_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one evaluation learns on the device and the host needs to size
 * its launches: the key cube and float origin (written by the keys stage,
 * moved by the moments), and the tree's shape (written by the build).
 * The build reads it back once: the only device-to-host copy of a step. */
typedef struct bn_gpu_frame {
    double box_lo[3], box_size; /* the key cube [box_lo, box_lo + box_size)^3 */
    double ref[3];          /* float origin: the cube's centre, then the
                               root's centre of mass (moments stage)     */
    int bad_box;            /* coordinates not finite, or too wide      */
    int n_groups, n_leaves;
    int per_level[BN_KEY_MAX_LEVEL + 1]; /* nodes on each level          */
} bn_gpu_frame;

/* The device tree and the buffers behind it, kept between evaluations
 * (they only grow, so a run settles on one allocation). */
typedef struct bn_gpu_tree_store {
    bn_gpu_tree t;          /* what the walk reads                       */
    bn_gpu_frame *frame;    /* device frame of the current evaluation    */
    bn_gpu_frame *frame_host; /* pinned copy: read back by the build (the
                               shape), whole by bn_gpu_frame_download   */
    int node_capacity, group_capacity;
    void *scan_tmp;         /* CUB scan scratch                           */
    size_t scan_tmp_bytes;
    unsigned long long *minmax; /* bounding-box reduction (6 ordered words) */
} bn_gpu_tree_store;

/* Device frame and its pinned host copy (once per store). */
bn_status bn_gpu_tree_store_init(bn_gpu_tree_store *st, cudaStream_t s);
void bn_gpu_tree_store_free(bn_gpu_tree_store *st, cudaStream_t s);

/* ---- keys_cuda.cu ---- */
/* Bounding box of n positions (exact min/max) and the key cube around it
 * into st->frame, on the device (nothing is read back). */
bn_status bn_gpu_bounding_box(double *const pos[3], int n, bn_gpu_tree_store *st, cudaStream_t s);
/* keys[i] of position i in the frame's cube; index[i] = i (the sort's values). */
bn_status bn_gpu_keys(double *const pos[3], int n, const bn_gpu_frame *frame, int hilbert, uint64_t *keys,
                      int *index, cudaStream_t s);
/* Tests and diagnostics: copy the device frame to frame_host
 * (synchronous) and t.ref from it. */
bn_status bn_gpu_frame_download(bn_gpu_tree_store *st, cudaStream_t s);

/* ---- sort_cuda.cu ---- */
/* Stable sort of (key, value) pairs by the low end_bit key bits. The
 * *_alt buffers are scratch; on return *keys and *vals hold the sorted
 * pairs (pointers may be swapped with the *_alt ones). */
bn_status bn_gpu_sort_pairs(uint64_t **keys, uint64_t **keys_alt, int **vals, int **vals_alt, int n, int end_bit,
                            cudaStream_t s);
/* dst[i] = src[perm[i]] for 8-, 4- and 16-byte elements. */
bn_status bn_gpu_gather8(const void *src, const int *perm, void *dst, int n, cudaStream_t s);
bn_status bn_gpu_gather4(const void *src, const int *perm, void *dst, int n, cudaStream_t s);
bn_status bn_gpu_gather16(const void *src, const int *perm, void *dst, int n, cudaStream_t s);
bn_status bn_gpu_gather1(const void *src, const int *perm, void *dst, int n, cudaStream_t s);
/* body[i] = (pos - frame->ref as float, mass): what the walk reads. */
bn_status bn_gpu_make_bodies(double *const pos[3], const float *mass, const bn_gpu_frame *frame, int n,
                             float4 *body, cudaStream_t s);

/* ---- build_cuda.cu ---- */
/* Octree and groups of n sorted keys in one pass over the bodies: nodes
 * with more than leaf_size bodies split by the next 3 key bits; groups are
 * the nodes with at most group_size bodies whose parent has more (a bigger
 * leaf is cut in chunks). Fills st->t's node and group_body arrays, the
 * counts and level_start. Reads st->frame back once (the tree's shape
 * sizes the later launches); fails if the keys stage flagged the box. */
bn_status bn_gpu_build(bn_gpu_tree_store *st, const uint64_t *keys, int n, int leaf_size, int group_size,
                       cudaStream_t s);

/* ---- moments_cuda.cu ---- */
/* Mass, centre of mass and traceless quadrupole of every node, bottom-up
 * in double; opening radius^2 and G M l^2 for the walk (mac/theta/
 * quadrupole/G of g). Moves the frame's ref (on entry: the cube's
 * centre) to the root's centre of mass, on the device, and stores the
 * coms in float relative to it: make the float bodies after this stage.
 * keys NULL: a refresh of the last build's tree after the bodies moved
 * (block time steps): the octants are not looked up, the criteria take
 * the moved geometry (bn_mac_cell_radius with centre NULL). */
bn_status bn_gpu_moments(bn_gpu_tree_store *st, double *const pos[3], const float *mass, const uint64_t *keys,
                         const bn_gravity_params *g, cudaStream_t s);

/* ---- groups_cuda.cu ---- */
/* The boxes of the build's groups (after the bodies are made). acc_old
 * (key order) sets group_half.w = alpha * min |a_old| when not NULL. */
bn_status bn_gpu_groups(bn_gpu_tree_store *st, const float4 *acc_old, double alpha, cudaStream_t s);
/* Block time steps: the groups holding a body with bin >= bin_min (bins
 * per body, key order) into groups[0 .. *count) (device; count is reset
 * here). The list's order may vary from run to run, the walk's results
 * do not. */
bn_status bn_gpu_active_groups(const bn_gpu_tree *t, const uint8_t *bin, int bin_min, int *groups, int *count,
                               cudaStream_t s);

/* ---- backend_cuda.cu (tests) ---- */
/* Run keys to groups on a CUDA backend state holding particles; returns
 * its tree and its key-ordered particle arrays (device pointers). */
bn_status bn_cuda_state_tree(void *state, bn_gpu_tree_store **tree, double *pos[3], float **mass, int **orig);

#ifdef __cplusplus
}
#endif
#endif
