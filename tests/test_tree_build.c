/* Invariants of the CPU tree stages (tree_cpu.h), checked by brute force
 * on fresh random inputs, Hilbert and Morton, several leaf sizes. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "tree/tree_cpu.h"

static void make_tree(bn_tree *t, const bn_particles *p, bn_curve curve, int leaf, int group)
{
    memset(t, 0, sizeof *t);
    TU_OK(bn_tree_sort_bodies(t, (const double *const *)p->pos, p->mass, p->n, curve, NULL, NULL, NULL));
    TU_OK(bn_tree_build(t, leaf));
    bn_tree_moments(t, BN_MAC_BONSAI, 0.5, 1);
    TU_OK(bn_tree_groups(t, group));
}

/* Levels, contiguous children inside the parent's range, leaves. */
static void check_structure(const bn_tree *t, int leaf)
{
    assert_int_equal(t->level_start[0], 0);
    assert_int_equal(t->level_start[1], 1);
    assert_int_equal(t->n_bodies[0], (int)t->n);
    int *cover = calloc(t->n, sizeof *cover), leaves = 0;
    for (int L = 0; L < t->n_levels; L++)
        for (int i = t->level_start[L]; i < t->level_start[L + 1]; i++) {
            assert_int_equal(t->level[i], L);
            assert_true(t->n_bodies[i] >= 1);
            if (t->n_children[i] == 0) {
                leaves++;
                assert_int_equal(t->first_child[i], -1);
                assert_true(t->n_bodies[i] <= leaf || L == BN_KEY_MAX_LEVEL ||
                            t->keys[t->first_body[i]] == t->keys[t->first_body[i] + t->n_bodies[i] - 1]);
                for (int b = t->first_body[i]; b < t->first_body[i] + t->n_bodies[i]; b++) cover[b]++;
                continue;
            }
            assert_true(t->n_bodies[i] > leaf);
            assert_true(t->n_children[i] >= 1 && t->n_children[i] <= 8);
            /* children: on the next level, their ranges tile the parent's */
            int next = t->first_body[i];
            for (int c = t->first_child[i]; c < t->first_child[i] + t->n_children[i]; c++) {
                assert_true(c >= t->level_start[L + 1] && c < t->level_start[L + 2]);
                assert_int_equal(t->first_body[c], next);
                next += t->n_bodies[c];
            }
            assert_int_equal(next, t->first_body[i] + t->n_bodies[i]);
        }
    assert_int_equal(leaves, t->n_leaves);
    assert_int_equal(t->n_nodes, t->level_start[t->n_levels]);
    for (size_t b = 0; b < t->n; b++) assert_int_equal(cover[b], 1); /* exactly one leaf */
    free(cover);
}

/* Bodies of a node share its key prefix and sit inside its cell; the
 * moments equal brute-force sums over its bodies. */
