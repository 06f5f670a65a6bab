/*
 * The field solver on the GPU, stage for stage the CPU's (field_cpu.c):
 *   tree     the particle tree's GPU stages over the sources' positions:
 *            bounding box, keys, CUB radix sort, build (tree_cuda.h)
 *   moments  per node, bottom-up level by level, in double: the box of its
 *            sources (cells as cubes), its centre, K x (M, D, Q) about it,
 *            stored as floats in the solver's units (hi + lo positions, as
 *            the particle tree's: tree_gpu.h)
 *   lists    one warp per target group (a brick of up to 512 cells, or 64
 *            points): breadth first over the tree, 32 nodes at a time,
 *            into three lists (cells accepted by the criterion, bodies of
 *            opened leaves, source cells near the group), counted first
 *            and then written at their scanned offsets (paper 002's
 *            "logical plans" per destination brick)
 *   evaluate one block of 256 threads per group, 2 targets a thread (the
 *            brick's cells, in the group's frame): the body list, then
 *            the cell list, then the near list (same-sized cells from the
 *            near-field table in constant memory, other cells exact in
 *            double), in tiles through shared memory; the sums in a fixed
 *            order (bit-reproducible)
 * Units: lengths times len_scale, strengths times q_scale (powers of two
 * bringing the extent and the total strength near 1), so that float holds
 * q / r^5 for any user units; the results are scaled back in double.
 */
#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/cuda_check.h"
#include "core/stream_store.h"
#include "core/timer.h"
#include "gravity/box_kernel.h"
#include "gravity/field_interact.h"
#include "mesh/field_internal.h"
#include "tree/tree_cuda.h"

#define FIELD_THREADS 256      /* evaluation: a block per group, 2 targets each */
#define FIELD_CELL_TILE 64     /* cells per shared tile                     */
#define FIELD_LIST_WARPS 4     /* list kernel: warps per block              */
#define FIELD_FRONTIER 8192    /* nodes per warp's frontier (then a node is
                                  taken whole, as a leaf: exact)            */
#define FIELD_NEAR_MAX 4
#define FIELD_BRICKS_MAX 64    /* bricks of at most 8^3 cells per mesh block */
#define FIELD_TABLE ((2 * FIELD_NEAR_MAX + 1) * (2 * FIELD_NEAR_MAX + 1) * (2 * FIELD_NEAR_MAX + 1))

__constant__ float4 c_near_table[FIELD_TABLE]; /* T_phi, T_g (field_internal.h) */

#include "mesh/field_gpu.h"

namespace {

/* n elements of host h to a new device array *d (queued; from pageable
 * memory the call has read h when it returns). */
template <typename T>
bn_status upload(T **d, const T *h, size_t n, const char *what, cudaStream_t s)
{
    BN_TRY(bn_cuda_dev_alloc(d, n, what, s));
    if (n > 0) BN_CUDA_CHECK(cudaMemcpyAsync(*d, h, n * sizeof(T), cudaMemcpyHostToDevice, s));
    return BN_OK;
}

/* ---- what the kernels read --------------------------------------------------- */

struct field_nodes {
    int2 *body;       /* first body, count                           */
    int2 *child;      /* first child, count (0: a leaf)               */
    double *box;      /* 6 per node: lo xyz, hi xyz (cells as cubes)  */
    double *mom;      /* K * 10 per node: M, D, S (raw), about the centre */
    double *reach;    /* per node: near_cells x the largest cell side */
    float4 *c_hi;     /* centre (units, relative to ref: hi), open radius^2 */
    float4 *c_lo;     /* its lo parts                                 */
    float *m;         /* K * 10 per node: M, D, Q (traceless), scaled */
    float4 *near_lo;  /* the box minus reach (units, hi only): near test */
    float4 *near_hi;
};

struct field_bodies {
    double *x[3];     /* sorted positions (user units)                */
    double *q[3];     /* sorted strengths                             */
    double *h;        /* sorted cell x sides (0: a particle)          */
    float4 *hi, *lo;  /* position hi, lo (units, rel. ref); hi.w = h in units */
    float4 *qs;       /* q0, q1, q2 in units, 0                       */
};

struct field_groups {
    int n;
    int *first, *count;
    float4 *centre;   /* the group's frame: centre (units rel. ref, a float), cell side h (units) */
    float4 *half;     /* half sizes (rounded up), 0                    */
};

struct field_lists {
    int *n_cell, *n_body, *n_near;     /* per group (then exclusive scans) */
    int *cells, *bodies, *near;
    unsigned long long *counts;        /* pp, pc pairs; list lengths: near,
                                          cell, body (64-bit: checked
                                          before the 32-bit scans)     */
};

struct field_units {
    double ref[3], ls, qs;
    float eps2;
    int K, near;
    float aspect[3];
};

__device__ __forceinline__ float3 in_frame(float4 hi, float4 lo, float4 c)
{
    return make_float3((hi.x - c.x) + lo.x, (hi.y - c.y) + lo.y, (hi.z - c.z) + lo.z);
}

__host__ __device__ __forceinline__ void split(double v, float *hi, float *lo)
{
    *hi = (float)v;
    *lo = (float)(v - (double)*hi);
}

/* ---- bodies ------------------------------------------------------------------ */

__global__ void bodies_kernel(field_bodies b, int n, field_units u)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float h[3], l[3];
    for (int k = 0; k < 3; k++) split((b.x[k][i] - u.ref[k]) * u.ls, &h[k], &l[k]);
    b.hi[i] = make_float4(h[0], h[1], h[2], (float)(b.h[i] * u.ls));
    b.lo[i] = make_float4(l[0], l[1], l[2], 0.0f);
    b.qs[i] = make_float4((float)(b.q[0][i] * u.qs), u.K == 3 ? (float)(b.q[1][i] * u.qs) : 0.0f,
                          u.K == 3 ? (float)(b.q[2][i] * u.qs) : 0.0f, 0.0f);
}

/* ---- moments ------------------------------------------------------------------- */

__device__ void node_box_from_bodies(const field_bodies &b, const field_units &u, int2 body, double *box, double *reach)
{
    for (int k = 0; k < 3; k++) {
        box[k] = 1e300;
        box[3 + k] = -1e300;
    }
    *reach = 0;
    for (int i = body.x; i < body.x + body.y; i++)
        for (int k = 0; k < 3; k++) {
            const double h = b.h[i] * u.aspect[k];
            box[k] = fmin(box[k], b.x[k][i] - 0.5 * h);
            box[3 + k] = fmax(box[3 + k], b.x[k][i] + 0.5 * h);
            *reach = fmax(*reach, u.near * h);
        }
}

__global__ void moments_kernel(field_nodes nd, field_bodies b, field_units u, int lo, int hi)
{
    const int c = lo + blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= hi) return;
    const int K = u.K;
    double *box = nd.box + 6 * (size_t)c, *mom = nd.mom + (size_t)c * K * 10;
    const int2 ch = nd.child[c], body = nd.body[c];
    if (ch.y == 0) {
        node_box_from_bodies(b, u, body, box, &nd.reach[c]);
    } else {
        double r = 0;
        for (int k = 0; k < 3; k++) {
            box[k] = 1e300;
            box[3 + k] = -1e300;
        }
        for (int j = ch.x; j < ch.x + ch.y; j++) {
            for (int k = 0; k < 3; k++) {
                box[k] = fmin(box[k], nd.box[6 * (size_t)j + k]);
                box[3 + k] = fmax(box[3 + k], nd.box[6 * (size_t)j + 3 + k]);
            }
            r = fmax(r, nd.reach[j]);
        }
        nd.reach[c] = r;
    }
    const double ctr[3] = {0.5 * (box[0] + box[3]), 0.5 * (box[1] + box[4]), 0.5 * (box[2] + box[5])};
    for (int k = 0; k < K * 10; k++) mom[k] = 0;
    if (ch.y == 0) {
        for (int i = body.x; i < body.x + body.y; i++) {
            const double s[3] = {b.x[0][i] - ctr[0], b.x[1][i] - ctr[1], b.x[2][i] - ctr[2]};
            for (int k = 0; k < K; k++) bn_field_moments_add(mom + 10 * k, b.q[k][i], s);
        }
        return;
    }
    for (int j = ch.x; j < ch.x + ch.y; j++) {
        const double *cb = nd.box + 6 * (size_t)j;
        const double d[3] = {0.5 * (cb[0] + cb[3]) - ctr[0], 0.5 * (cb[1] + cb[4]) - ctr[1], 0.5 * (cb[2] + cb[5]) - ctr[2]};
        for (int k = 0; k < K; k++) bn_field_moments_shift_add(mom + 10 * k, nd.mom + ((size_t)j * K + k) * 10, d);
    }
}

/* Floats of every node: centre (hi + lo), open radius^2, traceless Q. */
__global__ void finish_kernel(field_nodes nd, field_units u, double theta, int n)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n) return;
    const int K = u.K;
    const double *box = nd.box + 6 * (size_t)c;
    double l = 0, a2 = 0;
    float h[3], lo[3];
    for (int k = 0; k < 3; k++) {
        const double side = box[3 + k] - box[k];
        l = fmax(l, side);
        a2 += 0.25 * side * side;
        split((0.5 * (box[k] + box[3 + k]) - u.ref[k]) * u.ls, &h[k], &lo[k]);
    }
    const double r = bn_field_open_radius(l, sqrt(a2), theta) * u.ls;
    nd.c_hi[c] = make_float4(h[0], h[1], h[2], (float)fmin(r * r, 1e30));
    nd.c_lo[c] = make_float4(lo[0], lo[1], lo[2], 0.0f);
    const double rc = nd.reach[c];
    nd.near_lo[c] = make_float4((float)((box[0] - rc - u.ref[0]) * u.ls), (float)((box[1] - rc - u.ref[1]) * u.ls),
                                (float)((box[2] - rc - u.ref[2]) * u.ls), 0.0f);
    nd.near_hi[c] = make_float4((float)((box[3] + rc - u.ref[0]) * u.ls), (float)((box[4] + rc - u.ref[1]) * u.ls),
                                (float)((box[5] + rc - u.ref[2]) * u.ls), 0.0f);
    for (int k = 0; k < K; k++) {
        double w[10];
        for (int e = 0; e < 10; e++) w[e] = nd.mom[((size_t)c * K + k) * 10 + e];
        bn_field_moments_finish(w);
        float *f = nd.m + ((size_t)c * K + k) * 10;
        const double s1 = u.qs * u.ls, s2 = s1 * u.ls;
        f[0] = (float)(w[0] * u.qs);
        for (int a = 0; a < 3; a++) f[1 + a] = (float)(w[1 + a] * s1);
        for (int p = 0; p < 6; p++) f[4 + p] = (float)(w[4 + p] * s2);
    }
}

