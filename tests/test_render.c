/* PNG rendering: size read back with libpng, mass shows up where it is
 * (an off-centre blob lands in the predicted pixel for each axis), the
 * automatic extent is the 98%-mass radius, bad parameters are refused and
 * leave no file. */
#include "test_snapshot_fixtures.h"

typedef tu_image image;
#define read_png tu_read_png

static double luminance(const image *im, int x, int y)
{
    const unsigned char *p = im->rgb + 3 * ((size_t)y * (size_t)im->w + (size_t)x);
    return 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2];
}

/* Centroid of the pixels within 5% of the brightest. */
static void bright_centroid(const image *im, double *cx, double *cy)
{
    double top = 0, sx = 0, sy = 0, n = 0;
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++)
            if (luminance(im, x, y) > top) top = luminance(im, x, y);
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++)
            if (luminance(im, x, y) >= 0.95 * top) {
                sx += x + 0.5;
                sy += y + 0.5;
                n++;
            }
    *cx = sx / n;
    *cy = sy / n;
}

/* A uniform cube of mass ~1 plus a compact blob of mass 0.05 at b. */
static bn_particles *cube_and_blob(const double b[3])
{
    size_t nc = 20000, nb = 2000;
    bn_particles *p = tu_random_particles(nc, 4, 0), *blob = tu_random_particles(nb, 5, 1);
    TU_OK(bn_particles_resize(p, nc + nb));
    for (size_t i = 0; i < nb; i++) {
        for (int k = 0; k < 3; k++) p->pos[k][nc + i] = b[k] + 0.01 * blob->pos[k][i];
        p->mass[nc + i] = 0.05 / (double)nb;
        p->id[nc + i] = nc + i + 1;
    }
    bn_particles_free(blob);
    return p;
}

static void centre_of_mass(const bn_particles *p, double c[3])
{
    double m = 0;
    c[0] = c[1] = c[2] = 0;
    for (size_t i = 0; i < p->n; i++) {
        m += p->mass[i];
        for (int k = 0; k < 3; k++) c[k] += p->mass[i] * p->pos[k][i];
    }
    for (int k = 0; k < 3; k++) c[k] /= m;
}

/* Render along `axis` and check the blob's pixel: x right = axis+1, y up =
 * axis+2 (cyclic), centred on the centre of mass, pixel 2 * extent /
 * min(w, h). */
