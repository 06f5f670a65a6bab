/* Potentials of fields on AMR meshes, CPU backend: the exact cube kernel
 * against quadrature, the MacLaurin formula in the sphere limit and
 * against direct summation, the tree against double direct summation
 * over the same cells, the discretisation against the exact solutions
 * (sphere, MacLaurin spheroid at several theta as FLASH's fig. 9, paper
 * 002's vortex rings), particles as extra sources, and bad input. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "../src/gravity/box_kernel.h"

/* ---- helpers ---------------------------------------------------------------- */


static bn_field_params cpu_params(bn_field_kind kind, double theta)
{
    bn_field_params p = bn_field_params_default(kind);
    p.backend = BN_BACKEND_CPU;
    p.theta = theta;
    return p;
}

static void solve_mesh(bn_mesh *m, const bn_field_params *p)
{
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, p));
    TU_OK(bn_field_mesh(f, m, NULL));
    bn_field_free(f);
}

static void cell_centre(const bn_mesh *m, size_t cell, double x[3])
{
    const size_t bc = bn_mesh_block_cells(m), b = cell / bc, c = cell % bc;
    bn_mesh_cell(m, b, (int)(c % (size_t)m->nb[0]), (int)(c / (size_t)m->nb[0] % (size_t)m->nb[1]),
                 (int)(c / ((size_t)m->nb[0] * (size_t)m->nb[1])), x, NULL);
}

/* Largest errors of the mesh's solution (gpot, gac* or psi*, vel*)
 * against the exact one: pot: max |phi - phi_ex| / |phi_ex| (gravity) or
 * max |psi - psi_ex| / max |psi_ex| (rings); acc: max |g - g_ex| / max
 * |g_ex| (the vectors). */
static void errors_vs_exact(const bn_mesh *m, const bn_mesh_ic_params *ip, double *pot, double *acc)
{
    const int rings = ip->problem == BN_MESH_VORTEX_RINGS;
    static const char *const names[2][6] = {{"gpot", "gacx", "gacy", "gacz", "", ""},
                                            {"psix", "psiy", "psiz", "velx", "vely", "velz"}};
    int v[6];
    for (int k = 0; k < (rings ? 6 : 4); k++) assert_true((v[k] = bn_mesh_var_index(m, names[rings][k])) >= 0);
    double ep = 0, ea = 0, pmax = 0, amax = 0;
    for (size_t c = 0; c < bn_mesh_cells(m); c++) {
        double x[3], ex[6];
        cell_centre(m, c, x);
        TU_OK(bn_mesh_ic_exact(ip, x, ex, NULL));
        double dp2 = 0, p2 = 0, da2 = 0, a2 = 0;
        const int np = rings ? 3 : 1;
        for (int k = 0; k < np; k++) {
            dp2 += pow(m->var[v[k]][c] - ex[k], 2);
            p2 += ex[k] * ex[k];
        }
        for (int k = 0; k < 3; k++) {
            da2 += pow(m->var[v[np + k]][c] - ex[np + k], 2);
            a2 += ex[np + k] * ex[np + k];
        }
        ep = fmax(ep, rings ? sqrt(dp2) : sqrt(dp2 / p2));
        pmax = fmax(pmax, sqrt(p2));
        ea = fmax(ea, sqrt(da2));
        amax = fmax(amax, sqrt(a2));
    }
    *pot = rings ? ep / pmax : ep;
    *acc = ea / amax;
}

/* Tree (the mesh's values) against bn_field_direct on every k-th cell:
 * p99 and max of the relative potential and acceleration errors. */
