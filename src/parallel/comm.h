/* Internal: the collectives the distributed stages need, over a bn_comm
 * (MPI_COMM_WORLD, or this process alone). Every collective is called by
 * every rank of the communicator in the same order. A collective that
 * allocates agrees on the allocation first (bn_comm_agree), so that a
 * rank out of memory stops every rank with its message instead of
 * leaving the others waiting. Sums are taken in rank order (the same bits
 * for the same ranks, whatever MPI's reduction tree). */
#ifndef BN_PARALLEL_COMM_H
#define BN_PARALLEL_COMM_H
#include <stddef.h>
#include <stdint.h>
#include "banyan.h"

typedef enum { BN_REDUCE_MIN, BN_REDUCE_MAX, BN_REDUCE_SUM } bn_reduce;

/* v[0..n) combined over the ranks, in place, the same on every rank. */
bn_status bn_comm_allreduce(const bn_comm *c, double *v, int n, bn_reduce op);
/* Energies, momenta, angular momenta and centre of mass over the ranks,
 * in total and per part type (each rank's e of its particles, of total
 * mass `mass`), summed in rank order: the same bits on every rank and in
 * every run. */
bn_status bn_comm_reduce_energies(const bn_comm *c, double mass, bn_energies *e);
/* The box [lo, hi] of every rank's boxes, on every rank. */
bn_status bn_comm_reduce_box(const bn_comm *c, double lo[3], double hi[3]);
/* Records of rec_size bytes, n of them from this rank: every rank's in
 * rank order to rank root, or to every rank when root < 0: *out
 * (malloc'd; NULL on ranks that receive nothing) of *total records,
 * counts[r] (may be NULL; nranks of them) from rank r. At most INT_MAX
 * records in all (MPI's counts). */
bn_status bn_comm_gather(const bn_comm *c, int root, const void *send, size_t n, size_t rec_size, void **out,
                         size_t *total, size_t *counts);
/* Blocks of `cells` cells, nv values a cell interleaved (cell-major), n
 * of them from this rank: every rank's to rank root (to every rank when
 * root < 0) straight into nv arrays dest[k] (nv <= 8), the j-th block of
 * all (rank order) at block where[j] of each array: no staging buffer and
 * no placing after. Every rank passes where[] for all the blocks (the
 * same on every rank); dest only where values arrive. Collective and
 * agreed. */
bn_status bn_comm_gather_blocks(const bn_comm *c, int root, const double *send, size_t n, size_t cells, int nv,
                                const size_t *where, double *const *dest);
/* Records of rec_size bytes: rank r's send[] holds, in rank order,
 * send_counts[d] records for each destination d; *out (malloc'd) gets
 * the records sent to this rank, in rank order of their senders,
 * recv_counts[s] from each sender s, *total in all. */
bn_status bn_comm_alltoallv(const bn_comm *c, const void *send, const size_t *send_counts, size_t rec_size,
                            void **out, size_t *recv_counts, size_t *total);
/* Whether to give the MPI library device pointers: Open MPI's
 * MPIX_Query_cuda_support says it takes them (where mpi-ext.h can tell)
 * and BANYAN_MPI_DEVICE_BUFFERS is set (opt-in: the path has not run on a
 * CUDA-aware library yet). 0 without MPI or for one process. This rank's
 * answer: set the variable on every rank or on none. */
int bn_comm_cuda_aware(const bn_comm *c);
/* recv_counts[s]: how many records rank s sends this rank, from every
 * rank's send_counts[d] (nranks of each). Collective and agreed. */
bn_status bn_comm_counts(const bn_comm *c, const size_t *send_counts, size_t *recv_counts);
/* Records of rec_size bytes between buffers the caller made (device
 * memory when bn_comm_cuda_aware): send_counts[d] records from record
 * send_at[d] of send to rank d, recv_counts[s] (bn_comm_counts') from
 * rank s into recv from record recv_at[s]. Collective and agreed. */
bn_status bn_comm_alltoallv_placed(const bn_comm *c, const void *send, const size_t *send_counts,
                                   const size_t *send_at, size_t rec_size, void *recv, const size_t *recv_counts,
                                   const size_t *recv_at);
/* The same, non-blocking (MPI_Ialltoallv): started with the counts agreed
 * and the receive buffer made (collective, agreed), finished by
 * bn_comm_alltoallv_wait, between which the caller computes (how much of
 * the transfer really moves meanwhile is the MPI library's progress). The
 * pending exchange owns send (malloc'd; freed by the wait, or here on a
 * failure). */
typedef struct bn_comm_pending bn_comm_pending;
bn_status bn_comm_alltoallv_start(const bn_comm *c, void *send, const size_t *send_counts, size_t rec_size,
                                  size_t *recv_counts, bn_comm_pending **pending);
/* Collective: waits for the exchange; *out (malloc'd) and *total as
 * bn_comm_alltoallv's. pending is freed. */
bn_status bn_comm_alltoallv_wait(const bn_comm *c, bn_comm_pending *pending, void **out, size_t *total);
#endif
