/* The run's processes: see banyan.h (bn_comm) and parallel/comm.h. With
 * MPI, started by a launcher: MPI_COMM_WORLD; otherwise one process, and
 * each collective is a copy. */
#include "parallel/comm.h"
#include "core/trace.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#ifdef BANYAN_HAVE_MPI
#include <mpi.h>
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support */
#endif
#endif
#endif

struct bn_comm {
    int rank, size;
#ifdef BANYAN_HAVE_MPI
    MPI_Comm mpi; /* MPI_COMM_NULL: this process alone */
#endif
};

#ifdef BANYAN_HAVE_MPI
/* Communicators over MPI not yet freed, and whether banyan initialised
 * MPI (then the last of them finalises it; a caller's MPI is the
 * caller's to finalise). */
static int live_mpi_comms, we_initialised;

/* Started by mpirun (Open MPI, MPICH/PMI or PMIx launchers), or MPI
 * already running in the caller: then the run spans MPI_COMM_WORLD. A
 * plain start does not initialise MPI at all (a single-process run costs
 * nothing and needs no launcher). */
static int launched_by_mpi(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin) return 0;
    return init || getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}
#endif

bn_status bn_comm_world(bn_comm **out)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_comm_world: out is NULL");
    bn_comm *c = bn_calloc(1, sizeof *c, "communicator");
    if (!c) return BN_ERR_NOMEM;
    c->size = 1;
#ifdef BANYAN_HAVE_MPI
    c->mpi = MPI_COMM_NULL;
    if (launched_by_mpi()) {
        int init = 0;
        MPI_Initialized(&init);
        if (!init) {
            int provided = 0; /* OpenMP threads compute; only the main thread calls MPI */
            if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
                free(c);
                return bn_fail(BN_ERR_UNSUPPORTED, "MPI_Init_thread failed");
            }
            we_initialised = 1;
        }
        live_mpi_comms++;
        c->mpi = MPI_COMM_WORLD;
        MPI_Comm_rank(c->mpi, &c->rank);
        MPI_Comm_size(c->mpi, &c->size);
        if (c->size > 1) bn_trace_set_rank(c->rank);
    }
#endif
    *out = c;
    return BN_OK;
}

void bn_comm_free(bn_comm *c)
{
    if (!c) return;
#ifdef BANYAN_HAVE_MPI
    if (c->mpi != MPI_COMM_NULL && --live_mpi_comms == 0 && we_initialised) {
        MPI_Finalize();
        we_initialised = 0;
    }
#endif
    free(c);
}

int bn_comm_rank(const bn_comm *c) { return c ? c->rank : 0; }
int bn_comm_size(const bn_comm *c) { return c ? c->size : 1; }

int bn_comm_have_mpi(void)
{
#ifdef BANYAN_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

#ifdef BANYAN_HAVE_MPI
static int multi(const bn_comm *c) { return c && c->mpi != MPI_COMM_NULL && c->size > 1; } /* NULL: this process */
#else
static int multi(const bn_comm *c) { (void)c; return 0; }
#endif

bn_status bn_comm_agree(const bn_comm *c, bn_status local)
{
    if (!multi(c)) return local;
#ifdef BANYAN_HAVE_MPI
    int mine = local != BN_OK ? c->rank : c->size, first = c->size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c->mpi);
    if (first == c->size) return BN_OK;
    struct {
        int status;
        char text[1000];
    } m;
    memset(&m, 0, sizeof m);
    if (c->rank == first) {
        m.status = (int)local;
        snprintf(m.text, sizeof m.text, "%s", bn_last_error());
    }
    MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, c->mpi);
    return bn_fail((bn_status)m.status, "rank %d of %d: %s", first, c->size, m.text);
#else
    return local;
#endif
}

/* ---- collectives -------------------------------------------------------- */

