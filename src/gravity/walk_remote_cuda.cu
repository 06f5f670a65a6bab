/*
 * The GPU walk of another tree's sources for the local tree's targets
 * (bn_gpu_walk_remote, walk_gpu.h): the device side of the locally
 * essential trees (parallel/let.h) for the GPU backend.
 *
 * Plain on purpose: one warp per group, depth first, one cell at a time
 * (every lane reads the same cell: a broadcast), each lane holding K of
 * the group's targets (chunks of 32 K; a larger group walks once per chunk).
 * The decisions depend on the group's box only, so they are warp-uniform
 * and the stack is one per warp in shared memory. The math is the local
 * walk's (interact.h, float): the opening test of bn_walk_opens on the
 * group's box, accepted cells within the group-expansion distance as
 * particle-cell terms, those beyond it through the group's expansion
 * (each lane sums the same terms in the same order, so every lane holds
 * the same expansion), opened leaves' bodies as particle-particle terms.
 * Each lane holds K targets (2, 4 or 8, from the group size).
 * A received tree's node comes without its bodies, so a node whose
 * children do not fit the stack cannot be walked as a leaf (the local
 * walk's fallback): the upload refuses trees that could need more stack
 * (walk_remote.h), and the kernel only flags an overflow, never writes
 * past the stack.
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

/* A lane's K targets (relative to the group centre; w: mass) and sums.
 * A walk takes a chunk of 32 K of a group's targets: K is chosen from
 * the group size (2, 4 or 8: groups of 64, 128, 256 in one walk), so a
 * group's tree is walked once and every cell or body the warp reads
 * serves K targets per lane (issue 18: at K = 2 a group of 256 walked
 * the received tree four times). */
template <int K>
struct bn_remote_targets {
    float4 pos[K], acc[K];
};

/* What the warp's walk of one chunk counted (sources per target; far cells). */
struct bn_remote_counts {
    long long pp, pc, far;
};

__device__ __forceinline__ void bn_remote_add_far(bn_local_f *L, const bn_local_f &t)
{
#define BN_REMOTE_ADD_TERM(f) L->f += t.f;
    BN_LOCAL_FIELDS(BN_REMOTE_ADD_TERM)
#undef BN_REMOTE_ADD_TERM
}

/* An accepted cell (com in the group's frame, w: mass): a particle-cell
 * term on each target, or, beyond the expansion distance, its term of
 * the group's expansion. */
template <int K>
__device__ void bn_remote_accept(const bn_remote_args &a, int cell, float4 com, float4 q1, float far_r2,
                                 bn_remote_targets<K> *tg, bn_local_f *L, bn_remote_counts *n)
{
    float4 q0 = make_float4(0.f, 0.f, 0.f, 0.f);
    if (a.quadrupole)
        q0 = a.s.quad0[cell];
    else
        q1.x = q1.y = 0.f;
    if (com.x * com.x + com.y * com.y + com.z * com.z > far_r2) {
        bn_local_f t;
        bn_local_set_f(com.x, com.y, com.z, com.w, q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, a.eps2, &t);
        bn_remote_add_far(L, t);
        n->far++;
        return;
    }
    const float q[6] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y};
#pragma unroll
    for (int k = 0; k < K; k++)
        bn_pc_f(com.x - tg->pos[k].x, com.y - tg->pos[k].y, com.z - tg->pos[k].z, com.w, q, a.eps2, &tg->acc[k].x,
                &tg->acc[k].y, &tg->acc[k].z, &tg->acc[k].w);
    n->pc++;
}

/* An opened leaf: its bodies, each read by every lane (a broadcast). */
template <int K>
__device__ void bn_remote_leaf(const bn_remote_args &a, int2 nb, float4 gc, bn_remote_targets<K> *tg,
                               bn_remote_counts *n)
{
    for (int b = nb.x; b < nb.x + nb.y; b++) {
        const float4 hi = a.s.pos[b];
        const float3 d = bn_gpu_in_frame(hi, a.s.pos_lo[b], gc);
#pragma unroll
        for (int k = 0; k < K; k++) {
            const float dx = d.x - tg->pos[k].x, dy = d.y - tg->pos[k].y, dz = d.z - tg->pos[k].z;
            if (a.soft)
                bn_pp_soft_f(dx, dy, dz, hi.w, a.eps2, &tg->acc[k].x, &tg->acc[k].y, &tg->acc[k].z, &tg->acc[k].w);
            else
                bn_pp_f(dx, dy, dz, hi.w, a.eps2, &tg->acc[k].x, &tg->acc[k].y, &tg->acc[k].z, &tg->acc[k].w);
        }
    }
    n->pp += nb.y;
}

