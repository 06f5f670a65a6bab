/*
 * The CUDA backend across ranks (issues 17, 18). Each rank builds its tree
 * on its device and queues the local walk; beside it, on a stream of its
 * own, the tree's target boxes and every other rank's locally essential
 * tree are selected and packed on the device (parallel/let_cuda.cu: only
 * the boxes and the messages reach the host) and exchanged
 * (parallel/forces_dist.c, the CPU backend's exchange: the same messages,
 * so ranks of either backend could meet), and the trees received are
 * uploaded and walked on the
 * device for the local groups (gravity/walk_remote_cuda.cu), after the
 * local walk, senders in rank order: the same sums in the same order
 * every time. The messages go through host memory: the MPI library is
 * not assumed to be CUDA-aware. Direct summation gathers every rank's
 * sources on every rank and sums them on the device for the local
 * targets (small N: O(N) memory per rank).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "core/timer.h"
#include "core/trace.h"
#include "parallel/comm.h"
#include "parallel/forces_dist.h"
}
#include "core/backend_cuda.h"
#include "core/backend_cuda_state.h"
#include "parallel/let_gpu.h"

namespace {
bn_status cuda_ok(cudaError_t e, const char *what) { return e == cudaSuccess ? BN_OK : bn_cuda_fail(e, what, __FILE__, __LINE__); }


/* The trees received, walked on the device for every local group; their
 * interaction counts kept (each walk waits for its counts). */
bn_status walk_received(bn_cuda_state *st, const bn_gravity_params *g, const bn_gpu_active *act, const bn_let *lets,
                        int P)
{
    bn_status s = BN_OK;
    for (int r = 0; s == BN_OK && r < P; r++) {
        if (lets[r].src.n_cells == 0 || st->n == 0) continue;
        bn_gpu_source src;
        memset(&src, 0, sizeof src);
        double t = bn_wall_seconds();
        s = bn_gpu_source_upload(&lets[r].src, &st->tree.t, NULL, g->G, &src, st->s);
        bn_trace_stage("received tree uploaded", &t);
        if (s == BN_OK) s = bn_gpu_walk_remote(&st->tree.t, &src, g, act, st->acc, &st->remote, st->s);
        bn_trace_stage("received tree walked", &t);
        bn_gpu_source_free(&src, st->s);
        if (s != BN_OK) s = bn_fail_context(s, "the locally essential tree from rank %d", r);
    }
    return s;
}

void keep_exchange(bn_force_stats *out, const bn_let_stats *x)
{
    out->let_cells_sent = x->cells_sent;
    out->let_bodies_sent = x->bodies_sent;
    out->let_cells_received = x->cells_received;
    out->let_bodies_received = x->bodies_received;
    out->t_exchange = x->t_exchange;
}
} // namespace

bn_status bn_cuda_old_accel(const bn_cuda_state *st, double **out)
{
    const size_t n = (size_t)st->n;
    *out = NULL;
    double *a = (double *)bn_alloc((n ? n : 1) * sizeof(double), "old accelerations");
    float4 *f = (float4 *)bn_alloc((n ? n : 1) * sizeof(float4), "old accelerations");
    int *orig = (int *)bn_alloc((n ? n : 1) * sizeof(int), "old accelerations");
    bn_status r = a && f && orig ? BN_OK : BN_ERR_NOMEM;
    if (r == BN_OK && n) r = bn_cuda_read(f, st->acc, n * sizeof(float4), "old accelerations", st->s);
    if (r == BN_OK && n) r = bn_cuda_read(orig, st->orig, n * sizeof(int), "old accelerations", st->s);
    for (size_t i = 0; r == BN_OK && i < n; i++) /* by uploaded index, as the host copy's order maps */
        a[orig[i]] = hypot(hypot((double)f[i].x, (double)f[i].y), (double)f[i].z);
    free(f);
    free(orig);
    if (r != BN_OK) {
        free(a);
        return r;
    }
    *out = a;
    return BN_OK;
}

int bn_cuda_let_on_host(void) { return getenv("BANYAN_LET_HOST") != NULL; }

