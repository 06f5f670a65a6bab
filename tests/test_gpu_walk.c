/* The GPU tree walk (bn_gpu_walk) on a host-built device tree
 * (walk_upload.h), against double-precision direct summation on fresh
 * random inputs, with the error bars of the CPU tree (issue 3).
 * Skipped (77) without a usable GPU. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BANYAN_HAVE_CUDA
#include <cuda_runtime.h>
#include "gravity/walk_gpu.h"
#include "gravity/walk_upload.h"

typedef struct walk_result {
    float4 *out; /* key order, as the kernel wrote it */
    double n_pp, n_pc, n_far;
} walk_result;

static bn_gravity_params params(double theta, double eps)
{
    bn_gravity_params g = bn_gravity_params_default();
    g.theta = theta;
    g.softening = eps;
    return g;
}

/* Walk p with g; forces into p->acc / p->pot (original order). */
static walk_result gpu_walk(bn_particles *p, const bn_gravity_params *g, const double *amag)
{
    bn_gpu_tree t;
    int *order = NULL;
    TU_OK(bn_gpu_tree_from_host(p, g, amag, &t, &order));
    const size_t n = p->n;
    walk_result r = {malloc(n * sizeof(float4)), 0, 0, 0};
    assert_non_null(r.out);
    float4 *d_out = NULL;
    bn_gpu_walk_scratch *s = NULL;
    assert_int_equal(cudaMalloc((void **)&d_out, n * sizeof(float4)), cudaSuccess);
    assert_int_equal(cudaMemset(d_out, 0xff, n * sizeof(float4)), cudaSuccess); /* NaN: unwritten shows */
    TU_OK(bn_gpu_walk_scratch_create(&s));
    bn_force_stats st;
    TU_OK(bn_gpu_walk(&t, g, d_out, s, &st, 0));
    r.n_pp = st.n_pp;
    r.n_pc = st.n_pc;
    r.n_far = st.n_far;
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaMemcpy(r.out, d_out, n * sizeof(float4), cudaMemcpyDeviceToHost), cudaSuccess);
    bn_gpu_walk_scratch_free(s);
    cudaFree(d_out);
    bn_gpu_tree_free_host_built(&t);
    TU_OK(bn_particles_ensure_forces(p));
    for (size_t j = 0; j < n; j++) {
        const int i = order[j];
        p->acc[0][i] = r.out[j].x;
        p->acc[1][i] = r.out[j].y;
        p->acc[2][i] = r.out[j].z;
        p->pot[i] = r.out[j].w;
    }
    free(order);
    return r;
}

static bn_error_stats walk_errors(bn_particles *p, const bn_gravity_params *g, const char *what, walk_result *keep)
{
    walk_result r = gpu_walk(p, g, NULL);
    bn_error_stats st = tu_errors_vs_direct(p, g->G, g->softening, 1000, 99);
    printf("%s: n=%zu theta=%.2f: acc p50 %.2e p99 %.2e max %.2e pot p50 %.2e; pp/particle %.0f pc/particle %.0f "
           "far cells %.0f\n",
           what, p->n, g->theta, st.acc_p50, st.acc_p99, st.acc_max, st.pot_p50, r.n_pp / (double)p->n,
           r.n_pc / (double)p->n, r.n_far);
    if (keep)
        *keep = r;
    else
        free(r.out);
    return st;
}

/* issue 3's bars: Plummer, eps = 1e-3, N = 2^16, bonsai criterion */
static void test_plummer_bars(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(1 << 16, 21, 2);
    bn_gravity_params g = params(0.5, 1e-3);
    bn_error_stats st = walk_errors(p, &g, "plummer", NULL);
    assert_true(st.acc_p50 <= 2e-4 && st.acc_p99 <= 2e-3);
    g.theta = 0.75;
    st = walk_errors(p, &g, "plummer", NULL);
    assert_true(st.acc_p50 <= 1e-3 && st.acc_p99 <= 1e-2);
    bn_particles_free(p);
}

