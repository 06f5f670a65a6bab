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
#include <math.h>
#include <string.h>
#include "core/cuda_check.h"
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
#define FIELD_TABLE ((2 * FIELD_NEAR_MAX + 1) * (2 * FIELD_NEAR_MAX + 1) * (2 * FIELD_NEAR_MAX + 1))

__constant__ float4 c_near_table[FIELD_TABLE]; /* T_phi, T_g (field_internal.h) */

struct bn_field_gpu {
    int device;
    cudaStream_t s;
    bn_gpu_tree_store tree;
};

namespace {

template <typename T>
bn_status dev_alloc(T **p, size_t n, const char *what, cudaStream_t s)
{
    return bn_cuda_alloc((void **)p, (n ? n : 1) * sizeof(T), what, s);
}

template <typename T>
bn_status upload(T **d, const T *h, size_t n, const char *what, cudaStream_t s)
{
    BN_TRY(dev_alloc(d, n, what, s));
    BN_CUDA_CHECK(cudaMemcpyAsync(*d, h, n * sizeof(T), cudaMemcpyHostToDevice, s));
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
    unsigned long long *counts;        /* pp, pc, near pairs          */
};

struct field_units {
    double ref[3], ls, qs;
    float eps2;
    int K, near, leaf_theta_unused;
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
            for (int k = 0; k < K; k++) {
                const double q = b.q[k][i];
                double *w = mom + 10 * k;
                w[0] += q;
                for (int a = 0; a < 3; a++) w[1 + a] += q * s[a];
                w[4] += q * s[0] * s[0];
                w[5] += q * s[1] * s[1];
                w[6] += q * s[2] * s[2];
                w[7] += q * s[0] * s[1];
                w[8] += q * s[0] * s[2];
                w[9] += q * s[1] * s[2];
            }
        }
        return;
    }
    const int pa[6] = {0, 1, 2, 0, 0, 1}, pb[6] = {0, 1, 2, 1, 2, 2};
    for (int j = ch.x; j < ch.x + ch.y; j++) {
        const double *cb = nd.box + 6 * (size_t)j;
        const double d[3] = {0.5 * (cb[0] + cb[3]) - ctr[0], 0.5 * (cb[1] + cb[4]) - ctr[1], 0.5 * (cb[2] + cb[5]) - ctr[2]};
        for (int k = 0; k < K; k++) {
            const double *v = nd.mom + ((size_t)j * K + k) * 10;
            double *w = mom + 10 * k;
            w[0] += v[0];
            for (int a = 0; a < 3; a++) w[1 + a] += v[1 + a] + v[0] * d[a];
            for (int p = 0; p < 6; p++)
                w[4 + p] += v[4 + p] + v[1 + pa[p]] * d[pb[p]] + d[pa[p]] * v[1 + pb[p]] + v[0] * d[pa[p]] * d[pb[p]];
        }
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
        const double *w = nd.mom + ((size_t)c * K + k) * 10;
        float *f = nd.m + ((size_t)c * K + k) * 10;
        const double tr = w[4] + w[5] + w[6], s1 = u.qs * u.ls, s2 = s1 * u.ls;
        f[0] = (float)(w[0] * u.qs);
        for (int a = 0; a < 3; a++) f[1 + a] = (float)(w[1 + a] * s1);
        for (int p = 0; p < 6; p++) f[4 + p] = (float)((3.0 * w[4 + p] - (p < 3 ? tr : 0.0)) * s2);
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
        if (near_pass) a.l.n_near[g] = len_body;
        else {
            a.l.n_cell[g] = len_cell;
            a.l.n_body[g] = len_body;
            const unsigned long long cnt = (unsigned long long)a.g.count[g];
            atomicAdd(&a.l.counts[0], cnt * (unsigned long long)len_body);
            atomicAdd(&a.l.counts[1], cnt * (unsigned long long)len_cell);
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
    double *raw;                 /* 4K per target                          */
    double pot_unit, acc_unit;   /* raw sums back to user units            */
};

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
        double *r = a.raw + (size_t)(first + tid + j * FIELD_THREADS) * 4 * K;
        for (int k = 0; k < K; k++) r[k] = (double)phi[j][k] * a.pot_unit;
        for (int k = 0; k < 3 * K; k++) r[K + k] = (double)grad[j][k] * a.acc_unit;
    }
}

