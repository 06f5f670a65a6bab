/* Projected log surface density of a particle set, written as a PNG.
 *
 * Mass is deposited with cloud-in-cell onto a width x height grid of
 * square pixels centred on the centre of mass; the view's half-size along
 * the shorter image side is `extent` (or, when 0, the radius holding 98%
 * of the mass, so a few escapers do not shrink the picture). When there
 * are fewer particles than pixels the map is smoothed with a Gaussian as
 * wide as the mean particle spacing in pixels, so a sparse snapshot shows
 * a density field rather than isolated dots. Densities span four decades
 * below the brightest pixel and are coloured with an approximation of
 * matplotlib's perceptually uniform "inferno". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "io/png_image.h"

#define RENDER_MAX_SIDE 16384
#define RENDER_MASS_FRACTION 0.98
#define RENDER_DECADES 4.0
#define RENDER_MAX_SMOOTH 8.0 /* pixels */

bn_render_params bn_render_params_default(void)
{
    bn_render_params r = {800, 800, 2, 0.0};
    return r;
}

static bn_status check_params(const bn_render_params *r)
{
    if (r->width < 1 || r->width > RENDER_MAX_SIDE || r->height < 1 || r->height > RENDER_MAX_SIDE)
        return bn_fail(BN_ERR_ARGUMENT, "image size %d x %d: each side must be in [1, %d]", r->width, r->height,
                       RENDER_MAX_SIDE);
    if (r->axis < 0 || r->axis > 2)
        return bn_fail(BN_ERR_ARGUMENT, "projection axis %d: must be 0 (x), 1 (y) or 2 (z)", r->axis);
    if (!(isfinite(r->extent) && r->extent >= 0))
        return bn_fail(BN_ERR_ARGUMENT, "extent %g: must be finite and >= 0 (0: from the data)", r->extent);
    return BN_OK;
}

static double mass_within(const bn_particles *p, const double *d2, double r2)
{
    double m = 0;
    for (size_t i = 0; i < p->n; i++)
        if (d2[i] <= r2) m += p->mass[i];
    return m;
}

/* Radius around c holding `fraction` of the mass: bisection on the squared
 * distances (computed once), to a relative precision far below a pixel. */
static bn_status radius_holding(const bn_particles *p, const double c[3], double fraction, double *radius)
{
    double *d2 = bn_alloc(p->n * sizeof *d2, "render: particle distances");
    if (!d2) return BN_ERR_NOMEM;
    double hi = 0, lo = 0, target = fraction * bn_particles_total_mass(p);
    for (size_t i = 0; i < p->n; i++) {
        d2[i] = 0;
        for (int k = 0; k < 3; k++) d2[i] += (p->pos[k][i] - c[k]) * (p->pos[k][i] - c[k]);
        hi = d2[i] > hi ? d2[i] : hi;
    }
    for (int it = 0; it < 48 && hi > 0; it++) {
        double mid = 0.5 * (lo + hi);
        if (mass_within(p, d2, mid) >= target) hi = mid;
        else lo = mid;
    }
    free(d2);
    *radius = sqrt(hi);
    return BN_OK;
}

/* Cloud-in-cell deposit of surface density; row 0 is the top of the image. */
static size_t deposit(const bn_particles *p, const bn_render_params *r, const double c[3], double half,
                      double *sigma)
{
    int ha = (r->axis + 1) % 3, va = (r->axis + 2) % 3; /* right-handed: x->(y,z), y->(z,x), z->(x,y) */
    int w = r->width, h = r->height;
    double ds = 2.0 * half / (w < h ? w : h), inv_area = 1.0 / (ds * ds);
    size_t in_view = 0;
    for (size_t i = 0; i < p->n; i++) {
        /* continuous pixel coordinates of the particle, pixel centres at k + 0.5 */
        double x = (p->pos[ha][i] - c[ha]) / ds + 0.5 * w - 0.5;
        double y = 0.5 * h - (p->pos[va][i] - c[va]) / ds - 0.5;
        if (!(x > -1 && x < w && y > -1 && y < h)) continue;
        in_view++;
        int i0 = (int)floor(x), j0 = (int)floor(y);
        double fx = x - i0, fy = y - j0, m = p->mass[i] * inv_area;
        double wgt[2][2] = {{(1 - fx) * (1 - fy), fx * (1 - fy)}, {(1 - fx) * fy, fx * fy}};
        for (int dj = 0; dj < 2; dj++)
            for (int di = 0; di < 2; di++) {
                int ii = i0 + di, jj = j0 + dj;
                if (ii >= 0 && ii < w && jj >= 0 && jj < h) sigma[(size_t)jj * w + ii] += m * wgt[dj][di];
            }
    }
    return in_view;
}

