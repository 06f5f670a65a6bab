/* Pictures of a galaxy: an M31 model turned to an arbitrary orientation,
 * drawn face-on and edge-on with one colour per component. The disk (the
 * pixels only the disk's warm white makes: green >= 200, while halo and
 * bulge together reach 50 + 120) must come out thin edge-on and round
 * face-on, whatever the turn; the halo's blue and the bulge's orange must
 * show; a component asked for alone is drawn alone. */
#include "test_snapshot_fixtures.h"

#define SIDE 200

/* M31 with more disk and bulge particles than equal masses would give
 * (the shapes are measured on them), turned 50 degrees about x and then
 * 30 about z, positions and velocities alike. */
static bn_particles *tilted_m31(void)
{
    bn_galaxy_model m = bn_galaxy_model_m31();
    m.halo.n = 16384, m.disk.n = 8192, m.bulge.n = 2048;
    bn_particles *p = NULL;
    TU_OK(bn_ic_galaxy(&m, 0, 7, &p));
    const double a = 50 * M_PI / 180, b = 30 * M_PI / 180;
    for (int q = 0; q < 2; q++) {
        double **w = q ? p->vel : p->pos;
        for (size_t i = 0; i < p->n; i++) {
            const double y = cos(a) * w[1][i] - sin(a) * w[2][i], z = sin(a) * w[1][i] + cos(a) * w[2][i];
            const double x = cos(b) * w[0][i] - sin(b) * y;
            w[1][i] = sin(b) * w[0][i] + cos(b) * y;
            w[0][i] = x;
            w[2][i] = z;
        }
    }
    return p;
}

typedef struct shape {
    double sx, sy;         /* rms extent of the disk's pixels, x and y   */
    double halo, bulge;    /* fractions of pixels blue / orange-tinted  */
} shape;

static shape measure(const tu_image *im)
{
    double n = 0, mx = 0, my = 0, mxx = 0, myy = 0, halo = 0, bulge = 0;
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) {
            const unsigned char *c = im->rgb + 3 * ((size_t)y * im->w + x);
            halo += c[2] > c[0] + 40 && c[2] > c[1] + 40; /* the halo's blue dominates */
            bulge += c[0] > c[1] + 60; /* only the bulge's orange is that much redder than green */
            if (c[1] < 200) continue;
            n++, mx += x, my += y, mxx += (double)x * x, myy += (double)y * y;
        }
    shape s = {0, 0, halo / ((double)im->w * im->h), bulge / ((double)im->w * im->h)};
    if (n > 0) {
        mx /= n, my /= n;
        s.sx = sqrt(mxx / n - mx * mx), s.sy = sqrt(myy / n - my * my);
    }
    return s;
}

static shape draw(const bn_particles *p, bn_render_view view, int component, const char *dir, const char *name)
{
    char *path = fx_path(dir, name);
    bn_render_params r = bn_render_params_default();
    r.width = r.height = SIDE;
    r.view = view;
    r.component = component;
    TU_OK(bn_render_png(path, p, &r));
    tu_image im = tu_read_png(path);
    shape s = measure(&im);
    print_message("%s: disk pixels' rms extent %.1f x %.1f px, halo-blue %.3f, bulge-orange %.4f\n", name, s.sx, s.sy,
                  s.halo, s.bulge);
    free(im.rgb);
    free(path);
    return s;
}

static void test_face_on_edge_on(void **state)
{
    (void)state;
    bn_particles *p = tilted_m31();
    char *dir = fx_tmpdir();
    const shape edge = draw(p, BN_VIEW_EDGE_ON, -1, dir, "edge.png");
    const shape face = draw(p, BN_VIEW_FACE_ON, -1, dir, "face.png");
    /* z_d / R_d = 0.6 / 5.4 = 0.11 for the model; smoothing and the
     * sech^2 wings thicken the picture's disk, not to a third */
    assert_true(edge.sx > 10 && edge.sy < 0.3 * edge.sx);
    /* face-on: round within the sampling noise of 8192 particles */
    assert_true(face.sx > 10 && fabs(face.sy / face.sx - 1) < 0.15);
    assert_true(face.sy > 3 * edge.sy);
    assert_true(edge.halo > 0.05 && face.halo > 0.05);
    assert_true(edge.bulge > 1e-3);
    /* the disk alone: no halo around it */
    const shape alone = draw(p, BN_VIEW_EDGE_ON, 2, dir, "disk.png");
    assert_true(alone.halo < 0.01 * edge.halo);
    fx_rmdir(dir);
    bn_particles_free(p);
}

/* Views and components that cannot be drawn are refused, naming them. */
static void test_refused(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(500, 3, 2);
    char *dir = fx_tmpdir(), *path = fx_path(dir, "x.png");
    bn_render_params r = bn_render_params_default();
    r.component = BN_PART_TYPES;
    TU_FAILS(bn_render_png(path, p, &r), BN_ERR_ARGUMENT, "component 6");
    r.component = 2;
    TU_FAILS(bn_render_png(path, p, &r), BN_ERR_ARGUMENT, "no particle of part type 2 (disk)");
    r = bn_render_params_default();
    r.view = (bn_render_view)3;
    TU_FAILS(bn_render_png(path, p, &r), BN_ERR_ARGUMENT, "view 3");
    r.view = BN_VIEW_FACE_ON;
    for (size_t i = 0; i < p->n; i++) p->vel[0][i] = p->vel[1][i] = p->vel[2][i] = 0;
    TU_FAILS(bn_render_png(path, p, &r), BN_ERR_ARGUMENT, "no angular momentum");
    assert_int_equal(fx_count_files(dir, NULL, 0), 0);
    free(path);
    fx_rmdir(dir);
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_face_on_edge_on), cmocka_unit_test(test_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
