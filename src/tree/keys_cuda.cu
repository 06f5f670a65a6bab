/*
 * Bounding box and space-filling-curve keys on the GPU, the mirror of the
 * CPU stage: exact min/max of the positions (an order-preserving integer
 * image of each double, so the reduction is exact and order-free), the
 * key cube around it, and 63-bit keys from keys.h (the same encoder the
 * CPU uses).
 */
#include <math.h>
#include <string.h>
#include "tree/tree_cuda.h"

namespace {
const int kThreads = 256;

/* Monotonic map double -> uint64 (larger double, larger word). */
__device__ unsigned long long ordered(double x)
{
    unsigned long long u = (unsigned long long)__double_as_longlong(x);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}

double unordered(unsigned long long u)
{
    u = (u >> 63) ? (u & 0x7fffffffffffffffull) : ~u;
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* minmax[k] = min of axis k, minmax[3 + k] = max (as ordered words). */
__global__ void bbox_kernel(const double *x, const double *y, const double *z, int n, unsigned long long *minmax)
{
    __shared__ unsigned long long sh[6][kThreads];
    unsigned long long lo[3] = {~0ull, ~0ull, ~0ull}, hi[3] = {0, 0, 0};
    const double *p[3] = {x, y, z};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        for (int k = 0; k < 3; k++) {
            const unsigned long long u = ordered(p[k][i]);
            lo[k] = u < lo[k] ? u : lo[k];
            hi[k] = u > hi[k] ? u : hi[k];
        }
    for (int k = 0; k < 3; k++) {
        sh[k][threadIdx.x] = lo[k];
        sh[3 + k][threadIdx.x] = hi[k];
    }
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            for (int k = 0; k < 3; k++) {
                const unsigned long long a = sh[k][threadIdx.x + w], b = sh[3 + k][threadIdx.x + w];
                if (a < sh[k][threadIdx.x]) sh[k][threadIdx.x] = a;
                if (b > sh[3 + k][threadIdx.x]) sh[3 + k][threadIdx.x] = b;
            }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        for (int k = 0; k < 3; k++) {
            atomicMin(&minmax[k], sh[k][0]);
            atomicMax(&minmax[3 + k], sh[3 + k][0]);
        }
}

__global__ void keys_kernel(const double *x, const double *y, const double *z, int n, double lo_x, double lo_y,
                            double lo_z, double inv_size, int hilbert, uint64_t *keys, int *index)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint32_t ix = bn_key_quantize(x[i], lo_x, inv_size);
    const uint32_t iy = bn_key_quantize(y[i], lo_y, inv_size);
    const uint32_t iz = bn_key_quantize(z[i], lo_z, inv_size);
    keys[i] = bn_key_encode(hilbert, ix, iy, iz);
    index[i] = i;
}
} // namespace

extern "C" bn_status bn_gpu_bounding_box(double *const pos[3], int n, bn_gpu_tree_store *st, double lo[3],
                                         double hi[3], cudaStream_t s)
{
    const unsigned long long init[6] = {~0ull, ~0ull, ~0ull, 0, 0, 0};
    unsigned long long out[6];
    BN_CUDA_CHECK(cudaMemcpyAsync(st->minmax, init, sizeof init, cudaMemcpyHostToDevice, s));
    int blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 4096) blocks = 4096; /* grid-stride beyond: fewer atomics */
    bbox_kernel<<<blocks, kThreads, 0, s>>>(pos[0], pos[1], pos[2], n, st->minmax);
    BN_CUDA_LAUNCH_CHECK();
    BN_CUDA_CHECK(cudaMemcpyAsync(out, st->minmax, sizeof out, cudaMemcpyDeviceToHost, s));
    BN_CUDA_CHECK(cudaStreamSynchronize(s));
    for (int k = 0; k < 3; k++) {
        lo[k] = unordered(out[k]);
        hi[k] = unordered(out[3 + k]);
    }
    return BN_OK;
}

/* The CPU's cube (bn_tree_bbox, tree_keys.c), rule for rule: the
 * bounding cube enlarged by a relative 2^-20 so that the largest
 * coordinate quantises strictly inside, widened again if the centre's
 * rounding pushes the top out; side 1 when every particle sits at one
 * point. */
extern "C" void bn_gpu_key_cube(const double lo[3], const double hi[3], double box_lo[3], double *box_size)
{
    double extent = 0;
    for (int k = 0; k < 3; k++)
        if (hi[k] - lo[k] > extent) extent = hi[k] - lo[k];
    double side = extent > 0 ? extent * (1.0 + 0x1p-20) : 1.0;
    for (int k = 0; k < 3; k++) {
        box_lo[k] = 0.5 * (lo[k] + hi[k]) - 0.5 * side;
        if (box_lo[k] + side <= hi[k]) side = (hi[k] - box_lo[k]) * (1.0 + 0x1p-20);
    }
    *box_size = side;
}

extern "C" bn_status bn_gpu_keys(double *const pos[3], int n, const double box_lo[3], double box_size, int hilbert,
                                 uint64_t *keys, int *index, cudaStream_t s)
{
    keys_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, s>>>(pos[0], pos[1], pos[2], n, box_lo[0], box_lo[1],
                                                                    box_lo[2], 1.0 / box_size, hilbert, keys, index);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
