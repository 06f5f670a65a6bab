/* Bad snapshots, made with the raw HDF5 API: each is refused with a
 * status and a message naming the file, the dataset and (for values) the
 * particle; nothing is returned. */
#include "test_snapshot_fixtures.h"

#define N 8

enum defect {
    FINE,
    NO_HEADER,
    NO_COORDINATES,
    NO_VELOCITIES,
    NO_IDS,
    COORDINATES_N_BY_2,
    COORDINATES_1D,
    MASSES_SHORT,
    ACCELERATION_LONG,
    VELOCITY_NAN,
    POSITION_INF,
    NEGATIVE_MASS,
    ZERO_TOTAL_MASS,
    INFINITE_TOTAL_MASS,
    NO_MASSES_NO_TABLE,
    NEGATIVE_ID,
    FLOAT_IDS,
    HEADER_COUNT_WRONG,
    SPLIT_SNAPSHOT,
    UNKNOWN_CRITERION,
    NEGATIVE_SOFTENING,
    /* issue 15: counts larger than memory (sparse), header values,
     * repeated ids */
    HUGE_2_61,
    HUGE_2_33,
    TIME_NAN,
    TIME_MINUS_INF,
    TOTAL_WRONG,
    TOTAL_HIGHWORD_WRONG,
    NFILES_ZERO,
    NFILES_NEGATIVE,
    DUPLICATE_ID,
    /* string attributes of every kind: valid, read */
    STRINGS_UTF8_VARIABLE,
    STRINGS_UTF8_FIXED,
    STRINGS_SPACE_PADDED,
};

/* The Header attribute `name` replaced by one double. */
static void set_header_double(hid_t f, const char *name, double v)
{
    hid_t h = H5Gopen2(f, "Header", H5P_DEFAULT);
    H5Adelete(h, name);
    fx_attr_double(h, name, v);
    H5Gclose(h);
}

/* Header values of the issue-15 defects. */
static void header_defects(hid_t f, enum defect d)
{
    if (d == TIME_NAN) set_header_double(f, "Time", NAN);
    if (d == TIME_MINUS_INF) set_header_double(f, "Time", -INFINITY);
    if (d == NFILES_ZERO) set_header_double(f, "NumFilesPerSnapshot", 0);
    if (d == NFILES_NEGATIVE) set_header_double(f, "NumFilesPerSnapshot", -1);
    if (d == TOTAL_WRONG || d == TOTAL_HIGHWORD_WRONG) {
        unsigned v[6] = {0, d == TOTAL_WRONG ? N - 1 : N, 0, 0, 0, 0}, hw[6] = {0, 1, 0, 0, 0, 0};
        hid_t h = H5Gopen2(f, "Header", H5P_DEFAULT);
        H5Adelete(h, d == TOTAL_WRONG ? "NumPart_Total" : "NumPart_Total_HighWord");
        fx_attr(h, d == TOTAL_WRONG ? "NumPart_Total" : "NumPart_Total_HighWord", H5T_STD_U32LE, H5T_NATIVE_UINT, 6,
                d == TOTAL_WRONG ? v : hw);
        H5Gclose(h);
    }
}

/* /Parameters with its string attributes in one of HDF5's forms. */
static void string_kinds(hid_t f, enum defect d)
{
    if (d != STRINGS_UTF8_VARIABLE && d != STRINGS_UTF8_FIXED && d != STRINGS_SPACE_PADDED) return;
    hid_t g = fx_group(f, "Parameters");
    const int variable = d == STRINGS_UTF8_VARIABLE;
    const H5T_cset_t cset = d == STRINGS_SPACE_PADDED ? H5T_CSET_ASCII : H5T_CSET_UTF8;
    const H5T_str_t pad = d == STRINGS_SPACE_PADDED ? H5T_STR_SPACEPAD : H5T_STR_NULLTERM;
    fx_attr_string(g, "Method", "direct", variable, cset, pad);
    fx_attr_string(g, "OpeningCriterion", "bh", variable, cset, pad);
    fx_attr_string(g, "Curve", "morton", variable, cset, pad);
    H5Gclose(g);
}