/* This process alone: a copy. */
static bn_status gather_self(const void *send, size_t n, size_t rec_size, void **out, size_t *total, size_t *counts)
{
    void *o = bn_alloc_array(n, rec_size, "gathered records");
    if (!o) return BN_ERR_NOMEM;
    if (n) memcpy(o, send, n * rec_size);
    *out = o;
    *total = n;
    if (counts) counts[0] = n;
    return BN_OK;
}

#ifdef BANYAN_HAVE_MPI
static bn_status int_counts(const size_t *n, int P, int *cnt, int *disp, const char *what);

/* The gather itself, counts agreed: records as one MPI type, so that
 * the int counts of MPI limit records, not bytes. */
static void gather_records(const bn_comm *c, int root, const void *send, size_t n, size_t rec_size, void *o,
                           const int *cnt, const int *disp)
{
    MPI_Datatype rec;
    MPI_Type_contiguous((int)rec_size, MPI_BYTE, &rec);
    MPI_Type_commit(&rec);
    if (root < 0) MPI_Allgatherv(send, (int)n, rec, o, cnt, disp, rec, c->mpi);
    else MPI_Gatherv(send, (int)n, rec, o, cnt, disp, rec, root, c->mpi);
    MPI_Type_free(&rec);
}
#endif

bn_status bn_comm_gather(const bn_comm *c, int root, const void *send, size_t n, size_t rec_size, void **out,
                         size_t *total, size_t *counts)
{
    *out = NULL;
    *total = 0;
    if (!multi(c)) return gather_self(send, n, rec_size, out, total, counts);
#ifdef BANYAN_HAVE_MPI
    const int P = c->size, here = root < 0 || root == c->rank;
    uint64_t mine = n, *all = bn_alloc_array((size_t)P, sizeof *all, "gather counts");
    int *cnt = bn_alloc_array(2 * (size_t)P, sizeof *cnt, "gather counts");
    size_t *num = bn_alloc_array((size_t)P, sizeof *num, "gather counts");
    bn_status s = bn_comm_agree(c, all && cnt && num ? BN_OK : BN_ERR_NOMEM);
    void *o = NULL;
    if (s == BN_OK) {
        MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, c->mpi);
        for (int r = 0; r < P; r++) *total += num[r] = (size_t)all[r];
        s = int_counts(num, P, cnt, cnt + P, "gathering records");
        if (s == BN_OK && here && !(o = bn_alloc_array(*total, rec_size, "gathered records"))) s = BN_ERR_NOMEM;
        s = bn_comm_agree(c, s);
    }
    if (s == BN_OK) {
        gather_records(c, root, send, n, rec_size, o, cnt, cnt + P);
        if (counts && here) memcpy(counts, num, (size_t)P * sizeof *counts);
        *out = here ? o : NULL;
    } else {
        free(o);
        *total = 0;
    }
    if (!here) *total = 0;
    free(all);
    free(cnt);
    free(num);
    return s;
#else
    (void)root;
    return BN_ERR_INTERNAL;
#endif
}

/* This rank's own blocks placed in dest (where it receives). */
static void place_own(const double *send, size_t n, size_t cells, int nv, const size_t *where, double *const *dest)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)n; i++)
        for (size_t cl = 0; cl < cells; cl++)
            for (int k = 0; k < nv; k++)
                dest[k][where[i] * cells + cl] = send[((size_t)i * cells + cl) * (size_t)nv + (size_t)k];
}

#ifdef BANYAN_HAVE_MPI
/* Received blocks' pages of the destination mapped before the values
 * come, each written with its own value by OpenMP's threads: the mesh's
 * new variables are fresh allocations, whose pages fault at their first
 * write, and MPI's unpacking would take the faults of every received
 * block on one thread. Dev (a sandbox: 11 us a fault), 18.5 MB received
 * in 56 ms into fresh pages, 2 ms into mapped ones; 2^26 cells on 4 GPUs
 * gathered 1.7 GB in 1.1 s (issue 18, session 34). Every page a block
 * spans: a write every 4 KiB from its start, and its last value. */
