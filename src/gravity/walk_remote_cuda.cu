/*
 * The GPU walk of another tree's sources for the local tree's targets
 * (bn_gpu_walk_remote, walk_gpu.h): the device side of the locally
 * essential trees (parallel/let.h) for the GPU backend. Here: the
 * sources' upload and conversion (a received node comes without its
 * bodies, so the upload refuses trees whose depth-first walk could need
 * more stack than BN_REMOTE_STACK: walk_remote.h), and the walk's passes:
 * the breadth-wise walk of walk_cuda.cu over boxes of groups, its deep
 * pass for the groups it could not take, and the depth-first walk of
 * walk_depth_cuda.h for every group (BANYAN_REMOTE_WALK=depth, the first
 * way, kept to compare against). The math is the local walk's
 * (interact.h, float).
 */
#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/cuda_check.h"
#include "core/trace.h"
#include "gravity/interact.h"
#include "gravity/walk_gpu.h"
#include "gravity/walk_remote.h"
#include "gravity/walk_depth_cuda.h"

#define BN_REMOTE_WARPS 4  /* warps (groups) per block */
#define BN_FULL_MASK 0xffffffffu

struct bn_remote_args {
    bn_gpu_tree t;       /* the targets: bodies and groups   */
    bn_gpu_source s;
    float eps2, acc_unit, pot_unit; /* tree_gpu.h's units    */
    float far_kt2;       /* (kappa theta)^2 of the group expansion, 0: off */
    int accel_mac, quadrupole, soft;
    float4 *out;
    bn_gpu_active act;
};

/* ---- the conversion of a staged source (walk_remote.h's layout) ---- */

struct bn_remote_convert_args {
    const bn_walk_cell *cells;
    const double *quad, *pos; /* quad: 6 per cell; pos: x, y, z, m arrays */
    const double *ref_dev;    /* device: the local frame's origin, or NULL */
    double ref[3];            /* ... then this one                        */
    double len_scale, mass_scale, inv_G;
    int nc, nb;               /* this tree's cells and bodies             */
    int merged;               /* 1: one of several trees under one root: */
    int root_at, cells_at, bodies_at; /* its root goes to root_at, its
                                 cell c > 0 to cells_at + c - 1, its body
                                 b to bodies_at + b                      */
    bn_gpu_source s;
};

__device__ __forceinline__ double bn_remote_ref(const bn_remote_convert_args &a, int k)
{
    return a.ref_dev ? a.ref_dev[k] : a.ref[k];
}

/* Where the tree's cell c goes in the source. */
__device__ __forceinline__ int bn_remote_cell_at(const bn_remote_convert_args &a, int c)
{
    return !a.merged ? c : c == 0 ? a.root_at : a.cells_at + c - 1;
}

__device__ void bn_remote_convert_cell(const bn_remote_convert_args &a, int c)
{
    const bn_walk_cell w = a.cells[c];
    const double L = a.len_scale, ML2 = a.mass_scale * L * L;
    const int o = bn_remote_cell_at(a, c);
    float hi[3], lo[3];
    for (int k = 0; k < 3; k++) bn_gpu_split(L * (w.com[k] - bn_remote_ref(a, k)), &hi[k], &lo[k]);
    a.s.com[o] = make_float4(hi[0], hi[1], hi[2], (float)(a.mass_scale * w.mass));
    a.s.com_lo[o] = make_float4(lo[0], lo[1], lo[2], 0.f);
    const double *q = a.quad + 6 * (size_t)c;
    a.s.quad0[o] = make_float4((float)(ML2 * q[BN_QXX]), (float)(ML2 * q[BN_QYY]), (float)(ML2 * q[BN_QZZ]),
                               (float)(ML2 * q[BN_QXY]));
    /* a closed cell keeps a negative radius (never opened); gml2
     * includes G, the walk's M l^2 does not (group_half.w has alpha / G) */
    const float r2 = w.r2 < 0 ? -1.f : (float)(L * L * w.r2);
    a.s.quad1[o] = make_float4((float)(ML2 * q[BN_QXZ]), (float)(ML2 * q[BN_QYZ]), r2, (float)(ML2 * w.gml2 * a.inv_G));
    a.s.child[o] = make_int2(w.n_children > 0 ? bn_remote_cell_at(a, w.first_child) : -1, w.n_children);
    a.s.body[o] = make_int2(w.first_body + a.bodies_at, w.n_bodies);
}

