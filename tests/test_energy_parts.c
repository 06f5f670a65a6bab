/* Per-component energies and angular momenta on the CPU backend
 * (bn_energies.part): against a host sum of the particles, their W_c
 * adding up to W; and the part type names the logs and options use. */
#include <string.h>
#include "testutil.h"

static void test_cpu_parts(void **state)
{
    (void)state;
    /* the CPU sums in double in particle order: rounding over 7000
     * terms, far below 1e-12 of each sum */
    tu_check_part_energies(BN_BACKEND_CPU, 1e-12);
}

static void test_names(void **state)
{
    (void)state;
    static const char *const want[BN_PART_TYPES] = {"type0", "halo", "disk", "bulge", "type4", "type5"};
    for (int t = 0; t < BN_PART_TYPES; t++) {
        assert_string_equal(bn_part_type_name(t), want[t]);
        assert_int_equal(bn_part_type_from_name(want[t]), t);
    }
    assert_null(bn_part_type_name(-1));
    assert_null(bn_part_type_name(BN_PART_TYPES));
    assert_int_equal(bn_part_type_from_name("Halo"), -1);
    assert_int_equal(bn_part_type_from_name("type6"), -1);
    assert_int_equal(bn_part_type_from_name(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cpu_parts), cmocka_unit_test(test_names)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
