/*
 * The GPU backend's migration across ranks (backend.h's migrate()): after
 * a drift, the particles whose keys (in the last cut's cube and curve)
 * left this rank's part of the cut go to the ranks that own them; the
 * rest stay where they are on the device. Only the crossers cross PCIe
 * and MPI (a thin shell at the cut: thousands where a re-balance would
 * bring every key to the host), so that it can run at every step.
 *
 * On the device: the keys, each particle's owner, and two stable
 * compactions (the leavers and the stayers, in the device's order). The
 * leavers' records (positions, velocities, forces) come down with their
 * uploaded indices; their ids, masses and part types are the host's.
 * The new set is the stayers in their order, then the received records
 * in the senders' rank order (the next build sorts them by key).
 *
 * The uploaded order (host copies of ids and masses, the device's part
 * types, the caller's mirror) keeps its first n - k places: each leaver
 * that held one of them gets a stayer from the tail (the same pairs move
 * the host copies and remap the stayers' orig on the device), and the
 * received particles follow. Host work is in the crossers, not in n.
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

/* What a crosser takes along on the device side (64 bytes). */
struct crosser {
    double pos[3], vel[3];
    float4 acc;
};
/* ... and on the host side. */
struct crosser_host {
    uint64_t id;
    double mass;
    uint64_t type, bin; /* part type; block steps' bin (0 without) */
    double cost;        /* its measured cost so far (0 without) */
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

/* What else of a leaver the host needs: one read with its records. */
struct leaver_info {
    int own, orig;  /* its new rank, its uploaded index */
    float cost;     /* its measured cost (0 without)    */
    uint8_t type, bin;
};

/* The leavers' records and what else the host needs of them (types and
 * costs are in the uploaded order, may be NULL). */
__global__ void gather_leavers(const int *idx, int k, dev_set from, const int *own, const uint8_t *type,
                               const float *cost, crosser *rec, leaver_info *info)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= k) return;
    const int i = idx[j], o = from.orig[i];
    crosser c;
    for (int d = 0; d < 3; d++) c.pos[d] = from.pos[d][i], c.vel[d] = from.vel[d][i];
    c.acc = from.acc[i];
    rec[j] = c;
    info[j] = leaver_info{own[i], o, cost ? cost[o] : 0.f, type ? type[o] : (uint8_t)1,
                          from.bin ? from.bin[i] : (uint8_t)0};
}

/* The set the device holds now. */
dev_set current_set(const bn_cuda_state *st)
{
    return dev_set{{st->pos[0], st->pos[1], st->pos[2]}, {st->vel[0], st->vel[1], st->vel[2]}, st->mass, st->orig,
                   st->acc, st->body, st->bin};
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

/* The received records to [m, m + r), uploaded indices m + j. */
__global__ void place_received(const crosser *rec, const float *mass, const uint8_t *bin, int r, int m, dev_set to)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= r) return;
    const crosser c = rec[j];
    for (int d = 0; d < 3; d++) to.pos[d][m + j] = c.pos[d], to.vel[d][m + j] = c.vel[d];
    to.mass[m + j] = mass[j];
    to.acc[m + j] = c.acc;
    to.orig[m + j] = m + j;
    if (to.bin) to.bin[m + j] = bin[j];
}

/* Pairs (to, from) of the uploaded order: remap[from] = to, and the
 * part types and costs moved along (either may be NULL). */
__global__ void apply_moves(const int2 *moves, int nm, int *remap, uint8_t *type, float *cost)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= nm) return;
    const int2 m = moves[j];
    remap[m.y] = m.x;
    if (type) type[m.x] = type[m.y];
    if (cost) cost[m.x] = cost[m.y];
}

/* Device scratch of one migration, freed together. */
struct scratch {
    uint64_t *key, *split;
    int *index, *own, *leave_idx, *stay_idx, *count;
    unsigned char *leave, *stay;
    void *cub;
    size_t cub_bytes;
    crosser *rec;
    leaver_info *info;
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
    bn_cuda_free(x->cub, s);
    bn_cuda_free(x->rec, s);
    bn_cuda_free(x->info, s);
    memset(x, 0, sizeof *x);
}