/* PartType1 of the huge defects: every dataset claims the count. */
static int huge_group(hid_t f, enum defect d)
{
    if (d != HUGE_2_61 && d != HUGE_2_33) return 0;
    const hsize_t n = d == HUGE_2_61 ? (hsize_t)1 << 61 : (hsize_t)1 << 33;
    hid_t h = H5Gopen2(f, "Header", H5P_DEFAULT); /* no counts: the rows decide */
    H5Adelete(h, "NumPart_ThisFile");
    H5Adelete(h, "NumPart_Total");
    H5Gclose(h);
    hid_t g = fx_group(f, "PartType1");
    fx_sparse_dataset(g, "Coordinates", n, 3);
    fx_sparse_dataset(g, "Velocities", n, 3);
    fx_sparse_dataset(g, "Masses", n, 0);
    fx_sparse_dataset(g, "ParticleIDs", n, 0);
    H5Gclose(g);
    return 1;
}

/* A small GADGET-2-style file with one defect. */
static void make_file(const char *path, enum defect d)
{
    double pos[N][3], vel[N][3], mass[N + 1], acc[N + 1][3], pot[N];
    int64_t ids[N];
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 3; k++) {
            pos[i][k] = 0.1 * i - 0.2 * k;
            vel[i][k] = 0.01 * (i + k);
            acc[i][k] = -pos[i][k];
        }
        mass[i] = 1.0 / N;
        ids[i] = i + 1;
        pot[i] = -1;
    }
    if (d == VELOCITY_NAN) vel[5][1] = NAN;
    if (d == POSITION_INF) pos[6][2] = -INFINITY;
    if (d == NEGATIVE_MASS) mass[3] = -0.5;
    if (d == ZERO_TOTAL_MASS)
        for (int i = 0; i < N; i++) mass[i] = 0;
    if (d == INFINITE_TOTAL_MASS) /* each finite, the sum overflows to inf */
        for (int i = 0; i < N; i++) mass[i] = 1e308;
    if (d == NEGATIVE_ID) ids[4] = -7;
    if (d == DUPLICATE_ID) ids[6] = ids[2];
    int counts[6] = {0, d == HEADER_COUNT_WRONG ? N + 1 : N, 0, 0, 0, 0};
    double mt[6] = {0};
    hid_t f = fx_create(path);
    if (d != NO_HEADER) fx_gadget2_header(f, counts, mt, 0);
    if (d != NO_HEADER) header_defects(f, d);
    string_kinds(f, d);
    if (huge_group(f, d)) {
        H5Fclose(f);
        return;
    }
    if (d == SPLIT_SNAPSHOT) {
        hid_t h = H5Gopen2(f, "Header", H5P_DEFAULT);
        int four = 4;
        H5Adelete(h, "NumFilesPerSnapshot");
        fx_attr(h, "NumFilesPerSnapshot", H5T_STD_I32LE, H5T_NATIVE_INT, 0, &four);
        H5Gclose(h);
    }
    if (d == UNKNOWN_CRITERION || d == NEGATIVE_SOFTENING) {
        hid_t g = fx_group(f, "Parameters");
        if (d == UNKNOWN_CRITERION) fx_attr_vstring(g, "OpeningCriterion", "sometimes");
        else fx_attr_double(g, "Softening", -0.1);
        H5Gclose(g);
    }
    hid_t g = fx_group(f, "PartType1");
    if (d == COORDINATES_N_BY_2) fx_dataset(g, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 2, pos);
    else if (d == COORDINATES_1D) fx_dataset(g, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 0, pos);
    else if (d != NO_COORDINATES) fx_dataset(g, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 3, pos);
    if (d != NO_VELOCITIES) fx_dataset(g, "Velocities", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 3, vel);
    if (d == FLOAT_IDS) fx_dataset(g, "ParticleIDs", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 0, mass);
    else if (d != NO_IDS) fx_dataset(g, "ParticleIDs", H5T_STD_I64LE, H5T_NATIVE_INT64, N, 0, ids);
    if (d == MASSES_SHORT) fx_dataset(g, "Masses", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N - 1, 0, mass);
    else if (d != NO_MASSES_NO_TABLE) fx_dataset(g, "Masses", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 0, mass);
    fx_dataset(g, "Acceleration", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, d == ACCELERATION_LONG ? N + 1 : N, 3, acc);
    fx_dataset(g, "Potential", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 0, pot);
    H5Gclose(g);
    H5Fclose(f);
}

/* The read fails with `want` and a message holding the file name and
 * every one of the (up to three) fragments. */
