/*
 * The GPU backend's migration across ranks (backend.h's migrate()): after
 * a drift, the particles whose keys (in the last cut's cube and curve)
 * left this rank's part of the cut go to the ranks that own them; the
 * rest stay where they are on the device. Only the crossers cross PCIe
 * and MPI (a thin shell at the cut: thousands where a re-balance would
 * bring every key to the host), so that it can run at every step.
 *
 * All the bookkeeping is on the device (session 21; the host's took
 * 0.4 us a crosser, 73-99 ms a step on 4 GPUs): the keys, each
 * particle's owner, the leavers grouped by owner (a stable radix sort)
 * and gathered into one record each (crosser: state, id, mass, part
 * type, bin, cost), which come down in one copy and go out in one
 * message. The new set is the stayers in their order, then the received
 * records in the senders' rank order (the next build sorts them by key).
 *
 * The uploaded order (the device's ids, masses, part types and costs)
 * keeps its first n - k places: each leaver that held one of them gets
 * a stayer from the tail (sorted on the device; the same pairs remap
 * the stayers' orig), and the received particles follow. The host
 * copies of ids and masses and the caller's mirror are left behind
 * (host_stale): a download or a re-balance brings them
 * (bn_cuda_host_copies, bn_cuda_mirror_ids).
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
#include "parallel/domain_owner.h"

namespace {
const int kThreads = 256;

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

/* Each particle's owner under the cut (split: P + 1 keys on the device),
 * and whether it leaves (leave 1) or stays (stay 1). */
__global__ void owners_kernel(const uint64_t *key, int n, const uint64_t *split, int P, int me, int *own,
                              unsigned char *leave, unsigned char *stay)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int a = bn_domain_owner(split, P, key[i]);
    own[i] = a;
    leave[i] = a != me;
    stay[i] = a == me;
}

/* The arrays of a set (key order of the device). */
struct dev_set {
    double *pos[3], *vel[3];
    float *mass;
    int *orig;
    float4 *acc, *body;
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
                   st->acc, st->body, st->bin};
}

up_set current_uploaded(const bn_cuda_state *st) { return up_set{st->dev_id, st->dev_mass, st->type, st->cost}; }

/* The leavers' owners (the keys of the sort that groups them) and their
 * uploaded indices, in the device's order. */
__global__ void leaver_keys(const int *idx, int k, const int *own, const int *orig, int *owner, int *place)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= k) return;
    const int i = idx[j];
    owner[j] = own[i];
    place[j] = orig[i];
}

/* The leavers' records, grouped by owner (idx: sorted so, stably). */
__global__ void gather_leavers(const int *idx, int k, dev_set from, up_set up, const int *own, crosser *rec)
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
    c.own = own[i];
    c.type = up.type ? up.type[o] : (uint8_t)1;
    c.bin = from.bin ? from.bin[i] : (uint8_t)0;
    rec[j] = c;
}

/* The tail of the uploaded order, [keep, n): its leavers' places marked
 * 0 (sorted: every leaver's uploaded index). */
__global__ void mark_tail(const int *sorted, int k, int keep, unsigned char *stays)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < k && sorted[j] >= keep) stays[sorted[j] - keep] = 0;
}

/* The uploaded order after the leavers: the j-th leaver's place below
 * keep (sorted ascending) takes the j-th stayer of the tail (tail: its
 * offsets from keep, *h of them, as many as those places); remap[from]
 * = to, and the uploaded order's fields move from the old arrays (src)
 * to the new ones (dst, whose first keep places are the old ones'): the
 * set the device holds stays whole until the new one replaces it. */
__global__ void apply_moves(const int *sorted, const int *tail, const int *h, int keep, int *remap, up_set src,
                            up_set dst)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= *h) return;
    const int to = sorted[j], from = keep + tail[j];
    remap[from] = to;
    dst.id[to] = src.id[from];
    dst.mass[to] = src.mass[from];
    if (dst.type && src.type) dst.type[to] = src.type[from];
    if (dst.cost && src.cost) dst.cost[to] = src.cost[from];
}