/* flags -> the indices flagged, in order, and their count (device). */
bn_status select_flagged(scratch *x, const unsigned char *flags, int n, int *out, cudaStream_t s)
{
    thrust::counting_iterator<int> iota(0);
    size_t bytes = 0;
    BN_TRY(ok(cub::DeviceSelect::Flagged(NULL, bytes, iota, flags, out, x->count, n, s), "crossers: select"));
    if (bytes > x->cub_bytes) {
        bn_cuda_free(x->cub, s);
        x->cub = NULL;
        BN_TRY(bn_cuda_dev_alloc((char **)&x->cub, bytes, "crossers: select", s));
        x->cub_bytes = bytes;
    }
    return ok(cub::DeviceSelect::Flagged(x->cub, bytes, iota, flags, out, x->count, n, s), "crossers: select");
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
    BN_TRY(bn_cuda_dev_alloc(&x->count, 1, "crossers: count", s));
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
    BN_TRY(select_flagged(x, x->leave, n, x->leave_idx, s));
    return bn_cuda_read(k, x->count, sizeof *k, "crossers: count", s);
}

/* The leavers to the host, grouped by owner (stable), with their host
 * records and uploaded indices (orig, in the same order); counts[P]. */
bn_status leavers_down(bn_cuda_state *st, scratch *x, int k, int P, crosser **out, crosser_host **hout, int **orig,
                       size_t *counts)
{
    cudaStream_t s = st->s;
    memset(counts, 0, (size_t)P * sizeof *counts);
    const size_t m = (size_t)k + 1;
    crosser *rec = (crosser *)bn_alloc(m * sizeof *rec, "crossers");
    leaver_info *info = (leaver_info *)bn_alloc(m * sizeof *info, "crossers");
    *out = (crosser *)bn_alloc(m * sizeof **out, "crossers");
    *hout = (crosser_host *)bn_alloc(m * sizeof **hout, "crossers");
    *orig = (int *)bn_alloc(m * sizeof **orig, "crossers");
    size_t *at = (size_t *)bn_alloc(((size_t)P + 1) * sizeof *at, "crossers");
    bn_status r = rec && info && *out && *hout && *orig && at ? BN_OK : BN_ERR_NOMEM;
    if (r == BN_OK && k > 0) {
        r = bn_cuda_dev_alloc(&x->rec, (size_t)k, "crossers", s);
        if (r == BN_OK) r = bn_cuda_dev_alloc(&x->info, (size_t)k, "crossers", s);
        if (r == BN_OK) {
            gather_leavers<<<blocks_for((size_t)k), kThreads, 0, s>>>(x->leave_idx, k, current_set(st), x->own,
                                                                      st->type, st->cost, x->rec, x->info);
            r = ok(cudaGetLastError(), "crossers: gather");
        }
        if (r == BN_OK) r = bn_cuda_read(rec, x->rec, (size_t)k * sizeof *rec, "crossers", s);
        if (r == BN_OK) r = bn_cuda_read(info, x->info, (size_t)k * sizeof *info, "crossers", s);
    }
    if (r == BN_OK) { /* a stable counting sort by owner */
        for (int j = 0; j < k; j++) counts[info[j].own]++;
        at[0] = 0;
        for (int q = 0; q < P; q++) at[q + 1] = at[q] + counts[q];
        for (int j = 0; j < k; j++) {
            const leaver_info f = info[j];
            const size_t o = at[f.own]++;
            (*out)[o] = rec[j];
            (*orig)[o] = f.orig;
            (*hout)[o] = crosser_host{st->host_id[f.orig], st->host_mass[f.orig], (uint64_t)f.type, (uint64_t)f.bin,
                                      (double)f.cost};
        }
    }
    free(rec);
    free(info);
    free(at);
    return r;
}

int by_value(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The uploaded order's moves after k leavers (their uploaded indices in
 * orig): each leaver's place below n - k takes a stayer from the tail.
 * Pairs (to, from) in *moves, *nm of them. */
bn_status uploaded_moves(const int *orig, int k, int n, int2 **moves, int *nm)
{
    *nm = 0;
    int *sorted = (int *)bn_alloc(((size_t)k + 1) * sizeof *sorted, "crossers: moves");
    *moves = (int2 *)bn_alloc(((size_t)k + 1) * sizeof **moves, "crossers: moves");
    if (!sorted || !*moves) {
        free(sorted);
        return BN_ERR_NOMEM;
    }
    memcpy(sorted, orig, (size_t)k * sizeof *sorted);
    qsort(sorted, (size_t)k, sizeof *sorted, by_value);
    const int keep = n - k;
    int tail = keep, j = 0; /* sorted[j..k): the leavers at or above tail */
    while (j < k && sorted[j] < keep) j++;
    for (int h = 0; h < k && sorted[h] < keep; h++) {
        while (j < k && sorted[j] == tail) { /* a leaver's place: not a stayer */
            tail++;
            j++;
        }
        (*moves)[(*nm)++] = make_int2(sorted[h], tail++);
    }
    free(sorted);
    return BN_OK;
}

