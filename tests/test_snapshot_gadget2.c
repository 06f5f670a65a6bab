/* GADGET-2 binary files: hand-made files (format 1 and 2, both byte
 * orders, float and double, 32- and 64-bit ids, MASS block) read to the
 * values written here; round trips HDF5 -> GADGET-2 -> HDF5 in every
 * variant and a 2-file set; damaged files refused naming the field. */
#include "test_bytes.h"
#include "test_snapshot_fixtures.h"

/* A 3-particle file: one gas particle (mass 0.5 from the MASS block) and
 * two PartType1 (header mass 0.25). width: bytes per value; idw: per id. */
typedef struct {
    int format2, big, width, idw;
} g2_variant;

static const double P[3][3] = {{0.5, 1.25, -2.0}, {3.0, -0.75, 0.125}, {-1.5, 2.5, 4.0}};
static const double V[3][3] = {{0.25, 0.0, -1.0}, {1.5, 2.0, -0.5}, {0.0, -3.25, 0.75}};

static void block(tb_buf *t, const g2_variant *v, const char *label, uint32_t bytes)
{
    if (v->format2) {
        tb_u32(t, 8);
        memcpy(t->b + t->n, label, 4);
        t->n += 4;
        tb_u32(t, bytes + 8);
        tb_u32(t, 8);
    }
    tb_u32(t, bytes);
}

static void real(tb_buf *t, const g2_variant *v, double x)
{
    if (v->width == 8) tb_f64(t, x);
    else tb_f32(t, (float)x);
}

static void header(tb_buf *t, const g2_variant *v, const uint32_t npart[6], int num_files)
{
    block(t, v, "HEAD", 256);
    for (int k = 0; k < 6; k++) tb_u32(t, npart[k]);
    for (int k = 0; k < 6; k++) tb_f64(t, k == 1 ? 0.25 : 0.0); /* mass */
    tb_f64(t, 0.125);                                            /* time */
    tb_f64(t, 0.0);                                              /* redshift */
    tb_zeros(t, 8);                                              /* flag_sfr, flag_feedback */
    for (int k = 0; k < 6; k++) tb_u32(t, npart[k]);             /* npartTotal */
    tb_zeros(t, 4);                                              /* flag_cooling */
    tb_u32(t, (uint32_t)num_files);
    tb_f64(t, 10.0); /* BoxSize */
    tb_zeros(t, 256 - 136);
    tb_u32(t, 256);
}

/* The whole file; *pos_at: where POS's payload starts. */
static void make_file(tb_buf *t, const g2_variant *v, const uint64_t ids[3], size_t *pos_at)
{
    memset(t, 0, sizeof *t);
    t->big = v->big;
    const uint32_t npart[6] = {1, 2, 0, 0, 0, 0};
    header(t, v, npart, 1);
    const double(*blocks[2])[3] = {P, V};
    const char *labels[2] = {"POS ", "VEL "};
    for (int b = 0; b < 2; b++) {
        block(t, v, labels[b], (uint32_t)(9 * v->width));
        if (b == 0) *pos_at = t->n;
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) real(t, v, blocks[b][i][k]);
        tb_u32(t, (uint32_t)(9 * v->width));
    }
    block(t, v, "ID  ", (uint32_t)(3 * v->idw));
    for (int i = 0; i < 3; i++)
        if (v->idw == 8) tb_u64(t, ids[i]);
        else tb_u32(t, (uint32_t)ids[i]);
    tb_u32(t, (uint32_t)(3 * v->idw));
    block(t, v, "MASS", (uint32_t)v->width);
    real(t, v, 0.5);
    tb_u32(t, (uint32_t)v->width);
}

static void check_known(const char *path, const uint64_t ids[3])
{
    bn_particles *p = NULL;
    bn_snapshot_meta m;
    TU_OK(bn_snapshot_read(path, &p, &m));
    assert_int_equal(p->n, 3);
    assert_non_null(p->type);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 3; k++) {
            assert_true(p->pos[k][i] == P[i][k]);
            assert_true(p->vel[k][i] == V[i][k]);
        }
        assert_true(p->id[i] == ids[i]);
        assert_int_equal(p->type[i], i == 0 ? 0 : 1);
        assert_true(p->mass[i] == (i == 0 ? 0.5 : 0.25));
    }
    assert_true(m.time == 0.125);
    assert_true(m.box_size == 10.0);
    bn_particles_free(p);
}

