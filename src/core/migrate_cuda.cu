/*
 * The GPU backend's migration across ranks (backend.h's migrate()): after
 * a drift, the particles whose keys (in the last cut's cube and curve)
 * left this rank's part of the cut go to the ranks that own them; the
 * rest stay where they are on the device. Only the crossers move (a thin
 * shell at the cut: thousands where a re-balance would move every
 * particle), so that it runs at every step.
 *
 * Everything is on the device (sessions 21 and 24: the host's
 * bookkeeping took 73-99 ms a step on 4 GPUs, new arrays for the whole
 * set and the records through host memory 28 ms): one pass makes each
 * particle's key and owner and counts the leavers per owner; the
 * leavers, grouped by owner (a stable radix sort), are gathered into one
 * record each (crosser: state, id, mass, part type, bin, cost) and go
 * from device to device by the trees' link (NCCL, or pinned host buffers
 * and MPI where ranks share a GPU: let_gpu.h).
 *
 * Both orders keep their first keep = n - k places and are changed in
 * place: each leaver's place below keep takes a stayer from the tail
 * [keep, n) (the j-th such place, ascending, the j-th tail stayer), and
 * the received records follow from keep on, in the senders' rank order.
 * In key order that is all (the next build sorts by key); in the
 * uploaded order (the device's ids, masses, part types and costs) the
 * stayers that moved are renumbered in orig. An array copies only when
 * its room (bn_cuda_particle_room) is short of keep + r. The host copies
 * of ids and masses and the caller's mirror are left behind (host_stale):
 * a download or a re-balance brings them (bn_cuda_host_copies,
 * bn_cuda_mirror_ids).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
extern "C" {
#include "core/timer.h"
#include "core/trace.h"
#include "parallel/comm.h"
}
#include "core/backend_cuda_state.h"
extern "C" {
#include "core/particles_remake.h"
}
#include "parallel/domain_owner.h"
#include "parallel/let_gpu.h"
#include "tree/keys.h"

namespace {
const int kThreads = 256;
const int kSharedOwners = 2048; /* owners counted in shared memory up to this many ranks */

int blocks_for(size_t n) { return (int)((n + kThreads - 1) / kThreads); }

bn_status ok(cudaError_t e, const char *what) { return e == cudaSuccess ? BN_OK : bn_cuda_fail(e, what, __FILE__, __LINE__); }

/* Everything a crosser takes along, in one record and one message: its
 * state (key order's arrays), its fields of the uploaded order (id, mass,
 * part type, measured cost), its block-step bin, and own, its new rank. */
struct crosser {
    double pos[3], vel[3];
    float4 acc;
    uint64_t id;
    double mass;
    float cost; /* 0 without */
    int own;
    uint8_t type, bin; /* 1 and 0 without */
};
static_assert(sizeof(crosser) % sizeof(uint64_t) == 0, "crossers travel as 64-bit words");
const size_t kCrosserWords = sizeof(crosser) / sizeof(uint64_t);

/* The cut as the device reads it: its cube, curve and P + 1 split keys. */
struct cut_view {
    double lo[3], side;
    int hilbert, P;
    const uint64_t *split;
};

__device__ int owner_of(const cut_view &cut, double x, double y, double z)
{
    return bn_domain_owner(cut.split, cut.P, bn_key_of_point(cut.hilbert, x, y, z, cut.lo, 1.0 / cut.side));
}

/* Whether each particle leaves (its owner is not me), and the leavers per
 * owner (counts[P], zeroed before): one pass, nothing else written.
 * Hilbert keys through the state table in shared memory, as the build's
 * keys (keys_cuda.cu): the loop's turns made this pass compute bound (2 ms
 * for 2^25 particles on an H200, session 36). Grid-stride: a block makes
 * its table once for many particles. */