/* ---- lists ---------------------------------------------------------------------- */

struct list_args {
    field_nodes nd;
    field_bodies b;
    field_groups g;
    field_lists l;
    int *frontier;   /* 2 x FIELD_FRONTIER per resident warp */
    int fill, with_near;
};

__device__ __forceinline__ float box_dist2(float3 c, float4 half)
{
    const float dx = fmaxf(fabsf(c.x) - half.x, 0.0f), dy = fmaxf(fabsf(c.y) - half.y, 0.0f),
                dz = fmaxf(fabsf(c.z) - half.z, 0.0f);
    return dx * dx + dy * dy + dz * dz;
}

/* Append a contiguous range of `n` items starting at `first` per lane
 * (lanes with n = 0 add nothing) after *len, in lane order. */
__device__ void append_ranges(int *list, int *len, int first, int n, int fill, unsigned lane)
{
    int incl = n;
    for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, o);
        if ((int)lane >= o) incl += v;
    }
    const int base = *len + incl - n;
    if (fill)
        for (int i = 0; i < n; i++) list[base + i] = first + i;
    *len += __shfl_sync(0xffffffffu, incl, 31);
}

/* One breadth-first descent for group g: far (accepted cells and opened
 * leaves' bodies) or near (source cells whose reach touches the group). */
__device__ void descend(const list_args &a, int g, int *front, int near_pass, unsigned lane)
{
    const float4 gc = a.g.centre[g], half = a.g.half[g];
    int *cur = front, *next = front + FIELD_FRONTIER;
    int ncur = 1, len_cell = 0, len_body = 0;
    const int cell0 = a.fill ? a.l.n_cell[g] : 0, body0 = a.fill ? (near_pass ? a.l.n_near[g] : a.l.n_body[g]) : 0;
    int *cells = a.l.cells + cell0, *bodies = (near_pass ? a.l.near : a.l.bodies) + body0;
    if (lane == 0) cur[0] = 0;
    __syncwarp();
    while (ncur > 0) {
        int nnext = 0;
        for (int base = 0; base < ncur; base += 32) {
            const int i = base + (int)lane;
            int c = -1, take_cell = 0, take_body = 0, open_n = 0;
            int2 body = make_int2(0, 0), child = make_int2(0, 0);
            if (i < ncur) {
                c = cur[i];
                body = a.nd.body[c];
                child = a.nd.child[c];
                if (near_pass) {
                    const float4 lo = a.nd.near_lo[c], hi = a.nd.near_hi[c];
                    const int touch = lo.x - gc.x < half.x && hi.x - gc.x > -half.x && lo.y - gc.y < half.y &&
                                      hi.y - gc.y > -half.y && lo.z - gc.z < half.z && hi.z - gc.z > -half.z;
                    if (touch && child.y == 0) take_body = 1;
                    else if (touch) open_n = child.y;
                } else {
                    const float3 p = in_frame(a.nd.c_hi[c], a.nd.c_lo[c], gc);
                    if (box_dist2(p, half) > a.nd.c_hi[c].w) take_cell = 1;
                    else if (child.y == 0) take_body = 1;
                    else open_n = child.y;
                }
            }
            /* children that would overflow the frontier: the node is taken whole */
            int incl = open_n;
            for (int o = 1; o < 32; o <<= 1) {
                const int v = __shfl_up_sync(0xffffffffu, incl, o);
                if ((int)lane >= o) incl += v;
            }
            if (open_n && nnext + incl > FIELD_FRONTIER) {
                open_n = 0;
                take_body = 1;
            }
            append_ranges(next, &nnext, child.x, open_n, 1, lane);
            append_ranges(cells, &len_cell, c, take_cell, a.fill, lane);
            append_ranges(bodies, &len_body, body.x, take_body ? body.y : 0, a.fill, lane);
        }
        __syncwarp();
        int *t = cur;
        cur = next;
        next = t;
        ncur = nnext;
    }
    if (!a.fill && lane == 0) {
        if (near_pass) {
            a.l.n_near[g] = len_body;
            atomicAdd(&a.l.counts[2], (unsigned long long)len_body);
        } else {
            a.l.n_cell[g] = len_cell;
            a.l.n_body[g] = len_body;
            const unsigned long long cnt = (unsigned long long)a.g.count[g];
            atomicAdd(&a.l.counts[0], cnt * (unsigned long long)len_body);
            atomicAdd(&a.l.counts[1], cnt * (unsigned long long)len_cell);
            atomicAdd(&a.l.counts[3], (unsigned long long)len_cell);
            atomicAdd(&a.l.counts[4], (unsigned long long)len_body);
        }
    }
}

__global__ void __launch_bounds__(32 * FIELD_LIST_WARPS) list_kernel(list_args a)
{
    const unsigned lane = threadIdx.x & 31;
    const int warp = (int)(blockIdx.x * FIELD_LIST_WARPS + threadIdx.x / 32);
    const int warps = (int)(gridDim.x * FIELD_LIST_WARPS);
    int *front = a.frontier + (size_t)warp * 2 * FIELD_FRONTIER;
    for (int g = warp; g < a.g.n; g += warps) {
        descend(a, g, front, 0, lane);
        if (a.with_near) descend(a, g, front, 1, lane);
    }
}

/* ---- evaluation ------------------------------------------------------------------- */

struct eval_args {
    field_nodes nd;
    field_bodies b;
    field_groups g;
    field_lists l;
    field_units u;
    const float4 *t_hi, *t_lo;   /* targets (units rel. ref), group order */
    double *raw;                 /* 4K per target (points)                 */
    double pot_unit, acc_unit;   /* raw sums back to user units            */
    /* mesh targets: the finished values straight into cell order */
    int mesh_out;                /* 1: write out[] instead of raw          */
    float *out[6];               /* gpot, gacx..z or psix..z, velx..z, as
                                    raw floats: times out_scale on the host,
                                    while copied out of the staging buffers
                                    (half the bytes over the bus)         */
    double out_scale[6];
    double G;                    /* gravity's constant                     */
    int velocity;                /* vorticity: also u = curl psi           */
    int nb[3], bricks;           /* cells per block, bricks per block      */
    const int *sel;              /* the targets' blocks (a part's), or NULL:
                                    every block; the values go to the part's
                                    cells, its blocks in its order         */
    unsigned long long *bad;     /* the first cell with a value not finite */
    int4 brick_lo[FIELD_BRICKS_MAX]; /* a brick's first cell            */
    int4 brick_n[FIELD_BRICKS_MAX];  /* its extent (w: its first target
                                        within the block)              */
};

/* The raw sums of one target as the mesh's variables (field.c's
 * finish_values) before their units: gravity phi, g (times G and the
 * units: out_scale); vorticity psi (out_scale -1 / (4 pi) and the unit)
 * and u = curl psi from the gradients. Checked here as the host will
 * scale them (the same product, so the same finiteness). */
template <int K>
__device__ void write_mesh(const eval_args &a, size_t cell, const float *phi, const float *g)
{
    float raw[6];
    int nv = 4;
    if (K == 1) {
        raw[0] = phi[0];
        for (int k = 0; k < 3; k++) raw[1 + k] = g[k];
    } else {
        for (int k = 0; k < 3; k++) raw[k] = phi[k];
        /* g[3 k + j] = d psi_k / d x_j (times 4 pi) */
        raw[3] = (float)((double)g[3 * 2 + 1] - (double)g[3 * 1 + 2]);
        raw[4] = (float)((double)g[3 * 0 + 2] - (double)g[3 * 2 + 0]);
        raw[5] = (float)((double)g[3 * 1 + 0] - (double)g[3 * 0 + 1]);
        nv = a.velocity ? 6 : 3;
    }
    int finite = 1;
    for (int k = 0; k < nv; k++) {
        a.out[k][cell] = raw[k];
        finite &= isfinite(a.out_scale[k] * (double)raw[k]);
    }
    if (!finite) atomicMin(a.bad, (unsigned long long)cell);
}

/* The exact cube minus the point kernel for a pair the table does not
 * hold (cells of other sides), in double: d = source - target (units). */
template <int K>
__device__ void near_exact(const float3 d, float h, const float *q, const field_units &u, float *phi, float *g)
{
    const double dd[3] = {d.x, d.y, d.z}, hh[3] = {h * u.aspect[0], h * u.aspect[1], h * u.aspect[2]};
    double cphi = 0, cg[3] = {0, 0, 0};
    bn_box_field_at(dd, hh, &cphi, cg);
    const double r2 = dd[0] * dd[0] + dd[1] * dd[1] + dd[2] * dd[2], rinv = r2 > 0 ? rsqrt(r2) : 0.0;
    const double vinv = 1.0 / (hh[0] * hh[1] * hh[2]);
    for (int k = 0; k < K; k++) {
        phi[k] += (float)(q[k] * (cphi * vinv + rinv));
        for (int a = 0; a < 3; a++) g[3 * k + a] += (float)(q[k] * (cg[a] * vinv - dd[a] * rinv * rinv * rinv));
    }
}

