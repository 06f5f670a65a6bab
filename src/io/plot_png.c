/* A plain line plot as a PNG (plot_png.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "io/plot_png.h"
#include "io/png_image.h"

#define MARGIN 24 /* pixels between the frame and the image's edge */

typedef struct {
    int w, h;
    unsigned char *rgb;
    double xmax, ymax; /* the axes run from 0 */
} canvas;

static void put(canvas *c, int i, int j, const unsigned char rgb[3])
{
    if (i < 0 || j < 0 || i >= c->w || j >= c->h) return;
    memcpy(c->rgb + 3 * ((size_t)j * c->w + i), rgb, 3);
}

/* Pixel of data point (x, y): y up. */
static void to_pixel(const canvas *c, double x, double y, double *i, double *j)
{
    *i = MARGIN + x / c->xmax * (c->w - 2 * MARGIN);
    *j = c->h - MARGIN - y / c->ymax * (c->h - 2 * MARGIN);
}

static void line(canvas *c, double i0, double j0, double i1, double j1, const unsigned char rgb[3])
{
    const int steps = (int)fmax(fabs(i1 - i0), fabs(j1 - j0)) + 1;
    for (int k = 0; k <= steps; k++) {
        const double t = (double)k / steps;
        put(c, (int)lround(i0 + t * (i1 - i0)), (int)lround(j0 + t * (j1 - j0)), rgb);
    }
}

/* A round step giving 4 to 10 grid lines up to max. */
static double grid_step(double max)
{
    const double p = pow(10, floor(log10(max)));
    return max / p > 5 ? p : max / p > 2 ? p / 2 : p / 5;
}

static void axes(canvas *c)
{
    static const unsigned char grey[3] = {220, 220, 220}, black[3] = {0, 0, 0};
    double i, j, i1, j1;
    for (double x = grid_step(c->xmax); x < c->xmax; x += grid_step(c->xmax)) {
        to_pixel(c, x, 0, &i, &j);
        line(c, i, j, i, MARGIN, grey);
    }
    for (double y = grid_step(c->ymax); y < c->ymax; y += grid_step(c->ymax)) {
        to_pixel(c, 0, y, &i, &j);
        line(c, i, j, c->w - MARGIN, j, grey);
    }
    to_pixel(c, 0, 0, &i, &j);
    to_pixel(c, c->xmax, c->ymax, &i1, &j1);
    line(c, i, j, i1, j, black);
    line(c, i, j1, i1, j1, black);
    line(c, i, j, i, j1, black);
    line(c, i1, j, i1, j1, black);
}

static void series(canvas *c, const bn_plot_series *s)
{
    double pi = NAN, pj = NAN;
    for (size_t k = 0; k < s->n; k++) {
        double i, j;
        if (!isfinite(s->x[k]) || !(s->y[k] <= c->ymax)) { /* a gap in the line */
            pi = pj = NAN;
            continue;
        }
        to_pixel(c, s->x[k], s->y[k], &i, &j);
        if (s->points) {
            for (int di = -3; di <= 3; di++)
                for (int dj = -3; dj <= 3; dj++)
                    if (di * di + dj * dj <= 10) put(c, (int)lround(i) + di, (int)lround(j) + dj, s->rgb);
        } else if (isfinite(pi)) {
            line(c, pi, pj, i, j, s->rgb);
            line(c, pi, pj + 1, i, j + 1, s->rgb); /* two pixels thick */
        }
        pi = i;
        pj = j;
    }
}

bn_status bn_plot_png(const char *path, int w, int h, double ymax, const bn_plot_series *s, int n_series)
{
    if (w < 64 || h < 64 || w > 4096 || h > 4096)
        return bn_fail(BN_ERR_ARGUMENT, "%s: plot of %d x %d pixels (64 to 4096 each)", path, w, h);
    canvas c = {w, h, NULL, 0, 0};
    for (int k = 0; k < n_series; k++)
        for (size_t m = 0; m < s[k].n; m++)
            if (isfinite(s[k].x[m]) && isfinite(s[k].y[m])) {
                c.xmax = fmax(c.xmax, s[k].x[m]);
                c.ymax = fmax(c.ymax, 1.1 * s[k].y[m]);
            }
    if (ymax > 0) c.ymax = ymax;
    if (!(c.xmax > 0 && c.ymax > 0)) return bn_fail(BN_ERR_ARGUMENT, "%s: nothing positive to plot", path);
    c.rgb = bn_alloc((size_t)3 * w * h, "plot pixels");
    if (!c.rgb) return BN_ERR_NOMEM;
    memset(c.rgb, 255, (size_t)3 * w * h);
    axes(&c);
    for (int k = 0; k < n_series; k++) series(&c, &s[k]);
    const bn_status st = bn_png_write_atomic(path, w, h, c.rgb);
    free(c.rgb);
    return st;
}
