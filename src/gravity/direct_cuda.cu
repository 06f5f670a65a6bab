/*
 * GPU direct summation (bn_gpu_direct): all pairs in single precision,
 * with positions as two floats each (hi + lo relative to a reference
 * point, tree_gpu.h): a separation is (hi_s - hi_t) + (lo_s - lo_t),
 * exact in its hi part where the two are near each other, so that it
 * keeps float precision relative to itself wherever the pair lies
 * (issue 14; the two extra adds per axis are the price).
 * A user feature for small N and the yardstick of the walk's arithmetic
 * efficiency (issue 4), so it is tuned the classic way (Nyland et al.
 * 2007, GPU Gems 3 ch. 31): sources staged through shared memory in
 * tiles of one block, each thread keeps BN_DIRECT_TPT targets in
 * registers so that one shared-memory load feeds several interactions.
 * REFERENCE-NUMBERS.md: 2 targets per thread beat 1, 4 and 8 on the H100.
 *
 * The per-interaction math is bn_pp_f (interact.h), the same function the
 * walk and (in double) the CPU use. Deterministic: every target sums its
 * sources in the same fixed order, no atomics.
 */
#include <cuda_runtime.h>
#include "core/cuda_check.h"
#include "gravity/interact.h"
#include "gravity/walk_gpu.h"
#include "gravity/walk_upload.h"

#define BN_DIRECT_THREADS 128
#define BN_DIRECT_TPT 2
/* Kernel used for eps > 0 (variant numbers of bn_gpu_direct_variant). */
#define BN_DIRECT_SOFT_VARIANT 2

/* MODE: 0 = bn_pp_f (any eps), 1 = bn_pp_soft_f (eps > 0: r^2 >= eps^2 >
 * 0, so bn_pp_f's r^2 = 0 guard is dead weight in the hottest loop of
 * the code; the test compares both paths with double direct summation). */
template <int MODE>
__device__ __forceinline__ void bn_direct_pp(float4 s, float4 sl, float4 t, float4 tl, float eps2, float4 *a)
{
    const float dx = (s.x - t.x) + (sl.x - tl.x), dy = (s.y - t.y) + (sl.y - tl.y),
                dz = (s.z - t.z) + (sl.z - tl.z);
    if (MODE > 0)
        bn_pp_soft_f(dx, dy, dz, s.w, eps2, &a->x, &a->y, &a->z, &a->w);
    else
        bn_pp_f(dx, dy, dz, s.w, eps2, &a->x, &a->y, &a->z, &a->w);
}

/* The sources of one tile (in shared memory) on this thread's targets.
 * OWN: the tile holds the block's own targets, whose self pairs are left
 * out by index (the tile starts at body j0; target k is body idx[k]):
 * subtracting m/eps afterwards, as a sum that held it, loses the float
 * precision of m/eps, which can exceed |phi| by orders of magnitude when
 * eps is small (issue 14). */
template <int MODE, bool OWN>
__device__ __forceinline__ void bn_direct_tile(const float4 *tile, const float4 *tile_lo, int j0, const int *idx,
                                               const float4 *tgt, const float4 *tgt_lo, float eps2, float4 *acc)
{
#pragma unroll 8
    for (int s = 0; s < BN_DIRECT_THREADS; s++) {
        const float4 src = tile[s], src_lo = tile_lo[s];
#pragma unroll
        for (int k = 0; k < BN_DIRECT_TPT; k++)
            if (!OWN || j0 + s != idx[k]) bn_direct_pp<MODE>(src, src_lo, tgt[k], tgt_lo[k], eps2, &acc[k]);
    }
}

/* Block b handles targets t0 + [b*T*TPT, (b+1)*T*TPT) (of nt from
 * body t0): thread t owns targets base + t + k*T. Sources are bodies
 * [0, ns) (the targets among them); those past ns are padded with zero
 * mass (they add exactly 0: r^2 >= eps^2 > 0 on the soft path, the guard
 * otherwise). out[i - t0] gets target i. */