static void check_node(const bn_tree *t, int i)
{
    const int f = t->first_body[i], e = f + t->n_bodies[i], sh = 3 * (BN_KEY_MAX_LEVEL - t->level[i]);
    double m = 0, c[3] = {0, 0, 0}, q[6] = {0, 0, 0, 0, 0, 0};
    for (int b = f; b < e; b++) {
        if (sh < 63) assert_true((t->keys[b] >> sh) == (t->keys[f] >> sh));
        for (int k = 0; k < 3; k++) {
            const double x = t->pos[k][b], lo = t->center[3 * i + k] - 0.5 * t->size[i];
            assert_true(x >= lo - 1e-12 * t->box_size && x <= lo + t->size[i] + 1e-12 * t->box_size);
        }
        m += t->mass[b];
        for (int k = 0; k < 3; k++) c[k] += t->mass[b] * t->pos[k][b];
    }
    for (int k = 0; k < 3; k++) c[k] /= m;
    for (int b = f; b < e; b++) {
        const double x = t->pos[0][b] - c[0], y = t->pos[1][b] - c[1], z = t->pos[2][b] - c[2];
        const double r2 = x * x + y * y + z * z, mb = t->mass[b];
        q[0] += mb * (3 * x * x - r2);
        q[1] += mb * (3 * y * y - r2);
        q[2] += mb * (3 * z * z - r2);
        q[3] += mb * 3 * x * y;
        q[4] += mb * 3 * x * z;
        q[5] += mb * 3 * y * z;
    }
    TU_NEAR(t->mass_node[i], m, 1e-12);
    for (int k = 0; k < 3; k++)
        assert_true(fabs(t->com[3 * i + k] - c[k]) <= 1e-12 * (fabs(c[k]) + t->size[i]));
    const double qscale = m * t->size[i] * t->size[i];
    for (int k = 0; k < 6; k++) assert_true(fabs(t->quad[6 * i + k] - q[k]) <= 1e-12 * qscale);
    double d2 = 0;
    for (int k = 0; k < 3; k++) d2 += pow(t->com[3 * i + k] - t->center[3 * i + k], 2);
    TU_NEAR(t->delta[i], sqrt(d2), 1e-12);
    TU_NEAR(t->open_radius[i], t->size[i] / 0.5 + t->delta[i], 1e-14);
    for (int k = 0; k < 3; k++) { /* the bodies' box, exactly */
        double lo = INFINITY, hi = -INFINITY;
        for (int b = f; b < e; b++) {
            lo = fmin(lo, t->pos[k][b]);
            hi = fmax(hi, t->pos[k][b]);
        }
        assert_true(t->body_lo[3 * i + k] == lo && t->body_hi[3 * i + k] == hi);
    }
}

/* bonsai-box: the opening radius from the bodies' box, s/theta +
 * |com - box centre| (s its largest side, at least 1/8 of the octant's
 * side), and never below the guard
 * that keeps every body of the cell out of reach: sqrt(3)/2 s + that
 * distance bounds |x - com| for all of them. */
static void test_box_criterion(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(20000, 14, 2);
    bn_tree t;
    memset(&t, 0, sizeof t);
    TU_OK(bn_tree_sort_bodies(&t, (const double *const *)p->pos, p->mass, p->n, BN_CURVE_HILBERT, NULL, NULL, NULL));
    TU_OK(bn_tree_build(&t, 16));
    const double theta = 0.7;
    bn_tree_moments(&t, BN_MAC_BONSAI_BOX, theta, 1);
    int tighter = 0;
    for (int i = 0; i < t.n_nodes; i++) {
        const int f = t.first_body[i], e = f + t.n_bodies[i];
        double side = 0, b2 = 0, reach = 0;
        for (int k = 0; k < 3; k++) {
            double lo = INFINITY, hi = -INFINITY;
            for (int b = f; b < e; b++) {
                lo = fmin(lo, t.pos[k][b]);
                hi = fmax(hi, t.pos[k][b]);
            }
            side = fmax(side, hi - lo);
            b2 += pow(t.com[3 * i + k] - 0.5 * (lo + hi), 2);
        }
        for (int b = f; b < e; b++) {
            double r2 = 0;
            for (int k = 0; k < 3; k++) r2 += pow(t.pos[k][b] - t.com[3 * i + k], 2);
            reach = fmax(reach, sqrt(r2));
        }
        side = fmax(side, t.size[i] / 8); /* the floor (cells of one body) */
        const double want = fmax(side / theta + sqrt(b2), 0.8660254037844386 * side + sqrt(b2));
        TU_NEAR(t.open_radius[i], want, 1e-12);
        assert_true(t.open_radius[i] >= reach * (1 - 1e-12));
        tighter += t.open_radius[i] < t.size[i] / theta + t.delta[i];
    }
    assert_true(tighter > t.n_nodes / 2); /* the point of it: most cells are smaller than their octant */
    bn_tree_release(&t);
    bn_particles_free(p);
}

/* Groups tile the bodies in order; each is a node's range (<= group
 * bodies, parent > group) with the exact bounding box of its bodies. */
