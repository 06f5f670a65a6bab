/* Snapshot writer: bit-identical round trips, the GADGET-4 layout checked
 * with the raw HDF5 API (independent of our reader), and no partial or
 * temporary file left behind on failure. */
#include "test_snapshot_fixtures.h"

static bn_snapshot_meta custom_meta(void)
{
    bn_snapshot_meta m = bn_snapshot_meta_default();
    m.time = 1.25;
    m.redshift = 0.0;
    m.box_size = 0.0;
    m.units.length_in_cm = 3.085678e21; /* kpc, 1e10 Msun, km/s: GADGET's usual */
    m.units.mass_in_g = 1.989e43;
    m.units.velocity_in_cm_per_s = 1e5;
    m.units.G = 43007.1;
    m.gravity.G = 43007.1;
    m.gravity.softening = 0.0125;
    m.gravity.theta = 0.7;
    m.gravity.mac = BN_MAC_ACCEL;
    m.gravity.accel_alpha = 2.5e-3;
    m.gravity.method = BN_METHOD_DIRECT;
    m.gravity.backend = BN_BACKEND_CPU;
    m.gravity.leaf_size = 8;
    m.gravity.group_size = 32;
    m.gravity.curve = BN_CURVE_MORTON;
    m.gravity.quadrupole = 0;
    m.has_gravity = 1;
    return m;
}

static void assert_same_doubles(const double *a, const double *b, size_t n, const char *what)
{
    if (memcmp(a, b, n * sizeof *a) != 0) fail_msg("%s differ after the round trip", what);
}

static void assert_same_particles(const bn_particles *a, const bn_particles *b, int forces)
{
    assert_int_equal(a->n, b->n);
    if (a->n == 0) return; /* an empty share: its arrays may be NULL */
    for (int k = 0; k < 3; k++) {
        assert_same_doubles(a->pos[k], b->pos[k], a->n, "positions");
        assert_same_doubles(a->vel[k], b->vel[k], a->n, "velocities");
        if (forces) assert_same_doubles(a->acc[k], b->acc[k], a->n, "accelerations");
    }
    assert_same_doubles(a->mass, b->mass, a->n, "masses");
    if (forces) assert_same_doubles(a->pot, b->pot, a->n, "potentials");
    assert_memory_equal(a->id, b->id, a->n * sizeof *a->id);
}

/* Positions, velocities, masses, ids and every meta field come back
 * bit for bit; no forces in, none out. */
static void test_roundtrip_no_forces(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "snap.hdf5");
    bn_particles *p = tu_random_particles(1000, 3, 2), *q = NULL;
    p->pos[0][7] = 1e300; /* extreme but finite values survive too */
    p->vel[2][9] = -4.9e-324;
    p->id[5] = UINT64_MAX;
    bn_snapshot_meta m = custom_meta(), r;
    TU_OK(bn_snapshot_write(path, p, &m));
    TU_OK(bn_snapshot_read(path, &q, &r));
    assert_same_particles(p, q, 0);
    assert_null(q->acc[0]);
    assert_int_equal(r.has_acceleration, 0);
    assert_int_equal(r.has_potential, 0);
    assert_int_equal(r.has_gravity, 1);
    assert_true(r.time == m.time && r.redshift == m.redshift && r.box_size == m.box_size);
    assert_memory_equal(&r.units, &m.units, sizeof r.units);
    assert_memory_equal(&r.gravity, &m.gravity, sizeof r.gravity);
    char list[256];
    assert_int_equal(fx_count_files(dir, list, sizeof list), 1); /* no temporary left */
    bn_particles_free(p);
    bn_particles_free(q);
    free(path);
    fx_rmdir(dir);
}

/* With forces, more rows than one I/O block (65536) so blocking is used. */
static void test_roundtrip_forces(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "forces.hdf5");
    size_t n = 70001;
    bn_particles *p = tu_random_particles(n, 11, 1), *q = NULL;
    TU_OK(bn_particles_ensure_forces(p));
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) p->acc[k][i] = sin(1.0 + (double)(3 * i + (size_t)k)) / 3.0;
        p->pot[i] = -1.0 / (1.0 + (double)i / 7.0);
    }
    bn_snapshot_meta r;
    TU_OK(bn_snapshot_write(path, p, NULL));
    TU_OK(bn_snapshot_read(path, &q, &r));
    assert_non_null(q->acc[0]);
    assert_same_particles(p, q, 1);
    assert_int_equal(r.has_acceleration, 1);
    assert_int_equal(r.has_potential, 1);
    assert_int_equal(r.has_gravity, 1);
    bn_particles_free(p);
    bn_particles_free(q);
    free(path);
    fx_rmdir(dir);
}