static void tree_vs_direct(const bn_mesh *m, const bn_field_params *p, size_t every, double out[4])
{
    const int nv = bn_field_point_values(p), rings = p->kind == BN_FIELD_VORTICITY;
    static const char *const names[2][6] = {{"gpot", "gacx", "gacy", "gacz", "", ""},
                                            {"psix", "psiy", "psiz", "velx", "vely", "velz"}};
    const size_t n = bn_mesh_cells(m) / every;
    double *pos = malloc(3 * n * sizeof *pos), *ref = malloc((size_t)nv * n * sizeof *ref);
    double *ep = malloc(n * sizeof *ep), *ea = malloc(n * sizeof *ea), scale_p = 0, scale_a = 0;
    for (size_t i = 0; i < n; i++) cell_centre(m, i * every, pos + 3 * i);
    TU_OK(bn_field_direct(p, m, NULL, n, pos, ref));
    for (size_t i = 0; i < n; i++) {
        const double *r = ref + (size_t)nv * i;
        for (int k = 0; k < (rings ? 3 : 1); k++) scale_p = fmax(scale_p, fabs(r[k]));
        for (int k = 0; k < 3; k++) scale_a = fmax(scale_a, fabs(r[(rings ? 3 : 1) + k]));
    }
    for (size_t i = 0; i < n; i++) {
        const double *r = ref + (size_t)nv * i;
        double dp = 0, p2 = 0, da = 0, a2 = 0;
        for (int k = 0; k < nv; k++) {
            const double got = m->var[bn_mesh_var_index(m, names[rings][k])][i * every];
            const int is_pot = k < (rings ? 3 : 1);
            *(is_pot ? &dp : &da) += (got - r[k]) * (got - r[k]);
            *(is_pot ? &p2 : &a2) += r[k] * r[k];
        }
        /* gravity: relative per cell; rings: relative to the largest value */
        ep[i] = rings ? sqrt(dp) / scale_p : sqrt(dp / p2);
        ea[i] = rings ? sqrt(da) / scale_a : sqrt(da / a2);
    }
    for (int w = 0; w < 2; w++) {
        double *e = w ? ea : ep;
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && e[j - 1] > e[j]; j--) {
                const double t = e[j];
                e[j] = e[j - 1];
                e[j - 1] = t;
            }
        out[2 * w] = e[(size_t)(0.99 * (double)n)];
        out[2 * w + 1] = e[n - 1];
    }
    free(pos);
    free(ref);
    free(ep);
    free(ea);
}

/* The sanitizer build runs smaller meshes (CMake defines BANYAN_SANITIZED). */
static int sanitized(void)
{
#ifdef BANYAN_SANITIZED
    return 1;
#else
    return 0;
#endif
}

/* ---- the exact cube --------------------------------------------------------- */

static void test_box_kernel(void **state)
{
    (void)state;
    static const double gx[8] = {-0.9602898564975363, -0.7966664774136267, -0.5255324099163290, -0.1834346424956498,
                                 0.1834346424956498,  0.5255324099163290,  0.7966664774136267,  0.9602898564975363};
    static const double gw[8] = {0.1012285362903763, 0.2223810344533745, 0.3137066458778873, 0.3626837833783620,
                                 0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763};
    const double cases[3][6] = {{1.3, -0.4, 0.7, 1, 0.8, 1.2}, {1.05, 0.2, -0.1, 1, 1, 1}, {4.0, 3.0, -2.0, 0.5, 2, 1}};
    for (int t = 0; t < 3; t++) {
        const double *d = cases[t], *h = cases[t] + 3;
        double V = 0, g[3] = {0, 0, 0};
        const int S = 12;
        for (int a = 0; a < S * 8; a++)
            for (int b = 0; b < S * 8; b++)
                for (int c = 0; c < S * 8; c++) {
                    const double x = d[0] - h[0] / 2 + h[0] * (a / 8 + 0.5 + 0.5 * gx[a % 8]) / S;
                    const double y = d[1] - h[1] / 2 + h[1] * (b / 8 + 0.5 + 0.5 * gx[b % 8]) / S;
                    const double z = d[2] - h[2] / 2 + h[2] * (c / 8 + 0.5 + 0.5 * gx[c % 8]) / S;
                    const double w = gw[a % 8] * gw[b % 8] * gw[c % 8] / 8 * h[0] * h[1] * h[2] / (S * S * S);
                    const double r = sqrt(x * x + y * y + z * z);
                    V += w / r;
                    g[0] += w * x / (r * r * r);
                    g[1] += w * y / (r * r * r);
                    g[2] += w * z / (r * r * r);
                }
        double phi = 0, G[3] = {0, 0, 0};
        bn_box_field_at(d, h, &phi, G);
        TU_NEAR(-phi, V, 1e-10);
        for (int k = 0; k < 3; k++) TU_NEAR(G[k], g[k], 1e-9);
    }
    /* the centre of a unit cube: V = 2.3800773640 (MacMillan), no field */
    const double zero[3] = {0, 0, 0}, unit[3] = {1, 1, 1};
    double phi = 0, G[3] = {0, 0, 0};
    bn_box_field_at(zero, unit, &phi, G);
    TU_NEAR(-phi, 2.380077364, 1e-9);
    for (int k = 0; k < 3; k++) assert_true(fabs(G[k]) < 1e-14);
}