__global__ void leavers_kernel(const double *x, const double *y, const double *z, int n, cut_view cut, int me,
                               unsigned char *leave, int *counts)
{
    __shared__ int local[kSharedOwners];
    __shared__ uint16_t table[BN_KEY_HILBERT_TABLE];
    const bool shared = cut.P <= kSharedOwners;
    if (shared)
        for (int r = threadIdx.x; r < cut.P; r += blockDim.x) local[r] = 0;
    if (cut.hilbert)
        for (int e = threadIdx.x; e < BN_KEY_HILBERT_TABLE; e += blockDim.x)
            table[e] = bn_key_hilbert_entry(e >> 3, e & 7);
    __syncthreads();
    const double inv_size = 1.0 / cut.side;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const uint64_t key = bn_key_of_point_table(table, cut.hilbert, x[i], y[i], z[i], cut.lo, inv_size);
        const int a = bn_domain_owner(cut.split, cut.P, key);
        leave[i] = a != me;
        if (a != me) atomicAdd(shared ? &local[a] : &counts[a], 1);
    }
    if (!shared) return;
    __syncthreads();
    for (int r = threadIdx.x; r < cut.P; r += blockDim.x)
        if (local[r]) atomicAdd(&counts[r], local[r]);
}

/* The arrays of a set (key order of the device). */
struct dev_set {
    double *pos[3], *vel[3];
    float *mass;
    int *orig;
    float4 *acc;
    uint8_t *bin; /* block steps' bins (key order), or NULL */
};

/* The fields of the uploaded order (the device's copies; type and cost
 * may be NULL). */
struct up_set {
    uint64_t *id;
    double *mass;
    uint8_t *type;
    float *cost;
};

/* The set the device holds now. */
dev_set current_set(const bn_cuda_state *st)
{
    return dev_set{{st->pos[0], st->pos[1], st->pos[2]}, {st->vel[0], st->vel[1], st->vel[2]}, st->mass, st->orig,
                   st->acc, st->bin};
}

up_set current_uploaded(const bn_cuda_state *st) { return up_set{st->dev_id, st->dev_mass, st->type, st->cost}; }

/* The leavers' owners (the keys of the sort that groups them) and their
 * uploaded indices, in the device's order. */
__global__ void leaver_keys(const int *idx, int k, dev_set from, cut_view cut, int *owner, int *place)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= k) return;
    const int i = idx[j];
    owner[j] = owner_of(cut, from.pos[0][i], from.pos[1][i], from.pos[2][i]);
    place[j] = from.orig[i];
}

/* The leavers' records, grouped by owner (idx: sorted so, stably). */
__global__ void gather_leavers(const int *idx, const int *owner, int k, dev_set from, up_set up, crosser *rec)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= k) return;
    const int i = idx[j], o = from.orig[i];
    crosser c;
    for (int d = 0; d < 3; d++) c.pos[d] = from.pos[d][i], c.vel[d] = from.vel[d][i];
    c.acc = from.acc[i];
    c.id = up.id[o];
    c.mass = up.mass[o];
    c.cost = up.cost ? up.cost[o] : 0.f;
    c.own = owner[j];
    c.type = up.type ? up.type[o] : (uint8_t)1;
    c.bin = from.bin ? from.bin[i] : (uint8_t)0;
    rec[j] = c;
}

/* Part types of m records, added to (sign 1) or taken from (-1) tally. */
__global__ void tally_types(const crosser *rec, int m, int sign, int *tally)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < m && rec[j].type < BN_PART_TYPES) atomicAdd(&tally[rec[j].type], sign);
}

/* The tail [keep, keep + k) of an order: its leavers' places marked 0
 * (sorted: every leaver's index in that order, ascending). */
__global__ void mark_tail(const int *sorted, int k, int keep, unsigned char *stays)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < k && sorted[j] >= keep) stays[sorted[j] - keep] = 0;
}

/* The uploaded order's moves, in place: the j-th leaver's place below
 * keep (sorted ascending) takes the j-th stayer of the tail (tail: its
 * offsets from keep, *h of them, as many as those places); renumber[from
 * - keep] = to for the key order's orig. Reads only the tail, writes only
 * below keep. */
__global__ void uploaded_moves_kernel(const int *sorted, const int *tail, const int *h, int keep, int *renumber,
                                      up_set up)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= *h) return;
    const int to = sorted[j], from = keep + tail[j];
    renumber[tail[j]] = to;
    up.id[to] = up.id[from];
    up.mass[to] = up.mass[from];
    if (up.type) up.type[to] = up.type[from];
    if (up.cost) up.cost[to] = up.cost[from];
}

