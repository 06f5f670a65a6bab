/* The field solver on the GPU against the CPU backend (the same stages in
 * double) and against double direct summation: gravity on the MacLaurin
 * spheroid, vorticity on the vortex rings (singular and smoothed
 * kernels), mesh and particles together, arbitrary points; bit-identical
 * repeats. Skipped (77) without a usable GPU. */
#include <stdlib.h>
#include <string.h>
#include "mesh/field_internal.h"
#include "testutil.h"


/* The mesh's output variables after a solve on `backend`, copied. */
static double *solve(bn_mesh *m, bn_field_params p, bn_backend backend, const bn_particles *extra, int *nv)
{
    p.backend = backend;
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, &p));
    TU_OK(bn_field_mesh(f, m, extra));
    const bn_field_stats *st = bn_field_stats_get(f);
    print_message("%s: %zu sources, %zu targets: tree %.4f s, moments %.4f s, lists and evaluation %.4f s, total %.4f "
                  "s; pp %.0f pc %.0f per target\n", st->backend, st->n_sources, st->n_targets, st->t_tree,
                  st->t_moments, st->t_walk, st->t_total, st->n_pp / (double)st->n_targets,
                  st->n_pc / (double)st->n_targets);
    bn_field_free(f);
    static const char *const names[2][6] = {{"gpot", "gacx", "gacy", "gacz", "", ""},
                                            {"psix", "psiy", "psiz", "velx", "vely", "velz"}};
    const int vort = p.kind == BN_FIELD_VORTICITY;
    *nv = vort ? 6 : 4;
    const size_t n = bn_mesh_cells(m);
    double *out = malloc((size_t)*nv * n * sizeof *out);
    for (int k = 0; k < *nv; k++) memcpy(out + (size_t)k * n, m->var[bn_mesh_var_index(m, names[vort][k])], n * sizeof *out);
    return out;
}

/* Largest difference of GPU and CPU values: potentials relative to their
 * largest, the vectors relative to their largest magnitude. */
static void compare(const double *gpu, const double *cpu, size_t n, int nv, double *dpot, double *dvec)
{
    const int np = nv == 4 ? 1 : 3;
    double pmax = 0, vmax = 0, ep = 0, ev = 0;
    for (size_t i = 0; i < n; i++) {
        double p2 = 0, v2 = 0, dp2 = 0, dv2 = 0;
        for (int k = 0; k < nv; k++) {
            const double a = gpu[(size_t)k * n + i], b = cpu[(size_t)k * n + i];
            if (k < np) {
                p2 += b * b;
                dp2 += (a - b) * (a - b);
            } else {
                v2 += b * b;
                dv2 += (a - b) * (a - b);
            }
        }
        pmax = fmax(pmax, sqrt(p2));
        vmax = fmax(vmax, sqrt(v2));
        ep = fmax(ep, sqrt(dp2));
        ev = fmax(ev, sqrt(dv2));
    }
    *dpot = ep / pmax;
    *dvec = ev / vmax;
}

static void test_gravity_gpu_against_cpu(void **state)
{
    (void)state;
    tu_require_gpu();
    bn_mesh *m = tu_mesh(BN_MESH_MACLAURIN, 5, 8);
    for (int t = 0; t < 2; t++) {
        bn_field_params p = bn_field_params_default(BN_FIELD_GRAVITY);
        p.theta = t == 0 ? 0.5 : 0.8; /* theta 0 (65216 sources on each of 262144 cells) takes 25 s on the CPU */
        int nv;
        double *cpu = solve(m, p, BN_BACKEND_CPU, NULL, &nv), *gpu = solve(m, p, BN_BACKEND_GPU, NULL, &nv);
        double dp, dv;
        compare(gpu, cpu, bn_mesh_cells(m), nv, &dp, &dv);
        print_message("MacLaurin, %zu cells, theta %.1f: GPU - CPU: potential %.2e, acceleration %.2e (of the largest)\n",
                      bn_mesh_cells(m), p.theta, dp, dv);
        assert_true(dp < 3e-5 && dv < 3e-5); /* float sums against double ones */
        free(cpu);
        free(gpu);
    }
    bn_mesh_free(m);
}

static void test_vorticity_gpu_against_cpu(void **state)
{
    (void)state;
    tu_require_gpu();
    bn_mesh *m = tu_mesh(BN_MESH_VORTEX_RINGS, 4, 8);
    for (int smooth = 0; smooth < 2; smooth++) {
        bn_field_params p = bn_field_params_default(BN_FIELD_VORTICITY);
        p.theta = 0.4;
        p.smoothing = smooth ? 1.0 : 0.0;
        int nv;
        double *cpu = solve(m, p, BN_BACKEND_CPU, NULL, &nv), *gpu = solve(m, p, BN_BACKEND_GPU, NULL, &nv);
        double dp, dv;
        compare(gpu, cpu, bn_mesh_cells(m), nv, &dp, &dv);
        print_message("rings, %zu cells, %s: GPU - CPU: psi %.2e, velocity %.2e (of the largest)\n", bn_mesh_cells(m),
                      smooth ? "smoothed kernel" : "exact cubes", dp, dv);
        assert_true(dp < 2e-5 && dv < 2e-4);
        free(cpu);
        free(gpu);
    }
    bn_mesh_free(m);
}