__device__ void bn_remote_convert_body(const bn_remote_convert_args &a, int b)
{
    const size_t nb = (size_t)a.nb;
    const int o = a.bodies_at + b;
    float hi[3], lo[3];
    for (int k = 0; k < 3; k++) bn_gpu_split(a.len_scale * (a.pos[k * nb + b] - bn_remote_ref(a, k)), &hi[k], &lo[k]);
    a.s.pos[o] = make_float4(hi[0], hi[1], hi[2], (float)(a.mass_scale * a.pos[3 * nb + b]));
    a.s.pos_lo[o] = make_float4(lo[0], lo[1], lo[2], 0.f);
}

__global__ void bn_remote_convert(bn_remote_convert_args a)
{
    const int n = a.nc + a.nb;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (i < a.nc)
            bn_remote_convert_cell(a, i);
        else
            bn_remote_convert_body(a, i - a.nc);
    }
}

/* The root over k merged trees: opened by every group (an infinite
 * radius), its children their roots at 1 .. k, no moments of its own. */
__global__ void bn_remote_merged_root(bn_gpu_source s, int k)
{
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    s.com[0] = s.com_lo[0] = s.quad0[0] = zero;
    s.quad1[0] = make_float4(0.f, 0.f, INFINITY, 0.f);
    s.child[0] = make_int2(1, k);
    s.body[0] = make_int2(0, 0);
}

/* ---- the walk ---- */

/* Warp w of block b walks group (or active-list entry) b W + w. */
template <int K>
__global__ void __launch_bounds__(BN_REMOTE_WARPS * 32) bn_remote_kernel(bn_remote_args a)
{
    __shared__ int stacks[BN_REMOTE_WARPS][BN_REMOTE_STACK];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int item = blockIdx.x * BN_REMOTE_WARPS + w;
    int end = a.act.groups ? *a.act.count : bn_gpu_tree_groups(&a.t);
    if (a.act.live && !*a.act.live) end = 0; /* an idle step */
    if (item >= end) return; /* whole warps leave together */
    const int group = a.act.groups ? a.act.groups[item] : item;
    const int2 gb = a.t.group_body[group];
    const float4 gc = a.t.group_box[group], gh = a.t.group_half[group];
    unsigned long long cnt[3] = {0, 0, 0};
    bool ok = true;
    for (int c = 0; c < gb.y && ok; c += 32 * K)
        bn_remote_chunk<K>(a, stacks[w], gb.x + c, min(32 * K, gb.y - c), gc, gh, lane, c == 0, cnt, &ok);
    /* integer atomics: exact whatever the order */
    const unsigned long long v = lane == 3 ? (ok ? 0ull : 1ull) : lane < 3 ? cnt[lane] : 0ull;
    if (lane < 4 && v) atomicAdd(&a.s.counts[lane], v);
}

/* ---- host side ---- */

/* Bytes of the block of a source of nc cells and nb bodies. */
static size_t bn_remote_bytes(size_t nc, size_t nb)
{
    return (4 * nc + 2 * nb) * sizeof(float4) + 2 * nc * sizeof(int2);
}

/* The arrays in the block: float4s first (16-byte aligned), then int2s. */
static void bn_remote_layout(bn_gpu_source *s, char *block)
{
    const size_t nc = (size_t)s->n_cells, nb = (size_t)s->n_bodies;
    float4 *f = (float4 *)block;
    s->com = f;
    s->com_lo = f + nc;
    s->quad0 = f + 2 * nc;
    s->quad1 = f + 3 * nc;
    s->pos = f + 4 * nc;
    s->pos_lo = f + 4 * nc + nb;
    int2 *i = (int2 *)(f + 4 * nc + 2 * nb);
    s->child = i;
    s->body = i + nc;
}

extern "C" void bn_gpu_source_free(bn_gpu_source *s, cudaStream_t stream)
{
    if (!s) return;
    bn_cuda_free(s->block, stream);
    bn_cuda_free(s->counts, stream);
    memset(s, 0, sizeof *s);
}

/* Convert the staged words of one tree (walk_remote.h's layout, on the
 * device: nc cells, nb bodies) into out's block, in the frame of
 * ref_device or else host_ref; placed at `at` (root, cells, bodies) when
 * merged. */
