/*
 * The GPU tree walk (bn_gpu_walk): a warp per group at a time, Bonsai's
 * breadth-wise traversal (paper 003 sec. 4.2.2) reorganised for warps.
 *
 * Each warp keeps, in its own slice of shared memory:
 *   - a cell stack. The warp pops up to 32 cells at once (one per lane),
 *     tests the MAC on all of them together (interact.h), and pushes the
 *     children of opened nodes (ballot + prefix sum compaction; children
 *     are contiguous, so a node pushes first..first+count-1). Popping the
 *     newest cells first keeps the stack shallow (at most ~8 x 32 cells per
 *     level of the walk in flight). If the children of a node would not
 *     fit, the node is treated like a leaf: its bodies (contiguous in key
 *     order) go to the particle list. That is exact, merely more work, and
 *     bounds the memory without any spill buffer.
 *   - a particle-particle list and a particle-cell list, ring buffers of
 *     64 entries holding the sources themselves (float4 positions relative
 *     to the group centre: (hi - gc) + lo, bn_gpu_in_frame, so that they
 *     keep float precision relative to the group wherever it lies), evaluated in tiles of 32 as soon as 32 are
 *     ready: every lane reads the same entry (a shared-memory broadcast)
 *     and applies it to its targets held in registers.
 *   - a far-cell ring (node indices): accepted cells beyond the group
 *     expansion distance (interact.h bn_local_*). Flushed 32 at a time,
 *     one cell per lane, into each lane's part of the group's Taylor
 *     expansion (20 terms per lane in shared memory, not registers:
 *     occupancy); at the end the parts are summed in a fixed order and
 *     the expansion is evaluated once per target.
 * Targets: a group chunk of nt <= 64 bodies. Every lane holds 2 targets;
 * when nt <= 32 the 2*32 target slots are shared out as L lanes per pair
 * of targets (L = 2, 4, 8, 16), each lane taking every L-th source, and the
 * L partial sums are combined at the end by a fixed butterfly (the same
 * order every run: bit-identical results). Groups larger than 64 bodies
 * walk once per chunk of 64, with the MAC on the whole group's box; the
 * chunks after the first reuse the first one's far-field expansion.
 *
 * Scheduling: a block of 4 warps walks 16 neighbouring groups, each warp
 * taking the next one from a shared counter when it is done (neighbours
 * meet the same cells, so they share the SM's L1; a warp that finished
 * early would otherwise hold its slot idle until the block's slowest
 * group was done).
 *
 * Block time steps walk only the active groups (a list made on the
 * device; the grid is sized for all groups and the blocks past the
 * list's length leave at once) and write only the active bodies.
 *
 * Warp synchronisation is explicit (__syncwarp, *_sync intrinsics); warps
 * never wait on each other; no floating-point atomics (the interaction
 * counters are integers).
 */
#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <stdlib.h>
#include <string.h>
#include "core/cuda_check.h"
#include "core/trace.h"
#include "gravity/interact.h"
#include "gravity/walk_gpu.h"
#include "gravity/walk_remote.h"
#include "gravity/walk_depth_cuda.h"

#ifndef BN_WALK_WARPS
#define BN_WALK_WARPS 4       /* warps per block (neighbouring groups on one
                                 SM share its L1: one warp per block, which
                                 spreads them over the SMs, was slower)  */
#endif
#define BN_WALK_GROUPS_PER_WARP 4 /* a block walks BN_WALK_WARPS x up to this
                                 many neighbouring groups, each warp taking
                                 the next one when done: with one group per
                                 warp, warps done early held their slots
                                 idle until the block's slowest group was
                                 walked (19% of the warp time at 2^22).
                                 4, 2 or 1 (bn_gpu_walk_active's launch) */
#ifndef BN_WALK_MIN_WAVES
#define BN_WALK_MIN_WAVES 8   /* fewer groups per warp (4, 2, 1) until the
                                 grid fills the GPU this many times over:
                                 with 2 waves of blocks of 16 groups, SMs
                                 idle while the last blocks finish (2^20:
                                 1 group per warp walks 9% faster; 2^24
                                 keeps 4; session 12, run 2)             */
#endif
#ifndef BN_WALK_STACK
#define BN_WALK_STACK 760     /* cells on a warp's stack: as small as lets
                                 24 warps' shared memory fit an SM (228 KiB,
                                 1 KiB of it reserved per block); at 2^24
                                 no walk of the Plummer or Hernquist models
                                 overflows it (512 does, rarely)          */
#endif
#ifndef BN_WALK_REMOTE_BUDGET
#define BN_WALK_REMOTE_BUDGET 16384 /* bn_walk_remote_budget's default */
#endif
#ifndef BN_WALK_DEEP_STACK
#define BN_WALK_DEEP_STACK 12288 /* cells on the stack of the second pass
                                 over a received tree (48 KiB, one warp a
                                 block): the groups that overflowed the
                                 first one's or outran its budget         */
#endif
#ifndef BN_WALK_BOX_FRONT
#define BN_WALK_BOX_FRONT 1024 /* a box's frontier cells at most (beyond:
                                 its groups walk from the root; 4 GPUs,
                                 weak Plummer: median 36, largest 340)  */
#endif
#define BN_WALK_RING 64       /* entries of each interaction ring buffer:
                                 two tiles of 32 (flushes take whole tiles
                                 from heads 0 and 32, so none wraps)     */
#define BN_WALK_CHUNK 64      /* targets per walk (2 per lane)            */
#ifndef BN_WALK_REMOTE_TARGETS
#define BN_WALK_REMOTE_TARGETS 2 /* targets per lane in a received tree's
                                 walk, as in the local walk. 4 (chunks of
                                 128: a group of 256 traverses it twice,
                                 not four times) won while every group took
                                 the other domains' far field cell by cell
                                 (session 21); since the boxes' far field
                                 (session 22) the traversal is a tenth of
                                 that, and occupancy wins: 4 GPUs, 2^25
                                 each, weak Plummer (session 35): force
                                 call 84.1-84.5 ms with 4 targets at 4
                                 blocks an SM, 82.9-83.0 with 2 at 6
                                 (80 registers, 250 bytes spilled), 82.3
                                 with 2 at 5 (96 registers)              */
#endif
#ifndef BN_WALK_REMOTE_MIN_BLOCKS
#define BN_WALK_REMOTE_MIN_BLOCKS 5 /* the received trees' walk's blocks per
                                 SM: 20 warps of 96 registers (ptxas: 150
                                 bytes spilled; at 6 blocks, 80 registers,
                                 250, and Nsight Compute found 3.7% of the
                                 warps' stall samples on their loads and
                                 stores)                                  */
#endif
#ifndef BN_WALK_MIN_BLOCKS
#define BN_WALK_MIN_BLOCKS (24 / BN_WALK_WARPS) /* blocks per SM the registers
                                 must allow: 24 warps (80 registers, 16
                                 bytes spilled) beat 20 (96, none spilled)
                                 by 3-5% at 2^24, and 16 (118)           */
#endif
#define BN_FULL 0xffffffffu
static_assert(BN_WALK_BOX_GROUPS >= 0 && BN_WALK_BOX_GROUPS <= 32, "a box's bounds are one warp's reduction");
static_assert(BN_WALK_STACK >= 64, "a frontier's refill puts up to 63 cells on the stack");
static_assert(BN_WALK_GROUPS_PER_WARP == 4, "the walk's launch instantiates 4, 2 and 1 groups per warp");
static_assert(BN_WALK_RING == 64, "a ring is two tiles of 32: its heads stay at 0 and 32");
static_assert(BN_LOCAL_TERMS % 4 == 0, "the far-field terms are kept as float4");

struct bn_gpu_walk_scratch {
    unsigned long long *counts; /* device: particle-particle, particle-cell, far
                                   cells; then two ints: chunks marked for
                                   BN_PP_EXACT, the redo list's length */
    int *redo;                  /* device: groups to walk again BN_PP_EXACT */
    int redo_capacity;
    int resident_blocks;        /* walk blocks the GPU runs at once (0: not asked yet) */
};

/* What a warp keeps in shared memory. */
struct bn_walk_smem {
    int stack[BN_WALK_STACK];
    float4 pp[BN_WALK_RING];  /* source x, y, z (relative to the group), m */
    float4 pc_com[BN_WALK_RING]; /* cell com (relative), M              */
    float4 pc_q0[BN_WALK_RING];  /* Qxx, Qyy, Qzz, Qxy                 */
    float2 pc_q1[BN_WALK_RING];  /* Qxz, Qyz                           */
    int far[BN_WALK_RING];   /* far cells (node indices)           */
    float4 local[32][BN_LOCAL_TERMS / 4]; /* each lane's part of the group's
                                        far-field expansion (registers
                                        would cost occupancy)          */
};

/* The sources a walk reads: the local tree's own nodes and bodies, or
 * another rank's received tree (bn_gpu_source) in the same frame and
 * units. */
struct bn_walk_srcs {
    const float4 *com, *com_lo, *quad0, *quad1; /* node_com ... node_quad1 */
    const int2 *child, *body;                   /* node_child, node_body   */
    const float4 *pos, *pos_lo;                 /* body, body_lo           */
};

struct bn_walk_args {
    bn_gpu_tree t;            /* the targets (groups, bodies) */
    bn_walk_srcs s;
    float eps2;               /* in the tree's units (tree_gpu.h)          */
    float acc_unit, pot_unit; /* G and the units back: G L^2 / M, G L / M
                                 (L, M: the tree's len_scale, mass_scale) */
    float far_kt2;            /* (kappa theta)^2 of the group expansion, 0: off */
    int accel_mac, quadrupole;
    int soft;                 /* eps > 0: bn_pp_soft_f (no r^2 = 0 guard) */
    float4 *out;
    int *marked;              /* device: chunks marked for BN_PP_EXACT    */
    unsigned long long *counts;
    bn_gpu_active act;        /* block steps: the active groups and bodies;
                                 act.groups NULL: every group and body   */
    bn_gpu_chunk_queue queue; /* REMOTE: the chunks of groups whose walk
                                 would overflow the stack (their nodes
                                 have no bodies to fall back on) or
                                 outrun the budget (walk_gpu.h)          */
    bn_gpu_box_far box;       /* REMOTE: the far field per box (walk_gpu.h);
                                 box.n_boxes 0: every group from the root */
    int active_per_warp;      /* act.groups: groups per warp chosen on the
                                 device from the active count (the grid
                                 sized for one a warp); 0: PER_WARP      */
    int resident_blocks;      /* blocks the GPU holds at once             */
    long long budget;         /* REMOTE main pass: a group's cells visited
                                 plus sources taken (per target) beyond
                                 which it stops and queues its chunks
                                 (their own boxes, over many warps); 0:
                                 none (bn_walk_remote_budget)             */
};