/* The group expansion (default on) against the plain walk on the same
 * tree: the same particle-particle work, far fewer particle-cell
 * interactions, errors against direct summation within a few percent. */
static void test_group_expansion(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(1 << 16, 27, 2);
    bn_gravity_params g = params(0.65, 1e-3);
    walk_result a, b;
    const bn_error_stats e = walk_errors(p, &g, "expansion 0.2", &a);
    g.group_expansion = 0;
    const bn_error_stats e0 = walk_errors(p, &g, "plain", &b);
    assert_true(a.n_far > 0 && b.n_far == 0);
    assert_true(a.n_pp == b.n_pp && a.n_pc < 0.6 * b.n_pc);
    assert_true(e.acc_p50 <= 1.1 * e0.acc_p50 && e.acc_p99 <= 1.2 * e0.acc_p99);
    free(a.out);
    free(b.out);
    bn_particles_free(p);
}

/* uniform cube, no softening (the r^2 > 0 guard path), Morton keys,
 * groups larger than 64 (walked in chunks) and small leaves */
static void test_cube_unsoftened_chunks(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(20000, 22, 0);
    bn_gravity_params g = params(0.5, 0.0);
    g.curve = BN_CURVE_MORTON;
    g.group_size = 200;
    g.leaf_size = 8;
    bn_error_stats st = walk_errors(p, &g, "cube eps=0 groups<=200", NULL);
    assert_true(st.acc_p50 <= 2e-4 && st.acc_p99 <= 2e-3);
    bn_particles_free(p);
}

/* theta = 0 opens every cell: the walk is float direct summation, and
 * counts exactly N^2 particle-particle interactions (self included). */
static void test_open_everything(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(5000, 23, 1);
    bn_gravity_params g = params(0.0, 1e-3);
    walk_result r;
    bn_error_stats st = walk_errors(p, &g, "theta=0", &r);
    assert_true(st.acc_p50 < 2e-6 && st.acc_p99 < 5e-5);
    assert_true(st.pot_p50 < 2e-6);
    assert_true(r.n_pp == 5000.0 * 5000.0);
    assert_true(r.n_pc == 0.0);
    free(r.out);
    bn_particles_free(p);
}

/* same input, same output, to the bit */
static void test_deterministic(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(30000, 24, 2);
    bn_gravity_params g = params(0.6, 1e-3);
    walk_result a = gpu_walk(p, &g, NULL), b = gpu_walk(p, &g, NULL);
    assert_memory_equal(a.out, b.out, p->n * sizeof(float4));
    assert_true(a.n_pp == b.n_pp && a.n_pc == b.n_pc && a.n_far == b.n_far && a.n_far > 0);
    free(a.out);
    free(b.out);
    bn_particles_free(p);
}

/* monopole only: still converges, errors a few times the quadrupole's */
static void test_monopole(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(1 << 15, 25, 2);
    bn_gravity_params g = params(0.5, 1e-3);
    g.quadrupole = 0;
    bn_error_stats st = walk_errors(p, &g, "monopole", NULL);
    assert_true(st.acc_p50 <= 1e-3 && st.acc_p99 <= 1e-2);
    bn_particles_free(p);
}

/* accel criterion, |a_old| from a first (bonsai) evaluation */
static void test_accel_mac(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(1 << 15, 26, 2);
    bn_gravity_params g = params(0.5, 1e-3);
    walk_result r = gpu_walk(p, &g, NULL);
    free(r.out);
    double *amag = malloc(p->n * sizeof *amag);
    for (size_t i = 0; i < p->n; i++)
        amag[i] = sqrt(p->acc[0][i] * p->acc[0][i] + p->acc[1][i] * p->acc[1][i] + p->acc[2][i] * p->acc[2][i]);
    g.mac = BN_MAC_ACCEL;
    g.accel_alpha = 1e-3;
    r = gpu_walk(p, &g, amag);
    bn_error_stats st = tu_errors_vs_direct(p, g.G, g.softening, 1000, 98);
    printf("accel alpha=%g: acc p50 %.2e p99 %.2e; pp/particle %.0f pc/particle %.0f\n", g.accel_alpha, st.acc_p50,
           st.acc_p99, r.n_pp / (double)p->n, r.n_pc / (double)p->n);
    assert_true(st.acc_p50 <= 1e-3 && st.acc_p99 <= 1e-2);
    free(r.out);
    free(amag);
    bn_particles_free(p);
}

