/* PNG images: libpng behind a temporary file and a rename, and the colour
 * map the pictures share. */
#include "io/png_image.h"
#include <math.h>
#include <png.h>
#include <stdio.h>
#include "core/error.h"
#include "io/atomic_file.h"

/* Polynomial fit to matplotlib's inferno (t in [0, 1]): black through
 * purple and orange to pale yellow, luminance increasing monotonically. */
void bn_colour_inferno(double t, unsigned char rgb[3])
{
    static const double c[7][3] = {{0.0002189403691192265, 0.001651004631001012, -0.01948089843709184},
                                   {0.1065134194856116, 0.5639564367884091, 3.932712388889277},
                                   {11.60249308247187, -3.972853965665698, -15.9423941062914},
                                   {-41.70399613139459, 17.43639888205313, 44.35414519872813},
                                   {77.162935699427, -33.40235894210092, -81.80730925738993},
                                   {-71.31942824499214, 32.62606426397723, 73.20951985803202},
                                   {25.13112622477341, -12.24266895238567, -23.07032500287172}};
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    for (int k = 0; k < 3; k++) {
        double v = c[6][k];
        for (int d = 5; d >= 0; d--) v = v * t + c[d][k];
        v = v < 0 ? 0 : v > 1 ? 1 : v;
        rgb[k] = (unsigned char)lround(255.0 * v);
    }
}

/* libpng reports errors through a callback that must not return. */
static void on_png_error(png_structp png, png_const_charp msg)
{
    bn_fail(BN_ERR_IO, "libpng: %s", msg);
    png_longjmp(png, 1);
}
static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg; /* the library never prints */
}

static bn_status png_write_rgb(FILE *fp, int w, int h, const unsigned char *rgb)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        return bn_fail(BN_ERR_NOMEM, "libpng: cannot create the writer");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return BN_ERR_IO; /* message set by on_png_error */
    }
    png_init_io(png, fp);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int j = 0; j < h; j++) png_write_row(png, (png_const_bytep)(rgb + (size_t)3 * w * j));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return BN_OK;
}

static bn_status write_png_file(const char *tmp, int w, int h, const unsigned char *rgb)
{
    FILE *fp = fopen(tmp, "wb");
    if (!fp) return bn_fail(BN_ERR_IO, "cannot open %s for writing", tmp);
    bn_status s = png_write_rgb(fp, w, h, rgb);
    if (fclose(fp) != 0 && s == BN_OK) s = bn_fail(BN_ERR_IO, "cannot write %s (disk full?)", tmp);
    return s;
}

bn_status bn_png_write_atomic(const char *path, int w, int h, const unsigned char *rgb)
{
    char *tmp = NULL;
    BN_TRY(bn_atomic_begin(path, &tmp));
    bn_status s = write_png_file(tmp, w, h, rgb);
    if (s != BN_OK) {
        bn_atomic_abort(tmp);
        return s;
    }
    return bn_atomic_commit(tmp, path);
}