static void map_pages(double *const *dest, int nv, const size_t *where, size_t blocks, size_t cells)
{
    const size_t step = 4096 / sizeof(double);
    for (int k = 0; k < nv; k++) {
        volatile double *d = dest[k];
#pragma omp parallel for schedule(static)
        for (long i = 0; i < (long)blocks; i++) {
            volatile double *b = d + where[i] * cells;
            for (size_t j = 0; j < cells; j += step) b[j] = b[j];
            b[cells - 1] = b[cells - 1];
        }
    }
}

/* This rank's blocks of variable k as one plane (cells doubles a
 * block, the blocks in order), from the interleaved values. */
static void plane_of(const double *send, size_t values, int nv, int k, double *plane)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)values; i++) plane[i] = send[(size_t)i * (size_t)nv + (size_t)k];
}

/* The exchange's scratch: a type per sender (its blocks' places), the
 * requests, the places of the most blocks one rank sends. */
typedef struct {
    MPI_Datatype *into;
    MPI_Request *req;
    MPI_Aint *at;
} blocks_scratch;

static bn_status blocks_scratch_make(blocks_scratch *x, int P, const int *cnt)
{
    int most = 1;
    for (int r = 0; r < P; r++) most = cnt[r] > most ? cnt[r] : most;
    x->into = bn_alloc_array((size_t)P, sizeof *x->into, "the blocks' types");
    x->req = bn_alloc_array(2 * (size_t)P, sizeof *x->req, "the blocks' requests");
    x->at = bn_alloc_array((size_t)most, sizeof *x->at, "the blocks' places");
    return x->into && x->req && x->at ? BN_OK : BN_ERR_NOMEM;
}

static void blocks_scratch_free(blocks_scratch *x)
{
    free(x->into);
    free(x->req);
    free(x->at);
}

/* Per variable: this rank's plane to the ranks that receive, and from
 * each other rank its blocks straight to their places (an indexed type
 * of whole blocks); a plane at a time, so the sender holds one more
 * variable's values, not all. */
static void blocks_exchange(const bn_comm *c, int root, const double *send, size_t n, size_t cells, int nv,
                            const size_t *where, double *const *dest, const int *cnt, const int *disp, double *plane,
                            blocks_scratch *x)
{
    const int P = c->size, me = c->rank, here = root < 0 || root == me;
    MPI_Datatype block;
    MPI_Type_contiguous((int)cells, MPI_DOUBLE, &block);
    MPI_Type_commit(&block);
    for (int r = 0; r < P; r++) {
        x->into[r] = MPI_DATATYPE_NULL;
        if (!here || r == me || cnt[r] == 0) continue;
        for (int i = 0; i < cnt[r]; i++)
            x->at[i] = (MPI_Aint)(where[(size_t)disp[r] + (size_t)i] * cells * sizeof(double));
        MPI_Type_create_hindexed_block(cnt[r], 1, x->at, block, &x->into[r]);
        MPI_Type_commit(&x->into[r]);
    }
    for (int k = 0; k < nv; k++) {
        int m = 0;
        for (int r = 0; r < P; r++)
            if (x->into[r] != MPI_DATATYPE_NULL) MPI_Irecv(dest[k], 1, x->into[r], r, k, c->mpi, &x->req[m++]);
        if (n) plane_of(send, n * cells, nv, k, plane);
        for (int r = 0; n && r < P; r++)
            if (r != me && (root < 0 || r == root)) MPI_Isend(plane, (int)n, block, r, k, c->mpi, &x->req[m++]);
        MPI_Waitall(m, x->req, MPI_STATUSES_IGNORE);
    }
    for (int r = 0; r < P; r++)
        if (x->into[r] != MPI_DATATYPE_NULL) MPI_Type_free(&x->into[r]);
    MPI_Type_free(&block);
}
#endif