/* ---- the layout, read with the raw HDF5 API ---- */
static void read_attr(hid_t obj, const char *name, hid_t mem_type, void *out, hssize_t want_n, H5T_class_t cls,
                      size_t size)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) fail_msg("attribute %s missing", name);
    hid_t t = H5Aget_type(a), s = H5Aget_space(a);
    if (H5Tget_class(t) != cls) fail_msg("attribute %s has class %d, expected %d", name, H5Tget_class(t), cls);
    if (size && H5Tget_size(t) != size) fail_msg("attribute %s has %zu bytes per value", name, H5Tget_size(t));
    if (H5Sget_simple_extent_npoints(s) != want_n)
        fail_msg("attribute %s has %lld values", name, (long long)H5Sget_simple_extent_npoints(s));
    assert_true(H5Aread(a, mem_type, out) >= 0);
    H5Sclose(s);
    H5Tclose(t);
    H5Aclose(a);
}

static double attr_double(hid_t obj, const char *name)
{
    double v;
    read_attr(obj, name, H5T_NATIVE_DOUBLE, &v, 1, H5T_FLOAT, 8);
    return v;
}

static void attr_string(hid_t obj, const char *name, char *buf, size_t len)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) fail_msg("attribute %s missing", name);
    hid_t t = H5Aget_type(a);
    assert_int_equal(H5Tget_class(t), H5T_STRING);
    assert_false(H5Tis_variable_str(t) > 0); /* fixed length: yt decodes bytes */
    size_t sz = H5Tget_size(t);
    assert_true(sz < len);
    memset(buf, 0, len);
    assert_true(H5Aread(a, t, buf) >= 0);
    H5Tclose(t);
    H5Aclose(a);
}

static void check_dataset(hid_t g, const char *name, H5T_class_t cls, size_t size, int rank, hsize_t d0, hsize_t d1)
{
    hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
    if (d < 0) fail_msg("dataset %s missing", name);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    assert_int_equal(H5Tget_class(t), cls);
    assert_int_equal(H5Tget_size(t), size);
    assert_int_equal(H5Sget_simple_extent_ndims(s), rank);
    H5Sget_simple_extent_dims(s, dims, NULL);
    assert_int_equal(dims[0], d0);
    if (rank == 2) assert_int_equal(dims[1], d1);
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
}

static void check_header(hid_t f, size_t n)
{
    hid_t h = H5Gopen2(f, "Header", H5P_DEFAULT);
    uint64_t counts[6];
    uint32_t high[6];
    double mt[6];
    int flag;
    read_attr(h, "NumPart_ThisFile", H5T_NATIVE_UINT64, counts, 6, H5T_INTEGER, 8);
    for (int t = 0; t < 6; t++) assert_int_equal(counts[t], t == 1 ? n : 0);
    read_attr(h, "NumPart_Total", H5T_NATIVE_UINT64, counts, 6, H5T_INTEGER, 8);
    assert_int_equal(counts[1], n);
    read_attr(h, "NumPart_Total_HighWord", H5T_NATIVE_UINT32, high, 6, H5T_INTEGER, 4);
    assert_int_equal(high[1], 0);
    read_attr(h, "MassTable", H5T_NATIVE_DOUBLE, mt, 6, H5T_FLOAT, 8);
    for (int t = 0; t < 6; t++) assert_true(mt[t] == 0.0);
    assert_true(attr_double(h, "Time") == 1.25);
    assert_true(attr_double(h, "Redshift") == 0.0);
    assert_true(attr_double(h, "BoxSize") == 0.0);
    assert_true(attr_double(h, "Omega0") == 0.0 && attr_double(h, "OmegaLambda") == 0.0);
    assert_true(attr_double(h, "HubbleParam") == 1.0);
    read_attr(h, "NumFilesPerSnapshot", H5T_NATIVE_INT, &flag, 1, H5T_INTEGER, 4);
    assert_int_equal(flag, 1);
    read_attr(h, "Flag_DoublePrecision", H5T_NATIVE_INT, &flag, 1, H5T_INTEGER, 4);
    assert_int_equal(flag, 1);
    char code[64];
    attr_string(h, "Code", code, sizeof code);
    assert_true(strncmp(code, "banyan", 6) == 0); /* never "SWIFT": yt would take it for SWIFT */
    H5Gclose(h);
}

