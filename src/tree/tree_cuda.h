/*
 * Internal (CUDA sources only): the GPU tree stages, one file each, in the
 * order a force evaluation runs them. Each mirrors its CPU stage one to
 * one (src/tree/*_cpu.c): bounding cube and keys (keys_cuda.cu), stable
 * radix sort and reordering into key order (sort_cuda.cu), nodes and
 * groups from the sorted keys (build_cuda.cu), moments bottom-up
 * (moments_cuda.cu), group boxes (groups_cuda.cu); the buffers they fill
 * and the host's polls of the device's shape (tree_store_cuda.cu). Every
 * device buffer is tallied (core/cuda_check.h).
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

/* What the device knows about the current evaluation and tree. The
 * host never waits for it inside a step: the launches of a build are
 * sized by capacities (bn_gpu_tree_store), and the build decides on the
 * device whether its tree fits them. If it does not, the particles keep
 * the last tree's order and that tree is refreshed (as between block
 * steps: exact, only slower); the host learns of it at its next poll,
 * where it waits anyway, and grows the capacities. */
typedef struct bn_gpu_frame {
    double box_lo[3], box_size; /* the key cube [box_lo, box_lo + box_size)^3 */
    double ref[3];          /* float origin: the cube's centre, then the
                               root's centre of mass (moments stage)     */
    double tree_box_size;   /* the key cube's side when the current tree
                               was built (its octants' sides)            */
    int bad_box;            /* coordinates not finite, or too wide      */
    int fits;               /* this build's tree fitted and is current;
                               0: the current tree is an older build's
                               (its octants need not hold its bodies)   */
    int fallbacks;          /* builds that did not fit, since the start */
    int need_nodes, need_groups; /* the largest such build's counts     */
    bn_gpu_shape shape;     /* the current tree's shape                 */
    /* the plan's counters, zeroed by every build (keep them last) */
    int n_groups, n_leaves;
    int per_level[BN_KEY_MAX_LEVEL + 1]; /* nodes on each level          */
} bn_gpu_frame;

/* The device tree and the buffers behind it, kept between evaluations
 * (they only grow, so a run settles on one allocation). */
typedef struct bn_gpu_tree_store {
    bn_gpu_tree t;          /* what the walk reads (t.shape: frame->shape) */
    bn_gpu_frame *frame;    /* device frame                              */
    bn_gpu_frame *frame_host; /* pinned copy, made by a poll or by a build
                               with nothing to fall back on             */
    int node_capacity, group_capacity; /* what a build may fill           */
    int node_alloc;         /* nodes allocated (= node_capacity but in
                               tests that pretend to have less room)     */
    void *scan_tmp;         /* CUB scan scratch                           */
    size_t scan_tmp_bytes;
    unsigned long long *minmax; /* bounding-box reduction (6 ordered words) */
    double align_lo[3], align_side; /* host: the cube whose octree cells the
                               builds' key cubes are (several ranks: the
                               domains', keys.h's bn_key_cube_in); side 0:
                               each build's own cube                     */
} bn_gpu_tree_store;

/* ---- tree_store_cuda.cu ---- */
/* Device frame and its pinned host copy (once per store). */
bn_status bn_gpu_tree_store_init(bn_gpu_tree_store *st, cudaStream_t s);
void bn_gpu_tree_store_free(bn_gpu_tree_store *st, cudaStream_t s);
/* Room for this many nodes and groups; keep: copy the current tree into
 * the new buffers (else their contents are lost). */
bn_status bn_gpu_tree_store_reserve(bn_gpu_tree_store *st, int nodes, int groups, int keep, cudaStream_t s);
/* Where the host waits anyway (stats, finish, energies, tests): copy the
 * frame to frame_host (synchronous), update the host copies of the
 * shape and ref, and grow the capacities to what a build that did not
 * fit needed (keeping the current tree). Fails if the keys stage found
 * a coordinate that is not finite or too wide a box. */
bn_status bn_gpu_tree_poll(bn_gpu_tree_store *st, cudaStream_t s);
/* Where the build's tree fitted (frame->fits): its key cube into box
 * (box_lo[3], box_size) and n into *kept (its sorted keys are kept by
 * the caller); else *kept = 0 (the keys kept are not the current
 * tree's). On the device. */
bn_status bn_gpu_keep_build(double *box, int *kept, int n, const bn_gpu_frame *f, cudaStream_t s);
/* The host copies of a shape in t (n_nodes, ..., level_start). */
void bn_gpu_tree_take_shape(bn_gpu_tree *t, const bn_gpu_shape *c);
/* The error of a frame (a host copy) whose keys stage found a coordinate
 * that is not finite, or too wide a box. */
bn_status bn_gpu_frame_check(const bn_gpu_frame *f);

/* ---- keys_cuda.cu ---- */
/* Bounding box of n positions (exact min/max) and the key cube around it
 * into st->frame, on the device (nothing is read back). vel not NULL and
 * tau not 0: of the positions tau ahead, x + tau v (tree/refresh_lag.h). */
bn_status bn_gpu_bounding_box(double *const pos[3], double *const vel[3], double tau, int n, bn_gpu_tree_store *st,
                              cudaStream_t s);
/* keys[i] of position i (or of x + tau v, as above) in the frame's cube;
 * index[i] = i (the sort's values). */