/* The key order's moves, in place, as the uploaded order's. */
__global__ void key_moves_kernel(const int *sorted, const int *tail, const int *h, int keep, dev_set set)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= *h) return;
    const int to = sorted[j], from = keep + tail[j];
    for (int d = 0; d < 3; d++) set.pos[d][to] = set.pos[d][from], set.vel[d][to] = set.vel[d][from];
    set.mass[to] = set.mass[from];
    set.acc[to] = set.acc[from];
    set.orig[to] = set.orig[from];
    if (set.bin) set.bin[to] = set.bin[from];
}

/* The stayers' uploaded indices after the uploaded order's moves. */
__global__ void renumber_kernel(int *orig, int keep, const int *renumber)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < keep && orig[i] >= keep) orig[i] = renumber[orig[i] - keep];
}

/* The received records to [keep, keep + r) of both orders (uploaded
 * index keep + j). */
__global__ void place_received(const crosser *rec, int r, int keep, dev_set to, up_set up)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= r) return;
    const crosser c = rec[j];
    const int at = keep + j;
    for (int d = 0; d < 3; d++) to.pos[d][at] = c.pos[d], to.vel[d][at] = c.vel[d];
    to.mass[at] = (float)c.mass;
    to.acc[at] = c.acc;
    to.orig[at] = at;
    if (to.bin) to.bin[at] = c.bin;
    up.id[at] = c.id;
    up.mass[at] = c.mass;
    if (up.type) up.type[at] = c.type;
    if (up.cost) up.cost[at] = c.cost;
}

/* Device scratch of one migration, freed together. */
struct scratch {
    uint64_t *split;
    int *counts;     /* P leavers per owner, then 2 selected counts, then the part types' tally */
    unsigned char *leave, *stays;
    int *leave_idx, *owner, *owner_sorted, *idx_sorted, *place, *place_sorted, *tail, *renumber;
    void *cub;
    size_t cub_bytes;
    crosser *rec, *got;
};

void scratch_free(scratch *x, cudaStream_t s)
{
    bn_cuda_free(x->split, s);
    bn_cuda_free(x->counts, s);
    bn_cuda_free(x->leave, s);
    bn_cuda_free(x->stays, s);
    bn_cuda_free(x->leave_idx, s);
    bn_cuda_free(x->owner, s);
    bn_cuda_free(x->owner_sorted, s);
    bn_cuda_free(x->idx_sorted, s);
    bn_cuda_free(x->place, s);
    bn_cuda_free(x->place_sorted, s);
    bn_cuda_free(x->tail, s);
    bn_cuda_free(x->renumber, s);
    bn_cuda_free(x->cub, s);
    bn_cuda_free(x->rec, s);
    bn_cuda_free(x->got, s);
    memset(x, 0, sizeof *x);
}

/* Where x->counts holds what, for P ranks. */
int *selected_counts(scratch *x, int P) { return x->counts + P; }
int *type_tally(scratch *x, int P) { return x->counts + P + 2; }

/* CUB's scratch of at least bytes. */
bn_status cub_room(scratch *x, size_t bytes, cudaStream_t s)
{
    if (bytes <= x->cub_bytes) return BN_OK;
    bn_cuda_free(x->cub, s);
    x->cub = NULL;
    x->cub_bytes = 0;
    BN_TRY(bn_cuda_dev_alloc((char **)&x->cub, bytes, "crossers: CUB scratch", s));
    x->cub_bytes = bytes;
    return BN_OK;
}

/* flags -> the indices flagged, in order; their count to *count (device). */
bn_status select_flagged(scratch *x, const unsigned char *flags, int n, int *out, int *count, cudaStream_t s)
{
    thrust::counting_iterator<int> iota(0);
    size_t bytes = 0;
    BN_TRY(ok(cub::DeviceSelect::Flagged(NULL, bytes, iota, flags, out, count, n, s), "crossers: select"));
    BN_TRY(cub_room(x, bytes, s));
    return ok(cub::DeviceSelect::Flagged(x->cub, bytes, iota, flags, out, count, n, s), "crossers: select");
}

/* Bits that hold the values 0 .. v. */
int bits_for(int v)
{
    int b = 1;
    while (b < 31 && (v >> b) != 0) b++;
    return b;
}

cut_view view_of(const bn_domain *cut, const scratch *x)
{
    cut_view v;
    memcpy(v.lo, cut->lo, sizeof v.lo);
    v.side = cut->side;
    v.hilbert = cut->curve == BN_CURVE_HILBERT;
    v.P = cut->nranks;
    v.split = x->split;
    return v;
}

