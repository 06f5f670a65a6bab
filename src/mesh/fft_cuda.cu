/* The uniform-grid FFT solver on the GPU: fft_cpu.c's convolutions with
 * cuFFT (double, D2Z and Z2D), the padded kernels made on the device from
 * the same kernel function (fft_internal.h). */
#include <cuda_runtime.h>
#include <cufft.h>
#include "core/cuda_check.h"
#include "core/timer.h"
#include "mesh/fft_internal.h"
#include "mesh/field_gpu.h"

namespace {

struct pad {
    int n0, n1, n2, m0, m1, m2;
};

__global__ void kernel_fill(pad p, double h0, double h1, double h2, int near, int t, double *r)
{
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x, M = (size_t)p.m0 * p.m1 * p.m2;
    if (e >= M) return;
    const int i = (int)(e % (size_t)p.m0), j = (int)(e / (size_t)p.m0 % (size_t)p.m1), k = (int)(e / ((size_t)p.m0 * p.m1));
    int vi, vj, vk;
    const int di = bn_fft_offset(i, p.n0, &vi), dj = bn_fft_offset(j, p.n1, &vj), dk = bn_fft_offset(k, p.n2, &vk);
    double v[4] = {0, 0, 0, 0};
    const double h[3] = {h0, h1, h2};
    if (vi && vj && vk) bn_fft_kernel(h, near, di, dj, dk, v);
    r[e] = v[t];
}

__global__ void source_fill(pad p, int K, int c, const double *q, double *r)
{
    const size_t at = (size_t)blockIdx.x * blockDim.x + threadIdx.x, n = (size_t)p.n0 * p.n1 * p.n2;
    if (at >= n) return;
    const int i = (int)(at % (size_t)p.n0), j = (int)(at / (size_t)p.n0 % (size_t)p.n1), k = (int)(at / ((size_t)p.n0 * p.n1));
    r[(size_t)i + (size_t)p.m0 * ((size_t)j + (size_t)p.m1 * (size_t)k)] = q[(size_t)K * at + (size_t)c];
}

__global__ void multiply(const cufftDoubleComplex *a, const cufftDoubleComplex *b, cufftDoubleComplex *w, size_t n)
{
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    w[e] = make_cuDoubleComplex(a[e].x * b[e].x - a[e].y * b[e].y, a[e].x * b[e].y + a[e].y * b[e].x);
}

__global__ void extract(pad p, int K, size_t idx, double scale, const double *r, double *raw)
{
    const size_t at = (size_t)blockIdx.x * blockDim.x + threadIdx.x, n = (size_t)p.n0 * p.n1 * p.n2;
    if (at >= n) return;
    const int i = (int)(at % (size_t)p.n0), j = (int)(at / (size_t)p.n0 % (size_t)p.n1), k = (int)(at / ((size_t)p.n0 * p.n1));
    raw[(size_t)(4 * K) * at + idx] = scale * r[(size_t)i + (size_t)p.m0 * ((size_t)j + (size_t)p.m1 * (size_t)k)];
}

unsigned grid_of(size_t n) { return (unsigned)((n + 255) / 256); }

bn_status cufft_check(cufftResult r, const char *what)
{
    if (r == CUFFT_SUCCESS) return BN_OK;
    return bn_fail(r == CUFFT_ALLOC_FAILED ? BN_ERR_DEVICE_NOMEM : BN_ERR_DEVICE, "cuFFT: %s failed (cufftResult %d)",
                   what, (int)r);
}

struct fft_bufs {
    double *r, *q, *raw;
    cufftDoubleComplex *ks, *qs, *w;
    cufftHandle fwd, inv;
    int have_fwd, have_inv;
};

void release(fft_bufs *b, cudaStream_t s)
{
    void *p[] = {b->r, b->q, b->raw, b->ks, b->qs, b->w};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) bn_cuda_free(p[i], s);
    if (b->have_fwd) cufftDestroy(b->fwd);
    if (b->have_inv) cufftDestroy(b->inv);
}

