/*
 * The exchange of locally essential trees between devices (let_gpu.h):
 * the target boxes made on the device and gathered (a few hundred per
 * rank, through MPI), the LETs packed on the device, their sizes through
 * MPI, the messages themselves through the link (let_link_cuda.cu), and
 * each received message checked on the device before anything walks it.
 */
#include <cub/cub.cuh>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/cuda_check.h"
extern "C" {
#include "core/timer.h"
#include "core/trace.h"
}
#include "parallel/let_gpu.h"

namespace {
const int kCellWords = (int)(sizeof(bn_walk_cell) / 8);

/* Words of a message of nc cells and nb bodies. */
size_t message_words(long nc, long nb) { return 2 + (size_t)nc * (kCellWords + 6) + 4 * (size_t)nb; }

/* A size record, one per receiver: words, cells, bodies. */
struct size_rec {
    uint64_t words, cells, bodies;
};

/* The messages for every other rank, packed on the device (out[d]; none
 * for this rank, a receiver without boxes, or lt NULL). */
bn_status pack_for_all(const bn_comm *c, const bn_gpu_let_tree *lt, const double *boxes, const size_t *box_count,
                       bn_gpu_let_msg *out)
{
    const int P = bn_comm_size(c), me = bn_comm_rank(c);
    size_t first = 0;
    bn_status s = BN_OK;
    for (int d = 0; d < P; first += box_count[d], d++)
        if (s == BN_OK && lt && d != me && box_count[d] > 0)
            s = bn_gpu_let_pack_device(lt, boxes + BN_LET_BOX * first, (int)box_count[d], out + d);
    return bn_comm_agree(c, s);
}

/* Every sender's sizes, and a device buffer for each message (got[q]).
 * A size that does not add up is refused before anything is made. */
bn_status make_receivers(const bn_comm *c, const bn_gpu_let_msg *out, bn_gpu_let_msg *got, cudaStream_t s)
{
    const int P = bn_comm_size(c);
    size_rec *mine = (size_rec *)bn_calloc((size_t)P, sizeof *mine, "the exchange's sizes");
    size_t *ones = (size_t *)bn_alloc_array((size_t)P, sizeof *ones, "the exchange's sizes"), total = 0;
    bn_status r = bn_comm_agree(c, mine && ones ? BN_OK : BN_ERR_NOMEM);
    for (int d = 0; r == BN_OK && d < P; d++) {
        mine[d] = {out[d].words, (uint64_t)out[d].n_cells, (uint64_t)out[d].n_bodies};
        ones[d] = 1;
    }
    void *in = NULL;
    size_t *recv_counts = (size_t *)bn_alloc_array((size_t)P, sizeof *recv_counts, "the exchange's sizes");
    if (r == BN_OK) r = bn_comm_agree(c, recv_counts ? BN_OK : BN_ERR_NOMEM);
    if (r == BN_OK) r = bn_comm_alltoallv(c, mine, ones, sizeof *mine, &in, recv_counts, &total);
    const size_rec *got_size = (const size_rec *)in;
    for (int q = 0; r == BN_OK && q < P; q++) {
        const size_rec z = got_size[q];
        if (z.words == 0) continue;
        if (z.cells > INT_MAX || z.bodies > INT_MAX || z.words != message_words((long)z.cells, (long)z.bodies))
            r = bn_fail(BN_ERR_INTERNAL, "locally essential tree from rank %d: %llu words for %llu cells and %llu bodies",
                        q, (unsigned long long)z.words, (unsigned long long)z.cells, (unsigned long long)z.bodies);
        else
            r = bn_cuda_dev_alloc(&got[q].w, (size_t)z.words, "a received locally essential tree", s);
        got[q].words = (size_t)z.words, got[q].n_cells = (long)z.cells, got[q].n_bodies = (long)z.bodies;
    }
    free(in);
    free(mine);
    free(ones);
    free(recv_counts);
    return bn_comm_agree(c, r);
}

void count_moved(int P, const bn_gpu_let_msg *out, const bn_gpu_let_msg *got, bn_let_stats *x)
{
    for (int d = 0; x && d < P; d++) {
        x->cells_sent += (size_t)out[d].n_cells;
        x->bodies_sent += (size_t)out[d].n_bodies;
        x->cells_received += (size_t)got[d].n_cells;
        x->bodies_received += (size_t)got[d].n_bodies;
    }
}
} // namespace