/* Which particles leave, and send[P] of them to each rank (send[me] 0):
 * one pass and one read of P counts; *k leavers in all. */
bn_status find_leavers(bn_cuda_state *st, const bn_domain *cut, int me, scratch *x, size_t *send, int *k)
{
    const int n = st->n, P = cut->nranks;
    cudaStream_t s = st->s;
    *k = 0;
    memset(send, 0, (size_t)P * sizeof *send);
    BN_TRY(bn_cuda_dev_alloc(&x->split, (size_t)P + 1, "crossers: cut", s));
    BN_TRY(ok(cudaMemcpyAsync(x->split, cut->split, ((size_t)P + 1) * sizeof(uint64_t), cudaMemcpyHostToDevice, s),
              "crossers: cut"));
    BN_TRY(bn_cuda_dev_alloc(&x->counts, (size_t)P + 2 + BN_PART_TYPES, "crossers: counts", s));
    BN_TRY(ok(cudaMemsetAsync(x->counts, 0, ((size_t)P + 2 + BN_PART_TYPES) * sizeof(int), s), "crossers: counts"));
    if (n == 0) return BN_OK;
    BN_TRY(bn_cuda_dev_alloc(&x->leave, (size_t)n, "crossers: leavers", s));
    const int blocks = blocks_for((size_t)n) < 8192 ? blocks_for((size_t)n) : 8192; /* grid-stride beyond */
    leavers_kernel<<<blocks, kThreads, 0, s>>>(st->pos[0], st->pos[1], st->pos[2], n, view_of(cut, x), me, x->leave,
                                               x->counts);
    BN_TRY(ok(cudaGetLastError(), "crossers: owners"));
    int *c = (int *)bn_alloc((size_t)P * sizeof *c, "crossers: counts");
    if (!c) return BN_ERR_NOMEM;
    const bn_status r = bn_cuda_read(c, x->counts, (size_t)P * sizeof *c, "crossers: counts", s);
    for (int d = 0; r == BN_OK && d < P; d++) {
        send[d] = d == me ? 0 : (size_t)c[d];
        *k += d == me ? 0 : c[d];
    }
    free(c);
    return r;
}

/* The k leavers grouped by owner (a stable radix sort of their owners)
 * and gathered into records (x->rec); their indices ascending
 * (x->leave_idx) and uploaded indices in that order (x->place) stay for
 * the moves. */
bn_status pack_leavers(bn_cuda_state *st, const bn_domain *cut, scratch *x, int k)
{
    if (k == 0) return BN_OK;
    cudaStream_t s = st->s;
    const size_t m = (size_t)k;
    BN_TRY(bn_cuda_dev_alloc(&x->leave_idx, m, "crossers: leavers", s));
    BN_TRY(select_flagged(x, x->leave, st->n, x->leave_idx, selected_counts(x, cut->nranks), s));
    BN_TRY(bn_cuda_dev_alloc(&x->owner, m, "crossers: owners", s));
    BN_TRY(bn_cuda_dev_alloc(&x->owner_sorted, m, "crossers: owners", s));
    BN_TRY(bn_cuda_dev_alloc(&x->idx_sorted, m, "crossers: order", s));
    BN_TRY(bn_cuda_dev_alloc(&x->place, m, "crossers: places", s));
    BN_TRY(bn_cuda_dev_alloc(&x->rec, m, "crossers", s));
    leaver_keys<<<blocks_for(m), kThreads, 0, s>>>(x->leave_idx, k, current_set(st), view_of(cut, x), x->owner,
                                                   x->place);
    BN_TRY(ok(cudaGetLastError(), "crossers: owners"));
    const int bits = bits_for(cut->nranks - 1);
    size_t bytes = 0;
    BN_TRY(ok(cub::DeviceRadixSort::SortPairs(NULL, bytes, x->owner, x->owner_sorted, x->leave_idx, x->idx_sorted, k,
                                              0, bits, s),
              "crossers: grouping"));
    BN_TRY(cub_room(x, bytes, s));
    BN_TRY(ok(cub::DeviceRadixSort::SortPairs(x->cub, bytes, x->owner, x->owner_sorted, x->leave_idx, x->idx_sorted,
                                              k, 0, bits, s),
              "crossers: grouping"));
    gather_leavers<<<blocks_for(m), kThreads, 0, s>>>(x->idx_sorted, x->owner_sorted, k, current_set(st),
                                                      current_uploaded(st), x->rec);
    BN_TRY(ok(cudaGetLastError(), "crossers: gather"));
    tally_types<<<blocks_for(m), kThreads, 0, s>>>(x->rec, k, -1, type_tally(x, cut->nranks));
    return ok(cudaGetLastError(), "crossers: part types");
}

