/*
 * A galaxy's components and its spherical total potential.
 *
 * Densities: spheroids rho_0 / (x (1+x)^k) (NFW k = 2, Hernquist k = 3, x
 * = r / scale), the disk Sigma_0 exp(-R / R_d), each times MAGI's taper
 * T = 0.5 erfc((r - cutoff) / width); rho_0 and Sigma_0 are chosen so that
 * each component's whole (tapered) mass is its given mass.
 *
 * Tables on GX_NODES nodes uniform in s = ln r from r0 (1e-6 of the
 * smallest scale) to r_max (8 taper widths beyond the farthest cutoff,
 * where T < 1e-29): enclosed masses by 2-point Gauss-Legendre per
 * interval (dM/ds = 4 pi r^3 rho, disk 2 pi R^2 Sigma), the depth
 * D(r) = int_0^r G M / r'^2 dr' and Psi(r) = int_r^r_max G M / r'^2 dr'
 * by the trapezoid rule in s (each summed from its own end, so that both
 * keep their digits). Inside r0 every component has M ~ r^2 (cusps of
 * 1/r, a disk's constant Sigma): M(r) = M(r0) (r/r0)^2 and D = D(r0) r/r0.
 * Linear interpolation in s (relative error ~ ds^2 / 8 = 1e-6).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "ic/ic_galaxy.h"

#define GX_NODES 8192
#define GX_R0_FRACTION 1e-6 /* r0 over the smallest scale            */
#define GX_TAPER_WIDTHS 8.0 /* r_max: farthest cutoff + 8 widths     */

void gx_taper(const bn_galaxy_component *c, double r, double *t, double *t1, double *t2)
{
    const double w = c->cutoff_width, y = (r - c->cutoff) / w, e = exp(-y * y) / (w * sqrt(M_PI));
    *t = 0.5 * erfc(y);
    *t1 = -e;
    *t2 = 2 * y * e / w;
}

static int slope(const bn_galaxy_component *c) { return c->profile == BN_GALAXY_NFW ? 2 : 3; }

void gx_spheroid_density(const gx_model *g, int c, double r, double *rho, double *d1, double *d2)
{
    const bn_galaxy_component *cp = g->c[c];
    const double a = cp->scale, x = r / a, k = slope(cp);
    /* f = 1/(x (1+x)^k): f' = -f q, f'' = f (q^2 + 1/x^2 + k/(1+x)^2), q = 1/x + k/(1+x) (in x) */
    const double f = 1 / (x * pow(1 + x, k)), q = 1 / x + k / (1 + x);
    const double f1 = -f * q / a, f2 = f * (q * q + 1 / (x * x) + k / ((1 + x) * (1 + x))) / (a * a);
    double t, t1, t2;
    gx_taper(cp, r, &t, &t1, &t2);
    *rho = g->norm[c] * f * t;
    if (d1) *d1 = g->norm[c] * (f1 * t + f * t1);
    if (d2) *d2 = g->norm[c] * (f2 * t + 2 * f1 * t1 + f * t2);
}

double gx_disk_sigma(const gx_model *g, double R)
{
    const bn_galaxy_component *d = g->c[GX_DISK];
    if (!d) return 0;
    double t, t1, t2;
    gx_taper(d, R, &t, &t1, &t2);
    return g->norm[GX_DISK] * exp(-R / d->scale) * t;
}

/* dM/ds of component c at r: 4 pi r^3 rho, or 2 pi R^2 Sigma. */
static double dmass_ds(const gx_model *g, int c, double r)
{
    if (c == GX_DISK) return 2 * M_PI * r * r * gx_disk_sigma(g, r);
    double rho;
    gx_spheroid_density(g, c, r, &rho, NULL, NULL);
    return 4 * M_PI * r * r * r * rho;
}

/* Component c's enclosed-mass table, normalised to its mass. */
static bn_status mass_table(gx_model *g, int c)
{
    double *m = g->mass[c];
    g->norm[c] = 1.0;
    m[0] = 0.5 * dmass_ds(g, c, g->r0); /* M ~ r^2 inside r0: M = (dM/ds) / 2 */
    const double h = 0.5 / sqrt(3.0);
    for (size_t i = 1; i < g->n; i++) {
        const double sa = g->s0 + ((double)i - 0.5 - h) * g->ds, sb = g->s0 + ((double)i - 0.5 + h) * g->ds;
        m[i] = m[i - 1] + 0.5 * g->ds * (dmass_ds(g, c, exp(sa)) + dmass_ds(g, c, exp(sb)));
    }
    const double scale = g->c[c]->mass / m[g->n - 1];
    if (!(scale > 0 && isfinite(scale)))
        return bn_fail(BN_ERR_ARGUMENT, "galaxy: the %s's mass profile cannot be normalised (its mass inside %g is "
                       "%g)", c == GX_HALO ? "halo" : c == GX_BULGE ? "bulge" : "disk", g->r_max, m[g->n - 1]);
    g->norm[c] = scale;
    for (size_t i = 0; i < g->n; i++) m[i] *= scale;
    return BN_OK;
}

