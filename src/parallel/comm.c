/* The run's processes: see banyan.h (bn_comm) and parallel/comm.h. With
 * MPI, started by a launcher: MPI_COMM_WORLD; otherwise one process, and
 * each collective is a copy. */
#include "parallel/comm.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#ifdef BANYAN_HAVE_MPI
#include <mpi.h>
#endif

struct bn_comm {
    int rank, size;
    int owns_mpi; /* this communicator initialised MPI */
#ifdef BANYAN_HAVE_MPI
    MPI_Comm mpi; /* MPI_COMM_NULL: this process alone */
#endif
};

#ifdef BANYAN_HAVE_MPI
static int live_owners; /* communicators that initialised MPI, not yet freed */

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
            c->owns_mpi = 1;
            live_owners++;
        }
        c->mpi = MPI_COMM_WORLD;
        MPI_Comm_rank(c->mpi, &c->rank);
        MPI_Comm_size(c->mpi, &c->size);
    }
#endif
    *out = c;
    return BN_OK;
}

void bn_comm_free(bn_comm *c)
{
    if (!c) return;
#ifdef BANYAN_HAVE_MPI
    if (c->owns_mpi && --live_owners == 0) MPI_Finalize();
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

bn_status bn_comm_allgather(const bn_comm *c, const void *send, size_t bytes, void **out, size_t *total,
                            size_t *counts)
{
    *out = NULL;
    *total = 0;
    if (!multi(c)) {
        void *o = bn_alloc(bytes ? bytes : 1, "gathered data");
        if (!o) return BN_ERR_NOMEM;
        if (bytes) memcpy(o, send, bytes);
        *out = o;
        *total = bytes;
        if (counts) counts[0] = bytes;
        return BN_OK;
    }
#ifdef BANYAN_HAVE_MPI
    const int P = c->size;
    uint64_t mine = bytes, *all = bn_alloc((size_t)P * sizeof *all, "gather counts");
    int *cnt = bn_alloc((size_t)P * sizeof *cnt, "gather counts"), *disp = bn_alloc((size_t)P * sizeof *disp, "gather counts");
    bn_status s = bn_comm_agree(c, all && cnt && disp ? BN_OK : BN_ERR_NOMEM);
    if (s != BN_OK) {
        free(all);
        free(cnt);
        free(disp);
        return s;
    }
    MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, c->mpi);
    uint64_t sum = 0;
    for (int r = 0; r < P; r++) sum += all[r];
    if (sum > (uint64_t)INT_MAX)
        s = bn_fail(BN_ERR_UNSUPPORTED, "gathering %llu bytes from %d ranks: at most %d in one gather",
                    (unsigned long long)sum, P, INT_MAX);
    for (int r = 0; s == BN_OK && r < P; r++) {
        cnt[r] = (int)all[r];
        disp[r] = r ? disp[r - 1] + cnt[r - 1] : 0;
        if (counts) counts[r] = (size_t)all[r];
    }
    void *o = s == BN_OK ? bn_alloc(sum ? (size_t)sum : 1, "gathered data") : NULL;
    if (s == BN_OK && !o) s = BN_ERR_NOMEM;
    s = bn_comm_agree(c, s);
    if (s == BN_OK) {
        MPI_Allgatherv(send, (int)bytes, MPI_BYTE, o, cnt, disp, MPI_BYTE, c->mpi);
        *out = o;
        *total = (size_t)sum;
    } else {
        free(o);
    }
    free(all);
    free(cnt);
    free(disp);
    return s;
#else
    return BN_ERR_INTERNAL;
#endif
}

/* Sums in rank order from every rank's values (the same bits whatever
 * MPI's reduction order). */
static bn_status ordered_sum(const bn_comm *c, double *v, int n)
{
    void *all = NULL;
    size_t total = 0;
    BN_TRY(bn_comm_allgather(c, v, (size_t)n * sizeof *v, &all, &total, NULL));
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

bn_status bn_comm_allreduce_size(const bn_comm *c, size_t *v, int n, bn_reduce op)
{
    if (!multi(c) || n <= 0) return BN_OK;
#ifdef BANYAN_HAVE_MPI
    uint64_t *u = bn_alloc((size_t)n * sizeof *u, "reduction");
    const bn_status s = bn_comm_agree(c, u ? BN_OK : BN_ERR_NOMEM);
    if (s != BN_OK) {
        free(u);
        return s;
    }
    for (int k = 0; k < n; k++) u[k] = v[k];
    MPI_Allreduce(MPI_IN_PLACE, u, n, MPI_UINT64_T, op == BN_REDUCE_MIN ? MPI_MIN : op == BN_REDUCE_MAX ? MPI_MAX : MPI_SUM,
                  c->mpi);
    for (int k = 0; k < n; k++) v[k] = (size_t)u[k];
    free(u);
#endif
    return BN_OK;
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
    if (!multi(c)) {
        const size_t bytes = send_counts[0] * rec_size;
        void *o = bn_alloc(bytes ? bytes : 1, "received records");
        if (!o) return BN_ERR_NOMEM;
        if (bytes) memcpy(o, send, bytes);
        recv_counts[0] = send_counts[0];
        *out = o;
        *total = send_counts[0];
        return BN_OK;
    }
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