/* ---- the exact solutions ------------------------------------------------------ */

static void test_maclaurin_formula(void **state)
{
    (void)state;
    bn_mesh_ic_params mac = bn_mesh_ic_params_default(BN_MESH_MACLAURIN), sph = bn_mesh_ic_params_default(BN_MESH_SPHERE);
    mac.eccentricity = 1e-3; /* the sphere limit, inside and outside */
    const double pts[4][3] = {{0.5, 0.5, 0.5}, {0.6, 0.55, 0.42}, {0.9, 0.3, 0.5}, {0.1, 0.95, 0.8}};
    for (int i = 0; i < 4; i++) {
        double a[4], b[4];
        TU_OK(bn_mesh_ic_exact(&mac, pts[i], a, NULL));
        TU_OK(bn_mesh_ic_exact(&sph, pts[i], b, NULL));
        TU_NEAR(a[0], b[0], 2e-6);
        for (int k = 1; k < 4; k++) assert_true(fabs(a[k] - b[k]) < 2e-6 * fabs(b[0]));
    }
    /* g = -grad phi, by finite differences of phi, inside and outside */
    mac.eccentricity = 0.9;
    for (int i = 1; i < 4; i++) {
        double a[4];
        TU_OK(bn_mesh_ic_exact(&mac, pts[i], a, NULL));
        for (int k = 0; k < 3; k++) {
            double xp[3] = {pts[i][0], pts[i][1], pts[i][2]}, xm[3] = {pts[i][0], pts[i][1], pts[i][2]}, fp[4], fm[4];
            xp[k] += 1e-5;
            xm[k] -= 1e-5;
            TU_OK(bn_mesh_ic_exact(&mac, xp, fp, NULL));
            TU_OK(bn_mesh_ic_exact(&mac, xm, fm, NULL));
            assert_true(fabs(-(fp[0] - fm[0]) / 2e-5 - a[1 + k]) < 1e-7 * fabs(a[0]) / 0.25);
        }
    }
    /* against direct summation over the cells of a refined spheroid */
    bn_mesh *m = tu_mesh(BN_MESH_MACLAURIN, sanitized() ? 4 : 5, 8);
    bn_field_params p = cpu_params(BN_FIELD_GRAVITY, 0);
    double ref[16];
    TU_OK(bn_field_direct(&p, m, NULL, 4, &pts[0][0], ref));
    for (int i = 0; i < 4; i++) {
        double a[4];
        TU_OK(bn_mesh_ic_exact(&mac, pts[i], a, NULL));
        print_message("MacLaurin at (%g, %g, %g): exact %.8f, direct over %zu cells %.8f\n", pts[i][0], pts[i][1],
                      pts[i][2], a[0], bn_mesh_cells(m), ref[4 * i]);
        TU_NEAR(ref[4 * i], a[0], sanitized() ? 3e-3 : 1.5e-3);
    }
    bn_mesh_free(m);
}

/* ---- the tree ---------------------------------------------------------------- */

static void test_tree_against_direct(void **state)
{
    (void)state;
    bn_mesh *m = tu_mesh(BN_MESH_MACLAURIN, 4, 8);
    const size_t every = sanitized() ? 400 : 100;
    double e[4];
    bn_field_params p = cpu_params(BN_FIELD_GRAVITY, 0.0); /* theta 0: every leaf opened */
    solve_mesh(m, &p);
    tree_vs_direct(m, &p, every, e);
    assert_true(e[1] < 1e-12 && e[3] < 1e-11);
    p.theta = 0.5;
    solve_mesh(m, &p);
    tree_vs_direct(m, &p, every, e);
    print_message("theta 0.5: potential p99 %.2e max %.2e, acceleration p99 %.2e max %.2e\n", e[0], e[1], e[2], e[3]);
    assert_true(e[0] < 5e-4 && e[2] < 5e-3);
    p.theta = 0.25;
    solve_mesh(m, &p);
    tree_vs_direct(m, &p, every, e);
    print_message("theta 0.25: potential p99 %.2e max %.2e, acceleration p99 %.2e max %.2e\n", e[0], e[1], e[2], e[3]);
    assert_true(e[0] < 5e-5 && e[2] < 5e-4);
    bn_mesh_free(m);
}

