/*
 * Bounding box and space-filling-curve keys on the GPU, the mirror of the
 * CPU stage: exact min/max of the positions (an order-preserving integer
 * image of each double, so the reduction is exact and order-free), the
 * key cube around it, and 63-bit keys from keys.h (the CPU's quantizer;
 * the CPU's Hilbert curve through keys.h's state table, which test_keys
 * checks against the CPU's encoder). Nothing comes back to the host: the cube lives in the
 * device frame that the keys and moments kernels read.
 */
#include <math.h>
#include "tree/refresh_lag.h"
#include "tree/tree_cuda.h"

namespace {
const int kThreads = 256;

/* Monotonic map double -> uint64 (larger double, larger word). */
__device__ unsigned long long ordered(double x)
{
    unsigned long long u = (unsigned long long)__double_as_longlong(x);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}

__device__ double unordered(unsigned long long u)
{
    u = (u >> 63) ? (u & 0x7fffffffffffffffull) : ~u;
    return __longlong_as_double((long long)u);
}

/* minmax[k] = min of axis k, minmax[3 + k] = max (as ordered words). */
/* The position a build keys particle i by on axis k: x, or x + tau v
 * ahead of a block step's refreshes (tree/refresh_lag.h; v NULL: x). */
struct keyed_pos {
    const double *x[3], *v[3];
    double tau;
    __device__ double at(int k, int i) const { return v[k] ? bn_refresh_lead(x[k][i], v[k][i], tau) : x[k][i]; }
};

keyed_pos keyed(double *const pos[3], double *const vel[3], double tau)
{
    keyed_pos p;
    for (int k = 0; k < 3; k++) {
        p.x[k] = pos[k];
        p.v[k] = vel && tau != 0.0 ? vel[k] : NULL;
    }
    p.tau = tau;
    return p;
}

__global__ void bbox_kernel(keyed_pos p, int n, unsigned long long *minmax)
{
    __shared__ unsigned long long sh[6][kThreads];
    unsigned long long lo[3] = {~0ull, ~0ull, ~0ull}, hi[3] = {0, 0, 0};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        for (int k = 0; k < 3; k++) {
            const unsigned long long u = ordered(p.at(k, i));
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

/* The cube a build's key cube is a cell of (bn_gpu_tree_store's align). */
struct cube_align {
    double lo[3], side;
};

/* The key cube from the reduced box, on the device (the host never waits
 * for it): the CPU's rule (bn_key_cube_in: bn_key_cube's, or a cell of
 * the domains' cube), ref = the cube's centre until the moments move it
 * to the centre of mass. Non-finite coordinates or a span too wide for
 * keys raise frame->bad_box, which the build reports. */
__global__ void cube_kernel(const unsigned long long *minmax, cube_align a, bn_gpu_frame *f)
{
    double mn[3], mx[3];
    for (int k = 0; k < 3; k++) {
        mn[k] = unordered(minmax[k]);
        mx[k] = unordered(minmax[3 + k]);
    }
    const double side = bn_key_cube_in(mn, mx, a.lo, a.side, f->box_lo);
    f->box_size = side;
    int bad = !isfinite(side);
    for (int k = 0; k < 3; k++) {
        bad |= !isfinite(mn[k]) || !isfinite(mx[k]);
        f->ref[k] = f->box_lo[k] + 0.5 * side;
    }
    f->bad_box = bad;
}

/* Hilbert keys through the state table (keys.h), made by each block in
 * shared memory: a lookup a level instead of the loop's turns, which
 * made this kernel compute bound. Grid-stride, so that a block makes its
 * table once for many bodies. */
__global__ void keys_kernel(keyed_pos p, int n, const bn_gpu_frame *f, int hilbert, uint64_t *keys, int *index)
{
    __shared__ uint16_t table[BN_KEY_HILBERT_TABLE];
    if (hilbert)
        for (int e = threadIdx.x; e < BN_KEY_HILBERT_TABLE; e += blockDim.x)
            table[e] = bn_key_hilbert_entry(e >> 3, e & 7);
    __syncthreads();
    const double inv_size = 1.0 / f->box_size;
    const double lo[3] = {f->box_lo[0], f->box_lo[1], f->box_lo[2]};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        keys[i] = bn_key_of_point_table(table, hilbert, p.at(0, i), p.at(1, i), p.at(2, i), lo, inv_size);
        index[i] = i;
    }
}
} // namespace

extern "C" bn_status bn_gpu_bounding_box(double *const pos[3], double *const vel[3], double tau, int n,
                                         bn_gpu_tree_store *st, cudaStream_t s)
{
    /* minima start at ~0 (all bytes 0xff), maxima at 0: set on the device,
     * no copy from the host in a step */
    BN_CUDA_CHECK(cudaMemsetAsync(st->minmax, 0xff, 3 * sizeof(unsigned long long), s));
    BN_CUDA_CHECK(cudaMemsetAsync(st->minmax + 3, 0, 3 * sizeof(unsigned long long), s));
    int blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 4096) blocks = 4096; /* grid-stride beyond: fewer atomics */
    bbox_kernel<<<blocks, kThreads, 0, s>>>(keyed(pos, vel, tau), n, st->minmax);
    BN_CUDA_LAUNCH_CHECK();
    const cube_align a = {{st->align_lo[0], st->align_lo[1], st->align_lo[2]}, st->align_side};
    cube_kernel<<<1, 1, 0, s>>>(st->minmax, a, st->frame);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_keys(double *const pos[3], double *const vel[3], double tau, int n, const bn_gpu_frame *frame,
                                 int hilbert, uint64_t *keys, int *index, cudaStream_t s)
{
    if (n <= 0) return BN_OK;
    int blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 8192) blocks = 8192; /* grid-stride beyond: a table per 2048 bodies or more */
    keys_kernel<<<blocks, kThreads, 0, s>>>(keyed(pos, vel, tau), n, frame, hilbert, keys, index);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
