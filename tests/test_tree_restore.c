/* A saved tree (restart files with block steps between rebuilds): the
 * workspace's tree as bytes, loaded into another workspace, refreshed for
 * moved particles gives the same bits as the tree that was saved,
 * refreshed for the same moves; damaged bytes, or a tree of another
 * curve, are refused. */
#include <stdlib.h>
#include <string.h>
#include "gravity/gravity_cpu.h"
#include "tree/tree_cpu.h"
#include "testutil.h"

static bn_gravity_params tree_params(void)
{
    bn_gravity_params g = bn_gravity_params_default();
    g.method = BN_METHOD_TREE;
    g.leaf_size = 8;
    g.group_size = 32;
    g.softening = 0.01;
    return g;
}

/* Every particle moved by up to `step` on each axis. */
static void move(bn_particles *p, double step, uint64_t seed)
{
    srand((unsigned)seed);
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) p->pos[k][i] += step * (2.0 * rand() / RAND_MAX - 1.0);
}

/* Forces of p with ws's tree refreshed (rebuild 0), into a fresh set. */
static bn_particles *refreshed(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p)
{
    bn_particles *out = NULL;
    TU_OK(bn_particles_copy(&out, p));
    TU_OK(bn_particles_ensure_forces(out));
    TU_OK(bn_tree_forces_active_cpu(ws, g, p, NULL, NULL, 0, 0, out->acc, out->pot, NULL));
    return out;
}

static void test_saved_tree_refreshes_the_same(void **state)
{
    (void)state;
    const bn_gravity_params g = tree_params();
    bn_particles *p = tu_random_particles(4000, 31, 2);
    TU_OK(bn_particles_ensure_forces(p));
    bn_tree_workspace *a = NULL, *b = NULL;
    TU_OK(bn_tree_workspace_create(&a));
    TU_OK(bn_tree_workspace_create(&b));
    TU_OK(bn_tree_forces_active_cpu(a, &g, p, NULL, NULL, 0, 1, p->acc, p->pot, NULL)); /* the build */
    move(p, 0.02, 5); /* a step: the saving run refreshes once, then saves */
    bn_particles *once = refreshed(a, &g, p);
    bn_particles_free(once);
    void *bytes = NULL;
    size_t size = 0;
    TU_OK(bn_tree_workspace_save(a, p->n, &bytes, &size));
    void *none = NULL;
    size_t none_size = 7;
    TU_OK(bn_tree_workspace_save(a, p->n - 1, &none, &none_size)); /* another count: no tree */
    assert_null(none);
    assert_int_equal(none_size, 0);
    assert_int_equal(sizeof(bn_saved_tree), 72); /* the file's layout: a change here is a format change */
    assert_int_equal(size, sizeof(bn_saved_tree) + 4000 * 12);
    TU_OK(bn_tree_workspace_load(b, bytes, size, &g, p)); /* the continued run, at the save */
    move(p, 0.02, 6);
    bn_particles *fa = refreshed(a, &g, p), *fb = refreshed(b, &g, p);
    for (int k = 0; k < 3; k++) assert_memory_equal(fa->acc[k], fb->acc[k], p->n * sizeof(double));
    assert_memory_equal(fa->pot, fb->pot, p->n * sizeof(double));
    /* and a build of the moved particles is another tree: the refresh was one */
    bn_tree_workspace *c = NULL;
    TU_OK(bn_tree_workspace_create(&c));
    bn_particles *fc = NULL;
    TU_OK(bn_particles_copy(&fc, p));
    TU_OK(bn_particles_ensure_forces(fc));
    TU_OK(bn_tree_forces_active_cpu(c, &g, p, NULL, NULL, 0, 1, fc->acc, fc->pot, NULL));
    assert_true(memcmp(fa->acc[0], fc->acc[0], p->n * sizeof(double)) != 0);
    /* damaged bytes: refused, and the next evaluation builds */
    unsigned char *bad = malloc(size);
    memcpy(bad, bytes, size);
    uint32_t *order = (uint32_t *)(bad + sizeof(bn_saved_tree) + 4000 * 8);
    order[7] = order[8]; /* no permutation */
    assert_int_equal(bn_tree_workspace_load(c, bad, size, &g, p), BN_ERR_FORMAT);
    memcpy(bad, bytes, size);
    assert_int_equal(bn_tree_workspace_load(c, bad, size - 12, &g, p), BN_ERR_FORMAT);
    uint64_t *keys = (uint64_t *)(bad + sizeof(bn_saved_tree));
    keys[10] = keys[11] + 1; /* keys out of order */
    assert_int_equal(bn_tree_workspace_load(c, bad, size, &g, p), BN_ERR_FORMAT);
    free(bad);
    free(bytes);
    bn_particles_free(fa);
    bn_particles_free(fb);
    bn_particles_free(fc);
    bn_particles_free(p);
    bn_tree_workspace_free(a);
    bn_tree_workspace_free(b);
    bn_tree_workspace_free(c);
}

