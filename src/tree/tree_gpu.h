/*
 * The octree as it lives on the device: the contract between the GPU
 * build (keys, sort, build, moments, groups: the src/tree/ CUDA files) and the
 * GPU walk (src/gravity/walk_cuda.cu). Same structure as bn_tree
 * (tree.h): nodes level by level, children contiguous, bodies of every
 * node contiguous in key order, groups = the deepest nodes with at most
 * group_size bodies.
 *
 * Precision: positions are kept in double on the device for the
 * integration. The walk reads every position (bodies, centres of mass)
 * as two floats relative to `ref`, hi + lo (hi = the float nearest to
 * x - ref, lo = the float nearest to the rest: 48 bits in all), and
 * works in the frame of each group: its centre gc is a float (hi only),
 * and a position enters the frame as (hi - gc) + lo. Near the group,
 * hi - gc is exact (Sterbenz), so a separation keeps float precision
 * relative to itself wherever the group lies: forces do not depend on
 * the distance to ref (bn_gpu_split, below; issue 14). Moments are
 * accumulated in double and stored in float.
 *
 * Units: every float of the tree is in units where the particles' extent
 * and total mass are about 1: lengths times len_scale, masses times
 * mass_scale, both powers of two (exact), chosen from the particles when
 * they are uploaded (bn_gpu_unit_scales; the length unit is shortened to
 * 2^16 softening lengths when the extent is longer: bn_gpu_length_scale).
 * Float's range then holds the walk's terms (m / r^7 for r down to eps)
 * whatever the user's units: a system of size 1e-6 or of mass 1e12 is walked as one
 * of size 1 and mass 1. The walk takes eps^2 into these units and its
 * results back out (times G len_scale^2 / mass_scale, G len_scale /
 * mass_scale).
 *
 * Only CUDA sources include this header.
 */
#ifndef BN_TREE_GPU_H
#define BN_TREE_GPU_H
#include <cuda_runtime.h>
#include <math.h>
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
    double len_scale, mass_scale; /* the floats' units (above)          */
    float4 *body;           /* x, y, z (relative to ref: hi), mass; key order */
    float4 *body_lo;        /* x, y, z: lo parts (w 0); made with body     */
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
    float4 *node_com;       /* centre of mass (relative to ref: hi), mass */
    float4 *node_com_lo;    /* its lo parts (w 0)                        */
    float4 *node_quad0;     /* Qxx, Qyy, Qzz, Qxy (traceless, about com) */
    float4 *node_quad1;     /* Qxz, Qyz, open radius squared, M l^2 (the
                               accel criterion's, without G)            */

    int n_groups;
    int2 *group_body;       /* first body, body count                   */
    float4 *group_box;      /* centre x, y, z (relative to ref; a float:
                               the group's frame), unused               */
    float4 *group_half;     /* half sizes x, y, z (rounded up: the box
                               holds every body's hi + lo), alpha * min |a_old|
                               of the group over G (accel MAC; 0 otherwise) */
    unsigned char *group_level; /* levels of the smallest key cell holding
                               the group's bodies at the build: its size
                               then (tree/refresh_guard.h)              */
} bn_gpu_tree;

/* The power of two nearest to 1/v (1 for v <= 0 or not finite): the unit
 * scales of a tree whose particles span `extent` and weigh `mass`. */
__host__ __device__ inline double bn_gpu_unit_scale(double v)
{
    if (!(v > 0) || !isfinite(v)) return 1.0;
    return ldexp(1.0, -(int)floor(log2(v) + 0.5));
}

/* The length unit: the extent, or BN_GPU_EPS_SPAN softening lengths when
 * that is shorter. Every interaction's r^2 holds eps^2, so 1/r stays below
 * BN_GPU_EPS_SPAN in these units and m / r^7 below ~1e34: within float's
 * range even where a far outlier makes the extent 1e9 softening lengths
 * (an extent unit gave 1/r^7 = inf there: issue 15's output check found
 * it). Only extreme dynamic ranges change the unit (extent / eps > 2^16). */
#define BN_GPU_EPS_SPAN 65536.0
__host__ __device__ inline double bn_gpu_length_scale(double extent, double eps)
{
    const double unit = eps > 0 && eps * BN_GPU_EPS_SPAN < extent ? eps * BN_GPU_EPS_SPAN : extent;
    return bn_gpu_unit_scale(unit);
}

/* The constants a force kernel takes into and out of the tree's units
 * (len_scale L, mass_scale M): eps^2 in them, and the factors that turn
 * its sums (without G) into accelerations (G L^2 / M) and potentials
 * (G L / M); alpha of the accel criterion over G in them (its G M l^2 /
 * d^4 is then M l^2 / d^4 of the units). */
typedef struct bn_gpu_units {
    float eps2, acc_unit, pot_unit;
} bn_gpu_units;
__host__ __device__ inline bn_gpu_units bn_gpu_units_of(double G, double eps, double len_scale, double mass_scale)
{
    const double e = eps * len_scale;
    bn_gpu_units u = {(float)(e * e), (float)(G * len_scale * len_scale / mass_scale),
                      (float)(G * len_scale / mass_scale)};
    return u;
}
__host__ __device__ inline double bn_gpu_accel_alpha(double alpha, double G, double len_scale, double mass_scale)
{
    return alpha * mass_scale / (G * len_scale * len_scale);
}

/* v = hi + lo in floats: hi the float nearest to v, lo the float nearest
 * to the rest (v - hi is exact in double), so hi + lo is v to 2^-48 of
 * |v|. */
__host__ __device__ inline void bn_gpu_split(double v, float *hi, float *lo)
{
    *hi = (float)v;
    *lo = (float)(v - (double)*hi);
}

#ifdef __CUDACC__
/* Body i of the tree: its position relative to ref as hi (with the mass,
 * in the floats' units) and lo parts. One definition for both kernels
 * that make bodies (sort_cuda.cu's, groups_cuda.cu's). */
__device__ __forceinline__ void bn_gpu_body(const double *const pos[3], const float *mass, const double ref[3],
                                            double len_scale, float mass_scale, int i, float4 *hi, float4 *lo)
{
    float h[3], l[3];
    for (int k = 0; k < 3; k++) bn_gpu_split(len_scale * (pos[k][i] - ref[k]), &h[k], &l[k]);
    *hi = make_float4(h[0], h[1], h[2], mass_scale * mass[i]);
    *lo = make_float4(l[0], l[1], l[2], 0.f);
}

/* A position (hi, lo relative to ref) in the frame of centre c (a float
 * relative to ref): (hi - c) + lo, exact where hi is near c. */
__device__ __forceinline__ float3 bn_gpu_in_frame(float4 hi, float4 lo, float4 c)
{
    return make_float3((hi.x - c.x) + lo.x, (hi.y - c.y) + lo.y, (hi.z - c.z) + lo.z);
}

/* The number of groups, read where kernels run. */
__device__ __forceinline__ int bn_gpu_tree_groups(const bn_gpu_tree *t)
{
    return t->shape ? t->shape->n_groups : t->n_groups;
}
#endif
#endif