/* The targets and partial sums of one lane: T of them (2 in the local
 * walk, BN_WALK_REMOTE_TARGETS in the received trees'). */
template <int T>
struct bn_walk_targets {
    float4 pos[T]; /* relative to the group centre; w: mass   */
    float4 acc[T]; /* ax, ay, az, phi (without G)             */
    float same[T]; /* exact-self walks (BN_PP_EXACT): sources left
                      out as the target itself                */
};

/* How the pp tiles treat a target's own body among the sources:
 *   BN_PP_GUARD  eps = 0: bn_pp_f's r^2 = 0 guard gives it nothing;
 *   BN_PP_SOFT   eps > 0: it adds -m/eps to phi (r^2 = eps^2), taken
 *                back at the end (no test in the hottest loop);
 *   BN_PP_EXACT  eps > 0, where that subtraction would lose phi: where
 *                m/eps exceeds |phi| many times over (eps far below the
 *                spacing), every term added to a sum that held -m/eps
 *                kept only the float precision of m/eps. The sources with
 *                r^2 = eps^2 and the target's mass are left out and
 *                counted; all but one of them (the target) are added back
 *                at the end (each gave exactly m/eps: coincident twins).
 * A chunk is walked BN_PP_SOFT first; if its potential came out below
 * m/eps by more than kExactSelf, it writes its potentials as NaN (marks)
 * and counts itself; only then a second pass lists the groups holding a
 * mark (bn_walk_select_redo) and walks them again BN_PP_EXACT
 * (bn_walk_kernel<1, true, COST>, the only kernels with those loops). Rare
 * where eps is near the spacing or above; the main kernel keeps its
 * registers (a redo list kept by it cost 172 bytes of spills). */
enum { BN_PP_GUARD = 0, BN_PP_SOFT = 1, BN_PP_EXACT = 2 };
constexpr float kExactSelf = 8.f; /* m/eps > 8 |phi|: the subtraction
                                     costs more than ~1e-5 of phi */

/* How far the pp and pc loops are unrolled. The walk kernel holds ten
 * copies of the pp loop and five of the pc loop (lanes per target pair
 * L = 1..16, softened or not), so unrolling multiplies its code: at 4
 * and 2 it took 168 KB, more than the instruction caches hold, and warps
 * stalled on instruction fetches (ncu: 37% of their stall cycles on the
 * uniform cube). At 2 and 1 it takes 86 KB with no register spills: the
 * cube's walk takes 21% less time and Plummer's the same (BENCHMARKS.md,
 * session 11, runs 8-9). */
#ifndef BN_WALK_PP_UNROLL
#define BN_WALK_PP_UNROLL 2
#endif
#ifndef BN_WALK_PC_UNROLL
#define BN_WALK_PC_UNROLL 1
#endif
constexpr int kPpUnroll = BN_WALK_PP_UNROLL, kPcUnroll = BN_WALK_PC_UNROLL; /* (pragmas take no macros) */

/* Apply the sources tile[0, n) of the pp ring to this lane's targets,
 * taking every L-th source starting at `sub`. A tile never wraps around
 * the ring: the rings are flushed 32 entries at a time, so their heads
 * stay at 0 or 32 and a tile (n <= 32) is contiguous. The loop indexes
 * the tile directly (one pointer step per source), where wrapping cost
 * four integer instructions per source load (add, shift, mask, add). */
template <int L, int MODE, int T>
__device__ __forceinline__ void bn_walk_eval_pp(const float4 *tile, int n, int sub, float eps2, bn_walk_targets<T> *tg)
{
#pragma unroll(kPpUnroll)
    for (int j = sub; j < n; j += L) {
        const float4 s = tile[j];
#pragma unroll
        for (int k = 0; k < T; k++) {
            const float dx = s.x - tg->pos[k].x, dy = s.y - tg->pos[k].y, dz = s.z - tg->pos[k].z;
            if (MODE == BN_PP_SOFT)
                bn_pp_soft_f(dx, dy, dz, s.w, eps2, &tg->acc[k].x, &tg->acc[k].y, &tg->acc[k].z, &tg->acc[k].w);
            else if (MODE == BN_PP_GUARD)
                bn_pp_f(dx, dy, dz, s.w, eps2, &tg->acc[k].x, &tg->acc[k].y, &tg->acc[k].z, &tg->acc[k].w);
            else if (eps2 + dx * dx + dy * dy + dz * dz == eps2 && s.w == tg->pos[k].w) /* r^2 as bn_pp's */
                tg->same[k] += 1.f;
            else
                bn_pp_soft_f(dx, dy, dz, s.w, eps2, &tg->acc[k].x, &tg->acc[k].y, &tg->acc[k].z, &tg->acc[k].w);
        }
    }
}

/* The same for the cells [head, head + n) of the pc ring (head 0 or 32). */
template <int L, int T>
__device__ __forceinline__ void bn_walk_eval_pc(const bn_walk_smem *sm, int head, int n, int sub, float eps2,
                                                bn_walk_targets<T> *tg)
{
    const float4 *com = sm->pc_com + head, *quad0 = sm->pc_q0 + head;
    const float2 *quad1 = sm->pc_q1 + head;
#pragma unroll(kPcUnroll)
    for (int j = sub; j < n; j += L) {
        const float4 c = com[j], q0 = quad0[j];
        const float2 q1 = quad1[j];
        const float q[6] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y};
#pragma unroll
        for (int k = 0; k < T; k++)
            bn_pc_f(c.x - tg->pos[k].x, c.y - tg->pos[k].y, c.z - tg->pos[k].z, c.w, q, eps2, &tg->acc[k].x,
                    &tg->acc[k].y, &tg->acc[k].z, &tg->acc[k].w);
    }
}

/* Warp-uniform dispatch on the lanes per target pair. */
template <int MODE, int T>
__device__ __forceinline__ void bn_walk_flush_pp_l(const bn_walk_smem *sm, int head, int n, int L, int sub,
                                                   float eps2, bn_walk_targets<T> *tg)
{
    switch (L) {
    case 1: bn_walk_eval_pp<1, MODE>(sm->pp + head, n, sub, eps2, tg); break;
    case 2: bn_walk_eval_pp<2, MODE>(sm->pp + head, n, sub, eps2, tg); break;
    case 4: bn_walk_eval_pp<4, MODE>(sm->pp + head, n, sub, eps2, tg); break;
    case 8: bn_walk_eval_pp<8, MODE>(sm->pp + head, n, sub, eps2, tg); break;
    default: bn_walk_eval_pp<16, MODE>(sm->pp + head, n, sub, eps2, tg); break;
    }
}

/* EXACT: the BN_PP_EXACT launch; else BN_PP_SOFT or BN_PP_GUARD by eps.
 * A template parameter down to here, so that only the second launch's
 * kernel holds the BN_PP_EXACT loops (a runtime mode put them beside the
 * others and cost the main kernel 172 bytes of register spills). */
template <bool EXACT, int T>
__device__ __forceinline__ void bn_walk_flush_pp(const bn_walk_args &a, const bn_walk_smem *sm, int head, int n,
                                                 int L, int sub, bn_walk_targets<T> *tg)
{
    if (EXACT)
        bn_walk_flush_pp_l<BN_PP_EXACT>(sm, head, n, L, sub, a.eps2, tg);
    else if (a.soft)
        bn_walk_flush_pp_l<BN_PP_SOFT>(sm, head, n, L, sub, a.eps2, tg);
    else
        bn_walk_flush_pp_l<BN_PP_GUARD>(sm, head, n, L, sub, a.eps2, tg);
}

template <int T>
__device__ __forceinline__ void bn_walk_flush_pc(const bn_walk_smem *sm, int head, int n, int L, int sub,
                                                 float eps2, bn_walk_targets<T> *tg)
{
    switch (L) {
    case 1: bn_walk_eval_pc<1>(sm, head, n, sub, eps2, tg); break;
    case 2: bn_walk_eval_pc<2>(sm, head, n, sub, eps2, tg); break;
    case 4: bn_walk_eval_pc<4>(sm, head, n, sub, eps2, tg); break;
    case 8: bn_walk_eval_pc<8>(sm, head, n, sub, eps2, tg); break;
    default: bn_walk_eval_pc<16>(sm, head, n, sub, eps2, tg); break;
    }
}

__device__ __forceinline__ int bn_warp_inclusive_scan(int v, int lane)
{
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const int u = __shfl_up_sync(BN_FULL, v, off);
        if (lane >= off) v += u;
    }
    return v;
}

/* State of one warp's walk of one target chunk. */
struct bn_walk_state {
    int pp_head, pp_n, pc_head, pc_n; /* ring buffers                     */
    int far_head, far_n;
    float far_r2;                     /* far cells: |com - centre|^2 above */
    bool far_done;                    /* an earlier chunk of the group made
                                         the expansion: far cells skipped */
    int n_pp, n_pc, n_far;            /* sources evaluated (per target),
                                         far cells (per chunk: below the
                                         sources' count, an int; 32 bits
                                         spare the received walk's
                                         registers)                       */
    bool overflow;                    /* REMOTE: the stack would have
                                         overflowed (nothing written)     */
};

