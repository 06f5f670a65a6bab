/* Bad snapshots, made with the raw HDF5 API: each is refused with a
 * status and a message naming the file, the dataset and (for values) the
 * particle; nothing is returned. */
#include "test_snapshot_fixtures.h"

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
};

#define N 8

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
    int counts[6] = {0, d == HEADER_COUNT_WRONG ? N + 1 : N, 0, 0, 0, 0};
    double mt[6] = {0};
    hid_t f = fx_create(path);
    if (d != NO_HEADER) fx_gadget2_header(f, counts, mt, 0);
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
    TU_FAILS(bn_snapshot_read(dir, &p, NULL), BN_ERR_FORMAT, "not an HDF5 file"); /* a directory */
    free(path);
    fx_rmdir(dir);
}

static void test_structure(void **state)
{
    (void)state;
    expect_refusal(NO_HEADER, BN_ERR_FORMAT, "/Header", NULL, NULL);
    expect_refusal(NO_COORDINATES, BN_ERR_FORMAT, "missing dataset", "/PartType1/Coordinates", NULL);
    expect_refusal(NO_VELOCITIES, BN_ERR_FORMAT, "missing dataset", "/PartType1/Velocities", NULL);
    expect_refusal(NO_IDS, BN_ERR_FORMAT, "missing dataset", "/PartType1/ParticleIDs", NULL);
    expect_refusal(NO_MASSES_NO_TABLE, BN_ERR_FORMAT, "/PartType1/Masses", "MassTable[1]", NULL);
    expect_refusal(SPLIT_SNAPSHOT, BN_ERR_UNSUPPORTED, "NumFilesPerSnapshot = 4", NULL, NULL);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
