/*
 * The CUDA backend across ranks (issues 17, 18). Each rank builds its tree
 * on its device and queues the local walk; beside it, on a stream of its
 * own, the tree's target boxes and every other rank's locally essential
 * tree are selected and packed on the device (parallel/let_cuda.cu), sent
 * device to device (NCCL where every rank has its own GPU, else pinned
 * host buffers and MPI: parallel/let_link_cuda.cu), and the trees
 * received are checked and converted on the device (the same messages as
 * the CPU backend's, so ranks of either backend could meet) and walked
 * for the local groups (gravity/walk_remote_cuda.cu) beside the local
 * walk, on the exchange's stream, into sums of their own that are added
 * to the local walk's once both are done; senders in rank order: the
 * same sums in the same order every time. Direct summation gathers every rank's sources on every rank and
 * sums them on the device for the local targets (small N: O(N) memory
 * per rank).
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


/* Every received tree's staged words on the device, from senders in
 * rank order (staged[i], n_cells[i], n_bodies[i]; *k of them), merged
 * into one source (bn_gpu_source_merge) on stream: one walk takes them
 * all. */
struct staged_trees {
    const uint64_t **w;
    int *n_cells, *n_bodies;
    int k;
};

bn_status staged_make(staged_trees *t, int P)
{
    memset(t, 0, sizeof *t);
    t->w = (const uint64_t **)bn_calloc((size_t)P, sizeof *t->w, "received trees");
    t->n_cells = (int *)bn_calloc(2 * (size_t)P, sizeof *t->n_cells, "received trees");
    if (!t->w || !t->n_cells) return BN_ERR_NOMEM;
    t->n_bodies = t->n_cells + P;
    return BN_OK;
}

