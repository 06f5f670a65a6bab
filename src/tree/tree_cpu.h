/*
 * Internal: the CPU tree code, one function per stage, so that tests (and
 * the GPU tests, which compare their tree with this one) can run and check
 * each stage on its own. Every stage is a data-parallel pass over arrays
 * (OpenMP), the way the GPU backend runs it with one thread per element:
 *
 *   bbox     min/max reduction -> a cube slightly larger than the particles
 *   keys     one 63-bit key per particle (Hilbert default, Morton option)
 *   sort     stable LSD radix sort of (key, index) pairs; keeps the permutation
 *   reorder  gather positions and masses into key order (structure of arrays)
 *   build    level by level: count children per node (binary search in the
 *            sorted keys), exclusive scan, write the children contiguously
 *   moments  leaves from their bodies, then internal nodes level by level
 *            bottom-up from their children (parallel-axis shift)
 *   groups   flag the deepest nodes with <= group_size bodies, scan, compact
 *   walk     per group (src/gravity/walk_cpu.c)
 *
 * The layout the stages fill is bn_tree (tree.h).
 */
#ifndef BN_TREE_CPU_H
#define BN_TREE_CPU_H
#include "banyan.h"
#include "tree/tree.h"

/* Free every array of t and zero it (t itself is not freed). */
void bn_tree_release(bn_tree *t);
/* Make room for n bodies (keys, order, sorted positions and masses). */
bn_status bn_tree_reserve_bodies(bn_tree *t, size_t n);
/* Make room for `nodes` nodes, keeping the nodes already written. */
bn_status bn_tree_reserve_nodes(bn_tree *t, int nodes);

/* In place: a[i] = a[0] + ... + a[i-1]; returns the total. */
int bn_tree_exclusive_scan(int32_t *a, int n);

/* Stage 1: the key cube [lo, lo + size)^3: the bounding cube of the
 * particles, enlarged by a relative 2^-20 so that the largest coordinate
 * quantises strictly inside, and of side 1 around the point when every
 * particle sits at one point. Fails on non-finite coordinates. */
bn_status bn_tree_bbox(const double *const pos[3], size_t n, double lo[3], double *size);

/* Stage 1 on several ranks: the key cube as a cell of the octree of the
 * cube [align_lo, align_lo + align_side)^3 (keys.h's bn_key_cube_in), so
 * that every rank's octants are those of one tree of all ranks' bodies;
 * align_side 0: bn_tree_bbox's. */
bn_status bn_tree_cube(const double *const pos[3], size_t n, const double align_lo[3], double align_side, double lo[3],
                       double *size);

/* Stage 2: keys[i] of particle i in the cube (curve: BN_CURVE_*). */
void bn_tree_keys(const double *const pos[3], size_t n, const double lo[3], double size, bn_curve curve,
                  uint64_t *keys);

/* Stage 3: sort keys ascending, stably, carrying order[] along (set
 * order[i] = i before the call to get the permutation). tmp_keys and
 * tmp_order are scratch of length n. Deterministic whatever the thread
 * count. */
bn_status bn_tree_sort(size_t n, uint64_t *keys, uint32_t *order, uint64_t *tmp_keys, uint32_t *tmp_order);

/* Stages 1-3 plus the reorder, into t: box, curve, keys, order, sorted
 * pos/mass; the stage times (seconds) into t_* (may be NULL). */
bn_status bn_tree_sort_bodies(bn_tree *t, const double *const pos[3], const double *mass, size_t n,
                              bn_curve curve, double *t_bbox, double *t_keys, double *t_sort);

/* A saved tree (restart files, both backends): this header, then n
 * sorted keys (uint64), then n orders (uint32: the saved particles'
 * index of each sorted body). box: the build's key cube; ref: the GPU
 * frame's float origin when it was saved (the CPU's is 0). */
typedef struct bn_saved_tree {
    int64_t n, curve;
    double box_lo[3], box_size;
    double ref[3];
} bn_saved_tree;
/* the keys after it stay 8-byte aligned in a malloc'd blob */
#ifdef __cplusplus
static_assert(sizeof(bn_saved_tree) % 8 == 0, "bn_saved_tree keeps the keys after it aligned");
#else
_Static_assert(sizeof(bn_saved_tree) % 8 == 0, "bn_saved_tree keeps the keys after it aligned");
#endif
/* The keys and orders of saved bytes, checked: the size, n particles,
 * a finite cube, the curve `curve` (the run's: the GPU takes the cells'
 * geometry from the keys by it), keys in order and in the curve's range
 * (below 2^63), orders a permutation. */
bn_status bn_tree_saved_parse(const void *bytes, size_t size, size_t n, bn_curve curve, bn_saved_tree *h,
                              const uint64_t **keys, const uint32_t **order);
/* Stages 1-3 of a saved build: its cube and curve, sorted keys and
 * order, with the positions and masses gathered as bn_tree_sort_bodies
 * does. */
void bn_tree_restore_bodies(bn_tree *t, const bn_saved_tree *h, const uint64_t *keys, const uint32_t *order,
                            const double *const pos[3], const double *mass);

/* Stage 4: the nodes, level by level, from the sorted keys in t. A node
 * with more than leaf_size bodies below level BN_KEY_MAX_LEVEL splits
 * into its non-empty octants; the others are leaves (a leaf at the
 * deepest level may hold more than leaf_size bodies: coincident keys). */
bn_status bn_tree_build(bn_tree *t, int leaf_size);

/* Stage 5: mass, centre of mass, traceless quadrupole about it (zero when
 * quadrupole == 0), geometric centre and side, delta and the opening
 * radius of every node for criterion `mac` and opening angle theta. */
void bn_tree_moments(bn_tree *t, bn_mac mac, double theta, int quadrupole);

/* Stage 6: the groups: the deepest nodes with at most group_size bodies
 * (a node with <= group_size bodies whose parent has more, or the root);
 * a leaf with more than group_size bodies (coincident keys) is cut into
 * chunks of group_size. With the bounding box of their bodies. */
bn_status bn_tree_groups(bn_tree *t, int group_size);
/* The groups' boxes (group_lo/hi) from the sorted positions (part of
 * bn_tree_groups; bn_tree_refresh redoes it after the bodies moved). */
void bn_tree_group_boxes(bn_tree *t);
/* A refreshed tree's groups' growth since the build, the sum that
 * tree/refresh_guard.h judges (the smallest key cell of each group's
 * bodies stands for its built size). */
unsigned long long bn_tree_group_growth(const bn_tree *t);

/* Stages 5 and 6 again for bodies that moved since the last build (block
 * time steps: cheaper than a rebuild, and the order of the bodies stays
 * the build's): keeps the structure, body order, key cube, keys and
 * groups; gathers the new positions (pos: ORIGINAL order) into key order,
 * recomputes every node's moments and body box, the opening radii (as
 * bn_tree_moments, but the octant may no longer hold the bodies:
 * bn_mac_cell_radius with centre NULL; centre and size stay the build's)
 * and the group boxes. Masses must not have changed. Fails on non-finite
 * coordinates. */
bn_status bn_tree_refresh(bn_tree *t, const double *const pos[3], bn_mac mac, double theta, int quadrupole);
#endif