bn_status bn_comm_gather_blocks(const bn_comm *c, int root, const double *send, size_t n, size_t cells, int nv,
                                const size_t *where, double *const *dest)
{
    if (nv < 1 || nv > 8 || cells == 0 || cells > (size_t)INT_MAX)
        return bn_comm_agree(c, bn_fail(BN_ERR_ARGUMENT, "gathering blocks: %d values of %zu cells a block", nv,
                                        cells));
    if (root >= bn_comm_size(c)) /* no rank would take the values */
        return bn_comm_agree(c, bn_fail(BN_ERR_ARGUMENT, "gathering blocks to rank %d of %d", root, bn_comm_size(c)));
    if (!multi(c)) {
        place_own(send, n, cells, nv, where, dest);
        return BN_OK;
    }
#ifdef BANYAN_HAVE_MPI
    const int P = c->size, here = root < 0 || root == c->rank;
    uint64_t mine = n, *all = bn_alloc_array((size_t)P, sizeof *all, "the blocks' counts");
    int *cnt = bn_alloc_array(2 * (size_t)P, sizeof *cnt, "the blocks' counts");
    size_t *num = bn_alloc_array((size_t)P, sizeof *num, "the blocks' counts");
    double *plane = bn_alloc_array(n ? n * cells : 1, sizeof *plane, "a variable's values to send");
    blocks_scratch x = {NULL, NULL, NULL};
    bn_status s = bn_comm_agree(c, all && cnt && num && plane ? BN_OK : BN_ERR_NOMEM);
    if (s == BN_OK) {
        MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, c->mpi);
        for (int r = 0; r < P; r++) num[r] = (size_t)all[r];
        s = int_counts(num, P, cnt, cnt + P, "gathering blocks");
        if (s == BN_OK) s = blocks_scratch_make(&x, P, cnt);
        s = bn_comm_agree(c, s);
    }
    if (s == BN_OK) {
        for (int r = 0; here && r < P; r++) /* the received blocks' (place_own's threads fault the own ones') */
            if (r != c->rank) map_pages(dest, nv, where + cnt[P + r], (size_t)cnt[r], cells);
        if (here) place_own(send, n, cells, nv, where + cnt[P + c->rank], dest);
        blocks_exchange(c, root, send, n, cells, nv, where, dest, cnt, cnt + P, plane, &x);
    }
    blocks_scratch_free(&x);
    free(all);
    free(cnt);
    free(num);
    free(plane);
    return s;
#else
    (void)root;
    return BN_ERR_INTERNAL;
#endif
}

/* Sums in rank order from every rank's values (the same bits whatever
 * MPI's reduction order). */
static bn_status ordered_sum(const bn_comm *c, double *v, int n)
{
    void *all = NULL;
    size_t total = 0;
    BN_TRY(bn_comm_gather(c, -1, v, (size_t)n, sizeof *v, &all, &total, NULL));
    const double *a = all;
    for (int k = 0; k < n; k++) {
        double s = 0.0;
        for (int r = 0; r < c->size; r++) s += a[(size_t)r * (size_t)n + (size_t)k];
        v[k] = s;
    }
    free(all);
    return BN_OK;
}

bn_status bn_comm_allreduce(const bn_comm *c, double *v, int n, bn_reduce op)
{
    if (!multi(c) || n <= 0) return BN_OK;
    if (op == BN_REDUCE_SUM) return ordered_sum(c, v, n);
#ifdef BANYAN_HAVE_MPI
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, op == BN_REDUCE_MIN ? MPI_MIN : MPI_MAX, c->mpi);
#endif
    return BN_OK;
}

/* The per-type shares as 7 numbers each, after the 12 of the totals. */
enum { REDUCE_TOTALS = 12, REDUCE_PART = 7, REDUCE_ALL = REDUCE_TOTALS + REDUCE_PART * BN_PART_TYPES };

static void pack_part(const bn_component_energies *c, double *v)
{
    v[0] = c->count, v[1] = c->mass, v[2] = c->kinetic, v[3] = c->potential;
    for (int k = 0; k < 3; k++) v[4 + k] = c->angular_momentum[k];
}

static void unpack_part(const double *v, bn_component_energies *c)
{
    c->count = v[0], c->mass = v[1], c->kinetic = v[2], c->potential = v[3];
    for (int k = 0; k < 3; k++) c->angular_momentum[k] = v[4 + k];
}

