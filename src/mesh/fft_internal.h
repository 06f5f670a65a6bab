/*
 * Internal: the uniform-grid FFT solver (bn_field_method BN_FIELD_FFT).
 *
 * A uniform mesh (every leaf at one level, tiling its box) is an n0 x n1 x
 * n2 grid. Its field is the discrete convolution of the cells' strengths
 * with the solver's kernel (the direct summation's: the exact cube within
 * near_cells, the point kernel beyond; field_interact.h's signs), done by
 * FFTs of the grid zero-padded to 2n per axis (Hockney and Eastwood 1981:
 * no periodic images reach the grid, so the boundaries are isolated):
 *   raw phi_k = IFFT(FFT(q_k) FFT(K_phi)),  raw g_kj = IFFT(FFT(q_k) FFT(K_gj))
 * The padded arrays are x fastest: index i + m0 (j + m1 k), m = 2n.
 */
#ifndef BN_FFT_INTERNAL_H
#define BN_FFT_INTERNAL_H
#include <stddef.h>
#include "banyan.h"
#include "core/hostdevice.h"
#include "gravity/box_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bn_fft_grid {
    int n[3];          /* cells per axis                                */
    double lo[3], h[3];
    int nblk[3];       /* blocks per axis                               */
    int *block;        /* the mesh block at block position bi + nblk0
                          (bj + nblk1 bk)                               */
    size_t *cell;      /* (with cells) grid index i + n0 (j + n1 k) ->
                          mesh cell                                     */
} bn_fft_grid;

/* The grid of a uniform mesh (cells: also the map of every cell); fails
 * naming the levels when the mesh is not uniform. */
bn_status bn_fft_grid_make(const bn_mesh *m, int cells, bn_fft_grid *g);
void bn_fft_grid_free(bn_fft_grid *g);

/* The kernels at grid offset (di, dj, dk) = target - source, in cells
 * (a convolution's argument): out[0] the potential per unit strength,
 * out[1..3] the field, with d = source - target as in field_interact.h. */
BN_HD void bn_fft_kernel(const double h[3], int near, int di, int dj, int dk, double out[4])
{
    const double d[3] = {-di * h[0], -dj * h[1], -dk * h[2]};
    const int is_near = (di < 0 ? -di : di) <= near && (dj < 0 ? -dj : dj) <= near && (dk < 0 ? -dk : dk) <= near;
    out[0] = out[1] = out[2] = out[3] = 0.0;
    if (is_near) { /* the exact cube, per unit strength */
        double phi = 0.0, g[3] = {0.0, 0.0, 0.0};
        bn_box_field_at(d, h, &phi, g);
        const double inv = 1.0 / (h[0] * h[1] * h[2]);
        out[0] = phi * inv;
        for (int k = 0; k < 3; k++) out[1 + k] = g[k] * inv;
        return;
    }
    const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2], rinv = 1.0 / sqrt(r2);
    out[0] = -rinv;
    for (int k = 0; k < 3; k++) out[1 + k] = d[k] * rinv * rinv * rinv;
}

/* The signed offset of padded index i (of m = 2n): i for i < n, i - m for
 * i > n; i == n is never an offset between two cells of the grid. */
BN_HD int bn_fft_offset(int i, int n, int *valid)
{
    *valid = i != n;
    return i < n ? i : i - 2 * n;
}

/* The CPU's solve (FFTW): raw (4K per grid cell, grid order) from the
 * strengths q (K per grid cell, value x volume). */
bn_status bn_fft_cpu_solve(const bn_fft_grid *g, int K, int near, int want_grad, const double *q, double *raw);
/* The same with cuFFT, straight from the mesh's source variables var[]
 * to its output variables out[] (fft_cuda.cu; core/cuda_stub.c without
 * CUDA). */
struct bn_field_gpu;
bn_status bn_fft_gpu_mesh(struct bn_field_gpu *fg, const bn_field_params *prm, const bn_mesh *m, const bn_fft_grid *g,
                          const int *var, double *const *out, bn_field_stats *st);

#ifdef __cplusplus
}
#endif
#endif