/* A part of the blocks (the ranks' path, field_dist.c) on the GPU: every
 * third block, last first, gravity and vorticity with velocities: the
 * values of the whole mesh's solve at those blocks, bit for bit (each
 * rank builds the same tree over every source); a part of no blocks
 * writes nothing; a block beyond the mesh is refused. */
static void test_mesh_part_gpu(void **state)
{
    (void)state;
    tu_require_gpu();
    for (int vort = 0; vort < 2; vort++) {
        bn_mesh *m = vort ? tu_mesh(BN_MESH_VORTEX_RINGS, 4, 8) : tu_mesh(BN_MESH_MACLAURIN, 4, 8);
        bn_field_params p = bn_field_params_default(vort ? BN_FIELD_VORTICITY : BN_FIELD_GRAVITY);
        p.backend = BN_BACKEND_GPU;
        p.velocity = vort;
        int nv;
        double *whole = solve(m, p, BN_BACKEND_GPU, NULL, &nv);
        const size_t n = bn_mesh_cells(m), bc = bn_mesh_block_cells(m), nb = m->n_blocks;
        size_t *blocks = malloc(nb * sizeof *blocks), nsel = 0;
        for (size_t b = nb; b-- > 0;)
            if (b % 3 == 1) blocks[nsel++] = b;
        double *part = malloc(nsel * bc * (size_t)nv * sizeof *part);
        bn_field *f = NULL;
        TU_OK(bn_field_create(&f, &p));
        TU_OK(bn_field_mesh_blocks(f, m, NULL, blocks, nsel, part));
        size_t differ = 0;
        for (size_t j = 0; j < nsel; j++)
            for (size_t c = 0; c < bc; c++)
                for (int k = 0; k < nv; k++)
                    differ += part[(j * bc + c) * (size_t)nv + (size_t)k] != whole[(size_t)k * n + blocks[j] * bc + c];
        print_message("%s: %zu of %zu blocks on the GPU: %zu values differ from the whole mesh's\n",
                      vort ? "rings" : "MacLaurin", nsel, nb, differ);
        assert_true(differ == 0);
        TU_OK(bn_field_mesh_blocks(f, m, NULL, blocks, 0, part));
        blocks[0] = nb;
        TU_FAILS(bn_field_mesh_blocks(f, m, NULL, blocks, 1, part), BN_ERR_ARGUMENT, "block");
        bn_field_free(f);
        free(part);
        free(blocks);
        free(whole);
        bn_mesh_free(m);
    }
}

/* Mesh and particles at arbitrary points: the GPU's tree against the
 * CPU's (the same tree: float rounding only) and both against double
 * direct summation; two GPU runs bit for bit. */
static void points_errors(const double *a, const double *ref, size_t n, double *ep, double *ea)
{
    *ep = *ea = 0;
    for (size_t i = 0; i < n; i++) {
        *ep = fmax(*ep, fabs(a[4 * i] - ref[4 * i]) / fabs(ref[4 * i]));
        double d2 = 0, r2 = 0;
        for (int k = 1; k < 4; k++) {
            d2 += pow(a[4 * i + k] - ref[4 * i + k], 2);
            r2 += ref[4 * i + k] * ref[4 * i + k];
        }
        *ea = fmax(*ea, sqrt(d2 / r2));
    }
}