template <int K>
__device__ void near_pair(const float3 d, float hs, float ht, const float *q, const field_units &u, float *phi, float *g)
{
    const float lim = ((float)u.near + 0.5f) * hs;
    if (!(fabsf(d.x) < lim * u.aspect[0] && fabsf(d.y) < lim * u.aspect[1] && fabsf(d.z) < lim * u.aspect[2])) return;
    if (fabsf(hs - ht) <= 1e-6f * hs) {
        const float ix = d.x / (hs * u.aspect[0]), iy = d.y / (hs * u.aspect[1]), iz = d.z / (hs * u.aspect[2]);
        const float rx = rintf(ix), ry = rintf(iy), rz = rintf(iz);
        if (fabsf(ix - rx) < 1e-3f && fabsf(iy - ry) < 1e-3f && fabsf(iz - rz) < 1e-3f) {
            const int w = 2 * u.near + 1;
            const float4 t = c_near_table[((int)rx + u.near) + w * (((int)ry + u.near) + w * ((int)rz + u.near))];
            const float inv = 1.0f / hs;
            for (int k = 0; k < K; k++) {
                const float f = q[k] * inv;
                phi[k] += f * t.x;
                g[3 * k + 0] += f * inv * t.y;
                g[3 * k + 1] += f * inv * t.z;
                g[3 * k + 2] += f * inv * t.w;
            }
            return;
        }
    }
    near_exact<K>(d, hs, q, u, phi, g);
}

template <int K>
__global__ void __launch_bounds__(FIELD_THREADS) eval_kernel(eval_args a)
{
    __shared__ float4 s_pos[FIELD_THREADS];
    __shared__ float4 s_q[FIELD_THREADS];
    __shared__ float4 s_c[FIELD_CELL_TILE];
    __shared__ float s_m[FIELD_CELL_TILE * K * 10];
    const int g = blockIdx.x, tid = threadIdx.x;
    const float4 gc = a.g.centre[g];
    const int first = a.g.first[g], count = a.g.count[g];
    float3 x[2];
    int live[2];
    float phi[2][K], grad[2][3 * K];
    for (int j = 0; j < 2; j++) {
        const int i = tid + j * FIELD_THREADS;
        live[j] = i < count;
        x[j] = live[j] ? in_frame(a.t_hi[first + i], a.t_lo[first + i], gc) : make_float3(0, 0, 0);
        for (int k = 0; k < K; k++) phi[j][k] = 0;
        for (int k = 0; k < 3 * K; k++) grad[j][k] = 0;
    }
    /* bodies of opened leaves */
    const int nb = a.l.n_body[g + 1] - a.l.n_body[g], *bl = a.l.bodies + a.l.n_body[g];
    for (int base = 0; base < nb; base += FIELD_THREADS) {
        __syncthreads();
        if (base + tid < nb) {
            const int j = bl[base + tid];
            const float3 p = in_frame(a.b.hi[j], a.b.lo[j], gc);
            s_pos[tid] = make_float4(p.x, p.y, p.z, 0.0f);
            s_q[tid] = a.b.qs[j];
        }
        __syncthreads();
        const int n = min(FIELD_THREADS, nb - base);
        for (int s = 0; s < n; s++) {
            const float4 p = s_pos[s], qq = s_q[s];
            const float q[3] = {qq.x, qq.y, qq.z};
            for (int j = 0; j < 2; j++) {
                if (a.u.eps2 > 0)
                    bn_field_pp_smooth_f(K, p.x - x[j].x, p.y - x[j].y, p.z - x[j].z, q, a.u.eps2, phi[j], grad[j]);
                else bn_field_pp_f(K, p.x - x[j].x, p.y - x[j].y, p.z - x[j].z, q, phi[j], grad[j]);
            }
        }
    }
    /* accepted cells */
    const int nc = a.l.n_cell[g + 1] - a.l.n_cell[g], *cl = a.l.cells + a.l.n_cell[g];
    for (int base = 0; base < nc; base += FIELD_CELL_TILE) {
        __syncthreads();
        const int n = min(FIELD_CELL_TILE, nc - base);
        if (tid < n) {
            const int c = cl[base + tid];
            const float3 p = in_frame(a.nd.c_hi[c], a.nd.c_lo[c], gc);
            s_c[tid] = make_float4(p.x, p.y, p.z, 0.0f);
        }
        for (int e = tid; e < n * K * 10; e += FIELD_THREADS)
            s_m[e] = a.nd.m[(size_t)cl[base + e / (K * 10)] * K * 10 + e % (K * 10)];
        __syncthreads();
        for (int s = 0; s < n; s++) {
            const float4 p = s_c[s];
            for (int j = 0; j < 2; j++)
                bn_field_pc_f(K, p.x - x[j].x, p.y - x[j].y, p.z - x[j].z, s_m + s * K * 10, phi[j], grad[j]);
        }
    }
    /* the nearest cells as cubes */
    const int nn = a.l.n_near[g + 1] - a.l.n_near[g], *nl = a.l.near + a.l.n_near[g];
    for (int base = 0; base < nn; base += FIELD_THREADS) {
        __syncthreads();
        if (base + tid < nn) {
            const int j = nl[base + tid];
            const float3 p = in_frame(a.b.hi[j], a.b.lo[j], gc);
            s_pos[tid] = make_float4(p.x, p.y, p.z, a.b.hi[j].w);
            s_q[tid] = a.b.qs[j];
        }
        __syncthreads();
        const int n = min(FIELD_THREADS, nn - base);
        for (int s = 0; s < n; s++) {
            const float4 p = s_pos[s], qq = s_q[s];
            if (!(p.w > 0)) continue; /* a particle: no cube */
            const float q[3] = {qq.x, qq.y, qq.z};
            for (int j = 0; j < 2; j++)
                if (live[j])
                    near_pair<K>(make_float3(p.x - x[j].x, p.y - x[j].y, p.z - x[j].z), p.w, gc.w, q, a.u, phi[j], grad[j]);
        }
    }
    for (int j = 0; j < 2; j++) {
        if (!live[j]) continue;
        const int l = tid + j * FIELD_THREADS;
        if (a.mesh_out) { /* the target's cell: its block, brick and place in the brick */
            const int blk = g / a.bricks, br = g % a.bricks;
            const int4 lo = a.brick_lo[br], n = a.brick_n[br];
            const int i = lo.x + l % n.x, jj = lo.y + l / n.x % n.y, k = lo.z + l / (n.x * n.y);
            const size_t cell = (size_t)blk * (size_t)(a.nb[0] * a.nb[1] * a.nb[2]) +
                                ((size_t)k * (size_t)a.nb[1] + (size_t)jj) * (size_t)a.nb[0] + (size_t)i;
            write_mesh<K>(a, cell, phi[j], grad[j]);
            continue;
        }
        double *r = a.raw + (size_t)(first + l) * 4 * K;
        for (int k = 0; k < K; k++) r[k] = (double)phi[j][k] * a.pot_unit;
        for (int k = 0; k < 3 * K; k++) r[K + k] = (double)grad[j][k] * a.acc_unit;
    }
}

/* ---- the host side ------------------------------------------------------------------- */

/* The stages of a solve timed by events on the stream (nothing waits
 * for them until the end); BANYAN_FIELD_TRACE=1 prints them to stderr
 * (a tuning aid; the library prints nothing otherwise). */
#define FIELD_STAGES 10
struct trace {
    int on, n;
    cudaEvent_t ev[FIELD_STAGES + 1];
    const char *name[FIELD_STAGES + 1];
    double ms[FIELD_STAGES + 1];
};

void trace_begin(trace *tr, cudaStream_t s)
{
    memset(tr, 0, sizeof *tr);
    tr->on = getenv("BANYAN_FIELD_TRACE") != NULL;
    for (int i = 0; i <= FIELD_STAGES; i++) cudaEventCreate(&tr->ev[i]);
    cudaEventRecord(tr->ev[0], s);
}

void trace_mark(trace *tr, cudaStream_t s, const char *stage)
{
    if (tr->n >= FIELD_STAGES) return;
    tr->n++;
    tr->name[tr->n] = stage;
    cudaEventRecord(tr->ev[tr->n], s);
}

/* Wait for the last stage; ms[i] of each; print; release. */
void trace_end(trace *tr, cudaStream_t s)
{
    cudaStreamSynchronize(s);
    for (int i = 1; i <= tr->n; i++) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, tr->ev[i - 1], tr->ev[i]) != cudaSuccess) (void)cudaGetLastError();
        tr->ms[i] = ms;
        if (tr->on) fprintf(stderr, "field trace: %-28s %9.3f ms\n", tr->name[i], ms);
    }
    for (int i = 0; i <= FIELD_STAGES; i++) cudaEventDestroy(tr->ev[i]);
}

/* Powers of two bringing the sources' and targets' extent and the total
 * strength near 1, and the reference point (the sources' centre). */
void units_of(const bn_field_sources *s, const bn_field_targets *t, field_units *u)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, qsum = 0;
    for (size_t i = 0; i < s->n; i++) {
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], s->x[k][i]);
            hi[k] = fmax(hi[k], s->x[k][i]);
        }
        for (int k = 0; k < s->K; k++) qsum += fabs(s->q[(size_t)s->K * i + k]);
    }
    for (size_t i = 0; i < t->n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], t->x[k][i]);
            hi[k] = fmax(hi[k], t->x[k][i]);
        }
    double extent = 0;
    for (int k = 0; k < 3; k++) {
        u->ref[k] = 0.5 * (lo[k] + hi[k]);
        extent = fmax(extent, hi[k] - lo[k]);
    }
    u->ls = bn_gpu_unit_scale(extent);
    u->qs = bn_gpu_unit_scale(qsum);
    u->K = s->K;
}

