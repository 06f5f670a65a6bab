/*
 * The GPU backend's re-balance across ranks (backend.h's rebalance()):
 * the particles stay on their devices, but for those that change rank.
 * Each rank keys its particles on its device in the cube of every rank's
 * box, sorts them there, and brings only the sorted keys and their
 * measured costs to the host (12 bytes a particle, where a re-balance
 * through the host moved all of every particle twice), where every
 * rank's samples make the cut by bn_domain_decompose's own rule
 * (parallel/domain_parts.h). The particles are packed on the device in
 * key order; those that stay are copied on the device, those that leave
 * go to their new ranks straight from device memory where the MPI
 * library takes device pointers (bn_comm_cuda_aware), else through host
 * staging (only the records that change rank cross PCIe); ids, masses and part types, which the host keeps,
 * travel in the same order on the host. The new set holds the senders'
 * runs in rank order, each in key order (the next build sorts them), with
 * its forces.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "core/timer.h"
#include "core/trace.h"
#include "parallel/balance.h"
#include "parallel/comm.h"
#include "parallel/domain_parts.h"
#include "tree/keys.h"
}
#include "core/backend_cuda_state.h"
extern "C" {
#include "core/particles_remake.h"
}

namespace {
const int kThreads = 256;

/* What moves on the device side: 64 bytes a particle. */
struct dev_rec {
    double pos[3], vel[3];
    float4 acc;
};
/* What the host keeps of a particle, moved alongside. */
struct host_rec {
    uint64_t id;
    double mass, weight;
    uint64_t type;
};

int blocks_for(int n) { return (n + kThreads - 1) / kThreads; }

bn_status ok(cudaError_t e, const char *what) { return e == cudaSuccess ? BN_OK : bn_cuda_fail(e, what, __FILE__, __LINE__); }

/* The host side of the keys' bounding-box words (keys_cuda.cu's
 * order-preserving image of a double). */
double unordered(unsigned long long u)
{
    u = (u >> 63) ? (u & 0x7fffffffffffffffull) : ~u;
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* This rank's exact box, reduced on the device (the upload's rule). */
bn_status device_box(bn_cuda_state *st, double lo[3], double hi[3])
{
    BN_TRY(bn_gpu_bounding_box(st->pos, NULL, 0.0, st->n, &st->tree, st->s));
    unsigned long long w[6];
    BN_TRY(bn_cuda_read(w, st->tree.minmax, sizeof w, "the particles' box", st->s));
    for (int k = 0; k < 3; k++) {
        lo[k] = unordered(w[k]);
        hi[k] = unordered(w[3 + k]);
        if (!isfinite(lo[k]) || !isfinite(hi[k]))
            return bn_fail(BN_ERR_ARGUMENT, "re-balance: a particle's %c coordinate is not finite", "xyz"[k]);
    }
    return BN_OK;
}

__global__ void key_order_fields(const int *idx, const int *orig, const float *cost, int n, float *w, int *u)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const int o = orig[idx[j]];
    u[j] = o;
    w[j] = cost ? cost[o] : 1.f;
}

__global__ void pack_kernel(const double *x, const double *y, const double *z, const double *vx, const double *vy,
                            const double *vz, const float4 *acc, const int *idx, int n, dev_rec *out)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const int i = idx[j];
    out[j] = dev_rec{{x[i], y[i], z[i]}, {vx[i], vy[i], vz[i]}, acc[i]};
}

__global__ void unpack_kernel(const dev_rec *in, int n, double *x, double *y, double *z, double *vx, double *vy,
                              double *vz, float4 *acc, int *orig)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const dev_rec r = in[i];
    x[i] = r.pos[0];
    y[i] = r.pos[1];
    z[i] = r.pos[2];
    vx[i] = r.vel[0];
    vy[i] = r.vel[1];
    vz[i] = r.vel[2];
    acc[i] = r.acc;
    orig[i] = i;
}

/* This rank's particles in key order: the sorted keys on the host, with
 * each particle's weight and uploaded index (u), and the device order
 * (idx, on the device). */