void staged_free(staged_trees *t)
{
    free((void *)t->w);
    free(t->n_cells);
    memset(t, 0, sizeof *t);
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

/* The exchange's stream, made once: high priority, so that its small
 * kernels go before the waiting blocks of the local walk. */
static bn_status let_stream(bn_cuda_state *st)
{
    if (st->let_s) return BN_OK;
    int least = 0, greatest = 0;
    BN_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    BN_CUDA_CHECK(cudaStreamCreateWithPriority(&st->let_s, cudaStreamNonBlocking, greatest));
    return BN_OK;
}

/* *ev (made at its first use) recorded on the stream s. */
static bn_status record_on(cudaEvent_t *ev, cudaStream_t s)
{
    if (!*ev) BN_CUDA_CHECK(cudaEventCreateWithFlags(ev, cudaEventDisableTiming));
    BN_CUDA_CHECK(cudaEventRecord(*ev, s));
    return BN_OK;
}

bn_status bn_cuda_tree_ready(bn_cuda_state *st)
{
    BN_TRY(let_stream(st));
    return record_on(&st->let_ready, st->s);
}

bn_status bn_cuda_walk_inputs_ready(bn_cuda_state *st) { return record_on(&st->walk_in, st->s); }

namespace {
/* The first way, kept to compare against (BANYAN_LET_HOST=1): the tree
 * downloaded, the LETs packed and unpacked on the host, each received
 * tree checked and staged up, and all merged as the device path merges
 * them (the same source, the same forces to the bit). */
bn_status exchange_on_host(bn_cuda_state *st, const bn_gravity_params *g, const double *acc_old,
                           bn_gpu_source *src, bn_let_stats *x)
{
    const int P = bn_comm_size(st->comm);
    bn_tree host;
    memset(&host, 0, sizeof host);
    bn_let *lets = NULL;
    BN_TRY(bn_comm_agree(st->comm, st->n > 0 ? bn_gpu_tree_to_host(st, g, &host) : BN_OK));
    bn_status s = bn_let_exchange(st->comm, g, st->n > 0 ? &host : NULL, g->mac, acc_old, &lets, x); /* agreed */
    bn_gpu_tree_host_free(&host);
    staged_trees t;
    memset(&t, 0, sizeof t);
    if (s == BN_OK) s = staged_make(&t, P);
    for (int r = 0; s == BN_OK && st->n > 0 && r < P; r++) {
        if (lets[r].src.n_cells == 0) continue;
        uint64_t *w = NULL;
        s = bn_gpu_source_stage(&lets[r].src, &w, &t.n_cells[t.k], &t.n_bodies[t.k], st->s);
        if (s == BN_OK) t.w[t.k++] = w;
    }
    if (s == BN_OK) s = bn_gpu_source_merge(t.w, t.n_cells, t.n_bodies, t.k, &st->tree.t, g->G, src, st->s);
    for (int i = 0; i < t.k; i++) bn_cuda_free((void *)t.w[i], st->s); /* stream-ordered: after the merge */
    staged_free(&t);
    bn_lets_free(lets, P);
    return bn_comm_agree(st->comm, s);
}

/* The received messages checked and merged into one source on the
 * exchange's stream (beside the local walk); the walk's stream then
 * waits for it. A rank without particles merges nothing. */
bn_status convert_received(bn_cuda_state *st, const bn_gravity_params *g, const bn_gpu_let_msg *got,
                           bn_gpu_source *src)
{
    const int P = bn_comm_size(st->comm);
    staged_trees t;
    bn_status s = staged_make(&t, P);
    for (int r = 0; s == BN_OK && r < P; r++) {
        if (!got[r].w || got[r].n_cells == 0) continue; /* nothing from r (a tree has a root at least) */
        s = bn_gpu_let_check(got + r, st->let_s);
        if (s != BN_OK) s = bn_fail_context(s, "the locally essential tree from rank %d", r);
        t.w[t.k] = got[r].w + 2;
        t.n_cells[t.k] = (int)got[r].n_cells;
        t.n_bodies[t.k++] = (int)got[r].n_bodies;
    }
    if (s == BN_OK && st->n > 0)
        s = bn_gpu_source_merge(t.w, t.n_cells, t.n_bodies, t.k, &st->tree.t, g->G, src, st->let_s);
    staged_free(&t);
    if (s == BN_OK && !st->let_done) s = cuda_ok(cudaEventCreateWithFlags(&st->let_done, cudaEventDisableTiming), "event");
    if (s == BN_OK) s = cuda_ok(cudaEventRecord(st->let_done, st->let_s), "the received trees' event");
    if (s == BN_OK) s = cuda_ok(cudaStreamWaitEvent(st->s, st->let_done, 0), "the remote walks' wait");
    if (s != BN_OK) cudaStreamSynchronize(st->let_s); /* the source is freed on s: no conversion may be left */
    return s;
}

/* The exchange from the tree where it lives: target boxes and LETs made
 * on the device on the exchange's stream once the tree is made (beside
 * the local walk), the messages sent device to device (let_gpu.h's
 * link), checked and converted there. */
bn_status exchange_on_device(bn_cuda_state *st, const bn_gravity_params *g, bn_gpu_source *src, bn_let_stats *x)
{
    const int P = bn_comm_size(st->comm);
    bn_status s = let_stream(st); /* a rank without particles made none at tree_ready */
    if (s == BN_OK && st->n > 0) s = cuda_ok(cudaStreamWaitEvent(st->let_s, st->let_ready, 0), "the exchange's stream");
    if ((s = bn_comm_agree(st->comm, s)) == BN_OK && !st->let_link)
        s = bn_gpu_let_link_create(st->comm, &st->let_link); /* agreed */
    const bn_gpu_let_tree lt = {&st->tree.t, {st->pos[0], st->pos[1], st->pos[2]}, st->mass, g->G, g->group_size,
                                g->mac, st->let_s};
    bn_gpu_let_msg *got = (bn_gpu_let_msg *)bn_calloc((size_t)P, sizeof *got, "received trees");
    if (s == BN_OK) s = bn_comm_agree(st->comm, got ? BN_OK : BN_ERR_NOMEM);
    if (s == BN_OK) s = bn_gpu_let_exchange(st->comm, st->let_link, st->n > 0 ? &lt : NULL, st->let_s, got, x);
    double t = bn_wall_seconds();
    if (s == BN_OK) s = bn_comm_agree(st->comm, convert_received(st, g, got, src));
    bn_trace_stage("exchange: trees checked and converted", &t);
    bn_gpu_let_msgs_free(got, got ? P : 0, st->let_s); /* stream-ordered: after the conversions */
    free(got);
    return s;
}
} // namespace

void bn_cuda_ranks_free(bn_cuda_state *st)
{
    if (st->let_s) {
        cudaStreamSynchronize(st->let_s);
        cudaStreamDestroy(st->let_s);
    }
    if (st->let_ready) cudaEventDestroy(st->let_ready);
    if (st->let_done) cudaEventDestroy(st->let_done);
    if (st->walk_in) cudaEventDestroy(st->walk_in);
    st->walk_in = NULL;
    bn_gpu_let_link_free(st->let_link);
    st->let_s = NULL;
    st->let_ready = st->let_done = NULL;
    st->let_link = NULL;
}

namespace {
/* The received walk's forces and costs (their own sums, zero where it
 * walked nothing) added to the local walk's: one fixed order, the same
 * bits every run. */
__global__ void add_received(float4 *acc, const float4 *got, float *cost, const float *got_cost, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float4 a = acc[i], b = got[i];
    acc[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    if (cost) cost[i] += got_cost[i];
}

/* The received walk beside the local one (BANYAN_REMOTE_BESIDE=0: after
 * it, on s, a tuning aid): both are latency-bound, so its blocks (its
 * stream has the greater priority) share the SMs with the local walk's;
 * on 4 H200s the span of both came within 1 ms of their sum, and the
 * force call 2 ms shorter (session 34). Not with the trees exchanged
 * through the host (staged on s). */
bool received_beside(void)
{
    const char *e = getenv("BANYAN_REMOTE_BESIDE");
    return !(e && !strcmp(e, "0")) && !bn_cuda_let_on_host();
}

/* The beside walk's own sums: forces, and costs where the local walk
 * measures them, zeroed on the exchange's stream. */
struct received_sums {
    float4 *acc;
    float *cost;
};

bn_status received_sums_make(bn_cuda_state *st, const bn_gpu_active *act, received_sums *r)
{
    const size_t n = (size_t)st->n;
    r->acc = NULL;
    r->cost = NULL;
    bn_status s = bn_cuda_dev_alloc(&r->acc, n, "the received walk's forces", st->let_s);
    if (s == BN_OK)
        s = cuda_ok(cudaMemsetAsync(r->acc, 0, n * sizeof(float4), st->let_s), "the received walk's forces");
    if (s == BN_OK && act && act->cost) {
        s = bn_cuda_dev_alloc(&r->cost, n, "the received walk's costs", st->let_s);
        if (s == BN_OK)
            s = cuda_ok(cudaMemsetAsync(r->cost, 0, n * sizeof(float), st->let_s), "the received walk's costs");
    }
    /* what the local walk reads was made before it was queued (walk_in) */
    if (s == BN_OK) s = cuda_ok(cudaStreamWaitEvent(st->let_s, st->walk_in, 0), "the received walk's wait");
    if (s == BN_OK) return BN_OK;
    (void)cudaGetLastError(); /* short of memory: none made, the caller walks after the local walk */
    bn_cuda_free(r->acc, st->let_s);
    bn_cuda_free(r->cost, st->let_s);
    r->acc = NULL;
    r->cost = NULL;
    return s;
}

/* s waits for the beside walk (ended: its end's record), adds its sums,
 * frees them (after the add, stream-ordered). Where s could not be made
 * to wait, the host waits for the walk: what s frees next (the sums, the
 * received sources, the bodies' low parts) is no longer read. */
bn_status received_sums_add(bn_cuda_state *st, const bn_gpu_active *act, received_sums *r, bn_status s,
                            cudaError_t ended)
{
    bn_status e = cuda_ok(ended, "the received walk's end");
    if (e == BN_OK) e = cuda_ok(cudaStreamWaitEvent(st->s, st->ev[BN_EV_REMOTE_END], 0), "the received walk's end");
    if (e != BN_OK) cudaStreamSynchronize(st->let_s);
    if (s == BN_OK && e == BN_OK && st->n > 0) {
        add_received<<<(st->n + 255) / 256, 256, 0, st->s>>>(st->acc, r->acc, r->cost ? act->cost : NULL, r->cost,
                                                            st->n);
        e = cuda_ok(cudaGetLastError(), "the received walk's sums");
    }
    bn_cuda_free(r->acc, st->s);
    bn_cuda_free(r->cost, st->s);
    return s != BN_OK ? s : e;
}
} // namespace

bn_status bn_cuda_add_remote(bn_cuda_state *st, const bn_gravity_params *g, const bn_gpu_active *act,
                             const double *acc_old)
{
    memset(&st->remote, 0, sizeof st->remote);
    double t = bn_wall_seconds();
    bn_let_stats x;
    memset(&x, 0, sizeof x);
    bn_gpu_source src;
    memset(&src, 0, sizeof src);
    bn_status s = bn_cuda_let_on_host() ? exchange_on_host(st, g, acc_old, &src, &x) : exchange_on_device(st, g, &src, &x);
    keep_exchange(&st->remote, &x);
    bn_trace_stage("LET exchange", &t);
    const bool walk = s == BN_OK && st->n > 0 && src.n_cells > 0; /* every received tree in one walk */
    bool beside = walk && received_beside();
    received_sums sums = {NULL, NULL};
    if (beside && received_sums_make(st, act, &sums) != BN_OK) beside = false; /* after the local walk */
    bn_gpu_active mine; /* beside: the costs to the walk's own sums */
    memset(&mine, 0, sizeof mine);
    if (act) mine = *act;
    if (beside && sums.cost) mine.cost = sums.cost;
    const cudaStream_t ws = beside ? st->let_s : st->s;
    cudaEventRecord(st->ev[BN_EV_REMOTE], ws); /* after the wait for the received trees (trace_walks) */
    if (walk)
        s = bn_gpu_walk_remote(&st->tree.t, &src, g, act ? &mine : NULL, beside ? sums.acc : st->acc, &st->remote, ws);
    const cudaError_t ended = cudaEventRecord(st->ev[BN_EV_REMOTE_END], ws);
    if (beside) s = received_sums_add(st, act, &sums, s, ended);
    s = bn_comm_agree(st->comm, s);
    bn_trace_stage("received trees walked", &t);
    bn_gpu_source_free(&src, st->s); /* stream-ordered: s waited for the walk */
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
    if (s == BN_OK) s = bn_gpu_bounding_box(pos, NULL, 0.0, (int)N, &st->tree, st->s); /* every rank's frame */
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

namespace {
double event_seconds(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, a, b) == cudaSuccess) return 1e-3 * ms;
    (void)cudaGetLastError();
    return 0;
}
} // namespace

void bn_cuda_note_walk_time(bn_cuda_state *st)
{
    if (!st->walk_pending) return;
    st->walk_pending = 0;
    /* BN_EV_WALK: s waited for both walks (the received one may end first, beside) */
    if (cudaEventSynchronize(st->ev[BN_EV_WALK]) != cudaSuccess) {
        (void)cudaGetLastError(); /* the walk's own error shows where it is waited for */
        return;
    }
    st->walk_seconds += bn_cuda_walks_busy(st);
}

double bn_cuda_walks_busy(const bn_cuda_state *st)
{
    const double a = event_seconds(st->ev[BN_EV_GROUPS], st->ev[BN_EV_LOCAL]),
                 b = event_seconds(st->ev[BN_EV_GROUPS], st->ev[BN_EV_REMOTE]),
                 c = event_seconds(st->ev[BN_EV_GROUPS], st->ev[BN_EV_REMOTE_END]);
    return fmax(a, c) - fmax(0.0, b - a); /* after: a + (c - b); beside: the later end */
}

bn_status bn_cuda_walk_seconds(void *p, double *seconds, int restart)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    bn_cuda_note_walk_time(st);
    *seconds = st->walk_seconds;
    if (restart) st->walk_seconds = 0;
    return BN_OK;
}

/* The costs of costs() put back (a restart: the next cut is the unstopped
 * run's). They were the device's floats: back to floats, the same bits. */
bn_status bn_cuda_costs_set(void *p, const double *in, size_t n)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    if (n != (size_t)st->n) return bn_fail(BN_ERR_INTERNAL, "costs: %zu given for %d particles", n, st->n);
    if (n == 0) return BN_OK;
    if (!st->cost) BN_TRY(bn_cuda_dev_alloc(&st->cost, bn_cuda_particle_room(n), "particle costs", st->s));
    float *f = (float *)bn_alloc(n * sizeof(float), "particle costs");
    if (!f) return BN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) f[i] = (float)in[i];
    bn_status s = cuda_ok(cudaMemcpyAsync(st->cost, f, n * sizeof(float), cudaMemcpyHostToDevice, st->s), "particle costs");
    if (s == BN_OK) s = cuda_ok(cudaStreamSynchronize(st->s), "particle costs"); /* f is freed next */
    free(f);
    return s;
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