struct solve_bufs {
    uint64_t *keys, *keys_alt;
    int *vals, *vals_alt;
    double *src_x[3], *src_q[3], *src_h;
    field_bodies b;
    field_nodes nd;
    field_groups g;
    field_lists l;
    float4 *t_hi, *t_lo;
    double *raw;
    int *frontier;
    void *scan_tmp;
};

void free_bufs(solve_bufs *x, cudaStream_t s)
{
    void *p[] = {x->keys, x->keys_alt, x->vals, x->vals_alt, x->src_x[0], x->src_x[1], x->src_x[2], x->src_q[0],
                 x->src_q[1], x->src_q[2], x->src_h, x->b.x[0], x->b.x[1], x->b.x[2], x->b.q[0], x->b.q[1], x->b.q[2],
                 x->b.h, x->b.hi, x->b.lo, x->b.qs, x->nd.box, x->nd.mom, x->nd.reach, x->nd.c_hi, x->nd.c_lo, x->nd.m,
                 x->nd.near_lo, x->nd.near_hi, x->g.first, x->g.count, x->g.centre, x->g.half, x->l.n_cell, x->l.n_body,
                 x->l.n_near, x->l.cells, x->l.bodies, x->l.near, x->l.counts, x->t_hi, x->t_lo, x->raw, x->frontier,
                 x->scan_tmp};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) bn_cuda_free(p[i], s);
    memset(x, 0, sizeof *x);
}

int blocks(size_t n, int threads) { return (int)((n + (size_t)threads - 1) / (size_t)threads); }

/* Host sources (the points path) to the device: positions, strengths,
 * cell sides. */
bn_status upload_sources(bn_field_gpu *fg, const bn_mesh *m, const bn_field_sources *src, solve_bufs *x)
{
    cudaStream_t s = fg->s;
    const size_t n = src->n;
    const int K = src->K;
    double *h = (double *)malloc(n * sizeof(double)), *q = (double *)malloc(n * sizeof(double));
    bn_status r = h && q ? BN_OK : bn_fail(BN_ERR_NOMEM, "out of host memory for %zu sources", n);
    for (size_t i = 0; r == BN_OK && i < n; i++) {
        const int32_t b = src->blk[i];
        h[i] = b >= 0 ? (m->hi[3 * (size_t)b] - m->lo[3 * (size_t)b]) / m->nb[0] : 0.0;
    }
    for (int k = 0; r == BN_OK && k < 3; k++) r = upload(&x->src_x[k], src->x[k], n, "field sources", s);
    /* q is refilled at once: a copy from pageable memory has read it when
     * the call returns (no wait); the one wait is before h and q are freed */
    for (int k = 0; r == BN_OK && k < K; k++) {
        for (size_t i = 0; i < n; i++) q[i] = src->q[(size_t)K * i + k];
        r = upload(&x->src_q[k], q, n, "field sources", s);
    }
    if (r == BN_OK) r = upload(&x->src_h, h, n, "field sources", s);
    if (r == BN_OK && cudaStreamSynchronize(s) != cudaSuccess) r = bn_fail(BN_ERR_DEVICE, "uploading the sources");
    free(h);
    free(q);
    return r;
}

/* The tree over the device's sources (x->src_*), bodies in its order. */
bn_status build_tree(bn_field_gpu *fg, const bn_field_params *prm, int n, int K, const field_units &u, solve_bufs *x)
{
    cudaStream_t s = fg->s;
    bn_gpu_tree_store *ts = &fg->tree;
    BN_TRY(bn_gpu_tree_store_init(ts, s));
    BN_TRY(bn_gpu_bounding_box(x->src_x, NULL, 0.0, n, ts, s));
    BN_TRY(bn_cuda_dev_alloc(&x->keys, (size_t)n, "field keys", s));
    BN_TRY(bn_cuda_dev_alloc(&x->keys_alt, (size_t)n, "field keys", s));
    BN_TRY(bn_cuda_dev_alloc(&x->vals, (size_t)n, "field order", s));
    BN_TRY(bn_cuda_dev_alloc(&x->vals_alt, (size_t)n, "field order", s));
    BN_TRY(bn_gpu_keys(x->src_x, NULL, 0.0, n, ts->frame, 1, x->keys, x->vals, s));
    BN_TRY(bn_gpu_sort_pairs(&x->keys, &x->keys_alt, &x->vals, &x->vals_alt, n, 3 * BN_KEY_MAX_LEVEL, s));
    ts->t.n = n;
    BN_TRY(bn_gpu_build(ts, x->keys, x->vals, n, prm->leaf_size, BN_GROUP_SIZE_MAX, 0, (int2 *)x->keys_alt,
                        (unsigned *)x->vals_alt, s));
    for (int k = 0; k < 3; k++) {
        BN_TRY(bn_cuda_dev_alloc(&x->b.x[k], (size_t)n, "field bodies", s));
        BN_TRY(bn_gpu_gather8(x->src_x[k], x->vals, x->b.x[k], n, s));
        BN_TRY(bn_cuda_dev_alloc(&x->b.q[k], (size_t)n, "field bodies", s));
        if (k < K) BN_TRY(bn_gpu_gather8(x->src_q[k], x->vals, x->b.q[k], n, s));
    }
    BN_TRY(bn_cuda_dev_alloc(&x->b.h, (size_t)n, "field bodies", s));
    BN_TRY(bn_gpu_gather8(x->src_h, x->vals, x->b.h, n, s));
    BN_TRY(bn_cuda_dev_alloc(&x->b.hi, (size_t)n, "field bodies", s));
    BN_TRY(bn_cuda_dev_alloc(&x->b.lo, (size_t)n, "field bodies", s));
    BN_TRY(bn_cuda_dev_alloc(&x->b.qs, (size_t)n, "field bodies", s));
    bodies_kernel<<<blocks((size_t)n, 256), 256, 0, s>>>(x->b, n, u);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

bn_status moments(bn_field_gpu *fg, const bn_field_params *prm, const field_units &u, solve_bufs *x)
{
    cudaStream_t s = fg->s;
    const bn_gpu_tree *t = &fg->tree.t;
    const size_t nn = (size_t)t->n_nodes, K = (size_t)u.K;
    x->nd.body = t->node_body;
    x->nd.child = t->node_child;
    BN_TRY(bn_cuda_dev_alloc(&x->nd.box, 6 * nn, "field nodes", s));
    BN_TRY(bn_cuda_dev_alloc(&x->nd.mom, 10 * K * nn, "field moments", s));
    BN_TRY(bn_cuda_dev_alloc(&x->nd.reach, nn, "field nodes", s));
    BN_TRY(bn_cuda_dev_alloc(&x->nd.c_hi, nn, "field nodes", s));
    BN_TRY(bn_cuda_dev_alloc(&x->nd.c_lo, nn, "field nodes", s));
    BN_TRY(bn_cuda_dev_alloc(&x->nd.m, 10 * K * nn, "field moments", s));
    BN_TRY(bn_cuda_dev_alloc(&x->nd.near_lo, nn, "field nodes", s));
    BN_TRY(bn_cuda_dev_alloc(&x->nd.near_hi, nn, "field nodes", s));
    for (int L = t->n_levels - 1; L >= 0; L--) {
        const int lo = t->level_start[L], hi = t->level_start[L + 1];
        if (hi > lo) moments_kernel<<<blocks((size_t)(hi - lo), 128), 128, 0, s>>>(x->nd, x->b, u, lo, hi);
        BN_CUDA_LAUNCH_CHECK();
    }
    finish_kernel<<<blocks(nn, 256), 256, 0, s>>>(x->nd, u, prm->theta, (int)nn);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

/* Targets and groups to the device, in the solver's units. */
bn_status upload_targets(bn_field_gpu *fg, const bn_field_targets *t, const field_units &u, solve_bufs *x)
{
    cudaStream_t s = fg->s;
    const size_t n = t->n, ng = t->n_groups;
    float4 *hi = (float4 *)malloc(n * sizeof(float4)), *lo = (float4 *)malloc(n * sizeof(float4));
    float4 *gc = (float4 *)malloc(ng * sizeof(float4)), *gh = (float4 *)malloc(ng * sizeof(float4));
    int *first = (int *)malloc(ng * sizeof(int));
    bn_status r = hi && lo && gc && gh && first ? BN_OK : bn_fail(BN_ERR_NOMEM, "out of host memory for %zu targets", n);
#pragma omp parallel for if (r == BN_OK)
    for (long i = 0; i < (long)(r == BN_OK ? n : 0); i++) {
        float h[3], l[3];
        for (int k = 0; k < 3; k++) split((t->x[k][i] - u.ref[k]) * u.ls, &h[k], &l[k]);
        hi[i] = make_float4(h[0], h[1], h[2], 0.0f);
        lo[i] = make_float4(l[0], l[1], l[2], 0.0f);
    }
    for (size_t g = 0; r == BN_OK && g < ng; g++) {
        float c[3], half[3];
        for (int k = 0; k < 3; k++) {
            c[k] = (float)((0.5 * (t->lo[3 * g + k] + t->hi[3 * g + k]) - u.ref[k]) * u.ls);
            /* half sizes about the float centre, rounded up: the box holds every target */
            const double a = (t->lo[3 * g + k] - u.ref[k]) * u.ls - c[k], b = (t->hi[3 * g + k] - u.ref[k]) * u.ls - c[k];
            half[k] = (float)(fmax(fabs(a), fabs(b)) * (1 + 1e-6) + 1e-30);
        }
        gc[g] = make_float4(c[0], c[1], c[2], (float)(t->h[g] * u.ls));
        gh[g] = make_float4(half[0], half[1], half[2], 0.0f);
        first[g] = (int)t->first[g];
    }
    if (r == BN_OK) r = upload(&x->t_hi, hi, n, "field targets", s);
    if (r == BN_OK) r = upload(&x->t_lo, lo, n, "field targets", s);
    if (r == BN_OK) r = upload(&x->g.centre, gc, ng, "target groups", s);
    if (r == BN_OK) r = upload(&x->g.half, gh, ng, "target groups", s);
    if (r == BN_OK) r = upload(&x->g.first, first, ng, "target groups", s);
    if (r == BN_OK) r = upload(&x->g.count, t->count, ng, "target groups", s);
    if (r == BN_OK && cudaStreamSynchronize(s) != cudaSuccess) r = bn_fail(BN_ERR_DEVICE, "uploading the targets");
    x->g.n = (int)ng;
    free(hi);
    free(lo);
    free(gc);
    free(gh);
    free(first);
    return r;
}

/* In place: a[0..n] = exclusive scan of a[0..n) (a has n + 1 entries). */
bn_status exclusive_scan(int *a, int n, cudaStream_t s)
{
    size_t bytes = 0;
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, bytes, a, a, n + 1, s));
    void *tmp = NULL;
    BN_TRY(bn_cuda_alloc(&tmp, bytes, "field scan scratch", s));
    const cudaError_t e = cub::DeviceScan::ExclusiveSum(tmp, bytes, a, a, n + 1, s);
    bn_cuda_free(tmp, s);
    BN_CUDA_CHECK(e);
    return BN_OK;
}