bn_status bn_comm_reduce_energies(const bn_comm *c, double mass, bn_energies *e)
{
    if (bn_comm_size(c) <= 1) return BN_OK;
    double v[REDUCE_ALL] = {e->kinetic, e->potential, mass};
    for (int k = 0; k < 3; k++) {
        v[3 + k] = e->momentum[k];
        v[6 + k] = e->angular_momentum[k];
        v[9 + k] = e->com[k] * mass; /* the rank's com is its first moment over its mass */
    }
    for (int t = 0; t < BN_PART_TYPES; t++) pack_part(&e->part[t], v + REDUCE_TOTALS + REDUCE_PART * t);
    BN_TRY(bn_comm_allreduce(c, v, REDUCE_ALL, BN_REDUCE_SUM));
    e->kinetic = v[0];
    e->potential = v[1];
    for (int k = 0; k < 3; k++) {
        e->momentum[k] = v[3 + k];
        e->angular_momentum[k] = v[6 + k];
        e->com[k] = v[2] > 0 ? v[9 + k] / v[2] : 0;
    }
    for (int t = 0; t < BN_PART_TYPES; t++) unpack_part(v + REDUCE_TOTALS + REDUCE_PART * t, &e->part[t]);
    e->total = e->kinetic + e->potential;
    return BN_OK;
}

bn_status bn_comm_reduce_box(const bn_comm *c, double lo[3], double hi[3])
{
    BN_TRY(bn_comm_allreduce(c, lo, 3, BN_REDUCE_MIN));
    return bn_comm_allreduce(c, hi, 3, BN_REDUCE_MAX);
}

#ifdef BANYAN_HAVE_MPI
/* Record counts and displacements as MPI's ints: fails (on this rank)
 * beyond INT_MAX records. */
static bn_status int_counts(const size_t *n, int P, int *cnt, int *disp, const char *what)
{
    size_t at = 0;
    for (int r = 0; r < P; r++) {
        if (n[r] > (size_t)INT_MAX || at > (size_t)INT_MAX)
            return bn_fail(BN_ERR_UNSUPPORTED, "%s: %zu records at offset %zu for rank %d: at most %d in one exchange",
                           what, n[r], at, r, INT_MAX);
        cnt[r] = (int)n[r];
        disp[r] = (int)at;
        at += n[r];
    }
    return BN_OK;
}
#endif

bn_status bn_comm_alltoallv(const bn_comm *c, const void *send, const size_t *send_counts, size_t rec_size,
                            void **out, size_t *recv_counts, size_t *total)
{
    *out = NULL;
    *total = 0;
    if (!multi(c)) return gather_self(send, send_counts[0], rec_size, out, total, recv_counts);
#ifdef BANYAN_HAVE_MPI
    const int P = c->size;
    uint64_t *sc = bn_alloc((size_t)P * sizeof *sc, "exchange counts"), *rc = bn_alloc((size_t)P * sizeof *rc, "exchange counts");
    int *si = bn_alloc(4 * (size_t)P * sizeof *si, "exchange counts");
    bn_status s = sc && rc && si ? BN_OK : BN_ERR_NOMEM;
    if ((s = bn_comm_agree(c, s)) != BN_OK) goto done;
    for (int r = 0; r < P; r++) sc[r] = send_counts[r];
    MPI_Alltoall(sc, 1, MPI_UINT64_T, rc, 1, MPI_UINT64_T, c->mpi);
    size_t n_in = 0;
    for (int r = 0; r < P; r++) {
        recv_counts[r] = (size_t)rc[r];
        n_in += recv_counts[r];
    }
    s = int_counts(send_counts, P, si, si + P, "sending particles");
    if (s == BN_OK) s = int_counts(recv_counts, P, si + 2 * P, si + 3 * P, "receiving particles");
    void *o = NULL;
    if (s == BN_OK && !(o = bn_alloc(n_in * rec_size + 1, "received records"))) s = BN_ERR_NOMEM;
    if ((s = bn_comm_agree(c, s)) != BN_OK) {
        free(o);
        goto done;
    }
    MPI_Datatype rec;
    MPI_Type_contiguous((int)rec_size, MPI_BYTE, &rec);
    MPI_Type_commit(&rec);
    MPI_Alltoallv(send, si, si + P, rec, o, si + 2 * P, si + 3 * P, rec, c->mpi);
    MPI_Type_free(&rec);
    *out = o;
    *total = n_in;
done:
    free(sc);
    free(rc);
    free(si);
    return s;
#else
    return BN_ERR_INTERNAL;
#endif
}

