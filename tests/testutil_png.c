/* Pictures read back for the tests (testutil.h). */
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

tu_image tu_read_png(const char *path)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&im, path)) fail_msg("libpng cannot read %s: %s", path, im.message);
    im.format = PNG_FORMAT_RGB;
    tu_image out = {(int)im.width, (int)im.height, malloc(PNG_IMAGE_SIZE(im))};
    if (!png_image_finish_read(&im, NULL, out.rgb, 0, NULL)) fail_msg("libpng: %s", im.message);
    return out;
}