/* The expansion of far cell number j of the ring about the group centre. */
__device__ __forceinline__ void bn_walk_far_term(const bn_walk_args &a, const bn_walk_smem *sm, int j, float4 gc,
                                                 bn_local_f *t)
{
    const int cell = sm->far[j & (BN_WALK_RING - 1)];
    const float4 c = a.s.com[cell];
    const float3 d = bn_gpu_in_frame(c, a.s.com_lo[cell], gc);
    float4 q0 = make_float4(0.f, 0.f, 0.f, 0.f), q1 = q0;
    if (a.quadrupole) {
        q0 = a.s.quad0[cell];
        q1 = a.s.quad1[cell];
    }
    bn_local_set_f(d.x, d.y, d.z, c.w, q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, a.eps2, t);
}

/* Far cells [head, head + n) of the ring join this lane's part of the
 * group's expansion, one cell per lane. */
__device__ void bn_walk_flush_far(const bn_walk_args &a, bn_walk_smem *sm, int head, int n, float4 gc, int lane)
{
    if (lane < n) {
        bn_local_f t;
        bn_walk_far_term(a, sm, head + lane, gc, &t);
        float v[BN_LOCAL_TERMS];
        int k = 0;
#define BN_WALK_TERM(f) v[k++] = t.f;
        BN_LOCAL_FIELDS(BN_WALK_TERM)
#undef BN_WALK_TERM
        /* a lane's 20 terms are 5 float4 of its own: conflict-free 16-byte
         * accesses (lanes 80 bytes apart), 10 instead of 40 */
#pragma unroll
        for (int q = 0; q < BN_LOCAL_TERMS / 4; q++) {
            float4 u = sm->local[lane][q];
            u.x += v[4 * q];
            u.y += v[4 * q + 1];
            u.z += v[4 * q + 2];
            u.w += v[4 * q + 3];
            sm->local[lane][q] = u;
        }
    }
    __syncwarp();
}

/* The group's expansion: the lanes' parts summed in a fixed order (lane
 * k < BN_LOCAL_TERMS sums term k into its slot 0), unless an earlier
 * chunk of the group did so already; then read by every lane. */
__device__ bn_local_f bn_walk_local_total(bn_walk_smem *sm, int lane, bool summed)
{
    float *terms = &sm->local[0][0].x; /* lane j's term k: terms[j * 20 + k] */
    if (!summed && lane < BN_LOCAL_TERMS) {
        float s = 0.f;
        for (int j = 0; j < 32; j++) s += terms[j * BN_LOCAL_TERMS + lane];
        terms[lane] = s; /* lane 0's slot of term k: only lane k reads it */
    }
    __syncwarp();
    bn_local_f L;
    int k = 0;
#define BN_WALK_LOAD_TERM(f) L.f = terms[k++];
    BN_LOCAL_FIELDS(BN_WALK_LOAD_TERM)
#undef BN_WALK_LOAD_TERM
    __syncwarp(); /* read before the next group clears the terms */
    return L;
}

/* m more sources were written after the pp ring's last ones: evaluate a
 * tile of 32 if one is complete (m <= 32 keeps the ring from overflowing). */
template <bool EXACT, int T>
__device__ __forceinline__ void bn_walk_pp_commit(const bn_walk_args &a, bn_walk_smem *sm, bn_walk_state *st, int m,
                                                  int L, int sub, bn_walk_targets<T> *tg)
{
    st->pp_n += m;
    __syncwarp();
    if (st->pp_n >= 32) {
        bn_walk_flush_pp<EXACT>(a, sm, st->pp_head, 32, L, sub, tg);
        st->pp_head = (st->pp_head + 32) & (BN_WALK_RING - 1);
        st->pp_n -= 32;
        st->n_pp += 32;
        __syncwarp(); /* the tile is read before lanes overwrite it */
    }
}

/* Append to the pp ring the bodies of every lane's opened leaf (lane j:
 * bodies [first, first + count), count 0 for none), in lane order, 32
 * at a time however they fall into leaves, evaluating a tile of 32
 * whenever one is complete. Lane k fetches body number base + k of the
 * concatenation: its leaf is the first lane whose running total exceeds
 * that number (a binary search over the lanes' inclusive sums). One
 * round per 32 bodies, where a round per leaf left most lanes idle
 * (leaves hold 32 bodies at most, most far fewer): 3% off the walk at
 * 2^24 (session 12, run 8). The ring holds the same sources in the same
 * order as a round per leaf would give, so the forces keep every bit. */
template <bool EXACT, int T>
__device__ void bn_walk_add_leaves(const bn_walk_args &a, bn_walk_smem *sm, bn_walk_state *st, int first, int count,
                                   float4 gc, int lane, int L, int sub, bn_walk_targets<T> *tg)
{
    const int incl = bn_warp_inclusive_scan(count, lane);
    const int total = __shfl_sync(BN_FULL, incl, 31);
    const int start = first - (incl - count); /* body number k of this lane's leaf: start + k */
    for (int base = 0; base < total; base += 32) {
        const int k = base + lane;
        int j = 0; /* lanes whose leaves end at or before body number k */
#pragma unroll
        for (int step = 16; step > 0; step >>= 1)
            if (__shfl_sync(BN_FULL, incl, j + step - 1) <= k) j += step;
        const int from = __shfl_sync(BN_FULL, start, j);
        const int m = min(32, total - base);
        if (lane < m) {
            const float4 b = a.s.pos[from + k];
            const float3 d = bn_gpu_in_frame(b, a.s.pos_lo[from + k], gc);
            sm->pp[(st->pp_head + st->pp_n + lane) & (BN_WALK_RING - 1)] = make_float4(d.x, d.y, d.z, b.w);
        }
        bn_walk_pp_commit<EXACT>(a, sm, st, m, L, sub, tg);
    }
}

/* One step of the walk: pop up to 32 cells, test them, route each to the
 * stack (opened node), the pp list (opened leaf) or the pc list. */
template <bool EXACT, bool REMOTE, int CAP, int T>
__device__ void bn_walk_step(const bn_walk_args &a, bn_walk_smem *sm, int *stack, int *size, bn_walk_state *st, float4 gc,
                             float4 gh, int lane, int L, int sub, bn_walk_targets<T> *tg)
{
    const int k = min(32, *size);
    const int base = *size - k;
    const bool valid = lane < k;
    const int cell = valid ? stack[base + lane] : 0;
    __syncwarp(); /* popped before the pushes below overwrite the slots */

    bool open = false;
    float4 com = make_float4(0.f, 0.f, 0.f, 0.f), q1 = com, q0 = com;
    int2 child = make_int2(-1, 0), nb = make_int2(0, 0);
    if (valid) {
        /* everything the cell may need, loaded at once: what an accepted
         * cell (q0) or an opened leaf (nb) needs would otherwise be a
         * second round trip to memory after the test */
        com = a.s.com[cell];
        const float4 lo = a.s.com_lo[cell];
        q1 = a.s.quad1[cell];
        child = a.s.child[cell];
        if (a.quadrupole) q0 = a.s.quad0[cell];
        if (child.y == 0) nb = a.s.body[cell];
        const float3 d = bn_gpu_in_frame(com, lo, gc); /* the group's frame */
        com = make_float4(d.x, d.y, d.z, com.w);
        const float d2 = bn_box_dist2_f(com.x, com.y, com.z, -gh.x, -gh.y, -gh.z, gh.x, gh.y, gh.z);
        open = a.accel_mac ? bn_mac_accel_open_f(d2, q1.z, q1.w, gh.w) : bn_mac_geometric_open_f(d2, q1.z);
        open = open || (!REMOTE && cell == 0); /* the own root holds the group itself */
    }

    /* opened nodes: push children while they fit */
    const int nc = open && child.y > 0 ? child.y : 0;
    const int incl = bn_warp_inclusive_scan(nc, lane);
    const bool push = nc > 0 && base + incl <= CAP;
    if (push)
        for (int c = 0; c < nc; c++) stack[base + incl - nc + c] = child.x + c;
    *size = base + __reduce_max_sync(BN_FULL, push ? incl : 0);

    /* accepted cells far from the group: the far ring */
    const bool far = valid && !open && com.x * com.x + com.y * com.y + com.z * com.z > st->far_r2;
    const unsigned far_mask = st->far_done ? 0u : __ballot_sync(BN_FULL, far);
    if (far && !st->far_done)
        sm->far[(st->far_head + st->far_n + __popc(far_mask & ((1u << lane) - 1u))) & (BN_WALK_RING - 1)] =
            cell;
    st->far_n += __popc(far_mask);
    __syncwarp();
    if (st->far_n >= 32) {
        bn_walk_flush_far(a, sm, st->far_head, 32, gc, lane);
        st->far_head = (st->far_head + 32) & (BN_WALK_RING - 1);
        st->far_n -= 32;
        st->n_far += 32;
    }

    /* the other accepted cells: the pc ring */
    const bool acc = valid && !open && !far;
    const unsigned acc_mask = __ballot_sync(BN_FULL, acc);
    if (acc) {
        const int e = (st->pc_head + st->pc_n + __popc(acc_mask & ((1u << lane) - 1u))) & (BN_WALK_RING - 1);
        sm->pc_com[e] = com;
        sm->pc_q0[e] = q0;
        sm->pc_q1[e] = a.quadrupole ? make_float2(q1.x, q1.y) : make_float2(0.f, 0.f);
    }
    st->pc_n += __popc(acc_mask);
    __syncwarp();
    if (st->pc_n >= 32) {
        bn_walk_flush_pc(sm, st->pc_head, 32, L, sub, a.eps2, tg);
        st->pc_head = (st->pc_head + 32) & (BN_WALK_RING - 1);
        st->pc_n -= 32;
        st->n_pc += 32;
        __syncwarp();
    }

    /* opened leaves (and nodes whose children did not fit): their bodies */
    const bool leaf = open && !push;
    if (REMOTE && __any_sync(BN_FULL, leaf && child.y > 0)) { /* a received node has no bodies: walk it again */
        st->overflow = true;                                       /* by chunks (the queue, then the deep pass) */
        *size = 0;
        return;
    }
    if (leaf && child.y > 0) nb = a.s.body[cell]; /* a node (rare) */
    if (!REMOTE) { /* counted: a walk whose group box opens most of the tree does this often (its bodies are many) */
        const unsigned spill = __ballot_sync(BN_FULL, leaf && child.y > 0);
        if (spill && lane == 0) atomicAdd(&a.counts[5], (unsigned long long)__popc(spill));
    }
    if (__any_sync(BN_FULL, leaf)) bn_walk_add_leaves<EXACT>(a, sm, st, nb.x, leaf ? nb.y : 0, gc, lane, L, sub, tg);
}