bn_status make_lists(bn_field_gpu *fg, int with_near, solve_bufs *x, unsigned long long counts[3])
{
    cudaStream_t s = fg->s;
    const int ng = x->g.n;
    int sms = 0;
    BN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, fg->device));
    const int grid = sms * 8 < blocks((size_t)ng, FIELD_LIST_WARPS) ? sms * 8 : blocks((size_t)ng, FIELD_LIST_WARPS);
    BN_TRY(bn_cuda_dev_alloc(&x->frontier, (size_t)grid * FIELD_LIST_WARPS * 2 * FIELD_FRONTIER, "field walk frontier",
                             s));
    BN_TRY(bn_cuda_dev_alloc(&x->l.n_cell, (size_t)ng + 1, "field lists", s));
    BN_TRY(bn_cuda_dev_alloc(&x->l.n_body, (size_t)ng + 1, "field lists", s));
    BN_TRY(bn_cuda_dev_alloc(&x->l.n_near, (size_t)ng + 1, "field lists", s));
    BN_TRY(bn_cuda_dev_alloc(&x->l.counts, 5, "field counts", s));
    BN_CUDA_CHECK(cudaMemsetAsync(x->l.n_cell, 0, ((size_t)ng + 1) * sizeof(int), s));
    BN_CUDA_CHECK(cudaMemsetAsync(x->l.n_body, 0, ((size_t)ng + 1) * sizeof(int), s));
    BN_CUDA_CHECK(cudaMemsetAsync(x->l.n_near, 0, ((size_t)ng + 1) * sizeof(int), s));
    BN_CUDA_CHECK(cudaMemsetAsync(x->l.counts, 0, 5 * sizeof(unsigned long long), s));
    list_args a;
    a.nd = x->nd;
    a.b = x->b;
    a.g = x->g;
    a.l = x->l;
    a.frontier = x->frontier;
    a.with_near = with_near;
    a.fill = 0;
    list_kernel<<<grid, 32 * FIELD_LIST_WARPS, 0, s>>>(a);
    BN_CUDA_LAUNCH_CHECK();
    /* the lists' lengths summed in 64 bits, read with the pair counts
     * (one wait): offsets are scanned in int, so a longer list fails here */
    unsigned long long c[5];
    BN_TRY(bn_cuda_read(c, x->l.counts, sizeof c, "field list lengths", s));
    const unsigned long long n_cell = c[3], n_body = c[4], n_near = c[2];
    const unsigned long long most = (unsigned long long)INT_MAX;
    if (n_cell > most || n_body > most || n_near > most)
        return bn_fail(BN_ERR_DEVICE_NOMEM, "the field solver's interaction lists overflow 2^31 entries (%llu cells, "
                       "%llu bodies, %llu near): use a larger theta or fewer targets per call", n_cell, n_body, n_near);
    BN_TRY(exclusive_scan(x->l.n_cell, ng, s));
    BN_TRY(exclusive_scan(x->l.n_body, ng, s));
    BN_TRY(exclusive_scan(x->l.n_near, ng, s));
    BN_TRY(bn_cuda_dev_alloc(&x->l.cells, (size_t)n_cell, "field cell list", s));
    BN_TRY(bn_cuda_dev_alloc(&x->l.bodies, (size_t)n_body, "field body list", s));
    BN_TRY(bn_cuda_dev_alloc(&x->l.near, (size_t)n_near, "field near list", s));
    a.l = x->l;
    a.fill = 1;
    list_kernel<<<grid, 32 * FIELD_LIST_WARPS, 0, s>>>(a);
    BN_CUDA_LAUNCH_CHECK();
    for (int k = 0; k < 3; k++) counts[k] = c[k];
    return BN_OK;
}

bn_status upload_table(const bn_mesh *m, int near, field_units *u, cudaStream_t s)
{
    bn_field_near_table tab;
    BN_TRY(bn_field_near_table_make(m, near, &tab));
    const int w = 2 * near + 1;
    float4 t[FIELD_TABLE];
    for (int o = 0; o < w * w * w; o++)
        t[o] = make_float4((float)tab.t[4 * o], (float)tab.t[4 * o + 1], (float)tab.t[4 * o + 2], (float)tab.t[4 * o + 3]);
    for (int k = 0; k < 3; k++) u->aspect[k] = (float)tab.aspect[k];
    bn_field_near_table_free(&tab);
    BN_CUDA_CHECK(cudaMemcpyToSymbolAsync(c_near_table, t, (size_t)w * w * w * sizeof(float4), 0,
                                          cudaMemcpyHostToDevice, s));
    BN_CUDA_CHECK(cudaStreamSynchronize(s));
    return BN_OK;
}

bn_status evaluate(bn_field_gpu *fg, const bn_field_targets *t, const field_units &u, solve_bufs *x, double *raw)
{
    cudaStream_t s = fg->s;
    const size_t per = 4 * (size_t)u.K;
    BN_TRY(bn_cuda_dev_alloc(&x->raw, t->n * per, "field values", s));
    eval_args a;
    a.nd = x->nd;
    a.b = x->b;
    a.g = x->g;
    a.l = x->l;
    a.u = u;
    a.t_hi = x->t_hi;
    a.t_lo = x->t_lo;
    a.raw = x->raw;
    a.pot_unit = u.ls / u.qs;
    a.acc_unit = u.ls * u.ls / u.qs;
    a.mesh_out = 0;
    for (size_t g = 0; g < t->n_groups; g++)
        if (t->count[g] > 2 * FIELD_THREADS)
            return bn_fail(BN_ERR_INTERNAL, "target group %zu has %d targets (at most %d)", g, t->count[g],
                           2 * FIELD_THREADS);
    if (u.K == 1) eval_kernel<1><<<x->g.n, FIELD_THREADS, 0, s>>>(a);
    else eval_kernel<3><<<x->g.n, FIELD_THREADS, 0, s>>>(a);
    BN_CUDA_LAUNCH_CHECK();
    return bn_cuda_read(raw, x->raw, t->n * per * sizeof(double), "field values", s);
}

/* ---- the mesh path: sources, targets and results on the device ------------------- */

const size_t kStreamRun = 4096; /* values per thread at a time (staging copies) */

/* The staging callbacks (core/staging_cuda.h) of the mesh's transfers:
 * doubles copied as they are (in parallel), or raw floats times scale
 * into host doubles (the product the device checked) with streaming
 * stores (core/stream_store.h). */
struct doubles_ctx {
    double *dst;        /* host, downloads */
    const double *src;  /* host, uploads   */
};

void fill_doubles(void *ctx, void *pin, size_t off, size_t len)
{
    const double *src = ((const doubles_ctx *)ctx)->src + off;
    double *p = (double *)pin;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)len; i++) p[i] = src[i];
}

void drain_doubles(void *ctx, const void *pin, size_t off, size_t len)
{
    double *dst = ((const doubles_ctx *)ctx)->dst + off;
    const double *p = (const double *)pin;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)len; i++) dst[i] = p[i];
}

struct scaled_ctx {
    double *dst;
    double scale;
};

void drain_scaled(void *ctx, const void *pin, size_t off, size_t len)
{
    const scaled_ctx *c = (const scaled_ctx *)ctx;
    const float *p = (const float *)pin;
    const long runs = (long)((len + kStreamRun - 1) / kStreamRun);
#pragma omp parallel for schedule(static)
    for (long r = 0; r < runs; r++) {
        const size_t a = (size_t)r * kStreamRun, e = a + kStreamRun < len ? a + kStreamRun : len;
        bn_stream_scaled_floats(c->dst + off + a, p + a, e - a, c->scale);
    }
}

/* n raw floats from the device to host doubles times scale. */
bn_status stage_down_scaled(bn_field_gpu *fg, double *dst, const float *src, size_t n, double scale)
{
    scaled_ctx c = {dst, scale};
    return bn_stage_down(&fg->stage, fg->s, src, n, sizeof(float), drain_scaled, &c, "field values (staged)");
}

/* The units of the raw outputs (write_mesh): gravity G times the
 * potential's and the acceleration's unit; vorticity -1 / (4 pi) and
 * +1 / (4 pi) times them (psi = -phi / 4 pi, u = curl psi). */
void mesh_out_scales(eval_args *a, int K)
{
    const double f = 1.0 / (4.0 * 3.14159265358979323846);
    for (int v = 0; v < 6; v++) {
        const int pot = K == 1 ? v == 0 : v < 3;
        a->out_scale[v] = K == 1 ? a->G * (pot ? a->pot_unit : a->acc_unit) : pot ? -f * a->pot_unit : f * a->acc_unit;
    }
}