static void test_hand_made(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "ics");
    const uint64_t ids32[3] = {7, 3, 4000000000u}, ids64[3] = {1ull << 40, 2, 3};
    const g2_variant vs[4] = {{0, 0, 4, 4}, {0, 1, 8, 8}, {1, 0, 8, 4}, {1, 1, 4, 8}};
    for (int k = 0; k < 4; k++) {
        tb_buf t;
        size_t at;
        const uint64_t *ids = vs[k].idw == 8 ? ids64 : ids32;
        make_file(&t, &vs[k], ids, &at);
        tb_save(&t, path, t.n);
        bn_snapshot_format f;
        int big;
        TU_OK(bn_snapshot_detect(path, &f, &big));
        assert_int_equal(f, vs[k].format2 ? BN_FORMAT_GADGET2_F2 : BN_FORMAT_GADGET2);
        assert_int_equal(big, vs[k].big);
        check_known(path, ids);
    }
    fx_rmdir(dir);
    free(path);
}

/* Damaged versions of the format-1 little-endian file, each refused with
 * the named field. */
static void test_bad_files(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "bad");
    const uint64_t ids[3] = {1, 2, 3};
    const g2_variant v = {0, 0, 4, 4};
    tb_buf t;
    size_t pos_at;
    bn_particles *p = NULL;
    make_file(&t, &v, ids, &pos_at);
    tb_save(&t, path, t.n - 10);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "truncated: MASS");
    tb_buf u = t;
    tb_set_u32(&u, pos_at + 36, 35); /* POS's end marker */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "block POS: record marker 35");
    u = t;
    tb_set_u32(&u, 4 + 4, 0xFFFFFFFFu); /* npart[1] = -1 */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "header npart[1] = -1");
    u = t;
    tb_set_u32(&u, 4 + 4, 3); /* npart[1] = 3: 4 particles, POS holds 3 */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "block POS has 36 bytes");
    u = t;
    tb_set_u32(&u, pos_at + 16, 0x7FC00000u); /* particle 1's y: NaN */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "block POS: particle 1 has a non-finite y");
    u = t;
    tb_set_u32(&u, u.n - 8, 0xBF800000u); /* the MASS block's -1 */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "block MASS: particle 0 has mass -1");
    u = t;
    tb_set_u32(&u, 4 + 124, 2); /* num_files 2, but no file "bad.1" and no ".<k>" name */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "header num_files > 1");
    u = t;
    tb_set_u32(&u, 4 + 96, 5); /* npartTotal[0] = 5 in a single file */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "header npartTotal[0] = 5 but npart[0] = 1");
    u = t;
    tb_set_u32(&u, 0, 255); /* neither 256 nor 8 nor HDF5's signature */
    tb_save(&u, path, u.n);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "not an HDF5 file");
    assert_null(p);
    fx_rmdir(dir);
    free(path);
}

/* 60 particles: types 0 (10, masses differ), 1 (40, one mass) and 4 (10),
 * in type order, ids above 2^32 in the last variant. */
static bn_particles *typed_set(int wide_ids)
{
    bn_particles *p = tu_random_particles(60, 11, 2);
    TU_OK(bn_particles_ensure_types(p));
    for (size_t i = 0; i < p->n; i++) {
        p->type[i] = i < 10 ? 0 : i < 50 ? 1 : 4;
        p->mass[i] = i < 10 ? 0.001 * (double)(i + 1) : i < 50 ? 0.02 : 0.003;
        p->id[i] = (wide_ids ? 1ull << 33 : 100) + 7 * i;
    }
    return p;
}

/* b is a, every value rounded to float32 (exactly: the file's type),
 * but the masses of types 1 and 4, which share a mass each: the header's
 * double keeps them exact. */
static void assert_float_copy(const bn_particles *a, const bn_particles *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        for (int k = 0; k < 3; k++) {
            assert_true(b->pos[k][i] == (double)(float)a->pos[k][i]);
            assert_true(b->vel[k][i] == (double)(float)a->vel[k][i]);
        }
        assert_true(b->mass[i] == (a->type[i] == 0 ? (double)(float)a->mass[i] : a->mass[i]));
        assert_true(b->id[i] == a->id[i]);
        assert_int_equal(bn_particles_part_type(b, i), bn_particles_part_type(a, i));
    }
}