/* The records from device to device (the trees' link): send[d] to rank
 * d, in rank order; *r received into x->got, in the senders' rank order.
 * Collective and agreed. */
bn_status exchange_records(bn_cuda_state *st, scratch *x, const size_t *send, size_t *r)
{
    const bn_comm *c = st->comm;
    const int P = bn_comm_size(c);
    *r = 0;
    size_t *recv = (size_t *)bn_calloc((size_t)P, sizeof *recv, "crossers: counts");
    bn_gpu_let_msg *msg = (bn_gpu_let_msg *)bn_calloc(2 * (size_t)P, sizeof *msg, "crossers: messages");
    bn_status s = bn_comm_agree(c, recv && msg ? BN_OK : BN_ERR_NOMEM);
    if (s == BN_OK) s = bn_comm_counts(c, send, recv);
    for (int q = 0; s == BN_OK && q < P; q++) *r += recv[q];
    if (s == BN_OK && *r > 0) s = bn_cuda_dev_alloc(&x->got, *r, "crossers: received", st->s);
    s = bn_comm_agree(c, s);
    size_t out_at = 0, in_at = 0;
    for (int q = 0; s == BN_OK && q < P; q++) {
        msg[q].w = send[q] ? (uint64_t *)(x->rec + out_at) : NULL;
        msg[q].words = send[q] * kCrosserWords;
        msg[P + q].w = recv[q] ? (uint64_t *)(x->got + in_at) : NULL;
        msg[P + q].words = recv[q] * kCrosserWords;
        out_at += send[q];
        in_at += recv[q];
    }
    if (s == BN_OK) s = bn_gpu_let_link_send(c, st->let_link, msg, msg + P, st->s); /* agreed */
    free(recv);
    free(msg);
    return s;
}

/* The moves of one order after its leavers (sorted: their indices in
 * that order, ascending): the tail's stayers (x->tail, their count at
 * *h on the device) for the places below keep = n - k. */
bn_status tail_stayers(scratch *x, const int *sorted, int k, int keep, int *h, cudaStream_t s)
{
    BN_TRY(bn_cuda_dev_alloc(&x->stays, (size_t)k, "crossers: places", s));
    BN_TRY(ok(cudaMemsetAsync(x->stays, 1, (size_t)k, s), "crossers: places"));
    mark_tail<<<blocks_for((size_t)k), kThreads, 0, s>>>(sorted, k, keep, x->stays);
    BN_TRY(ok(cudaGetLastError(), "crossers: places"));
    return select_flagged(x, x->stays, k, x->tail, h, s);
}

/* Both orders without their k leavers, in place, in [0, keep). */
bn_status close_gaps(bn_cuda_state *st, scratch *x, int k)
{
    if (k == 0) return BN_OK;
    cudaStream_t s = st->s;
    const int n = st->n, keep = n - k, P = bn_comm_size(st->comm);
    const size_t m = (size_t)k;
    int *h = selected_counts(x, P) + 1;
    BN_TRY(bn_cuda_dev_alloc(&x->tail, m, "crossers: places", s));
    BN_TRY(bn_cuda_dev_alloc(&x->renumber, m, "crossers: places", s));
    /* the uploaded order: the leavers' places sorted */
    BN_TRY(bn_cuda_dev_alloc(&x->place_sorted, m, "crossers: places", s));
    size_t bytes = 0;
    const int bits = bits_for(n - 1);
    BN_TRY(ok(cub::DeviceRadixSort::SortKeys(NULL, bytes, x->place, x->place_sorted, k, 0, bits, s), "crossers: places"));
    BN_TRY(cub_room(x, bytes, s));
    BN_TRY(ok(cub::DeviceRadixSort::SortKeys(x->cub, bytes, x->place, x->place_sorted, k, 0, bits, s),
              "crossers: places"));
    BN_TRY(tail_stayers(x, x->place_sorted, k, keep, h, s));
    uploaded_moves_kernel<<<blocks_for(m), kThreads, 0, s>>>(x->place_sorted, x->tail, h, keep, x->renumber,
                                                             current_uploaded(st));
    BN_TRY(ok(cudaGetLastError(), "crossers: moves"));
    /* the key order: the leavers' indices came ascending */
    bn_cuda_free(x->stays, s);
    x->stays = NULL;
    BN_TRY(tail_stayers(x, x->leave_idx, k, keep, h, s));
    key_moves_kernel<<<blocks_for(m), kThreads, 0, s>>>(x->leave_idx, x->tail, h, keep, current_set(st));
    BN_TRY(ok(cudaGetLastError(), "crossers: moves"));
    if (keep > 0) renumber_kernel<<<blocks_for((size_t)keep), kThreads, 0, s>>>(st->orig, keep, x->renumber);
    return ok(cudaGetLastError(), "crossers: renumber");
}