/* The stayers to [0, m), in their order, their uploaded indices remapped. */
__global__ void place_stayers(const int *idx, int m, dev_set from, const int *remap, dev_set to)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    const int i = idx[j];
    for (int d = 0; d < 3; d++) to.pos[d][j] = from.pos[d][i], to.vel[d][j] = from.vel[d][i];
    to.mass[j] = from.mass[i];
    to.acc[j] = from.acc[i];
    to.orig[j] = remap[from.orig[i]];
    if (to.bin) to.bin[j] = from.bin[i];
}

/* The received records to [m, m + r) of both orders (uploaded index m + j). */
__global__ void place_received(const crosser *rec, int r, int m, dev_set to, up_set up)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= r) return;
    const crosser c = rec[j];
    const int at = m + j;
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
    uint64_t *key, *split;
    int *index, *own, *leave_idx, *stay_idx, *count;
    unsigned char *leave, *stay;
    int *owner, *owner_sorted, *idx_sorted, *place, *place_sorted, *tail;
    unsigned char *tail_stays;
    void *cub;
    size_t cub_bytes;
    crosser *rec;
};

void scratch_free(scratch *x, cudaStream_t s)
{
    bn_cuda_free(x->key, s);
    bn_cuda_free(x->split, s);
    bn_cuda_free(x->index, s);
    bn_cuda_free(x->own, s);
    bn_cuda_free(x->leave_idx, s);
    bn_cuda_free(x->stay_idx, s);
    bn_cuda_free(x->count, s);
    bn_cuda_free(x->leave, s);
    bn_cuda_free(x->stay, s);
    bn_cuda_free(x->owner, s);
    bn_cuda_free(x->owner_sorted, s);
    bn_cuda_free(x->idx_sorted, s);
    bn_cuda_free(x->place, s);
    bn_cuda_free(x->place_sorted, s);
    bn_cuda_free(x->tail, s);
    bn_cuda_free(x->tail_stays, s);
    bn_cuda_free(x->cub, s);
    bn_cuda_free(x->rec, s);
    memset(x, 0, sizeof *x);
}

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

/* The keys, owners and leavers of this rank's particles; *k leavers. */
bn_status find_leavers(bn_cuda_state *st, const bn_domain *cut, int me, scratch *x, int *k)
{
    const int n = st->n, P = cut->nranks;
    cudaStream_t s = st->s;
    *k = 0;
    BN_TRY(bn_cuda_dev_alloc(&x->split, (size_t)P + 1, "crossers: cut", s));
    BN_TRY(ok(cudaMemcpyAsync(x->split, cut->split, ((size_t)P + 1) * sizeof(uint64_t), cudaMemcpyHostToDevice, s),
              "crossers: cut"));
    BN_TRY(bn_cuda_dev_alloc(&x->count, 2, "crossers: counts", s));
    if (n == 0) return BN_OK;
    bn_gpu_frame f;
    memset(&f, 0, sizeof f);
    memcpy(f.box_lo, cut->lo, sizeof f.box_lo);
    f.box_size = cut->side;
    bn_gpu_frame *frame = NULL;
    BN_TRY(bn_cuda_dev_alloc(&frame, 1, "crossers: cube", s));
    bn_status r = ok(cudaMemcpyAsync(frame, &f, sizeof f, cudaMemcpyHostToDevice, s), "crossers: cube");
    if (r == BN_OK) r = bn_cuda_dev_alloc(&x->key, (size_t)n, "crossers: keys", s);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&x->index, (size_t)n, "crossers: keys", s);
    if (r == BN_OK) r = bn_gpu_keys(st->pos, n, frame, cut->curve == BN_CURVE_HILBERT, x->key, x->index, s);
    bn_cuda_free(frame, s);
    BN_TRY(r);
    BN_TRY(bn_cuda_dev_alloc(&x->own, (size_t)n, "crossers: owners", s));
    BN_TRY(bn_cuda_dev_alloc(&x->leave, (size_t)n, "crossers: owners", s));
    BN_TRY(bn_cuda_dev_alloc(&x->stay, (size_t)n, "crossers: owners", s));
    owners_kernel<<<blocks_for((size_t)n), kThreads, 0, s>>>(x->key, n, x->split, P, me, x->own, x->leave, x->stay);
    BN_TRY(ok(cudaGetLastError(), "crossers: owners"));
    BN_TRY(bn_cuda_dev_alloc(&x->leave_idx, (size_t)n, "crossers: leavers", s));
    BN_TRY(select_flagged(x, x->leave, n, x->leave_idx, x->count, s));
    return bn_cuda_read(k, x->count, sizeof *k, "crossers: count", s);
}

