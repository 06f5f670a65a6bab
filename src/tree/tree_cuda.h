/*
 * Internal (CUDA sources only): the GPU tree stages, one file each, in the
 * order a force evaluation runs them. Each mirrors its CPU stage one to
 * one (src/tree/*_cpu.c): bounding cube and keys (keys_cuda.cu), stable
 * radix sort and reordering into key order (sort_cuda.cu), level-by-level
 * build (build_cuda.cu), moments bottom-up (moments_cuda.cu), groups
 * (groups_cuda.cu). Every device buffer is tallied (core/cuda_check.h).
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

/* The device tree and the buffers behind it, kept between evaluations
 * (they only grow, so a run settles on one allocation). */
typedef struct bn_gpu_tree_store {
    bn_gpu_tree t;          /* what the walk reads                       */
    double box_lo[3];       /* the key cube [box_lo, box_lo + box_size)^3 */
    double box_size;
    int node_capacity, group_capacity;
    int *level_count;       /* build scratch: children per node of a level */
    int *level_offset;      /* inclusive scan of level_count              */
    void *scan_tmp;         /* CUB scan scratch                           */
    size_t scan_tmp_bytes;
    unsigned long long *minmax; /* bounding-box reduction (6 ordered words) */
    int *counter;           /* one device int (group count)               */
} bn_gpu_tree_store;

void bn_gpu_tree_store_free(bn_gpu_tree_store *st, cudaStream_t s);

/* ---- keys_cuda.cu ---- */
/* Bounding box of n positions (exact min/max), read back to the host. */
bn_status bn_gpu_bounding_box(double *const pos[3], int n, bn_gpu_tree_store *st, double lo[3], double hi[3],
                              cudaStream_t s);
/* The key cube around a bounding box (the CPU's rule, see the .cu). */
void bn_gpu_key_cube(const double lo[3], const double hi[3], double box_lo[3], double *box_size);
/* keys[i] of position i in the cube; index[i] = i (the sort's values). */
bn_status bn_gpu_keys(double *const pos[3], int n, const double box_lo[3], double box_size, int hilbert,
                      uint64_t *keys, int *index, cudaStream_t s);

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
/* body[i] = (pos - ref as float, mass): what the walk reads. */
bn_status bn_gpu_make_bodies(double *const pos[3], const float *mass, const double ref[3], int n, float4 *body,
                             cudaStream_t s);

/* ---- build_cuda.cu ---- */
/* Level-by-level octree of n sorted keys: nodes with more than leaf_size
 * bodies split by the next 3 key bits. Fills st->t's node arrays, counts
 * and level_start (a few scalar reads per level steer the launches). */
bn_status bn_gpu_build(bn_gpu_tree_store *st, const uint64_t *keys, int n, int leaf_size, cudaStream_t s);

/* ---- moments_cuda.cu ---- */
/* Mass, centre of mass and traceless quadrupole of every node, bottom-up
 * in double; opening radius^2 and G M l^2 for the walk (mac/theta/
 * quadrupole/G of g). Moves st->t.ref (on entry: positions are relative
 * to it) to the root's centre of mass and stores the coms in float
 * relative to it: make the float bodies after this stage. */
bn_status bn_gpu_moments(bn_gpu_tree_store *st, double *const pos[3], const float *mass, const uint64_t *keys,
                         const bn_gravity_params *g, cudaStream_t s);

/* ---- groups_cuda.cu ---- */
/* Groups: the nodes with at most group_size bodies whose parent has more
 * (or a bigger leaf), in key order, with their bodies' boxes. acc_old
 * (key order) sets group_half.w = alpha * min |a_old| when not NULL. */
bn_status bn_gpu_groups(bn_gpu_tree_store *st, int group_size, const float4 *acc_old, double alpha,
                        cudaStream_t s);

/* ---- backend_cuda.cu (tests) ---- */
/* Run keys to groups on a CUDA backend state holding particles; returns
 * its tree and its key-ordered particle arrays (device pointers). */
bn_status bn_cuda_state_tree(void *state, bn_gpu_tree_store **tree, double *pos[3], float **mass, int **orig);

#ifdef __cplusplus
}
#endif
#endif