struct mesh_dev {
    unsigned long long *bad; /* first bad source (4 cell + component), first
                                cell whose value is not finite          */
    int density;        /* gravity: the source must be >= 0 */
    double *box;        /* 6 per block: lo xyz, hi xyz */
    double *val[3];     /* the source variables, cell order */
    int *flag, *index;  /* nonzero cells and their compaction */
    int n_src, n_cells;
    double *absq;       /* |q| per source, for the strength unit */
};

__device__ __forceinline__ void cell_of(const double *box, const int nb[3], int c, double x[3], double h[3])
{
    const int ijk[3] = {c % nb[0], c / nb[0] % nb[1], c / (nb[0] * nb[1])};
    for (int k = 0; k < 3; k++) {
        h[k] = (box[3 + k] - box[k]) / nb[k];
        x[k] = box[k] + ((double)ijk[k] + 0.5) * h[k];
    }
}

__global__ void flag_kernel(mesh_dev md, int K)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= md.n_cells) return;
    int any = 0;
    for (int k = 0; k < K; k++) {
        const double v = md.val[k][i];
        any |= v != 0.0;
        if (!isfinite(v) || (md.density && !(v >= 0.0))) atomicMin(md.bad, 4ull * (unsigned long long)i + (unsigned)k);
    }
    md.flag[i] = any;
}

/* Source j of the compaction: the cell's centre, strength x volume, side. */
__global__ void mesh_sources_kernel(mesh_dev md, int K, int nb0, int nb1, int nb2, double *x0, double *x1, double *x2,
                                    double *q0, double *q1, double *q2, double *h)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= md.n_src) return;
    const int cell = md.index[j], cells = nb0 * nb1 * nb2, nb[3] = {nb0, nb1, nb2};
    double x[3], hh[3];
    cell_of(md.box + 6 * (size_t)(cell / cells), nb, cell % cells, x, hh);
    const double vol = hh[0] * hh[1] * hh[2];
    x0[j] = x[0];
    x1[j] = x[1];
    x2[j] = x[2];
    h[j] = hh[0];
    q0[j] = md.val[0][cell] * vol;
    if (K == 3) {
        q1[j] = md.val[1][cell] * vol;
        q2[j] = md.val[2][cell] * vol;
    }
    double a = fabs(q0[j]);
    if (K == 3) a += fabs(q1[j]) + fabs(q2[j]);
    md.absq[j] = a;
}

/* Particles after the cells: positions, masses, side 0. */
__global__ void particle_sources_kernel(int n, int at, const double *px, const double *py, const double *pz,
                                        const double *pm, double *x0, double *x1, double *x2, double *q0, double *h,
                                        double *absq)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    x0[at + i] = px[i];
    x1[at + i] = py[i];
    x2[at + i] = pz[i];
    q0[at + i] = pm[i];
    h[at + i] = 0.0;
    absq[at + i] = fabs(pm[i]);
}

/* Targets: every cell, brick after brick, as hi + lo floats. */
__global__ void mesh_targets_kernel(const double *box, eval_args a, field_units u, float4 *t_hi, float4 *t_lo)
{
    const int g = blockIdx.x, l = threadIdx.x;
    const int blk = g / a.bricks, br = g % a.bricks; /* blk: the part's */
    const int4 lo = a.brick_lo[br], n = a.brick_n[br];
    const int count = n.x * n.y * n.z;
    const size_t mesh_blk = a.sel ? (size_t)a.sel[blk] : (size_t)blk;
    for (int t = l; t < count; t += blockDim.x) {
        const int c = (lo.x + t % n.x) + a.nb[0] * ((lo.y + t / n.x % n.y) + a.nb[1] * (lo.z + t / (n.x * n.y)));
        double x[3], h[3];
        cell_of(box + 6 * mesh_blk, a.nb, c, x, h);
        float hi[3], lw[3];
        for (int k = 0; k < 3; k++) split((x[k] - u.ref[k]) * u.ls, &hi[k], &lw[k]);
        const size_t at = (size_t)blk * (size_t)(a.nb[0] * a.nb[1] * a.nb[2]) + (size_t)n.w + (size_t)t;
        t_hi[at] = make_float4(hi[0], hi[1], hi[2], 0.0f);
        t_lo[at] = make_float4(lw[0], lw[1], lw[2], 0.0f);
    }
}

/* The groups (bricks) from the block table: first target, count, the
 * frame's centre, half sizes and cell side. */
__global__ void mesh_groups_kernel(const double *box, eval_args a, field_units u, field_groups g)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= g.n) return;
    const int blk = i / a.bricks, br = i % a.bricks; /* blk: the part's */
    const int4 lo = a.brick_lo[br], n = a.brick_n[br];
    const double *b = box + 6 * (a.sel ? (size_t)a.sel[blk] : (size_t)blk);
    float c[3], half[3];
    double h[3];
    const int first[3] = {lo.x, lo.y, lo.z}, ext[3] = {n.x, n.y, n.z};
    for (int k = 0; k < 3; k++) {
        h[k] = (b[3 + k] - b[k]) / a.nb[k];
        const double x0 = b[k] + (first[k] + 0.5) * h[k], x1 = b[k] + (first[k] + ext[k] - 0.5) * h[k];
        c[k] = (float)((0.5 * (x0 + x1) - u.ref[k]) * u.ls);
        const double da = (x0 - u.ref[k]) * u.ls - c[k], db = (x1 - u.ref[k]) * u.ls - c[k];
        half[k] = (float)(fmax(fabs(da), fabs(db)) * (1 + 1e-6) + 1e-30);
    }
    g.first[i] = blk * (a.nb[0] * a.nb[1] * a.nb[2]) + n.w;
    g.count[i] = n.x * n.y * n.z;
    g.centre[i] = make_float4(c[0], c[1], c[2], (float)(h[0] * u.ls));
    g.half[i] = make_float4(half[0], half[1], half[2], 0.0f);
}

/* The bricks of a block: cut along each axis into pieces of at most 8
 * cells (field.c's bn_field_targets_mesh, the same order). The count is
 * checked first: the kernels' table has FIELD_BRICKS_MAX entries. */
bn_status brick_pattern(const bn_mesh *m, eval_args *a)
{
    const int cx = (m->nb[0] + 7) / 8, cy = (m->nb[1] + 7) / 8, cz = (m->nb[2] + 7) / 8;
    if ((long long)cx * cy * cz > FIELD_BRICKS_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "blocks of %dx%dx%d cells: the GPU field solver takes at most %d bricks of "
                       "8^3 cells per block", m->nb[0], m->nb[1], m->nb[2], FIELD_BRICKS_MAX);
    int r = 0, at = 0;
    for (int bz = 0; bz < cz; bz++)
        for (int by = 0; by < cy; by++)
            for (int bx = 0; bx < cx; bx++, r++) {
                const int i0 = bx * m->nb[0] / cx, j0 = by * m->nb[1] / cy, k0 = bz * m->nb[2] / cz;
                const int nx = (bx + 1) * m->nb[0] / cx - i0, ny = (by + 1) * m->nb[1] / cy - j0,
                          nz = (bz + 1) * m->nb[2] / cz - k0;
                a->brick_lo[r] = make_int4(i0, j0, k0, 0);
                a->brick_n[r] = make_int4(nx, ny, nz, at);
                at += nx * ny * nz;
            }
    a->bricks = r;
    for (int k = 0; k < 3; k++) a->nb[k] = m->nb[k];
    return BN_OK;
}

/* The nonzero cells' indices compacted (CUB) into md->index, their
 * count and the first bad source read back (one wait). */
bn_status select_sources(mesh_dev *md, int cells, solve_bufs *x, int *nc, unsigned long long *bad, cudaStream_t s)
{
    int *d_count = NULL;
    size_t bytes = 0;
    thrust::counting_iterator<int> it(0);
    bn_status r = bn_cuda_dev_alloc(&d_count, 1, "mesh source count", s);
    cudaError_t e = cudaSuccess;
    if (r == BN_OK) e = cub::DeviceSelect::Flagged(NULL, bytes, it, md->flag, md->index, d_count, cells, s);
    if (r == BN_OK && e == cudaSuccess) r = bn_cuda_alloc(&x->scan_tmp, bytes, "mesh source select", s);
    if (r == BN_OK && e == cudaSuccess)
        e = cub::DeviceSelect::Flagged(x->scan_tmp, bytes, it, md->flag, md->index, d_count, cells, s);
    if (r == BN_OK && e != cudaSuccess) r = bn_cuda_fail(e, "cub::DeviceSelect::Flagged", __FILE__, __LINE__);
    if (r == BN_OK) r = bn_cuda_read_queued(bad, md->bad, sizeof *bad, "mesh source check", s);
    if (r == BN_OK) r = bn_cuda_read(nc, d_count, sizeof *nc, "mesh source count", s);
    bn_cuda_free(d_count, s);
    return r;
}

/* The block table and the source variables to the device; the nonzero
 * cells compacted into sources (and the particles after them). */
