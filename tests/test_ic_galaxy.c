/* banyan ic galaxy: GOTHIC's M31 at N = 2^17 (halo 120794, disk 5451,
 * bulge 4827 particles) against references computed here: each
 * component's mass profile (the tapered densities integrated by this
 * file's own quadrature), the rotation curve and the virial ratio from
 * banyan's own tree forces, Q(R) from the disk particles' dispersions;
 * bits the same for a seed at 1 and 2 threads; bad model files refused
 * naming the field. */
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

#define N_GALAXY 131072
static bn_particles *gal; /* the set, with tree forces (setup) */
static bn_galaxy_model m31;
static size_t first[4], count[4]; /* by part type */

static int setup(void **state)
{
    (void)state;
    m31 = bn_galaxy_model_m31();
    TU_OK(bn_ic_galaxy(&m31, N_GALAXY, 7, &gal));
    bn_gravity_params g = bn_gravity_params_default();
    g.G = m31.units.G;
    g.softening = 0.016; /* GOTHIC's 16 pc */
    g.backend = BN_BACKEND_CPU;
    g.theta = 0.4;
    bn_gravity *grav = NULL;
    TU_OK(bn_gravity_create(&grav, &g));
    TU_OK(bn_gravity_compute(grav, gal));
    bn_gravity_free(grav);
    for (size_t i = 0; i < gal->n; i++) {
        const int t = gal->type[i];
        if (!count[t]++) first[t] = i;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    bn_particles_free(gal);
    return 0;
}

/* 2T / |W|, W = 1/2 sum m phi from p's potentials (computed by the tree
 * with GOTHIC's softening when p has none). */
static double virial_ratio(bn_particles *p, double G)
{
    if (!p->pot) {
        bn_gravity_params g = bn_gravity_params_default();
        g.G = G;
        g.softening = 0.016;
        g.backend = BN_BACKEND_CPU;
        bn_gravity *grav = NULL;
        TU_OK(bn_gravity_create(&grav, &g));
        TU_OK(bn_gravity_compute(grav, p));
        bn_gravity_free(grav);
    }
    double T = 0, W = 0;
    for (size_t i = 0; i < p->n; i++) {
        double v2 = 0;
        for (int k = 0; k < 3; k++) v2 += p->vel[k][i] * p->vel[k][i];
        T += 0.5 * p->mass[i] * v2;
        W += 0.5 * p->mass[i] * p->pot[i];
    }
    print_message("2T/|W| = %.4f (%zu particles)\n", 2 * T / fabs(W), p->n);
    return 2 * T / fabs(W);
}

/* ---- references: the tapered profiles integrated here ------------------- */
/* shape x taper: spheroid rho ~ 1/(x (1+x)^k), disk Sigma ~ exp(-x) */
static double shape(const bn_galaxy_component *c, double r)
{
    const double x = r / c->scale, t = 0.5 * erfc((r - c->cutoff) / c->cutoff_width);
    if (c->profile == BN_GALAXY_EXPONENTIAL) return exp(-x) * t;
    return t / (x * pow(1 + x, c->profile == BN_GALAXY_NFW ? 2 : 3));
}

/* Mass inside r over the whole mass: dM ~ r^3 shape (spheroid) or r^2
 * shape (disk) d ln r, Simpson's rule on 4000 intervals of ln r. */
static double mass_below(const bn_galaxy_component *c, double r, double r_end)
{
    const int dim = c->profile == BN_GALAXY_EXPONENTIAL ? 2 : 3;
    const double s0 = log(1e-7 * c->scale);
    double part = 0, all = 0;
    for (int pass = 0; pass < 2; pass++) {
        const double s1 = log(pass ? r_end : r), h = (s1 - s0) / 4000;
        double sum = 0;
        for (int i = 0; i <= 4000; i++) {
            const double x = exp(s0 + i * h), w = i == 0 || i == 4000 ? 1 : i % 2 ? 4 : 2;
            sum += w * pow(x, dim) * shape(c, x);
        }
        *(pass ? &all : &part) = sum * h / 3;
    }
    return part / all;
}

/* Mass-weighted centre of particles [a, a + n). */
static void centre_of(size_t a, size_t n, double c[3])
{
    for (int k = 0; k < 3; k++) {
        c[k] = 0;
        for (size_t i = a; i < a + n; i++) c[k] += gal->pos[k][i];
        c[k] /= (double)n;
    }
}

/* The fraction of a component within radius r of its centre against the
 * reference: within 4 binomial sigmas (plus 0.3% for the centre, found
 * from the particles themselves). */
static void check_fraction(int type, const bn_galaxy_component *c, double r, int cylindrical)
{
    double ctr[3];
    centre_of(first[type], count[type], ctr);
    size_t in = 0;
    for (size_t i = first[type]; i < first[type] + count[type]; i++) {
        const double dx = gal->pos[0][i] - ctr[0], dy = gal->pos[1][i] - ctr[1], dz = gal->pos[2][i] - ctr[2];
        in += sqrt(dx * dx + dy * dy + (cylindrical ? 0 : dz * dz)) < r;
    }
    const double got = (double)in / (double)count[type];
    const double want = mass_below(c, r, c->cutoff + 10 * c->cutoff_width);
    const double tol = 4 * sqrt(want * (1 - want) / (double)count[type]) + 0.003;
    print_message("type %d: M(<%g) / M = %.4f, reference %.4f (tolerance %.4f)\n", type, r, got, want, tol);
    assert_true(fabs(got - want) <= tol);
}

static void test_counts_and_masses(void **state)
{
    (void)state;
    /* GOTHIC's split of 2^23 (7730866, 348889, 308853) scaled to 2^17 */
    assert_int_equal(count[1] + count[2] + count[3], N_GALAXY);
    assert_true(first[1] == 0 && first[2] == count[1] && first[3] == count[1] + count[2]);
    TU_NEAR((double)count[1], 7730866.0 / 64, 1.0);
    TU_NEAR((double)count[2], 348889.0 / 64, 1.0);
    TU_NEAR((double)count[3], 308853.0 / 64, 1.0);
    /* equal particle masses (to the rounding of the counts), total 8.8e11 */
    const double m1 = gal->mass[0], m2 = gal->mass[first[2]], m3 = gal->mass[first[3]];
    assert_true(fabs(m2 / m1 - 1) < 1e-3 && fabs(m3 / m1 - 1) < 1e-3);
    TU_NEAR(bn_particles_total_mass(gal), 8.11e11 + 3.24e10 + 3.66e10, 1e-12 * 8.8e11);
    for (size_t i = 0; i < gal->n; i++) assert_int_equal(gal->id[i], i + 1);
    /* centre of mass at rest at the origin (to rounding: 1e-12 of the
     * positions' ~100 kpc and the speeds' ~300 km/s) */
    double com[3], mv[3] = {0, 0, 0};
    const double M = bn_particles_total_mass(gal);
    bn_particles_centre_of_mass(gal, com);
    for (size_t i = 0; i < gal->n; i++)
        for (int k = 0; k < 3; k++) mv[k] += gal->mass[i] / M * gal->vel[k][i];
    for (int k = 0; k < 3; k++) assert_true(fabs(com[k]) < 1e-10 && fabs(mv[k]) < 1e-10);
}

static void test_density_profiles(void **state)
{
    (void)state;
    const double halo_r[] = {3.815, 7.63, 20, 60, 150}, bulge_r[] = {0.61, 1.5, 4}, disk_R[] = {2.7, 5.4, 10.8, 20};
    for (int j = 0; j < 5; j++) check_fraction(1, &m31.halo, halo_r[j], 0);
    for (int j = 0; j < 3; j++) check_fraction(3, &m31.bulge, bulge_r[j], 0);
    for (int j = 0; j < 4; j++) check_fraction(2, &m31.disk, disk_R[j], 1);
    /* sech^2(z / z_d): a fraction tanh(1) = 0.7616 within |z| < z_d */
    double ctr[3];
    centre_of(first[2], count[2], ctr);
    size_t in = 0;
    for (size_t i = first[2]; i < first[2] + count[2]; i++) in += fabs(gal->pos[2][i] - ctr[2]) < 0.6;
    const double f = (double)in / (double)count[2], tol = 4 * sqrt(0.7616 * 0.2384 / (double)count[2]);
    print_message("disk: %.4f within |z| < z_d, sech^2 %.4f (tolerance %.4f)\n", f, tanh(1.0), tol);
    TU_NEAR(f, tanh(1.0), tol);
}

/* Disk particles in R bins [lo, hi) about the disk's centre: per bin the
 * count, mean R, mean -a.R_hat R (midplane only: |z| < z_d/2), and the
 * radial velocity's dispersion. */
typedef struct {
    double lo, hi, n, R, aR, n_mid, vR, vR2;
} ring;

static void fill_rings(ring *rg, int nr)
{
    double ctr[3];
    centre_of(first[2], count[2], ctr);
    for (size_t i = first[2]; i < first[2] + count[2]; i++) {
        const double x = gal->pos[0][i] - ctr[0], y = gal->pos[1][i] - ctr[1], R = hypot(x, y);
        for (int b = 0; b < nr; b++) {
            if (R < rg[b].lo || R >= rg[b].hi) continue;
            const double vR = (gal->vel[0][i] * x + gal->vel[1][i] * y) / R;
            rg[b].n++;
            rg[b].R += R;
            rg[b].vR += vR;
            rg[b].vR2 += vR * vR;
            if (fabs(gal->pos[2][i] - ctr[2]) < 0.3) {
                rg[b].n_mid++;
                rg[b].aR -= gal->acc[0][i] * x + gal->acc[1][i] * y; /* -a.R_hat R */
            }
        }
    }
    for (int b = 0; b < nr; b++) {
        rg[b].R /= rg[b].n;
        rg[b].aR /= rg[b].n_mid;
        rg[b].vR /= rg[b].n;
        rg[b].vR2 = rg[b].vR2 / rg[b].n - rg[b].vR * rg[b].vR;
    }
}

/* The circular speed from banyan's tree forces on the midplane particles
 * against the model's v_c^2 (spheroids exact, thin exponential disk): within
 * 5%. The model leaves out the disk's thickness (z_d = 0.11 R_d weakens
 * its midplane pull by a few % of its share, at most ~40% of v_c^2 near
 * 2 R_d) and its taper; the halo's and bulge's shot noise in M(<R) is
 * about 1% with 10^4-10^5 particles inside; tree errors are 1e-3. */
static void test_rotation_curve(void **state)
{
    (void)state;
    ring rg[5] = {{2, 4, 0, 0, 0, 0, 0, 0}, {4, 6, 0, 0, 0, 0, 0, 0}, {6, 8, 0, 0, 0, 0, 0, 0},
                  {8, 12, 0, 0, 0, 0, 0, 0}, {12, 18, 0, 0, 0, 0, 0, 0}};
    fill_rings(rg, 5);
    for (int b = 0; b < 5; b++) {
        bn_galaxy_disk_point at;
        TU_OK(bn_galaxy_disk_curve(&m31, 1, &rg[b].R, &at));
        const double vc2 = at.v_circ * at.v_circ;
        print_message("R %5.2f: v_c^2 from forces %8.0f (%g midplane particles), model %8.0f: %+.2f%%\n", rg[b].R,
                      rg[b].aR, rg[b].n_mid, vc2, 100 * (rg[b].aR / vc2 - 1));
        assert_true(rg[b].n_mid > 100);
        assert_true(fabs(rg[b].aR / vc2 - 1) < 0.05);
        assert_true(at.v_circ > 220 && at.v_circ < 270); /* M31's flat ~250 km/s */
    }
}

/* Q(R) = sigma_R kappa / (3.36 G Sigma) with sigma_R and Sigma measured
 * from the particles (kappa the model's) against the model's Q, and Q =
 * 2 at R_d by construction: within 4 sigmas of the two estimates' noise
 * (sigma_R^2 and the counts: 1/sqrt(2n) and 1/sqrt(n) relative). */
static void test_toomre_q(void **state)
{
    (void)state;
    ring rg[4] = {{3, 5, 0, 0, 0, 0, 0, 0}, {5, 7, 0, 0, 0, 0, 0, 0}, {7, 10, 0, 0, 0, 0, 0, 0},
                  {10, 14, 0, 0, 0, 0, 0, 0}};
    fill_rings(rg, 4);
    const double mp = gal->mass[first[2]];
    for (int b = 0; b < 4; b++) {
        const double area = M_PI * (rg[b].hi * rg[b].hi - rg[b].lo * rg[b].lo);
        /* the model's ring: mass-weighted sigma_R^2 and mean Sigma (64 sub-rings) */
        double s2 = 0, mass = 0;
        for (int j = 0; j < 64; j++) {
            const double dR = (rg[b].hi - rg[b].lo) / 64, R = rg[b].lo + (j + 0.5) * dR;
            bn_galaxy_disk_point p;
            TU_OK(bn_galaxy_disk_curve(&m31, 1, &R, &p));
            s2 += 2 * M_PI * R * dR * p.surface_density * p.sigma_R * p.sigma_R;
            mass += 2 * M_PI * R * dR * p.surface_density;
        }
        bn_galaxy_disk_point at; /* kappa at the particles' mean R, for both */
        TU_OK(bn_galaxy_disk_curve(&m31, 1, &rg[b].R, &at));
        const double k = at.kappa / (3.36 * m31.units.G);
        const double q = sqrt(rg[b].vR2) * k / (rg[b].n * mp / area), qm = sqrt(s2 / mass) * k / (mass / area);
        const double tol = 4 * sqrt(0.5 / rg[b].n + 1 / rg[b].n) + 0.03;
        print_message("R %5.2f: Q measured %.3f, model %.3f (%.3f at R): %+.1f%% (tolerance %.1f%%)\n", rg[b].R, q,
                      qm, at.toomre_q, 100 * (q / qm - 1), 100 * tol);
        assert_true(fabs(q / qm - 1) < tol);
    }
    bn_galaxy_disk_point at;
    const double Rd = 5.4;
    TU_OK(bn_galaxy_disk_curve(&m31, 1, &Rd, &at));
    TU_NEAR(at.toomre_q, 2.0, 1e-9);
}

/* 2T / |W| with W = 1/2 sum m phi from banyan's potentials: 1 within 2%
 * (sampling noise 0.3%; the disk's epicyclic velocities and the
 * spheroids' spherical view of the disk are approximations). */
static void test_virial_ratio(void **state)
{
    (void)state;
    TU_NEAR(virial_ratio(gal, m31.units.G), 1.0, 0.02);
}

/* Another model: a Hernquist halo, no bulge, an exponential vertical
 * profile: types 1 and 2 only, a fraction 1 - 1/e of the disk within
 * |z| < z_d (4 binomial sigmas), and 2T/|W| from tree forces within 3%
 * (fewer particles than M31's test: more noise). */
static void test_exponential_disk(void **state)
{
    (void)state;
    bn_galaxy_model m = m31;
    m.halo.profile = BN_GALAXY_HERNQUIST;
    m.halo.scale = 30;
    m.bulge.profile = BN_GALAXY_NONE;
    m.disk.vertical = BN_GALAXY_EXP;
    bn_particles *p = NULL;
    TU_OK(bn_ic_galaxy(&m, 16384, 2, &p));
    size_t nd = 0, in = 0;
    double zc = 0;
    for (size_t i = 0; i < p->n; i++) {
        assert_true(p->type[i] == 1 || p->type[i] == 2);
        if (p->type[i] == 2) zc += p->pos[2][i], nd++;
    }
    zc /= (double)nd;
    for (size_t i = 0; i < p->n; i++) in += p->type[i] == 2 && fabs(p->pos[2][i] - zc) < m.disk.scale_height;
    const double f = (double)in / (double)nd, want = 1 - exp(-1.0);
    print_message("exponential disk: %.4f within |z| < z_d, want %.4f (%zu particles)\n", f, want, nd);
    TU_NEAR(f, want, 4 * sqrt(want * (1 - want) / (double)nd));
    TU_NEAR(virial_ratio(p, m.units.G), 1.0, 0.03);
    bn_particles_free(p);
}

static int same_bits(const bn_particles *a, const bn_particles *b)
{
    int same = a->n == b->n && !memcmp(a->type, b->type, a->n) && !memcmp(a->mass, b->mass, a->n * sizeof(double));
    for (int k = 0; same && k < 3; k++)
        same = !memcmp(a->pos[k], b->pos[k], a->n * sizeof(double)) &&
               !memcmp(a->vel[k], b->vel[k], a->n * sizeof(double));
    return same;
}

static void test_deterministic(void **state)
{
    (void)state;
    const int saved = omp_get_max_threads();
    bn_particles *one = NULL, *two = NULL, *other = NULL;
    omp_set_num_threads(1);
    TU_OK(bn_ic_galaxy(&m31, 8192, 3, &one));
    omp_set_num_threads(2);
    TU_OK(bn_ic_galaxy(&m31, 8192, 3, &two));
    TU_OK(bn_ic_galaxy(&m31, 8192, 4, &other));
    omp_set_num_threads(saved);
    assert_true(same_bits(one, two));
    assert_false(same_bits(one, other));
    bn_particles_free(one);
    bn_particles_free(two);
    bn_particles_free(other);
}

/* A model file with `text` is refused with a message holding `needle`. */
static void refused(const char *text, const char *needle)
{
    char path[] = "/tmp/bn_galaxy_XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    bn_galaxy_model m;
    const bn_status s = bn_galaxy_model_read(path, &m);
    unlink(path);
    if (s == BN_OK || !strstr(bn_last_error(), needle))
        fail_msg("model file\n%s\nwas %s: '%s' (wanted '%s')", text, s == BN_OK ? "accepted" : "refused",
                 bn_last_error(), needle);
}

#define HALO "halo:\n  profile: nfw\n  mass: 1e12\n  scale_radius: 10\n  cutoff: 200\n  cutoff_width: 20\n"
static void test_bad_model_files(void **state)
{
    (void)state;
    refused(HALO "  mas: 3\n", "unknown key halo:mas (valid: profile, mass, scale_radius");
    refused("halo:\n  profile: nfw\n  mass: 1e12\n  cutoff: 200\n  cutoff_width: 20\n", "halo:scale_radius is missing");
    refused(HALO "disk:\n  mass: 1e10\n  scale_length: 3\n  scale_height: 0.3\n  cutoff: 20\n  cutoff_width: 2\n",
            "disk:toomre_q is missing");
    refused("halo:\n  profile: king\n", ":2: halo:profile: 'king' (nfw or hernquist)");
    refused(HALO "bulge:\n  profile: hernquist\n  mass: -3\n", ":9: bulge:mass: '-3' (a finite number > 0)");
    refused(HALO "  particles: 2.5\n", "halo:particles: '2.5' (a whole number >= 0)");
    refused(HALO "  mass: 2e12\n", "halo:mass is given twice");
    refused(HALO "galaxy:\n  a: 1\n", "unknown section 'galaxy' (valid: units, halo, bulge, disk)");
    refused("disk:\n  mass: 1e10\n  scale_length: 3\n  scale_height: 0.3\n  toomre_q: 1\n  cutoff: 20\n"
            "  cutoff_width: 2\n  vertical: flat\n", "disk:vertical: 'flat' (sech2 or exponential)");
    refused("units:\n  G: 0\n" HALO, "units:G: '0'");
    /* the library's own check names the field too */
    bn_galaxy_model m = bn_galaxy_model_m31();
    m.disk.toomre_q = 0;
    TU_FAILS(bn_galaxy_model_validate(&m), BN_ERR_ARGUMENT, "disk: toomre_q = 0");
    m = bn_galaxy_model_m31();
    m.bulge.cutoff_width = 0.2;
    TU_FAILS(bn_galaxy_model_validate(&m), BN_ERR_ARGUMENT, "bulge: cutoff_width = 0.2 is below 0.02 of the cutoff");
    m = bn_galaxy_model_m31();
    bn_particles *p = NULL;
    TU_FAILS(bn_ic_galaxy(&m, 0, 1, &p), BN_ERR_ARGUMENT, "no particle count");
    TU_FAILS(bn_ic_galaxy(&m, 20, 1, &p), BN_ERR_ARGUMENT, "bulge: no particle of 20");
}

/* The YAML example (examples/galaxies/m31.yml) is the preset: the same particles. */
static void test_model_file(void **state)
{
    (void)state;
    bn_galaxy_model m;
    TU_OK(bn_galaxy_model_read(EXAMPLES_DIR "/galaxies/m31.yml", &m));
    bn_particles *a = NULL, *b = NULL;
    TU_OK(bn_ic_galaxy(&m, 4096, 5, &a));
    TU_OK(bn_ic_galaxy(&m31, 4096, 5, &b));
    assert_true(same_bits(a, b));
    bn_particles_free(a);
    bn_particles_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_masses), cmocka_unit_test(test_density_profiles),
        cmocka_unit_test(test_rotation_curve),    cmocka_unit_test(test_toomre_q),
        cmocka_unit_test(test_virial_ratio),      cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_bad_model_files),   cmocka_unit_test(test_model_file),
        cmocka_unit_test(test_exponential_disk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