static bn_status bn_remote_convert_staged(const uint64_t *dev, int nc, int nb, const double *host_ref,
                                          const double *ref_device, double G, const int *at, bn_gpu_source *out,
                                          cudaStream_t stream)
{
    bn_remote_convert_args a;
    memset(&a, 0, sizeof a);
    a.cells = (const bn_walk_cell *)dev;
    a.quad = (const double *)(dev + (size_t)nc * (sizeof(bn_walk_cell) / 8));
    a.pos = a.quad + 6 * (size_t)nc;
    a.ref_dev = ref_device;
    for (int k = 0; k < 3; k++) a.ref[k] = host_ref[k];
    a.len_scale = out->len_scale;
    a.mass_scale = out->mass_scale;
    a.inv_G = 1.0 / G;
    a.nc = nc;
    a.nb = nb;
    if (at) a.merged = 1, a.root_at = at[0], a.cells_at = at[1], a.bodies_at = at[2];
    a.s = *out;
    const int n = nc + nb, threads = 256;
    const int blocks = (n + threads - 1) / threads < 4096 ? (n + threads - 1) / threads : 4096;
    bn_remote_convert<<<blocks, threads, 0, stream>>>(a);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

/* What every source's conversion checks and sets first. */
static bn_status bn_remote_prepare(const bn_gpu_tree *local, double G, bn_gpu_source *out)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "source tree: NULL output");
    memset(out, 0, sizeof *out);
    if (!local) return bn_fail(BN_ERR_ARGUMENT, "source tree: NULL local tree");
    if (!(isfinite(G) && G > 0)) return bn_fail(BN_ERR_ARGUMENT, "source tree: G must be finite and > 0, got %g", G);
    if (!(local->len_scale > 0 && local->mass_scale > 0))
        return bn_fail(BN_ERR_ARGUMENT, "source tree: the local tree's units (%g, %g) are not set", local->len_scale,
                       local->mass_scale);
    out->len_scale = local->len_scale;
    out->mass_scale = local->mass_scale;
    return BN_OK;
}

/* The block and counters of a source of out's shape. */
static bn_status bn_remote_make(bn_gpu_source *out, cudaStream_t stream)
{
    BN_TRY(bn_cuda_alloc(&out->block, bn_remote_bytes((size_t)out->n_cells, (size_t)out->n_bodies), "source tree",
                         stream));
    BN_TRY(bn_cuda_dev_alloc(&out->counts, 5, "source tree walk counters", stream));
    bn_remote_layout(out, (char *)out->block);
    return BN_OK;
}

extern "C" bn_status bn_gpu_source_merge(const uint64_t *const *staged, const int *n_cells, const int *n_bodies,
                                         int k, const bn_gpu_tree *local, double G, bn_gpu_source *out,
                                         cudaStream_t stream)
{
    BN_TRY(bn_remote_prepare(local, G, out));
    if (k <= 0) return BN_OK;
    long cells = 1, bodies = 0;
    for (int i = 0; i < k; i++) {
        if (n_cells[i] <= 0 || n_bodies[i] < 0)
            return bn_fail(BN_ERR_ARGUMENT, "merged source: tree %d has %d cells and %d bodies", i, n_cells[i],
                           n_bodies[i]);
        cells += n_cells[i];
        bodies += n_bodies[i];
    }
    if (cells > INT_MAX || bodies > INT_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "merged source: %ld cells and %ld bodies (at most 2^31 - 1 each)", cells, bodies);
    out->n_cells = (int)cells;
    out->n_bodies = (int)bodies;
    out->stack_need = 0; /* not known: the walk refuses to overflow its stack and fails */
    bn_status st = bn_remote_make(out, stream);
    if (st == BN_OK) {
        bn_remote_merged_root<<<1, 1, 0, stream>>>(*out, k);
        st = cudaGetLastError() == cudaSuccess ? BN_OK : bn_fail(BN_ERR_DEVICE, "merged source: its root");
    }
    int at[3] = {1, 1 + k, 0}; /* root, other cells, bodies of the next tree */
    for (int i = 0; st == BN_OK && i < k; i++) {
        st = bn_remote_convert_staged(staged[i], n_cells[i], n_bodies[i], local->ref, NULL, G, at, out, stream);
        at[0] += 1;
        at[1] += n_cells[i] - 1;
        at[2] += n_bodies[i];
    }
    if (st != BN_OK) bn_gpu_source_free(out, stream);
    return st;
}