/* ---- the host side ------------------------------------------------------------------- */

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

/* Sources to the device, the tree built over them, bodies in its order. */
bn_status build_tree(bn_field_gpu *fg, const bn_field_params *prm, const bn_mesh *m, const bn_field_sources *src,
                     const field_units &u, solve_bufs *x)
{
    cudaStream_t s = fg->s;
    const int n = (int)src->n, K = src->K;
    double *h = (double *)malloc((size_t)n * sizeof(double)), *q = (double *)malloc((size_t)n * sizeof(double));
    if (!h || !q) {
        free(h);
        free(q);
        return bn_fail(BN_ERR_NOMEM, "out of host memory for %d sources", n);
    }
    for (int i = 0; i < n; i++) {
        const int32_t b = src->blk[i];
        h[i] = b >= 0 ? (m->hi[3 * (size_t)b] - m->lo[3 * (size_t)b]) / m->nb[0] : 0.0;
    }
    bn_status r = BN_OK;
    for (int k = 0; r == BN_OK && k < 3; k++) r = upload(&x->src_x[k], src->x[k], (size_t)n, "field sources", s);
    for (int k = 0; r == BN_OK && k < K; k++) {
        for (int i = 0; i < n; i++) q[i] = src->q[(size_t)K * i + k];
        r = upload(&x->src_q[k], q, (size_t)n, "field sources", s);
        if (r == BN_OK) r = cudaStreamSynchronize(s) == cudaSuccess ? BN_OK : bn_fail(BN_ERR_DEVICE, "upload");
    }
    if (r == BN_OK) r = upload(&x->src_h, h, (size_t)n, "field sources", s);
    if (r == BN_OK) r = cudaStreamSynchronize(s) == cudaSuccess ? BN_OK : bn_fail(BN_ERR_DEVICE, "upload");
    free(h);
    free(q);
    BN_TRY(r);
    bn_gpu_tree_store *ts = &fg->tree;
    BN_TRY(bn_gpu_tree_store_init(ts, s));
    BN_TRY(bn_gpu_bounding_box(x->src_x, n, ts, s));
    BN_TRY(dev_alloc(&x->keys, (size_t)n, "field keys", s));
    BN_TRY(dev_alloc(&x->keys_alt, (size_t)n, "field keys", s));
    BN_TRY(dev_alloc(&x->vals, (size_t)n, "field order", s));
    BN_TRY(dev_alloc(&x->vals_alt, (size_t)n, "field order", s));
    BN_TRY(bn_gpu_keys(x->src_x, n, ts->frame, 1, x->keys, x->vals, s));
    BN_TRY(bn_gpu_sort_pairs(&x->keys, &x->keys_alt, &x->vals, &x->vals_alt, n, 3 * BN_KEY_MAX_LEVEL, s));
    ts->t.n = n;
    BN_TRY(bn_gpu_build(ts, x->keys, x->vals, n, prm->leaf_size, BN_GROUP_SIZE_MAX, 0, (int2 *)x->keys_alt,
                        (unsigned *)x->vals_alt, s));
    /* the bodies in key order */
    for (int k = 0; k < 3; k++) {
        BN_TRY(dev_alloc(&x->b.x[k], (size_t)n, "field bodies", s));
        BN_TRY(bn_gpu_gather8(x->src_x[k], x->vals, x->b.x[k], n, s));
        BN_TRY(dev_alloc(&x->b.q[k], (size_t)n, "field bodies", s));
        if (k < K) BN_TRY(bn_gpu_gather8(x->src_q[k], x->vals, x->b.q[k], n, s));
    }
    BN_TRY(dev_alloc(&x->b.h, (size_t)n, "field bodies", s));
    BN_TRY(bn_gpu_gather8(x->src_h, x->vals, x->b.h, n, s));
    BN_TRY(dev_alloc(&x->b.hi, (size_t)n, "field bodies", s));
    BN_TRY(dev_alloc(&x->b.lo, (size_t)n, "field bodies", s));
    BN_TRY(dev_alloc(&x->b.qs, (size_t)n, "field bodies", s));
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
    BN_TRY(dev_alloc(&x->nd.box, 6 * nn, "field nodes", s));
    BN_TRY(dev_alloc(&x->nd.mom, 10 * K * nn, "field moments", s));
    BN_TRY(dev_alloc(&x->nd.reach, nn, "field nodes", s));
    BN_TRY(dev_alloc(&x->nd.c_hi, nn, "field nodes", s));
    BN_TRY(dev_alloc(&x->nd.c_lo, nn, "field nodes", s));
    BN_TRY(dev_alloc(&x->nd.m, 10 * K * nn, "field moments", s));
    BN_TRY(dev_alloc(&x->nd.near_lo, nn, "field nodes", s));
    BN_TRY(dev_alloc(&x->nd.near_hi, nn, "field nodes", s));
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
bn_status exclusive_scan(int *a, int n, solve_bufs *x, cudaStream_t s)
{
    size_t bytes = 0;
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, bytes, a, a, n + 1, s));
    void *tmp = NULL;
    BN_TRY(bn_cuda_alloc(&tmp, bytes, "field scan scratch", s));
    const cudaError_t e = cub::DeviceScan::ExclusiveSum(tmp, bytes, a, a, n + 1, s);
    bn_cuda_free(tmp, s);
    BN_CUDA_CHECK(e);
    (void)x;
    return BN_OK;
}