bn_status bn_gpu_keys(double *const pos[3], double *const vel[3], double tau, int n, const bn_gpu_frame *frame,
                      int hilbert, uint64_t *keys, int *index, cudaStream_t s);

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
/* dst[k][i] = src[k][perm[i]] for three double arrays, in one pass. */
bn_status bn_gpu_gather3(const int *perm, double *const src[3], double *const dst[3], int n, cudaStream_t s);
/* A particle's arrays other than its position and velocity, permuted
 * together (bin NULL: none; dst.orig may be perm itself). */
typedef struct bn_gpu_particle_rest {
    float *mass;
    int *orig;
    float4 *acc;
    uint8_t *bin;
} bn_gpu_particle_rest;
bn_status bn_gpu_gather_rest(const int *perm, bn_gpu_particle_rest src, bn_gpu_particle_rest dst, int n,
                             cudaStream_t s);
/* body[i] = (hi of len_scale (pos - frame->ref), mass_scale mass),
 * body_lo[i] = (its lo, 0) (bn_gpu_split; the units of tree_gpu.h): what
 * the walk and the direct kernel read. */
bn_status bn_gpu_make_bodies(double *const pos[3], const float *mass, const bn_gpu_frame *frame, double len_scale,
                             double mass_scale, int n, float4 *body, float4 *body_lo, cudaStream_t s);

/* ---- build_cuda.cu ---- */
/* Octree and groups of n sorted keys in one pass over the bodies: nodes
 * with more than leaf_size bodies split by the next 3 key bits; groups are
 * the nodes with at most group_size bodies whose parent has more (a bigger
 * leaf is cut in chunks). Fills st->t's node and group_body arrays and
 * frame->shape, on the device, if the tree fits the capacities
 * (frame->fits); otherwise leaves the last tree as it is.
 * can_fall_back: a tree of the particles' current order exists, so
 * nothing is read back. Without one the shape is read back once (the only
 * synchronisation) to size the buffers, and the host copies of the shape
 * are set. perm: the sort's permutation, made the identity on the device
 * when the tree does not fit (the particles then keep the order of the
 * tree that stays). plan (n int2) and info (n unsigned) are scratch: the
 * sort's spare buffers serve. */
bn_status bn_gpu_build(bn_gpu_tree_store *st, const uint64_t *keys, int *perm, int n, int leaf_size,
                       int group_size, int can_fall_back, int2 *plan, unsigned *info, cudaStream_t s);

/* ---- moments_cuda.cu ---- */
/* Mass, centre of mass and traceless quadrupole of every node, bottom-up
 * in double; opening radius^2 and M l^2 for the walk (mac/theta/
 * quadrupole of g), stored in the units of st->t (len_scale,
 * mass_scale: tree_gpu.h). Moves the frame's ref (on entry: the cube's
 * centre) to the root's centre of mass, on the device, and stores the
 * coms relative to it as hi + lo floats: make the float bodies after
 * this stage. octants: the positions are those the tree was built from
 * (the octant of a node is quantized from its first body's position in
 * the frame's cube). octants 0, or a build that did not fit (frame->fits
 * 0): a refresh of the current tree after the bodies moved (block time
 * steps): the criteria take the moved geometry (bn_mac_cell_radius with
 * centre NULL). Level ranges come from the device shape: one launch over
 * every node for the leaves, then one per possible level (20 to 0) for
 * the inner nodes. */
bn_status bn_gpu_moments(bn_gpu_tree_store *st, double *const pos[3], const float *mass, int octants,
                         const bn_gravity_params *g, cudaStream_t s);

/* ---- groups_cuda.cu ---- */
/* The bodies (t->body, t->body_lo, key order, from pos and mass, after
 * the moments have moved ref) and the boxes of the groups. acc_old
 * (key order) sets group_half.w = alpha * min |a_old| when not NULL
 * (alpha: the criterion's alpha in the units of the tree, over G).
 * growth (a refresh; NULL: none): the sum of the groups' growth since
 * the build (tree/refresh_guard.h), a device value (reset here). */
bn_status bn_gpu_groups(bn_gpu_tree_store *st, double *const pos[3], const float *mass, const float4 *acc_old,
                        double alpha, unsigned long long *growth, cudaStream_t s);
/* The build's group levels (group_level) from its sorted keys (key
 * order), where the build's tree became current. */
bn_status bn_gpu_group_levels(bn_gpu_tree_store *st, const uint64_t *keys, cudaStream_t s);
/* Block time steps: the groups holding a body with bin >= *bin_min (bins
 * per body, key order; bin_min a device int) into groups[0 .. *count)
 * (device; count is reset here). The list's order may vary from run to
 * run, the walk's results do not. */
bn_status bn_gpu_active_groups(const bn_gpu_tree *t, const uint8_t *bin, const int *bin_min, int *groups, int *count,
                               cudaStream_t s);

/* ---- backend_cuda.cu (tests) ---- */
/* Run keys to groups on a CUDA backend state holding particles; returns
 * its tree and its key-ordered particle arrays (device pointers). */
bn_status bn_cuda_state_tree(void *state, bn_gpu_tree_store **tree, double *pos[3], float **mass, int **orig);
/* The same arrays of the state's current tree without building one (the
 * backend across ranks: the tree its walk of this evaluation read, built
 * or refreshed, polled by the caller). */
bn_status bn_cuda_state_last_tree(void *state, bn_gpu_tree_store **tree, double *pos[3], float **mass, int **orig);

#ifdef __cplusplus
}
#endif
#endif
