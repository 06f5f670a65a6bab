/*
 * Internal: a source tree walked by the GPU for another tree's targets
 * (another rank's locally essential tree, parallel/let.h), host side.
 * Plain C, no CUDA: the checks run (and are tested) in every build. The
 * device side is walk_gpu.h (bn_gpu_source_upload, bn_gpu_walk_remote).
 *
 * The GPU walks a source tree depth first, one warp per group, with a
 * stack of BN_REMOTE_STACK cells in shared memory. It cannot fall back
 * as the local walk does when a node's children do not fit (treating the
 * node as a leaf): a received node comes without its bodies. So the
 * deepest stack any walk of the tree could need is found here, before
 * anything is uploaded, and a tree that would need more is refused.
 */
#ifndef BN_WALK_REMOTE_H
#define BN_WALK_REMOTE_H
#include <stddef.h>
#include <stdint.h>
#include "banyan.h"
#include "gravity/walk_cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Cells on a warp's stack. A depth-first walk that pops a node and
 * pushes its k children grows by k - 1, so a tree of banyan's builder
 * (21 levels below the root, at most 8 children) needs at most
 * 1 + 21 * 7 = 148, and the received trees of P ranks merged under one
 * root (bn_gpu_source_merge) P - 2 more: 512 takes 360 ranks. 4 warps:
 * 8 KiB of shared memory (the breadth-wise walk takes most groups; this
 * one only those whose walk would overflow there). */
#define BN_REMOTE_STACK 512

/* What the checks found out about a source tree. */
typedef struct bn_remote_shape {
    int n_cells;
    int n_bodies;   /* the bodies the leaves refer to: max(first + count) */
    int stack_need; /* the deepest stack a walk of it can need           */
} bn_remote_shape;

/* Is src a tree the GPU walk can take? The breadth-first shape the LET
 * packer writes (children contiguous, claimed in order from cell 1, so
 * every cell but the root has one parent and parents precede children),
 * ranges not negative, moments and bodies finite, a cell that no group
 * may open (r2 < 0) with gml2 = 0, and a walk stack of at most
 * BN_REMOTE_STACK. The message names the cell or body at fault.
 * An empty source (n_cells 0) passes with a zero shape. */
bn_status bn_remote_check(const bn_walk_source *src, bn_remote_shape *shape);

/* Words of the staged copy of a source of this shape: its cells
 * (bn_walk_cell, 8 words each), quadrupoles (6 per cell), then the
 * bodies' x, y, z and masses (n_bodies each), as bn_let_pack lays out a
 * message after its two counts. */
size_t bn_remote_stage_words(const bn_remote_shape *shape);
/* Copy a checked src into words (bn_remote_stage_words of them). */
void bn_remote_stage(const bn_walk_source *src, const bn_remote_shape *shape, uint64_t *words);

/* Groups per box of the received trees' far field (interact.h's
 * BN_WALK_BOX_GROUPS), or BANYAN_REMOTE_BOX_GROUPS (0: off, each group
 * from the root; at most 32), a tuning aid; both backends. */
int bn_remote_box_groups(void);

#ifdef __cplusplus
}
#endif
#endif