static void check_blob(int axis, const double b[3], int want_right, int want_up)
{
    char *dir = fx_tmpdir(), *path = fx_path(dir, "blob.png");
    bn_particles *p = cube_and_blob(b);
    bn_render_params r = bn_render_params_default();
    r.width = 200;
    r.height = 100;
    r.axis = axis;
    r.extent = 1.5;
    TU_OK(bn_render_png(path, p, &r));
    image im = read_png(path);
    assert_int_equal(im.w, 200);
    assert_int_equal(im.h, 100);
    double c[3], cx, cy, ds = 2 * r.extent / 100.0;
    centre_of_mass(p, c);
    int ha = (axis + 1) % 3, va = (axis + 2) % 3;
    double want_x = 100 + (b[ha] - c[ha]) / ds, want_y = 50 - (b[va] - c[va]) / ds;
    bright_centroid(&im, &cx, &cy);
    if (fabs(cx - want_x) > 1.5 || fabs(cy - want_y) > 1.5)
        fail_msg("axis %d: brightest at (%.1f, %.1f), blob expected at (%.1f, %.1f)", axis, cx, cy, want_x, want_y);
    assert_int_equal(cx > 100, want_right);
    assert_int_equal(cy < 50, want_up);
    /* the corners are empty: black */
    assert_true(luminance(&im, 0, 0) < 5 && luminance(&im, 199, 99) < 5);
    free(im.rgb);
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

static void test_blob_positions(void **state)
{
    (void)state;
    double bz[3] = {0.6, 0.3, 0.0}, bx[3] = {0.0, 0.6, -0.3}, by[3] = {0.3, 0.0, -0.6};
    check_blob(2, bz, 1, 1); /* along z: x right, y up */
    check_blob(0, bx, 1, 0); /* along x: y right, z up */
    check_blob(1, by, 0, 1); /* along y: z right, x up */
}

static double image_difference(const image *a, const image *b)
{
    double d = 0;
    for (size_t i = 0; i < 3 * (size_t)a->w * (size_t)a->h; i++) d = fmax(d, fabs((double)a->rgb[i] - b->rgb[i]));
    return d;
}

/* 98 unit masses within radius 1 (the outermost exactly at 1) and 2 at
 * radius 100: the 98% radius is 1, so extent 0 must draw what extent 1
 * draws, and not what extent 2 draws. */
static void test_auto_extent(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *pa = fx_path(dir, "auto.png"), *p1 = fx_path(dir, "one.png"),
         *p2 = fx_path(dir, "two.png");
    bn_particles *p = NULL;
    TU_OK(bn_particles_create(&p, 100));
    for (size_t i = 0; i < 100; i++) {
        double s = i % 2 ? -1.0 : 1.0, r = i >= 98 ? 100.0 : (i < 2 ? 1.0 : 0.9 * (double)(i / 2) / 49.0);
        double ang = 0.37 * (double)(i / 2);
        p->pos[0][i] = s * r * cos(ang); /* pairs mirror each other: centre of mass at 0 */
        p->pos[1][i] = s * r * sin(ang);
        p->pos[2][i] = 0;
        p->mass[i] = 1.0;
        p->id[i] = i + 1;
    }
    bn_render_params r = bn_render_params_default();
    r.width = r.height = 64;
    TU_OK(bn_render_png(pa, p, &r));
    r.extent = 1.0;
    TU_OK(bn_render_png(p1, p, &r));
    r.extent = 2.0;
    TU_OK(bn_render_png(p2, p, &r));
    image a = read_png(pa), one = read_png(p1), two = read_png(p2);
    assert_true(image_difference(&a, &one) <= 1);
    assert_true(image_difference(&a, &two) > 50);
    free(a.rgb);
    free(one.rgb);
    free(two.rgb);
    bn_particles_free(p);
    free(pa);
    free(p1);
    free(p2);
    fx_rmdir(dir);
}

static void test_bad_parameters_leave_nothing(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "x.png");
    bn_particles *p = tu_random_particles(100, 1, 1);
    bn_render_params r = bn_render_params_default();
    r.width = 0;
    TU_FAILS(bn_render_png(path, p, &r), BN_ERR_ARGUMENT, "image size 0 x 800");
    r = bn_render_params_default();
    r.axis = 3;
    TU_FAILS(bn_render_png(path, p, &r), BN_ERR_ARGUMENT, "axis 3");
    r = bn_render_params_default();
    r.extent = NAN;
    TU_FAILS(bn_render_png(path, p, &r), BN_ERR_ARGUMENT, "extent");
    r.extent = -1;
    TU_FAILS(bn_render_png(path, p, &r), BN_ERR_ARGUMENT, "extent");
    p->pos[0][17] = INFINITY;
    TU_FAILS(bn_render_png(path, p, NULL), BN_ERR_ARGUMENT, "particle 17");
    p->pos[0][17] = 0;
    TU_FAILS(bn_render_png("/nonexistent-dir/x.png", p, NULL), BN_ERR_IO, "/nonexistent-dir/x.png");
    assert_int_equal(fx_count_files(dir, NULL, 0), 0);
    /* and a good one writes exactly one file, the default 800 x 800 */
    TU_OK(bn_render_png(path, p, NULL));
    image im = read_png(path);
    assert_int_equal(im.w, 800);
    assert_int_equal(im.h, 800);
    assert_int_equal(fx_count_files(dir, NULL, 0), 1);
    free(im.rgb);
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blob_positions),
        cmocka_unit_test(test_auto_extent),
        cmocka_unit_test(test_bad_parameters_leave_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
