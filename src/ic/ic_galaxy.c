/*
 * Galaxy models: the M31 preset, validation, the particle split, and
 * sampling (halo, disk, bulge in that order; ids 1..N; part types 1, 2,
 * 3; centre of mass at rest at the origin).
 */
#include <math.h>
#include <string.h>
#include "core/error.h"
#include "ic/ic_galaxy.h"

#define CM_PER_KPC 3.085677581491367e21
#define G_PER_MSUN 1.988409870698051e33 /* IAU 2015 nominal GM_sun / G (CODATA 2018) */
#define G_KPC_MSUN_KMS 4.30091727e-6     /* kpc (km/s)^2 / Msun */
#define GX_TAPER_MIN 0.02                /* narrowest taper width over its cutoff */

bn_units bn_units_kpc_msun_kms(void)
{
    const bn_units u = {CM_PER_KPC, G_PER_MSUN, 1e5, G_KPC_MSUN_KMS};
    return u;
}

static bn_galaxy_component spheroid(bn_galaxy_profile prof, double mass, double scale, double cutoff, double width)
{
    bn_galaxy_component c;
    memset(&c, 0, sizeof c);
    c.profile = prof;
    c.mass = mass;
    c.scale = scale;
    c.cutoff = cutoff;
    c.cutoff_width = width;
    return c;
}

bn_galaxy_model bn_galaxy_model_m31(void)
{
    bn_galaxy_model m;
    memset(&m, 0, sizeof m);
    m.units = bn_units_kpc_msun_kms();
    /* cutoffs: halo 25 r_s, bulge 20 a, disk 6 R_d; widths a tenth of the
     * halo's and bulge's, half R_d (the numbers of examples/galaxies/m31.yml) */
    m.halo = spheroid(BN_GALAXY_NFW, 8.11e11, 7.63, 190.75, 19.075);
    m.bulge = spheroid(BN_GALAXY_HERNQUIST, 3.24e10, 0.61, 12.2, 1.22);
    m.disk = spheroid(BN_GALAXY_EXPONENTIAL, 3.66e10, 5.4, 32.4, 2.7);
    m.disk.scale_height = 0.6;
    m.disk.vertical = BN_GALAXY_SECH2;
    m.disk.toomre_q = 2.0;
    m.disk.q_radius = 5.4;
    return m;
}

static int positive(double x) { return x > 0 && isfinite(x); }

static bn_status check_component(const char *name, const bn_galaxy_component *c, int disk)
{
    if (c->profile == BN_GALAXY_NONE) return BN_OK;
    if (disk != (c->profile == BN_GALAXY_EXPONENTIAL))
        return bn_fail(BN_ERR_ARGUMENT, "galaxy: %s: profile %d is not one a %s can have (%s)", name, (int)c->profile,
                       name, disk ? "exponential" : "nfw or hernquist");
    const struct { const char *key; double v; } need[] = {
        {"mass", c->mass}, {"scale", c->scale}, {"cutoff", c->cutoff}, {"cutoff_width", c->cutoff_width},
        {"scale_height", disk ? c->scale_height : 1}, {"toomre_q", disk ? c->toomre_q : 1},
        {"q_radius", disk ? c->q_radius : 1}};
    for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
        if (!positive(need[k].v))
            return bn_fail(BN_ERR_ARGUMENT, "galaxy: %s: %s = %g (must be finite and > 0)", name, need[k].key,
                           need[k].v);
    /* the potential's tables (and the DF's quadrature) resolve tapers down
     * to a few % of their radius: sharper ones broke the speed sampling */
    if (c->cutoff_width < GX_TAPER_MIN * c->cutoff)
        return bn_fail(BN_ERR_ARGUMENT, "galaxy: %s: cutoff_width = %g is below %g of the cutoff %g (too sharp a "
                       "taper to resolve)", name, c->cutoff_width, GX_TAPER_MIN, c->cutoff);
    if (!(c->particle_mass >= 0 && isfinite(c->particle_mass)))
        return bn_fail(BN_ERR_ARGUMENT, "galaxy: %s: particle_mass = %g (must be finite and >= 0)", name,
                       c->particle_mass);
    if (disk && c->vertical != BN_GALAXY_SECH2 && c->vertical != BN_GALAXY_EXP)
        return bn_fail(BN_ERR_ARGUMENT, "galaxy: disk: vertical profile %d (sech2 or exponential)", (int)c->vertical);
    return BN_OK;
}

bn_status bn_galaxy_model_validate(const bn_galaxy_model *m)
{
    if (!m) return bn_fail(BN_ERR_ARGUMENT, "galaxy: model is NULL");
    BN_TRY(check_component("halo", &m->halo, 0));
    BN_TRY(check_component("bulge", &m->bulge, 0));
    BN_TRY(check_component("disk", &m->disk, 1));
    if (m->halo.profile == BN_GALAXY_NONE && m->bulge.profile == BN_GALAXY_NONE && m->disk.profile == BN_GALAXY_NONE)
        return bn_fail(BN_ERR_ARGUMENT, "galaxy: no component (halo, bulge or disk)");
    if (!positive(m->units.G)) return bn_fail(BN_ERR_ARGUMENT, "galaxy: units: G = %g (must be > 0)", m->units.G);
    return BN_OK;
}

/* ---- the particle split -------------------------------------------------- */
static const char *const gx_name[GX_COMPONENTS] = {"halo", "bulge", "disk"};