struct keyed {
    uint64_t *key;   /* host */
    double *w;       /* host, NULL: by count */
    int *u;          /* host */
    int *idx;        /* device */
};

void keyed_free(keyed *k, cudaStream_t s)
{
    free(k->key);
    free(k->w);
    free(k->u);
    bn_cuda_free(k->idx, s);
    memset(k, 0, sizeof *k);
}

/* Keys in d's cube on the device, sorted there; keys, weights and
 * uploaded indices to the host. */
bn_status sort_by_key(bn_cuda_state *st, const bn_domain *d, int weighted, keyed *k)
{
    const int n = st->n;
    const size_t m = n ? (size_t)n : 1;
    k->key = (uint64_t *)bn_alloc(m * sizeof *k->key, "re-balance keys");
    k->u = (int *)bn_alloc(m * sizeof *k->u, "re-balance order");
    k->w = weighted ? (double *)bn_alloc(m * sizeof *k->w, "re-balance weights") : NULL;
    if (!k->key || !k->u || (weighted && !k->w)) return BN_ERR_NOMEM;
    if (n == 0) return BN_OK;
    uint64_t *keys = NULL, *keys_alt = NULL;
    int *idx_alt = NULL, *u = NULL;
    float *w = NULL, *wh = NULL;
    bn_gpu_frame *frame = NULL;
    bn_gpu_frame f;
    memset(&f, 0, sizeof f);
    memcpy(f.box_lo, d->lo, sizeof f.box_lo);
    f.box_size = d->side;
    bn_status s = bn_cuda_dev_alloc(&keys, m, "re-balance keys", st->s);
    if (s == BN_OK) s = bn_cuda_dev_alloc(&keys_alt, m, "re-balance keys", st->s);
    if (s == BN_OK) s = bn_cuda_dev_alloc(&k->idx, m, "re-balance order", st->s);
    if (s == BN_OK) s = bn_cuda_dev_alloc(&idx_alt, m, "re-balance order", st->s);
    if (s == BN_OK) s = bn_cuda_dev_alloc(&u, m, "re-balance order", st->s);
    if (s == BN_OK) s = bn_cuda_dev_alloc(&w, m, "re-balance weights", st->s);
    if (s == BN_OK) s = bn_cuda_dev_alloc(&frame, 1, "re-balance cube", st->s);
    if (s == BN_OK) s = ok(cudaMemcpyAsync(frame, &f, sizeof f, cudaMemcpyHostToDevice, st->s), "re-balance cube");
    if (s == BN_OK) s = bn_gpu_keys(st->pos, NULL, 0.0, n, frame, d->curve == BN_CURVE_HILBERT, keys, k->idx, st->s);
    if (s == BN_OK) s = bn_gpu_sort_pairs(&keys, &keys_alt, &k->idx, &idx_alt, n, 3 * BN_KEY_MAX_LEVEL, st->s);
    if (s == BN_OK) {
        key_order_fields<<<blocks_for(n), kThreads, 0, st->s>>>(k->idx, st->orig, weighted ? st->cost : NULL, n, w, u);
        s = ok(cudaGetLastError(), "re-balance order");
    }
    if (s == BN_OK) s = bn_cuda_read(k->key, keys, m * sizeof *k->key, "re-balance keys", st->s);
    if (s == BN_OK) s = bn_cuda_read(k->u, u, m * sizeof *k->u, "re-balance order", st->s);
    if (s == BN_OK && weighted) {
        wh = (float *)bn_alloc(m * sizeof *wh, "re-balance weights");
        s = wh ? bn_cuda_read(wh, w, m * sizeof *wh, "re-balance weights", st->s) : BN_ERR_NOMEM;
        for (int i = 0; s == BN_OK && i < n; i++) k->w[i] = wh[i];
    }
    free(wh);
    bn_cuda_free(keys, st->s);
    bn_cuda_free(keys_alt, st->s);
    bn_cuda_free(idx_alt, st->s);
    bn_cuda_free(u, st->s);
    bn_cuda_free(w, st->s);
    bn_cuda_free(frame, st->s);
    return s;
}
} // namespace