/* The exact sphere: the error falls with the resolution of its surface. */
static void test_sphere_against_exact(void **state)
{
    (void)state;
    bn_mesh_ic_params ip = bn_mesh_ic_params_default(BN_MESH_SPHERE);
    double pot[2], acc[2];
    for (int L = 3; L <= 4; L++) {
        bn_mesh *m = tu_mesh(BN_MESH_SPHERE, L, 8);
        bn_field_params p = cpu_params(BN_FIELD_GRAVITY, 0.3);
        solve_mesh(m, &p);
        errors_vs_exact(m, &ip, &pot[L - 3], &acc[L - 3]);
        print_message("sphere, %d levels, %zu cells: max |dphi/phi| %.2e, max |da| / max |a| %.2e\n", L,
                      bn_mesh_cells(m), pot[L - 3], acc[L - 3]);
        bn_mesh_free(m);
    }
    assert_true(pot[1] < 0.5 * pot[0] && acc[1] < 0.7 * acc[0]);
    assert_true(pot[1] < 1.5e-3);
}

/* FLASH's fig. 9: the largest relative potential error of the MacLaurin
 * spheroid (e = 0.9) against theta, below 1% at every theta up to 1 and
 * near the discretisation floor (theta 0) at theta <= 0.3. */
static void test_maclaurin_against_theta(void **state)
{
    (void)state;
    bn_mesh_ic_params ip = bn_mesh_ic_params_default(BN_MESH_MACLAURIN);
    bn_mesh *m = tu_mesh(BN_MESH_MACLAURIN, sanitized() ? 3 : 4, 8);
    static const double thetas[] = {0.0, 1.0, 0.75, 0.5, 0.3, 0.25};
    double floor_err = 0;
    for (size_t t = 0; t < sizeof thetas / sizeof *thetas; t++) {
        bn_field_params p = cpu_params(BN_FIELD_GRAVITY, thetas[t]);
        solve_mesh(m, &p);
        double pot, acc;
        errors_vs_exact(m, &ip, &pot, &acc);
        print_message("MacLaurin e = 0.9, %zu cells, theta %.2f: max |dphi/phi| %.3e, max |da| / max|a| %.3e\n",
                      bn_mesh_cells(m), thetas[t], pot, acc);
        if (t == 0) floor_err = pot;
        assert_true(pot < 1e-2);
        if (thetas[t] <= 0.3) assert_true(pot < 1.15 * floor_err);
    }
    bn_mesh_free(m);
}

static void test_vortex_rings(void **state)
{
    (void)state;
    bn_mesh_ic_params ip = bn_mesh_ic_params_default(BN_MESH_VORTEX_RINGS);
    double psi[2], vel[2];
    const int top = sanitized() ? 3 : 4;
    for (int L = top - 1; L <= top; L++) {
        bn_mesh *m = tu_mesh(BN_MESH_VORTEX_RINGS, L, 8);
        bn_field_params p = cpu_params(BN_FIELD_VORTICITY, 0.4);
        solve_mesh(m, &p);
        errors_vs_exact(m, &ip, &psi[L - top + 1], &vel[L - top + 1]);
        print_message("rings, %d levels, %zu cells: max |dpsi| / max|psi| %.2e, max |du| / max |u| %.2e\n", L,
                      bn_mesh_cells(m), psi[L - top + 1], vel[L - top + 1]);
        if (L == top) {
            double e[4];
            tree_vs_direct(m, &p, sanitized() ? 300 : 60, e);
            print_message("rings, theta 0.4: tree against direct: psi p99 %.2e, u p99 %.2e\n", e[0], e[2]);
            assert_true(e[0] < 1e-3 && e[2] < 1e-3);
        }
        bn_mesh_free(m);
    }
    assert_true(psi[1] < 0.7 * psi[0] && vel[1] < 0.7 * vel[0]);
    assert_true(psi[1] < 0.1 && vel[1] < 0.65);
}

/* ---- sources and targets --------------------------------------------------------- */

/* Mesh and particles together: the sum of each alone; particles alone:
 * the particle reference (no softening). */