/* A box's bounds (walk_gpu.h's bn_gpu_box_far): its groups' boxes'
 * union, the half sizes rounded up so that it holds each of them; w:
 * the groups' smallest and largest alpha |a_old| / G (accel MAC). */
__device__ void bn_walk_box_bounds(const bn_gpu_tree &t, int g0, int k, int lane, float4 *bc, float4 *bh, float *wmin,
                                   float *wmax)
{
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    float w0 = INFINITY, w1 = -INFINITY;
    const int ng = bn_gpu_tree_groups(&t);
    if (lane < k && g0 + lane < ng) { /* rounded outwards: the box holds every group's */
        const float4 c = t.group_box[g0 + lane], h = t.group_half[g0 + lane];
        lo[0] = __fsub_rd(c.x, h.x), lo[1] = __fsub_rd(c.y, h.y), lo[2] = __fsub_rd(c.z, h.z);
        hi[0] = __fadd_ru(c.x, h.x), hi[1] = __fadd_ru(c.y, h.y), hi[2] = __fadd_ru(c.z, h.z);
        w0 = w1 = h.w;
    }
    for (int off = 16; off > 0; off >>= 1) {
        for (int d = 0; d < 3; d++) {
            lo[d] = fminf(lo[d], __shfl_xor_sync(BN_FULL, lo[d], off));
            hi[d] = fmaxf(hi[d], __shfl_xor_sync(BN_FULL, hi[d], off));
        }
        w0 = fminf(w0, __shfl_xor_sync(BN_FULL, w0, off));
        w1 = fmaxf(w1, __shfl_xor_sync(BN_FULL, w1, off));
    }
    float c[3], h[3];
    for (int d = 0; d < 3; d++) { /* and padded by 2 ulp of the coordinates (a cell's offset from the box's
                                     centre rounds otherwise than from a group's) */
        c[d] = 0.5f * (lo[d] + hi[d]);
        h[d] = __fadd_ru(fmaxf(__fsub_ru(hi[d], c[d]), __fsub_ru(c[d], lo[d])),
                         2.5e-7f * fmaxf(fabsf(lo[d]), fabsf(hi[d])));
    }
    *bc = make_float4(c[0], c[1], c[2], 0.f);
    *bh = make_float4(h[0], h[1], h[2], 0.f);
    *wmin = w0;
    *wmax = w1;
}

/* The MAC's opening test at squared distance d2 (w: alpha |a_old| / G). */
__device__ __forceinline__ bool bn_walk_opens_at(const bn_walk_args &a, float d2, float4 q1, float w)
{
    return a.accel_mac ? bn_mac_accel_open_f(d2, q1.z, q1.w, w) : bn_mac_geometric_open_f(d2, q1.z);
}

/* One warp per box (walk_gpu.h's bn_gpu_box_far): its far cells into
 * its expansion, the nodes all of its groups open opened, every other
 * cell to its frontier. A cell is accepted by every group when the MAC
 * accepts it at the box's nearest point (and the smallest alpha |a|),
 * opened by every group when it opens at the box's farthest point (and
 * the largest). */
__global__ void __launch_bounds__(BN_WALK_WARPS * 32) bn_walk_box_kernel(bn_walk_args a, bn_gpu_box_far o)
{
    __shared__ bn_walk_smem smem[BN_WALK_WARPS];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int b = blockIdx.x * BN_WALK_WARPS + w;
    if (b >= o.n_boxes) return; /* whole warps */
    if (b * o.groups_per_box >= bn_gpu_tree_groups(&a.t)) { /* past the groups (n_boxes is from a bound) */
        if (lane == 0) o.count[b] = 0;
        return;
    }
    bn_walk_smem *sm = &smem[w];
    int *stack = sm->stack, *front = o.front + (size_t)b * o.cap;
    float4 bc, bh;
    float wmin, wmax;
    bn_walk_box_bounds(a.t, b * o.groups_per_box, o.groups_per_box, lane, &bc, &bh, &wmin, &wmax);
    const int g = b * o.groups_per_box + lane; /* the box's bodies, whose costs share its walk's */
    const int bodies = __reduce_add_sync(
        BN_FULL, lane < o.groups_per_box && g < bn_gpu_tree_groups(&a.t) ? a.t.group_body[g].y : 0);
    const float far_r2 = (bh.x * bh.x + bh.y * bh.y + bh.z * bh.z) / ((float)(BN_WALK_BOX_RATIO * BN_WALK_BOX_RATIO) * a.far_kt2);
#pragma unroll
    for (int q = 0; q < BN_LOCAL_TERMS / 4; q++) sm->local[lane][q] = make_float4(0.f, 0.f, 0.f, 0.f);
    int size = 1, far_head = 0, far_n = 0, n_front = 0;
    long long visits = 0, n_far = 0;
    if (lane == 0) stack[0] = 0;
    __syncwarp();
    while (size > 0 && n_front <= o.cap) {
        const int k = min(32, size), base = size - k;
        visits += k;
        const bool valid = lane < k;
        const int cell = valid ? stack[base + lane] : 0;
        __syncwarp(); /* popped before the pushes below overwrite the slots */
        bool far = false, open_all = false;
        int2 child = make_int2(-1, 0);
        if (valid) {
            const float4 com = a.s.com[cell], q1 = a.s.quad1[cell];
            child = a.s.child[cell];
            const float3 d = bn_gpu_in_frame(com, a.s.com_lo[cell], bc);
            const float near2 = bn_box_dist2_f(d.x, d.y, d.z, -bh.x, -bh.y, -bh.z, bh.x, bh.y, bh.z);
            /* margins of a few ulp: the groups test the cell from their own centres, rounded otherwise */
            const bool accepted = !bn_walk_opens_at(a, near2 * (1.f - 1e-6f), q1, wmin);
            far = accepted && d.x * d.x + d.y * d.y + d.z * d.z > far_r2;
            const float ex = fabsf(d.x) + bh.x, ey = fabsf(d.y) + bh.y, ez = fabsf(d.z) + bh.z;
            open_all = !accepted && bn_walk_opens_at(a, (ex * ex + ey * ey + ez * ez) * (1.f + 1e-6f), q1, wmax);
        }
        const int nc = open_all && child.y > 0 ? child.y : 0;
        const int incl = bn_warp_inclusive_scan(nc, lane);
        const bool push = nc > 0 && base + incl <= BN_WALK_STACK;
        if (push)
            for (int c = 0; c < nc; c++) stack[base + incl - nc + c] = child.x + c;
        size = base + __reduce_max_sync(BN_FULL, push ? incl : 0);

        const unsigned far_mask = __ballot_sync(BN_FULL, far);
        if (far) sm->far[(far_head + far_n + __popc(far_mask & ((1u << lane) - 1u))) & (BN_WALK_RING - 1)] = cell;
        far_n += __popc(far_mask);
        __syncwarp();
        if (far_n >= 32) {
            bn_walk_flush_far(a, sm, far_head, 32, bc, lane);
            far_head = (far_head + 32) & (BN_WALK_RING - 1);
            far_n -= 32;
            n_far += 32;
        }

        const bool to_front = valid && !far && !push;
        const unsigned front_mask = __ballot_sync(BN_FULL, to_front);
        const int at = n_front + __popc(front_mask & ((1u << lane) - 1u));
        if (to_front && at < o.cap) front[at] = cell;
        n_front += __popc(front_mask);
    }
    bn_walk_flush_far(a, sm, far_head, far_n, bc, lane);
    n_far += far_n;
    const bn_local_f L = bn_walk_local_total(sm, lane, false);
    if (lane == 0) {
        float v[BN_LOCAL_TERMS];
        int j = 0;
#define BN_WALK_BOX_STORE(f) v[j++] = L.f;
        BN_LOCAL_FIELDS(BN_WALK_BOX_STORE)
#undef BN_WALK_BOX_STORE
        for (int q = 0; q < BN_LOCAL_TERMS / 4; q++)
            o.local[(BN_LOCAL_TERMS / 4) * (size_t)b + q] = make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
        o.center[b] = bc;
        const bool kept = n_front <= o.cap; /* else its groups walk from the root: its far cells count for nothing */
        o.count[b] = kept ? n_front : -1;
        if (kept && n_far) atomicAdd(&a.counts[2], (unsigned long long)n_far);
        atomicAdd(&a.counts[4], (unsigned long long)visits);
        if (o.share)
            o.share[b] = kept && bodies > 0 ? (BN_FLOPS_FAR * (float)n_far + a.act.cost_visit * (float)visits) / (float)bodies
                                            : 0.f;
    }
}

/* The box's expansion (bn_gpu_box_far) at this lane's targets, in the
 * lanes of sub 0 only (the butterfly then adds it once): their positions
 * moved from the group's centre to the box's. */
template <int T>
__device__ __forceinline__ void bn_walk_add_box(const bn_walk_args &a, int box, float4 gc, int sub, int nt,
                                                const int *tid, bn_walk_targets<T> *tg)
{
    if (sub != 0) return;
    const float4 *q = a.box.local + (BN_LOCAL_TERMS / 4) * (size_t)box;
    float v[BN_LOCAL_TERMS];
#pragma unroll
    for (int k = 0; k < BN_LOCAL_TERMS / 4; k++) {
        const float4 u = q[k];
        v[4 * k] = u.x, v[4 * k + 1] = u.y, v[4 * k + 2] = u.z, v[4 * k + 3] = u.w;
    }
    bn_local_f L;
    int j = 0;
#define BN_WALK_BOX_TERM(f) L.f = v[j++];
    BN_LOCAL_FIELDS(BN_WALK_BOX_TERM)
#undef BN_WALK_BOX_TERM
    const float4 bc = a.box.center[box];
    const float ox = gc.x - bc.x, oy = gc.y - bc.y, oz = gc.z - bc.z;
#pragma unroll
    for (int k = 0; k < T; k++)
        if (tid[k] < nt)
            bn_local_eval_f(&L, tg->pos[k].x + ox, tg->pos[k].y + oy, tg->pos[k].z + oz, &tg->acc[k].x, &tg->acc[k].y,
                            &tg->acc[k].z, &tg->acc[k].w);
}