void bn_gpu_let_msgs_free(bn_gpu_let_msg *m, int n, cudaStream_t s)
{
    for (int i = 0; m && i < n; i++) {
        bn_cuda_free(m[i].w, s);
        memset(m + i, 0, sizeof *m);
    }
}

bn_status bn_gpu_let_exchange(const bn_comm *c, bn_gpu_let_link *link, const bn_gpu_let_tree *lt,
                                         cudaStream_t s, bn_gpu_let_msg *got, bn_let_stats *x)
{
    const double t0 = bn_wall_seconds();
    double t = t0;
    const int P = bn_comm_size(c);
    memset(got, 0, (size_t)P * sizeof *got);
    double *box = NULL;
    size_t nbox = 0, n_all = 0;
    void *boxes = NULL;
    size_t *box_count = (size_t *)bn_calloc((size_t)P, sizeof *box_count, "target box counts");
    bn_gpu_let_msg *out = (bn_gpu_let_msg *)bn_calloc((size_t)P, sizeof *out, "messages to send");
    bn_status r = !box_count || !out ? BN_ERR_NOMEM : lt ? bn_gpu_let_boxes(lt, &box, &nbox) : BN_OK;
    bn_trace_stage("exchange: target boxes", &t);
    if ((r = bn_comm_agree(c, r)) == BN_OK)
        r = bn_comm_gather(c, -1, box, nbox, BN_LET_BOX * sizeof *box, &boxes, &n_all, box_count);
    free(box);
    bn_trace_stage("exchange: boxes gathered", &t);
    if (r == BN_OK) r = pack_for_all(c, lt, (const double *)boxes, box_count, out);
    free(boxes);
    bn_trace_stage("exchange: trees packed", &t);
    if (r == BN_OK) r = make_receivers(c, out, got, s);
    if (r == BN_OK) r = bn_gpu_let_link_send(c, link, out, got, s);
    bn_trace_stage(link && bn_gpu_let_link_kind(link)[0] == 'n' ? "exchange: trees sent (nccl, queued)"
                                                                : "exchange: trees sent (host)",
                   &t);
    if (r == BN_OK) count_moved(P, out, got, x);
    bn_gpu_let_msgs_free(out, out ? P : 0, s); /* stream-ordered: after the sends */
    free(out);
    free(box_count);
    if (r != BN_OK) bn_gpu_let_msgs_free(got, P, s);
    if (x) x->t_exchange += bn_wall_seconds() - t0;
    return r;
}

/* ---- the receiver's checks ---- */

namespace {
const int kThreads = 256;
int blocks_for(long n) { return (int)((n + kThreads - 1) / kThreads < 65535 * 16 ? (n + kThreads - 1) / kThreads : 65535 * 16); }

/* Children per cell (the scan's input; a bad count clamped: the check
 * refuses it anyway). */
__global__ void child_counts(const bn_walk_cell *cells, long nc, int *n)
{
    for (long c = blockIdx.x * (long)blockDim.x + threadIdx.x; c <= nc; c += (long)gridDim.x * blockDim.x)
        n[c] = c < nc ? min(max(cells[c].n_children, 0), 1 << 20) : 0;
}

__device__ bool finite_d(double v) { return isfinite(v); }

/* walk_remote.c's checks of cell c (child_at: the exclusive sum of the
 * children before it, so its children must begin at 1 + child_at[c]). */
__device__ bool cell_ok(const bn_walk_cell &w, const double *q, long c, long nc, long nb, const int *child_at)
{
    bool ok = w.n_children >= 0 && w.n_bodies >= 0 && w.first_body >= 0 && w.n_children <= (1 << 20);
    if (ok && w.n_children == 0) ok = (long)w.first_body + w.n_bodies <= nb;
    if (ok && w.n_children > 0) ok = w.first_child == 1 + child_at[c] && (long)w.first_child + w.n_children <= nc;
    ok = ok && finite_d(w.mass) && !isnan(w.r2) && finite_d(w.gml2) && w.gml2 >= 0 && !(w.r2 < 0 && w.gml2 != 0);
    for (int k = 0; k < 3; k++) ok = ok && finite_d(w.com[k]);
    for (int k = 0; k < 6; k++) ok = ok && finite_d(q[k]);
    return ok;
}

/* bad[0]: the first cell at fault (nc: the counts or the shape as a
 * whole), bad[1]: the first body; ULLONG_MAX where none is. */
__global__ void check_message(const uint64_t *msg, long nc, long nb, const int *child_at, unsigned long long *bad)
{
    const bn_walk_cell *cells = (const bn_walk_cell *)(msg + 2);
    const double *quad = (const double *)(msg + 2 + nc * kCellWords), *body = quad + 6 * nc;
    const long n = nc > nb ? nc : nb;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        if (i == 0 && (msg[0] != (uint64_t)nc || msg[1] != (uint64_t)nb || child_at[nc] != nc - 1))
            atomicMin(bad, (unsigned long long)nc);
        if (i < nc && !cell_ok(cells[i], quad + 6 * i, i, nc, nb, child_at)) atomicMin(bad, (unsigned long long)i);
        if (i < nb && !(finite_d(body[i]) && finite_d(body[nb + i]) && finite_d(body[2 * nb + i]) &&
                        finite_d(body[3 * nb + i])))
            atomicMin(bad + 1, (unsigned long long)i);
    }
}

