/* The reader on files written the way other codes write them (made with
 * the raw HDF5 API here): GADGET-2 (float32, uint32 ids, MassTable),
 * SWIFT (vector BoxSize, /Units with SWIFT's names, several types),
 * GADGET-4 (uint64 counts, units in /Parameters, G from the units). */
#include "test_snapshot_fixtures.h"

/* Float32 coordinates and velocities, uint32 ids, no Masses dataset:
 * every particle gets MassTable[1]. */
static void test_gadget2_float_masstable(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "g2.hdf5");
    enum { N = 5 };
    float pos[N][3], vel[N][3];
    uint32_t ids[N];
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 3; k++) {
            pos[i][k] = 0.1f * (float)(i + 1) + (float)k;
            vel[i][k] = -0.3f * (float)i + 0.7f * (float)k;
        }
        ids[i] = 4000000000u + (uint32_t)i; /* above INT32_MAX: must stay unsigned */
    }
    int counts[6] = {0, N, 0, 0, 0, 0};
    double mt[6] = {0, 0.25, 0, 0, 0, 0};
    hid_t f = fx_create(path);
    fx_gadget2_header(f, counts, mt, 0.5);
    hid_t g = fx_group(f, "PartType1");
    fx_dataset(g, "Coordinates", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, N, 3, pos);
    fx_dataset(g, "Velocities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, N, 3, vel);
    fx_dataset(g, "ParticleIDs", H5T_STD_U32LE, H5T_NATIVE_UINT32, N, 0, ids);
    H5Gclose(g);
    H5Fclose(f);

    bn_particles *p = NULL;
    bn_snapshot_meta m;
    TU_OK(bn_snapshot_read(path, &p, &m));
    assert_int_equal(p->n, N);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 3; k++) {
            assert_true(p->pos[k][i] == (double)pos[i][k]);
            assert_true(p->vel[k][i] == (double)vel[i][k]);
        }
        assert_true(p->mass[i] == 0.25);
        assert_int_equal(p->id[i], 4000000000u + (uint64_t)i);
    }
    assert_true(m.time == 0.5);
    assert_int_equal(m.has_gravity, 0);
    assert_int_equal(m.has_acceleration, 0);
    assert_true(m.units.G == 1.0); /* no units, no G: N-body units */
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

/* SWIFT-like: PartType0 and PartType1 with particles, empty PartType4 and 5,
 * signed int64 ids, per-particle masses, BoxSize as 3 values, Time as a
 * 1-element array, units only in /Units under SWIFT's names. */
