/* Projected log surface density of a particle set, written as a PNG.
 *
 * Mass is deposited with cloud-in-cell onto a width x height grid of
 * square pixels in the frame render_view.c chooses (an axis, or face-on
 * or edge-on to a disk). When there are fewer particles than pixels the
 * map is smoothed with a Gaussian as wide as the mean particle spacing in
 * pixels, so a sparse snapshot shows a density field rather than
 * isolated dots. Densities span four decades below the brightest pixel
 * and are coloured with an approximation of matplotlib's perceptually
 * uniform "inferno"; with several part types each is deposited, smoothed
 * and scaled on its own and drawn in its own colour, the colours added
 * (where components overlap the picture tends to white, as light
 * would). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "io/png_image.h"
#include "io/render_view.h"

#define RENDER_MAX_SIDE 16384
#define RENDER_DECADES 4.0
#define RENDER_MAX_SMOOTH 8.0 /* pixels */

bn_render_params bn_render_params_default(void)
{
    bn_render_params r = {800, 800, 2, 0.0, BN_VIEW_AXIS, -1};
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
    if ((int)r->view < BN_VIEW_AXIS || r->view > BN_VIEW_EDGE_ON)
        return bn_fail(BN_ERR_ARGUMENT, "view %d: must be 0 (along the axis), 1 (face-on) or 2 (edge-on)",
                       (int)r->view);
    if (r->component < -1 || r->component >= BN_PART_TYPES)
        return bn_fail(BN_ERR_ARGUMENT, "component %d: must be a part type in [0, %d], or -1 for all", r->component,
                       BN_PART_TYPES - 1);
    return BN_OK;
}

/* Cloud-in-cell deposit of the surface density of the particles of part
 * type `only` (-1: all); row 0 is the top of the image. */
static size_t deposit(const bn_particles *p, const bn_render_params *r, const bn_render_frame *f, int only,
                      double *sigma)
{
    int w = r->width, h = r->height;
    double ds = 2.0 * f->half / (w < h ? w : h), inv_area = 1.0 / (ds * ds);
    size_t in_view = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (!bn_render_drawn(p, i, only)) continue;
        double a = 0, b = 0;
        for (int k = 0; k < 3; k++) {
            a += (p->pos[k][i] - f->centre[k]) * f->right[k];
            b += (p->pos[k][i] - f->centre[k]) * f->up[k];
        }
        /* continuous pixel coordinates of the particle, pixel centres at k + 0.5 */
        double x = a / ds + 0.5 * w - 0.5;
        double y = 0.5 * h - b / ds - 0.5;
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
 * maximum (empty pixels 0), in place. */
static void brightness(double *sigma, size_t npix)
{
    double hi = 0;
    for (size_t i = 0; i < npix; i++)
        if (sigma[i] > hi) hi = sigma[i];
    double lo = hi * pow(10.0, -RENDER_DECADES);
    for (size_t i = 0; i < npix; i++) sigma[i] = sigma[i] > lo && hi > 0 ? log10(sigma[i] / lo) / RENDER_DECADES : 0.0;
}

void bn_render_part_colour(int type, unsigned char rgb[3])
{
    static const unsigned char palette[BN_PART_TYPES][3] = {
        {60, 200, 90},   /* PartType0 (gas): green                     */
        {30, 50, 140},   /* halo: dim blue, so that the disk shows on it */
        {255, 236, 190}, /* disk: warm white                            */
        {255, 120, 30},  /* bulge: orange                               */
        {200, 70, 200},  /* PartType4 (stars): magenta                  */
        {150, 150, 150}, /* PartType5 (black holes): grey               */
    };
    static const unsigned char none[3] = {0, 0, 0};
    memcpy(rgb, type >= 0 && type < BN_PART_TYPES ? palette[type] : none, 3);
}

/* The surface density of part type `only` (-1: all) in sigma (zeroed
 * here), smoothed, as brightness in [0, 1]. */
static bn_status layer(const bn_particles *p, const bn_render_params *r, const bn_render_frame *f, int only,
                       double *sigma)
{
    const size_t npix = (size_t)r->width * (size_t)r->height;
    memset(sigma, 0, npix * sizeof *sigma);
    BN_TRY(smooth(sigma, r->width, r->height, deposit(p, r, f, only, sigma)));
    brightness(sigma, npix);
    return BN_OK;
}

/* Bit t: part type t has drawn particles. */
static unsigned types_drawn(const bn_particles *p, int component)
{
    unsigned mask = 0;
    for (size_t i = 0; i < p->n; i++)
        if (bn_render_drawn(p, i, component)) mask |= 1u << bn_particles_part_type(p, i);
    return mask;
}

/* One part type in inferno, several each in its colour, added. */
static bn_status paint(const bn_particles *p, const bn_render_params *r, const bn_render_frame *f, unsigned types,
                       double *sigma, unsigned char *rgb)
{
    const size_t npix = (size_t)r->width * (size_t)r->height;
    if (!(types & (types - 1))) {
        BN_TRY(layer(p, r, f, r->component, sigma));
        for (size_t i = 0; i < npix; i++) bn_colour_inferno(sigma[i], rgb + 3 * i);
        return BN_OK;
    }
    double *sum = bn_calloc(3 * npix, sizeof *sum, "image colours");
    if (!sum) return BN_ERR_NOMEM;
    bn_status s = BN_OK;
    for (int t = 0; t < BN_PART_TYPES && s == BN_OK; t++) {
        if (!(types >> t & 1)) continue;
        unsigned char c[3];
        bn_render_part_colour(t, c);
        s = layer(p, r, f, t, sigma);
        for (size_t i = 0; s == BN_OK && i < npix; i++)
            for (int k = 0; k < 3; k++) sum[3 * i + k] += sigma[i] * c[k];
    }
    for (size_t i = 0; s == BN_OK && i < 3 * npix; i++) rgb[i] = (unsigned char)(sum[i] < 255 ? sum[i] + 0.5 : 255);
    free(sum);
    return s;
}

bn_status bn_render_png(const char *path, const bn_particles *p, const bn_render_params *params)
{
    if (!path) return bn_fail(BN_ERR_ARGUMENT, "bn_render_png: path is NULL");
    bn_render_params r = params ? *params : bn_render_params_default();
    BN_TRY(check_params(&r));
    BN_TRY(bn_particles_validate(p, "render"));
    const unsigned types = types_drawn(p, r.component);
    if (!types)
        return bn_fail(BN_ERR_ARGUMENT, "render %s: no particle of part type %d (%s) in the set", path, r.component,
                       bn_part_type_name(r.component));
    bn_render_frame f;
    BN_TRY(bn_render_frame_make(p, &r, &f));
    size_t npix = (size_t)r.width * (size_t)r.height;
    double *sigma = bn_alloc(npix * sizeof *sigma, "image densities");
    unsigned char *rgb = sigma ? bn_alloc(3 * npix, "image pixels") : NULL;
    bn_status s = rgb ? paint(p, &r, &f, types, sigma, rgb) : BN_ERR_NOMEM;
    if (s == BN_OK) s = bn_png_write_atomic(path, r.width, r.height, rgb);
    free(sigma);
    free(rgb);
    return s == BN_OK ? BN_OK : bn_fail_context(s, "rendering %s", path);
}