static void test_points_particles_repeat(void **state)
{
    (void)state;
    tu_require_gpu();
    bn_mesh *m = tu_mesh(BN_MESH_SPHERE, 4, 16);
    bn_particles *stars = tu_random_particles(2000, 5, 1);
    for (size_t i = 0; i < stars->n; i++)
        for (int k = 0; k < 3; k++) stars->pos[k][i] = 0.5 + 0.1 * stars->pos[k][i];
    bn_field_params p = bn_field_params_default(BN_FIELD_GRAVITY);
    p.theta = 0.3;
    const size_t n = 3000;
    double *pos = malloc(3 * n * sizeof *pos), *a = malloc(4 * n * sizeof *a), *b = malloc(4 * n * sizeof *b),
           *c = malloc(4 * n * sizeof *c), *ref = malloc(4 * n * sizeof *ref);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) pos[3 * i + k] = 0.02 + 0.96 * (double)((i * 7919 + (size_t)k * 104729) % 1000) / 1000.0;
    bn_field *f = NULL;
    p.backend = BN_BACKEND_GPU;
    TU_OK(bn_field_create(&f, &p));
    TU_OK(bn_field_points(f, m, stars, n, pos, a));
    TU_OK(bn_field_points(f, m, stars, n, pos, b));
    assert_memory_equal(a, b, 4 * n * sizeof *a);
    bn_field_free(f);
    p.backend = BN_BACKEND_CPU;
    TU_OK(bn_field_create(&f, &p));
    TU_OK(bn_field_points(f, m, stars, n, pos, c));
    bn_field_free(f);
    TU_OK(bn_field_direct(&p, m, stars, n, pos, ref));
    double gp, ga, cp, ca, dp, da;
    points_errors(a, ref, n, &gp, &ga);
    points_errors(c, ref, n, &cp, &ca);
    points_errors(a, c, n, &dp, &da);
    print_message("sphere + 2000 particles at 3000 points, theta 0.3, against direct: GPU potential %.2e acceleration "
                  "%.2e, CPU %.2e %.2e; GPU against CPU %.2e %.2e\n", gp, ga, cp, ca, dp, da);
    assert_true(dp < 1e-4 && da < 1e-4); /* float near unsoftened particles */
    assert_true(cp < 2e-3 && ca < 1e-2);
    free(pos);
    free(a);
    free(b);
    free(c);
    free(ref);
    bn_particles_free(stars);
    bn_mesh_free(m);
}

/* The FFT solver: cuFFT against FFTW, both double. */
static void test_fft_gpu_against_cpu(void **state)
{
    (void)state;
    tu_require_gpu();
    for (int rings = 0; rings < 2; rings++) {
        bn_mesh_ic_params ip = bn_mesh_ic_params_default(rings ? BN_MESH_VORTEX_RINGS : BN_MESH_MACLAURIN);
        ip.max_level = ip.min_level = 4;
        ip.block = 16;
        bn_mesh *m = NULL;
        TU_OK(bn_mesh_ic_generate(&ip, &m));
        bn_field_params p = bn_field_params_default(rings ? BN_FIELD_VORTICITY : BN_FIELD_GRAVITY);
        p.method = BN_FIELD_FFT;
        int nv;
        double *cpu = solve(m, p, BN_BACKEND_CPU, NULL, &nv), *gpu = solve(m, p, BN_BACKEND_GPU, NULL, &nv);
        double dp, dv;
        compare(gpu, cpu, bn_mesh_cells(m), nv, &dp, &dv);
        print_message("%s, FFT on 128^3: cuFFT - FFTW: potential %.2e, vector %.2e (of the largest)\n",
                      rings ? "rings" : "MacLaurin", dp, dv);
        assert_true(dp < 1e-12 && dv < 1e-11);
        free(cpu);
        free(gpu);
        bn_mesh_free(m);
    }
}

/* Bad values are found on the device and named as the CPU names them. */
static void test_bad_values_on_the_gpu(void **state)
{
    (void)state;
    tu_require_gpu();
    bn_mesh *m = tu_mesh(BN_MESH_SPHERE, 3, 8);
    bn_field_params p = bn_field_params_default(BN_FIELD_GRAVITY);
    p.backend = BN_BACKEND_GPU;
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, &p));
    const int d = bn_mesh_var_index(m, "dens");
    m->var[d][bn_mesh_block_cells(m) * 5 + 7] = -2.0;
    m->var[d][bn_mesh_block_cells(m) * 9 + 1] = NAN;
    TU_FAILS(bn_field_mesh(f, m, NULL), BN_ERR_ARGUMENT, "variable dens of block 5, cell 7, is -2: a density must be >= 0");
    m->var[d][bn_mesh_block_cells(m) * 5 + 7] = 0.0;
    TU_FAILS(bn_field_mesh(f, m, NULL), BN_ERR_ARGUMENT, "variable dens of block 9, cell 1, is nan (must be finite)");
    m->var[d][bn_mesh_block_cells(m) * 9 + 1] = 1e308; /* a strength x volume that is finite, a field that is not */
    p.G = 1e299;
    bn_field_free(f);
    TU_OK(bn_field_create(&f, &p));
    TU_FAILS(bn_field_mesh(f, m, NULL), BN_ERR_ARGUMENT, "is not finite");
    bn_field_free(f);
    bn_mesh_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gravity_gpu_against_cpu),
        cmocka_unit_test(test_vorticity_gpu_against_cpu),
        cmocka_unit_test(test_points_particles_repeat),
        cmocka_unit_test(test_fft_gpu_against_cpu),
        cmocka_unit_test(test_bad_values_on_the_gpu),
        cmocka_unit_test(test_mesh_part_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