static void test_round_trips(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *h5 = fx_path(dir, "in.hdf5"), *g2 = fx_path(dir, "snap"),
         *back = fx_path(dir, "back.hdf5"), *part1 = fx_path(dir, "snap.1");
    const bn_snapshot_write_options opts[5] = {{BN_FORMAT_GADGET2, 0, 1}, {BN_FORMAT_GADGET2, 1, 1},
                                               {BN_FORMAT_GADGET2_F2, 0, 1}, {BN_FORMAT_GADGET2_F2, 1, 1},
                                               {BN_FORMAT_GADGET2, 1, 2}};
    for (int v = 0; v < 5; v++) {
        bn_particles *p = typed_set(v == 4), *q = NULL, *r = NULL, *s = NULL;
        bn_snapshot_meta m = bn_snapshot_meta_default(), mq;
        m.time = 0.375;
        m.box_size = 5;
        TU_OK(bn_snapshot_write(h5, p, &m));
        TU_OK(bn_snapshot_read(h5, &q, NULL));
        TU_OK(bn_snapshot_write_as(g2, q, &m, &opts[v]));
        /* a set is read from any of its files, or from its stem */
        TU_OK(bn_snapshot_read(opts[v].n_files > 1 ? part1 : g2, &r, &mq));
        assert_true(mq.time == 0.375 && mq.box_size == 5);
        assert_float_copy(p, r);
        TU_OK(bn_snapshot_write(back, r, &mq));
        TU_OK(bn_snapshot_read(back, &s, NULL));
        assert_float_copy(p, s);
        bn_particles_free(p);
        bn_particles_free(q);
        bn_particles_free(r);
        bn_particles_free(s);
    }
    fx_rmdir(dir);
    free(h5), free(g2), free(back), free(part1);
}

/* A set whose second file is missing, or disagrees on npartTotal. */
static void test_bad_set(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *g2 = fx_path(dir, "set"), *p0 = fx_path(dir, "set.0"), *p1 = fx_path(dir, "set.1");
    bn_particles *p = typed_set(0), *q = NULL;
    const bn_snapshot_write_options o = {BN_FORMAT_GADGET2, 0, 2};
    bn_snapshot_meta m = bn_snapshot_meta_default();
    TU_OK(bn_snapshot_write_as(g2, p, &m, &o));
    TU_OK(bn_snapshot_read(p0, &q, NULL));
    assert_int_equal(q->n, 60);
    bn_particles_free(q);
    q = NULL;
    unlink(p1);
    TU_FAILS(bn_snapshot_read(p0, &q, NULL), BN_ERR_IO, "set.1");
    assert_null(q);
    bn_particles_free(p);
    fx_rmdir(dir);
    free(g2), free(p0), free(p1);
}

static void same_exactly(const bn_particles *want, const bn_particles *got)
{
    assert_int_equal(want->n, got->n);
    for (size_t i = 0; i < want->n; i++) {
        for (int k = 0; k < 3; k++) assert_true(got->pos[k][i] == want->pos[k][i]);
        assert_true(got->id[i] == want->id[i] && got->mass[i] == want->mass[i]);
        assert_int_equal(bn_particles_part_type(got, i), bn_particles_part_type(want, i));
    }
}

/* Readers' shares of a GADGET-2 set (banyan run under mpirun): 3 ranks
 * get rows [20 r, 20 (r + 1)) of the 60, the set's total and its time. */
static void test_shares(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *g2 = fx_path(dir, "set");
    bn_particles *p = typed_set(0), *all = NULL;
    const bn_snapshot_write_options o = {BN_FORMAT_GADGET2_F2, 1, 2};
    bn_snapshot_meta m = bn_snapshot_meta_default();
    m.time = 2.5;
    TU_OK(bn_snapshot_write_as(g2, p, &m, &o));
    TU_OK(bn_snapshot_read(g2, &all, NULL));
    fx_assert_shares(g2, 3, all, 2.5, same_exactly);
    bn_particles_free(all);
    bn_particles_free(p);
    fx_rmdir(dir);
    free(g2);
}

/* Values beyond float32 are refused before anything is written. */
static void test_refused_writes(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *g2 = fx_path(dir, "big.g2");
    bn_particles *p = typed_set(0);
    p->pos[1][5] = 1e300;
    const bn_snapshot_write_options o = {BN_FORMAT_GADGET2, 0, 1};
    bn_snapshot_meta m = bn_snapshot_meta_default();
    TU_FAILS(bn_snapshot_write_as(g2, p, &m, &o), BN_ERR_ARGUMENT, "particle 5: y = 1e+300");
    assert_int_equal(fx_count_files(dir, NULL, 0), 0);
    bn_particles_free(p);
    fx_rmdir(dir);
    free(g2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_made),   cmocka_unit_test(test_bad_files),      cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_bad_set),     cmocka_unit_test(test_refused_writes), cmocka_unit_test(test_shares),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
