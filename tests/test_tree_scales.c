/* The CPU tree on inputs with structure on very different scales (issue
 * 14, scale_family.h): every component's errors against double direct
 * summation stay those of a tree at this theta, and those the same
 * component gets alone at the origin. The CPU computes in double, so
 * this holds by construction; the test pins the family (the GPU test,
 * test_gpu_scales, compares the GPU with these numbers). */
#include "testutil.h"
#include "scale_family.h"
#include <string.h>

/* Forces of p by the tree with g's settings (backend included). */
static void tree_forces(bn_particles *p, bn_gravity_params g)
{
    bn_gravity *grav = NULL;
    TU_OK(bn_gravity_create(&grav, &g));
    TU_OK(bn_gravity_compute(grav, p));
    bn_gravity_free(grav);
}

static void check_case(int k, const bn_gravity_params *base)
{
    tu_scale_case c = tu_scale_case_make(k, 1.0);
    assert_non_null(c.p);
    bn_gravity_params g = *base;
    g.softening = c.eps;
    tree_forces(c.p, g);
    for (int j = 0; j < c.n_comp; j++) {
        const bn_error_stats in = tu_range_errors(c.p, g.G, g.softening, c.first[j], c.count[j], c.count[j]);
        bn_particles *alone = tu_scale_component_alone(&c, j);
        assert_non_null(alone);
        tree_forces(alone, g);
        const bn_error_stats al = tu_range_errors(alone, g.G, g.softening, 0, alone->n, alone->n);
        printf("%-12s %-9s (ratio %.0e): p50 %.2e p99 %.2e max %.2e | alone p50 %.2e p99 %.2e max %.2e\n",
               c.name, c.comp_name[j], c.ratio, in.acc_p50, in.acc_p99, in.acc_max, al.acc_p50, al.acc_p99,
               al.acc_max);
        /* theta 0.5 with quadrupoles: p99 a few 1e-3 at most (test_tree_accuracy) */
        assert_true(in.acc_p99 < 5e-3);
        assert_true(al.acc_p99 < 5e-3);
        /* the same component alone: the same errors up to the tree's own
         * scatter (its cells fall elsewhere on the key grid: measured up
         * to 1.38x at p99; the max, one particle, scatters up to 1.8x and
         * is not held to it) */
        assert_true(in.acc_p50 <= 1.5 * al.acc_p50 + 1e-7);
        assert_true(in.acc_p99 <= 1.5 * al.acc_p99 + 1e-7);
        bn_particles_free(alone);
    }
    tu_scale_case_free(&c);
}

static void test_scale_family(void **state)
{
    (void)state;
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    for (int k = 0; k < tu_scale_case_count(); k++) check_case(k, &g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_scale_family)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