int bn_comm_cuda_aware(const bn_comm *c)
{
#if defined(BANYAN_HAVE_MPI) && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return multi(c) && MPIX_Query_cuda_support() == 1 && getenv("BANYAN_MPI_DEVICE_BUFFERS") != NULL;
#else
    (void)c;
    return 0;
#endif
}

bn_status bn_comm_counts(const bn_comm *c, const size_t *send_counts, size_t *recv_counts)
{
    if (!multi(c)) {
        recv_counts[0] = send_counts[0];
        return BN_OK;
    }
#ifdef BANYAN_HAVE_MPI
    const int P = c->size;
    uint64_t *sc = bn_alloc(2 * (size_t)P * sizeof *sc, "exchange counts");
    BN_TRY(bn_comm_agree(c, sc ? BN_OK : BN_ERR_NOMEM));
    for (int r = 0; r < P; r++) sc[r] = send_counts[r];
    MPI_Alltoall(sc, 1, MPI_UINT64_T, sc + P, 1, MPI_UINT64_T, c->mpi);
    for (int r = 0; r < P; r++) recv_counts[r] = (size_t)sc[P + r];
    free(sc);
    return BN_OK;
#else
    return BN_ERR_INTERNAL;
#endif
}

#ifdef BANYAN_HAVE_MPI
/* Counts and displacements as MPI's ints (int_counts' bound). */
static bn_status int_placed(const size_t *n, const size_t *at, int P, int *cnt, int *disp, const char *what)
{
    for (int r = 0; r < P; r++) {
        if (n[r] > (size_t)INT_MAX || at[r] > (size_t)INT_MAX)
            return bn_fail(BN_ERR_UNSUPPORTED, "%s: %zu records at offset %zu for rank %d: at most %d in one exchange",
                           what, n[r], at[r], r, INT_MAX);
        cnt[r] = (int)n[r];
        disp[r] = (int)at[r];
    }
    return BN_OK;
}
#endif

bn_status bn_comm_alltoallv_placed(const bn_comm *c, const void *send, const size_t *send_counts,
                                   const size_t *send_at, size_t rec_size, void *recv, const size_t *recv_counts,
                                   const size_t *recv_at)
{
    if (!multi(c)) {
        if (send_counts[0]) memmove((char *)recv + recv_at[0] * rec_size, (const char *)send + send_at[0] * rec_size,
                                    send_counts[0] * rec_size);
        return BN_OK;
    }
#ifdef BANYAN_HAVE_MPI
    const int P = c->size;
    int *si = bn_alloc(4 * (size_t)P * sizeof *si, "exchange counts");
    bn_status s = si ? BN_OK : BN_ERR_NOMEM;
    if (s == BN_OK) s = int_placed(send_counts, send_at, P, si, si + P, "sending records");
    if (s == BN_OK) s = int_placed(recv_counts, recv_at, P, si + 2 * P, si + 3 * P, "receiving records");
    if ((s = bn_comm_agree(c, s)) == BN_OK) {
        MPI_Datatype rec;
        MPI_Type_contiguous((int)rec_size, MPI_BYTE, &rec);
        MPI_Type_commit(&rec);
        MPI_Alltoallv(send, si, si + P, rec, recv, si + 2 * P, si + 3 * P, rec, c->mpi);
        MPI_Type_free(&rec);
    }
    free(si);
    return s;
#else
    (void)rec_size;
    (void)recv_counts;
    return BN_ERR_INTERNAL;
#endif
}