/* *a with room for `need` elements where wanted: kept if it has it, else
 * a new one (bn_cuda_particle_room) holding the old one's first keep. */
template <typename T>
bn_status room_for(T **a, size_t need, int keep, bool wanted, const char *what, cudaStream_t s)
{
    if (!wanted || (*a && bn_cuda_alloc_bytes(*a) >= need * sizeof(T))) return BN_OK;
    T *grown = NULL;
    BN_TRY(bn_cuda_dev_alloc(&grown, bn_cuda_particle_room(need), what, s));
    if (*a && keep > 0) {
        const bn_status e = ok(cudaMemcpyAsync(grown, *a, (size_t)keep * sizeof(T), cudaMemcpyDeviceToDevice, s), what);
        if (e != BN_OK) {
            bn_cuda_free(grown, s);
            return e;
        }
    }
    bn_cuda_free(*a, s);
    *a = grown;
    return BN_OK;
}

/* Every particle array with room for keep + r (+1: none is of 0
 * elements), made where a rank had none (it held no particles); the body
 * array too, the build's spare for the accelerations. Bins and costs
 * exist on every rank or none (bn_cuda_migrate made them). */
bn_status make_room(bn_cuda_state *st, int keep, size_t r, int with_types)
{
    cudaStream_t s = st->s;
    const size_t need = (size_t)keep + r + 1;
    for (int d = 0; d < 3; d++) {
        BN_TRY(room_for(&st->pos[d], need, keep, true, "positions", s));
        BN_TRY(room_for(&st->vel[d], need, keep, true, "velocities", s));
    }
    BN_TRY(room_for(&st->mass, need, keep, true, "masses", s));
    BN_TRY(room_for(&st->orig, need, keep, true, "particle order", s));
    BN_TRY(room_for(&st->acc, need, keep, true, "accelerations", s));
    BN_TRY(room_for(&st->body, need, 0, true, "tree bodies", s));
    BN_TRY(room_for(&st->bin, need, keep, st->bin != NULL, "time bins", s));
    BN_TRY(room_for(&st->dev_id, need, keep, true, "ids", s));
    BN_TRY(room_for(&st->dev_mass, need, keep, true, "masses", s));
    BN_TRY(room_for(&st->type, need, keep, with_types != 0, "part types", s));
    return room_for(&st->cost, need, keep, st->cost != NULL, "particle costs", s);
}

/* The received records after the stayers; part types counted. */
bn_status place_arrivals(bn_cuda_state *st, scratch *x, int keep, size_t r)
{
    if (r == 0) return BN_OK;
    cudaStream_t s = st->s;
    place_received<<<blocks_for(r), kThreads, 0, s>>>(x->got, (int)r, keep, current_set(st), current_uploaded(st));
    BN_TRY(ok(cudaGetLastError(), "crossers: received"));
    tally_types<<<blocks_for(r), kThreads, 0, s>>>(x->got, (int)r, 1, type_tally(x, bn_comm_size(st->comm)));
    return ok(cudaGetLastError(), "crossers: part types");
}

/* The part types' counts after the moves (the tally's read waits for
 * every move). */
bn_status count_types(bn_cuda_state *st, scratch *x)
{
    int tally[BN_PART_TYPES];
    BN_TRY(bn_cuda_read(tally, type_tally(x, bn_comm_size(st->comm)), sizeof tally, "crossers: part types", st->s));
    for (int t = 0; t < BN_PART_TYPES; t++) st->type_count[t] += tally[t];
    return BN_OK;
}

