/*
 * GPU direct summation (bn_gpu_direct): all pairs in single precision.
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
__device__ __forceinline__ void bn_direct_pp(float4 s, float4 t, float eps2, float4 *a)
{
    if (MODE > 0)
        bn_pp_soft_f(s.x - t.x, s.y - t.y, s.z - t.z, s.w, eps2, &a->x, &a->y, &a->z, &a->w);
    else
        bn_pp_f(s.x - t.x, s.y - t.y, s.z - t.z, s.w, eps2, &a->x, &a->y, &a->z, &a->w);
}

/* Block b handles targets [b*T*TPT, (b+1)*T*TPT): thread t owns targets
 * base + t + k*T. Sources past n are padded with zero mass (they add
 * exactly 0: r^2 >= eps^2 > 0 on the soft path, the guard otherwise). */
template <int MODE>
__global__ void __launch_bounds__(BN_DIRECT_THREADS) bn_direct_kernel(const float4 *__restrict__ body, int n,
                                                                      float eps2, float G, float4 *__restrict__ out)
{
    __shared__ float4 tile[BN_DIRECT_THREADS];
    const int base = blockIdx.x * (BN_DIRECT_THREADS * BN_DIRECT_TPT) + threadIdx.x;
    float4 tgt[BN_DIRECT_TPT], acc[BN_DIRECT_TPT];
#pragma unroll
    for (int k = 0; k < BN_DIRECT_TPT; k++) {
        const int i = base + k * BN_DIRECT_THREADS;
        tgt[k] = i < n ? body[i] : make_float4(0.f, 0.f, 0.f, 0.f);
        acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    for (int j0 = 0; j0 < n; j0 += BN_DIRECT_THREADS) {
        const int j = j0 + threadIdx.x;
        tile[threadIdx.x] = j < n ? body[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        __syncthreads();
#pragma unroll 8
        for (int s = 0; s < BN_DIRECT_THREADS; s++) {
            const float4 src = tile[s];
#pragma unroll
            for (int k = 0; k < BN_DIRECT_TPT; k++) bn_direct_pp<MODE>(src, tgt[k], eps2, &acc[k]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < BN_DIRECT_TPT; k++) {
        const int i = base + k * BN_DIRECT_THREADS;
        if (i >= n) continue;
        /* The self pair added -m/eps to phi (r^2 = eps^2 exactly, since
         * d = 0): take the product back out (__fmul_rn: no FMA
         * contraction; equal to float rounding of m/eps). */
        const float self = eps2 > 0.f ? __fmul_rn(tgt[k].w, BN_RSQRT_F(eps2)) : 0.f;
        out[i] = make_float4(G * acc[k].x, G * acc[k].y, G * acc[k].z, G * (acc[k].w + self));
    }
}

extern "C" bn_status bn_gpu_direct_variant(const float4 *body, int n, double G, double eps, float4 *out,
                                           cudaStream_t stream, int variant)
{
    if (n < 0) return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_direct: particle count n = %d is negative", n);
    if (!(eps >= 0.0) || !isfinite(eps))
        return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_direct: softening eps = %g must be finite and >= 0", eps);
    if (n == 0) return BN_OK;
    if (!body || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_direct: NULL body or output array for n = %d", n);
    const int per_block = BN_DIRECT_THREADS * BN_DIRECT_TPT;
    const int blocks = (n + per_block - 1) / per_block;
    const float eps2 = (float)(eps * eps);
    if (variant == 0) variant = eps2 > 0.f ? BN_DIRECT_SOFT_VARIANT : 1;
    if (variant == 1 || !(eps2 > 0.f))
        bn_direct_kernel<0><<<blocks, BN_DIRECT_THREADS, 0, stream>>>(body, n, eps2, (float)G, out);
    else
        bn_direct_kernel<1><<<blocks, BN_DIRECT_THREADS, 0, stream>>>(body, n, eps2, (float)G, out);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_direct(const float4 *body, int n, double G, double eps, float4 *out, cudaStream_t stream)
{
    return bn_gpu_direct_variant(body, n, G, eps, out, stream, 0);
}