/* The host copies (the backend's ids and masses, and the caller's mirror,
 * which holds the same in the same order) in the new uploaded order: the
 * moves, then the received after keep. Work in the crossers only. */
bn_status host_copies(bn_cuda_state *st, bn_particles *host, const int2 *moves, int nm, int keep,
                      const crosser_host *in, size_t r)
{
    const size_t n_new = (size_t)keep + r;
    const int types = host && host->type != NULL;
    for (int j = 0; j < nm; j++) {
        const int to = moves[j].x, from = moves[j].y;
        st->host_id[to] = st->host_id[from];
        st->host_mass[to] = st->host_mass[from];
        if (!host) continue;
        host->id[to] = host->id[from];
        host->mass[to] = host->mass[from];
        if (types) host->type[to] = host->type[from];
    }
    /* room with a margin: a rank that receives more than it sends at
     * every step would otherwise copy all its host copies every step */
    const size_t room = n_new + n_new / 16 + 1;
    if (n_new + 1 > st->host_capacity) {
        uint64_t *id = (uint64_t *)realloc(st->host_id, room * sizeof *id);
        if (id) st->host_id = id;
        double *mass = (double *)realloc(st->host_mass, room * sizeof *mass);
        if (mass) st->host_mass = mass;
        if (!id || !mass) return bn_fail(BN_ERR_NOMEM, "crossers: host copies of %zu particles", n_new);
        st->host_capacity = room;
    }
    if (host) {
        host->n = (size_t)keep < host->n ? (size_t)keep : host->n; /* the tail is gone: nothing of it is kept */
        if (n_new > host->capacity) BN_TRY(bn_particles_resize(host, room)); /* the same margin */
        BN_TRY(bn_particles_resize(host, n_new));
    }
    for (size_t j = 0; j < r; j++) {
        st->host_id[keep + j] = in[j].id;
        st->host_mass[keep + j] = in[j].mass;
        if (!host) continue;
        host->id[keep + j] = in[j].id;
        host->mass[keep + j] = in[j].mass;
        if (types) host->type[keep + j] = (uint8_t)in[j].type;
    }
    return BN_OK;
}

/* The new set's device arrays: the stayers (their uploaded indices
 * remapped by the moves), then the r received; the part types in the new
 * uploaded order; the costs from 0. */