static void test_mesh_with_particles(void **state)
{
    (void)state;
    bn_mesh *m = tu_mesh(BN_MESH_SPHERE, 3, 8);
    bn_particles *stars = tu_random_particles(300, 5, 1);
    for (size_t i = 0; i < stars->n; i++)
        for (int k = 0; k < 3; k++) stars->pos[k][i] = 0.5 + 0.1 * stars->pos[k][i];
    bn_field_params p = cpu_params(BN_FIELD_GRAVITY, 0.0);
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, &p));
    const size_t n = 200;
    double *pos = malloc(3 * n * sizeof *pos), *both = malloc(4 * n * sizeof *both), *mesh = malloc(4 * n * sizeof *mesh),
           *part = malloc(4 * n * sizeof *part);
    for (size_t i = 0; i < n; i++) cell_centre(m, i * 97 % bn_mesh_cells(m), pos + 3 * i);
    TU_OK(bn_field_points(f, m, stars, n, pos, both));
    TU_OK(bn_field_points(f, m, NULL, n, pos, mesh));
    TU_OK(bn_field_points(f, NULL, stars, n, pos, part));
    for (size_t i = 0; i < 4 * n; i++) assert_true(fabs(both[i] - mesh[i] - part[i]) <= 1e-12 * (fabs(both[i]) + 1e-6));
    /* particles alone against double direct summation at the same points */
    bn_particles *q = NULL;
    TU_OK(bn_particles_copy(&q, stars));
    TU_OK(bn_particles_resize(q, stars->n + n));
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) q->pos[k][stars->n + i] = pos[3 * i + k];
        q->mass[stars->n + i] = 0;
        q->id[stars->n + i] = stars->n + i + 1;
    }
    size_t *targets = malloc(n * sizeof *targets);
    double *acc = malloc(3 * n * sizeof *acc), *pot = malloc(n * sizeof *pot);
    for (size_t i = 0; i < n; i++) targets[i] = stars->n + i;
    TU_OK(bn_direct_reference(q, 1.0, 0.0, targets, n, acc, pot));
    for (size_t i = 0; i < n; i++) {
        TU_NEAR(part[4 * i], pot[i], 1e-12);
        for (int k = 0; k < 3; k++) TU_NEAR(part[4 * i + 1 + k], acc[3 * i + k], 1e-10);
    }
    /* the mesh solver's values at cell centres are the points' */
    TU_OK(bn_field_mesh(f, m, stars));
    const int gp = bn_mesh_var_index(m, "gpot");
    for (size_t i = 0; i < n; i++) TU_NEAR(m->var[gp][i * 97 % bn_mesh_cells(m)], both[4 * i], 1e-12);
    bn_field_free(f);
    free(pos);
    free(both);
    free(mesh);
    free(part);
    free(targets);
    free(acc);
    free(pot);
    bn_particles_free(q);
    bn_particles_free(stars);
    bn_mesh_free(m);
}

static void test_bad_input(void **state)
{
    (void)state;
    bn_mesh *m = tu_mesh(BN_MESH_SPHERE, 2, 8);
    bn_field_params p = cpu_params(BN_FIELD_GRAVITY, 0.5);
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, &p));
    const int d = bn_mesh_var_index(m, "dens");
    m->var[d][bn_mesh_block_cells(m) * 3 + 17] = -1.0;
    TU_FAILS(bn_field_mesh(f, m, NULL), BN_ERR_ARGUMENT, "of block 3, cell 17, is -1: a density must be >= 0");
    m->var[d][bn_mesh_block_cells(m) * 3 + 17] = NAN;
    TU_FAILS(bn_field_mesh(f, m, NULL), BN_ERR_ARGUMENT, "variable dens of block 3, cell (1, 2, 0), is nan");
    m->var[d][bn_mesh_block_cells(m) * 3 + 17] = 0.0;
    /* a leaf inside another, and a block off its level's grid */
    const double lo[3] = {0, 0, 0}, hi[3] = {0.25, 0.25, 0.25}, off[3] = {0.1, 0, 0}, offhi[3] = {0.35, 0.25, 0.25};
    bn_mesh *bad = NULL;
    TU_OK(bn_mesh_copy(&bad, m));
    TU_OK(bn_mesh_add_block(bad, lo, hi, 3, NULL));
    TU_FAILS(bn_field_mesh(f, bad, NULL), BN_ERR_FORMAT, "overlap");
    bn_mesh_free(bad);
    TU_OK(bn_mesh_copy(&bad, m));
    TU_OK(bn_mesh_add_block(bad, off, offhi, 3, NULL));
    TU_FAILS(bn_field_mesh(f, bad, NULL), BN_ERR_FORMAT, "is not a block of its level");
    bn_mesh_free(bad);
    bn_field_free(f);
    /* parameters */
    p.near_cells = 5;
    TU_FAILS(bn_field_create(&f, &p), BN_ERR_ARGUMENT, "near_cells = 5");
    p = cpu_params(BN_FIELD_GRAVITY, 0.5);
    snprintf(p.source_vars, sizeof p.source_vars, "vorx,vory,vorz");
    TU_FAILS(bn_field_create(&f, &p), BN_ERR_ARGUMENT, "gravity sources need 1 variable");
    p = cpu_params(BN_FIELD_GRAVITY, 0.5);
    p.smoothing = 1;
    TU_FAILS(bn_field_create(&f, &p), BN_ERR_ARGUMENT, "smoothed kernel is for vorticity");
    p = cpu_params(BN_FIELD_VORTICITY, 0.5);
    TU_OK(bn_field_create(&f, &p));
    TU_FAILS(bn_field_mesh(f, m, NULL), BN_ERR_ARGUMENT, "no variable 'vorx'");
    bn_particles *stars = tu_random_particles(10, 1, 0);
    bn_mesh *r = tu_mesh(BN_MESH_VORTEX_RINGS, 2, 8);
    TU_FAILS(bn_field_mesh(f, r, stars), BN_ERR_ARGUMENT, "gravity only");
    bn_particles_free(stars);
    bn_mesh_free(r);
    bn_field_free(f);
    bn_mesh_free(m);
}