namespace {
/* Where each rank's records go: counts[r] of the key order from off[r];
 * the MPI counts leave this rank's own out (they stay on the device). */
struct plan {
    size_t *counts, *off, *mpi, *recv;
    int me, P;
};

/* The host's records of the particles, key order (u: uploaded index). */
bn_status host_records(const bn_cuda_state *st, const bn_particles *host, const keyed *k, host_rec *out)
{
    for (int j = 0; j < st->n; j++) {
        const int i = k->u[j];
        out[j] = host_rec{st->host_id[i], st->host_mass[i], k->w ? k->w[j] : 1.0,
                          (uint64_t)bn_particles_part_type(host, (size_t)i)};
    }
    return BN_OK;
}

/* Where the new set takes each sender's records: the lower ranks' from
 * 0, its own after them, the higher ranks' after its own (the curve's
 * order). recv[me] is 0: its own stay on the device. */
void placement(const plan *pl, size_t *at)
{
    size_t o = 0;
    for (int r = 0; r < pl->P; r++) {
        at[r] = o;
        o += r == pl->me ? pl->counts[r] : pl->recv[r];
    }
}

/* Host staging: the records that leave, down; those that come, up. */
bn_status staged_exchange(const bn_comm *c, bn_cuda_state *st, const dev_rec *d_all, const plan *pl,
                          const size_t *at, dev_rec *d_new, size_t n_new)
{
    const size_t n = (size_t)st->n, first = pl->off[pl->me], mine = pl->counts[pl->me];
    dev_rec *out = (dev_rec *)bn_alloc((n + 1) * sizeof *out, "records to send");
    dev_rec *in = (dev_rec *)bn_alloc((n_new + 1) * sizeof *in, "records received");
    bn_status s = out && in ? BN_OK : BN_ERR_NOMEM;
    if (s == BN_OK && first) s = bn_cuda_read(out, d_all, first * sizeof *out, "records to send", st->s);
    if (s == BN_OK && n > first + mine)
        s = bn_cuda_read(out + first + mine, d_all + first + mine, (n - first - mine) * sizeof *out, "records to send",
                         st->s);
    s = bn_comm_agree(c, s);
    if (s == BN_OK) s = bn_comm_alltoallv_placed(c, out, pl->mpi, pl->off, sizeof *out, in, pl->recv, at);
    const size_t below = at[pl->me], above = n_new - below - mine;
    if (s == BN_OK && below)
        s = ok(cudaMemcpyAsync(d_new, in, below * sizeof *in, cudaMemcpyHostToDevice, st->s), "records up");
    if (s == BN_OK && above)
        s = ok(cudaMemcpyAsync(d_new + below + mine, in + below + mine, above * sizeof *in, cudaMemcpyHostToDevice,
                               st->s), "records up");
    if (s == BN_OK) s = ok(cudaStreamSynchronize(st->s), "records up"); /* in is freed next */
    free(out);
    free(in);
    return s;
}

/* The device records of the new set, *d_new (*n_new of them): its own
 * copied on the device, the others' received into place, straight
 * between devices where MPI takes device pointers (bn_comm_cuda_aware),
 * else through host staging. */
bn_status move_device_records(const bn_comm *c, bn_cuda_state *st, const dev_rec *d_all, plan *pl, dev_rec **d_new,
                              size_t *n_new)
{
    const size_t first = pl->off[pl->me], mine = pl->counts[pl->me];
    size_t *at = (size_t *)bn_alloc((size_t)pl->P * sizeof *at, "re-balance offsets");
    BN_TRY(bn_comm_agree(c, at ? BN_OK : BN_ERR_NOMEM));
    bn_status s = bn_comm_counts(c, pl->mpi, pl->recv); /* agreed */
    size_t n_in = 0;
    for (int r = 0; s == BN_OK && r < pl->P; r++) n_in += pl->recv[r];
    if (s == BN_OK) {
        placement(pl, at);
        *n_new = mine + n_in;
        s = bn_cuda_dev_alloc(d_new, *n_new ? *n_new : 1, "re-balanced particles", st->s);
    }
    if (s == BN_OK && mine)
        s = ok(cudaMemcpyAsync(*d_new + at[pl->me], d_all + first, mine * sizeof(dev_rec), cudaMemcpyDeviceToDevice,
                               st->s), "own records");
    if (s == BN_OK) s = ok(cudaStreamSynchronize(st->s), "own records"); /* MPI reads the buffers next */
    s = bn_comm_agree(c, s);
    if (s == BN_OK && bn_comm_cuda_aware(c))
        s = bn_comm_alltoallv_placed(c, d_all, pl->mpi, pl->off, sizeof(dev_rec), *d_new, pl->recv, at);
    else if (s == BN_OK)
        s = staged_exchange(c, st, d_all, pl, at, *d_new, *n_new);
    free(at);
    return bn_comm_agree(c, s);
}

/* The host's records of the new set, in the same places (ids, masses
 * and types live on the host). */
bn_status move_host_records(const bn_comm *c, const host_rec *h_all, const plan *pl, size_t n_new, host_rec **h_new)
{
    size_t *at = (size_t *)bn_alloc((size_t)pl->P * sizeof *at, "re-balance offsets");
    *h_new = (host_rec *)bn_alloc((n_new + 1) * sizeof **h_new, "re-balanced particles");
    bn_status s = bn_comm_agree(c, at && *h_new ? BN_OK : BN_ERR_NOMEM);
    if (s == BN_OK) {
        placement(pl, at);
        memcpy(*h_new + at[pl->me], h_all + pl->off[pl->me], pl->counts[pl->me] * sizeof **h_new);
        s = bn_comm_alltoallv_placed(c, h_all, pl->mpi, pl->off, sizeof **h_new, *h_new, pl->recv, at);
    }
    free(at);
    return s;
}

/* The new device arrays and host copies from the new set's records. */
bn_status install(bn_cuda_state *st, const dev_rec *d_new, const host_rec *h, size_t n, bn_particles *host, int types)
{
    if (n > (size_t)INT_MAX / 2) return bn_fail(BN_ERR_ARGUMENT, "re-balance: %zu particles on one rank", n);
    cudaStream_t q = st->s;
    bn_cuda_particles_free(st);
    bn_status s = bn_cuda_particles_alloc(st, (int)n);
    float *m = (float *)bn_alloc((n + 1) * sizeof *m, "float masses");
    if (s == BN_OK && !m) s = BN_ERR_NOMEM;
    /* the mirror's contents come from the records (or a later download):
     * remade, not grown, with room for the steps' crossers until the next
     * cut (a mirror grown inside a step took 110-170 ms on 4 GPUs, the
     * old arrays' pages freed: issue 18, session 34) */
    if (s == BN_OK && n > host->capacity) s = bn_particles_remake(host, n + n / 8);
    if (s == BN_OK) s = bn_particles_resize(host, n);
    if (s == BN_OK && types) s = bn_particles_ensure_types(host);
    for (size_t i = 0; s == BN_OK && i < n; i++) {
        st->host_id[i] = host->id[i] = h[i].id;
        st->host_mass[i] = host->mass[i] = h[i].mass;
        if (types) host->type[i] = (uint8_t)h[i].type;
        m[i] = (float)h[i].mass;
    }
    if (s == BN_OK) st->n = (int)n;
    if (s == BN_OK) s = bn_cuda_particles_set_types(st, host);
    if (s == BN_OK && n) s = ok(cudaMemcpyAsync(st->mass, m, n * sizeof *m, cudaMemcpyHostToDevice, q), "masses up");
    if (s == BN_OK && n) {
        unpack_kernel<<<blocks_for((int)n), kThreads, 0, q>>>(d_new, (int)n, st->pos[0], st->pos[1], st->pos[2],
                                                               st->vel[0], st->vel[1], st->vel[2], st->acc, st->orig);
        s = ok(cudaGetLastError(), "unpacking particles");
    }
    if (s == BN_OK) s = ok(cudaStreamSynchronize(q), "unpacking particles"); /* m is freed next */
    free(m);
    return s;
}
} // namespace