/* Lanes per target set (T targets a lane): the most lanes a set may
 * share whose slots (32 / L sets of T) still hold nt. */
template <int T>
__device__ __forceinline__ int bn_walk_lanes_per_pair(int nt)
{
    int L = 1;
    while (L < 16 && T * 32 / (2 * L) >= nt) L <<= 1;
    return L;
}

/* Walk the tree for targets [first, first + nt) of a group and write
 * their forces. Every chunk of a group meets the same cells (the MAC
 * tests the group's box), so the first chunk builds the far-field
 * expansion and the later ones (far_done) reuse it. A BN_PP_SOFT walk
 * that finds a potential the self pair's subtraction leaves imprecise
 * marks the chunk (its potentials NaN) for the BN_PP_EXACT pass. */
template <bool EXACT, bool COST, bool REMOTE, int CAP, int T>
__device__ bool bn_walk_chunk(const bn_walk_args &a, bn_walk_smem *sm, int *stack, int first, int nt, float4 gc, float4 gh,
                              int lane, bool far_done, int box, unsigned long long cnt[4], bool count_far = true,
                              bool budgeted = false)
{
    const int L = bn_walk_lanes_per_pair<T>(nt);
    const int slots = 32 / L, slot = lane & (slots - 1), sub = lane / slots;
    bn_walk_targets<T> tg;
    int tid[T];
#pragma unroll
    for (int k = 0; k < T; k++) {
        tid[k] = slot + k * slots;
        const bool t = tid[k] < nt;
        const float4 b = t ? a.t.body[first + tid[k]] : gc;
        const float3 d = bn_gpu_in_frame(b, t ? a.t.body_lo[first + tid[k]] : make_float4(0.f, 0.f, 0.f, 0.f), gc);
        tg.pos[k] = make_float4(d.x, d.y, d.z, b.w);
        tg.acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
        tg.same[k] = 0.f;
    }

    bn_walk_state st = {0, 0, 0, 0, 0, 0, INFINITY, far_done, 0, 0, 0, false};
    if (a.far_kt2 > 0.f) st.far_r2 = (gh.x * gh.x + gh.y * gh.y + gh.z * gh.z) / a.far_kt2;
    if (!far_done)
#pragma unroll
        for (int q = 0; q < BN_LOCAL_TERMS / 4; q++) sm->local[lane][q] = make_float4(0.f, 0.f, 0.f, 0.f);
    /* from the root, or (box >= 0) from the box's frontier, fed to the
     * stack 32 cells at a time whenever it holds fewer than 32 */
    const int n_front = REMOTE && box >= 0 ? a.box.count[box] : 0;
    const int *front = REMOTE && box >= 0 ? a.box.front + (size_t)box * a.box.cap : NULL;
    int size = REMOTE && box >= 0 ? 0 : 1;
    if (size && lane == 0) stack[0] = 0;
    __syncwarp();
    int visits = 0; /* cells the traversal took (the counters; COST: the costs), fewer than the cells */
    for (int fed = 0; size > 0 || fed < n_front;) {
        if (REMOTE && fed < n_front && size < 32) {
            const int m = min(32, n_front - fed);
            if (lane < m) stack[size + lane] = front[fed + lane];
            __syncwarp();
            size += m;
            fed += m;
        }
        visits += min(32, size);
        bn_walk_step<EXACT, REMOTE, CAP>(a, sm, stack, &size, &st, gc, gh, lane, L, sub, &tg);
        if (REMOTE && st.overflow) break;
        /* a straggler: every chunk of the group takes the same decisions,
         * so the first one stops here or none does (warp-uniform) */
        if (REMOTE && budgeted && a.budget > 0 && (long long)visits + st.n_pp > a.budget) {
            st.overflow = true;
            break;
        }
    }
    if (REMOTE && st.overflow) return false; /* warp-uniform: the group is walked again */
    /* what is left in the lists */
    bn_walk_flush_pp<EXACT>(a, sm, st.pp_head, st.pp_n, L, sub, &tg);
    bn_walk_flush_pc(sm, st.pc_head, st.pc_n, L, sub, a.eps2, &tg);
    bn_walk_flush_far(a, sm, st.far_head, st.far_n, gc, lane);
    st.n_pp += st.pp_n;
    st.n_pc += st.pc_n;
    st.n_far += st.far_n;
    __syncwarp();
    if (REMOTE && box >= 0) bn_walk_add_box(a, box, gc, sub, nt, tid, &tg);
    const bn_local_f far = bn_walk_local_total(sm, lane, far_done);
    const int bin_min = a.act.bin ? *a.act.bin_min : 0;

    float4 out[T];
    bool writes[T], imprecise = false;
#pragma unroll
    for (int k = 0; k < T; k++) {
        float4 v = tg.acc[k];
        float same = tg.same[k];
        for (int off = slots; off < 32; off <<= 1) { /* fixed butterfly: same sum in every lane */
            v.x += __shfl_xor_sync(BN_FULL, v.x, off);
            v.y += __shfl_xor_sync(BN_FULL, v.y, off);
            v.z += __shfl_xor_sync(BN_FULL, v.z, off);
            v.w += __shfl_xor_sync(BN_FULL, v.w, off);
            if (EXACT) same += __shfl_xor_sync(BN_FULL, same, off);
        }
        writes[k] = sub == 0 && tid[k] < nt && (!a.act.bin || a.act.bin[first + tid[k]] >= bin_min);
        if (writes[k]) {
            bn_local_eval_f(&far, tg.pos[k].x, tg.pos[k].y, tg.pos[k].z, &v.x, &v.y, &v.z, &v.w);
            /* the self pair gave -m/eps exactly (r^2 = eps^2): BN_PP_SOFT
             * takes it back; BN_PP_EXACT left it out, and its twins too,
             * which it adds back */
            const float self = a.eps2 > 0.f ? __fmul_rn(tg.pos[k].w, BN_RSQRT_F(a.eps2)) : 0.f;
            if (REMOTE) { /* another rank's bodies: no self pair among them */
            } else if (EXACT) {
                v.w -= (same - 1.f) * self;
            } else {
                v.w += self;
                imprecise = imprecise || self > kExactSelf * fabsf(v.w);
            }
        }
        out[k] = v;
    }
    const bool mark = __any_sync(BN_FULL, imprecise);
    if (mark && lane == 0) atomicAdd(a.marked, 1);
#pragma unroll
    for (int k = 0; k < T; k++) {
        if (!writes[k]) continue;
        float4 o = make_float4(a.acc_unit * out[k].x, a.acc_unit * out[k].y, a.acc_unit * out[k].z,
                               mark ? NAN : a.pot_unit * out[k].w);
        if (REMOTE) { /* added to the forces of the trees walked before */
            const float4 before = a.out[first + tid[k]];
            o = make_float4(before.x + o.x, before.y + o.y, before.z + o.z, before.w + o.w);
        }
        a.out[first + tid[k]] = o;
    }
    cnt[0] += (unsigned long long)st.n_pp * (unsigned long long)nt;
    cnt[1] += (unsigned long long)st.n_pc * (unsigned long long)nt;
    if (count_far) cnt[2] += (unsigned long long)st.n_far; /* a split group's far cells counted once */
    cnt[3] += (unsigned long long)visits;
    if (COST)
#pragma unroll
        for (int k = 0; k < T; k++)
            if (sub == 0 && tid[k] < nt) {
                bn_gpu_charge(a.act, first + tid[k], st.n_pp, st.n_pc, st.n_far, visits, nt,
                              st.n_far > 0 || far_done || (REMOTE && box >= 0));
                if (REMOTE && box >= 0) a.act.cost[a.act.orig[first + tid[k]]] += a.box.share[box]; /* its box's walk */
            }
    return true;
}

/* The box of a chunk of nt <= 32 of a group's bodies from `first` (a
 * body a lane): its centre a float between the bodies' extremes, its
 * half sides the largest |body - centre| as the walk computes it
 * (bn_gpu_in_frame), so the box holds every body in the walk's own
 * arithmetic; w the group's (the accel criterion's alpha min |a_old| /
 * G). In floats: it is made inside the received walk's kernel, whose
 * registers are at their bound. */
__device__ void bn_walk_chunk_box(const bn_gpu_tree &t, int first, int nt, float4 gh, int lane, float4 *cc, float4 *ch)
{
    const bool in = lane < nt;
    const float4 p = t.body[first + (in ? lane : 0)], q = in ? t.body_lo[first + lane] : make_float4(0.f, 0.f, 0.f, 0.f);
    float lo[3] = {p.x, p.y, p.z}, hi[3] = {p.x, p.y, p.z}; /* lanes past nt repeat the first body */
    for (int off = 16; off > 0; off /= 2)
        for (int k = 0; k < 3; k++) {
            lo[k] = fminf(lo[k], __shfl_xor_sync(BN_FULL, lo[k], off));
            hi[k] = fmaxf(hi[k], __shfl_xor_sync(BN_FULL, hi[k], off));
        }
    const float4 c = make_float4(0.5f * lo[0] + 0.5f * hi[0], 0.5f * lo[1] + 0.5f * hi[1], 0.5f * lo[2] + 0.5f * hi[2], 0.f);
    const float3 d = bn_gpu_in_frame(p, q, c);
    float h[3] = {fabsf(d.x), fabsf(d.y), fabsf(d.z)};
    for (int off = 16; off > 0; off /= 2)
        for (int k = 0; k < 3; k++) h[k] = fmaxf(h[k], __shfl_xor_sync(BN_FULL, h[k], off));
    *cc = c;
    *ch = make_float4(h[0], h[1], h[2], gh.w);
}

/* REMOTE: the group's box of groups, where it has a frontier, else -1. */
__device__ __forceinline__ int bn_walk_box_of(const bn_walk_args &a, int group)
{
    if (a.box.n_boxes <= 0) return -1;
    const int b = group / a.box.groups_per_box;
    return a.box.count[b] >= 0 ? b : -1;
}

