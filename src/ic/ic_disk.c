/*
 * The exponential disk: its midplane kinematics in the total potential
 * and its sampling (the epicyclic approximation, Hernquist 1993).
 *
 * v_c^2(R) = G (M_halo(R) + M_bulge(R)) / R + v_d^2, with the thin
 * exponential disk's v_d^2 = 4 pi G Sigma_0 R_d y^2 (I0 K0 - I1 K1)(y), y
 * = R / 2 R_d (Freeman 1970; Sigma_0 the tapered disk's, so the taper and
 * the thickness are left out of v_d: below 2% of v_c^2 in M31 at R < 3
 * R_d). kappa^2 = 2 v_c^2 / R^2 + d(v_c^2)/dR / R, the derivative
 * analytic (spheroids: d(G M / R)/dR = 4 pi G R rho - G M / R^2).
 *
 * sigma_R = sigma_0 exp(-R / 2 R_d), sigma_0 from Q(q_radius) = Q;
 * sigma_phi^2 = sigma_R^2 kappa^2 / (4 Omega^2); sigma_z(R, z) from the
 * vertical Jeans equation in the total potential, sigma_z^2 = (1/rho(z))
 * int_z^inf rho(z') g_z(R, z') dz', g_z the disk's own slab pull 2 pi G
 * Sigma(<|z'|) plus the spheroids' G M(<r') z' / r'^3 (r'^2 = R^2 +
 * z'^2): without the spheroids' term (the disk's slab alone, pi G Sigma
 * z_d for sech^2) the M31 disk started too cold and its scale height fell
 * 15% in 1 Gyr at 2^22 (BENCHMARKS.md, session 17); the mean
 * rotation from the Jeans equation without the sigma_Rz term:
 *   v_phi^2 = v_c^2 + sigma_R^2 (1 - kappa^2/(4 Omega^2) + d ln(Sigma
 *             sigma_R^2)/d ln R), d ln(Sigma sigma_R^2)/d ln R = -2 R/R_d +
 *             R T'/T (T the taper),
 * 0 where negative (the centre, where sigma_R is largest).
 */
#include <math.h>
#include "core/error.h"
#include "core/rng.h"
#include "ic/ic_galaxy.h"

#define TOOMRE_STARS 3.36 /* Q = sigma_R kappa / (3.36 G Sigma) (Toomre 1964) */

/* v_c^2 and d(v_c^2)/dR at R. */
static void circular(const gx_model *g, double R, double *v2, double *dv2)
{
    *v2 = *dv2 = 0;
    for (int c = GX_HALO; c <= GX_BULGE; c++) {
        if (!g->c[c]) continue;
        double rho;
        gx_spheroid_density(g, c, R, &rho, NULL, NULL);
        const double M = gx_mass(g, c, R);
        *v2 += g->G * M / R;
        *dv2 += 4 * M_PI * g->G * R * rho - g->G * M / (R * R);
    }
    const bn_galaxy_component *d = g->c[GX_DISK];
    if (!d) return;
    const double y = R / (2 * d->scale), i0 = gx_bessel_i0(y), i1 = gx_bessel_i1(y);
    const double k0 = gx_bessel_k0(y), k1 = gx_bessel_k1(y), b = i0 * k0 - i1 * k1;
    const double amp = 4 * M_PI * g->G * g->norm[GX_DISK] * d->scale;
    /* d(y^2 b)/dy = 2 y b + 2 y^2 (i1 k0 - i0 k1 + i1 k1 / y); dR = 2 R_d dy */
    *v2 += amp * y * y * b;
    *dv2 += amp * (2 * y * b + 2 * y * y * (i1 * k0 - i0 * k1 + i1 * k1 / y)) / (2 * d->scale);
}

/* The disk's own pull at height z (its slab: 2 pi G Sigma(<|z|)), and the
 * weight rho(z) / rho(0), for the vertical profile. */
static void slab(const bn_galaxy_component *d, double x, double *pull, double *weight)
{
    if (d->vertical == BN_GALAXY_SECH2) {
        const double c = 1 / cosh(x);
        *pull = tanh(x);
        *weight = c * c;
    } else {
        *pull = 1 - exp(-x);
        *weight = exp(-x);
    }
}

/* sigma_z^2 at (R, |z|): the vertical Jeans equation (file comment),
 * Simpson's rule in x = z'/z_d over [x, x + 24] (the weight falls by
 * e^-24 or more there: below rounding). */
static double sigma_z2(const gx_model *g, double R, double z)
{
    const bn_galaxy_component *d = g->c[GX_DISK];
    const double zd = d->scale_height, x0 = fabs(z) / zd, span = 24.0;
    const double two_pi_g_sigma = 2 * M_PI * g->G * gx_disk_sigma(g, R);
    enum { STEPS = 96 };
    double sum = 0, w0 = 0;
    for (int k = 0; k <= STEPS; k++) {
        const double x = x0 + span * k / STEPS, zz = x * zd, r = hypot(R, zz);
        double pull, w;
        slab(d, x, &pull, &w);
        if (k == 0) w0 = w;
        const double gs = r > 0 ? g->G * (gx_mass(g, GX_HALO, r) + gx_mass(g, GX_BULGE, r)) * zz / (r * r * r) : 0;
        sum += (k == 0 || k == STEPS ? 1 : k % 2 ? 4 : 2) * w * (two_pi_g_sigma * pull + gs);
    }
    return sum * (span / STEPS / 3) * zd / w0;
}