namespace {
void plan_free(plan *pl)
{
    free(pl->counts);
    memset(pl, 0, sizeof *pl);
}

bn_status plan_make(const bn_comm *c, const bn_domain *d, const keyed *k, size_t n, plan *pl)
{
    pl->P = bn_comm_size(c);
    pl->me = bn_comm_rank(c);
    pl->counts = (size_t *)bn_alloc(4 * (size_t)pl->P * sizeof(size_t), "re-balance counts");
    if (!pl->counts) return BN_ERR_NOMEM;
    pl->off = pl->counts + pl->P;
    pl->mpi = pl->off + pl->P;
    pl->recv = pl->mpi + pl->P;
    bn_domain_counts(d, k->key, n, pl->counts);
    size_t o = 0;
    for (int r = 0; r < pl->P; r++) {
        pl->off[r] = o;
        o += pl->counts[r];
        pl->mpi[r] = r == pl->me ? 0 : pl->counts[r];
    }
    return BN_OK;
}

/* The particles packed in key order on the device, and the host's part
 * of them. */
bn_status pack_all(bn_cuda_state *st, const bn_particles *host, const keyed *k, dev_rec **d_all, host_rec **h_all)
{
    const int n = st->n;
    BN_TRY(bn_cuda_dev_alloc(d_all, n ? (size_t)n : 1, "particles to move", st->s));
    *h_all = (host_rec *)bn_alloc(((size_t)n + 1) * sizeof **h_all, "particles to move");
    if (!*h_all) return BN_ERR_NOMEM;
    if (n) {
        pack_kernel<<<blocks_for(n), kThreads, 0, st->s>>>(st->pos[0], st->pos[1], st->pos[2], st->vel[0], st->vel[1],
                                                            st->vel[2], st->acc, k->idx, n, *d_all);
        BN_TRY(ok(cudaGetLastError(), "packing particles"));
    }
    return host_records(st, host, k, *h_all);
}

} // namespace

