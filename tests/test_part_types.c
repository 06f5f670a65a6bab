/* Part types (bn_particles.type): they survive copies, resizes, a
 * simulation's steps (CPU backend), single and split snapshots (read back with the raw HDF5 API too: one
 * /PartTypeN group per type and GADGET-4's per-type header counts), and a
 * set whose particles are all PartType1 stays without a type array. */
#include "test_snapshot_fixtures.h"
#include <stdint.h>
#include "core/particles_remake.h"

/* 3 x n particles: PartType1 (halo), then 2 (disk), then 3 (bulge), in
 * the order a galaxy model and a reader put them. */
static bn_particles *three_types(size_t n)
{
    bn_particles *p = tu_random_particles(3 * n, 21, 2);
    TU_OK(bn_particles_ensure_types(p));
    for (size_t i = 0; i < p->n; i++) p->type[i] = (uint8_t)(1 + i / n);
    return p;
}

static void assert_same(const bn_particles *a, const bn_particles *b)
{
    assert_int_equal(a->n, b->n);
    for (int k = 0; k < 3; k++) {
        assert_memory_equal(a->pos[k], b->pos[k], a->n * sizeof(double));
        assert_memory_equal(a->vel[k], b->vel[k], a->n * sizeof(double));
    }
    assert_memory_equal(a->mass, b->mass, a->n * sizeof(double));
    assert_memory_equal(a->id, b->id, a->n * sizeof(uint64_t));
    for (size_t i = 0; i < a->n; i++) assert_int_equal(bn_particles_part_type(a, i), bn_particles_part_type(b, i));
}

static void test_copy_and_resize(void **state)
{
    (void)state;
    bn_particles *p = three_types(100), *q = NULL;
    TU_OK(bn_particles_copy(&q, p));
    assert_non_null(q->type);
    assert_same(p, q);
    TU_OK(bn_particles_resize(q, 1000)); /* grows past the capacity */
    assert_memory_equal(q->type, p->type, p->n);
    for (size_t i = p->n; i < q->n; i++) assert_int_equal(q->type[i], 1); /* new particles: PartType1 */
    TU_OK(bn_particles_resize(q, 10));
    TU_OK(bn_particles_resize(q, 20)); /* within the capacity: reset to PartType1 too */
    for (size_t i = 10; i < 20; i++) assert_int_equal(q->type[i], 1);
    q->type[3] = BN_PART_TYPES;
    TU_FAILS(bn_particles_validate(q, "set"), BN_ERR_ARGUMENT, "particle 3 (id 4) has part type 6");
    bn_particles_free(q);
    bn_particles *r = tu_random_particles(5, 1, 0);
    assert_null(r->type);
    assert_int_equal(bn_particles_part_type(r, 2), 1);
    bn_particles_free(r);
    bn_particles_free(p);
}

/* A stale set remade past its room (a GPU rank's host mirror): the same
 * arrays exist, zeroed, types 1; within the room nothing is remade. */
static void test_remake(void **state)
{
    (void)state;
    bn_particles *p = three_types(100);
    TU_OK(bn_particles_ensure_forces(p));
    const size_t room = p->capacity;
    TU_OK(bn_particles_remake(p, room)); /* within the room: kept as it was */
    assert_int_equal(p->n, room);
    assert_int_equal(p->type[250], 3);
    /* a count past any memory: refused before anything is freed */
    TU_FAILS(bn_particles_remake(p, SIZE_MAX / 2), BN_ERR_NOMEM, "refused");
    assert_int_equal(p->n, room);
    assert_int_equal(p->capacity, room);
    assert_int_equal(p->type[250], 3);
    TU_OK(bn_particles_remake(p, 4 * room));
    assert_int_equal(p->n, 4 * room);
    assert_true(p->capacity >= 4 * room);
    assert_non_null(p->acc[2]);
    assert_non_null(p->pot);
    for (size_t i = 0; i < p->n; i++) {
        assert_int_equal(p->type[i], 1);
        assert_true(p->pos[0][i] == 0.0 && p->vel[2][i] == 0.0 && p->mass[i] == 0.0 && p->id[i] == 0);
    }
    bn_particles *r = tu_random_particles(5, 1, 0); /* no types, no forces: none made */
    TU_OK(bn_particles_remake(r, 50));
    assert_null(r->type);
    assert_null(r->acc[0]);
    assert_int_equal(bn_particles_part_type(r, 40), 1);
    bn_particles_free(r);
    bn_particles_free(p);
}

/* A simulation (CPU backend) steps the particles and hands them back with
 * their types; one added later is PartType1. */
static void test_simulation_keeps_types(void **state)
{
    (void)state;
    bn_particles *p = three_types(200);
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    g.softening = 0.05;
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    TU_OK(bn_simulation_set_gravity(sim, &g));
    TU_OK(bn_simulation_set_particles(sim, p));
    TU_OK(bn_simulation_step(sim, NULL));
    const bn_particles *q = NULL;
    TU_OK(bn_simulation_particles(sim, &q));
    assert_non_null(q->type);
    assert_memory_equal(q->type, p->type, p->n);
    const double x[3] = {9, 9, 9}, v[3] = {0, 0, 0};
    TU_OK(bn_simulation_add_particle(sim, x, v, 0.001, 10000));
    TU_OK(bn_simulation_step(sim, NULL));
    TU_OK(bn_simulation_particles(sim, &q));
    assert_int_equal(q->n, p->n + 1);
    assert_memory_equal(q->type, p->type, p->n);
    assert_int_equal(q->type[p->n], 1);
    bn_simulation_free(sim);
    bn_particles_free(p);
}