/* One pass of a normalised Gaussian blur along rows (stride 1) or columns
 * (stride w): mass is kept except what spills over the image edge. */
static void blur_pass(double *a, double *line, int len, int count, size_t stride, size_t step, const double *k,
                      int r)
{
    for (int c = 0; c < count; c++) {
        double *base = a + (size_t)c * step;
        for (int i = 0; i < len; i++) line[i] = base[(size_t)i * stride];
        for (int i = 0; i < len; i++) {
            double v = 0;
            for (int d = -r; d <= r; d++)
                if (i + d >= 0 && i + d < len) v += k[d + r] * line[i + d];
            base[(size_t)i * stride] = v;
        }
    }
}

/* Smooth by the mean particle spacing within the view (none when every
 * pixel gets about one particle or more). */
static bn_status smooth(double *sigma, int w, int h, size_t n_in_view)
{
    double s = n_in_view ? 0.5 * sqrt((double)w * h / (double)n_in_view) : 0;
    if (s > RENDER_MAX_SMOOTH) s = RENDER_MAX_SMOOTH;
    if (s < 0.5) return BN_OK;
    int r = (int)ceil(3 * s), len = w > h ? w : h;
    double *k = bn_alloc((size_t)(2 * r + 1 + len) * sizeof *k, "smoothing kernel"), sum = 0;
    if (!k) return BN_ERR_NOMEM;
    for (int d = -r; d <= r; d++) sum += k[d + r] = exp(-0.5 * d * d / (s * s));
    for (int d = 0; d <= 2 * r; d++) k[d] /= sum;
    blur_pass(sigma, k + 2 * r + 1, w, h, 1, (size_t)w, k, r);
    blur_pass(sigma, k + 2 * r + 1, h, w, (size_t)w, 1, k, r);
    free(k);
    return BN_OK;
}

/* log10 of the densities mapped to [0, 1] over RENDER_DECADES below the
 * maximum; empty pixels are black. */
static void colour(const double *sigma, size_t npix, unsigned char *rgb)
{
    double hi = 0;
    for (size_t i = 0; i < npix; i++)
        if (sigma[i] > hi) hi = sigma[i];
    double lo = hi * pow(10.0, -RENDER_DECADES);
    for (size_t i = 0; i < npix; i++) {
        double t = sigma[i] > lo && hi > 0 ? log10(sigma[i] / lo) / RENDER_DECADES : 0.0;
        bn_colour_inferno(t, rgb + 3 * i);
    }
}

bn_status bn_render_png(const char *path, const bn_particles *p, const bn_render_params *params)
{
    if (!path) return bn_fail(BN_ERR_ARGUMENT, "bn_render_png: path is NULL");
    bn_render_params r = params ? *params : bn_render_params_default();
    BN_TRY(check_params(&r));
    BN_TRY(bn_particles_validate(p, "render"));
    double c[3];
    bn_particles_centre_of_mass(p, c);
    double half = r.extent;
    if (half == 0) BN_TRY(radius_holding(p, c, RENDER_MASS_FRACTION, &half));
    if (!(half > 0)) half = 1.0; /* every particle on the centre of mass */
    size_t npix = (size_t)r.width * (size_t)r.height;
    double *sigma = bn_calloc(npix, sizeof *sigma, "image densities");
    unsigned char *rgb = sigma ? bn_alloc(3 * npix, "image pixels") : NULL;
    bn_status s = rgb ? BN_OK : BN_ERR_NOMEM;
    if (s == BN_OK) {
        s = smooth(sigma, r.width, r.height, deposit(p, &r, c, half, sigma));
    }
    if (s == BN_OK) {
        colour(sigma, npix, rgb);
        s = bn_png_write_atomic(path, r.width, r.height, rgb);
    }
    free(sigma);
    free(rgb);
    return s == BN_OK ? BN_OK : bn_fail_context(s, "rendering %s", path);
}