static void test_swift_like_multi_type(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "swift.hdf5");
    double pos0[2][3] = {{1, 2, 3}, {4, 5, 6}}, vel0[2][3] = {{0}}, m0[2] = {0.5, 0.25};
    double pos1[3][3] = {{-1, -2, -3}, {7, 8, 9}, {0, 0, 1}}, vel1[3][3] = {{1, 1, 1}}, m1[3] = {1, 2, 3};
    int64_t id0[2] = {10, 11}, id1[3] = {1, 2, 3};
    hid_t f = fx_create(path);
    hid_t h = fx_group(f, "Header");
    uint64_t counts[7] = {2, 3, 0, 0, 0, 0, 0};
    double box[3] = {100, 100, 100}, t1[1] = {0.75}, mt[7] = {0};
    fx_attr(h, "NumPart_ThisFile", H5T_STD_U64LE, H5T_NATIVE_UINT64, 7, counts);
    fx_attr(h, "MassTable", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 7, mt);
    fx_attr(h, "BoxSize", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, box);
    fx_attr(h, "Time", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, t1);
    fx_attr_vstring(h, "Code", "SWIFT");
    H5Gclose(h);
    hid_t u = fx_group(f, "Units");
    double UL = 3.08567758e24, UM = 1.98841e43, Ut = 3.08567758e19;
    fx_attr_double(u, "Unit length in cgs (U_L)", UL);
    fx_attr_double(u, "Unit mass in cgs (U_M)", UM);
    fx_attr_double(u, "Unit time in cgs (U_t)", Ut);
    H5Gclose(u);
    hid_t g = fx_group(f, "PartType0");
    fx_dataset(g, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, 3, pos0);
    fx_dataset(g, "Velocities", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, 3, vel0);
    fx_dataset(g, "Masses", H5T_IEEE_F32LE, H5T_NATIVE_DOUBLE, 2, 0, m0);
    fx_dataset(g, "ParticleIDs", H5T_STD_I64LE, H5T_NATIVE_INT64, 2, 0, id0);
    H5Gclose(g);
    g = fx_group(f, "PartType1");
    fx_dataset(g, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, 3, pos1);
    fx_dataset(g, "Velocities", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, 3, vel1);
    fx_dataset(g, "Masses", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, 0, m1);
    fx_dataset(g, "ParticleIDs", H5T_STD_I64LE, H5T_NATIVE_INT64, 3, 0, id1);
    H5Gclose(g);
    H5Gclose(fx_group(f, "PartType4"));
    g = fx_group(f, "PartType5"); /* empty datasets, no Masses, MassTable 0 */
    fx_dataset(g, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, 3, pos1);
    fx_dataset(g, "Velocities", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, 3, vel1);
    fx_dataset(g, "ParticleIDs", H5T_STD_I64LE, H5T_NATIVE_INT64, 0, 0, id1);
    H5Gclose(g);
    H5Fclose(f);

    bn_particles *p = NULL;
    bn_snapshot_meta m;
    TU_OK(bn_snapshot_read(path, &p, &m));
    assert_int_equal(p->n, 5);
    /* type order: PartType0's two, then PartType1's three */
    uint64_t want_ids[5] = {10, 11, 1, 2, 3};
    double want_mass[5] = {0.5, 0.25, 1, 2, 3}, want_z[5] = {3, 6, -3, 9, 1};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(p->id[i], want_ids[i]);
        assert_true(p->mass[i] == want_mass[i]);
        assert_true(p->pos[2][i] == want_z[i]);
    }
    assert_true(m.box_size == 100 && m.time == 0.75);
    assert_true(m.units.length_in_cm == UL && m.units.mass_in_g == UM);
    TU_NEAR(m.units.velocity_in_cm_per_s, UL / Ut, 1e-15);
    /* G in these units from G_cgs = 6.6743e-8: about 4.30e1 in Mpc, 1e10 Msun, km/s */
    double G = 6.67430e-8 * UM * Ut * Ut / (UL * UL * UL);
    TU_NEAR(m.units.G, G, 1e-14);
    TU_NEAR(m.gravity.G, G, 1e-14);
    TU_NEAR(m.units.G, 43.0, 0.01);
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

/* GADGET-4-like: units and GravityConstantInternal = 0 in /Parameters (G
 * then follows from the units), float32 Acceleration, no Potential. */
