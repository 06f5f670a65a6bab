/* The GPU tree equals the CPU tree on the same input: keys, order, node
 * and leaf counts, every node's bodies and children, groups, and moments
 * to float precision (the GPU stores them in float). Fresh random inputs,
 * Hilbert and Morton, degenerate sets. Skipped without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#ifdef BANYAN_HAVE_CUDA
#include "core/backend_cuda.h"
#include "tree/tree_cpu.h"

static bn_gravity_params params(bn_curve curve, int leaf, int group)
{
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_GPU;
    g.curve = curve;
    g.leaf_size = leaf;
    g.group_size = group;
    return g;
}

static void cpu_tree(bn_tree *t, const bn_particles *p, const bn_gravity_params *g)
{
    memset(t, 0, sizeof *t);
    TU_OK(bn_tree_sort_bodies(t, (const double *const *)p->pos, p->mass, p->n, g->curve, NULL, NULL, NULL));
    TU_OK(bn_tree_build(t, g->leaf_size));
    bn_tree_moments(t, g->mac, g->theta, g->quadrupole);
    TU_OK(bn_tree_groups(t, g->group_size));
}

/* Float storage: relative 2^-23 of the value, and of the cell's scale for
 * quantities that cancel (com offsets, quadrupole components). */
static void compare_node(const bn_tree *c, const bn_tree *d, int i)
{
    assert_int_equal(c->first_body[i], d->first_body[i]);
    assert_int_equal(c->n_bodies[i], d->n_bodies[i]);
    assert_int_equal(c->first_child[i], d->first_child[i]);
    assert_int_equal(c->n_children[i], d->n_children[i]);
    assert_int_equal(c->level[i], d->level[i]);
    assert_true(c->size[i] == d->size[i]);
    const double m = c->mass_node[i], l = c->size[i], big = c->box_size;
    TU_NEAR(d->mass_node[i], m, 1e-6);
    for (int k = 0; k < 3; k++) {
        assert_true(c->center[3 * i + k] == d->center[3 * i + k]);
        if (fabs(d->com[3 * i + k] - c->com[3 * i + k]) > 2e-7 * big + 1e-6 * l)
            fail_msg("node %d com[%d]: gpu %.9g cpu %.9g", i, k, d->com[3 * i + k], c->com[3 * i + k]);
    }
    for (int k = 0; k < 6; k++)
        if (fabs(d->quad[6 * i + k] - c->quad[6 * i + k]) > 1e-5 * m * l * l)
            fail_msg("node %d quad[%d]: gpu %.9g cpu %.9g (M l^2 = %g)", i, k, d->quad[6 * i + k],
                     c->quad[6 * i + k], m * l * l);
    if (c->open_radius[i] < 1e30 && fabs(d->open_radius[i] - c->open_radius[i]) > 1e-5 * c->open_radius[i] + 4e-7 * big)
        fail_msg("node %d open radius: gpu %.9g cpu %.9g", i, d->open_radius[i], c->open_radius[i]);
}

/* CPU groups come in node order, GPU groups in key order: compare them
 * sorted by first body (they partition the bodies, so firsts differ). */