bn_status make_lists(bn_field_gpu *fg, int with_near, solve_bufs *x, unsigned long long counts[3])
{
    cudaStream_t s = fg->s;
    const int ng = x->g.n;
    int sms = 0;
    BN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, fg->device));
    const int grid = sms * 8 < blocks((size_t)ng, FIELD_LIST_WARPS) ? sms * 8 : blocks((size_t)ng, FIELD_LIST_WARPS);
    BN_TRY(dev_alloc(&x->frontier, (size_t)grid * FIELD_LIST_WARPS * 2 * FIELD_FRONTIER, "field walk frontier", s));
    BN_TRY(dev_alloc(&x->l.n_cell, (size_t)ng + 1, "field lists", s));
    BN_TRY(dev_alloc(&x->l.n_body, (size_t)ng + 1, "field lists", s));
    BN_TRY(dev_alloc(&x->l.n_near, (size_t)ng + 1, "field lists", s));
    BN_TRY(dev_alloc(&x->l.counts, 3, "field counts", s));
    BN_CUDA_CHECK(cudaMemsetAsync(x->l.n_cell, 0, ((size_t)ng + 1) * sizeof(int), s));
    BN_CUDA_CHECK(cudaMemsetAsync(x->l.n_body, 0, ((size_t)ng + 1) * sizeof(int), s));
    BN_CUDA_CHECK(cudaMemsetAsync(x->l.n_near, 0, ((size_t)ng + 1) * sizeof(int), s));
    BN_CUDA_CHECK(cudaMemsetAsync(x->l.counts, 0, 3 * sizeof(unsigned long long), s));
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
    BN_TRY(exclusive_scan(x->l.n_cell, ng, x, s));
    BN_TRY(exclusive_scan(x->l.n_body, ng, x, s));
    BN_TRY(exclusive_scan(x->l.n_near, ng, x, s));
    int tot[3];
    BN_TRY(bn_cuda_read(&tot[0], x->l.n_cell + ng, sizeof(int), "field list length", s));
    BN_TRY(bn_cuda_read(&tot[1], x->l.n_body + ng, sizeof(int), "field list length", s));
    BN_TRY(bn_cuda_read(&tot[2], x->l.n_near + ng, sizeof(int), "field list length", s));
    BN_TRY(bn_cuda_read(counts, x->l.counts, 2 * sizeof(unsigned long long), "field counts", s));
    if (tot[0] < 0 || tot[1] < 0 || tot[2] < 0)
        return bn_fail(BN_ERR_DEVICE_NOMEM, "the field solver's interaction lists overflow 2^31 entries: use a larger "
                       "theta or fewer targets per call");
    BN_TRY(dev_alloc(&x->l.cells, (size_t)tot[0], "field cell list", s));
    BN_TRY(dev_alloc(&x->l.bodies, (size_t)tot[1], "field body list", s));
    BN_TRY(dev_alloc(&x->l.near, (size_t)tot[2], "field near list", s));
    a.l = x->l;
    a.fill = 1;
    list_kernel<<<grid, 32 * FIELD_LIST_WARPS, 0, s>>>(a);
    BN_CUDA_LAUNCH_CHECK();
    counts[2] = (unsigned long long)tot[2];
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
    BN_TRY(dev_alloc(&x->raw, t->n * per, "field values", s));
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
    for (size_t g = 0; g < t->n_groups; g++)
        if (t->count[g] > 2 * FIELD_THREADS)
            return bn_fail(BN_ERR_INTERNAL, "target group %zu has %d targets (at most %d)", g, t->count[g],
                           2 * FIELD_THREADS);
    if (u.K == 1) eval_kernel<1><<<x->g.n, FIELD_THREADS, 0, s>>>(a);
    else eval_kernel<3><<<x->g.n, FIELD_THREADS, 0, s>>>(a);
    BN_CUDA_LAUNCH_CHECK();
    return bn_cuda_read(raw, x->raw, t->n * per * sizeof(double), "field values", s);
}

} // namespace