static void check_parameters(hid_t f, const bn_snapshot_meta *m)
{
    hid_t g = H5Gopen2(f, "Parameters", H5P_DEFAULT);
    assert_true(g >= 0);
    char s[64];
    assert_true(attr_double(g, "GravitationalConstant") == m->gravity.G);
    assert_true(attr_double(g, "Softening") == m->gravity.softening);
    assert_true(attr_double(g, "OpeningAngle") == m->gravity.theta);
    assert_true(attr_double(g, "AccelAlpha") == m->gravity.accel_alpha);
    attr_string(g, "OpeningCriterion", s, sizeof s);
    assert_string_equal(s, "accel");
    attr_string(g, "Method", s, sizeof s);
    assert_string_equal(s, "direct");
    attr_string(g, "Backend", s, sizeof s);
    assert_string_equal(s, "cpu");
    attr_string(g, "Curve", s, sizeof s);
    assert_string_equal(s, "morton");
    int v;
    read_attr(g, "LeafSize", H5T_NATIVE_INT, &v, 1, H5T_INTEGER, 4);
    assert_int_equal(v, 8);
    read_attr(g, "GroupSize", H5T_NATIVE_INT, &v, 1, H5T_INTEGER, 4);
    assert_int_equal(v, 32);
    read_attr(g, "Quadrupole", H5T_NATIVE_INT, &v, 1, H5T_INTEGER, 4);
    assert_int_equal(v, 0);
    read_attr(g, "ComovingIntegrationOn", H5T_NATIVE_INT, &v, 1, H5T_INTEGER, 4);
    assert_int_equal(v, 0);
    assert_true(attr_double(g, "UnitLength_in_cm") == m->units.length_in_cm);
    assert_true(attr_double(g, "UnitMass_in_g") == m->units.mass_in_g);
    assert_true(attr_double(g, "UnitVelocity_in_cm_per_s") == m->units.velocity_in_cm_per_s);
    H5Gclose(g);
    g = H5Gopen2(f, "Units", H5P_DEFAULT);
    assert_true(g >= 0);
    assert_true(attr_double(g, "UnitLength_in_cm") == m->units.length_in_cm);
    assert_true(attr_double(g, "UnitMass_in_g") == m->units.mass_in_g);
    assert_true(attr_double(g, "UnitVelocity_in_cm_per_s") == m->units.velocity_in_cm_per_s);
    assert_true(attr_double(g, "Unit length in cgs (U_L)") == m->units.length_in_cm);
    TU_NEAR(attr_double(g, "Unit time in cgs (U_t)"), m->units.length_in_cm / m->units.velocity_in_cm_per_s, 1e-15);
    H5Gclose(g);
}

static void test_layout(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "layout.hdf5");
    size_t n = 257;
    bn_particles *p = tu_random_particles(n, 5, 0);
    TU_OK(bn_particles_ensure_forces(p));
    for (size_t i = 0; i < n; i++) p->pot[i] = -(double)i;
    bn_snapshot_meta m = custom_meta();
    TU_OK(bn_snapshot_write(path, p, &m));

    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    check_header(f, n);
    check_parameters(f, &m);
    hid_t g = H5Gopen2(f, "PartType1", H5P_DEFAULT);
    assert_true(g >= 0);
    check_dataset(g, "Coordinates", H5T_FLOAT, 8, 2, n, 3);
    check_dataset(g, "Velocities", H5T_FLOAT, 8, 2, n, 3);
    check_dataset(g, "ParticleIDs", H5T_INTEGER, 8, 1, n, 0);
    check_dataset(g, "Masses", H5T_FLOAT, 8, 1, n, 0);
    check_dataset(g, "Acceleration", H5T_FLOAT, 8, 2, n, 3);
    check_dataset(g, "Potential", H5T_FLOAT, 8, 1, n, 0);
    /* row-major N x 3: row i holds particle i's x, y, z */
    double *xyz = malloc(3 * n * sizeof *xyz);
    hid_t d = H5Dopen2(g, "Coordinates", H5P_DEFAULT);
    assert_true(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, xyz) >= 0);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) assert_true(xyz[3 * i + (size_t)k] == p->pos[k][i]);
    H5Dclose(d);
    uint64_t *ids = malloc(n * sizeof *ids);
    d = H5Dopen2(g, "ParticleIDs", H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    assert_int_equal(H5Tget_sign(t), H5T_SGN_NONE);
    H5Tclose(t);
    assert_true(H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids) >= 0);
    assert_memory_equal(ids, p->id, n * sizeof *ids);
    H5Dclose(d);
    H5Gclose(g);
    assert_false(H5Lexists(f, "PartType0", H5P_DEFAULT) > 0);
    H5Fclose(f);
    free(xyz);
    free(ids);
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

