/* The inner loops of the CPU walk: one target against a tile of sources,
 * structure-of-arrays, accumulated in double. The per-interaction math is
 * interact.h (the same header the GPU walk compiles in float). `omp simd`
 * lets the compiler vectorise the reduction over sources; target_clones
 * builds AVX-512, AVX2 and baseline versions and picks one at load time,
 * so the library still runs on any x86-64 (the default flags are generic).
 * Vector and scalar versions sum in different orders, so results are
 * reproducible on one machine, not bit-identical across CPU generations. */
#include "gravity/interact.h"
#include "gravity/walk_cpu.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define BN_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("fp-contract=fast")))
#else
#define BN_SIMD_CLONES
#endif

BN_SIMD_CLONES
void bn_walk_pp_tile(int nt, const double *tx, const double *ty, const double *tz, int ns, const double *sx,
                     const double *sy, const double *sz, const double *sm, double eps2, double *ax, double *ay,
                     double *az, double *phi)
{
    for (int i = 0; i < nt; i++) {
        const double xi = tx[i], yi = ty[i], zi = tz[i];
        double a0 = 0, a1 = 0, a2 = 0, p = 0;
#pragma omp simd reduction(+ : a0, a1, a2, p)
        for (int j = 0; j < ns; j++) bn_pp_d(sx[j] - xi, sy[j] - yi, sz[j] - zi, sm[j], eps2, &a0, &a1, &a2, &p);
        ax[i] += a0;
        ay[i] += a1;
        az[i] += a2;
        phi[i] += p;
    }
}

BN_SIMD_CLONES
void bn_walk_pc_tile(int nt, const double *tx, const double *ty, const double *tz, int ns, const double *sx,
                     const double *sy, const double *sz, const double *sm, const double *const q[6], double eps2,
                     double *ax, double *ay, double *az, double *phi)
{
    const double *q0 = q[0], *q1 = q[1], *q2 = q[2], *q3 = q[3], *q4 = q[4], *q5 = q[5];
    for (int i = 0; i < nt; i++) {
        const double xi = tx[i], yi = ty[i], zi = tz[i];
        double a0 = 0, a1 = 0, a2 = 0, p = 0;
#pragma omp simd reduction(+ : a0, a1, a2, p)
        for (int j = 0; j < ns; j++)
            bn_pc6_d(sx[j] - xi, sy[j] - yi, sz[j] - zi, sm[j], q0[j], q1[j], q2[j], q3[j], q4[j], q5[j], eps2,
                     &a0, &a1, &a2, &p);
        ax[i] += a0;
        ay[i] += a1;
        az[i] += a2;
        phi[i] += p;
    }
}

/* Two loops that vectorise (one accumulating a struct of terms does not):
 * each cell's terms to a column, then the columns summed in order. */
BN_SIMD_CLONES
void bn_walk_far_tile(int ns, const double *const src[10], const double centre[3], double eps2,
                      double *const terms[], double *local)
{
    const double cx = centre[0], cy = centre[1], cz = centre[2];
    const double *x = src[0], *y = src[1], *z = src[2], *m = src[3];
    const double *q0 = src[4], *q1 = src[5], *q2 = src[6], *q3 = src[7], *q4 = src[8], *q5 = src[9];
    double *tp[BN_LOCAL_TERMS];
    for (int k = 0; k < BN_LOCAL_TERMS; k++) tp[k] = terms[k];
#pragma omp simd
    for (int j = 0; j < ns; j++) {
        bn_local_d t;
        bn_local_set_d(x[j] - cx, y[j] - cy, z[j] - cz, m[j], q0[j], q1[j], q2[j], q3[j], q4[j], q5[j], eps2, &t);
        int k = 0;
#define STORE_TERM(f) tp[k++][j] = t.f;
        BN_LOCAL_FIELDS(STORE_TERM)
#undef STORE_TERM
    }
    for (int k = 0; k < BN_LOCAL_TERMS; k++) {
        const double *tk = tp[k];
        double sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < ns; j++) sum += tk[j];
        local[k] += sum;
    }
}