/* A checked tree of this shape staged on the device (*staged). */
static bn_status bn_remote_stage_up(const bn_walk_source *src, const bn_remote_shape *shape, uint64_t **staged,
                                    cudaStream_t stream)
{
    const size_t words = bn_remote_stage_words(shape);
    uint64_t *host = (uint64_t *)bn_alloc_array(words, sizeof *host, "source tree staging");
    if (!host) return BN_ERR_NOMEM;
    bn_remote_stage(src, shape, host);
    bn_status st = bn_cuda_dev_alloc(staged, words, "source tree (doubles)", stream);
    /* pageable memory: the copy has taken the host buffer when it returns */
    if (st == BN_OK && cudaMemcpyAsync(*staged, host, words * sizeof *host, cudaMemcpyHostToDevice, stream) != cudaSuccess)
        st = bn_fail(BN_ERR_DEVICE, "source tree: the upload of %zu words failed", words);
    free(host);
    if (st != BN_OK) {
        bn_cuda_free(*staged, stream);
        *staged = NULL;
    }
    return st;
}

extern "C" bn_status bn_gpu_source_stage(const bn_walk_source *src, uint64_t **staged, int *n_cells, int *n_bodies,
                                         cudaStream_t stream)
{
    *staged = NULL;
    *n_cells = *n_bodies = 0;
    bn_remote_shape shape;
    BN_TRY(bn_remote_check(src, &shape));
    if (shape.n_cells == 0) return BN_OK;
    BN_TRY(bn_remote_stage_up(src, &shape, staged, stream));
    *n_cells = shape.n_cells;
    *n_bodies = shape.n_bodies;
    return BN_OK;
}

extern "C" bn_status bn_gpu_source_upload(const bn_walk_source *src, const bn_gpu_tree *local,
                                          const double *ref_device, double G, bn_gpu_source *out,
                                          cudaStream_t stream)
{
    BN_TRY(bn_remote_prepare(local, G, out));
    if (!src) return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_source_upload: NULL source");
    bn_remote_shape shape;
    BN_TRY(bn_remote_check(src, &shape)); /* once: its stack need is kept */
    if (shape.n_cells == 0) return BN_OK;
    uint64_t *staged = NULL;
    BN_TRY(bn_remote_stage_up(src, &shape, &staged, stream));
    out->n_cells = shape.n_cells;
    out->n_bodies = shape.n_bodies;
    out->stack_need = shape.stack_need;
    bn_status st = bn_remote_make(out, stream);
    if (st == BN_OK)
        st = bn_remote_convert_staged(staged, shape.n_cells, shape.n_bodies, local->ref, ref_device, G, NULL, out,
                                      stream);
    bn_cuda_free(staged, stream); /* stream-ordered: after the conversion */
    if (st != BN_OK) bn_gpu_source_free(out, stream);
    return st;
}

/* The counters of the last walk added to stats; an overflow fails. */
static bn_status bn_remote_counts_read(const bn_gpu_source *src, bn_force_stats *stats, cudaStream_t stream)
{
    unsigned long long h[5]; /* pp, pc, far, overflow, cells visited */
    BN_TRY(bn_cuda_read(h, src->counts, sizeof h, "remote walk counters", stream));
    if (h[3])
        return bn_fail(BN_ERR_INTERNAL, "remote walk: %llu groups ran out of the %d-cell stack (a corrupted source)",
                       h[3], BN_REMOTE_STACK);
    stats->n_pp += (double)h[0];
    stats->n_pc += (double)h[1];
    stats->n_far += (double)h[2];
    stats->n_visit += (double)h[4];
    bn_trace_count("received walk: pp", (double)h[0]);
    bn_trace_count("received walk: pc", (double)h[1]);
    bn_trace_count("received walk: far cells", (double)h[2]);
    bn_trace_count("received walk: cells visited", (double)h[4]);
    return BN_OK;
}

/* Targets per lane: a group in one walk, up to 8 per lane; a tuning aid,
 * BANYAN_REMOTE_TARGETS=2|4|8, overrides it. */
static int remote_targets_per_lane(int group_size)
{
    const char *e = getenv("BANYAN_REMOTE_TARGETS");
    if (e && (!strcmp(e, "2") || !strcmp(e, "4") || !strcmp(e, "8"))) return atoi(e);
    return group_size <= 64 ? 2 : group_size <= 128 ? 4 : 8;
}