bn_status bn_cuda_tree_ready(bn_cuda_state *st)
{
    if (!st->let_s) { /* high priority: its small kernels go before the waiting blocks of the local walk */
        int least = 0, greatest = 0;
        BN_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        BN_CUDA_CHECK(cudaStreamCreateWithPriority(&st->let_s, cudaStreamNonBlocking, greatest));
    }
    if (!st->let_ready) BN_CUDA_CHECK(cudaEventCreateWithFlags(&st->let_ready, cudaEventDisableTiming));
    BN_CUDA_CHECK(cudaEventRecord(st->let_ready, st->s));
    return BN_OK;
}

namespace {
/* The packer of the tree on the device (parallel/let_gpu.h). */
bn_status device_boxes(void *ctx, double **box, size_t *n)
{
    return bn_gpu_let_boxes((const bn_gpu_let_tree *)ctx, box, n);
}

bn_status device_pack(void *ctx, const double *boxes, int n, bn_words *msg)
{
    return bn_gpu_let_pack((const bn_gpu_let_tree *)ctx, boxes, n, msg);
}

/* The exchange from the tree where it lives: selected and packed on the
 * device, on the exchange's stream once the tree is made, beside the
 * local walk. BANYAN_LET_HOST=1: from the tree's host copy instead (the
 * first way, kept to compare against: every node and body downloaded). */
bn_status exchange(bn_cuda_state *st, const bn_gravity_params *g, const double *acc_old, bn_let **lets, bn_let_stats *x)
{
    if (bn_cuda_let_on_host()) {
        bn_tree host;
        memset(&host, 0, sizeof host);
        BN_TRY(bn_comm_agree(st->comm, st->n > 0 ? bn_gpu_tree_to_host(st, g, &host) : BN_OK));
        const bn_status s = bn_let_exchange(st->comm, g, st->n > 0 ? &host : NULL, g->mac, acc_old, lets, x);
        bn_gpu_tree_host_free(&host);
        return s;
    }
    bn_status s = st->n > 0 ? cuda_ok(cudaStreamWaitEvent(st->let_s, st->let_ready, 0), "the exchange's stream") : BN_OK;
    const bn_gpu_let_tree lt = {&st->tree.t, {st->pos[0], st->pos[1], st->pos[2]}, st->mass, g->G, g->group_size,
                                g->mac, st->let_s};
    const bn_let_packer pk = {device_boxes, device_pack, 0, (void *)&lt};
    bn_let_pending *pending = NULL;
    s = bn_comm_agree(st->comm, s);
    if (s == BN_OK) s = bn_let_exchange_start_with(st->comm, st->n > 0 ? &pk : NULL, &pending, x); /* agreed */
    if (s == BN_OK) s = bn_let_exchange_finish(st->comm, pending, lets, x);
    return s;
}
} // namespace

bn_status bn_cuda_add_remote(bn_cuda_state *st, const bn_gravity_params *g, const bn_gpu_active *act,
                             const double *acc_old)
{
    memset(&st->remote, 0, sizeof st->remote);
    const int P = bn_comm_size(st->comm);
    double t = bn_wall_seconds();
    bn_let *lets = NULL;
    bn_let_stats x;
    memset(&x, 0, sizeof x);
    bn_status s = exchange(st, g, acc_old, &lets, &x); /* agreed */
    keep_exchange(&st->remote, &x);
    bn_trace_stage("LET exchange", &t);
    if (s == BN_OK) s = bn_comm_agree(st->comm, walk_received(st, g, act, lets, P));
    bn_trace_stage("received trees walked", &t);
    bn_lets_free(lets, P);
    return s;
}

namespace {
/* This rank's particles in the device's (key) order, with their forces,
 * on the host: positions exact, masses and forces as the device holds
 * them (floats). */
bn_status particles_to_host(const bn_cuda_state *st, bn_particles **out)
{
    const size_t n = (size_t)st->n;
    BN_TRY(bn_particles_create(out, n));
    bn_particles *p = *out;
    BN_TRY(bn_particles_ensure_forces(p));
    if (n == 0) return BN_OK;
    float *m = (float *)bn_alloc(n * sizeof(float), "error sample (masses)");
    float4 *f = (float4 *)bn_alloc(n * sizeof(float4), "error sample (forces)");
    bn_status r = m && f ? BN_OK : BN_ERR_NOMEM;
    for (int k = 0; k < 3 && r == BN_OK; k++) r = bn_cuda_read(p->pos[k], st->pos[k], n * sizeof(double), "error sample", st->s);
    if (r == BN_OK) r = bn_cuda_read(m, st->mass, n * sizeof(float), "error sample", st->s);
    if (r == BN_OK) r = bn_cuda_read(f, st->acc, n * sizeof(float4), "error sample", st->s);
    for (size_t i = 0; r == BN_OK && i < n; i++) {
        p->mass[i] = m[i];
        p->acc[0][i] = f[i].x;
        p->acc[1][i] = f[i].y;
        p->acc[2][i] = f[i].z;
        p->pot[i] = f[i].w;
        p->id[i] = i;
    }
    free(m);
    free(f);
    return r;
}
} // namespace