static void potential_tables(gx_model *g)
{
    const size_t n = g->n;
    for (size_t i = 0; i < n; i++) {
        g->mtot[i] = 0;
        for (int c = 0; c < GX_COMPONENTS; c++)
            if (g->c[c]) g->mtot[i] += g->mass[c][i];
    }
    /* G M / r at the nodes, summed by the trapezoid rule in s */
    g->depth[0] = g->G * g->mtot[0] / g->r0;
    double prev = g->depth[0];
    for (size_t i = 1; i < n; i++) {
        const double cur = g->G * g->mtot[i] / exp(g->s0 + (double)i * g->ds);
        g->depth[i] = g->depth[i - 1] + 0.5 * g->ds * (prev + cur);
        prev = cur;
    }
    g->psi[n - 1] = 0;
    for (size_t i = n - 1; i > 0; i--) {
        const double a = g->G * g->mtot[i - 1] / exp(g->s0 + (double)(i - 1) * g->ds);
        const double b = g->G * g->mtot[i] / exp(g->s0 + (double)i * g->ds);
        g->psi[i - 1] = g->psi[i] + 0.5 * g->ds * (a + b);
    }
    g->psi_max = g->psi[0] + g->depth[0];
}

static void grid(gx_model *g)
{
    double smallest = INFINITY, far = 0;
    for (int c = 0; c < GX_COMPONENTS; c++) {
        if (!g->c[c]) continue;
        smallest = fmin(smallest, g->c[c]->scale);
        if (c == GX_DISK) smallest = fmin(smallest, g->c[c]->scale_height);
        far = fmax(far, g->c[c]->cutoff + GX_TAPER_WIDTHS * g->c[c]->cutoff_width);
    }
    g->n = GX_NODES;
    g->r0 = GX_R0_FRACTION * smallest;
    g->r_max = far;
    g->s0 = log(g->r0);
    g->ds = (log(far) - g->s0) / (double)(GX_NODES - 1);
}

bn_status gx_model_build(gx_model *g, const bn_galaxy_model *m)
{
    memset(g, 0, sizeof *g);
    BN_TRY(bn_galaxy_model_validate(m));
    g->m = m;
    g->G = m->units.G;
    g->c[GX_HALO] = m->halo.profile != BN_GALAXY_NONE ? &m->halo : NULL;
    g->c[GX_BULGE] = m->bulge.profile != BN_GALAXY_NONE ? &m->bulge : NULL;
    g->c[GX_DISK] = m->disk.profile != BN_GALAXY_NONE ? &m->disk : NULL;
    grid(g);
    double *all = bn_calloc(6 * g->n, sizeof *all, "galaxy potential tables");
    if (!all) return BN_ERR_NOMEM;
    for (int c = 0; c < GX_COMPONENTS; c++) g->mass[c] = all + (size_t)c * g->n;
    g->mtot = all + 3 * g->n;
    g->psi = all + 4 * g->n;
    g->depth = all + 5 * g->n;
    bn_status s = BN_OK;
    for (int c = 0; s == BN_OK && c < GX_COMPONENTS; c++)
        if (g->c[c]) s = mass_table(g, c);
    if (s != BN_OK) {
        gx_model_free(g);
        return s;
    }
    potential_tables(g);
    return BN_OK;
}

void gx_model_free(gx_model *g)
{
    free(g->mass[0]); /* the block of every table */
    memset(g, 0, sizeof *g);
}

/* Table position of r: node i and weight a in [0, 1) of node i + 1. */
static void locate(const gx_model *g, double r, size_t *i, double *a)
{
    const double t = (log(r) - g->s0) / g->ds;
    double fl = floor(t);
    if (fl > (double)(g->n - 2)) fl = (double)(g->n - 2);
    *i = (size_t)fl;
    *a = t - fl;
}