/* The walk: breadth-wise as the local walk (bn_gpu_walk_sources), then
 * the groups it could not take (its stack would overflow, or their walks
 * outran its budget) chunk by chunk with a deeper stack
 * (bn_gpu_walk_sources_deep), over the same sums. BANYAN_REMOTE_WALK=depth
 * walks every group depth first here (the first way, kept to compare
 * against). */
static bool remote_breadth_walk(void)
{
    const char *e = getenv("BANYAN_REMOTE_WALK");
    return !(e && !strcmp(e, "depth"));
}

static void remote_depth_launch(const bn_remote_args &a, int blocks, int K, cudaStream_t stream)
{
    if (K == 2)
        bn_remote_kernel<2><<<blocks, BN_REMOTE_WARPS * 32, 0, stream>>>(a);
    else if (K == 4)
        bn_remote_kernel<4><<<blocks, BN_REMOTE_WARPS * 32, 0, stream>>>(a);
    else
        bn_remote_kernel<8><<<blocks, BN_REMOTE_WARPS * 32, 0, stream>>>(a);
}

/* Tracing aids of the received walk (BANYAN_GRAVITY_TRACE=1): each
 * pass's device time, and with BANYAN_REMOTE_GROUP_TIMES=1 where the main
 * pass's time goes, group by group (its stragglers). A failure of theirs
 * is no error of the walk's. */
typedef struct {
    cudaEvent_t e[4]; /* start, boxes made, main pass, deep passes */
} pass_events;

static void pass_events_start(pass_events *ev, cudaStream_t stream)
{
    memset(ev, 0, sizeof *ev);
    if (!bn_trace_on()) return;
    for (int k = 0; k < 4; k++)
        if (cudaEventCreate(&ev->e[k]) != cudaSuccess) ev->e[k] = NULL;
    if (ev->e[0]) cudaEventRecord(ev->e[0], stream);
    (void)cudaGetLastError();
}

static void pass_events_mark(pass_events *ev, int k, cudaStream_t stream)
{
    if (ev->e[k] && cudaEventRecord(ev->e[k], stream) != cudaSuccess) {
        (void)cudaGetLastError();
        cudaEventDestroy(ev->e[k]);
        ev->e[k] = NULL;
    }
}

static void pass_events_report(pass_events *ev)
{
    static const char *name[4] = {NULL, "received walk: the boxes' pass (device)",
                                  "received walk: the main pass (device)", "received walk: the deep passes (device)"};
    for (int k = 1; k < 4; k++) {
        float ms = 0.f;
        if (ev->e[k - 1] && ev->e[k] && cudaEventElapsedTime(&ms, ev->e[k - 1], ev->e[k]) == cudaSuccess)
            bn_trace_ms(name[k], ms);
    }
    for (int k = 0; k < 4; k++)
        if (ev->e[k]) cudaEventDestroy(ev->e[k]);
    (void)cudaGetLastError();
}

static int group_times_wanted(void)
{
    const char *e = getenv("BANYAN_REMOTE_GROUP_TIMES");
    return e && !strcmp(e, "1");
}

typedef struct {
    double ms, start, size; /* the walk's time, its start in the span, its box's size / the median's */
    int group;
} group_ms;

static int cmp_group_ms_desc(const void *a, const void *b)
{
    const double x = ((const group_ms *)a)->ms, y = ((const group_ms *)b)->ms;
    return (x < y) - (x > y);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The main pass's groups from their times t (start, end; 0: not walked
 * there) and boxes' half sides: its span, when all but 1% and 0.1% of
 * them had ended, their walks' sum, and its three longest walks: time,
 * bodies, box size against the median group's, start in the span. */