bn_status mesh_sources(bn_field_gpu *fg, const bn_mesh *m, const int *var, int K, const bn_particles *extra,
                       mesh_dev *md, solve_bufs *x, int *n_src)
{
    cudaStream_t s = fg->s;
    const size_t cells = bn_mesh_cells(m), nblk = m->n_blocks;
    if (cells > (size_t)INT32_MAX / 2) return bn_fail(BN_ERR_ARGUMENT, "%zu cells: the GPU field solver takes up to 2^30", cells);
    md->n_cells = (int)cells;
    double *box = (double *)malloc(6 * nblk * sizeof(double));
    if (!box) return bn_fail(BN_ERR_NOMEM, "out of host memory for %zu blocks", nblk);
    for (size_t b = 0; b < nblk; b++)
        for (int k = 0; k < 3; k++) {
            box[6 * b + k] = m->lo[3 * b + k];
            box[6 * b + 3 + k] = m->hi[3 * b + k];
        }
    bn_status r = upload(&md->box, box, 6 * nblk, "mesh blocks", s);
    if (r == BN_OK) r = cudaStreamSynchronize(s) == cudaSuccess ? BN_OK : bn_fail(BN_ERR_DEVICE, "uploading blocks");
    free(box);
    BN_TRY(r);
    for (int k = 0; k < K; k++) {
        BN_TRY(bn_cuda_dev_alloc(&md->val[k], cells, "mesh source values", s));
        BN_TRY(bn_field_stage_copy(fg, md->val[k], m->var[var[k]], cells, 1));
    }
    BN_TRY(bn_cuda_dev_alloc(&md->flag, cells, "mesh source flags", s));
    BN_TRY(bn_cuda_dev_alloc(&md->index, cells, "mesh source index", s));
    BN_TRY(bn_cuda_dev_alloc(&md->bad, 2, "mesh checks", s));
    BN_CUDA_CHECK(cudaMemsetAsync(md->bad, 0xff, 2 * sizeof(unsigned long long), s));
    flag_kernel<<<blocks(cells, 256), 256, 0, s>>>(*md, K);
    BN_CUDA_LAUNCH_CHECK();
    int nc = 0;
    unsigned long long bad = 0;
    BN_TRY(select_sources(md, (int)cells, x, &nc, &bad, s));
    if (bad != ~0ull) { /* the first bad value: its variable, block and cell named */
        bn_field_params p;
        memset(&p, 0, sizeof p);
        p.kind = md->density ? BN_FIELD_GRAVITY : BN_FIELD_VORTICITY;
        return bn_field_bad_source(&p, m, var[bad % 4], (size_t)(bad / 4));
    }
    md->n_src = nc;
    if (extra && extra->n > (size_t)INT32_MAX / 2 - (size_t)nc)
        return bn_fail(BN_ERR_ARGUMENT, "%d source cells and %zu particles: the GPU field solver takes up to 2^30 "
                       "sources", nc, extra->n);
    const int np = extra ? (int)extra->n : 0, n = nc + np;
    for (int k = 0; k < 3; k++) {
        BN_TRY(bn_cuda_dev_alloc(&x->src_x[k], (size_t)n, "field sources", s));
        BN_TRY(bn_cuda_dev_alloc(&x->src_q[k], (size_t)n, "field sources", s));
    }
    BN_TRY(bn_cuda_dev_alloc(&x->src_h, (size_t)n, "field sources", s));
    BN_TRY(bn_cuda_dev_alloc(&md->absq, (size_t)n, "field sources", s));
    if (nc > 0)
        mesh_sources_kernel<<<blocks((size_t)nc, 256), 256, 0, s>>>(*md, K, m->nb[0], m->nb[1], m->nb[2], x->src_x[0],
                                                                   x->src_x[1], x->src_x[2], x->src_q[0], x->src_q[1],
                                                                   x->src_q[2], x->src_h);
    BN_CUDA_LAUNCH_CHECK();
    if (np > 0) {
        double *p[4] = {NULL, NULL, NULL, NULL};
        const double *hp[4] = {extra->pos[0], extra->pos[1], extra->pos[2], extra->mass};
        for (int k = 0; r == BN_OK && k < 4; k++) r = upload(&p[k], hp[k], (size_t)np, "particle sources", s);
        if (r == BN_OK)
            particle_sources_kernel<<<blocks((size_t)np, 256), 256, 0, s>>>(np, nc, p[0], p[1], p[2], p[3], x->src_x[0],
                                                                          x->src_x[1], x->src_x[2], x->src_q[0],
                                                                          x->src_h, md->absq);
        cudaStreamSynchronize(s);
        for (int k = 0; k < 4; k++) bn_cuda_free(p[k], s);
        BN_TRY(r);
        BN_CUDA_LAUNCH_CHECK();
    }
    *n_src = n;
    return BN_OK;
}

/* The units of the mesh path: ref the domain's centre, the length unit
 * from its extent, the strength unit from the sum of |q| (CUB). */
bn_status mesh_units(bn_field_gpu *fg, const bn_mesh *m, const mesh_dev *md, int n, int K, field_units *u)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, extent = 0;
    for (size_t b = 0; b < m->n_blocks; b++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], m->lo[3 * b + k]);
            hi[k] = fmax(hi[k], m->hi[3 * b + k]);
        }
    for (int k = 0; k < 3; k++) {
        u->ref[k] = 0.5 * (lo[k] + hi[k]);
        extent = fmax(extent, hi[k] - lo[k]);
    }
    double *d_sum = NULL, sum = 0;
    void *tmp = NULL;
    size_t bytes = 0;
    bn_status r = bn_cuda_dev_alloc(&d_sum, 1, "strength sum", fg->s);
    cudaError_t e = cudaSuccess;
    if (r == BN_OK) e = cub::DeviceReduce::Sum(NULL, bytes, md->absq, d_sum, n, fg->s);
    if (r == BN_OK && e == cudaSuccess) r = bn_cuda_alloc(&tmp, bytes, "strength sum", fg->s);
    if (r == BN_OK && e == cudaSuccess) e = cub::DeviceReduce::Sum(tmp, bytes, md->absq, d_sum, n, fg->s);
    if (r == BN_OK && e != cudaSuccess) r = bn_cuda_fail(e, "cub::DeviceReduce::Sum", __FILE__, __LINE__);
    if (r == BN_OK) r = bn_cuda_read(&sum, d_sum, sizeof sum, "strength sum", fg->s);
    bn_cuda_free(tmp, fg->s);
    bn_cuda_free(d_sum, fg->s);
    u->ls = bn_gpu_unit_scale(extent);
    u->qs = bn_gpu_unit_scale(sum);
    u->K = K;
    return r;
}

void free_mesh_dev(mesh_dev *md, cudaStream_t s)
{
    void *p[] = {md->box, md->val[0], md->val[1], md->val[2], md->flag, md->index, md->absq, md->bad};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) bn_cuda_free(p[i], s);
    memset(md, 0, sizeof *md);
}

/* The part's blocks on the device (as ints: *sel NULL for every block). */
bn_status upload_part(const bn_mesh *m, const bn_mesh_part *part, int **sel, cudaStream_t s)
{
    *sel = NULL;
    if (!part || part->n == 0) return BN_OK;
    if (m->n_blocks > (size_t)INT_MAX) return bn_fail(BN_ERR_ARGUMENT, "the mesh: %zu blocks", m->n_blocks);
    int *h = (int *)malloc(part->n * sizeof *h);
    if (!h) return bn_fail(BN_ERR_NOMEM, "the part's blocks");
    for (size_t i = 0; i < part->n; i++) h[i] = (int)part->blocks[i];
    bn_status r = bn_cuda_dev_alloc(sel, part->n, "the part's blocks", s);
    if (r == BN_OK && cudaMemcpyAsync(*sel, h, part->n * sizeof *h, cudaMemcpyHostToDevice, s) != cudaSuccess)
        r = bn_fail(BN_ERR_DEVICE, "the part's blocks: upload");
    if (r == BN_OK && cudaStreamSynchronize(s) != cudaSuccess) r = bn_fail(BN_ERR_DEVICE, "the part's blocks: upload");
    if (r != BN_OK) { /* the caller returns at once: nothing of it is kept */
        bn_cuda_free(*sel, s);
        *sel = NULL;
    }
    free(h);
    return r;
}
} // namespace

