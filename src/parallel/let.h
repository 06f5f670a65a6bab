/* Internal: locally essential trees (Salmon 1991; Bonsai's and GADGET's
 * LET exchange). Before a force evaluation each rank sends every other
 * rank the part of its own tree that the other's targets can open under
 * the criterion in use, judged against the box of all the receiver's
 * targets: a cell that box does not open goes as a closed cell (its
 * moments; r2 < 0 so that no group of the receiver opens it, which none
 * would: every group lies inside the box and the test is monotonic), a
 * leaf it opens goes with its bodies, a node it opens with its children.
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

/* The tree src as a receiver with targets in [lo, hi] needs it (alpha_amin
 * for the accel criterion: alpha times the receiver's smallest |a_old|),
 * appended to msg: n_cells, n_bodies, the cells, their quadrupoles, the
 * bodies' x, y, z and masses. An empty source appends nothing. */
bn_status bn_let_pack(const bn_walk_source *src, const double lo[3], const double hi[3], bn_mac mac,
                      double alpha_amin, bn_words *msg);

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