static uint64_t header_entry(hid_t f, const char *name, int t)
{
    uint64_t v[BN_PART_TYPES];
    hid_t h = H5Gopen2(f, "Header", H5P_DEFAULT), a = H5Aopen(h, name, H5P_DEFAULT);
    assert_true(H5Aread(a, H5T_NATIVE_UINT64, v) >= 0);
    H5Aclose(a);
    H5Gclose(h);
    return v[t];
}

static hsize_t group_rows(hid_t f, const char *group)
{
    if (H5Lexists(f, group, H5P_DEFAULT) <= 0) return 0;
    hid_t g = H5Gopen2(f, group, H5P_DEFAULT), d = H5Dopen2(g, "ParticleIDs", H5P_DEFAULT), s = H5Dget_space(d);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(s, &n, NULL);
    H5Sclose(s);
    H5Dclose(d);
    H5Gclose(g);
    return n;
}

/* The file's groups and per-type counts, read without banyan's reader. */
static void check_layout(const char *path, const uint64_t this_file[BN_PART_TYPES],
                         const uint64_t total[BN_PART_TYPES])
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    for (int t = 0; t < BN_PART_TYPES; t++) {
        char g[16];
        snprintf(g, sizeof g, "PartType%d", t);
        assert_int_equal(group_rows(f, g), this_file[t]);
        assert_int_equal(header_entry(f, "NumPart_ThisFile", t), this_file[t]);
        assert_int_equal(header_entry(f, "NumPart_Total", t), total[t]);
    }
    H5Fclose(f);
}

static void test_single_file(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "galaxy.hdf5");
    bn_particles *p = three_types(300), *q = NULL;
    TU_OK(bn_snapshot_write(path, p, NULL));
    const uint64_t counts[BN_PART_TYPES] = {0, 300, 300, 300, 0, 0};
    check_layout(path, counts, counts);
    TU_OK(bn_snapshot_read(path, &q, NULL));
    assert_same(p, q);
    bn_particles_free(q);
    /* types interleaved: each group keeps the set's order, so the file
     * reads back sorted by type (stably) */
    for (size_t i = 0; i < p->n; i++) p->type[i] = (uint8_t)(i % 2 ? 4 : 0);
    TU_OK(bn_snapshot_write(path, p, NULL));
    TU_OK(bn_snapshot_read(path, &q, NULL));
    for (size_t j = 0; j < q->n; j++) {
        const size_t i = j < 450 ? 2 * j : 2 * (j - 450) + 1;
        assert_int_equal(q->id[j], p->id[i]);
        assert_int_equal(q->type[j], p->type[i]);
        assert_true(q->pos[1][j] == p->pos[1][i]);
    }
    bn_particles_free(q);
    /* all PartType1: one group, and read back without a type array */
    memset(p->type, 1, p->n);
    TU_OK(bn_snapshot_write(path, p, NULL));
    TU_OK(bn_snapshot_read(path, &q, NULL));
    assert_null(q->type);
    bn_particles_free(q);
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

static void assert_shares(const char *path, int ranks, const bn_particles *p)
{
    fx_assert_shares(path, ranks, p, 0.0, assert_same);
}

/* Three files (the middle one empty) with the set's per-type totals;
 * read whole and in shares. */
static void test_split_files(void **state)
{
    (void)state;
    char *dir = fx_tmpdir(), *path = fx_path(dir, "snap.hdf5");
    bn_particles *p = three_types(200), *q = NULL;
    const size_t cut[4] = {0, 250, 250, 600};
    const uint64_t total[BN_PART_TYPES] = {0, 200, 200, 200, 0, 0};
    char part[3][512];
    for (int k = 0; k < 3; k++) {
        TU_OK(bn_snapshot_part_path(path, k, part[k], sizeof part[k]));
        bn_particles *piece = tu_rows(p, cut[k], cut[k + 1]);
        TU_OK(bn_snapshot_write_part_types(part[k], piece, NULL, k, 3, total));
        bn_particles_free(piece);
    }
    const uint64_t file0[BN_PART_TYPES] = {0, 200, 50, 0, 0, 0}, file2[BN_PART_TYPES] = {0, 0, 150, 200, 0, 0};
    check_layout(part[0], file0, total);
    check_layout(part[2], file2, total);
    TU_OK(bn_snapshot_read(part[1], &q, NULL));
    assert_same(p, q);
    bn_particles_free(q);
    assert_shares(part[0], 2, p);
    TU_OK(bn_snapshot_write(path, p, NULL)); /* one file: rows shared */
    assert_shares(path, 4, p);
    /* the one-total writer counts every particle as PartType1 */
    TU_FAILS(bn_snapshot_write_part(part[2], p, NULL, 2, 3, p->n), BN_ERR_ARGUMENT,
             "200 particles of PartType2 in this file but 0 in the whole snapshot");
    bn_particles_free(p);
    free(path);
    fx_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_and_resize),
        cmocka_unit_test(test_remake),
        cmocka_unit_test(test_simulation_keeps_types),
        cmocka_unit_test(test_single_file),
        cmocka_unit_test(test_split_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