static void report_group_times(const unsigned long long *t, const int2 *gb, const float4 *gh, int n, group_ms *d,
                               double *work)
{
    unsigned long long t0 = ~0ull, t1 = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (t[2 * i]) {
            t0 = t[2 * i] < t0 ? t[2 * i] : t0;
            t1 = t[2 * i + 1] > t1 ? t[2 * i + 1] : t1;
        }
    for (int i = 0; i < n; i++)
        if (t[2 * i]) {
            const double h2 = (double)gh[i].x * gh[i].x + (double)gh[i].y * gh[i].y + (double)gh[i].z * gh[i].z;
            d[m] = (group_ms){1e-6 * (double)(t[2 * i + 1] - t[2 * i]), 1e-6 * (double)(t[2 * i] - t0), sqrt(h2), i};
            work[m++] = sqrt(h2);
        }
    if (m == 0) return;
    qsort(work, (size_t)m, sizeof *work, cmp_double);
    const double median = work[m / 2] > 0 ? work[m / 2] : 1;
    double busy = 0;
    for (int i = 0; i < m; i++) {
        busy += d[i].ms;
        d[i].size /= median;
        work[i] = d[i].start + d[i].ms; /* its end */
    }
    qsort(work, (size_t)m, sizeof *work, cmp_double);
    bn_trace_ms("received walk: groups' span", 1e-6 * (double)(t1 - t0));
    bn_trace_ms("received walk: all groups but 1% ended", work[(size_t)(0.99 * (m - 1))]);
    bn_trace_ms("received walk: all groups but 0.1% ended", work[(size_t)(0.999 * (m - 1))]);
    bn_trace_ms("received walk: groups' walks summed", busy);
    qsort(d, (size_t)m, sizeof *d, cmp_group_ms_desc);
    static const char *what[3][4] = {
        {"received walk: longest group 1", "received walk: longest group 1: bodies",
         "received walk: longest group 1: size / median x10", "received walk: longest group 1: start"},
        {"received walk: longest group 2", "received walk: longest group 2: bodies",
         "received walk: longest group 2: size / median x10", "received walk: longest group 2: start"},
        {"received walk: longest group 3", "received walk: longest group 3: bodies",
         "received walk: longest group 3: size / median x10", "received walk: longest group 3: start"}};
    for (int k = 0; k < 3 && k < m; k++) {
        bn_trace_ms(what[k][0], d[k].ms);
        bn_trace_count(what[k][1], gb[d[k].group].y);
        bn_trace_count(what[k][2], 10 * d[k].size);
        bn_trace_ms(what[k][3], d[k].start);
    }
}

/* The groups' times of the main pass, with their bodies and boxes, to
 * the host for report_group_times. */
static void trace_group_times(const bn_gpu_tree *local, const unsigned long long *dev, cudaStream_t stream)
{
    const int n = local->group_bound; /* those past the count were not walked (times 0) */
    unsigned long long *t = (unsigned long long *)bn_alloc_array(2 * (size_t)n + 2, sizeof *t, "the groups' times");
    int2 *gb = (int2 *)bn_alloc_array((size_t)n + 1, sizeof *gb, "the groups' times");
    float4 *gh = (float4 *)bn_alloc_array((size_t)n + 1, sizeof *gh, "the groups' times");
    group_ms *d = (group_ms *)bn_alloc_array((size_t)n + 1, sizeof *d, "the groups' times");
    double *work = (double *)bn_alloc_array((size_t)n + 1, sizeof *work, "the groups' times");
    if (n > 0 && t && gb && gh && d && work &&
        bn_cuda_read(t, dev, 2 * (size_t)n * sizeof *t, "the groups' times", stream) == BN_OK &&
        bn_cuda_read(gb, local->group_body, (size_t)n * sizeof *gb, "the groups' times", stream) == BN_OK &&
        bn_cuda_read(gh, local->group_half, (size_t)n * sizeof *gh, "the groups' times", stream) == BN_OK)
        report_group_times(t, gb, gh, n, d, work);
    (void)cudaGetLastError();
    free(t);
    free(gb);
    free(gh);
    free(d);
    free(work);
}

