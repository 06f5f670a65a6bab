/* Internal: bn_domain_decompose's stages, for a backend whose particles
 * live on a device (core/rebalance_cuda.cu): it keys and sorts them
 * there and brings only keys and weights to the host, where the cut is
 * made from every rank's samples as bn_domain_decompose makes it. */
#ifndef BN_PARALLEL_DOMAIN_PARTS_H
#define BN_PARALLEL_DOMAIN_PARTS_H
#include "banyan.h"

/* d for the ranks of c: the key cube around every rank's box [lo, hi]
 * (lo > hi: a rank without particles) and room for the cut. Collective
 * and agreed; bn_domain_release frees it. */
bn_status bn_domain_prepare(const bn_comm *c, const double lo[3], const double hi[3], bn_curve curve, bn_domain *d);
/* The key cube of every rank's box [lo, hi] (lo > hi: a rank without
 * particles), as bn_domain_decompose makes a cut's: the same on every
 * rank. Collective. */
bn_status bn_domain_cube(const bn_comm *c, const double lo[3], const double hi[3], double cube_lo[3], double *side);
/* The cut (d->split) from this rank's n keys in ascending order, keys in
 * d's cube and curve, with their weights (NULL: 1 each; every rank must
 * pass weights or every rank none). Collective. */
bn_status bn_domain_cut_sorted(const bn_comm *c, const uint64_t *key, const double *w, size_t n, bn_domain *d);
/* counts[r]: the keys that belong to rank r (nranks entries). */
void bn_domain_counts(const bn_domain *d, const uint64_t *key, size_t n, size_t *counts);
/* st's weights after an exchange: this rank's W, the ranks' largest and
 * mean and their ratio. Collective. */
bn_status bn_domain_shares(const bn_comm *c, double W, bn_domain_stats *st);
/* bn_domain_update with a weight and a byte per particle (*carry and
 * *tag hold p->n of them, or NULL) that travel with their particles:
 * both are remade for the new set (the CPU backend's measured costs and
 * block-step bins). */
bn_status bn_domain_update_tagged(const bn_comm *c, bn_particles *p, double **carry, uint8_t **tag,
                                  const bn_domain *d, bn_domain_stats *st);
#endif