/* The leavers grouped by owner (a stable radix sort of their owners, on
 * the device), their records to the host in that order (one copy), and
 * counts[P] of them; their uploaded indices stay on the device (place). */
bn_status leavers_down(bn_cuda_state *st, scratch *x, int k, int P, crosser **out, size_t *counts)
{
    cudaStream_t s = st->s;
    memset(counts, 0, (size_t)P * sizeof *counts);
    *out = (crosser *)bn_alloc(((size_t)k + 1) * sizeof **out, "crossers");
    if (!*out) return BN_ERR_NOMEM;
    if (k == 0) return BN_OK;
    const size_t m = (size_t)k;
    BN_TRY(bn_cuda_dev_alloc(&x->owner, m, "crossers: owners", s));
    BN_TRY(bn_cuda_dev_alloc(&x->owner_sorted, m, "crossers: owners", s));
    BN_TRY(bn_cuda_dev_alloc(&x->idx_sorted, m, "crossers: order", s));
    BN_TRY(bn_cuda_dev_alloc(&x->place, m, "crossers: places", s));
    BN_TRY(bn_cuda_dev_alloc(&x->rec, m, "crossers", s));
    leaver_keys<<<blocks_for(m), kThreads, 0, s>>>(x->leave_idx, k, x->own, st->orig, x->owner, x->place);
    BN_TRY(ok(cudaGetLastError(), "crossers: owners"));
    const int bits = bits_for(P - 1);
    size_t bytes = 0;
    BN_TRY(ok(cub::DeviceRadixSort::SortPairs(NULL, bytes, x->owner, x->owner_sorted, x->leave_idx, x->idx_sorted, k,
                                              0, bits, s),
              "crossers: grouping"));
    BN_TRY(cub_room(x, bytes, s));
    BN_TRY(ok(cub::DeviceRadixSort::SortPairs(x->cub, bytes, x->owner, x->owner_sorted, x->leave_idx, x->idx_sorted,
                                              k, 0, bits, s),
              "crossers: grouping"));
    gather_leavers<<<blocks_for(m), kThreads, 0, s>>>(x->idx_sorted, k, current_set(st), current_uploaded(st), x->own,
                                                      x->rec);
    BN_TRY(ok(cudaGetLastError(), "crossers: gather"));
    BN_TRY(bn_cuda_read(*out, x->rec, m * sizeof **out, "crossers", s));
    for (int j = 0; j < k; j++) counts[(*out)[j].own]++;
    return BN_OK;
}

/* The uploaded order's moves after the k leavers (x->place: their
 * uploaded indices), all on the device: the places below keep = n - k
 * that leavers held take the tail's stayers, in order (x->place_sorted,
 * x->tail and their count x->count[1]; applied by device_arrays, which
 * makes the keys' iota x->index the remap of the stayers' orig). */
