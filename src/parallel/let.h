/* Internal: locally essential trees (Salmon 1991; Bonsai's and GADGET's
 * LET exchange). Before a force evaluation each rank sends every other
 * rank the part of its own tree that the other's targets can open under
 * the criterion in use, judged against boxes that each hold whole groups
 * of the receiver (runs of its groups along the curve): a cell no box
 * opens goes as a closed cell (its moments; r2 < 0 so that no group of
 * the receiver opens it, which none would: every group lies inside a box
 * and the test is monotonic in the box), a leaf a box opens goes with its
 * bodies, a node with its children.
 * The receiver walks the tree it gets as it walks its own (walk_cpu.c). */
#ifndef BN_PARALLEL_LET_H
#define BN_PARALLEL_LET_H
#include <stddef.h>
#include <stdint.h>
#include "banyan.h"
#include "gravity/walk_cpu.h"

/* A growing buffer of 8-byte words: a message to one rank. */
typedef struct bn_words {
    uint64_t *w;
    size_t n, cap;
} bn_words;
void bn_words_free(bn_words *b);
/* Room for `more` words after the n there are. */
bn_status bn_words_reserve(bn_words *b, size_t more);

/* Where a receiver's targets lie: boxes that each hold whole groups of
 * its (lo xyz, hi xyz, and alpha times the groups' smallest |a_old| for
 * the accel criterion). A sender opens a cell
 * when any box opens it, so every group inside a box gets what it opens. */
#define BN_LET_BOX 7
/* The target boxes per rank: n / BN_LET_BOX_BODIES, within
 * [BN_LET_BOXES_MIN, BN_LET_BOXES_MAX] (the gather stays small: 7 doubles
 * a box). Measured on 4 H200s (session 36): weak Plummer 2^25 a GPU, 256
 * boxes sent one rank 23 M bodies (the others 2-5 M), its received walk
 * the slowest, batch step 85.4 ms; 1024 boxes 83.7 ms (4096: 84.4), and
 * Hernquist 84.7 against 85.2. M31's block steps at 2^23 on 4 GPUs (2 M
 * a rank) lost with 1024 boxes (batch 9.4 ms against 7.3 with 256: the
 * exchange 6.4 ms against 4.5), so small ranks keep 256. */
#define BN_LET_BOX_BODIES 32768
#define BN_LET_BOXES_MIN 256
#define BN_LET_BOXES_MAX 1024
/* The most bodies a target box's node holds for a rank of n bodies:
 * max(group_size, n / boxes), the boxes as above, or BANYAN_LET_BOXES
 * (16 to 65536; a tuning aid). */
int bn_let_box_bodies(size_t n, int group_size);
/* The packers test a cell against the union of all a receiver's boxes,
 * then the unions of runs of BN_LET_BOX_RUN consecutive ones (neighbours
 * in space: the boxes come in curve order), then a run's boxes: the test
 * is monotonic in the box and in alpha_amin, so a union that does not
 * open a cell spares its boxes' tests. all: one box; runs: one per run
 * (the smallest alpha_amin of each). */
#define BN_LET_BOX_RUN 16
void bn_let_box_unions(const double *box, int n, double *all, double *runs);
/* The tree src as a receiver with the n target boxes needs it, appended
 * to msg: n_cells, n_bodies, the cells, their quadrupoles, the bodies'
 * x, y, z and masses. An empty source appends nothing. */
bn_status bn_let_pack(const bn_walk_source *src, const double *boxes, int n, bn_mac mac, bn_words *msg);

/* A received tree as a walk source (its arrays are its own). */
typedef struct bn_let {
    bn_walk_source src;
    bn_walk_cell *cells;
    double *quad, *pos[3], *mass;
} bn_let;
/* One tree from words[0..n): *used gets the words it took. Checks the
 * message's shape (counts, child and body ranges) before trusting it. */
bn_status bn_let_unpack(const uint64_t *words, size_t n, bn_let *let, size_t *used);
void bn_let_free(bn_let *let);
#endif