/* ---- the non-blocking exchange ---- */

struct bn_comm_pending {
    void *send, *out;
    size_t total;
#ifdef BANYAN_HAVE_MPI
    int *si; /* send counts, displacements, receive counts, displacements */
    MPI_Datatype rec;
    MPI_Request req;
#endif
};

static void pending_free(bn_comm_pending *x)
{
    if (!x) return;
    free(x->send);
    free(x->out);
#ifdef BANYAN_HAVE_MPI
    free(x->si);
#endif
    free(x);
}

bn_status bn_comm_alltoallv_start(const bn_comm *c, void *send, const size_t *send_counts, size_t rec_size,
                                  size_t *recv_counts, bn_comm_pending **pending)
{
    *pending = NULL;
    bn_comm_pending *x = bn_calloc(1, sizeof *x, "pending exchange");
    if (x) x->send = send;
    else free(send);
    const bn_status ok = bn_comm_agree(c, x ? BN_OK : BN_ERR_NOMEM);
    if (ok != BN_OK) { /* another rank's allocation failed: this one's goes too */
        pending_free(x);
        return ok;
    }
    if (!multi(c)) { /* one rank: its own records, at once */
        const bn_status s = gather_self(send, send_counts[0], rec_size, &x->out, &x->total, recv_counts);
        if (s != BN_OK) pending_free(x);
        else *pending = x;
        return s;
    }
#ifdef BANYAN_HAVE_MPI
    const int P = c->size;
    uint64_t *sc = bn_alloc((size_t)P * sizeof *sc, "exchange counts"), *rc = bn_alloc((size_t)P * sizeof *rc, "exchange counts");
    x->si = bn_alloc(4 * (size_t)P * sizeof *x->si, "exchange counts");
    bn_status s = bn_comm_agree(c, sc && rc && x->si ? BN_OK : BN_ERR_NOMEM);
    if (s == BN_OK) {
        for (int r = 0; r < P; r++) sc[r] = send_counts[r];
        MPI_Alltoall(sc, 1, MPI_UINT64_T, rc, 1, MPI_UINT64_T, c->mpi);
        for (int r = 0; r < P; r++) x->total += recv_counts[r] = (size_t)rc[r];
        s = int_counts(send_counts, P, x->si, x->si + P, "sending records");
        if (s == BN_OK) s = int_counts(recv_counts, P, x->si + 2 * P, x->si + 3 * P, "receiving records");
        if (s == BN_OK && !(x->out = bn_alloc(x->total * rec_size + 1, "received records"))) s = BN_ERR_NOMEM;
        s = bn_comm_agree(c, s);
    }
    free(sc);
    free(rc);
    if (s != BN_OK) {
        pending_free(x);
        return s;
    }
    MPI_Type_contiguous((int)rec_size, MPI_BYTE, &x->rec);
    MPI_Type_commit(&x->rec);
    MPI_Ialltoallv(x->send, x->si, x->si + P, x->rec, x->out, x->si + 2 * P, x->si + 3 * P, x->rec, c->mpi, &x->req);
    *pending = x;
    return BN_OK;
#else
    pending_free(x);
    return BN_ERR_INTERNAL;
#endif
}

bn_status bn_comm_alltoallv_wait(const bn_comm *c, bn_comm_pending *x, void **out, size_t *total)
{
    *out = NULL;
    *total = 0;
    if (!x) return bn_fail(BN_ERR_INTERNAL, "no pending exchange");
#ifdef BANYAN_HAVE_MPI
    if (multi(c)) {
        MPI_Wait(&x->req, MPI_STATUS_IGNORE);
        MPI_Type_free(&x->rec);
    }
#else
    (void)c;
#endif
    *out = x->out;
    *total = x->total;
    x->out = NULL;
    pending_free(x);
    return BN_OK;
}