extern "C" bn_status bn_field_gpu_mesh(bn_field_gpu *fg, const bn_field_params *prm, const bn_mesh *m, const int *var,
                                       const bn_particles *extra, const bn_mesh_part *part, double *const *out,
                                       bn_field_stats *st)
{
    BN_CUDA_CHECK(cudaSetDevice(fg->device));
    cudaStream_t s = fg->s;
    const size_t n_blocks = part ? part->n : m->n_blocks; /* the targets' */
    for (size_t i = 0; part && i < part->n; i++)
        if (part->blocks[i] >= m->n_blocks)
            return bn_fail(BN_ERR_ARGUMENT, "block %zu of the part: the mesh has %zu", part->blocks[i], m->n_blocks);
    if (n_blocks == 0) return BN_OK; /* nothing to evaluate */
    const int K = prm->kind == BN_FIELD_VORTICITY ? 3 : 1;
    const int nv = K == 1 ? 4 : (prm->velocity ? 6 : 3);
    field_units u;
    memset(&u, 0, sizeof u);
    u.near = prm->near_cells;
    for (int k = 0; k < 3; k++) u.aspect[k] = (float)((m->hi[k] - m->lo[k]) / m->nb[k] / ((m->hi[0] - m->lo[0]) / m->nb[0]));
    const double eps2 = bn_field_eps2(prm, m);
    const int with_near = !(eps2 > 0);
    solve_bufs x;
    mesh_dev md;
    memset(&x, 0, sizeof x);
    memset(&md, 0, sizeof md);
    eval_args a;
    memset(&a, 0, sizeof a);
    BN_TRY(brick_pattern(m, &a));
    BN_TRY(upload_part(m, part, (int **)&a.sel, s));
    bn_cuda_reset_peak();
    trace tr;
    trace_begin(&tr, s);
    int n = 0;
    bn_status r = with_near ? upload_table(m, prm->near_cells, &u, s) : BN_OK;
    md.density = K == 1;
    if (r == BN_OK) r = mesh_sources(fg, m, var, K, extra, &md, &x, &n);
    trace_mark(&tr, s, "mesh sources (upload, select)");
    if (r == BN_OK && n == 0) { /* no sources: every value 0 */
        trace_end(&tr, s);
        for (int v = 0; v < nv; v++) memset(out[v], 0, n_blocks * bn_mesh_block_cells(m) * sizeof(double));
        bn_cuda_free((void *)a.sel, s);
        free_mesh_dev(&md, s);
        free_bufs(&x, s);
        return BN_OK;
    }
    if (r == BN_OK) r = mesh_units(fg, m, &md, n, K, &u);
    u.eps2 = (float)(eps2 * u.ls * u.ls);
    if (r == BN_OK) r = build_tree(fg, prm, n, K, u, &x);
    trace_mark(&tr, s, "tree");
    if (r == BN_OK) r = moments(fg, prm, u, &x);
    trace_mark(&tr, s, "moments");
    const size_t cells = n_blocks * bn_mesh_block_cells(m); /* the targets' */
    x.g.n = (int)(n_blocks * (size_t)a.bricks);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&x.g.first, (size_t)x.g.n, "target groups", s);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&x.g.count, (size_t)x.g.n, "target groups", s);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&x.g.centre, (size_t)x.g.n, "target groups", s);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&x.g.half, (size_t)x.g.n, "target groups", s);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&x.t_hi, cells, "field targets", s);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&x.t_lo, cells, "field targets", s);
    if (r == BN_OK) {
        mesh_groups_kernel<<<blocks((size_t)x.g.n, 128), 128, 0, s>>>(md.box, a, u, x.g);
        mesh_targets_kernel<<<x.g.n, 128, 0, s>>>(md.box, a, u, x.t_hi, x.t_lo);
        if (cudaGetLastError() != cudaSuccess) r = bn_fail(BN_ERR_DEVICE, "the mesh's target kernels failed to launch");
    }
    trace_mark(&tr, s, "targets (device)");
    unsigned long long counts[3] = {0, 0, 0};
    if (r == BN_OK) r = make_lists(fg, with_near, &x, counts);
    trace_mark(&tr, s, "lists");
    float *d_out[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    for (int v = 0; r == BN_OK && v < nv; v++) r = bn_cuda_dev_alloc(&d_out[v], cells, "field values", s);
    if (r == BN_OK) {
        a.nd = x.nd;
        a.b = x.b;
        a.g = x.g;
        a.l = x.l;
        a.u = u;
        a.t_hi = x.t_hi;
        a.t_lo = x.t_lo;
        a.pot_unit = u.ls / u.qs;
        a.acc_unit = u.ls * u.ls / u.qs;
        a.mesh_out = 1;
        a.bad = md.bad + 1;
        a.G = prm->G;
        a.velocity = prm->velocity;
        for (int v = 0; v < 6; v++) a.out[v] = d_out[v];
        mesh_out_scales(&a, K);
    }
    /* one evaluation, then the values down on the same stream (in
     * slices downloaded while the next was evaluated it was slower: a
     * tail per slice) */
    if (r == BN_OK && x.g.n > 0) {
        if (K == 1) eval_kernel<1><<<x.g.n, FIELD_THREADS, 0, s>>>(a);
        else eval_kernel<3><<<x.g.n, FIELD_THREADS, 0, s>>>(a);
        if (cudaGetLastError() != cudaSuccess) r = bn_fail(BN_ERR_DEVICE, "the evaluation kernel failed to launch");
    }
    trace_mark(&tr, s, "evaluate");
    for (int v = 0; r == BN_OK && v < nv; v++) r = stage_down_scaled(fg, out[v], d_out[v], cells, a.out_scale[v]);
    trace_mark(&tr, s, "download (after the evaluation)");
    trace_end(&tr, s);
    st->t_sources = 1e-3 * tr.ms[1];
    st->t_tree = 1e-3 * tr.ms[2];
    st->t_moments = 1e-3 * tr.ms[3];
    st->t_targets = 1e-3 * tr.ms[4];
    st->t_walk = 1e-3 * (tr.ms[5] + tr.ms[6]);
    st->t_download = 1e-3 * tr.ms[7];
    for (int v = 0; v < 6; v++) bn_cuda_free(d_out[v], s);
    st->n_pp = (double)counts[0];
    st->n_pc = (double)counts[1];
    st->n_near = (double)counts[2];
    st->n_nodes = fg->tree.t.n_nodes;
    st->n_groups = x.g.n;
    st->n_sources = (size_t)n;
    st->n_targets = cells;
    st->device_bytes_peak = bn_cuda_bytes_peak();
    unsigned long long bad = ~0ull;
    if (r == BN_OK && md.bad) r = bn_cuda_read(&bad, md.bad + 1, sizeof bad, "mesh output check", s);
    if (r == BN_OK && bad != ~0ull) {
        const size_t bc = bn_mesh_block_cells(m), j = (size_t)bad / bc, blk = part ? part->blocks[j] : j;
        r = bn_fail(BN_ERR_ARGUMENT, "the field at cell %zu (block %zu) is not finite: strengths or G overflow",
                    blk * bc + (size_t)bad % bc, blk);
    }
    bn_cuda_free((void *)a.sel, s);
    free_mesh_dev(&md, s);
    free_bufs(&x, s);
    cudaStreamSynchronize(s);
    return r;
}

extern "C" bn_status bn_field_stage_copy(bn_field_gpu *fg, double *dst, const double *src, size_t n, int to_device)
{
    doubles_ctx c = {dst, src};
    if (!to_device)
        return bn_stage_down(&fg->stage, fg->s, src, n, sizeof(double), drain_doubles, &c, "field values (staged)");
    BN_TRY(bn_stage_up(&fg->stage, fg->s, dst, n, sizeof(double), fill_doubles, &c));
    BN_CUDA_CHECK(cudaStreamSynchronize(fg->s)); /* the upload's failures reported here */
    return BN_OK;
}

extern "C" bn_status bn_field_gpu_create(bn_field_gpu **out, int device)
{
    *out = NULL;
    if (!bn_gpu_available()) return bn_fail(BN_ERR_DEVICE, "backend 'gpu' requested but no usable CUDA device was found");
    bn_field_gpu *g = (bn_field_gpu *)calloc(1, sizeof *g);
    if (!g) return bn_fail(BN_ERR_NOMEM, "out of memory for the field solver");
    g->device = bn_gpu_device_pick(device); /* BN_DEVICE_AUTO: this rank's GPU */
    cudaError_t e = cudaSetDevice(g->device);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking);
    bn_status r = e == cudaSuccess ? BN_OK : bn_cuda_fail(e, "cudaSetDevice / cudaStreamCreate", __FILE__, __LINE__);
    if (r == BN_OK) r = bn_staging_init(&g->stage);
    if (r != BN_OK) {
        bn_field_gpu_free(g); /* what was made */
        return r;
    }
    *out = g;
    return BN_OK;
}

extern "C" void bn_field_gpu_free(bn_field_gpu *g)
{
    if (!g) return;
    if (g->s) { /* without a stream (a failed create) nothing else was made */
        bn_gpu_tree_store_free(&g->tree, g->s);
        bn_fft_cache_free(g);
        cudaStreamSynchronize(g->s);
    }
    bn_staging_free(&g->stage); /* after the stream's last transfer */
    if (g->s) cudaStreamDestroy(g->s);
    free(g);
}

extern "C" bn_status bn_field_gpu_solve(bn_field_gpu *fg, const bn_field_params *prm, const bn_mesh *m,
                                        const bn_field_sources *src, const bn_field_targets *t, double *raw,
                                        bn_field_stats *st)
{
    if (src->n > (size_t)INT32_MAX / 2 || t->n > (size_t)INT32_MAX / 2)
        return bn_fail(BN_ERR_ARGUMENT, "%zu sources and %zu targets: the GPU field solver takes up to 2^30 of each",
                       src->n, t->n);
    BN_CUDA_CHECK(cudaSetDevice(fg->device));
    field_units u;
    memset(&u, 0, sizeof u);
    units_of(src, t, &u);
    u.near = prm->near_cells;
    for (int k = 0; k < 3; k++) /* every cell of a mesh has the first block's aspect */
        u.aspect[k] = m ? (float)((m->hi[k] - m->lo[k]) / m->nb[k] / ((m->hi[0] - m->lo[0]) / m->nb[0])) : 1.0f;
    const double eps2 = bn_field_eps2(prm, m);
    u.eps2 = (float)(eps2 * u.ls * u.ls);
    const int with_near = m && !(eps2 > 0);
    solve_bufs x;
    memset(&x, 0, sizeof x);
    bn_cuda_reset_peak();
    trace tr;
    trace_begin(&tr, fg->s);
    bn_status r = with_near ? upload_table(m, prm->near_cells, &u, fg->s) : BN_OK;
    if (r == BN_OK) r = upload_sources(fg, m, src, &x);
    if (r == BN_OK) r = build_tree(fg, prm, (int)src->n, src->K, u, &x); /* its shape read back: no wait here */
    trace_mark(&tr, fg->s, "upload sources, tree");
    if (r == BN_OK) r = moments(fg, prm, u, &x);
    trace_mark(&tr, fg->s, "moments");
    if (r == BN_OK) r = upload_targets(fg, t, u, &x);
    trace_mark(&tr, fg->s, "targets (host split, upload)");
    unsigned long long counts[3] = {0, 0, 0};
    if (r == BN_OK) r = make_lists(fg, with_near, &x, counts);
    trace_mark(&tr, fg->s, "lists");
    if (r == BN_OK) r = evaluate(fg, t, u, &x, raw);
    trace_mark(&tr, fg->s, "evaluate and download");
    trace_end(&tr, fg->s);
    st->t_tree = 1e-3 * tr.ms[1];
    st->t_moments = 1e-3 * tr.ms[2];
    st->t_targets = 1e-3 * tr.ms[3];
    st->t_walk = 1e-3 * (tr.ms[4] + tr.ms[5]);
    st->n_pp = (double)counts[0];
    st->n_pc = (double)counts[1];
    st->n_near = (double)counts[2];
    st->n_nodes = fg->tree.t.n_nodes;
    st->n_groups = (long)t->n_groups;
    st->device_bytes_peak = bn_cuda_bytes_peak();
    free_bufs(&x, fg->s);
    cudaStreamSynchronize(fg->s);
    return r;
}