static void expect_refusal(enum defect d, bn_status want, const char *a, const char *b, const char *c)
{
    char *dir = fx_tmpdir(), *path = fx_path(dir, "bad.hdf5");
    make_file(path, d);
    bn_particles *p = (bn_particles *)0x1;
    bn_snapshot_meta m;
    bn_status s = bn_snapshot_read(path, &p, &m);
    if (s != want)
        fail_msg("defect %d: expected '%s', got '%s': %s", d, bn_status_name(want), bn_status_name(s),
                 bn_last_error());
    assert_null(p);
    const char *msg = bn_last_error(), *parts[4] = {path, a, b, c};
    for (int i = 0; i < 4; i++)
        if (parts[i] && !strstr(msg, parts[i])) fail_msg("defect %d: message '%s' lacks '%s'", d, msg, parts[i]);
    free(path);
    fx_rmdir(dir);
}

static void test_fixture_is_fine(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "fine.hdf5");
    make_file(path, FINE);
    bn_particles *p = NULL;
    TU_OK(bn_snapshot_read(path, &p, NULL));
    assert_int_equal(p->n, N);
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

static void test_missing_and_not_hdf5(void **state)
{
    (void)state;
    bn_particles *p = NULL;
    TU_FAILS(bn_snapshot_read("/nonexistent/snap.hdf5", &p, NULL), BN_ERR_IO, "/nonexistent/snap.hdf5");
    assert_non_null(strstr(bn_last_error(), "No such file"));
    assert_null(p);
    char *dir = fx_tmpdir(), *path = fx_path(dir, "text.hdf5");
    FILE *fp = fopen(path, "w");
    fputs("this is not HDF5\n", fp);
    fclose(fp);
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_FORMAT, "not an HDF5 file");
    assert_non_null(strstr(bn_last_error(), path));
    TU_FAILS(bn_snapshot_read(dir, &p, NULL), BN_ERR_IO, "not a regular file (a directory)");
    free(path);
    fx_rmdir(dir);
}

/* A FIFO would block a reader that opens it for ever: refused unopened. */
static void test_fifo(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "fifo.hdf5");
    assert_int_equal(mkfifo(path, 0600), 0);
    bn_particles *p = NULL;
    TU_FAILS(bn_snapshot_read(path, &p, NULL), BN_ERR_IO, "not a regular file (a FIFO)");
    assert_null(p);
    free(path);
    fx_rmdir(dir);
}

/* Counts from the file larger than memory, refused before any
 * allocation with the count in the message (the 2^61 one overflowed
 * count * size and wrote past the buffer). */
static void test_huge_counts(void **state)
{
    (void)state;
    expect_refusal(HUGE_2_61, BN_ERR_NOMEM, "2305843009213693952 particles", "more than 2^64", NULL);
    expect_refusal(HUGE_2_33, BN_ERR_NOMEM, "8589934592 particles", "of memory", NULL);
}

static void test_header_values(void **state)
{
    (void)state;
    expect_refusal(TIME_NAN, BN_ERR_FORMAT, "/Header: Time = nan", "finite", NULL);
    expect_refusal(TIME_MINUS_INF, BN_ERR_FORMAT, "/Header: Time = -inf", NULL, NULL);
    expect_refusal(TOTAL_WRONG, BN_ERR_FORMAT, "NumPart_Total[1] = 7", "8 rows", NULL);
    expect_refusal(TOTAL_HIGHWORD_WRONG, BN_ERR_FORMAT, "NumPart_Total[1] = 4294967304", "8 rows", NULL);
    expect_refusal(NFILES_ZERO, BN_ERR_FORMAT, "NumFilesPerSnapshot = 0", ">= 1", NULL);
    expect_refusal(NFILES_NEGATIVE, BN_ERR_FORMAT, "NumFilesPerSnapshot = -1", NULL, NULL);
    expect_refusal(DUPLICATE_ID, BN_ERR_FORMAT, "id 3 appears more than once", "particles 2 and 6", NULL);
}

/* h5py writes str attributes as variable-length UTF-8; FLASH and other
 * Fortran codes fixed-length, space padded: all are read. */
