/* Internal: tree forces over the ranks of a communicator (CPU backend):
 * each rank builds and walks its own tree, then sends every other rank
 * the locally essential part of it (let.h), receives theirs and walks
 * them for its targets. Collective; the particles are this rank's
 * (bn_domain_decompose: compact domains make small LETs, but any split
 * gives the same forces to within the criterion's error). */
#ifndef BN_PARALLEL_FORCES_DIST_H
#define BN_PARALLEL_FORCES_DIST_H
#include "banyan.h"
#include "gravity/gravity_cpu.h"
#include "parallel/let.h"

/* What the last exchange moved (this rank). */
typedef struct bn_let_stats {
    size_t cells_sent, bodies_sent, cells_received, bodies_received;
    double t_exchange; /* selection, packing and the all-to-all (s) */
    double t_wait;     /* the CPU's received-trees step outside its walks:
                          the exchange's end and the ranks' agreements (s),
                          which the walk's own time leaves out          */
} bn_let_stats;

/* bn_tree_forces_active_cpu over the ranks of c: p this rank's particles
 * (possibly none), acc/pot their forces. let (may be NULL) gets what moved. */
bn_status bn_tree_forces_dist_cpu(bn_tree_workspace *ws, const bn_comm *c, const bn_gravity_params *g,
                                  const bn_particles *p, const double *acc_old, const uint8_t *bin, int bin_min,
                                  int rebuild, double *acc[3], double *pot, bn_force_stats *stats,
                                  bn_let_stats *let);

/* The exchange of one evaluation, for any backend that has its tree on
 * the host (the GPU's downloaded): this rank's target boxes from t (NULL:
 * a rank without particles), every rank's boxes to every rank, this
 * rank's LET of t for each, and the trees received, unpacked: *lets (P of
 * them, bn_lets_free) holds sender r's in lets[r], n_cells 0 for itself
 * and for a sender with nothing. let (may be NULL) gets what moved.
 * Collective and agreed. */
bn_status bn_let_exchange(const bn_comm *c, const bn_gravity_params *g, const bn_tree *t, bn_mac mac,
                          const double *acc_old, bn_let **lets, bn_let_stats *let);
/* What the exchange needs of a rank's tree, wherever it lives (the
 * host's bn_tree, or the GPU's on its device: let_cuda.cu): this rank's
 * target boxes (*box malloc'd, BN_LET_BOX doubles each; none for a rank
 * without particles), and its LET for one receiver's n boxes appended to
 * msg (bn_let_pack's layout). pack runs for several receivers at once
 * only when `concurrent`. */
typedef struct bn_let_packer {
    bn_status (*boxes)(void *ctx, double **box, size_t *n);
    bn_status (*pack)(void *ctx, const double *boxes, int n, bn_words *msg);
    int concurrent;
    void *ctx;
} bn_let_packer;
typedef struct bn_let_pending bn_let_pending;
/* bn_let_exchange_start with the tree behind a packer. */
bn_status bn_let_exchange_start_with(const bn_comm *c, const bn_let_packer *pk, bn_let_pending **pending,
                                     bn_let_stats *let);
/* The same in two halves, so that the local walk runs while the trees
 * travel (MPI_Ialltoallv): start packs and sends, finish waits and
 * unpacks. Both collective and agreed; every start is finished. */
bn_status bn_let_exchange_start(const bn_comm *c, const bn_gravity_params *g, const bn_tree *t, bn_mac mac,
                                const double *acc_old, bn_let_pending **pending, bn_let_stats *let);
bn_status bn_let_exchange_finish(const bn_comm *c, bn_let_pending *pending, bn_let **lets, bn_let_stats *let);
void bn_lets_free(bn_let *lets, int n);

/* Every rank's positions and masses (ranks in order) as one particle set
 * *all (ids 0..), on every rank; *first gets this rank's first index.
 * Collective and agreed. */
bn_status bn_gather_sources(const bn_comm *c, const bn_particles *p, bn_particles **all, size_t *first);

/* Double direct summation over the ranks: every rank's positions and
 * masses gathered on every rank, this rank's particles the targets (self
 * pairs excluded). O(N) memory per rank: for checks and small N. */
bn_status bn_direct_forces_dist_cpu(const bn_comm *c, const bn_particles *p, double G, double eps, double *acc[3],
                                    double *pot, bn_force_stats *stats);

/* The error target's sample over the ranks (core/backend.h,
 * sample_forces): n targets of every rank's particles taken as one set in
 * rank order (bn_sample_target over the global indices: the same targets
 * for a seed and the same shares), their forces from p->acc/p->pot (this
 * rank's last evaluation) and the double direct reference over every
 * rank's particles (each rank sums its own onto the gathered targets, an
 * ordered sum over the ranks). Every rank gets the whole sample, the same
 * bits: acc_ref/acc xyz per target, pot_ref/pot. Collective and agreed. */
bn_status bn_sample_forces_dist_cpu(const bn_comm *c, const bn_particles *p, double G, double eps, size_t n,
                                    uint64_t seed, double *acc_ref, double *pot_ref, double *acc, double *pot);
#endif
