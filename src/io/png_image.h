/* Internal: writing PNG images (libpng) and their colour map. */
#ifndef BN_PNG_IMAGE_H
#define BN_PNG_IMAGE_H
#include "banyan.h"

/* An approximation of matplotlib's perceptually uniform "inferno": t in
 * [0, 1] (clamped) to 8-bit RGB. */
void bn_colour_inferno(double t, unsigned char rgb[3]);
/* w x h RGB pixels (rows top to bottom) to path, through a temporary
 * file renamed at the end. */
bn_status bn_png_write_atomic(const char *path, int w, int h, const unsigned char *rgb);
#endif