/* Whether the last failure's message holds `what`. */
static void assert_message(const char *what)
{
    if (!strstr(bn_last_error(), what)) fail_msg("message '%s' lacks '%s'", bn_last_error(), what);
}

/* The parser: a saved build's header and arrays where they lie; a tree
 * of another curve than the run's, a key beyond the curve's 63 bits (the
 * last, so that the keys stay in order) and keys out of order refused
 * with messages naming them. */
static void test_saved_tree_parse_checks(void **state)
{
    (void)state;
    bn_gravity_params g = tree_params();
    bn_particles *p = tu_random_particles(1000, 7, 2);
    TU_OK(bn_particles_ensure_forces(p));
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    TU_OK(bn_tree_forces_active_cpu(ws, &g, p, NULL, NULL, 0, 1, p->acc, p->pot, NULL));
    void *bytes = NULL;
    size_t size = 0;
    TU_OK(bn_tree_workspace_save(ws, p->n, &bytes, &size));
    bn_saved_tree h;
    const uint64_t *keys = NULL;
    const uint32_t *order = NULL;
    TU_OK(bn_tree_saved_parse(bytes, size, 1000, BN_CURVE_HILBERT, &h, &keys, &order));
    assert_int_equal(h.n, 1000);
    assert_int_equal(h.curve, BN_CURVE_HILBERT);
    assert_ptr_equal(keys, (const unsigned char *)bytes + 72);
    assert_ptr_equal(order, (const unsigned char *)bytes + 72 + 1000 * 8);
    assert_true(keys[999] < UINT64_C(1) << 63 && keys[0] <= keys[999]);
    /* this run's curve is Morton: the file's Hilbert keys are refused */
    assert_int_equal(bn_tree_saved_parse(bytes, size, 1000, BN_CURVE_MORTON, &h, &keys, &order), BN_ERR_FORMAT);
    assert_message("keys of the hilbert curve (0), this run's curve is morton");
    g.curve = BN_CURVE_MORTON; /* and so is the workspace's load */
    assert_int_equal(bn_tree_workspace_load(ws, bytes, size, &g, p), BN_ERR_FORMAT);
    unsigned char *bad = malloc(size);
    memcpy(bad, bytes, size);
    uint64_t *k = (uint64_t *)(bad + sizeof(bn_saved_tree));
    k[999] = UINT64_C(1) << 63;
    assert_int_equal(bn_tree_saved_parse(bad, size, 1000, BN_CURVE_HILBERT, &h, &keys, &order), BN_ERR_FORMAT);
    assert_message("key 999 (9223372036854775808) is not below 2^63");
    k[999] = UINT64_MAX;
    assert_int_equal(bn_tree_saved_parse(bad, size, 1000, BN_CURVE_HILBERT, &h, &keys, &order), BN_ERR_FORMAT);
    memcpy(bad, bytes, size);
    k[3] = k[4] + 1;
    assert_int_equal(bn_tree_saved_parse(bad, size, 1000, BN_CURVE_HILBERT, &h, &keys, &order), BN_ERR_FORMAT);
    assert_message("key 3 (");
    assert_message("above key 4 (");
    free(bad);
    free(bytes);
    bn_particles_free(p);
    bn_tree_workspace_free(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_saved_tree_refreshes_the_same),
        cmocka_unit_test(test_saved_tree_parse_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