/* Counts per component: its own n, or mass / particle_mass, or a share of
 * n by mass (largest remainders: equal particle masses as near as whole
 * numbers allow, adding up to n). */
static bn_status split(const gx_model *g, size_t n, size_t count[GX_COMPONENTS])
{
    double shared_mass = 0;
    int shared = 0;
    for (int c = 0; c < GX_COMPONENTS; c++) {
        const bn_galaxy_component *cp = g->c[c];
        count[c] = 0;
        if (!cp) continue;
        if (cp->n > 0) count[c] = cp->n;
        else if (cp->particle_mass > 0) count[c] = (size_t)fmax(1.0, round(cp->mass / cp->particle_mass));
        else shared_mass += cp->mass, shared++;
    }
    if (shared && n == 0)
        return bn_fail(BN_ERR_ARGUMENT, "galaxy: no particle count: give n, or a count or particle mass to every "
                       "component");
    size_t given = 0;
    double best = -1;
    int largest = -1;
    for (int c = 0; c < GX_COMPONENTS; c++) {
        const bn_galaxy_component *cp = g->c[c];
        if (!cp || cp->n > 0 || cp->particle_mass > 0) continue;
        const double want = (double)n * cp->mass / shared_mass;
        count[c] = (size_t)floor(want);
        given += count[c];
        if (want - floor(want) > best) best = want - floor(want), largest = c;
    }
    if (largest >= 0 && given < n) count[largest] += n - given;
    for (int c = 0; c < GX_COMPONENTS; c++)
        if (g->c[c] && count[c] == 0)
            return bn_fail(BN_ERR_ARGUMENT, "galaxy: %s: no particle of %zu (give more, or its own count)", gx_name[c],
                           n);
    return BN_OK;
}

/* ---- spheroids ------------------------------------------------------------- */
static double spheroid_radius(const void *ctx, double f)
{
    const ic_df *df = ctx;
    const gx_df_ctx *x = df->m.ctx;
    return gx_radius_of_fraction(x->g, x->c, f);
}

static double spheroid_speed(const void *ctx, double r, uint64_t seed, uint64_t i, uint64_t draw)
{
    return ic_df_sample_speed(ctx, r, seed, i, draw);
}

static bn_status sample_spheroid(const gx_model *g, int c, bn_particles *p, size_t first, size_t n, uint64_t seed)
{
    const gx_df_ctx ctx = {g, c};
    const ic_df_model m = gx_df_model(&ctx);
    ic_df df;
    BN_TRY(ic_df_build_model(&df, &m));
    const ic_spherical model = {m.name, &df, spheroid_radius, spheroid_speed};
    const bn_status s = ic_sample_spherical(seed, p, first, n, g->c[c]->mass / (double)n, &model);
    ic_df_free(&df);
    return s;
}

/* Halo (PartType1), disk (2), bulge (3): the reader's order of types. */
static bn_status sample_all(const gx_model *g, const size_t count[GX_COMPONENTS], uint64_t seed, bn_particles *p)
{
    static const int order[GX_COMPONENTS] = {GX_HALO, GX_DISK, GX_BULGE};
    size_t first = 0;
    for (int k = 0; k < GX_COMPONENTS; k++) {
        const int c = order[k];
        if (!g->c[c]) continue;
        if (c == GX_DISK) BN_TRY(gx_disk_sample(g, p, first, count[c], seed));
        else BN_TRY(sample_spheroid(g, c, p, first, count[c], seed));
        memset(p->type + first, k + 1, count[c]);
        first += count[c];
    }
    BN_TRY(ic_centre(p));
    for (size_t i = 0; i < p->n; i++) p->id[i] = (uint64_t)i + 1;
    return bn_particles_validate(p, "galaxy");
}

bn_status bn_ic_galaxy(const bn_galaxy_model *m, size_t n, uint64_t seed, bn_particles **out)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_ic_galaxy: out is NULL");
    *out = NULL;
    gx_model g;
    BN_TRY(gx_model_build(&g, m));
    size_t count[GX_COMPONENTS];
    bn_status s = split(&g, n, count);
    bn_particles *p = NULL;
    if (s == BN_OK) s = bn_particles_create(&p, count[0] + count[1] + count[2]);
    if (s == BN_OK) s = bn_particles_ensure_types(p);
    if (s == BN_OK) s = sample_all(&g, count, seed, p);
    gx_model_free(&g);
    if (s != BN_OK) {
        bn_particles_free(p);
        return s;
    }
    *out = p;
    return BN_OK;
}

bn_status bn_galaxy_disk_curve(const bn_galaxy_model *m, size_t n, const double *R, bn_galaxy_disk_point *out)
{
    if (!R || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_galaxy_disk_curve: NULL argument");
    gx_model g;
    BN_TRY(gx_model_build(&g, m));
    const double sigma_r0 = g.c[GX_DISK] ? gx_disk_sigma_r0(&g) : 0;
    bn_status s = BN_OK;
    for (size_t i = 0; i < n && s == BN_OK; i++) {
        if (!(R[i] > 0 && isfinite(R[i])))
            s = bn_fail(BN_ERR_ARGUMENT, "bn_galaxy_disk_curve: radius %zu is %g (must be > 0)", i, R[i]);
        else gx_disk_point(&g, sigma_r0, R[i], &out[i]);
    }
    gx_model_free(&g);
    return s;
}
