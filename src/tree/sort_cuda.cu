/*
 * Stable radix sort of (key, index) pairs (CUB, wrapped behind a C
 * function) and the reordering of particle arrays into key order.
 */
#include <cub/device/device_radix_sort.cuh>
#include "tree/tree_cuda.h"

namespace {
const int kThreads = 256;

template <typename T>
__global__ void gather_kernel(const T *__restrict__ src, const int *__restrict__ perm, T *__restrict__ dst, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[perm[i]];
}

template <typename T>
bn_status gather(const void *src, const int *perm, void *dst, int n, cudaStream_t s)
{
    if (n <= 0) return BN_OK;
    gather_kernel<T><<<(n + kThreads - 1) / kThreads, kThreads, 0, s>>>((const T *)src, perm, (T *)dst, n);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

/* Three double arrays in one pass: the permutation is read once for
 * all of them. */
__global__ void gather3_kernel(const int *__restrict__ perm, const double *s0, const double *s1, const double *s2,
                               double *d0, double *d1, double *d2, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int j = perm[i];
    d0[i] = s0[j];
    d1[i] = s1[j];
    d2[i] = s2[j];
}

/* A particle's other arrays in one pass (bin may be NULL). dst.orig may
 * be perm itself: thread i reads perm[i] before it writes entry i, and
 * no other thread reads that entry (so perm is not __restrict__ here). */
__global__ void gather_rest_kernel(const int *perm, bn_gpu_particle_rest src, bn_gpu_particle_rest dst, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int j = perm[i];
    dst.mass[i] = src.mass[j];
    dst.orig[i] = src.orig[j];
    dst.acc[i] = src.acc[j];
    if (src.bin) dst.bin[i] = src.bin[j];
}

__global__ void bodies_kernel(const double *x, const double *y, const double *z, const float *m,
                              const bn_gpu_frame *frame, double len_scale, float mass_scale, int n, float4 *body,
                              float4 *body_lo)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double *const pos[3] = {x, y, z};
    bn_gpu_body(pos, m, frame->ref, len_scale, mass_scale, i, &body[i], &body_lo[i]);
}
} // namespace

extern "C" bn_status bn_gpu_sort_pairs(uint64_t **keys, uint64_t **keys_alt, int **vals, int **vals_alt, int n,
                                       int end_bit, cudaStream_t s)
{
    cub::DoubleBuffer<unsigned long long> k((unsigned long long *)*keys, (unsigned long long *)*keys_alt);
    cub::DoubleBuffer<int> v(*vals, *vals_alt);
    size_t tmp_bytes = 0;
    BN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, tmp_bytes, k, v, n, 0, end_bit, s));
    void *tmp = NULL;
    BN_TRY(bn_cuda_alloc(&tmp, tmp_bytes, "radix sort scratch", s));
    cudaError_t err = cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, k, v, n, 0, end_bit, s);
    bn_cuda_free(tmp, s);
    BN_CUDA_CHECK(err);
    *keys = (uint64_t *)k.Current();
    *keys_alt = (uint64_t *)k.Alternate();
    *vals = v.Current();
    *vals_alt = v.Alternate();
    return BN_OK;
}

extern "C" bn_status bn_gpu_gather8(const void *src, const int *perm, void *dst, int n, cudaStream_t s)
{
    return gather<unsigned long long>(src, perm, dst, n, s);
}

extern "C" bn_status bn_gpu_gather4(const void *src, const int *perm, void *dst, int n, cudaStream_t s)
{
    return gather<unsigned int>(src, perm, dst, n, s);
}

extern "C" bn_status bn_gpu_gather16(const void *src, const int *perm, void *dst, int n, cudaStream_t s)
{
    return gather<float4>(src, perm, dst, n, s);
}

extern "C" bn_status bn_gpu_gather1(const void *src, const int *perm, void *dst, int n, cudaStream_t s)
{
    return gather<unsigned char>(src, perm, dst, n, s);
}

extern "C" bn_status bn_gpu_gather3(const int *perm, double *const src[3], double *const dst[3], int n,
                                   cudaStream_t s)
{
    if (n <= 0) return BN_OK;
    gather3_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, s>>>(perm, src[0], src[1], src[2], dst[0], dst[1],
                                                                     dst[2], n);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_gather_rest(const int *perm, bn_gpu_particle_rest src, bn_gpu_particle_rest dst, int n,
                                       cudaStream_t s)
{
    if (n <= 0) return BN_OK;
    gather_rest_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, s>>>(perm, src, dst, n);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_make_bodies(double *const pos[3], const float *mass, const bn_gpu_frame *frame,
                                        double len_scale, double mass_scale, int n, float4 *body, float4 *body_lo,
                                        cudaStream_t s)
{
    if (n <= 0) return BN_OK;
    bodies_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, s>>>(pos[0], pos[1], pos[2], mass, frame, len_scale,
                                                                      (float)mass_scale, n, body, body_lo);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
