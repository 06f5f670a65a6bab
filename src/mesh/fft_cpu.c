/* The uniform-grid FFT solver: the grid of a uniform mesh (shared with
 * the GPU's fft_cuda.cu) and its convolutions on the CPU with FFTW
 * (double, OpenMP threads). See fft_internal.h. */
#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "mesh/fft_internal.h"
#include "mesh/mesh_internal.h"

bn_status bn_fft_grid_make(const bn_mesh *m, int cells, bn_fft_grid *g)
{
    memset(g, 0, sizeof *g);
    if (m->n_blocks == 0) return bn_fail(BN_ERR_ARGUMENT, "the FFT solver: the mesh has no blocks");
    int lmin = m->level[0], lmax = m->level[0];
    for (size_t b = 0; b < m->n_blocks; b++) {
        lmin = m->level[b] < lmin ? m->level[b] : lmin;
        lmax = m->level[b] > lmax ? m->level[b] : lmax;
    }
    if (lmin != lmax)
        return bn_fail(BN_ERR_ARGUMENT, "the FFT solver needs a uniform mesh: its leaf blocks are at levels %d to %d "
                       "(use the tree)", lmin, lmax);
    bn_mesh_octree o;
    BN_TRY(bn_mesh_octree_make(m, &o));
    size_t blocks = 1;
    for (int k = 0; k < 3; k++) {
        const int64_t nblk = (int64_t)o.nroot[k] << (lmin - 1);
        if (nblk * m->nb[k] > (1 << 20)) {
            bn_mesh_octree_free(&o);
            return bn_fail(BN_ERR_ARGUMENT, "the FFT solver: a grid of %lld cells along %c (at most 2^20)",
                           (long long)(nblk * m->nb[k]), "xyz"[k]);
        }
        g->nblk[k] = (int)nblk;
        g->n[k] = g->nblk[k] * m->nb[k];
        g->h[k] = ldexp(o.root_side[k], 1 - lmin) / m->nb[k];
        g->lo[k] = o.domain_lo[k];
        blocks *= (size_t)g->nblk[k];
    }
    bn_status s = blocks == m->n_blocks ? BN_OK
                                        : bn_fail(BN_ERR_ARGUMENT, "the FFT solver needs the blocks to fill their box: "
                                                  "%zu of %zu blocks of level %d are present", m->n_blocks, blocks, lmin);
    if (s == BN_OK && !(g->block = bn_alloc_array(blocks, sizeof(int), "FFT grid"))) s = BN_ERR_NOMEM;
    for (size_t b = 0; s == BN_OK && b < m->n_blocks; b++)
        g->block[o.ijk[3 * b] + g->nblk[0] * (o.ijk[3 * b + 1] + (int64_t)g->nblk[1] * o.ijk[3 * b + 2])] = (int)b;
    bn_mesh_octree_free(&o);
    const size_t n = bn_mesh_cells(m), bc = bn_mesh_block_cells(m);
    if (s == BN_OK && cells && !(g->cell = bn_alloc_array(n, sizeof(size_t), "FFT grid"))) s = BN_ERR_NOMEM;
    if (s == BN_OK && cells) {
#pragma omp parallel for schedule(static)
        for (long at = 0; at < (long)n; at++) {
            const int i = (int)(at % g->n[0]), j = (int)(at / g->n[0] % g->n[1]), k = (int)(at / ((long)g->n[0] * g->n[1]));
            const size_t b = (size_t)g->block[i / m->nb[0] + g->nblk[0] * (j / m->nb[1] + g->nblk[1] * (k / m->nb[2]))];
            g->cell[at] = b * bc + (size_t)(i % m->nb[0]) +
                          (size_t)m->nb[0] * ((size_t)(j % m->nb[1]) + (size_t)m->nb[1] * (size_t)(k % m->nb[2]));
        }
    }
    if (s != BN_OK) bn_fft_grid_free(g);
    return s;
}

void bn_fft_grid_free(bn_fft_grid *g)
{
    free(g->cell);
    free(g->block);
    g->cell = NULL;
    g->block = NULL;
}

/* The padded kernel t (0 potential, 1-3 field) into r (m0 m1 m2 reals). */
static void fill_kernel(const bn_fft_grid *g, int near, int t, double *r)
{
    const int m0 = 2 * g->n[0], m1 = 2 * g->n[1], m2 = 2 * g->n[2];
#pragma omp parallel for schedule(static)
    for (int k = 0; k < m2; k++)
        for (int j = 0; j < m1; j++)
            for (int i = 0; i < m0; i++) {
                int vi, vj, vk;
                const int di = bn_fft_offset(i, g->n[0], &vi), dj = bn_fft_offset(j, g->n[1], &vj),
                          dk = bn_fft_offset(k, g->n[2], &vk);
                double v[4] = {0, 0, 0, 0};
                if (vi && vj && vk) bn_fft_kernel(g->h, near, di, dj, dk, v);
                r[(size_t)i + (size_t)m0 * ((size_t)j + (size_t)m1 * (size_t)k)] = v[t];
            }
}