/* The ids and masses on the device (the uploaded order), from the host
 * copies at the first migration after an upload; later ones keep them
 * there and leave the host copies behind (host_stale). */
bn_status device_ids(bn_cuda_state *st)
{
    if (st->dev_id) return BN_OK;
    const size_t n = (size_t)st->n;
    cudaStream_t s = st->s;
    uint64_t *id = NULL;
    double *mass = NULL; /* both or neither: a later migration takes them as made */
    bn_status e = bn_cuda_dev_alloc(&id, bn_cuda_particle_room(n), "ids", s);
    if (e == BN_OK) e = bn_cuda_dev_alloc(&mass, bn_cuda_particle_room(n), "masses", s);
    if (e == BN_OK && n > 0)
        e = ok(cudaMemcpyAsync(id, st->host_id, n * sizeof(uint64_t), cudaMemcpyHostToDevice, s), "ids up");
    if (e == BN_OK && n > 0)
        e = ok(cudaMemcpyAsync(mass, st->host_mass, n * sizeof(double), cudaMemcpyHostToDevice, s), "masses up");
    if (e != BN_OK) {
        bn_cuda_free(id, s);
        bn_cuda_free(mass, s);
        return e;
    }
    st->dev_id = id;
    st->dev_mass = mass;
    return BN_OK;
}

/* The mirror's count is the new set's (its contents are behind: the
 * simulation downloads them when it needs them), with a margin, so that
 * a rank that receives more than it sends does not copy it every step. */
bn_status mirror_resize(bn_particles *host, size_t n_new)
{
    if (!host) return BN_OK;
    host->n = n_new < host->n ? n_new : host->n; /* nothing of it is kept: its contents are stale */
    if (n_new > host->capacity) BN_TRY(bn_particles_remake(host, n_new + n_new / 16 + 1)); /* not copied */
    return bn_particles_resize(host, n_new);
}
} // namespace

namespace {
/* Part types wherever some rank has them (the re-balance's rule): a rank
 * without (all PartType1, or none at the upload) makes them, 1 each,
 * on the device and in the mirror, before typed particles arrive. */
bn_status agree_types(bn_cuda_state *st, bn_particles *host, int *with_types)
{
    double any = st->type || (host && host->type) ? 1.0 : 0.0;
    BN_TRY(bn_comm_allreduce(st->comm, &any, 1, BN_REDUCE_MAX));
    *with_types = any > 0;
    bn_status s = BN_OK;
    if (*with_types && !st->type && st->n > 0) {
        s = bn_cuda_dev_alloc(&st->type, bn_cuda_particle_room((size_t)st->n), "part types", st->s);
        if (s == BN_OK) s = ok(cudaMemsetAsync(st->type, 1, (size_t)st->n, st->s), "part types");
    }
    if (s == BN_OK && *with_types && host) s = bn_particles_ensure_types(host);
    return bn_comm_agree(st->comm, s);
}

/* What every rank must have before the move: bins and costs on every
 * rank or none (a rank without holds all its particles in bin 0 and has
 * measured nothing), the ids and masses on the device, the link. */
bn_status prepare(bn_cuda_state *st)
{
    const bn_comm *c = st->comm;
    double have[2] = {st->bin ? 1.0 : 0.0, st->cost ? 1.0 : 0.0};
    BN_TRY(bn_comm_allreduce(c, have, 2, BN_REDUCE_MAX));
    bn_status s = BN_OK;
    if (have[0] > 0 && !st->bin) {
        s = bn_cuda_dev_alloc(&st->bin, bn_cuda_particle_room((size_t)st->n + 1), "time bins", st->s);
        if (s == BN_OK) s = ok(cudaMemsetAsync(st->bin, 0, (size_t)st->n + 1, st->s), "time bins");
    }
    if (s == BN_OK && have[1] > 0 && !st->cost) {
        s = bn_cuda_dev_alloc(&st->cost, bn_cuda_particle_room((size_t)st->n + 1), "particle costs", st->s);
        if (s == BN_OK) s = ok(cudaMemsetAsync(st->cost, 0, ((size_t)st->n + 1) * sizeof(float), st->s), "particle costs");
    }
    if (s == BN_OK) s = device_ids(st);
    BN_TRY(bn_comm_agree(c, s)); /* every rank, whatever it made */
    if (!st->let_link) BN_TRY(bn_gpu_let_link_create(c, &st->let_link)); /* agreed */
    return BN_OK;
}

/* After the records arrived: both orders closed over the leavers, room
 * made, the arrivals placed, the part types counted; a rank neither
 * sending nor receiving keeps its set as it is. */
bn_status install(bn_cuda_state *st, bn_particles *host, scratch *x, int k, size_t r, int with_types)
{
    if (k == 0 && r == 0) return BN_OK;
    const int n_old = st->n, keep = n_old - k;
    double t = bn_wall_seconds(); /* BANYAN_GRAVITY_TRACE=1: where a rare long move goes */
    BN_TRY(close_gaps(st, x, k));
    BN_TRY(make_room(st, keep, r, with_types));
    bn_trace_stage("crossers: room (queued)", &t);
    BN_TRY(place_arrivals(st, x, keep, r));
    BN_TRY(count_types(st, x)); /* waits for the moves */
    bn_trace_stage("crossers: placed", &t);
    st->n = keep + (int)r;
    st->tree_valid = 0; /* another set: the next evaluation builds */
    st->host_stale = BN_STALE_IDS | BN_STALE_MASSES; /* the device's are the set's */
    BN_TRY(mirror_resize(host, (size_t)st->n));
    bn_trace_stage("crossers: mirror", &t);
    if (n_old == 0 && st->n > 0) BN_TRY(bn_cuda_new_scales(st)); /* an empty rank had unit scales */
    return BN_OK;
}
} // namespace