/* Everything but the dispersions' normalisation (sigma_r0). */
void gx_disk_point(const gx_model *g, double sigma_r0, double R, bn_galaxy_disk_point *o)
{
    const bn_galaxy_component *d = g->c[GX_DISK];
    double v2, dv2, t, t1, t2;
    circular(g, R, &v2, &dv2);
    o->R = R;
    o->v_circ = sqrt(v2);
    o->omega = o->v_circ / R;
    o->kappa = sqrt(fmax(0.0, 2 * v2 / (R * R) + dv2 / R));
    o->surface_density = gx_disk_sigma(g, R);
    o->sigma_R = o->sigma_phi = o->sigma_z = o->v_phi = o->toomre_q = 0;
    if (!d) return;
    o->sigma_R = sigma_r0 * exp(-R / (2 * d->scale));
    o->sigma_phi = o->sigma_R * o->kappa / (2 * o->omega);
    o->sigma_z = sqrt(sigma_z2(g, R, 0));
    o->toomre_q = o->sigma_R * o->kappa / (TOOMRE_STARS * g->G * o->surface_density);
    gx_taper(d, R, &t, &t1, &t2);
    const double dlog = -2 * R / d->scale + (t > 1e-300 ? R * t1 / t : 0);
    const double drift = o->sigma_R * o->sigma_R * (1 - o->kappa * o->kappa / (4 * o->omega * o->omega) + dlog);
    o->v_phi = sqrt(fmax(0.0, v2 + drift));
}

double gx_disk_sigma_r0(const gx_model *g)
{
    const bn_galaxy_component *d = g->c[GX_DISK];
    bn_galaxy_disk_point at;
    gx_disk_point(g, 0, d->q_radius, &at);
    return d->toomre_q * TOOMRE_STARS * g->G * at.surface_density / at.kappa * exp(d->q_radius / (2 * d->scale));
}

/* Two normal deviates from draws k, k + 1 (Box-Muller). */
static void normals(uint64_t seed, uint64_t i, uint64_t k, double out[2])
{
    const double r = sqrt(-2 * log(bn_rng_uniform(seed, i, k))), a = 2 * M_PI * bn_rng_uniform(seed, i, k + 1);
    out[0] = r * cos(a);
    out[1] = r * sin(a);
}

/* Height from draw u: sech^2(z/z_d) or exp(-|z|/z_d). */
static double height(const bn_galaxy_component *d, double u)
{
    if (d->vertical == BN_GALAXY_SECH2) return d->scale_height * atanh(2 * u - 1);
    return u < 0.5 ? d->scale_height * log(2 * u) : -d->scale_height * log(2 * (1 - u));
}

/* Draws: 0 R, 1 z, 2 phi, 3-6 the three velocity deviates. */
static void disk_particle(const gx_model *g, double sigma_r0, double mass, uint64_t seed, uint64_t i,
                          bn_particles *p)
{
    const bn_galaxy_component *d = g->c[GX_DISK];
    const double R = gx_radius_of_fraction(g, GX_DISK, bn_rng_uniform(seed, i, 0));
    const double z = height(d, bn_rng_uniform(seed, i, 1)), phi = 2 * M_PI * bn_rng_uniform(seed, i, 2);
    bn_galaxy_disk_point at;
    gx_disk_point(g, sigma_r0, R, &at);
    const double sz = sqrt(sigma_z2(g, R, z));
    double n01[2], n23[2];
    normals(seed, i, 3, n01);
    normals(seed, i, 5, n23);
    const double vR = at.sigma_R * n01[0], vphi = at.v_phi + at.sigma_phi * n01[1], vz = sz * n23[0];
    const double c = cos(phi), s = sin(phi);
    p->pos[0][i] = R * c;
    p->pos[1][i] = R * s;
    p->pos[2][i] = z;
    p->vel[0][i] = vR * c - vphi * s;
    p->vel[1][i] = vR * s + vphi * c;
    p->vel[2][i] = vz;
    p->mass[i] = mass;
}

bn_status gx_disk_sample(const gx_model *g, bn_particles *p, size_t first, size_t n, uint64_t seed)
{
    if (n == 0) return BN_OK;
    const double sigma_r0 = gx_disk_sigma_r0(g), mass = g->c[GX_DISK]->mass / (double)n;
    if (!(sigma_r0 > 0 && isfinite(sigma_r0)))
        return bn_fail(BN_ERR_ARGUMENT, "galaxy: disk: sigma_R = %g at R = 0 from toomre_q = %g at q_radius = %g "
                       "(must be finite and > 0)", sigma_r0, g->c[GX_DISK]->toomre_q, g->c[GX_DISK]->q_radius);
#pragma omp parallel for schedule(static)
    for (long j = 0; j < (long)n; j++) disk_particle(g, sigma_r0, mass, seed, first + (uint64_t)j, p);
    return BN_OK;
}