/* The smoothed kernel of paper 002 (no cubes) with e = h, the paper's
 * choice: it converges with the resolution, more slowly than the exact
 * cubes (its self term is 1.5 h^2 against the cube's 2.38 h^2). */
static void test_smoothed_kernel(void **state)
{
    (void)state;
    bn_mesh_ic_params ip = bn_mesh_ic_params_default(BN_MESH_VORTEX_RINGS);
    double psi[2], u[2];
    const int top = sanitized() ? 3 : 4;
    for (int L = top - 1; L <= top; L++) {
        bn_mesh *m = tu_mesh(BN_MESH_VORTEX_RINGS, L, 8);
        bn_field_params p = cpu_params(BN_FIELD_VORTICITY, 0.4);
        p.smoothing = 1.0;
        solve_mesh(m, &p);
        errors_vs_exact(m, &ip, &psi[L - top + 1], &u[L - top + 1]);
        print_message("rings, %d levels, smoothed kernel (e = h): max |dpsi| / max|psi| %.2e, max |du| / max|u| %.2e\n",
                      L, psi[L - top + 1], u[L - top + 1]);
        bn_mesh_free(m);
    }
    assert_true(psi[1] < 0.6 * psi[0] && u[1] < 0.9 * u[0]);
}

/* The FFT solver on a uniform grid is the direct summation (the same
 * kernel), to rounding; it refuses refined meshes and particles. */
static void test_fft_solver(void **state)
{
    (void)state;
    for (int rings = 0; rings < 2; rings++) {
        bn_mesh_ic_params ip = bn_mesh_ic_params_default(rings ? BN_MESH_VORTEX_RINGS : BN_MESH_MACLAURIN);
        ip.max_level = ip.min_level = 3;
        ip.block = 8;
        bn_mesh *m = NULL;
        TU_OK(bn_mesh_ic_generate(&ip, &m));
        bn_field_params p = cpu_params(rings ? BN_FIELD_VORTICITY : BN_FIELD_GRAVITY, 0.5);
        p.method = BN_FIELD_FFT;
        for (int near = 0; near <= 2; near += 2) {
            p.near_cells = near;
            solve_mesh(m, &p);
            double e[4];
            tree_vs_direct(m, &p, sanitized() ? 256 : 64, e);
            print_message("%s, FFT on 32^3 (near %d) against direct: potential max %.2e, vector max %.2e\n",
                          rings ? "rings" : "MacLaurin", near, e[1], e[3]);
            assert_true(e[1] < 1e-12 && e[3] < 1e-11);
        }
        bn_mesh_free(m);
    }
    bn_mesh *amr = tu_mesh(BN_MESH_SPHERE, 4, 8);
    bn_field_params p = cpu_params(BN_FIELD_GRAVITY, 0.5);
    p.method = BN_FIELD_FFT;
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, &p));
    TU_FAILS(bn_field_mesh(f, amr, NULL), BN_ERR_ARGUMENT, "needs a uniform mesh: its leaf blocks are at levels 3 to 4");
    bn_particles *stars = tu_random_particles(10, 1, 0);
    TU_FAILS(bn_field_mesh(f, amr, stars), BN_ERR_ARGUMENT, "particles need the tree");
    bn_particles_free(stars);
    bn_field_free(f);
    bn_mesh_free(amr);
}