static void test_string_kinds(void **state)
{
    (void)state;
    const enum defect kinds[3] = {STRINGS_UTF8_VARIABLE, STRINGS_UTF8_FIXED, STRINGS_SPACE_PADDED};
    for (int i = 0; i < 3; i++) {
        char *dir = fx_tmpdir(), *path = fx_path(dir, "strings.hdf5");
        make_file(path, kinds[i]);
        bn_particles *p = NULL;
        bn_snapshot_meta m;
        TU_OK(bn_snapshot_read(path, &p, &m));
        assert_int_equal(m.gravity.method, BN_METHOD_DIRECT);
        assert_int_equal(m.gravity.mac, BN_MAC_BH);
        assert_int_equal(m.gravity.curve, BN_CURVE_MORTON);
        bn_particles_free(p);
        free(path);
        fx_rmdir(dir);
    }
}

static void test_structure(void **state)
{
    (void)state;
    expect_refusal(NO_HEADER, BN_ERR_FORMAT, "/Header", NULL, NULL);
    expect_refusal(NO_COORDINATES, BN_ERR_FORMAT, "missing dataset", "/PartType1/Coordinates", NULL);
    expect_refusal(NO_VELOCITIES, BN_ERR_FORMAT, "missing dataset", "/PartType1/Velocities", NULL);
    expect_refusal(NO_IDS, BN_ERR_FORMAT, "missing dataset", "/PartType1/ParticleIDs", NULL);
    expect_refusal(NO_MASSES_NO_TABLE, BN_ERR_FORMAT, "/PartType1/Masses", "MassTable[1]", NULL);
    expect_refusal(SPLIT_SNAPSHOT, BN_ERR_IO, "NumFilesPerSnapshot = 4 (a split snapshot): its file 0", ".0.hdf5", NULL);
}

static void test_shapes_and_lengths(void **state)
{
    (void)state;
    expect_refusal(COORDINATES_N_BY_2, BN_ERR_FORMAT, "/PartType1/Coordinates", "(8, 2)", "expected (N, 3)");
    expect_refusal(COORDINATES_1D, BN_ERR_FORMAT, "/PartType1/Coordinates", "(8,)", "expected (N, 3)");
    expect_refusal(MASSES_SHORT, BN_ERR_FORMAT, "length mismatch", "/PartType1/Masses has 7 rows", "8");
    expect_refusal(ACCELERATION_LONG, BN_ERR_FORMAT, "length mismatch", "/PartType1/Acceleration has 9", NULL);
    expect_refusal(HEADER_COUNT_WRONG, BN_ERR_FORMAT, "NumPart_ThisFile[1] = 9", "8 rows", NULL);
    expect_refusal(FLOAT_IDS, BN_ERR_FORMAT, "/PartType1/ParticleIDs", "integers", NULL);
}

static void test_values(void **state)
{
    (void)state;
    expect_refusal(VELOCITY_NAN, BN_ERR_FORMAT, "/PartType1/Velocities", "particle 5", "nan");
    expect_refusal(POSITION_INF, BN_ERR_FORMAT, "/PartType1/Coordinates", "particle 6", "inf");
    expect_refusal(NEGATIVE_MASS, BN_ERR_FORMAT, "/PartType1/Masses", "particle 3", "negative mass");
    expect_refusal(ZERO_TOTAL_MASS, BN_ERR_FORMAT, "total mass is 0", NULL, NULL);
    expect_refusal(INFINITE_TOTAL_MASS, BN_ERR_FORMAT, "total mass is inf", "finite", NULL);
    expect_refusal(NEGATIVE_ID, BN_ERR_FORMAT, "/PartType1/ParticleIDs", "particle 4", "negative id (-7)");
}

static void test_parameters(void **state)
{
    (void)state;
    expect_refusal(UNKNOWN_CRITERION, BN_ERR_FORMAT, "/Parameters", "OpeningCriterion", "sometimes");
    expect_refusal(NEGATIVE_SOFTENING, BN_ERR_FORMAT, "/Parameters", "Softening", "-0.1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_is_fine),    cmocka_unit_test(test_missing_and_not_hdf5),
        cmocka_unit_test(test_structure),          cmocka_unit_test(test_shapes_and_lengths),
        cmocka_unit_test(test_values),             cmocka_unit_test(test_parameters),
        cmocka_unit_test(test_fifo),               cmocka_unit_test(test_huge_counts),
        cmocka_unit_test(test_header_values),      cmocka_unit_test(test_string_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