bn_status check(const bn_gpu_let_msg *m, cudaStream_t s, int **child_at, unsigned long long **bad, void **tmp)
{
    const long nc = m->n_cells, nb = m->n_bodies;
    BN_TRY(bn_cuda_dev_alloc(child_at, (size_t)nc + 1, "received tree check", s));
    BN_TRY(bn_cuda_dev_alloc(bad, 2, "received tree check", s));
    BN_CUDA_CHECK(cudaMemsetAsync(*bad, 0xff, 2 * sizeof(unsigned long long), s));
    child_counts<<<blocks_for(nc + 1), kThreads, 0, s>>>((const bn_walk_cell *)(m->w + 2), nc, *child_at);
    BN_CUDA_LAUNCH_CHECK();
    size_t bytes = 0;
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, bytes, *child_at, *child_at, (int)nc + 1, s));
    BN_TRY(bn_cuda_alloc(tmp, bytes, "received tree check (scan)", s));
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(*tmp, bytes, *child_at, *child_at, (int)nc + 1, s));
    check_message<<<blocks_for(nc > nb ? nc : nb), kThreads, 0, s>>>(m->w, nc, nb, *child_at, *bad);
    BN_CUDA_LAUNCH_CHECK();
    unsigned long long h[2];
    BN_TRY(bn_cuda_read(h, *bad, sizeof h, "received tree check", s));
    if (h[0] == (unsigned long long)nc)
        return bn_fail(BN_ERR_INTERNAL, "received tree: its counts (%ld cells, %ld bodies) or its shape do not add up",
                       nc, nb);
    if (h[0] != ULLONG_MAX)
        return bn_fail(BN_ERR_INTERNAL, "received tree: cell %llu has links or moments the walk cannot take", h[0]);
    if (h[1] != ULLONG_MAX)
        return bn_fail(BN_ERR_INTERNAL, "received tree: body %llu has a position or mass that is not finite", h[1]);
    return BN_OK;
}
} // namespace

bn_status bn_gpu_let_check(const bn_gpu_let_msg *m, cudaStream_t s)
{
    if (!m->w || m->n_cells <= 0) return m->n_cells == 0 && m->n_bodies == 0 ? BN_OK
                                                                             : bn_fail(BN_ERR_INTERNAL, "received tree: bodies without cells");
    if (m->n_cells >= INT_MAX || m->words != message_words(m->n_cells, m->n_bodies))
        return bn_fail(BN_ERR_INTERNAL, "received tree: %zu words for %ld cells and %ld bodies", m->words, m->n_cells,
                       m->n_bodies);
    int *child_at = NULL;
    unsigned long long *bad = NULL;
    void *tmp = NULL;
    const bn_status r = check(m, s, &child_at, &bad, &tmp);
    bn_cuda_free(child_at, s);
    bn_cuda_free(bad, s);
    bn_cuda_free(tmp, s);
    return r;
}