template <int MODE>
__global__ void __launch_bounds__(BN_DIRECT_THREADS) bn_direct_kernel(const float4 *__restrict__ body,
                                                                      const float4 *__restrict__ body_lo, int ns,
                                                                      int t0, int nt, float eps2, float acc_unit,
                                                                      float pot_unit, float4 *__restrict__ out)
{
    __shared__ float4 tile[BN_DIRECT_THREADS], tile_lo[BN_DIRECT_THREADS];
    const int first = t0 + blockIdx.x * (BN_DIRECT_THREADS * BN_DIRECT_TPT), base = first + threadIdx.x;
    const int end = t0 + nt;
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    float4 tgt[BN_DIRECT_TPT], tgt_lo[BN_DIRECT_TPT], acc[BN_DIRECT_TPT];
    int idx[BN_DIRECT_TPT];
#pragma unroll
    for (int k = 0; k < BN_DIRECT_TPT; k++) {
        const int i = base + k * BN_DIRECT_THREADS;
        idx[k] = i;
        tgt[k] = i < end ? body[i] : zero;
        tgt_lo[k] = i < end ? body_lo[i] : zero;
        acc[k] = zero;
    }
    for (int j0 = 0; j0 < ns; j0 += BN_DIRECT_THREADS) {
        const int j = j0 + threadIdx.x;
        tile[threadIdx.x] = j < ns ? body[j] : zero;
        tile_lo[threadIdx.x] = j < ns ? body_lo[j] : zero;
        __syncthreads();
        if (j0 + BN_DIRECT_THREADS > first && j0 < first + BN_DIRECT_THREADS * BN_DIRECT_TPT) /* holds own targets */
            bn_direct_tile<MODE, true>(tile, tile_lo, j0, idx, tgt, tgt_lo, eps2, acc);
        else
            bn_direct_tile<MODE, false>(tile, tile_lo, j0, idx, tgt, tgt_lo, eps2, acc);
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < BN_DIRECT_TPT; k++) {
        const int i = base + k * BN_DIRECT_THREADS;
        if (i < end)
            out[i - t0] =
                make_float4(acc_unit * acc[k].x, acc_unit * acc[k].y, acc_unit * acc[k].z, pot_unit * acc[k].w);
    }
}

extern "C" bn_status bn_gpu_direct_targets(const float4 *body, const float4 *body_lo, int ns, int t0, int nt,
                                           double G, double eps, double len_scale, double mass_scale, float4 *out,
                                           cudaStream_t stream, int variant)
{
    if (ns < 0 || t0 < 0 || nt < 0 || t0 > ns - nt)
        return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_direct: targets [%d, %d + %d) not among the %d sources", t0, t0, nt,
                       ns);
    if (!(eps >= 0.0) || !isfinite(eps))
        return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_direct: softening eps = %g must be finite and >= 0", eps);
    if (!(len_scale > 0) || !(mass_scale > 0))
        return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_direct: unit scales %g, %g must be > 0", len_scale, mass_scale);
    if (nt == 0) return BN_OK;
    if (!body || !body_lo || !out)
        return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_direct: NULL body, body_lo or output array for n = %d", ns);
    const int per_block = BN_DIRECT_THREADS * BN_DIRECT_TPT;
    const int blocks = (nt + per_block - 1) / per_block;
    const bn_gpu_units u = bn_gpu_units_of(G, eps, len_scale, mass_scale); /* the bodies' units (tree_gpu.h) */
    const float eps2 = u.eps2;
    if (variant == 0) variant = eps2 > 0.f ? BN_DIRECT_SOFT_VARIANT : 1;
    if (variant == 1 || !(eps2 > 0.f))
        bn_direct_kernel<0><<<blocks, BN_DIRECT_THREADS, 0, stream>>>(body, body_lo, ns, t0, nt, eps2, u.acc_unit,
                                                                      u.pot_unit, out);
    else
        bn_direct_kernel<1><<<blocks, BN_DIRECT_THREADS, 0, stream>>>(body, body_lo, ns, t0, nt, eps2, u.acc_unit,
                                                                      u.pot_unit, out);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_direct_variant(const float4 *body, const float4 *body_lo, int n, double G, double eps,
                                           double len_scale, double mass_scale, float4 *out, cudaStream_t stream,
                                           int variant)
{
    if (n < 0) return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_direct: particle count n = %d is negative", n);
    return bn_gpu_direct_targets(body, body_lo, n, 0, n, G, eps, len_scale, mass_scale, out, stream, variant);
}

extern "C" bn_status bn_gpu_direct(const float4 *body, const float4 *body_lo, int n, double G, double eps,
                                   double len_scale, double mass_scale, float4 *out, cudaStream_t stream)
{
    return bn_gpu_direct_variant(body, body_lo, n, G, eps, len_scale, mass_scale, out, stream, 0);
}