static void check_groups(const bn_tree *t, int group)
{
    int *cover = calloc(t->n, sizeof *cover);
    for (int g = 0; g < t->n_groups; g++) {
        const int f = t->group_first[g], e = f + t->group_count[g];
        assert_true(t->group_count[g] >= 1 && t->group_count[g] <= group);
        for (int k = 0; k < 3; k++) {
            double lo = INFINITY, hi = -INFINITY;
            for (int b = f; b < e; b++) {
                lo = fmin(lo, t->pos[k][b]);
                hi = fmax(hi, t->pos[k][b]);
            }
            assert_true(t->group_lo[3 * g + k] == lo && t->group_hi[3 * g + k] == hi);
        }
        for (int b = f; b < e; b++) cover[b]++;
    }
    for (size_t b = 0; b < t->n; b++) assert_int_equal(cover[b], 1);
    /* deepest: a node with <= group bodies whose parent has more is a group */
    int expect = 0;
    for (int i = 0; i < t->n_nodes; i++) {
        if (i == 0 && t->n_bodies[0] <= group) expect++;
        if (t->n_bodies[i] > group) {
            for (int c = t->first_child[i]; t->n_children[i] && c < t->first_child[i] + t->n_children[i]; c++)
                expect += t->n_bodies[c] <= group;
            if (t->n_children[i] == 0) expect += (t->n_bodies[i] + group - 1) / group;
        }
    }
    assert_int_equal(t->n_groups, expect);
    free(cover);
}

static void check_all(const bn_particles *p, bn_curve curve, int leaf, int group)
{
    bn_tree t;
    make_tree(&t, p, curve, leaf, group);
    check_structure(&t, leaf);
    for (int i = 0; i < t.n_nodes; i++) check_node(&t, i);
    check_groups(&t, group);
    bn_tree_release(&t);
}

static void test_plummer_like(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(20000, 11, 2);
    check_all(p, BN_CURVE_HILBERT, 16, 64);
    check_all(p, BN_CURVE_MORTON, 16, 64);
    check_all(p, BN_CURVE_HILBERT, 1, 7);
    check_all(p, BN_CURVE_MORTON, 5, 200);
    bn_particles_free(p);
}

/* Coincident particles: leaves at the deepest level hold more than
 * leaf_size bodies; groups cut them in chunks. */
static void test_coincident(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(3000, 12, 0);
    for (size_t i = 1000; i < 3000; i++)
        for (int k = 0; k < 3; k++) p->pos[k][i] = p->pos[k][i % 5]; /* 5 clumps of 400 */
    bn_tree t;
    make_tree(&t, p, BN_CURVE_HILBERT, 16, 64);
    check_structure(&t, 16);
    int big = 0;
    for (int i = 0; i < t.n_nodes; i++) {
        big += t.n_children[i] == 0 && t.n_bodies[i] > 16;
        check_node(&t, i);
    }
    assert_true(big >= 5);
    assert_int_equal(t.n_levels, BN_KEY_MAX_LEVEL + 1);
    check_groups(&t, 64);
    bn_tree_release(&t);
    /* all at one point */
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) p->pos[k][i] = 0.25;
    check_all(p, BN_CURVE_MORTON, 16, 64);
    bn_particles_free(p);
}

/* N = 1 and N = 2. */
static void test_tiny(void **state)
{
    (void)state;
    for (size_t n = 1; n <= 2; n++) {
        bn_particles *p = tu_random_particles(n, 13, 1);
        bn_tree t;
        make_tree(&t, p, BN_CURVE_HILBERT, 1, 1);
        check_structure(&t, 1);
        for (int i = 0; i < t.n_nodes; i++) check_node(&t, i);
        check_groups(&t, 1);
        assert_int_equal(t.n_groups, (int)n);
        bn_tree_release(&t);
        bn_particles_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plummer_like),
        cmocka_unit_test(test_coincident),
        cmocka_unit_test(test_tiny),
        cmocka_unit_test(test_box_criterion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