/* Without forces (initial conditions) the parameters are written too:
 * G, the units and the solver's parameters from meta (here the defaults). */
static void test_parameters_without_forces(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "ic.hdf5");
    bn_particles *p = tu_random_particles(10, 1, 0), *q = NULL;
    bn_snapshot_meta r;
    TU_OK(bn_snapshot_write(path, p, NULL));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t g = H5Gopen2(f, "Parameters", H5P_DEFAULT);
    assert_true(attr_double(g, "GravitationalConstant") == 1.0);
    assert_true(attr_double(g, "UnitLength_in_cm") == 1.0);
    assert_true(attr_double(g, "Softening") == bn_gravity_params_default().softening);
    char s[32];
    attr_string(g, "OpeningCriterion", s, sizeof s);
    assert_string_equal(s, "bonsai");
    assert_false(H5Lexists(f, "PartType1/Acceleration", H5P_DEFAULT) > 0);
    assert_false(H5Lexists(f, "PartType1/Potential", H5P_DEFAULT) > 0);
    H5Gclose(g);
    H5Fclose(f);
    TU_OK(bn_snapshot_read(path, &q, &r));
    assert_int_equal(r.has_gravity, 1);
    assert_int_equal(r.has_acceleration, 0);
    assert_true(r.units.G == 1.0 && r.gravity.G == 1.0);
    bn_particles_free(p);
    bn_particles_free(q);
    free(path);
    fx_rmdir(dir);
}

/* Failures leave nothing behind; a good write replaces an old file whole. */
static void test_atomic_writes(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "s.hdf5");
    bn_particles *p = tu_random_particles(100, 2, 0), *q = NULL;
    char list[512];

    TU_FAILS(bn_snapshot_write("/nonexistent-dir/s.hdf5", p, NULL), BN_ERR_IO, "/nonexistent-dir/s.hdf5");

    p->vel[1][42] = NAN; /* refused before anything is created */
    TU_FAILS(bn_snapshot_write(path, p, NULL), BN_ERR_ARGUMENT, "particle 42");
    assert_int_equal(fx_count_files(dir, list, sizeof list), 0);
    p->vel[1][42] = 0.5;
    p->mass[3] = -1.0;
    TU_FAILS(bn_snapshot_write(path, p, NULL), BN_ERR_ARGUMENT, "particle 3");
    assert_int_equal(fx_count_files(dir, list, sizeof list), 0);
    p->mass[3] = 0.01;

    TU_OK(bn_snapshot_write(path, p, NULL));
    bn_particles *small = tu_random_particles(7, 9, 1);
    TU_OK(bn_snapshot_write(path, small, NULL)); /* overwrite */
    TU_OK(bn_snapshot_read(path, &q, NULL));
    assert_int_equal(q->n, 7);
    if (fx_count_files(dir, list, sizeof list) != 1) fail_msg("files left: %s", list);

    /* a directory where the file should go: the rename fails, the
     * temporary is removed */
    char *sub = fx_path(dir, "sub.hdf5");
    assert_int_equal(mkdir(sub, 0755), 0);
    char *inner = fx_path(sub, "x");
    FILE *fp = fopen(inner, "w"); /* non-empty: rename over it must fail */
    fclose(fp);
    assert_true(bn_snapshot_write(sub, p, NULL) != BN_OK);
    assert_non_null(strstr(bn_last_error(), "sub.hdf5"));
    assert_int_equal(fx_count_files(dir, list, sizeof list), 2);
    unlink(inner);
    rmdir(sub);
    free(inner);
    free(sub);
    bn_particles_free(p);
    bn_particles_free(small);
    bn_particles_free(q);
    free(path);
    fx_rmdir(dir);
}