bn_status bn_cuda_migrate(void *p, bn_particles *host, const bn_domain *cut, bn_domain_stats *dst)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    const bn_comm *c = st->comm;
    const double t0 = bn_wall_seconds();
    memset(dst, 0, sizeof *dst);
    const int P = bn_comm_size(c), me = bn_comm_rank(c);
    bn_status s = BN_OK;
    if (!cut || !cut->split || cut->nranks != P)
        s = bn_fail(BN_ERR_ARGUMENT, "migrate: the cut is for %d ranks, there are %d", cut ? cut->nranks : 0, P);
    else
        s = bn_cuda_need_velocities(st, "migrate");
    BN_TRY(bn_comm_agree(c, s));
    BN_TRY(prepare(st));
    scratch x;
    memset(&x, 0, sizeof x);
    int k = 0;
    double t = t0; /* BANYAN_GRAVITY_TRACE=1: each part's time */
    bn_trace_stage("crossers: prepared", &t);
    if (bn_trace_on() == 2) { /* the device's queue before the search (the kicks and the drift): a diagnosis */
        cudaStreamSynchronize(st->s);
        bn_trace_stage("crossers: the queue before them (device)", &t);
    }
    size_t *send = (size_t *)bn_calloc((size_t)P, sizeof *send, "crossers: counts");
    s = bn_comm_agree(c, send ? find_leavers(st, cut, me, &x, send, &k) : BN_ERR_NOMEM);
    double total = k;
    if (s == BN_OK) s = bn_comm_allreduce(c, &total, 1, BN_REDUCE_SUM);
    bn_trace_stage("crossers: found", &t);
    size_t r = 0;
    int with_types = 0;
    if (s == BN_OK && total > 0) s = agree_types(st, host, &with_types);
    if (s == BN_OK && total > 0) {
        s = bn_comm_agree(c, pack_leavers(st, cut, &x, k));
        bn_trace_stage("crossers: packed (queued)", &t);
        if (s == BN_OK) s = exchange_records(st, &x, send, &r); /* agreed */
        bn_trace_stage("crossers: exchanged (queued)", &t);
        const size_t n_new = (size_t)(st->n - k) + r;
        if (s == BN_OK && n_new > (size_t)INT_MAX / 2)
            s = bn_fail(BN_ERR_ARGUMENT, "migrate: %zu particles on one rank", n_new);
        if (s == BN_OK) s = install(st, host, &x, k, r, with_types);
        bn_trace_stage("crossers: moved", &t);
        /* a failure after the particles moved leaves this rank's set not
         * whole: the run stops (agreed) */
        s = bn_comm_agree(c, s);
        dst->sent = (size_t)k;
        dst->received = r;
    }
    scratch_free(&x, st->s);
    free(send);
    dst->t_total = bn_wall_seconds() - t0;
    return s;
}
