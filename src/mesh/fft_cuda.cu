/* The uniform-grid FFT solver on the GPU: fft_cpu.c's convolutions with
 * cuFFT (double, D2Z and Z2D). The mesh's source variables go up through
 * the pinned staging buffers, the strengths are scattered into the padded
 * grid on the device, each output (gpot, gacx.., or psi and u = curl psi)
 * is one inverse transform of a sum of products in Fourier space, and
 * the finished values come back in cell order. Plans and the kernels'
 * spectra are kept between calls on the same grid (bn_fft_cache). */
#include <cuda_runtime.h>
#include <cufft.h>
#include <string.h>
#include "core/cuda_check.h"
#include "core/timer.h"
#include "mesh/fft_internal.h"
#include "mesh/field_gpu.h"

namespace {

struct pad {
    int n0, n1, n2, m0, m1, m2;
    int nb0, nb1, nb2;    /* cells per block                  */
    int bx, by, bz;       /* blocks per axis                  */
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

/* The mesh cell of grid cell (i, j, k): its block from the block map. */
__device__ __forceinline__ size_t cell_of(const pad &p, const int *block_of, int i, int j, int k)
{
    const int b = block_of[i / p.nb0 + p.bx * (j / p.nb1 + p.by * (k / p.nb2))];
    return (size_t)b * (size_t)(p.nb0 * p.nb1 * p.nb2) +
           (size_t)(i % p.nb0) + (size_t)p.nb0 * ((size_t)(j % p.nb1) + (size_t)p.nb1 * (size_t)(k % p.nb2));
}

/* Strengths (value x volume) of one variable into the padded grid. */
__global__ void source_fill(pad p, const int *block_of, const double *val, double vol, double *r)
{
    const size_t at = (size_t)blockIdx.x * blockDim.x + threadIdx.x, n = (size_t)p.n0 * p.n1 * p.n2;
    if (at >= n) return;
    const int i = (int)(at % (size_t)p.n0), j = (int)(at / (size_t)p.n0 % (size_t)p.n1), k = (int)(at / ((size_t)p.n0 * p.n1));
    r[(size_t)i + (size_t)p.m0 * ((size_t)j + (size_t)p.m1 * (size_t)k)] = val[cell_of(p, block_of, i, j, k)] * vol;
}

/* w (+)= coef a b, complex. */
__global__ void multiply_add(const cufftDoubleComplex *a, const cufftDoubleComplex *b, double coef, int add,
                             cufftDoubleComplex *w, size_t n)
{
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    const cufftDoubleComplex v = make_cuDoubleComplex(coef * (a[e].x * b[e].x - a[e].y * b[e].y),
                                                      coef * (a[e].x * b[e].y + a[e].y * b[e].x));
    w[e] = add ? make_cuDoubleComplex(w[e].x + v.x, w[e].y + v.y) : v;
}

/* The grid's values of one output, scaled, into cell order. */
__global__ void extract(pad p, const int *block_of, double scale, const double *r, double *out)
{
    const size_t at = (size_t)blockIdx.x * blockDim.x + threadIdx.x, n = (size_t)p.n0 * p.n1 * p.n2;
    if (at >= n) return;
    const int i = (int)(at % (size_t)p.n0), j = (int)(at / (size_t)p.n0 % (size_t)p.n1), k = (int)(at / ((size_t)p.n0 * p.n1));
    out[cell_of(p, block_of, i, j, k)] = scale * r[(size_t)i + (size_t)p.m0 * ((size_t)j + (size_t)p.m1 * (size_t)k)];
}

unsigned grid_of(size_t n) { return (unsigned)((n + 255) / 256); }

bn_status cufft_check(cufftResult r, const char *what)
{
    if (r == CUFFT_SUCCESS) return BN_OK;
    return bn_fail(r == CUFFT_ALLOC_FAILED ? BN_ERR_DEVICE_NOMEM : BN_ERR_DEVICE, "cuFFT: %s failed (cufftResult %d)",
                   what, (int)r);
}

/* The plans and the 4 kernels' spectra (phi and its gradient) for this
 * grid, made unless the cache holds them. */
bn_status ensure_cache(bn_field_gpu *fg, const bn_fft_grid *g, const pad &p, int near, double *r)
{
    bn_fft_cache *c = &fg->fft;
    if (c->valid && !memcmp(c->n, g->n, sizeof c->n) && !memcmp(c->h, g->h, sizeof c->h) && c->near == near)
        return BN_OK;
    bn_fft_cache_free(fg);
    cudaStream_t s = fg->s;
    const size_t M = (size_t)p.m0 * p.m1 * p.m2, Mc = (size_t)(p.m0 / 2 + 1) * p.m1 * p.m2;
    cufftHandle fwd, inv;
    BN_TRY(cufft_check(cufftPlan3d(&fwd, p.m2, p.m1, p.m0, CUFFT_D2Z), "planning the forward transform"));
    c->fwd = fwd;
    bn_status st = cufft_check(cufftPlan3d(&inv, p.m2, p.m1, p.m0, CUFFT_Z2D), "planning the inverse transform");
    if (st != BN_OK) {
        cufftDestroy(fwd);
        return st;
    }
    c->inv = inv;
    c->valid = 1; /* the plans exist: bn_fft_cache_free releases them from here on */
    BN_TRY(cufft_check(cufftSetStream(fwd, s), "cufftSetStream"));
    BN_TRY(cufft_check(cufftSetStream(inv, s), "cufftSetStream"));
    cufftDoubleComplex *ks = NULL;
    BN_TRY(bn_cuda_dev_alloc(&ks, Mc * 4, "FFT kernels' spectra", s));
    c->spectra = ks;
    for (int t = 0; t < 4; t++) {
        kernel_fill<<<grid_of(M), 256, 0, s>>>(p, g->h[0], g->h[1], g->h[2], near, t, r);
        BN_CUDA_LAUNCH_CHECK();
        BN_TRY(cufft_check(cufftExecD2Z(fwd, r, ks + Mc * (size_t)t), "the kernels' transform"));
    }
    memcpy(c->n, g->n, sizeof c->n);
    memcpy(c->h, g->h, sizeof c->h);
    c->near = near;
    return BN_OK;
}

/* One output: the terms (component c, kernel t, coefficient) summed in
 * Fourier space, transformed back, scaled into out (cell order). */
struct term {
    int c, t;
    double coef;
};

bn_status one_output(bn_field_gpu *fg, const pad &p, const term *terms, int nt, const cufftDoubleComplex *qs,
                     cufftDoubleComplex *w, double *r, const int *block_of, double *out)
{
    cudaStream_t s = fg->s;
    const size_t M = (size_t)p.m0 * p.m1 * p.m2, Mc = (size_t)(p.m0 / 2 + 1) * p.m1 * p.m2;
    const size_t n = (size_t)p.n0 * p.n1 * p.n2;
    const cufftDoubleComplex *ks = (const cufftDoubleComplex *)fg->fft.spectra;
    for (int e = 0; e < nt; e++) {
        multiply_add<<<grid_of(Mc), 256, 0, s>>>(qs + Mc * (size_t)terms[e].c, ks + Mc * (size_t)terms[e].t,
                                                  terms[e].coef, e > 0, w, Mc);
        BN_CUDA_LAUNCH_CHECK();
    }
    BN_TRY(cufft_check(cufftExecZ2D((cufftHandle)fg->fft.inv, w, r), "the inverse transform"));
    extract<<<grid_of(n), 256, 0, s>>>(p, block_of, 1.0 / (double)M, r, out);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

/* The outputs as sums of (component, kernel) terms: gravity G phi and G
 * g; vorticity psi_c = -phi_c / (4 pi) and u_i = sum_jc eps_ijc d_j psi_c. */
int output_terms(const bn_field_params *prm, int o, term *t)
{
    const double f = 1.0 / (4.0 * 3.14159265358979323846);
    if (prm->kind == BN_FIELD_GRAVITY) {
        t[0] = (term){0, o, prm->G};
        return 1;
    }
    if (o < 3) {
        t[0] = (term){o, 0, -f};
        return 1;
    }
    const int i = o - 3, j = (i + 1) % 3, k = (i + 2) % 3; /* u_i = d_j psi_k - d_k psi_j */
    t[0] = (term){k, 1 + j, f};
    t[1] = (term){j, 1 + k, -f};
    return 2;
}

struct bufs {
    double *r, *val;
    cufftDoubleComplex *qs, *w;
    int *block_of;
    double *out;
};

void release(bufs *b, cudaStream_t s)
{
    void *p[] = {b->r, b->val, b->qs, b->w, b->block_of, b->out};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) bn_cuda_free(p[i], s);
}

bn_status run(bn_field_gpu *fg, const bn_field_params *prm, const bn_mesh *m, const bn_fft_grid *g, const int *var,
              double *const *out, bufs *b)
{
    cudaStream_t s = fg->s;
    const int K = prm->kind == BN_FIELD_VORTICITY ? 3 : 1, nv = K == 1 ? 4 : (prm->velocity ? 6 : 3);
    pad p = {g->n[0], g->n[1], g->n[2], 2 * g->n[0], 2 * g->n[1], 2 * g->n[2], m->nb[0], m->nb[1], m->nb[2],
             g->n[0] / m->nb[0], g->n[1] / m->nb[1], g->n[2] / m->nb[2]};
    const size_t M = (size_t)p.m0 * p.m1 * p.m2, Mc = (size_t)(p.m0 / 2 + 1) * p.m1 * p.m2;
    const size_t n = (size_t)p.n0 * p.n1 * p.n2, nblk = (size_t)p.bx * p.by * p.bz;
    /* the block at each block position of the grid (no wait: a copy from
     * pageable memory has read g->block when it returns, and g->block
     * lives past this call's closing wait anyway) */
    BN_TRY(bn_cuda_dev_alloc(&b->block_of, nblk, "FFT block map", s));
    BN_CUDA_CHECK(cudaMemcpyAsync(b->block_of, g->block, nblk * sizeof(int), cudaMemcpyHostToDevice, s));
    BN_TRY(bn_cuda_dev_alloc(&b->r, M, "FFT grid (padded)", s));
    BN_TRY(ensure_cache(fg, g, p, prm->near_cells, b->r));
    BN_TRY(bn_cuda_dev_alloc(&b->qs, Mc * (size_t)K, "FFT sources", s));
    BN_TRY(bn_cuda_dev_alloc(&b->w, Mc, "FFT products", s));
    BN_TRY(bn_cuda_dev_alloc(&b->val, n, "FFT source values", s));
    BN_TRY(bn_cuda_dev_alloc(&b->out, n, "FFT values", s));
    const double vol = g->h[0] * g->h[1] * g->h[2];
    for (int c = 0; c < K; c++) {
        BN_TRY(bn_field_stage_copy(fg, b->val, m->var[var[c]], n, 1));
        BN_CUDA_CHECK(cudaMemsetAsync(b->r, 0, M * sizeof(double), s));
        source_fill<<<grid_of(n), 256, 0, s>>>(p, b->block_of, b->val, vol, b->r);
        BN_CUDA_LAUNCH_CHECK();
        BN_TRY(cufft_check(cufftExecD2Z((cufftHandle)fg->fft.fwd, b->r, b->qs + Mc * (size_t)c), "the sources' transform"));
    }
    for (int o = 0; o < nv; o++) {
        term t[2];
        const int nt = output_terms(prm, o, t);
        BN_TRY(one_output(fg, p, t, nt, b->qs, b->w, b->r, b->block_of, b->out));
        BN_TRY(bn_field_stage_copy(fg, out[o], b->out, n, 0));
    }
    return BN_OK;
}

} // namespace

extern "C" void bn_fft_cache_free(bn_field_gpu *fg)
{
    bn_fft_cache *c = &fg->fft;
    if (c->valid) {
        cufftDestroy((cufftHandle)c->fwd);
        cufftDestroy((cufftHandle)c->inv);
    }
    bn_cuda_free(c->spectra, fg->s);
    memset(c, 0, sizeof *c);
}

extern "C" bn_status bn_fft_gpu_mesh(bn_field_gpu *fg, const bn_field_params *prm, const bn_mesh *m,
                                     const bn_fft_grid *g, const int *var, double *const *out, bn_field_stats *st)
{
    BN_CUDA_CHECK(cudaSetDevice(fg->device));
    bn_cuda_reset_peak();
    const double t0 = bn_wall_seconds();
    bufs b;
    memset(&b, 0, sizeof b);
    const bn_status r = run(fg, prm, m, g, var, out, &b);
    release(&b, fg->s);
    cudaStreamSynchronize(fg->s);
    st->t_walk = bn_wall_seconds() - t0;
    st->device_bytes_peak = bn_cuda_bytes_peak();
    return r;
}