static void test_gadget4_like(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "g4.hdf5");
    enum { N = 4 };
    double pos[N][3], vel[N][3] = {{0}}, mass[N] = {1, 1, 1, 1};
    float acc[N][3];
    uint64_t ids[N] = {4, 3, 2, 1};
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 3; k++) {
            pos[i][k] = i == k ? 1.0 : 0.0;
            acc[i][k] = (float)(i - k) * 0.5f;
        }
    hid_t f = fx_create(path);
    hid_t h = fx_group(f, "Header");
    uint64_t counts[6] = {0, N, 0, 0, 0, 0};
    double mt[6] = {0};
    int one = 1;
    fx_attr(h, "NumPart_ThisFile", H5T_STD_U64LE, H5T_NATIVE_UINT64, 6, counts);
    fx_attr(h, "NumPart_Total", H5T_STD_U64LE, H5T_NATIVE_UINT64, 6, counts);
    fx_attr(h, "MassTable", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 6, mt);
    fx_attr_double(h, "Time", 2.0);
    fx_attr(h, "NumFilesPerSnapshot", H5T_STD_I32LE, H5T_NATIVE_INT, 0, &one);
    H5Gclose(h);
    hid_t pr = fx_group(f, "Parameters");
    fx_attr_double(pr, "UnitLength_in_cm", 3.085678e21);
    fx_attr_double(pr, "UnitMass_in_g", 1.989e43);
    fx_attr_double(pr, "UnitVelocity_in_cm_per_s", 1e5);
    fx_attr_double(pr, "GravityConstantInternal", 0.0);
    H5Gclose(pr);
    hid_t g = fx_group(f, "PartType1");
    fx_dataset(g, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 3, pos);
    fx_dataset(g, "Velocities", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 3, vel);
    fx_dataset(g, "Masses", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, N, 0, mass);
    fx_dataset(g, "ParticleIDs", H5T_STD_U64LE, H5T_NATIVE_UINT64, N, 0, ids);
    fx_dataset(g, "Acceleration", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, N, 3, acc);
    H5Gclose(g);
    H5Fclose(f);

    bn_particles *p = NULL;
    bn_snapshot_meta m;
    TU_OK(bn_snapshot_read(path, &p, &m));
    assert_int_equal(m.has_acceleration, 1);
    assert_int_equal(m.has_potential, 0);
    assert_non_null(p->acc[0]);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 3; k++) assert_true(p->acc[k][i] == (double)acc[i][k]);
    /* G in kpc, 1e10 Msun, km/s: about 43022 with CODATA 2018's G (GADGET-2's
     * older constant gave 43007.1) */
    TU_NEAR(m.units.G, 6.67430e-8 * 1.989e43 / (3.085678e21 * 1e10), 1e-14);
    TU_NEAR(m.units.G, 43022.0, 1e-4);
    assert_true(m.time == 2.0);
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

/* File k of a two-file set in GADGET-4's own layout: NumPart_ThisFile per
 * file, NumPart_Total and NumFilesPerSnapshot = 2 in each, masses from
 * the MassTable for PartType2 (no Masses dataset), float32 coordinates. */