/* A group's chunks of 32 handed to the queue (lane 0): a slot each,
 * claimed by one atomic, then written (a 64-bit store; ~0 until then). */
__device__ void bn_walk_queue_push(const bn_walk_args &a, int group, int bodies)
{
    const int k = (bodies + 31) / 32;
    const int base = atomicAdd(&a.queue.counts[0], k);
    for (int j = 0; j < k; j++)
        atomicExch(&a.queue.items[base + j], (unsigned long long)group << 32 | (unsigned)(32 * j));
}

/* The next chunk from the queue for this warp, or ~0: a slot below the
 * pushed count claimed by compare-and-swap (never past it, so the deep
 * pass knows the rest: [taken, pushed)), then waited for until written
 * (its writer is running). Warp-uniform. */
__device__ unsigned long long bn_walk_queue_take(const bn_walk_args &a, int lane)
{
    unsigned long long item = ~0ull;
    if (lane == 0) {
        volatile int *count = a.queue.counts;
        for (;;) {
            const int t = count[1];
            if (t >= count[0]) break;
            if (atomicCAS(&a.queue.counts[1], t, t + 1) != t) continue;
            volatile unsigned long long *slot = a.queue.items + t;
            do item = *slot;
            while (item == ~0ull);
            break;
        }
    }
    return __shfl_sync(BN_FULL, item, 0);
}

/* One chunk of a group (item: group << 32 | its first body in it), with
 * its own box, on a stack of CAP cells: false if it would overflow
 * (nothing written). */
template <bool COST, int CAP, int T>
__device__ bool bn_walk_queued_chunk(const bn_walk_args &a, bn_walk_smem *sm, int *stack, unsigned long long item,
                                     int lane, unsigned long long cnt[4], int *first, int *nt, float4 *cc, float4 *ch)
{
    const int group = (int)(item >> 32), c = (int)(item & 0xffffffffu);
    const int2 gb = a.t.group_body[group];
    *first = gb.x + c;
    *nt = min(32, gb.y - c);
    bn_walk_chunk_box(a.t, *first, *nt, a.t.group_half[group], lane, cc, ch);
    return bn_walk_chunk<false, COST, true, CAP, T>(a, sm, stack, *first, *nt, *cc, *ch, lane, false,
                                                   bn_walk_box_of(a, group), cnt);
}

/* One group: its chunks of at most 32 T targets (BN_WALK_CHUNK locally).
 * REMOTE: a walk that would overflow the stack or outrun the budget does
 * so in the first chunk or in none (every chunk takes the same decisions,
 * on the group's box); the group's chunks then go to the queue, nothing
 * written. Or (item not ~0) a chunk of 32 from the queue, with its own
 * box and no budget; one that would overflow goes to the deep list. */
template <bool EXACT, bool COST, bool REMOTE, int CAP = BN_WALK_STACK, int T = (REMOTE ? BN_WALK_REMOTE_TARGETS : 2)>
__device__ void bn_walk_group(const bn_walk_args &a, bn_walk_smem *sm, int *stack, int group, int lane,
                              unsigned long long cnt[4], unsigned long long item = ~0ull)
{
    const int2 gb = a.t.group_body[group];
    float4 gc = a.t.group_box[group], gh = a.t.group_half[group];
    static_assert(REMOTE || 32 * T == BN_WALK_CHUNK, "the local walk's chunk");
    const bool queued = REMOTE && item != ~0ull;
    int first = gb.x, count = gb.y;
    if (queued) {
        const int c = (int)(item & 0xffffffffu);
        first += c;
        count = min(32, gb.y - c);
        bn_walk_chunk_box(a.t, first, count, gh, lane, &gc, &gh);
    }
    const int box = REMOTE ? bn_walk_box_of(a, group) : -1;
    for (int c = 0; c < count; c += 32 * T)
        if (!bn_walk_chunk<EXACT, COST, REMOTE, CAP, T>(a, sm, stack, first + c, min(32 * T, count - c), gc, gh, lane,
                                                        c > 0, box, cnt, true, REMOTE && !queued)) {
            if constexpr (REMOTE) {
                if (lane == 0 && queued) a.queue.deep[atomicAdd(&a.queue.counts[2], 1)] = item;
                else if (lane == 0) bn_walk_queue_push(a, group, gb.y);
            }
            return;
        }
}

/* The groups holding a chunk marked by the BN_PP_SOFT walk (a NaN
 * potential), one warp per group, appended to list[0 .. *count): none
 * unless the walk marked one. The BN_PP_EXACT pass walks them again (all
 * their chunks: the later ones need the first one's expansion; the
 * counts then hold both walks). */
__global__ void bn_walk_select_redo(bn_gpu_tree t, const float4 *out, const int *marked, int *list, int *count)
{
    if (*marked == 0) return;
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (g >= bn_gpu_tree_groups(&t)) return; /* whole warps leave together */
    const int2 b = t.group_body[g];
    bool nan = false;
    for (int i = b.x + lane; i < b.x + b.y; i += 32) nan = nan || isnan(out[i].w);
    if (__any_sync(BN_FULL, nan) && lane == 0) list[atomicAdd(count, 1)] = g;
}

/* Groups per warp for `groups` items: most, halved (down to one) while
 * the grid would fill the GPU fewer than BN_WALK_MIN_WAVES times. */
__host__ __device__ inline int bn_walk_per_warp_of(int groups, int resident_blocks, int most)
{
    int per_warp = most;
    while (per_warp > 1 && (double)groups / (BN_WALK_WARPS * per_warp) < (double)BN_WALK_MIN_WAVES * resident_blocks)
        per_warp /= 2;
    return per_warp;
}

/* A warp's counters to the walk's: integer atomics, one per warp and
 * counter (exact, order-independent); the cells visited after the slot
 * counts[3] holds. */
__device__ __forceinline__ void bn_walk_counts_add(const bn_walk_args &a, const unsigned long long cnt[4], int lane)
{
    const unsigned long long c = lane == 0 ? cnt[0] : lane == 1 ? cnt[1] : lane == 2 ? cnt[2] : cnt[3];
    if (lane < 4 && c) atomicAdd(&a.counts[lane < 3 ? lane : 4], c);
}

/* The device's clock in ns (coarse: about a microsecond), for tracing. */
__device__ __forceinline__ unsigned long long bn_walk_clock_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Block b walks the groups (or active-list entries) [b G, (b + 1) G),
 * G = BN_WALK_WARPS x PER_WARP, its warps taking the next one from a
 * shared counter (an integer atomic: which warp walks a group changes
 * nothing in its forces). PER_WARP is a template parameter, so that the
 * kernel of 4 groups per warp is the one measured before the choice was
 * added (a count read from the arguments was only ever timed together
 * with another change, session 12 runs 4-5). */
template <int PER_WARP, bool EXACT, bool COST, bool REMOTE>
__global__ void __launch_bounds__(BN_WALK_WARPS * 32, REMOTE ? BN_WALK_REMOTE_MIN_BLOCKS : BN_WALK_MIN_BLOCKS)
    bn_walk_kernel(bn_walk_args a)
{
    __shared__ bn_walk_smem smem[BN_WALK_WARPS];
    __shared__ int next;
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) next = 0;
    __syncthreads();
    int end = a.act.groups ? *a.act.count : bn_gpu_tree_groups(&a.t);
    if (a.act.live && !*a.act.live) end = 0; /* an idle step: nothing to walk */
    const int per_block = BN_WALK_WARPS * (a.active_per_warp ? bn_walk_per_warp_of(end, a.resident_blocks, PER_WARP)
                                                             : PER_WARP);
    if (blockIdx.x * per_block >= end && !(REMOTE && a.queue.items && a.queue.take))
        return; /* the whole block: beyond the items */
    unsigned long long cnt[4] = {0, 0, 0, 0};
    for (;;) {
        int k = 0;
        if (lane == 0) k = atomicAdd(&next, 1);
        k = __shfl_sync(BN_FULL, k, 0);
        const int item = blockIdx.x * per_block + k;
        /* one call of bn_walk_group for a group and a queued chunk: the
         * received walk's kernel inlined it twice, and spilled 360 bytes
         * of registers where one call spills 250 (ptxas, 2 targets a lane) */
        unsigned long long chunk = ~0ull;
        int group;
        if (k < per_block && item < end) {
            group = a.act.groups ? a.act.groups[item] : REMOTE && a.box.order ? a.box.order[item] : item;
            if (REMOTE && a.box.group_time && lane == 0) a.box.group_time[2 * (size_t)group] = bn_walk_clock_ns();
        } else {
            if constexpr (REMOTE) /* this block's groups walked: the queued chunks, while there are any */
                chunk = a.queue.items && a.queue.take ? bn_walk_queue_take(a, lane) : ~0ull;
            if (chunk == ~0ull) break;
            group = (int)(chunk >> 32);
        }
        bn_walk_group<EXACT, COST, REMOTE>(a, &smem[w], smem[w].stack, group, lane, cnt, chunk);
        if (REMOTE && a.box.group_time && chunk == ~0ull && lane == 0) /* a tracing aid: where the pass's time goes */
            a.box.group_time[2 * (size_t)group + 1] = bn_walk_clock_ns();
    }
    bn_walk_counts_add(a, cnt, lane);
}

/* The kernel with the particles' costs (a.act.cost: several ranks) or
 * without: a template parameter, so that one rank's walk is the kernel
 * measured without them (a runtime test made it 15% slower, session
 * 17). */
template <int PER_WARP, bool EXACT, bool REMOTE = false>
void bn_walk_launch(const bn_walk_args &a, int blocks, cudaStream_t stream)
{
    if (a.act.cost) bn_walk_kernel<PER_WARP, EXACT, true, REMOTE><<<blocks, BN_WALK_WARPS * 32, 0, stream>>>(a);
    else bn_walk_kernel<PER_WARP, EXACT, false, REMOTE><<<blocks, BN_WALK_WARPS * 32, 0, stream>>>(a);
}