static int cmp_first(const void *a, const void *b)
{
    const int32_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static void compare_groups(const bn_tree *c, const bn_tree *d)
{
    assert_int_equal(c->n_groups, d->n_groups);
    int32_t(*cg)[5] = malloc(sizeof *cg * (size_t)(c->n_groups + 1));
    for (int g = 0; g < c->n_groups; g++) {
        cg[g][0] = c->group_first[g];
        cg[g][1] = c->group_count[g];
        cg[g][2] = g;
    }
    qsort(cg, (size_t)c->n_groups, sizeof *cg, cmp_first);
    for (int g = 0; g < d->n_groups; g++) {
        assert_int_equal(d->group_first[g], cg[g][0]);
        assert_int_equal(d->group_count[g], cg[g][1]);
        const int j = cg[g][2];
        for (int k = 0; k < 3; k++) {
            if (fabs(d->group_lo[3 * g + k] - c->group_lo[3 * j + k]) > 4e-7 * c->box_size ||
                fabs(d->group_hi[3 * g + k] - c->group_hi[3 * j + k]) > 4e-7 * c->box_size)
                fail_msg("group %d box axis %d differs", g, k);
        }
    }
    free(cg);
}

static void compare_trees(const bn_particles *p, const bn_gravity_params *g)
{
    bn_tree c, d;
    bn_force_stats st;
    cpu_tree(&c, p, g);
    TU_OK(bn_gpu_tree_download(p, g, &d, &st));
    assert_int_equal(c.n, d.n);
    for (int k = 0; k < 3; k++) assert_true(c.box_lo[k] == d.box_lo[k]);
    assert_true(c.box_size == d.box_size);
    for (size_t i = 0; i < c.n; i++) {
        assert_true(c.keys[i] == d.keys[i]);
        assert_int_equal(c.order[i], d.order[i]); /* both sorts are stable */
        for (int k = 0; k < 3; k++) assert_true(c.pos[k][i] == d.pos[k][i]);
    }
    assert_int_equal(c.n_nodes, d.n_nodes);
    assert_int_equal(c.n_leaves, d.n_leaves);
    assert_int_equal(c.n_levels, d.n_levels);
    for (int L = 0; L <= c.n_levels; L++) assert_int_equal(c.level_start[L], d.level_start[L]);
    for (int i = 0; i < c.n_nodes; i++) compare_node(&c, &d, i);
    compare_groups(&c, &d);
    assert_int_equal(st.n_nodes, c.n_nodes);
    assert_true(st.device_bytes_peak > 0);
    bn_tree_release(&c);
    bn_gpu_tree_host_free(&d);
}

static void test_random_sets(void **state)
{
    (void)state;
    const int shapes[3] = {0, 1, 2};
    for (int s = 0; s < 3; s++) {
        bn_particles *p = tu_random_particles(30000 + 777 * s, 100 + s, shapes[s]);
        bn_gravity_params g = params(s == 1 ? BN_CURVE_MORTON : BN_CURVE_HILBERT, 16, 64);
        compare_trees(p, &g);
        g.leaf_size = 1 + 5 * s; /* small leaves: deep trees */
        g.group_size = 8 + 24 * s;
        g.mac = s == 2 ? BN_MAC_BH : s == 0 ? BN_MAC_BONSAI_BOX : BN_MAC_BONSAI;
        g.quadrupole = s != 1;
        compare_trees(p, &g);
        g.leaf_size = 40 + 8 * s; /* leaves bigger than groups: cut in chunks */
        g.group_size = 16 + s;
        compare_trees(p, &g);
        bn_particles_free(p);
    }
}

/* A far outlier, all bodies at one point (a leaf at the deepest level,
 * cut into groups), one and two bodies, massless bodies. */
static void test_degenerate_sets(void **state)
{
    (void)state;
    bn_gravity_params g = params(BN_CURVE_HILBERT, 16, 64);
    bn_particles *p = tu_random_particles(5000, 9, 2);
    p->pos[0][17] = 1e6;
    compare_trees(p, &g);
    for (size_t i = 0; i < 300; i++) {
        for (int k = 0; k < 3; k++) p->pos[k][i] = 0.25;
        if (i % 3 == 0) p->mass[i] = 0;
    }
    TU_OK(bn_particles_resize(p, 300));
    compare_trees(p, &g);
    g.leaf_size = 400; /* the root is one leaf of 300, in groups of 64 */
    compare_trees(p, &g);
    g.leaf_size = 16;
    TU_OK(bn_particles_resize(p, 2));
    p->mass[0] = 1;
    p->pos[0][1] = -3;
    compare_trees(p, &g);
    TU_OK(bn_particles_resize(p, 1));
    compare_trees(p, &g);
    bn_particles_free(p);
}

/* Two builds of one input give bit-identical trees. */
static void test_deterministic(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(50000, 31, 2);
    bn_gravity_params g = params(BN_CURVE_HILBERT, 16, 64);
    bn_tree a, b;
    TU_OK(bn_gpu_tree_download(p, &g, &a, NULL));
    TU_OK(bn_gpu_tree_download(p, &g, &b, NULL));
    assert_int_equal(a.n_nodes, b.n_nodes);
    assert_memory_equal(a.com, b.com, 3 * (size_t)a.n_nodes * sizeof(double));
    assert_memory_equal(a.quad, b.quad, 6 * (size_t)a.n_nodes * sizeof(double));
    assert_memory_equal(a.group_lo, b.group_lo, 3 * (size_t)a.n_groups * sizeof(double));
    bn_gpu_tree_host_free(&a);
    bn_gpu_tree_host_free(&b);
    bn_particles_free(p);
}
#endif

TU_GPU_TEST_MAIN(cmocka_unit_test(test_random_sets),
                 cmocka_unit_test(test_degenerate_sets),
                 cmocka_unit_test(test_deterministic))