/* The new set's float units, as an upload makes them. */
bn_status bn_cuda_new_scales(bn_cuda_state *st)
{
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, mass = 0;
    if (st->n > 0) BN_TRY(device_box(st, lo, hi));
    double cube[3];
    const double side = st->n > 0 ? bn_key_cube(lo, hi, cube) : 0.0;
    BN_TRY(bn_cuda_host_masses(st));
    for (int i = 0; i < st->n; i++) mass += st->host_mass[i];
    bn_cuda_set_scales(st, side, mass);
    return BN_OK;
}

namespace {

/* The weights every rank cuts by: the measured costs where every rank
 * has them, else none (by count). */
bn_status agreed_weights(const bn_comm *c, const bn_cuda_state *st, int *weighted)
{
    double have = st->cost != NULL || st->n == 0;
    BN_TRY(bn_comm_allreduce(c, &have, 1, BN_REDUCE_MIN));
    *weighted = have > 0;
    return BN_OK;
}

/* Gravity:balance_cost time: the weights (counted flops) scaled by this
 * rank's measured walk time per flop (parallel/balance.h). Collective. */
bn_status time_weights(const bn_comm *c, bn_cuda_state *st, keyed *k, size_t n)
{
    double flops = 0, seconds = 0, scale = 1;
    for (size_t i = 0; i < n; i++) flops += k->w[i];
    BN_TRY(bn_comm_agree(c, bn_cuda_walk_seconds(st, &seconds, 1)));
    BN_TRY(bn_balance_time_scale(c, seconds, flops, &scale));
    bn_trace_count("domains: walks' time since the cut (us)", 1e6 * seconds);
    bn_trace_count("domains: counted Mflop since the cut", 1e-6 * flops);
    bn_trace_count("domains: time scale x1000", 1e3 * scale);
    if (scale != 1)
        for (size_t i = 0; i < n; i++) k->w[i] *= scale;
    return BN_OK;
}

/* Types everywhere when some rank has them (a rank's PartType1 particles
 * may go to one that holds others), forces when every rank has them. */
bn_status agreed_fields(const bn_comm *c, const bn_cuda_state *st, const bn_particles *host, int *types, int *forces)
{
    double v[2] = {host->type ? 1.0 : 0.0, st->have_forces || st->n == 0 ? 1.0 : 0.0};
    BN_TRY(bn_comm_allreduce(c, v, 1, BN_REDUCE_MAX));
    BN_TRY(bn_comm_allreduce(c, v + 1, 1, BN_REDUCE_MIN));
    *types = v[0] > 0;
    *forces = v[1] > 0;
    return BN_OK;
}
} // namespace

