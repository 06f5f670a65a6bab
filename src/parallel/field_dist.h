/* Internal: the mesh solver across the ranks of a communicator (the tree,
 * on either backend: ranks sharing a GPU each use it). Replicated sources, distributed targets: every rank holds
 * the whole mesh (and the particles, if any) and builds the same tree over
 * every source cell; the leaf blocks are cut along the space-filling
 * curve into contiguous ranges, one per rank, balanced by cell count; each
 * rank computes the field at its own blocks' cells (on the GPU: only
 * those blocks' targets on the device), and the values are gathered onto
 * one rank or every rank. Memory per rank is O(mesh): the locally
 * essential tree of source cells (as for particles, let.h) is the
 * scalable next step. */
#ifndef BN_PARALLEL_FIELD_DIST_H
#define BN_PARALLEL_FIELD_DIST_H
#include "banyan.h"

typedef struct bn_field_dist_stats {
    int nranks;
    size_t blocks, cells;       /* this rank's share                      */
    double cells_max, cells_mean; /* over the ranks                       */
    double t_solve, t_solve_max;  /* this rank's solve, the slowest one's */
    double t_gather;              /* the values to the root (this rank)   */
} bn_field_dist_stats;

/* The leaf blocks of m in the order of the curve (Hilbert keys of their
 * centres in the cube of the mesh's box; ties by index) into order[0..n),
 * and rank r's range [cut[r], cut[r + 1]) of it (cut: P + 1 entries),
 * contiguous and balanced by cells (every block holds the same cells:
 * n/P blocks each, to one block). The same on every rank. */
bn_status bn_field_dist_blocks(const bn_mesh *m, int P, size_t *order, size_t *cut);

/* Collective, as bn_field_mesh on every rank of c: every rank passes the
 * same f's parameters, the same mesh m and the same extra; on return
 * rank root's m (every rank's: root < 0) holds the whole result, each
 * cell's value with the bits one process computes on the same backend
 * (the same tree, the same bricks); the other ranks' m is unchanged. The
 * FFT solver is refused across ranks (naming --method); one rank is
 * bn_field_mesh itself. A failure on any rank fails every rank with its
 * message. st (may be NULL): the shares. */
bn_status bn_field_mesh_dist(bn_field *f, const bn_comm *c, bn_mesh *m, const bn_particles *extra, int root,
                             bn_field_dist_stats *st);
#endif