extern "C" bn_status bn_gpu_walk_scratch_create(bn_gpu_walk_scratch **out)
{
    *out = NULL;
    bn_gpu_walk_scratch *s = (bn_gpu_walk_scratch *)bn_calloc(1, sizeof *s, "GPU walk scratch");
    if (!s) return BN_ERR_NOMEM;
    *out = s;
    return BN_OK;
}

extern "C" void bn_gpu_walk_scratch_free(bn_gpu_walk_scratch *s)
{
    if (!s) return;
    bn_cuda_free(s->counts, 0);
    bn_cuda_free(s->redo, 0);
    free(s);
}

/* The walk keeps its lists in shared memory; the device only holds the
 * interaction counters and the list of groups to walk again. */
extern "C" size_t bn_gpu_walk_bytes(int n_bodies, int n_groups, int n_nodes)
{
    (void)n_bodies;
    (void)n_nodes;
    return 6 * sizeof(unsigned long long) + (size_t)n_groups * sizeof(int);
}

extern "C" bn_status bn_gpu_walk_counts(bn_gpu_walk_scratch *s, bn_force_stats *stats, cudaStream_t stream)
{
    stats->n_pp = stats->n_pc = stats->n_far = stats->n_visit = 0;
    if (!s->counts) return BN_OK;
    unsigned long long h[6];
    BN_TRY(bn_cuda_read(h, s->counts, sizeof h, "walk counters", stream));
    stats->n_pp = (double)h[0];
    stats->n_pc = (double)h[1];
    stats->n_far = (double)h[2];
    stats->n_visit = (double)h[4];
    if (bn_trace_on()) { /* what the walk did, beside its device time */
        bn_trace_count("local walk: pp", (double)h[0]);
        bn_trace_count("local walk: pc", (double)h[1]);
        bn_trace_count("local walk: far cells", (double)h[2]);
        bn_trace_count("local walk: cells visited", (double)h[4]);
        bn_trace_count("local walk: nodes given as bodies (stack full)", (double)h[5]);
    }
    return BN_OK;
}

/* How many walk blocks the current GPU holds at once: the blocks per SM
 * the kernel is built for (its launch bounds; registers and shared memory
 * allow no more) on every SM. */
static bn_status bn_walk_resident_blocks(int *out)
{
    int dev = 0, sms = 0;
    BN_CUDA_CHECK(cudaGetDevice(&dev));
    BN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    *out = (sms > 0 ? sms : 1) * BN_WALK_MIN_BLOCKS;
    return BN_OK;
}


/* The arguments every walk shares: its targets (t's groups and bodies,
 * act's active ones), units, criterion and output. */
static bn_walk_args bn_walk_args_of(const bn_gpu_tree *t, const bn_gravity_params *g, const bn_gpu_active *act,
                                    float4 *out)
{
    bn_walk_args a;
    memset(&a, 0, sizeof a);
    bn_gpu_walk_common(&a, t, g, act, out);
    return a;
}

/* The main launch over every group (or active one): groups per warp
 * from the grid's size (bn_walk_per_warp_of of the launch bound: the
 * group buffers' capacity, at most an eighth and 64 above the count of
 * the largest build), or with active_per_warp from the active count, on
 * the device. */
template <bool REMOTE>
static bn_status bn_walk_launch_all(const bn_walk_args &a, int resident_blocks, cudaStream_t stream)
{
    if (a.active_per_warp) { /* block steps: the device chooses from the active count; a grid for one a warp */
        bn_walk_launch<BN_WALK_GROUPS_PER_WARP, false, REMOTE>(a, (a.t.group_bound + BN_WALK_WARPS - 1) / BN_WALK_WARPS,
                                                              stream);
        BN_CUDA_LAUNCH_CHECK();
        return BN_OK;
    }
    const int per_warp = bn_walk_per_warp_of(a.t.group_bound, resident_blocks, BN_WALK_GROUPS_PER_WARP);
    const int per_block = BN_WALK_WARPS * per_warp;
    const int blocks = (a.t.group_bound + per_block - 1) / per_block; /* the rest leave at once */
    switch (per_warp) {
    case 4: bn_walk_launch<4, false, REMOTE>(a, blocks, stream); break;
    case 2: bn_walk_launch<2, false, REMOTE>(a, blocks, stream); break;
    default: bn_walk_launch<1, false, REMOTE>(a, blocks, stream); break;
    }
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

/* The main pass's budget a group (bn_walk_args.budget):
 * BANYAN_REMOTE_BUDGET, a tuning aid (0: none), else the default. A
 * group of the received walk's usual cost takes a few hundred (Hernquist,
 * 2^25 a GPU: 110 M cells visited and 53 sources a target over 450 k
 * groups); the straggler of session 33 took 25 ms, 600 times a usual
 * group's time. Which groups outrun it depends on the tree alone: the
 * same bits every run. */
static long long bn_walk_remote_budget(void)
{
    const char *e = getenv("BANYAN_REMOTE_BUDGET"); /* read at each walk: the tests set it */
    char *end = NULL;
    const long long v = e ? strtoll(e, &end, 10) : 0;
    return e && end != e && *end == '\0' && v >= 0 ? v : BN_WALK_REMOTE_BUDGET;
}

/* The arguments of a walk of src's cells for local's groups. */
static bn_walk_args bn_walk_source_args(const bn_gpu_tree *local, const bn_gpu_source *src,
                                        const bn_gravity_params *g, const bn_gpu_active *act,
                                        const bn_gpu_box_far *boxes, float4 *out, unsigned long long *counts,
                                        const bn_gpu_chunk_queue *q)
{
    bn_walk_args a = bn_walk_args_of(local, g, act, out);
    a.s = bn_walk_srcs{src->com, src->com_lo, src->quad0, src->quad1, src->child, src->body, src->pos, src->pos_lo};
    a.counts = counts;
    if (q) a.queue = *q;
    a.budget = bn_walk_remote_budget();
    if (boxes) a.box = *boxes;
    return a;
}


/* Each group's sort key for the received walk's order: octaves of its
 * box's size, the largest 0 (groups past the count, g >= *n: 255). */
__global__ void bn_walk_size_keys(bn_gpu_tree t, int bound, unsigned char *key, int *index)
{
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= bound) return;
    index[g] = g;
    if (g >= bn_gpu_tree_groups(&t)) {
        key[g] = 255;
        return;
    }
    const float4 h = t.group_half[g];
    const float s2 = h.x * h.x + h.y * h.y + h.z * h.z;
    const int octave = s2 > 0.f ? ilogbf(s2) / 2 : -64; /* log2 of the size */
    key[g] = (unsigned char)min(254, max(0, 127 - octave));
}

/* The groups' order for the received walk (bn_gpu_box_far's order):
 * largest first, a stable sort (neighbours of one size stay together). */
static bn_status bn_walk_order_by_size(const bn_gpu_tree *t, int **order, cudaStream_t stream)
{
    *order = NULL;
    const int n = t->group_bound;
    unsigned char *key = NULL, *key_sorted = NULL;
    int *index = NULL, *out = NULL;
    void *tmp = NULL;
    size_t bytes = 0;
    bn_status r = bn_cuda_dev_alloc(&key, 2 * (size_t)n, "received walk's order", stream);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&index, (size_t)n, "received walk's order", stream);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&out, (size_t)n, "received walk's order", stream);
    if (r == BN_OK) {
        key_sorted = key + n;
        bn_walk_size_keys<<<(n + 255) / 256, 256, 0, stream>>>(*t, n, key, index);
        if (cudaGetLastError() != cudaSuccess ||
            cub::DeviceRadixSort::SortPairs(NULL, bytes, key, key_sorted, index, out, n, 0, 8, stream) != cudaSuccess)
            r = bn_fail(BN_ERR_DEVICE, "received walk's order: the sort");
    }
    if (r == BN_OK) r = bn_cuda_dev_alloc((char **)&tmp, bytes, "received walk's order", stream);
    if (r == BN_OK &&
        cub::DeviceRadixSort::SortPairs(tmp, bytes, key, key_sorted, index, out, n, 0, 8, stream) != cudaSuccess)
        r = bn_fail(BN_ERR_DEVICE, "received walk's order: the sort");
    bn_cuda_free(tmp, stream);
    bn_cuda_free(key, stream);
    bn_cuda_free(index, stream);
    if (r != BN_OK) {
        bn_cuda_free(out, stream);
        return r;
    }
    *order = out;
    return BN_OK;
}

extern "C" bn_status bn_gpu_box_far_make(const bn_gpu_tree *local, const bn_gpu_source *src,
                                         const bn_gravity_params *g, const bn_gpu_active *act,
                                         unsigned long long *counts, bn_gpu_box_far *out, cudaStream_t stream)
{
    memset(out, 0, sizeof *out);
    const int k = bn_remote_box_groups();
    bn_walk_args a = bn_walk_source_args(local, src, g, act, NULL, NULL, counts, NULL);
    if (k == 0 || a.far_kt2 <= 0.f || (act && act->groups) || local->group_bound <= 0 || src->n_cells == 0)
        return BN_OK;
    bn_gpu_box_far b;
    memset(&b, 0, sizeof b);
    b.groups_per_box = k;
    b.cap = BN_WALK_BOX_FRONT;
    b.n_boxes = (local->group_bound + k - 1) / k; /* every box writes its count (0 past the groups) */
    const size_t n = (size_t)b.n_boxes;
    bn_status r = bn_cuda_dev_alloc(&b.front, n * (size_t)b.cap, "received trees' boxes", stream);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&b.count, n, "received trees' boxes", stream);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&b.local, n * (BN_LOCAL_TERMS / 4), "received trees' boxes", stream);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&b.center, n, "received trees' boxes", stream);
    if (r == BN_OK && a.act.cost) r = bn_cuda_dev_alloc(&b.share, n, "received trees' boxes", stream);
    const char *order = getenv("BANYAN_REMOTE_ORDER");
    if (r == BN_OK && !(order && !strcmp(order, "key"))) r = bn_walk_order_by_size(local, &b.order, stream);
    if (r != BN_OK) { /* short of memory: every group walks from the root (a way, not the way) */
        bn_gpu_box_far_free(&b, stream);
        (void)cudaGetLastError();
        return BN_OK;
    }
    bn_walk_box_kernel<<<(b.n_boxes + BN_WALK_WARPS - 1) / BN_WALK_WARPS, BN_WALK_WARPS * 32, 0, stream>>>(a, b);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        bn_gpu_box_far_free(&b, stream);
        return bn_cuda_fail(e, "received trees' boxes", __FILE__, __LINE__);
    }
    *out = b;
    return BN_OK;
}