bn_status run(bn_field_gpu *fg, const bn_fft_grid *g, int K, int near, int want_grad, const double *q, double *raw,
              fft_bufs *b)
{
    cudaStream_t s = fg->s;
    const pad p = {g->n[0], g->n[1], g->n[2], 2 * g->n[0], 2 * g->n[1], 2 * g->n[2]};
    const size_t M = (size_t)p.m0 * p.m1 * p.m2, Mc = (size_t)(p.m0 / 2 + 1) * p.m1 * p.m2;
    const size_t n = (size_t)p.n0 * p.n1 * p.n2;
    const int nk = want_grad ? 4 : 1;
    BN_TRY(bn_cuda_alloc((void **)&b->r, M * sizeof(double), "FFT grid (padded)", s));
    BN_TRY(bn_cuda_alloc((void **)&b->ks, Mc * (size_t)nk * sizeof(cufftDoubleComplex), "FFT kernels", s));
    BN_TRY(bn_cuda_alloc((void **)&b->qs, Mc * (size_t)K * sizeof(cufftDoubleComplex), "FFT sources", s));
    BN_TRY(bn_cuda_alloc((void **)&b->w, Mc * sizeof(cufftDoubleComplex), "FFT products", s));
    BN_TRY(bn_cuda_alloc((void **)&b->q, n * (size_t)K * sizeof(double), "FFT strengths", s));
    BN_TRY(bn_cuda_alloc((void **)&b->raw, n * (size_t)(4 * K) * sizeof(double), "FFT values", s));
    BN_CUDA_CHECK(cudaMemcpyAsync(b->q, q, n * (size_t)K * sizeof(double), cudaMemcpyHostToDevice, s));
    BN_TRY(cufft_check(cufftPlan3d(&b->fwd, p.m2, p.m1, p.m0, CUFFT_D2Z), "planning the forward transform"));
    b->have_fwd = 1;
    BN_TRY(cufft_check(cufftPlan3d(&b->inv, p.m2, p.m1, p.m0, CUFFT_Z2D), "planning the inverse transform"));
    b->have_inv = 1;
    BN_TRY(cufft_check(cufftSetStream(b->fwd, s), "cufftSetStream"));
    BN_TRY(cufft_check(cufftSetStream(b->inv, s), "cufftSetStream"));
    for (int t = 0; t < nk; t++) {
        kernel_fill<<<grid_of(M), 256, 0, s>>>(p, g->h[0], g->h[1], g->h[2], near, t, b->r);
        BN_CUDA_LAUNCH_CHECK();
        BN_TRY(cufft_check(cufftExecD2Z(b->fwd, b->r, b->ks + Mc * (size_t)t), "the kernels' transform"));
    }
    for (int c = 0; c < K; c++) {
        BN_CUDA_CHECK(cudaMemsetAsync(b->r, 0, M * sizeof(double), s));
        source_fill<<<grid_of(n), 256, 0, s>>>(p, K, c, b->q, b->r);
        BN_CUDA_LAUNCH_CHECK();
        BN_TRY(cufft_check(cufftExecD2Z(b->fwd, b->r, b->qs + Mc * (size_t)c), "the sources' transform"));
    }
    for (int c = 0; c < K; c++)
        for (int t = 0; t < nk; t++) {
            multiply<<<grid_of(Mc), 256, 0, s>>>(b->qs + Mc * (size_t)c, b->ks + Mc * (size_t)t, b->w, Mc);
            BN_CUDA_LAUNCH_CHECK();
            BN_TRY(cufft_check(cufftExecZ2D(b->inv, b->w, b->r), "the inverse transform"));
            const size_t idx = t == 0 ? (size_t)c : (size_t)K + 3 * (size_t)c + (size_t)(t - 1);
            extract<<<grid_of(n), 256, 0, s>>>(p, K, idx, 1.0 / (double)M, b->r, b->raw);
            BN_CUDA_LAUNCH_CHECK();
        }
    return bn_cuda_read(raw, b->raw, n * (size_t)(4 * K) * sizeof(double), "FFT values", s);
}

} // namespace

extern "C" bn_status bn_fft_gpu_solve(bn_field_gpu *fg, const bn_fft_grid *g, int K, int near, int want_grad,
                                      const double *q, double *raw, bn_field_stats *st)
{
    BN_CUDA_CHECK(cudaSetDevice(fg->device));
    bn_cuda_reset_peak();
    const double t0 = bn_wall_seconds();
    fft_bufs b;
    memset(&b, 0, sizeof b);
    const bn_status r = run(fg, g, K, near, want_grad, q, raw, &b);
    release(&b, fg->s);
    cudaStreamSynchronize(fg->s);
    st->t_walk = bn_wall_seconds() - t0;
    st->device_bytes_peak = bn_cuda_bytes_peak();
    return r;
}