bn_status device_arrays(bn_cuda_state *st, scratch *x, int keep, const int2 *moves, int nm, const crosser *in,
                        const crosser_host *hin, size_t r, int with_types)
{
    cudaStream_t s = st->s;
    const int n = st->n, n_new = keep + (int)r;
    const size_t m = (size_t)n_new + 1;
    dev_set from = current_set(st);
    dev_set to;
    memset(&to, 0, sizeof to);
    int *remap = x->index; /* iota from the keys (bn_gpu_keys): the moves make it the remap */
    int2 *dmoves = NULL;
    crosser *drec = NULL;
    float *dmass = NULL, *hmass = (float *)bn_alloc(m * sizeof *hmass, "crossers: masses");
    uint8_t *types = NULL, *htypes = (uint8_t *)bn_alloc(m, "crossers: types");
    uint8_t *dbin = NULL, *hbin = (uint8_t *)bn_alloc(m, "crossers: bins");
    float *hcost = (float *)bn_alloc(m * sizeof *hcost, "crossers: costs");
    float *cost = NULL;
    bn_status e = hmass && htypes && hbin && hcost ? BN_OK : BN_ERR_NOMEM;
    for (int d = 0; d < 3 && e == BN_OK; d++) {
        e = bn_cuda_dev_alloc(&to.pos[d], m, "positions", s);
        if (e == BN_OK) e = bn_cuda_dev_alloc(&to.vel[d], m, "velocities", s);
    }
    if (e == BN_OK) e = bn_cuda_dev_alloc(&to.mass, m, "masses", s);
    if (e == BN_OK) e = bn_cuda_dev_alloc(&to.orig, m, "particle order", s);
    if (e == BN_OK) e = bn_cuda_dev_alloc(&to.acc, m, "accelerations", s);
    if (e == BN_OK) e = bn_cuda_dev_alloc(&to.body, m, "tree bodies", s);
    if (e == BN_OK && st->bin) e = bn_cuda_dev_alloc(&to.bin, m, "time bins", s);
    /* the stayers, in order, and the uploaded order's remap */
    if (e == BN_OK && n > 0) e = bn_cuda_dev_alloc(&x->stay_idx, (size_t)n, "crossers: stayers", s);
    if (e == BN_OK && n > 0) e = select_flagged(x, x->stay, n, x->stay_idx, s);
    if (e == BN_OK && nm > 0) e = bn_cuda_dev_alloc(&dmoves, (size_t)nm, "crossers: moves", s);
    if (e == BN_OK && nm > 0)
        e = ok(cudaMemcpyAsync(dmoves, moves, (size_t)nm * sizeof *moves, cudaMemcpyHostToDevice, s), "crossers: moves");
    if (e == BN_OK && nm > 0) {
        apply_moves<<<blocks_for((size_t)nm), kThreads, 0, s>>>(dmoves, nm, remap, st->type, st->cost);
        e = ok(cudaGetLastError(), "crossers: moves");
    }
    if (e == BN_OK && keep > 0) {
        place_stayers<<<blocks_for((size_t)keep), kThreads, 0, s>>>(x->stay_idx, keep, from, remap, to);
        e = ok(cudaGetLastError(), "crossers: stayers");
    }
    /* the received */
    for (size_t j = 0; e == BN_OK && j < r; j++) {
        hmass[j] = (float)hin[j].mass;
        htypes[j] = (uint8_t)hin[j].type;
        hbin[j] = (uint8_t)hin[j].bin;
        hcost[j] = (float)hin[j].cost; /* they were floats */
    }
    if (e == BN_OK && r > 0) e = bn_cuda_dev_alloc(&drec, r, "crossers: received", s);
    if (e == BN_OK && r > 0) e = bn_cuda_dev_alloc(&dmass, r, "crossers: received", s);
    if (e == BN_OK && r > 0) e = ok(cudaMemcpyAsync(drec, in, r * sizeof *in, cudaMemcpyHostToDevice, s), "crossers up");
    if (e == BN_OK && r > 0) e = ok(cudaMemcpyAsync(dmass, hmass, r * sizeof *hmass, cudaMemcpyHostToDevice, s), "crossers up");
    if (e == BN_OK && r > 0 && to.bin) e = bn_cuda_dev_alloc(&dbin, r, "crossers: received", s);
    if (e == BN_OK && r > 0 && to.bin) e = ok(cudaMemcpyAsync(dbin, hbin, r, cudaMemcpyHostToDevice, s), "crossers up");
    if (e == BN_OK && r > 0) {
        place_received<<<blocks_for(r), kThreads, 0, s>>>(drec, dmass, dbin, (int)r, keep, to);
        e = ok(cudaGetLastError(), "crossers: received");
    }
    /* part types in the new uploaded order; costs from 0 */
    if (e == BN_OK && with_types) e = bn_cuda_dev_alloc(&types, m, "part types", s);
    if (e == BN_OK && st->type && keep > 0)
        e = ok(cudaMemcpyAsync(types, st->type, (size_t)keep, cudaMemcpyDeviceToDevice, s), "part types");
    if (e == BN_OK && with_types && r > 0)
        e = ok(cudaMemcpyAsync(types + keep, htypes, r, cudaMemcpyHostToDevice, s), "part types");
    if (e == BN_OK && st->cost) e = bn_cuda_dev_alloc(&cost, m, "particle costs", s);
    if (e == BN_OK && st->cost && keep > 0)
        e = ok(cudaMemcpyAsync(cost, st->cost, (size_t)keep * sizeof *cost, cudaMemcpyDeviceToDevice, s), "particle costs");
    if (e == BN_OK && st->cost && r > 0)
        e = ok(cudaMemcpyAsync(cost + keep, hcost, r * sizeof *hcost, cudaMemcpyHostToDevice, s), "particle costs");
    if (e == BN_OK) e = ok(cudaStreamSynchronize(s), "crossers"); /* the host buffers are freed next */
    bn_cuda_free(dmoves, s);
    bn_cuda_free(drec, s);
    bn_cuda_free(dmass, s);
    bn_cuda_free(dbin, s);
    free(hmass);
    free(htypes);
    free(hbin);
    free(hcost);
    dev_set *gone = e == BN_OK ? &from : &to; /* the old set, or on failure the new one */
    for (int d = 0; d < 3; d++) {
        bn_cuda_free(gone->pos[d], s);
        bn_cuda_free(gone->vel[d], s);
    }
    bn_cuda_free(gone->mass, s);
    bn_cuda_free(gone->orig, s);
    bn_cuda_free(gone->acc, s);
    bn_cuda_free(gone->body, s);
    bn_cuda_free(gone->bin, s);
    if (e != BN_OK) {
        bn_cuda_free(types, s);
        bn_cuda_free(cost, s);
        return e;
    }
    for (int d = 0; d < 3; d++) st->pos[d] = to.pos[d], st->vel[d] = to.vel[d];
    st->mass = to.mass;
    st->orig = to.orig;
    st->acc = to.acc;
    st->body = to.body;
    st->bin = to.bin;
    if (with_types) {
        bn_cuda_free(st->type, s);
        st->type = types;
    }
    if (st->cost) {
        bn_cuda_free(st->cost, s);
        st->cost = cost;
    }
    st->n = n_new;
    st->tree_valid = 0; /* another set: the next evaluation builds */
    return BN_OK;
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
    BN_TRY(bn_comm_agree(c, s)); /* every rank, whatever it made */
    scratch x;
    memset(&x, 0, sizeof x);
    int k = 0;
    double t = t0; /* BANYAN_GRAVITY_TRACE=1: each part's time */
    s = bn_comm_agree(c, find_leavers(st, cut, me, &x, &k));
    double total = k;
    if (s == BN_OK) s = bn_comm_allreduce(c, &total, 1, BN_REDUCE_SUM);
    bn_trace_stage("crossers: found", &t);
    crosser *out = NULL;
    crosser_host *hout = NULL;
    int *orig = NULL;
    int2 *moves = NULL;
    int nm = 0;
    void *in = NULL, *hin = NULL;
    size_t r = 0, r2 = 0;
    size_t *counts = (size_t *)bn_alloc(2 * (size_t)P * sizeof *counts, "crossers: counts");
    int with_types = 0;
    if (s == BN_OK && total > 0) s = agree_types(st, host, &with_types);
    if (s == BN_OK && total > 0) {
        s = bn_comm_agree(c, counts ? leavers_down(st, &x, k, P, &out, &hout, &orig, counts) : BN_ERR_NOMEM);
        bn_cuda_free(x.key, st->s); /* not needed any more: room for the new set (index stays: the remap) */
        bn_cuda_free(x.own, st->s);
        x.key = NULL;
        x.own = NULL;
        bn_trace_stage("crossers: down", &t);
        if (s == BN_OK) s = bn_comm_alltoallv(c, out, counts, sizeof *out, &in, counts + P, &r);
        if (s == BN_OK) s = bn_comm_alltoallv(c, hout, counts, sizeof *hout, &hin, counts + P, &r2);
        bn_trace_stage("crossers: exchanged", &t);
        const size_t n_new = (size_t)(st->n - k) + r;
        if (s == BN_OK && n_new > (size_t)INT_MAX / 2)
            s = bn_fail(BN_ERR_ARGUMENT, "migrate: %zu particles on one rank", n_new);
        if (s == BN_OK) s = uploaded_moves(orig, k, st->n, &moves, &nm);
        s = bn_comm_agree(c, s);
        for (int j = 0; s == BN_OK && j < k; j++) st->type_count[hout[j].type] -= 1;
        for (size_t j = 0; s == BN_OK && j < r; j++) st->type_count[((const crosser_host *)hin)[j].type] += 1;
        const int n_old = st->n;
        const int moved = k > 0 || r > 0; /* a rank neither sending nor receiving keeps its set */
        bn_trace_stage("crossers: moves", &t);
        if (s == BN_OK && moved)
            s = device_arrays(st, &x, n_old - k, moves, nm, (const crosser *)in, (const crosser_host *)hin, r,
                              with_types);
        bn_trace_stage("crossers: device arrays", &t);
        if (s == BN_OK && moved) s = host_copies(st, host, moves, nm, n_old - k, (const crosser_host *)hin, r);
        if (s == BN_OK && n_old == 0 && st->n > 0) s = bn_cuda_new_scales(st); /* an empty rank had unit scales */
        bn_trace_stage("crossers: host copies", &t);
        /* a failure after the particles moved leaves this rank's set not
         * whole: the run stops (agreed) */
        s = bn_comm_agree(c, s);
        dst->sent = (size_t)k;
        dst->received = r;
    }
    scratch_free(&x, st->s);
    free(counts);
    free(out);
    free(hout);
    free(orig);
    free(moves);
    free(in);
    free(hin);
    dst->t_total = bn_wall_seconds() - t0;
    return s;
}