bn_status uploaded_moves(bn_cuda_state *st, scratch *x, int k)
{
    if (k == 0) return BN_OK;
    cudaStream_t s = st->s;
    const int n = st->n, keep = n - k;
    const size_t m = (size_t)k;
    BN_TRY(bn_cuda_dev_alloc(&x->place_sorted, m, "crossers: places", s));
    BN_TRY(bn_cuda_dev_alloc(&x->tail, m, "crossers: places", s));
    BN_TRY(bn_cuda_dev_alloc(&x->tail_stays, m, "crossers: places", s));
    const int bits = bits_for(n - 1);
    size_t bytes = 0;
    BN_TRY(ok(cub::DeviceRadixSort::SortKeys(NULL, bytes, x->place, x->place_sorted, k, 0, bits, s), "crossers: places"));
    BN_TRY(cub_room(x, bytes, s));
    BN_TRY(ok(cub::DeviceRadixSort::SortKeys(x->cub, bytes, x->place, x->place_sorted, k, 0, bits, s),
              "crossers: places"));
    BN_TRY(ok(cudaMemsetAsync(x->tail_stays, 1, m, s), "crossers: places"));
    mark_tail<<<blocks_for(m), kThreads, 0, s>>>(x->place_sorted, k, keep, x->tail_stays);
    BN_TRY(ok(cudaGetLastError(), "crossers: places"));
    return select_flagged(x, x->tail_stays, k, x->tail, x->count + 1, s);
}

/* A new uploaded-order array of room entries: the first keep of old. */
template <typename T>
bn_status grown(T **out, const T *old, size_t room, int keep, const char *what, cudaStream_t s)
{
    BN_TRY(bn_cuda_dev_alloc(out, room, what, s));
    if (keep > 0) BN_TRY(ok(cudaMemcpyAsync(*out, old, (size_t)keep * sizeof(T), cudaMemcpyDeviceToDevice, s), what));
    return BN_OK;
}

void set_free(dev_set *d, up_set *u, cudaStream_t s)
{
    for (int k = 0; k < 3; k++) {
        bn_cuda_free(d->pos[k], s);
        bn_cuda_free(d->vel[k], s);
    }
    bn_cuda_free(d->mass, s);
    bn_cuda_free(d->orig, s);
    bn_cuda_free(d->acc, s);
    bn_cuda_free(d->body, s);
    bn_cuda_free(d->bin, s);
    bn_cuda_free(u->id, s);
    bn_cuda_free(u->mass, s);
    bn_cuda_free(u->type, s);
    bn_cuda_free(u->cost, s);
}

/* The new set's device arrays: the stayers (their uploaded indices
 * remapped by the moves), then the r received; the uploaded order's
 * fields: its first keep places (after the moves), then the received. */