namespace {

/* This rank's positions (exact) and masses (the device's floats: a force
 * call's upload keeps no host copy) as a particle set, the sources it
 * gives to the others. */
bn_status sources_to_host(const bn_cuda_state *st, bn_particles **out)
{
    const size_t n = (size_t)st->n;
    BN_TRY(bn_particles_create(out, n));
    float *m = (float *)bn_alloc((n ? n : 1) * sizeof(float), "direct summation's sources");
    bn_status r = m ? BN_OK : BN_ERR_NOMEM;
    for (int k = 0; k < 3 && r == BN_OK && n; k++)
        r = bn_cuda_read((*out)->pos[k], st->pos[k], n * sizeof(double), "direct summation's sources", st->s);
    if (r == BN_OK && n) r = bn_cuda_read(m, st->mass, n * sizeof(float), "direct summation's sources", st->s);
    for (size_t i = 0; r == BN_OK && i < n; i++) (*out)->mass[i] = m[i];
    free(m);
    return r;
}

/* Every rank's sources on the device, bodies in this rank's frame and
 * units, and the local targets' forces from all of them (this rank's
 * from index first). */
bn_status direct_over(bn_cuda_state *st, const bn_particles *all, size_t first)
{
    const size_t N = all->n;
    if (N > (size_t)INT_MAX) return bn_fail(BN_ERR_ARGUMENT, "GPU direct summation over ranks: %zu sources", N);
    double *pos[3] = {NULL, NULL, NULL};
    float *m = NULL, *hm = (float *)bn_alloc(N * sizeof(float), "direct summation's masses");
    float4 *body = NULL, *lo = NULL;
    bn_status s = hm ? BN_OK : BN_ERR_NOMEM;
    for (size_t i = 0; s == BN_OK && i < N; i++) hm[i] = (float)all->mass[i]; /* as the upload makes them */
    for (int k = 0; k < 3 && s == BN_OK; k++) s = bn_cuda_dev_alloc(&pos[k], N, "direct summation's sources", st->s);
    if (s == BN_OK) s = bn_cuda_dev_alloc(&m, N, "direct summation's sources", st->s);
    if (s == BN_OK) s = bn_cuda_dev_alloc(&body, N, "direct summation's sources", st->s);
    if (s == BN_OK) s = bn_cuda_dev_alloc(&lo, N, "direct summation's sources", st->s);
    for (int k = 0; k < 3 && s == BN_OK; k++)
        s = cuda_ok(cudaMemcpyAsync(pos[k], all->pos[k], N * sizeof(double), cudaMemcpyHostToDevice, st->s), "sources up");
    if (s == BN_OK) s = cuda_ok(cudaMemcpyAsync(m, hm, N * sizeof(float), cudaMemcpyHostToDevice, st->s), "masses up");
    const bn_gpu_tree *t = &st->tree.t;
    if (s == BN_OK) s = bn_gpu_bounding_box(pos, (int)N, &st->tree, st->s); /* every rank's frame */
    if (s == BN_OK) s = bn_gpu_make_bodies(pos, m, st->tree.frame, t->len_scale, t->mass_scale, (int)N, body, lo, st->s);
    if (s == BN_OK)
        s = bn_gpu_direct_targets(body, lo, (int)N, (int)first, st->n, st->g.G, st->g.softening, t->len_scale,
                                  t->mass_scale, st->acc, st->s, 0);
    if (s == BN_OK) s = cuda_ok(cudaStreamSynchronize(st->s), "direct summation over ranks"); /* hm is read by the copy */
    for (int k = 0; k < 3; k++) bn_cuda_free(pos[k], st->s);
    bn_cuda_free(m, st->s);
    bn_cuda_free(body, st->s);
    bn_cuda_free(lo, st->s);
    free(hm);
    return s;
}
} // namespace

