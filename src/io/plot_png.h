/* Internal: a plain line plot as a PNG (banyan ic galaxy --plots): curves
 * and point series on axes from 0 to a little above the largest value,
 * with a frame and grid lines at round steps (no text: the caller says
 * what the axes are). */
#ifndef BN_PLOT_PNG_H
#define BN_PLOT_PNG_H
#include "banyan.h"

typedef struct bn_plot_series {
    const double *x, *y;   /* n values each; non-finite ones are skipped */
    size_t n;
    int points;            /* 1: markers, 0: a line through them        */
    unsigned char rgb[3];
} bn_plot_series;

/* w x h pixels (each 64..4096), through a temporary file and a rename;
 * y from 0 to ymax (0: a tenth above the largest value; values above
 * ymax are left out). */
bn_status bn_plot_png(const char *path, int w, int h, double ymax, const bn_plot_series *s, int n_series);
#endif