bn_status device_arrays(bn_cuda_state *st, scratch *x, int keep, const crosser *in, size_t r, int with_types)
{
    cudaStream_t s = st->s;
    const int n = st->n, n_new = keep + (int)r;
    const size_t m = (size_t)n_new + 1;
    dev_set from = current_set(st), to;
    up_set ufrom = current_uploaded(st), uto;
    memset(&to, 0, sizeof to);
    memset(&uto, 0, sizeof uto);
    crosser *drec = NULL;
    bn_status e = BN_OK;
    for (int d = 0; d < 3 && e == BN_OK; d++) {
        e = bn_cuda_dev_alloc(&to.pos[d], m, "positions", s);
        if (e == BN_OK) e = bn_cuda_dev_alloc(&to.vel[d], m, "velocities", s);
    }
    if (e == BN_OK) e = bn_cuda_dev_alloc(&to.mass, m, "masses", s);
    if (e == BN_OK) e = bn_cuda_dev_alloc(&to.orig, m, "particle order", s);
    if (e == BN_OK) e = bn_cuda_dev_alloc(&to.acc, m, "accelerations", s);
    if (e == BN_OK) e = bn_cuda_dev_alloc(&to.body, m, "tree bodies", s);
    if (e == BN_OK && st->bin) e = bn_cuda_dev_alloc(&to.bin, m, "time bins", s);
    if (e == BN_OK) e = grown(&uto.id, ufrom.id, m, keep, "ids", s);
    if (e == BN_OK) e = grown(&uto.mass, ufrom.mass, m, keep, "masses", s);
    if (e == BN_OK && with_types) e = grown(&uto.type, ufrom.type, m, ufrom.type ? keep : 0, "part types", s);
    if (e == BN_OK && ufrom.cost) e = grown(&uto.cost, ufrom.cost, m, keep, "particle costs", s);
    if (e == BN_OK && n > keep) { /* the moves (uploaded_moves) */
        apply_moves<<<blocks_for((size_t)(n - keep)), kThreads, 0, s>>>(x->place_sorted, x->tail, x->count + 1, keep,
                                                                        x->index, ufrom, uto);
        e = ok(cudaGetLastError(), "crossers: moves");
    }
    /* the stayers, in order */
    if (e == BN_OK && n > 0) e = bn_cuda_dev_alloc(&x->stay_idx, (size_t)n, "crossers: stayers", s);
    if (e == BN_OK && n > 0) e = select_flagged(x, x->stay, n, x->stay_idx, x->count, s);
    if (e == BN_OK && keep > 0) {
        place_stayers<<<blocks_for((size_t)keep), kThreads, 0, s>>>(x->stay_idx, keep, from, x->index, to);
        e = ok(cudaGetLastError(), "crossers: stayers");
    }
    /* the received */
    if (e == BN_OK && r > 0) e = bn_cuda_dev_alloc(&drec, r, "crossers: received", s);
    if (e == BN_OK && r > 0) e = ok(cudaMemcpyAsync(drec, in, r * sizeof *in, cudaMemcpyHostToDevice, s), "crossers up");
    if (e == BN_OK && r > 0) {
        place_received<<<blocks_for(r), kThreads, 0, s>>>(drec, (int)r, keep, to, uto);
        e = ok(cudaGetLastError(), "crossers: received");
    }
    if (e == BN_OK) e = ok(cudaStreamSynchronize(s), "crossers"); /* in is freed next */
    bn_cuda_free(drec, s);
    if (e != BN_OK) {
        set_free(&to, &uto, s);
        return e;
    }
    set_free(&from, &ufrom, s);
    for (int d = 0; d < 3; d++) st->pos[d] = to.pos[d], st->vel[d] = to.vel[d];
    st->mass = to.mass;
    st->orig = to.orig;
    st->acc = to.acc;
    st->body = to.body;
    st->bin = to.bin;
    st->dev_id = uto.id;
    st->dev_mass = uto.mass;
    st->type = uto.type;
    st->cost = uto.cost;
    st->n = n_new;
    st->tree_valid = 0; /* another set: the next evaluation builds */
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
    bn_status e = bn_cuda_dev_alloc(&id, n + 1, "ids", s);
    if (e == BN_OK) e = bn_cuda_dev_alloc(&mass, n + 1, "masses", s);
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
    if (n_new > host->capacity) BN_TRY(bn_particles_resize(host, n_new + n_new / 16 + 1));
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
        s = bn_cuda_dev_alloc(&st->type, (size_t)st->n, "part types", st->s);
        if (s == BN_OK) s = ok(cudaMemsetAsync(st->type, 1, (size_t)st->n, st->s), "part types");
    }
    if (s == BN_OK && *with_types && host) s = bn_particles_ensure_types(host);
    return bn_comm_agree(st->comm, s);
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
    /* block steps' bins travel along, on every rank or none (a rank
     * without holds all its particles in bin 0) */
    double have[2] = {st->bin ? 1.0 : 0.0, st->cost ? 1.0 : 0.0}; /* the costs too (they travel) */
    BN_TRY(bn_comm_allreduce(c, have, 2, BN_REDUCE_MAX));
    if (have[0] > 0 && !st->bin) {
        s = bn_cuda_dev_alloc(&st->bin, (size_t)st->n + 1, "time bins", st->s);
        if (s == BN_OK) s = ok(cudaMemsetAsync(st->bin, 0, (size_t)st->n + 1, st->s), "time bins");
    }
    if (s == BN_OK && have[1] > 0 && !st->cost) {
        s = bn_cuda_dev_alloc(&st->cost, (size_t)st->n + 1, "particle costs", st->s);
        if (s == BN_OK) s = ok(cudaMemsetAsync(st->cost, 0, ((size_t)st->n + 1) * sizeof(float), st->s), "particle costs");
    }
    if (s == BN_OK) s = device_ids(st);
    BN_TRY(bn_comm_agree(c, s)); /* every rank, whatever it made */
    scratch x;
    memset(&x, 0, sizeof x);
    int k = 0;
    double t = t0; /* BANYAN_GRAVITY_TRACE=1: each part's time */
    s = bn_comm_agree(c, find_leavers(st, cut, me, &x, &k));
    double total = k;
    if (s == BN_OK) s = bn_comm_allreduce(c, &total, 1, BN_REDUCE_SUM);
    bn_trace_stage("crossers: found", &t);
    crosser *out = NULL, *in = NULL;
    size_t r = 0;
    size_t *counts = (size_t *)bn_alloc(2 * (size_t)P * sizeof *counts, "crossers: counts");
    int with_types = 0;
    if (s == BN_OK && total > 0) s = agree_types(st, host, &with_types);
    if (s == BN_OK && total > 0) {
        s = bn_comm_agree(c, counts ? leavers_down(st, &x, k, P, &out, counts) : BN_ERR_NOMEM);
        bn_cuda_free(x.key, st->s); /* not needed any more: room for the new set (index stays: the remap) */
        bn_cuda_free(x.own, st->s);
        x.key = NULL;
        x.own = NULL;
        bn_trace_stage("crossers: down", &t);
        if (s == BN_OK) s = bn_comm_alltoallv(c, out, counts, sizeof *out, (void **)&in, counts + P, &r);
        bn_trace_stage("crossers: exchanged", &t);
        const size_t n_new = (size_t)(st->n - k) + r;
        if (s == BN_OK && n_new > (size_t)INT_MAX / 2)
            s = bn_fail(BN_ERR_ARGUMENT, "migrate: %zu particles on one rank", n_new);
        if (s == BN_OK) s = uploaded_moves(st, &x, k);
        s = bn_comm_agree(c, s);
        for (int j = 0; s == BN_OK && j < k; j++) st->type_count[out[j].type] -= 1;
        for (size_t j = 0; s == BN_OK && j < r; j++) st->type_count[in[j].type] += 1;
        const int n_old = st->n;
        const int moved = k > 0 || r > 0; /* a rank neither sending nor receiving keeps its set */
        bn_trace_stage("crossers: moves", &t);
        if (s == BN_OK && moved) s = device_arrays(st, &x, n_old - k, in, r, with_types);
        bn_trace_stage("crossers: device arrays", &t);
        if (s == BN_OK && moved) {
            st->host_stale = BN_STALE_IDS | BN_STALE_MASSES; /* the device's are the set's */
            s = mirror_resize(host, (size_t)st->n);
        }
        if (s == BN_OK && n_old == 0 && st->n > 0) s = bn_cuda_new_scales(st); /* an empty rank had unit scales */
        bn_trace_stage("crossers: mirror", &t);
        /* a failure after the particles moved leaves this rank's set not
         * whole: the run stops (agreed) */
        s = bn_comm_agree(c, s);
        dst->sent = (size_t)k;
        dst->received = r;
    }
    scratch_free(&x, st->s);
    free(counts);
    free(out);
    free(in);
    dst->t_total = bn_wall_seconds() - t0;
    return s;
}