/* Walk the source for one chunk of a group's targets: pop a cell, test
 * it on the group's box (gh: half sizes, w: alpha min |a_old| / G), and
 * accept it, take its bodies, or push its children. Returns false if the
 * stack would have overflowed (nothing then is written). */
template <int K>
__device__ bool bn_remote_walk(const bn_remote_args &a, int *stack, float4 gc, float4 gh, float far_r2, int lane,
                               bn_remote_targets<K> *tg, bn_local_f *L, bn_remote_counts *n)
{
    int size = 1;
    if (lane == 0) stack[0] = 0;
    __syncwarp();
    while (size > 0) {
        const int cell = stack[--size];
        __syncwarp(); /* popped by every lane before a push overwrites it */
        const float4 hi = a.s.com[cell], q1 = a.s.quad1[cell];
        const float3 d = bn_gpu_in_frame(hi, a.s.com_lo[cell], gc);
        const float4 com = make_float4(d.x, d.y, d.z, hi.w);
        const float d2 = bn_box_dist2_f(com.x, com.y, com.z, -gh.x, -gh.y, -gh.z, gh.x, gh.y, gh.z);
        const bool open = q1.z >= 0.f && (a.accel_mac ? bn_mac_accel_open_f(d2, q1.z, q1.w, gh.w)
                                                       : bn_mac_geometric_open_f(d2, q1.z));
        if (!open) {
            bn_remote_accept(a, cell, com, q1, far_r2, tg, L, n);
            continue;
        }
        const int2 child = a.s.child[cell];
        if (child.y == 0) {
            bn_remote_leaf(a, a.s.body[cell], gc, tg, n);
            continue;
        }
        if (size + child.y > BN_REMOTE_STACK) return false; /* warp-uniform */
        for (int j = lane; j < child.y; j += 32) stack[size + j] = child.x + j;
        size += child.y;
        __syncwarp();
    }
    return true;
}

/* One chunk of nt <= 32 K targets from body `first` of a group: walk, add
 * the expansion at each target, and add the sums to out (active bodies
 * only, with block steps). *ok false: the stack overflowed. */
template <int K>
__device__ void bn_remote_chunk(const bn_remote_args &a, int *stack, int first, int nt, float4 gc, float4 gh,
                                int lane, bool first_chunk, unsigned long long cnt[3], bool *ok)
{
    bn_remote_targets<K> tg;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = lane + 32 * k;
        const float4 b = i < nt ? a.t.body[first + i] : gc;
        const float3 d = bn_gpu_in_frame(b, i < nt ? a.t.body_lo[first + i] : make_float4(0.f, 0.f, 0.f, 0.f), gc);
        tg.pos[k] = make_float4(d.x, d.y, d.z, b.w);
        tg.acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    bn_local_f L;
#define BN_REMOTE_ZERO_TERM(f) L.f = 0.f;
    BN_LOCAL_FIELDS(BN_REMOTE_ZERO_TERM)
#undef BN_REMOTE_ZERO_TERM
    const float far_r2 = a.far_kt2 > 0.f ? (gh.x * gh.x + gh.y * gh.y + gh.z * gh.z) / a.far_kt2 : INFINITY;
    bn_remote_counts n = {0, 0, 0};
    if (!bn_remote_walk(a, stack, gc, gh, far_r2, lane, &tg, &L, &n)) {
        *ok = false;
        return;
    }
    const int bin_min = a.act.bin ? *a.act.bin_min : 0;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = first + lane + 32 * k;
        if (lane + 32 * k >= nt || (a.act.bin && a.act.bin[i] < bin_min)) continue;
        float4 v = tg.acc[k];
        bn_local_eval_f(&L, tg.pos[k].x, tg.pos[k].y, tg.pos[k].z, &v.x, &v.y, &v.z, &v.w);
        const float4 o = a.out[i];
        a.out[i] = make_float4(o.x + a.acc_unit * v.x, o.y + a.acc_unit * v.y, o.z + a.acc_unit * v.z,
                               o.w + a.pot_unit * v.w);
    }
    cnt[0] += (unsigned long long)n.pp * (unsigned long long)nt;
    cnt[1] += (unsigned long long)n.pc * (unsigned long long)nt;
    if (first_chunk) cnt[2] += (unsigned long long)n.far; /* cell-group pairs, as the CPU counts */
    if (a.act.cost)