bn_status bn_cuda_rebalance(void *p, bn_particles *host, bn_curve curve, bn_domain_stats *dst, bn_domain *cut)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    const bn_comm *c = st->comm;
    const double t0 = bn_wall_seconds();
    memset(dst, 0, sizeof *dst);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    /* the records take ids, masses and part types from the host copies and
     * the mirror, which the crossers' moves left behind the device's */
    BN_TRY(bn_comm_agree(c, bn_cuda_mirror_ids(st, host)));
    BN_TRY(bn_comm_agree(c, st->n > 0 ? device_box(st, lo, hi) : BN_OK));
    int weighted = 0, types = 0, forces = 0;
    BN_TRY(agreed_weights(c, st, &weighted));
    BN_TRY(agreed_fields(c, st, host, &types, &forces));
    bn_domain d;
    keyed k;
    plan pl;
    memset(&k, 0, sizeof k);
    memset(&pl, 0, sizeof pl);
    dev_rec *d_all = NULL, *d_new = NULL;
    host_rec *h_all = NULL, *h_new = NULL;
    size_t n_new = 0;
    const size_t n = (size_t)st->n;
    bn_status s = bn_domain_prepare(c, lo, hi, curve, &d); /* agreed */
    if (s == BN_OK) s = bn_comm_agree(c, sort_by_key(st, &d, weighted, &k));
    if (s == BN_OK && weighted && st->g.balance_cost == BN_TUNE_TIME) s = time_weights(c, st, &k, n);
    if (s == BN_OK && weighted) { /* costs that add up to nothing (idle steps only) cut as by count would */
        double W = 0;
        for (size_t i = 0; i < n; i++) W += k.w[i];
        s = bn_comm_allreduce(c, &W, 1, BN_REDUCE_SUM);
        if (s == BN_OK && !(W > 0)) {
            free(k.w);
            k.w = NULL;
        }
    }
    if (s == BN_OK) s = bn_domain_cut_sorted(c, k.key, k.w, n, &d);
    if (s == BN_OK) s = bn_comm_agree(c, plan_make(c, &d, &k, n, &pl));
    if (s == BN_OK) s = bn_comm_agree(c, pack_all(st, host, &k, &d_all, &h_all));
    if (s == BN_OK) s = move_device_records(c, st, d_all, &pl, &d_new, &n_new); /* agreed */
    if (s == BN_OK) s = move_host_records(c, h_all, &pl, n_new, &h_new); /* agreed */
    double W = 0;
    for (size_t i = 0; s == BN_OK && i < n_new; i++) W += h_new[i].weight;
    if (s == BN_OK) s = bn_comm_agree(c, install(st, d_new, h_new, n_new, host, types));
    if (s == BN_OK) s = bn_comm_agree(c, bn_cuda_new_scales(st));
    if (s == BN_OK) {
        st->have_forces = forces; /* they moved with the particles */
        bn_trace_count("domains: particles after the cut", (double)n_new);
        dst->sent = n - pl.counts[pl.me];
        dst->received = n_new - pl.counts[pl.me];
        s = bn_domain_shares(c, W, dst);
    }
    bn_cuda_free(d_all, st->s);
    bn_cuda_free(d_new, st->s);
    free(h_all);
    free(h_new);
    keyed_free(&k, st->s);
    plan_free(&pl);
    if (s == BN_OK && cut) *cut = d; /* the caller's now (migrate()) */
    else bn_domain_release(&d);
    dst->t_total = bn_wall_seconds() - t0;
    return s;
}
