/*
 * Micro-benchmark of the GPU force kernels (a tuning tool, not a test;
 * the reported numbers come from `banyan bench --backend gpu`): the
 * direct-summation kernel's variants and the tree walk on a host-built
 * tree (walk_upload.h), with interaction rates weighted by
 * BN_FLOPS_PP / BN_FLOPS_PC (interact.h) and errors against double direct
 * summation on a random sample.
 *   bench_gpu_kernels [direct=N] [n=N] [model=plummer|hernquist|cube]
 *                     [theta=T1,T2,...] [leaf=16] [group=64] [check=1000] [reps=5]
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "banyan.h"
#include "gravity/interact.h"
#include "gravity/walk_gpu.h"
#include "gravity/walk_upload.h"

#define CK(x)                                                                                  \
    do {                                                                                       \
        if ((x) != 0) {                                                                        \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x, bn_last_error()); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median milliseconds of reps calls of fn (after one warm-up). */
typedef bn_status (*bench_fn)(void *ctx);
static float time_ms(bench_fn fn, void *ctx, int reps)
{
    cudaEvent_t e0, e1;
    float t[64];
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(fn(ctx));
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(e0, 0));
        CK(fn(ctx));
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&t[r], e0, e1));
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_f);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return t[reps / 2];
}

typedef struct direct_ctx {
    float4 *body, *body_lo, *out;
    int n, variant;
    double eps;
} direct_ctx;
static bn_status run_direct(void *c)
{
    direct_ctx *d = c;
    return bn_gpu_direct_variant(d->body, d->body_lo, d->n, 1.0, d->eps, 1.0, 1.0, d->out, 0, d->variant);
}

typedef struct walk_ctx {
    bn_gpu_tree t;
    bn_gravity_params g;
    float4 *out;
    bn_gpu_walk_scratch *s;
    bn_force_stats st;
} walk_ctx;
static bn_status run_walk(void *c)
{
    walk_ctx *w = c;
    return bn_gpu_walk(&w->t, &w->g, w->out, w->s, NULL, 0);
}

static double direct_rate = 0; /* best interactions/s of the direct kernel */

static void bench_direct(int n, int reps)
{
    bn_particles *p = NULL;
    bn_ic_params ic = bn_ic_params_default();
    ic.model = BN_IC_UNIFORM_CUBE;
    ic.n = (size_t)n;
    ic.seed = 7;
    CK(bn_ic_generate(&ic, &p));
    float4 *h = malloc((size_t)n * sizeof *h);
    for (int i = 0; i < n; i++)
        h[i] = (float4){(float)p->pos[0][i], (float)p->pos[1][i], (float)p->pos[2][i], (float)p->mass[i]};
    direct_ctx d = {NULL, NULL, NULL, n, 0, 1e-3};
    CK(cudaMalloc((void **)&d.body, (size_t)n * sizeof *h));
    CK(cudaMalloc((void **)&d.body_lo, (size_t)n * sizeof *h));
    CK(cudaMemset(d.body_lo, 0, (size_t)n * sizeof *h)); /* positions exact in float */
    CK(cudaMalloc((void **)&d.out, (size_t)n * sizeof *h));
    CK(cudaMemcpy(d.body, h, (size_t)n * sizeof *h, cudaMemcpyHostToDevice));
    const char *names[] = {"", "bn_pp_f (guarded)", "bn_pp_soft_f"};
    for (int v = 1; v <= 2; v++) {
        d.variant = v;
        float ms = time_ms(run_direct, &d, reps);
        double rate = (double)n * (double)n / (ms * 1e-3);
        if (rate > direct_rate) direct_rate = rate;
        printf("direct n=%d variant %d (%s): %.3f ms, %.3e interactions/s, %.1f TFLOP/s at %d flop\n", n, v, names[v],
               ms, rate, rate * BN_FLOPS_PP * 1e-12, BN_FLOPS_PP);
    }
    cudaFree(d.body);
    cudaFree(d.body_lo);
    cudaFree(d.out);
    free(h);
    bn_particles_free(p);
}