bn_status bn_cuda_direct_ranks(bn_cuda_state *st)
{
    memset(&st->remote, 0, sizeof st->remote);
    bn_particles *mine = NULL, *all = NULL;
    size_t first = 0;
    bn_status s = bn_comm_agree(st->comm, sources_to_host(st, &mine));
    if (s == BN_OK) s = bn_gather_sources(st->comm, mine, &all, &first); /* agreed */
    bn_particles_free(mine);
    if (s == BN_OK && st->n > 0) s = direct_over(st, all, first);
    if (s == BN_OK) st->remote.n_pp = (double)st->n * (double)(all->n - (size_t)st->n); /* beyond the local pairs */
    bn_particles_free(all);
    return bn_comm_agree(st->comm, s);
}

namespace {
constexpr int kSumThreads = 256, kSumPerBlock = 8 * kSumThreads;

/* partial[b] = the sum of v over block b's range, in a fixed tree order
 * (no atomics: the same bits every run). */
__global__ void sum_partials(const float *v, int n, double *partial)
{
    __shared__ double sh[kSumThreads];
    const int base = blockIdx.x * kSumPerBlock;
    double x = 0;
    for (int i = base + threadIdx.x; i < n && i < base + kSumPerBlock; i += kSumThreads) x += v[i];
    sh[threadIdx.x] = x;
    __syncthreads();
    for (int w = kSumThreads / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

/* One thread adds the partials in block order. */
__global__ void sum_total(double *partial, int blocks)
{
    double t = 0;
    for (int b = 0; b < blocks; b++) t += partial[b];
    partial[blocks] = t;
}

/* The sum of the costs on the device, read back (8 bytes). */
bn_status cost_total(const bn_cuda_state *st, double *total)
{
    *total = 0;
    if (st->n == 0) return BN_OK;
    const int blocks = (st->n + kSumPerBlock - 1) / kSumPerBlock;
    double *buf = NULL;
    BN_TRY(bn_cuda_dev_alloc(&buf, (size_t)blocks + 1, "the costs' sum", st->s));
    sum_partials<<<blocks, kSumThreads, 0, st->s>>>(st->cost, st->n, buf);
    sum_total<<<1, 1, 0, st->s>>>(buf, blocks);
    bn_status r = cuda_ok(cudaGetLastError(), "the costs' sum");
    if (r == BN_OK) r = bn_cuda_read(total, buf + blocks, sizeof *total, "the costs' sum", st->s);
    bn_cuda_free(buf, st->s);
    return r;
}
} // namespace

bn_status bn_cuda_costs(void *p, double *out, double *total, int *measured)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    *measured = st->cost != NULL || (st->n == 0 && st->have_forces); /* an empty rank has measured its nothing */
    *total = 0;
    if (!st->cost) return BN_OK;
    BN_TRY(cost_total(st, total));
    if (!out) return BN_OK;
    const size_t n = (size_t)st->n;
    float *f = (float *)bn_alloc((n ? n : 1) * sizeof(float), "particle costs");
    if (!f) return BN_ERR_NOMEM;
    bn_status s = bn_cuda_read(f, st->cost, n * sizeof(float), "particle costs", st->s);
    for (size_t i = 0; s == BN_OK && i < n; i++) out[i] = f[i];
    free(f);
    BN_TRY(s);
    BN_CUDA_CHECK(cudaMemsetAsync(st->cost, 0, n * sizeof(float), st->s));
    return BN_OK;
}

bn_status bn_cuda_sample_ranks(bn_cuda_state *st, size_t n, uint64_t seed, double *acc_ref, double *pot_ref,
                               double *acc, double *pot)
{
    bn_particles *p = NULL;
    bn_status s = st->have_forces ? particles_to_host(st, &p) : bn_fail(BN_ERR_ARGUMENT, "error sample: no forces");
    s = bn_comm_agree(st->comm, s);
    if (s == BN_OK)
        s = bn_sample_forces_dist_cpu(st->comm, p, st->g.G, st->g.softening, n, seed, acc_ref, pot_ref, acc, pot);
    bn_particles_free(p);
    return s;
}