bn_status bn_fft_cpu_solve(const bn_fft_grid *g, int K, int near, int want_grad, const double *q, double *raw)
{
    const int m0 = 2 * g->n[0], m1 = 2 * g->n[1], m2 = 2 * g->n[2];
    const size_t M = (size_t)m0 * (size_t)m1 * (size_t)m2, Mc = (size_t)(m0 / 2 + 1) * (size_t)m1 * (size_t)m2;
    const size_t n = (size_t)g->n[0] * (size_t)g->n[1] * (size_t)g->n[2];
    const int nk = want_grad ? 4 : 1;
    BN_TRY(bn_check_count(Mc, (size_t)(nk + K + 1) * sizeof(fftw_complex) + sizeof(double), "FFT grid (padded)"));
    fftw_init_threads();
    fftw_plan_with_nthreads(omp_get_max_threads());
    double *r = fftw_alloc_real(M);
    fftw_complex *ks = fftw_alloc_complex(Mc * (size_t)nk), *qs = fftw_alloc_complex(Mc * (size_t)K),
                 *w = fftw_alloc_complex(Mc);
    if (!r || !ks || !qs || !w) {
        fftw_free(r);
        fftw_free(ks);
        fftw_free(qs);
        fftw_free(w);
        return bn_fail(BN_ERR_NOMEM, "out of memory for the FFT of a %d x %d x %d grid", m0, m1, m2);
    }
    /* FFTW is row-major with the last index fastest: dims (z, y, x) */
    fftw_plan fwd = fftw_plan_dft_r2c_3d(m2, m1, m0, r, w, FFTW_ESTIMATE);
    fftw_plan inv = fftw_plan_dft_c2r_3d(m2, m1, m0, w, r, FFTW_ESTIMATE);
    for (int t = 0; t < nk; t++) {
        fill_kernel(g, near, t, r);
        fftw_execute_dft_r2c(fwd, r, ks + Mc * (size_t)t);
    }
    for (int c = 0; c < K; c++) {
        memset(r, 0, M * sizeof(double));
#pragma omp parallel for schedule(static)
        for (int k = 0; k < g->n[2]; k++)
            for (int j = 0; j < g->n[1]; j++)
                for (int i = 0; i < g->n[0]; i++) {
                    const size_t at = (size_t)i + (size_t)g->n[0] * ((size_t)j + (size_t)g->n[1] * (size_t)k);
                    r[(size_t)i + (size_t)m0 * ((size_t)j + (size_t)m1 * (size_t)k)] = q[(size_t)K * at + (size_t)c];
                }
        fftw_execute_dft_r2c(fwd, r, qs + Mc * (size_t)c);
    }
    const double scale = 1.0 / (double)M;
    for (int c = 0; c < K; c++)
        for (int t = 0; t < nk; t++) {
            const fftw_complex *a = qs + Mc * (size_t)c, *b = ks + Mc * (size_t)t;
#pragma omp parallel for schedule(static)
            for (size_t e = 0; e < Mc; e++) {
                w[e][0] = a[e][0] * b[e][0] - a[e][1] * b[e][1];
                w[e][1] = a[e][0] * b[e][1] + a[e][1] * b[e][0];
            }
            fftw_execute_dft_c2r(inv, w, r);
            const size_t idx = t == 0 ? (size_t)c : (size_t)K + 3 * (size_t)c + (size_t)(t - 1);
#pragma omp parallel for schedule(static)
            for (int k = 0; k < g->n[2]; k++)
                for (int j = 0; j < g->n[1]; j++)
                    for (int i = 0; i < g->n[0]; i++) {
                        const size_t at = (size_t)i + (size_t)g->n[0] * ((size_t)j + (size_t)g->n[1] * (size_t)k);
                        raw[(size_t)(4 * K) * at + idx] = scale * r[(size_t)i + (size_t)m0 * ((size_t)j + (size_t)m1 * (size_t)k)];
                    }
        }
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(inv);
    fftw_free(r);
    fftw_free(ks);
    fftw_free(qs);
    fftw_free(w);
    (void)n;
    return BN_OK;
}