extern "C" bn_status bn_field_gpu_create(bn_field_gpu **out, int device)
{
    *out = NULL;
    if (!bn_gpu_available()) return bn_fail(BN_ERR_DEVICE, "backend 'gpu' requested but no usable CUDA device was found");
    bn_field_gpu *g = (bn_field_gpu *)calloc(1, sizeof *g);
    if (!g) return bn_fail(BN_ERR_NOMEM, "out of memory for the field solver");
    g->device = device;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(g);
        return bn_cuda_fail(e, "cudaSetDevice / cudaStreamCreate", __FILE__, __LINE__);
    }
    *out = g;
    return BN_OK;
}

extern "C" void bn_field_gpu_free(bn_field_gpu *g)
{
    if (!g) return;
    bn_gpu_tree_store_free(&g->tree, g->s);
    cudaStreamSynchronize(g->s);
    cudaStreamDestroy(g->s);
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
    double t0 = bn_wall_seconds();
    bn_status r = with_near ? upload_table(m, prm->near_cells, &u, fg->s) : BN_OK;
    if (r == BN_OK) r = build_tree(fg, prm, m, src, u, &x);
    if (r == BN_OK) r = cudaStreamSynchronize(fg->s) == cudaSuccess ? BN_OK : bn_fail(BN_ERR_DEVICE, "tree");
    st->t_tree = bn_wall_seconds() - t0;
    t0 = bn_wall_seconds();
    if (r == BN_OK) r = moments(fg, prm, u, &x);
    if (r == BN_OK) r = upload_targets(fg, t, u, &x);
    st->t_moments = bn_wall_seconds() - t0;
    t0 = bn_wall_seconds();
    unsigned long long counts[3] = {0, 0, 0};
    if (r == BN_OK) r = make_lists(fg, with_near, &x, counts);
    if (r == BN_OK) r = evaluate(fg, t, u, &x, raw);
    st->t_walk = bn_wall_seconds() - t0;
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