/* Table v at r0 <= r < r_max, linearly in s. */
static double table_at(const gx_model *g, const double *v, double r)
{
    size_t i;
    double a;
    locate(g, r, &i, &a);
    return v[i] + a * (v[i + 1] - v[i]);
}

static double table_mass(const gx_model *g, const double *m, double r)
{
    if (r <= g->r0) return m[0] * (r / g->r0) * (r / g->r0);
    if (r >= g->r_max) return m[g->n - 1];
    return table_at(g, m, r);
}

double gx_mass(const gx_model *g, int c, double r) { return g->c[c] ? table_mass(g, g->mass[c], r) : 0; }
double gx_mass_total(const gx_model *g, double r) { return table_mass(g, g->mtot, r); }

/* The s where the increasing table v reaches y (v[0] < y < v[n-1]). */
static double invert(const gx_model *g, const double *v, double y)
{
    size_t lo = 0, hi = g->n - 1;
    while (hi - lo > 1) {
        const size_t mid = (lo + hi) / 2;
        if (v[mid] <= y) lo = mid;
        else hi = mid;
    }
    const double a = (y - v[lo]) / (v[hi] - v[lo]);
    return g->s0 + ((double)lo + (a > 0 ? a : 0)) * g->ds;
}

double gx_radius_of_fraction(const gx_model *g, int c, double f)
{
    const double *m = g->mass[c], y = f * m[g->n - 1];
    if (y <= m[0]) return g->r0 * sqrt(y / m[0]);
    if (y >= m[g->n - 1]) return g->r_max;
    return exp(invert(g, m, y));
}

/* ---- the spheroids' Eddington view (ic_df_model) ------------------------ */
static double gx_depth(const void *ctx, double r)
{
    const gx_model *g = ((const gx_df_ctx *)ctx)->g;
    if (r <= g->r0) return g->depth[0] * r / g->r0;
    if (r >= g->r_max) return g->psi_max - g->G * g->mtot[g->n - 1] * (1 / r - 1 / g->r_max);
    return table_at(g, g->depth, r);
}

static double gx_psi(const void *ctx, double r)
{
    const gx_model *g = ((const gx_df_ctx *)ctx)->g;
    if (r <= g->r0) return g->psi_max - gx_depth(ctx, r);
    if (r >= g->r_max) return g->G * g->mtot[g->n - 1] * (1 / r - 1 / g->r_max);
    return table_at(g, g->psi, r);
}

static double gx_radius_of_depth(const void *ctx, double d)
{
    const gx_model *g = ((const gx_df_ctx *)ctx)->g;
    if (d <= g->depth[0]) return g->r0 * d / g->depth[0];
    if (d >= g->depth[g->n - 1]) return g->r_max;
    return exp(invert(g, g->depth, d));
}

static double gx_dpsi_ds(const void *ctx, double r)
{
    const gx_model *g = ((const gx_df_ctx *)ctx)->g;
    return g->G * gx_mass_total(g, r) / r;
}

/* drho/dPsi = rho' / Psi', d2rho/dPsi2 = (rho'' Psi' - rho' Psi'') / Psi'^3
 * with Psi' = -G M/r^2, Psi'' = -4 pi G rho_all + 2 G M / r^3, rho_all the
 * spheroids' densities and the disk's spherical average Sigma / (2 r). */
static void gx_drho_dpsi(const void *ctx, double r, double *d1, double *d2)
{
    const gx_df_ctx *x = ctx;
    const gx_model *g = x->g;
    double rho, r1, r2, all = gx_disk_sigma(g, r) / (2 * r);
    gx_spheroid_density(g, x->c, r, &rho, &r1, &r2);
    for (int c = GX_HALO; c <= GX_BULGE; c++) {
        if (!g->c[c]) continue;
        double rc;
        gx_spheroid_density(g, c, r, &rc, NULL, NULL);
        all += rc;
    }
    const double M = gx_mass_total(g, r), p1 = -g->G * M / (r * r);
    const double p2 = -4 * M_PI * g->G * all + 2 * g->G * M / (r * r * r);
    *d1 = r1 / p1;
    *d2 = (r2 * p1 - r1 * p2) / (p1 * p1 * p1);
}

ic_df_model gx_df_model(const gx_df_ctx *ctx)
{
    const gx_model *g = ctx->g;
    const ic_df_model m = {ctx, ctx->c == GX_HALO ? "galaxy halo" : "galaxy bulge", g->r_max, g->psi_max, gx_psi,
                           gx_depth, gx_radius_of_depth, gx_dpsi_ds, gx_drho_dpsi};
    return m;
}