extern "C" bn_status bn_gpu_walk_remote(const bn_gpu_tree *local, const bn_gpu_source *src,
                                        const bn_gravity_params *g, const bn_gpu_active *act, float4 *out,
                                        bn_force_stats *stats, cudaStream_t stream)
{
    if (!local || !src || !g || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_walk_remote: NULL argument");
    if (src->n_cells == 0 || local->group_bound <= 0 || local->n <= 0) return BN_OK;
    if (src->len_scale != local->len_scale || src->mass_scale != local->mass_scale)
        return bn_fail(BN_ERR_ARGUMENT,
                       "bn_gpu_walk_remote: the source was made for units (%g, %g), the local tree has (%g, %g)",
                       src->len_scale, src->mass_scale, local->len_scale, local->mass_scale);
    if (src->stack_need > BN_REMOTE_STACK)
        return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_walk_remote: the source may need a stack of %d cells, more than %d",
                       src->stack_need, BN_REMOTE_STACK);
    BN_CUDA_CHECK(cudaMemsetAsync(src->counts, 0, 5 * sizeof(unsigned long long), stream));
    if (!remote_breadth_walk()) {
        bn_remote_args a;
        bn_gpu_walk_common(&a, local, g, act, out);
        a.s = *src;
        const int blocks = (local->group_bound + BN_REMOTE_WARPS - 1) / BN_REMOTE_WARPS; /* the rest leave at once */
        remote_depth_launch(a, blocks, remote_targets_per_lane(g->group_size), stream);
        BN_CUDA_LAUNCH_CHECK();
        return stats ? bn_remote_counts_read(src, stats, stream) : BN_OK;
    }
    bn_gpu_chunk_queue q; /* the chunks of the groups the main pass could not take */
    bn_status r = bn_gpu_chunk_queue_make(local, &q, stream);
    bn_gpu_box_far boxes; /* the received trees' far field per box of groups */
    memset(&boxes, 0, sizeof boxes);
    pass_events ev; /* traced: each pass's device time (the boxes' with their allocations) */
    pass_events_start(&ev, stream);
    if (r == BN_OK) r = bn_gpu_box_far_make(local, src, g, act, src->counts, &boxes, stream);
    pass_events_mark(&ev, 1, stream);
    if (r == BN_OK && bn_trace_on() && group_times_wanted() &&
        bn_cuda_dev_alloc(&boxes.group_time, 2 * (size_t)local->group_bound, "the groups' times", stream) == BN_OK &&
        cudaMemsetAsync(boxes.group_time, 0, 2 * (size_t)local->group_bound * sizeof(unsigned long long), stream) !=
            cudaSuccess) { /* a tracing aid's failure is no error of the walk's */
        (void)cudaGetLastError();
        bn_cuda_free(boxes.group_time, stream);
        boxes.group_time = NULL;
    }
    if (r == BN_OK) r = bn_gpu_walk_sources(local, src, g, act, &boxes, out, src->counts, &q, stream);
    pass_events_mark(&ev, 2, stream);
    if (r == BN_OK) r = bn_gpu_walk_sources_deep(local, src, g, act, &boxes, out, src->counts, &q, stream);
    pass_events_mark(&ev, 3, stream);
    if (r == BN_OK && bn_trace_on()) { /* a tuning aid: how many chunks were queued, and where they went */
        int n[3] = {0, 0, 0};
        if (bn_cuda_read(n, q.counts, sizeof n, "the received walk's chunk queue", stream) == BN_OK) {
            bn_trace_count("received walk: chunks queued", (double)n[0]);
            bn_trace_count("received walk: chunks in the deep pass", (double)(n[0] - n[1] + n[2]));
        }
        bn_trace_count("received walk: source cells", (double)src->n_cells);
        bn_trace_count("received walk: source bodies", (double)src->n_bodies);
    }
    if (r == BN_OK && bn_trace_on() && boxes.n_boxes > 0) {
        int *c = (int *)bn_alloc_array((size_t)boxes.n_boxes, sizeof(int), "box counts");
        if (c && bn_cuda_read(c, boxes.count, (size_t)boxes.n_boxes * sizeof(int), "box counts", stream) == BN_OK) {
            double sum = 0, over = 0, most = 0;
            const int real = (local->n_groups + boxes.groups_per_box - 1) / boxes.groups_per_box; /* the host's count:
                                                            a tracing aid (the boxes past it hold 0 cells) */
            for (int i = 0; i < boxes.n_boxes; i++) {
                if (c[i] < 0) over += 1;
                else sum += c[i], most = c[i] > most ? c[i] : most;
            }
            bn_trace_count("received walk: boxes", (double)(real > 0 && real < boxes.n_boxes ? real : boxes.n_boxes));
            bn_trace_count("received walk: boxes overflowed", over);
            bn_trace_count("received walk: frontier cells", sum);
            bn_trace_count("received walk: largest frontier", most);
        }
        free(c);
    }
    if (r == BN_OK && boxes.group_time) trace_group_times(local, boxes.group_time, stream);
    pass_events_report(&ev);
    bn_cuda_free(boxes.group_time, stream);
    boxes.group_time = NULL;
    bn_gpu_box_far_free(&boxes, stream);
    bn_gpu_chunk_queue_free(&q, stream); /* stream-ordered: after the walks */
    if (r == BN_OK && stats) r = bn_remote_counts_read(src, stats, stream);
    return r;
}