static void write_g4_part(const char *path, int k)
{
    const uint64_t this_file[2][6] = {{0, 2, 0, 0, 0, 0}, {0, 1, 2, 0, 0, 0}}, total[6] = {0, 3, 2, 0, 0, 0};
    const double mt[6] = {0, 0, 0.5, 0, 0, 0};
    const int two = 2;
    hid_t f = fx_create(path), h = fx_group(f, "Header");
    fx_attr(h, "NumPart_ThisFile", H5T_STD_U64LE, H5T_NATIVE_UINT64, 6, this_file[k]);
    fx_attr(h, "NumPart_Total", H5T_STD_U64LE, H5T_NATIVE_UINT64, 6, total);
    fx_attr(h, "MassTable", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 6, mt);
    fx_attr_double(h, "Time", 0.25);
    fx_attr(h, "NumFilesPerSnapshot", H5T_STD_I32LE, H5T_NATIVE_INT, 0, &two);
    H5Gclose(h);
    const int n1 = (int)this_file[k][1];
    float pos1[2][3] = {{(float)k, 1, 2}, {3, (float)k, 5}}, vel1[2][3] = {{0}};
    double m1[2] = {1.0 + k, 2.0};
    uint64_t id1[2] = {10 + 2 * (uint64_t)k, 11};
    hid_t g = fx_group(f, "PartType1");
    fx_dataset(g, "Coordinates", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, n1, 3, pos1);
    fx_dataset(g, "Velocities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, n1, 3, vel1);
    fx_dataset(g, "Masses", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n1, 0, m1);
    fx_dataset(g, "ParticleIDs", H5T_STD_U64LE, H5T_NATIVE_UINT64, n1, 0, id1);
    H5Gclose(g);
    if (k == 1) {
        float pos2[2][3] = {{7, 8, 9}, {-1, -2, -3}}, vel2[2][3] = {{1, 0, 0}, {0, 1, 0}};
        uint64_t id2[2] = {20, 21};
        g = fx_group(f, "PartType2");
        fx_dataset(g, "Coordinates", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 3, pos2);
        fx_dataset(g, "Velocities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 3, vel2);
        fx_dataset(g, "ParticleIDs", H5T_STD_U64LE, H5T_NATIVE_UINT64, 2, 0, id2);
        H5Gclose(g);
    }
    H5Fclose(f);
}

/* A GADGET-4 snapshot of two files (snap_000.0.hdf5, .1.hdf5): either
 * file's name reads the whole set, types and MassTable masses kept; a set
 * whose second file is missing is refused, naming it. */
static void test_gadget4_two_files(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *p0 = fx_path(dir, "snap_000.0.hdf5"), *p1 = fx_path(dir, "snap_000.1.hdf5");
    write_g4_part(p0, 0);
    write_g4_part(p1, 1);
    for (int k = 0; k < 2; k++) {
        bn_particles *p = NULL;
        bn_snapshot_meta m;
        TU_OK(bn_snapshot_read(k ? p1 : p0, &p, &m));
        assert_int_equal(p->n, 5);
        assert_true(m.time == 0.25);
        const uint64_t want_id[5] = {10, 11, 12, 20, 21};
        const double want_mass[5] = {1, 2, 2, 0.5, 0.5};
        const uint8_t want_type[5] = {1, 1, 1, 2, 2};
        assert_non_null(p->type);
        for (int i = 0; i < 5; i++) {
            assert_int_equal(p->id[i], want_id[i]);
            assert_true(p->mass[i] == want_mass[i]);
            assert_int_equal(p->type[i], want_type[i]);
        }
        assert_true(p->pos[0][2] == 1.0 && p->pos[2][4] == -3.0 && p->vel[1][4] == 1.0);
        bn_particles_free(p);
    }
    remove(p1);
    bn_particles *p = NULL;
    assert_int_equal(bn_snapshot_read(p0, &p, NULL) != BN_OK, 1);
    assert_non_null(strstr(bn_last_error(), "snap_000.1.hdf5"));
    assert_null(p);
    remove(p0);
    free(p0);
    free(p1);
    fx_rmdir(dir);
}

/* int32 ids and an 8-bit type still read; NumPart counts as doubles. */
static void test_int32_ids(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "i32.hdf5");
    double pos[2][3] = {{0, 0, 0}, {1, 0, 0}}, vel[2][3] = {{0}}, mass[2] = {1, 1};
    int32_t ids[2] = {2147483647, 0};
    int counts[6] = {0, 2, 0, 0, 0, 0};
    double mt[6] = {0};
    hid_t f = fx_create(path);
    fx_gadget2_header(f, counts, mt, 0);
    hid_t g = fx_group(f, "PartType1");
    fx_dataset(g, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, 3, pos);
    fx_dataset(g, "Velocities", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, 3, vel);
    fx_dataset(g, "Masses", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, 0, mass);
    fx_dataset(g, "ParticleIDs", H5T_STD_I32BE, H5T_NATIVE_INT32, 2, 0, ids); /* big-endian too */
    H5Gclose(g);
    H5Fclose(f);
    bn_particles *p = NULL;
    TU_OK(bn_snapshot_read(path, &p, NULL));
    assert_int_equal(p->id[0], 2147483647u);
    assert_int_equal(p->id[1], 0);
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gadget2_float_masstable),
        cmocka_unit_test(test_swift_like_multi_type),
        cmocka_unit_test(test_gadget4_like),
        cmocka_unit_test(test_gadget4_two_files),
        cmocka_unit_test(test_int32_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