extern "C" void bn_gpu_box_far_free(bn_gpu_box_far *b, cudaStream_t stream)
{
    bn_cuda_free(b->front, stream);
    bn_cuda_free(b->count, stream);
    bn_cuda_free(b->local, stream);
    bn_cuda_free(b->center, stream);
    bn_cuda_free(b->share, stream);
    bn_cuda_free(b->order, stream);
    memset(b, 0, sizeof *b);
}

extern "C" bn_status bn_gpu_walk_sources(const bn_gpu_tree *local, const bn_gpu_source *src,
                                         const bn_gravity_params *g, const bn_gpu_active *act,
                                         const bn_gpu_box_far *boxes, float4 *out, unsigned long long *counts,
                                         const bn_gpu_chunk_queue *q, cudaStream_t stream)
{
    const bn_walk_args a = bn_walk_source_args(local, src, g, act, boxes, out, counts, q);
    int resident = 0;
    BN_TRY(bn_walk_resident_blocks(&resident));
    return bn_walk_launch_all<true>(a, resident, stream);
}

extern "C" bn_status bn_gpu_chunk_queue_make(const bn_gpu_tree *local, bn_gpu_chunk_queue *q, cudaStream_t stream)
{
    memset(q, 0, sizeof *q);
    q->cap = (long long)local->n / 32 + 1 + local->group_bound; /* every group's chunks */
    if (q->cap > INT_MAX) return bn_fail(BN_ERR_ARGUMENT, "the received walk's queue: %lld chunks", q->cap);
    bn_status r = bn_cuda_dev_alloc(&q->items, 2 * (size_t)q->cap, "the received walk's chunk queue", stream);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&q->counts, 3, "the received walk's chunk queue", stream);
    if (r == BN_OK && (cudaMemsetAsync(q->items, 0xff, (size_t)q->cap * sizeof *q->items, stream) != cudaSuccess ||
                       cudaMemsetAsync(q->counts, 0, 3 * sizeof(int), stream) != cudaSuccess))
        r = bn_fail(BN_ERR_DEVICE, "the received walk's chunk queue: clearing it");
    if (r != BN_OK) {
        bn_gpu_chunk_queue_free(q, stream);
        return r;
    }
    q->deep = q->items + q->cap;
    const char *e = getenv("BANYAN_REMOTE_QUEUE_TAKE");
    q->take = !(e && !strcmp(e, "0"));
    return BN_OK;
}

extern "C" void bn_gpu_chunk_queue_free(bn_gpu_chunk_queue *q, cudaStream_t stream)
{
    bn_cuda_free(q->items, stream);
    bn_cuda_free(q->counts, stream);
    memset(q, 0, sizeof *q);
}

/* The chunks the main pass left (walk_gpu.h's queue: those no warp of
 * it took, [taken, pushed), then those that would have overflowed its
 * stack), walked breadth-wise with a stack of BN_WALK_DEEP_STACK cells in
 * dynamic shared memory, a warp a block, each chunk with its own box, as
 * the main pass's warps walk those they take. A chunk that would
 * overflow even this stack walks depth first from the root
 * (walk_depth_cuda.h), nothing written before.
 *
 * Why chunks: one warp walking a whole group was a straggler of 10-30 ms
 * after the main walk (sessions 24 and 33, Hernquist on 2 GPUs: a group
 * of 146 bodies took 25 ms, 600 times a usual group's time, while the
 * rest of the pass ended by 10 ms); its chunks go to as many warps,
 * from the moment its walk outran the budget. */
template <bool COST>
__global__ void __launch_bounds__(32) bn_walk_deep_kernel(bn_walk_args a)
{
    extern __shared__ int deep_stack[];
    __shared__ bn_walk_smem smem;
    const int lane = threadIdx.x & 31;
    unsigned long long cnt[4] = {0, 0, 0, 0};
    const int taken = a.queue.counts[1], left = a.queue.counts[0] - taken, end = left + a.queue.counts[2];
    for (int i = blockIdx.x; i < end; i += gridDim.x) {
        const unsigned long long item = i < left ? a.queue.items[taken + i] : a.queue.deep[i - left];
        int first, nt;
        float4 cc, ch;
        /* the main pass's targets a lane: a chunk's forces have the same
         * bits whichever pass walks it (which one does is timing) */
        if (bn_walk_queued_chunk<COST, BN_WALK_DEEP_STACK, BN_WALK_REMOTE_TARGETS>(a, &smem, deep_stack, item, lane,
                                                                                   cnt, &first, &nt, &cc, &ch))
            continue;
        bool ok = true; /* from the root, depth first: the upload made sure its stack holds */
        bn_remote_chunk<1>(a, deep_stack, first, nt, cc, ch, lane, true, cnt, &ok);
    }
    bn_walk_counts_add(a, cnt, lane);
}

template <bool COST>
static bn_status bn_walk_deep_launch(const bn_walk_args &a, int blocks, cudaStream_t stream)
{
    const int bytes = BN_WALK_DEEP_STACK * (int)sizeof(int);
    static bool allowed = false; /* the process's one device: asked once */
    if (!allowed)
        BN_CUDA_CHECK(cudaFuncSetAttribute(bn_walk_deep_kernel<COST>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    allowed = true;
    bn_walk_deep_kernel<COST><<<blocks, 32, bytes, stream>>>(a);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_walk_sources_deep(const bn_gpu_tree *local, const bn_gpu_source *src,
                                              const bn_gravity_params *g, const bn_gpu_active *act,
                                              const bn_gpu_box_far *boxes, float4 *out, unsigned long long *counts,
                                              const bn_gpu_chunk_queue *q, cudaStream_t stream)
{
    if (!q || !q->items) return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_walk_sources_deep: no queue");
    const bn_walk_args a = bn_walk_source_args(local, src, g, act, boxes, out, counts, q);
    int resident = 0; /* 3 blocks an SM, as its shared memory holds them (48 KiB of stack, about 10 of the
                         rest; the blocks loop over the chunks) */
    BN_TRY(bn_walk_resident_blocks(&resident));
    const int blocks = 3 * (resident / BN_WALK_MIN_BLOCKS);
    return a.act.cost ? bn_walk_deep_launch<true>(a, blocks, stream) : bn_walk_deep_launch<false>(a, blocks, stream);
}

extern "C" bn_status bn_gpu_walk(const bn_gpu_tree *t, const bn_gravity_params *g, float4 *out,
                                 bn_gpu_walk_scratch *s, bn_force_stats *stats, cudaStream_t stream)
{
    return bn_gpu_walk_active(t, g, NULL, out, s, stats, stream);
}

/* Block steps: groups per warp from the active count, on the device
 * (the host does not know it without waiting); BANYAN_WALK_ACTIVE_ADAPT=0:
 * from every group's count, as before (a tuning aid). */
static int bn_walk_active_adapt(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("BANYAN_WALK_ACTIVE_ADAPT");
        on = !(e && strcmp(e, "0") == 0);
    }
    return on;
}

extern "C" bn_status bn_gpu_walk_active(const bn_gpu_tree *t, const bn_gravity_params *g, const bn_gpu_active *act,
                                        float4 *out, bn_gpu_walk_scratch *s, bn_force_stats *stats,
                                        cudaStream_t stream)
{
    if (!t || !g || !out || !s) return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_walk: NULL argument");
    const size_t count_bytes = 6 * sizeof(unsigned long long); /* 3 counters; marked chunks, redo list length;
                                                                  cells visited; opened nodes given as bodies */
    if (!s->counts) BN_TRY(bn_cuda_alloc((void **)&s->counts, count_bytes, "walk counters", stream));
    BN_CUDA_CHECK(cudaMemsetAsync(s->counts, 0, count_bytes, stream));
    if (t->group_bound <= 0 || t->n <= 0) return stats ? bn_gpu_walk_counts(s, stats, stream) : BN_OK;
    if (s->redo_capacity < t->group_bound) {
        bn_cuda_free(s->redo, stream);
        s->redo = NULL;
        s->redo_capacity = 0;
        BN_TRY(bn_cuda_alloc((void **)&s->redo, (size_t)t->group_bound * sizeof(int), "walk redo list", stream));
        s->redo_capacity = t->group_bound;
    }

    bn_walk_args a = bn_walk_args_of(t, g, act, out);
    a.s = bn_walk_srcs{t->node_com, t->node_com_lo, t->node_quad0, t->node_quad1, t->node_child, t->node_body,
                       t->body, t->body_lo};
    a.counts = s->counts;
    int *marked = (int *)(s->counts + 3), *redo_count = marked + 1;
    a.marked = marked;
    if (!s->resident_blocks) BN_TRY(bn_walk_resident_blocks(&s->resident_blocks));
    a.resident_blocks = s->resident_blocks;
    a.active_per_warp = a.act.groups && bn_walk_active_adapt();
    BN_TRY(bn_walk_launch_all<false>(a, s->resident_blocks, stream));
    if (a.soft) { /* the groups whose self pair left phi imprecise, walked
                     again BN_PP_EXACT (their bodies only, active or all);
                     two launches that return at once when none is */
        const int warps_per_block = 8;
        bn_walk_select_redo<<<(t->group_bound + warps_per_block - 1) / warps_per_block, 32 * warps_per_block, 0,
                              stream>>>(a.t, out, marked, s->redo, redo_count);
        BN_CUDA_LAUNCH_CHECK();
        bn_walk_args x = a;
        x.act.groups = s->redo;
        x.act.count = redo_count;
        bn_walk_launch<1, true>(x, (t->group_bound + BN_WALK_WARPS - 1) / BN_WALK_WARPS, stream);
        BN_CUDA_LAUNCH_CHECK();
    }
    return stats ? bn_gpu_walk_counts(s, stats, stream) : BN_OK;
}
