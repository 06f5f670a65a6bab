/* tipsy files: hand-made standard (big-endian) and native files read to
 * the values written here (gas PartType0, dark PartType1, stars PartType4,
 * ids 1, 2, ... in file order); round trips HDF5 -> tipsy -> HDF5 in both
 * orders; damaged files refused naming the field. */
#include "test_bytes.h"
#include "test_snapshot_fixtures.h"

/* gas, dark, dark, star: mass, x, y, z, vx, vy, vz */
static const float R[4][7] = {{0.5f, 1, 2, 3, 0.25f, -0.5f, 1},
                              {0.25f, -1, 0.5f, 4, 0, 0, -2},
                              {0.125f, 3, -3, 0.75f, 1.5f, 2, 0},
                              {2, 0, 0, -8, -1, 1, 0.5f}};
static const int extra[4] = {5, 2, 2, 4}; /* floats after vel: gas 5, dark 2, star 4 */

/* The file; *rec: where each record starts. */
static void make_file(tb_buf *t, int big, size_t rec[4])
{
    memset(t, 0, sizeof *t);
    t->big = big;
    tb_f64(t, 0.625); /* time */
    tb_u32(t, 4);     /* nbodies */
    tb_u32(t, 3);     /* ndim */
    tb_u32(t, 1);     /* nsph */
    tb_u32(t, 2);     /* ndark */
    tb_u32(t, 1);     /* nstar */
    tb_u32(t, 0);     /* pad */
    for (int i = 0; i < 4; i++) {
        rec[i] = t->n;
        for (int c = 0; c < 7; c++) tb_f32(t, R[i][c]);
        for (int c = 0; c < extra[i]; c++) tb_f32(t, 0.01f);
    }
}

static void test_hand_made(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "ics.bin");
    for (int big = 0; big < 2; big++) {
        tb_buf t;
        size_t rec[4];
        make_file(&t, big, rec);
        assert_int_equal(t.n, 32 + 48 + 2 * 36 + 44);
        tb_save(&t, path, t.n);
        bn_snapshot_format f;
        TU_OK(bn_snapshot_detect(path, &f, NULL));
        assert_int_equal(f, big ? BN_FORMAT_TIPSY : BN_FORMAT_TIPSY_NATIVE); /* the tests' host: little-endian */
        bn_particles *p = NULL;
        bn_snapshot_meta m;
        TU_OK(bn_snapshot_read(path, &p, &m));
        assert_int_equal(p->n, 4);
        const int types[4] = {0, 1, 1, 4};
        for (int i = 0; i < 4; i++) {
            assert_true(p->mass[i] == R[i][0]);
            for (int k = 0; k < 3; k++) {
                assert_true(p->pos[k][i] == R[i][1 + k]);
                assert_true(p->vel[k][i] == R[i][4 + k]);
            }
            assert_true(p->id[i] == (uint64_t)i + 1);
            assert_int_equal(p->type[i], types[i]);
        }
        assert_true(m.time == 0.625);
        bn_particles_free(p);
    }
    fx_rmdir(dir);
    free(path);
}

static void test_bad_files(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "bad.std");
    tb_buf t, u;
    size_t rec[4];
    bn_particles *p = NULL;
    make_file(&t, 1, rec);
    tb_save(&t, path, t.n - 4);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "make 196 bytes, but the file has 192");
    u = t;
    tb_set_u32(&u, 8, 5); /* nbodies */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "header nbodies = 5 but nsph + ndark + nstar = 4");
    u = t;
    tb_set_u32(&u, 16, 0xFFFFFFFFu); /* nsph = -1 */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "header nsph = -1");
    u = t;
    tb_set_u32(&u, rec[2] + 8, 0x7F800000u); /* the second dark particle's y: Inf */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "block dark: particle 2 has a non-finite y");
    u = t;
    tb_set_u32(&u, rec[3], 0xBF800000u); /* the star's mass: -1 */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "block star: particle 3 has mass -1");
    u = t;
    tb_set_u32(&u, 0, 0x7FF80000u); /* time: NaN */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "header time = nan");
    assert_null(p);
    fx_rmdir(dir);
    free(path);
}

static void test_round_trips(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *h5 = fx_path(dir, "in.hdf5"), *tp = fx_path(dir, "out.tipsy"),
         *back = fx_path(dir, "back.hdf5");
    /* types 4, 1, 0, dealt in turn: tipsy's file order is gas, dark, star */
    bn_particles *p = tu_random_particles(30, 5, 2);
    TU_OK(bn_particles_ensure_types(p));
    for (size_t i = 0; i < p->n; i++) {
        p->type[i] = (uint8_t)(i % 3 == 0 ? 4 : i % 3 == 1 ? 1 : 0);
        p->mass[i] = 0.01 * (double)(i + 1) / 3.0;
    }
    bn_snapshot_meta m = bn_snapshot_meta_default(), mt;
    m.time = 1.5;
    TU_OK(bn_snapshot_write(h5, p, &m));
    for (int f = BN_FORMAT_TIPSY; f <= BN_FORMAT_TIPSY_NATIVE; f++) {
        bn_particles *q = NULL, *r = NULL, *s = NULL;
        const bn_snapshot_write_options o = {(bn_snapshot_format)f, 0, 1};
        TU_OK(bn_snapshot_read(h5, &q, NULL));
        TU_OK(bn_snapshot_write_as(tp, q, &m, &o));
        TU_OK(bn_snapshot_read(tp, &r, &mt));
        assert_true(mt.time == 1.5);
        TU_OK(bn_snapshot_write(back, r, &mt));
        TU_OK(bn_snapshot_read(back, &s, NULL));
        assert_int_equal(s->n, p->n);
        size_t j = 0; /* s's particles: p's gas, then dark, then stars */
        for (int type = 0; type <= 4; type += type == 0 ? 1 : 3)
            for (size_t i = 0; i < p->n; i++) {
                if (p->type[i] != type) continue;
                for (int k = 0; k < 3; k++) {
                    assert_true(s->pos[k][j] == (double)(float)p->pos[k][i]);
                    assert_true(s->vel[k][j] == (double)(float)p->vel[k][i]);
                }
                assert_true(s->mass[j] == (double)(float)p->mass[i]);
                assert_int_equal(s->type[j], type);
                assert_true(s->id[j] == j + 1);
                j++;
            }
        assert_int_equal(j, 30);
        bn_particles_free(q);
        bn_particles_free(r);
        bn_particles_free(s);
    }
    bn_particles_free(p);
    fx_rmdir(dir);
    free(h5), free(tp), free(back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_made),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