/* every reader the set's time, one without a file too (4 of 3) */
static void same_with_forces(const bn_particles *want, const bn_particles *got)
{
    assert_same_particles(want, got, want->acc[0] != NULL);
}

static void assert_shares(const char *path, int ranks, const bn_particles *p)
{
    fx_assert_shares(path, ranks, p, custom_meta().time, same_with_forces);
}

/* A snapshot split over 3 files (one empty, as a rank without particles
 * writes it), read whole from any of its files, and in shares by 2 and 4
 * readers; a missing file, a wrong total and an id in two files refused. */
static void test_split_snapshot(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "snap.hdf5");
    bn_particles *p = tu_random_particles(1000, 4, 3), *q = NULL;
    TU_OK(bn_particles_ensure_forces(p));
    for (size_t i = 0; i < p->n; i++) {
        for (int k = 0; k < 3; k++) p->acc[k][i] = -p->pos[k][i];
        p->pot[i] = -1.0 - (double)i;
    }
    const size_t cut[4] = {0, 400, 400, 1000};
    bn_snapshot_meta m = custom_meta(), r;
    char part[3][512];
    for (int k = 0; k < 3; k++) {
        TU_OK(bn_snapshot_part_path(path, k, part[k], sizeof part[k]));
        bn_particles *piece = tu_rows(p, cut[k], cut[k + 1]);
        TU_OK(bn_snapshot_write_part(part[k], piece, &m, k, 3, p->n));
        bn_particles_free(piece);
    }
    assert_non_null(strstr(part[2], "snap.2.hdf5"));
    TU_OK(bn_snapshot_read(part[1], &q, &r));
    assert_same_particles(p, q, 1);
    assert_true(r.time == m.time && r.has_acceleration && r.has_potential);
    bn_particles_free(q);
    q = NULL;
    assert_shares(part[0], 2, p);
    assert_shares(part[2], 4, p);
    bn_particles *piece = tu_rows(p, 400, 1000);
    piece->id[0] = p->id[3]; /* an id of file 0 again */
    TU_OK(bn_snapshot_write_part(part[2], piece, &m, 2, 3, p->n));
    TU_FAILS(bn_snapshot_read(part[0], &q, NULL), BN_ERR_FORMAT, "appears more than once (particles 3 and 400)");
    piece->id[0] = p->id[400];
    TU_OK(bn_snapshot_write_part(part[2], piece, &m, 2, 3, p->n + 1));
    TU_FAILS(bn_snapshot_read(part[0], &q, NULL), BN_ERR_FORMAT, "NumPart_Total");
    unlink(part[2]);
    TU_FAILS(bn_snapshot_read(part[0], &q, NULL), BN_ERR_IO, "snap.2.hdf5");
    TU_FAILS(bn_snapshot_write_part(part[2], piece, &m, 3, 3, p->n), BN_ERR_ARGUMENT, "file 3 of 3");
    TU_FAILS(bn_snapshot_write_part(part[2], piece, &m, 2, 3, 10), BN_ERR_ARGUMENT, "600 particles of PartType1 in this file");
    bn_particles_free(piece);
    /* GADGET-4's names */
    char name[64];
    TU_OK(bn_snapshot_part_path("out/snap_003.hdf5", 7, name, sizeof name));
    assert_string_equal(name, "out/snap_003.7.hdf5");
    TU_OK(bn_snapshot_part_path("out/snap_003.12.hdf5", 0, name, sizeof name));
    assert_string_equal(name, "out/snap_003.0.hdf5");
    TU_OK(bn_snapshot_part_path("snap", 2, name, sizeof name));
    assert_string_equal(name, "snap.2.hdf5");
    /* one file read in shares: rows */
    TU_OK(bn_snapshot_write(path, p, &m));
    assert_shares(path, 3, p);
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_no_forces),   cmocka_unit_test(test_roundtrip_forces),
        cmocka_unit_test(test_layout),                cmocka_unit_test(test_parameters_without_forces),
        cmocka_unit_test(test_atomic_writes),         cmocka_unit_test(test_split_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