#pragma unroll
        for (int k = 0; k < K; k++)
            if (lane + 32 * k < nt)
                bn_gpu_charge(a.act, first + lane + 32 * k, n.pp, n.pc, first_chunk ? n.far : 0, 0, nt, n.far > 0);
}

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
 * the groups it could not take (its stack would overflow) with a deeper
 * stack (bn_gpu_walk_sources_deep), then those left depth first here,
 * over the same sums. BANYAN_REMOTE_WALK=depth walks every group
 * depth first (the first way, kept to compare against). */
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
    bn_remote_args a;
    bn_gpu_walk_common(&a, local, g, act, out);
    a.s = *src;
    const int blocks = (local->group_bound + BN_REMOTE_WARPS - 1) / BN_REMOTE_WARPS; /* the rest leave at once */
    const int K = remote_targets_per_lane(g->group_size);
    if (!remote_breadth_walk()) {
        remote_depth_launch(a, blocks, K, stream);
        BN_CUDA_LAUNCH_CHECK();
        return stats ? bn_remote_counts_read(src, stats, stream) : BN_OK;
    }
    /* the groups left to the deep stack's pass, then those left to the
     * depth-first walk; each list's count after it */
    const size_t room = (size_t)local->group_bound + 1;
    int *list = NULL;
    BN_TRY(bn_cuda_dev_alloc(&list, 2 * room, "remote walk's overflow lists", stream));
    int *count = list + local->group_bound, *deep = list + room, *deep_count = deep + local->group_bound;
    bn_status r = cudaMemsetAsync(count, 0, sizeof *count, stream) == cudaSuccess &&
                          cudaMemsetAsync(deep_count, 0, sizeof *deep_count, stream) == cudaSuccess
                      ? BN_OK
                      : bn_fail(BN_ERR_DEVICE, "remote walk: clearing its lists");
    bn_gpu_box_far boxes; /* the received trees' far field per box of groups */
    memset(&boxes, 0, sizeof boxes);
    cudaEvent_t ev[2] = {NULL, NULL}; /* traced: the boxes' pass's device time (allocations included) */
    if (bn_trace_on()) {
        for (int k = 0; k < 2; k++)
            if (cudaEventCreate(&ev[k]) != cudaSuccess) ev[k] = NULL;
        if (!ev[0] || !ev[1] || cudaEventRecord(ev[0], stream) != cudaSuccess) ev[1] = NULL;
        (void)cudaGetLastError(); /* a tracing aid's failure is no error of the walk's */
    }
    if (r == BN_OK) r = bn_gpu_box_far_make(local, src, g, act, src->counts, &boxes, stream);
    if (ev[1] && cudaEventRecord(ev[1], stream) != cudaSuccess) {
        (void)cudaGetLastError();
        cudaEventDestroy(ev[1]);
        ev[1] = NULL;
    }
    if (r == BN_OK) r = bn_gpu_walk_sources(local, src, g, act, &boxes, out, src->counts, list, count, stream);
    bn_gpu_active listed; /* only the listed groups, with the active bodies of act */
    memset(&listed, 0, sizeof listed);
    if (act) listed = *act;
    listed.groups = list;
    listed.count = count;
    if (r == BN_OK)
        r = bn_gpu_walk_sources_deep(local, src, g, &listed, &boxes, out, src->counts, deep, deep_count, stream);
    if (r == BN_OK) {
        a.act.groups = deep;
        a.act.count = deep_count;
        remote_depth_launch(a, blocks, K, stream);
        r = cudaGetLastError() == cudaSuccess ? BN_OK : bn_fail(BN_ERR_DEVICE, "remote walk: the depth-first launch");
    }
    if (r == BN_OK && bn_trace_on()) { /* a tuning aid: how many groups each later pass took */
        int n[2] = {0, 0};
        if (bn_cuda_read(&n[0], count, sizeof n[0], "remote walk's overflow count", stream) == BN_OK &&
            bn_cuda_read(&n[1], deep_count, sizeof n[1], "remote walk's overflow count", stream) == BN_OK) {
            bn_trace_count("received walk: groups on the deep stack", (double)n[0]);
            bn_trace_count("received walk: groups depth first", (double)n[1]);
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
        float ms = 0.f;
        if (ev[1] && cudaEventElapsedTime(&ms, ev[0], ev[1]) == cudaSuccess)
            bn_trace_ms("received walk: the boxes' pass (device)", ms);
    }
    for (int k = 0; k < 2; k++)
        if (ev[k]) cudaEventDestroy(ev[k]);
    bn_gpu_box_far_free(&boxes, stream);
    bn_cuda_free(list, stream); /* stream-ordered: after the walks */
    if (r == BN_OK && stats) r = bn_remote_counts_read(src, stats, stream);
    return r;
}
