/*
 * The error target's reference on the GPU (bn_gpu_sample_direct): double
 * precision direct summation over every particle for a sample of
 * targets, on the device where the particles are (a few hundred targets
 * of 2^24 particles in milliseconds, where a copy of the particles to
 * the host would take longer than the whole search). One block per
 * target, a fixed reduction order: deterministic.
 */
#include <cuda_runtime.h>
#include "core/cuda_check.h"
#include "gravity/sample_gpu.h"

namespace {
const int kThreads = 256;

/* Block b: target t = targets[b]; out[8 b ..]: G (ax, ay, az, phi) by
 * direct summation over j != t, then the current forces acc[t]. */
__global__ void __launch_bounds__(kThreads) sample_kernel(const double *x, const double *y, const double *z,
                                                          const float *m, int n, const int *targets, double G,
                                                          double eps2, const float4 *acc, double *out)
{
    __shared__ double part[4][kThreads];
    const int t = targets[blockIdx.x];
    const double xt = x[t], yt = y[t], zt = z[t];
    double s[4] = {0, 0, 0, 0};
    for (int j = threadIdx.x; j < n; j += kThreads) {
        const double dx = x[j] - xt, dy = y[j] - yt, dz = z[j] - zt;
        const double r2 = dx * dx + dy * dy + dz * dz + eps2;
        if (j == t || r2 == 0) continue; /* the target itself; coincident, unsoftened */
        const double rinv = rsqrt(r2), mr = (double)m[j] * rinv, mr3 = mr * rinv * rinv;
        s[0] += mr3 * dx;
        s[1] += mr3 * dy;
        s[2] += mr3 * dz;
        s[3] -= mr;
    }
    for (int k = 0; k < 4; k++) part[k][threadIdx.x] = s[k];
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w /= 2) { /* a fixed tree: the same sum every run */
        if (threadIdx.x < w)
            for (int k = 0; k < 4; k++) part[k][threadIdx.x] += part[k][threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        double *o = out + 8 * (size_t)blockIdx.x;
        for (int k = 0; k < 4; k++) o[k] = G * part[k][0];
        const float4 a = acc[t];
        o[4] = a.x, o[5] = a.y, o[6] = a.z, o[7] = a.w;
    }
}
} // namespace

extern "C" bn_status bn_gpu_sample_direct(double *const pos[3], const float *mass, int n, const int *targets,
                                          int n_targets, double G, double eps, const float4 *acc, double *out,
                                          cudaStream_t s)
{
    if (n_targets <= 0) return BN_OK;
    sample_kernel<<<n_targets, kThreads, 0, s>>>(pos[0], pos[1], pos[2], mass, n, targets, G, eps * eps, acc, out);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