/* The particles' measured costs (bn_gpu_active.cost, the domains'
 * weights): without the group expansion their sum is the walk's flops,
 * 23 n_pp + 65 n_pc (within float sums: 1e-4); with it the far cells'
 * 180 each and at most 95 per particle more. Costs land at the uploaded
 * index (orig), every particle's positive, a group's particles alike. */
static void test_costs(void **state)
{
    (void)state;
    bn_particles *p = tu_model(BN_IC_PLUMMER, 1 << 15, 28);
    const size_t n = p->n;
    for (int expand = 0; expand < 2; expand++) {
        bn_gravity_params g = params(0.6, 1e-3);
        g.group_expansion = expand ? 0.2 : 0.0;
        bn_gpu_tree t;
        int *order = NULL;
        TU_OK(bn_gpu_tree_from_host(p, &g, NULL, &t, &order));
        float4 *d_out = NULL;
        float *d_cost = NULL, *cost = malloc(n * sizeof *cost);
        int *d_orig = NULL;
        bn_gpu_walk_scratch *s = NULL;
        assert_int_equal(cudaMalloc((void **)&d_out, n * sizeof(float4)), cudaSuccess);
        assert_int_equal(cudaMalloc((void **)&d_cost, n * sizeof(float)), cudaSuccess);
        assert_int_equal(cudaMemset(d_cost, 0, n * sizeof(float)), cudaSuccess);
        assert_int_equal(cudaMalloc((void **)&d_orig, n * sizeof(int)), cudaSuccess);
        assert_int_equal(cudaMemcpy(d_orig, order, n * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
        TU_OK(bn_gpu_walk_scratch_create(&s));
        const bn_gpu_active act = {.cost = d_cost, .orig = d_orig};
        bn_force_stats st;
        TU_OK(bn_gpu_walk_active(&t, &g, &act, d_out, s, &st, 0));
        assert_int_equal(cudaMemcpy(cost, d_cost, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
        double sum = 0, least = INFINITY;
        for (size_t i = 0; i < n; i++) {
            sum += cost[i];
            least = fmin(least, cost[i]);
        }
        const double lists = 23 * st.n_pp + 65 * st.n_pc, far = 180 * st.n_far;
        printf("costs, expansion %d: sum %.6e, lists %.6e, far %.6e, least %.0f\n", expand, sum, lists, far, least);
        assert_true(least > 0);
        if (expand)
            assert_true(st.n_far > 0 && sum >= (lists + far) * (1 - 1e-4) &&
                        sum <= (lists + far + 95.0 * (double)n) * (1 + 1e-4));
        else
            assert_true(fabs(sum - lists) <= 1e-4 * lists);
        bn_gpu_walk_scratch_free(s);
        cudaFree(d_out);
        cudaFree(d_cost);
        cudaFree(d_orig);
        bn_gpu_tree_free_host_built(&t);
        free(order);
        free(cost);
    }
    bn_particles_free(p);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    bn_gravity_params g = params(0.5, 1e-3);
    TU_FAILS(bn_gpu_walk(NULL, &g, NULL, NULL, NULL, 0), BN_ERR_ARGUMENT, "NULL");
}
#endif

TU_GPU_TEST_MAIN(cmocka_unit_test(test_plummer_bars),
                 cmocka_unit_test(test_group_expansion),
                 cmocka_unit_test(test_cube_unsoftened_chunks),
                 cmocka_unit_test(test_open_everything),
                 cmocka_unit_test(test_deterministic),
                 cmocka_unit_test(test_monopole),
                 cmocka_unit_test(test_accel_mac),
                 cmocka_unit_test(test_costs),
                 cmocka_unit_test(test_bad_arguments))
