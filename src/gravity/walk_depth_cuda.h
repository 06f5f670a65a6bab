/*
 * The depth-first walk of a received tree for one chunk of targets: one
 * warp, one cell at a time (every lane reads the same cell), K targets a
 * lane, a stack of BN_REMOTE_STACK cells (the upload refuses trees that
 * could need more: walk_remote.h). The received walk's last resort
 * (walk_remote_cuda.cu) and the deep pass's fallback (walk_cuda.cu), so
 * templated on their arguments (bn_remote_args, bn_walk_args: the same
 * fields by name). Device code: included by those two files only.
 */
#ifndef BANYAN_WALK_DEPTH_CUDA_H
#define BANYAN_WALK_DEPTH_CUDA_H
#include "gravity/interact.h"
#include "gravity/walk_gpu.h"
#include "gravity/walk_remote.h"

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
template <int K, class A>
__device__ void bn_remote_accept(const A &a, int cell, float4 com, float4 q1, float far_r2,
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
template <int K, class A>
__device__ void bn_remote_leaf(const A &a, int2 nb, float4 gc, bn_remote_targets<K> *tg,
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
template <int K, class A>
__device__ bool bn_remote_walk(const A &a, int *stack, float4 gc, float4 gh, float far_r2, int lane,
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
template <int K, class A>
__device__ void bn_remote_chunk(const A &a, int *stack, int first, int nt, float4 gc, float4 gh,
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

#endif