/* Where the formulas used to fail: a target within 1e-9 of a cell's edge
 * (ln(0) times a tiny coefficient made NaN), a nearly spherical MacLaurin
 * spheroid (the closed forms cancel), a mesh with a hole, an empty mesh
 * for the FFT, a "sphere" with an eccentricity. */
static void test_edges_and_limits(void **state)
{
    (void)state;
    const double h[3] = {1, 1, 1}, near_edge[3] = {0, 0.5 + 1e-9, 0.5 + 1e-9}, off_edge[3] = {0, 0.5 + 1e-6, 0.5 + 1e-6};
    double phi0 = 0, phi1 = 0, g0[3] = {0, 0, 0}, g1[3] = {0, 0, 0};
    bn_box_field_at(near_edge, h, &phi0, g0);
    bn_box_field_at(off_edge, h, &phi1, g1);
    assert_true(isfinite(phi0) && isfinite(g0[0]) && isfinite(g0[1]) && isfinite(g0[2]));
    TU_NEAR(phi0, phi1, 1e-5 * fabs(phi1));
    for (int k = 0; k < 3; k++) assert_true(fabs(g0[k] - g1[k]) < 1e-4 * fabs(phi1));

    bn_mesh_ic_params mac = bn_mesh_ic_params_default(BN_MESH_MACLAURIN), sph = bn_mesh_ic_params_default(BN_MESH_SPHERE);
    const double pts[2][3] = {{0.6, 0.55, 0.42}, {0.9, 0.3, 0.5}};
    for (int e = 6; e <= 10; e += 4) {
        mac.eccentricity = pow(10.0, -e);
        for (int i = 0; i < 2; i++) {
            double a[4], b[4];
            TU_OK(bn_mesh_ic_exact(&mac, pts[i], a, NULL));
            TU_OK(bn_mesh_ic_exact(&sph, pts[i], b, NULL));
            for (int k = 0; k < 4; k++) assert_true(fabs(a[k] - b[k]) < 1e-9 * fabs(b[0]));
        }
    }
    sph.eccentricity = 0.5;
    double out[4];
    TU_FAILS(bn_mesh_ic_exact(&sph, pts[0], out, NULL), BN_ERR_ARGUMENT, "the sphere has none");

    /* seven of a root's eight octants: a hole */
    bn_mesh *m = NULL;
    TU_OK(bn_mesh_create(&m, 4, 4, 4));
    int d = -1;
    TU_OK(bn_mesh_add_var(m, "dens", &d));
    for (int o = 0; o < 7; o++) {
        const double lo[3] = {0.5 * (o & 1), 0.5 * ((o >> 1) & 1), 0.5 * (o >> 2)};
        const double hi[3] = {lo[0] + 0.5, lo[1] + 0.5, lo[2] + 0.5};
        TU_OK(bn_mesh_add_block(m, lo, hi, 2, NULL));
    }
    bn_field_params p = cpu_params(BN_FIELD_GRAVITY, 0.5);
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, &p));
    TU_FAILS(bn_field_mesh(f, m, NULL), BN_ERR_FORMAT, "leaf blocks must tile their root blocks");
    bn_field_free(f);
    bn_mesh_free(m);
    TU_OK(bn_mesh_create(&m, 4, 4, 4));
    TU_OK(bn_mesh_add_var(m, "dens", &d));
    p.method = BN_FIELD_FFT;
    TU_OK(bn_field_create(&f, &p));
    TU_FAILS(bn_field_mesh(f, m, NULL), BN_ERR_ARGUMENT, "no blocks");
    bn_field_free(f);
    bn_mesh_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box_kernel),           cmocka_unit_test(test_maclaurin_formula),
        cmocka_unit_test(test_tree_against_direct),  cmocka_unit_test(test_sphere_against_exact),
        cmocka_unit_test(test_maclaurin_against_theta), cmocka_unit_test(test_vortex_rings),
        cmocka_unit_test(test_mesh_with_particles), cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_smoothed_kernel),      cmocka_unit_test(test_fft_solver),
        cmocka_unit_test(test_edges_and_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