static void bench_walk(bn_particles *p, bn_gravity_params g, const char *model, int check, int reps)
{
    walk_ctx w;
    int *order = NULL;
    memset(&w, 0, sizeof w);
    w.g = g;
    CK(bn_gpu_tree_from_host(p, &g, NULL, &w.t, &order));
    CK(cudaMalloc((void **)&w.out, p->n * sizeof(float4)));
    CK(bn_gpu_walk_scratch_create(&w.s));
    CK(bn_gpu_walk(&w.t, &g, w.out, w.s, &w.st, 0));
    float ms = time_ms(run_walk, &w, reps);
    const double n = (double)p->n, flop = bn_walk_flops(w.st.n_pp, w.st.n_pc, w.st.n_far, n);
    const double flops = flop / (ms * 1e-3);
    printf("walk %s n=%zu theta=%.2f leaf=%d group=%d: nodes %d groups %d (%.1f/group): %.3f ms, pp %.0f pc %.0f "
           "per particle, %.1f TFLOP/s = %.1f%% of direct (%.2e pp-equivalent/s)\n",
           model, p->n, g.theta, g.leaf_size, g.group_size, w.t.n_nodes, w.t.n_groups, n / w.t.n_groups, ms,
           w.st.n_pp / n, w.st.n_pc / n, flops * 1e-12, direct_rate > 0 ? 100 * flops / (BN_FLOPS_PP * direct_rate) : 0,
           flops / BN_FLOPS_PP);
    if (check > 0) {
        float4 *h = malloc(p->n * sizeof *h);
        CK(cudaMemcpy(h, w.out, p->n * sizeof *h, cudaMemcpyDeviceToHost));
        CK(bn_particles_ensure_forces(p));
        for (size_t j = 0; j < p->n; j++) {
            p->acc[0][order[j]] = h[j].x;
            p->acc[1][order[j]] = h[j].y;
            p->acc[2][order[j]] = h[j].z;
            p->pot[order[j]] = h[j].w;
        }
        size_t *idx = malloc((size_t)check * sizeof *idx);
        double *ref = malloc(3 * (size_t)check * sizeof *ref), *pref = malloc((size_t)check * sizeof *pref);
        double *got = malloc(3 * (size_t)check * sizeof *got), *pgot = malloc((size_t)check * sizeof *pgot);
        for (int s = 0; s < check; s++) {
            idx[s] = (size_t)(((unsigned long long)s * 2654435761ull + 12345ull) % p->n);
            for (int k = 0; k < 3; k++) got[3 * s + k] = p->acc[k][idx[s]];
            pgot[s] = p->pot[idx[s]];
        }
        CK(bn_direct_reference(p, g.G, g.softening, idx, (size_t)check, ref, pref));
        bn_error_stats st;
        CK(bn_error_stats_compute((size_t)check, got, ref, pgot, pref, &st));
        printf("  errors (%d sampled): acc p50 %.2e p90 %.2e p99 %.2e max %.2e; pot p50 %.2e\n", check, st.acc_p50,
               st.acc_p90, st.acc_p99, st.acc_max, st.pot_p50);
        free(idx);
        free(ref);
        free(pref);
        free(got);
        free(pgot);
        free(h);
    }
    bn_gpu_walk_scratch_free(w.s);
    cudaFree(w.out);
    bn_gpu_tree_free_host_built(&w.t);
    free(order);
}

int main(int argc, char **argv)
{
    int direct_n = 1 << 20, reps = 5, check = 1000, leaf = 16, group = 64;
    size_t n = 1 << 20;
    char model[32] = "plummer", thetas[256] = "0.5";
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "direct=", 7)) direct_n = atoi(argv[i] + 7);
        else if (!strncmp(argv[i], "n=", 2)) n = (size_t)atoll(argv[i] + 2);
        else if (!strncmp(argv[i], "model=", 6)) snprintf(model, sizeof model, "%s", argv[i] + 6);
        else if (!strncmp(argv[i], "theta=", 6)) snprintf(thetas, sizeof thetas, "%s", argv[i] + 6);
        else if (!strncmp(argv[i], "leaf=", 5)) leaf = atoi(argv[i] + 5);
        else if (!strncmp(argv[i], "group=", 6)) group = atoi(argv[i] + 6);
        else if (!strncmp(argv[i], "check=", 6)) check = atoi(argv[i] + 6);
        else if (!strncmp(argv[i], "reps=", 5)) reps = atoi(argv[i] + 5);
        else {
            fprintf(stderr, "unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (reps < 1 || reps > 64) reps = 5;
    if (!bn_gpu_available()) {
        fprintf(stderr, "no GPU\n");
        return 77;
    }
    if (direct_n > 0) bench_direct(direct_n, reps);
    if (n == 0) return 0;
    bn_ic_params ic = bn_ic_params_default();
    ic.n = n;
    ic.seed = 3;
    if (!strcmp(model, "cube")) {
        ic.model = BN_IC_UNIFORM_CUBE;
        ic.mass_spread = 1;
    } else if (!strcmp(model, "hernquist")) {
        ic.model = BN_IC_HERNQUIST;
    } else {
        ic.model = BN_IC_PLUMMER;
    }
    bn_particles *p = NULL;
    CK(bn_ic_generate(&ic, &p));
    bn_gravity_params g = bn_gravity_params_default();
    g.leaf_size = leaf;
    g.group_size = group;
    for (char *tok = strtok(thetas, ","); tok; tok = strtok(NULL, ",")) {
        g.theta = atof(tok);
        bench_walk(p, g, model, check, reps);
        fflush(stdout);
    }
    bn_particles_free(p);
    return 0;
}
