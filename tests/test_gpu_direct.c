/* GPU direct summation (bn_gpu_direct) against double-precision direct
 * summation on fresh random inputs. Skipped (77) without a usable GPU. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BANYAN_HAVE_CUDA
#include <cuda_runtime.h>
#include "gravity/walk_gpu.h"

/* Forces of p from the GPU kernel into p->acc/p->pot; returns the raw
 * float4 output (malloc'd) for bitwise comparisons. */
static float4 *gpu_direct(bn_particles *p, double G, double eps)
{
    const size_t n = p->n;
    float4 *h = malloc(n * sizeof *h), *lo = malloc(n * sizeof *lo), *d_body = NULL, *d_lo = NULL, *d_out = NULL;
    assert_non_null(h);
    assert_non_null(lo);
    for (size_t i = 0; i < n; i++) { /* hi + lo relative to the origin (tree_gpu.h) */
        float x[3], l[3];
        for (int k = 0; k < 3; k++) {
            x[k] = (float)p->pos[k][i];
            l[k] = (float)(p->pos[k][i] - (double)x[k]);
        }
        h[i] = (float4){x[0], x[1], x[2], (float)p->mass[i]};
        lo[i] = (float4){l[0], l[1], l[2], 0.f};
    }
    assert_int_equal(cudaMalloc((void **)&d_body, n * sizeof *h), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&d_lo, n * sizeof *h), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&d_out, n * sizeof *h), cudaSuccess);
    assert_int_equal(cudaMemcpy(d_body, h, n * sizeof *h, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(d_lo, lo, n * sizeof *h, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemset(d_out, 0xff, n * sizeof *h), cudaSuccess); /* NaN: unwritten shows */
    TU_OK(bn_gpu_direct(d_body, d_lo, (int)n, G, eps, 1.0, 1.0, d_out, 0));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d_out, n * sizeof *h, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d_body);
    cudaFree(d_lo);
    cudaFree(d_out);
    free(lo);
    TU_OK(bn_particles_ensure_forces(p));
    for (size_t i = 0; i < n; i++) {
        p->acc[0][i] = h[i].x;
        p->acc[1][i] = h[i].y;
        p->acc[2][i] = h[i].z;
        p->pot[i] = h[i].w;
    }
    return h;
}

static void check_against_double_at(size_t n, uint64_t seed, int shape, double G, double eps, double offset)
{
    bn_particles *p = tu_random_particles(n, seed, shape);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) /* the same system far from the origin */
        for (int k = 0; k < 3; k++) p->pos[k][i] += offset * (k + 1);
    float4 *out = gpu_direct(p, G, eps);
    bn_error_stats st = tu_errors_vs_direct(p, G, eps, n, seed);
    printf("direct n=%zu shape=%d eps=%g offset %g: acc p50 %.2e p99 %.2e max %.2e, pot p50 %.2e p99 %.2e\n", n, shape, eps,
           offset, st.acc_p50, st.acc_p99, st.acc_max, st.pot_p50, st.pot_p99);
    /* float32 inputs and sums: ~1e-7 per operation, grown by cancellation
     * in the differences of nearby positions; a wrong tile, index or self
     * term gives errors of order 1e-3 or more. */
    assert_true(st.acc_p50 < 2e-6);
    assert_true(st.acc_p99 < 5e-5);
    assert_true(st.pot_p50 < 2e-6);
    assert_true(st.pot_p99 < 2e-5);
    /* bit-identical on a second run */
    float4 *again = gpu_direct(p, G, eps);
    assert_memory_equal(out, again, n * sizeof *out);
    free(out);
    free(again);
    bn_particles_free(p);
}

static void check_against_double(size_t n, uint64_t seed, int shape, double G, double eps)
{
    check_against_double_at(n, seed, shape, G, eps, 0.0);
}

/* softened (the guard-free fast path), sizes that are not tile multiples */
static void test_softened(void **state)
{
    (void)state;
    check_against_double(3001, 11, 2, 1.0, 1e-3);
    check_against_double(1000, 12, 1, 0.5, 1e-2);
}

/* The same bars for a system of size ~1 placed 1e4-3e4 and 1e6-3e6
 * from the origin: positions are two floats each (hi + lo), so the
 * separations keep float precision wherever the pair lies. With float
 * positions alone the errors were ~1e-3 and ~1e-1 there. */
static void test_far_from_origin(void **state)
{
    (void)state;
    check_against_double_at(3001, 21, 2, 1.0, 1e-3, 1e4);
    check_against_double_at(2000, 22, 0, 1.0, 0.0, 1e6);
}

/* eps = 0: the r^2 > 0 guard of bn_pp_f removes the self pair */
static void test_unsoftened(void **state)
{
    (void)state;
    check_against_double(2500, 13, 0, 1.0, 0.0);
}

/* one particle: no force, no potential (the self term m/eps is removed
 * to float rounding: FMA contraction may keep the exact product) */
static void test_single(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(1, 5, 0);
    float4 *out = gpu_direct(p, 1.0, 1e-3);
    assert_true(out[0].x == 0.f && out[0].y == 0.f && out[0].z == 0.f);
    assert_true(fabs(out[0].w) <= 1e-6 * p->mass[0] / 1e-3);
    free(out);
    bn_particles_free(p);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    TU_FAILS(bn_gpu_direct(NULL, NULL, -1, 1.0, 1e-3, 1.0, 1.0, NULL, 0), BN_ERR_ARGUMENT, "n = -1");
    TU_FAILS(bn_gpu_direct(NULL, NULL, 10, 1.0, NAN, 1.0, 1.0, NULL, 0), BN_ERR_ARGUMENT, "eps");
    TU_FAILS(bn_gpu_direct(NULL, NULL, 10, 1.0, 1e-3, 0.0, 1.0, NULL, 0), BN_ERR_ARGUMENT, "unit scales");
    TU_FAILS(bn_gpu_direct(NULL, NULL, 10, 1.0, 1e-3, 1.0, 1.0, NULL, 0), BN_ERR_ARGUMENT, "NULL");
    TU_OK(bn_gpu_direct(NULL, NULL, 0, 1.0, 1e-3, 1.0, 1.0, NULL, 0));
}
#endif

TU_GPU_TEST_MAIN(cmocka_unit_test(test_softened), cmocka_unit_test(test_far_from_origin),
                 cmocka_unit_test(test_unsoftened),
                 cmocka_unit_test(test_single),
                 cmocka_unit_test(test_bad_arguments))
