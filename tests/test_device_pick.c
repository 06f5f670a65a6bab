/* BN_DEVICE_AUTO (issue 18): the node-local rank that the launchers name
 * (Open MPI, MPICH, MVAPICH, Slurm, PMI), read from the environment, and
 * the device it picks: requested ordinals as they are, AUTO spread over
 * the GPUs seen (0 without a launcher or without a GPU); the parameters
 * take -1 (auto) and refuse -2. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static const char *const launchers[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                                        "SLURM_LOCALID", "PMI_LOCAL_RANK"};
#define N_LAUNCHERS (sizeof launchers / sizeof launchers[0])

static void clear_launchers(void)
{
    for (size_t i = 0; i < N_LAUNCHERS; i++) unsetenv(launchers[i]);
}

static void test_rank_hint_from_each_launcher(void **state)
{
    (void)state;
    clear_launchers();
    assert_int_equal(bn_local_rank_hint(), -1);
    for (size_t i = 0; i < N_LAUNCHERS; i++) {
        clear_launchers();
        setenv(launchers[i], "3", 1);
        assert_int_equal(bn_local_rank_hint(), 3);
    }
    clear_launchers();
}

static void test_rank_hint_refuses_garbage(void **state)
{
    (void)state;
    const char *bad[] = {"", "x", "-1", "2x", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear_launchers();
        setenv("OMPI_COMM_WORLD_LOCAL_RANK", bad[i], 1);
        assert_int_equal(bn_local_rank_hint(), -1);
    }
    /* a bad first name does not hide a good later one */
    setenv("SLURM_LOCALID", "1", 1);
    assert_int_equal(bn_local_rank_hint(), 1);
    clear_launchers();
}

static void test_device_pick(void **state)
{
    (void)state;
    clear_launchers();
    assert_int_equal(bn_gpu_device_pick(5), 5); /* an ordinal as it is */
    assert_int_equal(bn_gpu_device_pick(BN_DEVICE_AUTO), 0);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "7", 1);
    const int d = bn_gpu_device_pick(BN_DEVICE_AUTO);
    if (!bn_gpu_available()) assert_int_equal(d, 0); /* no GPU: 0, whatever the rank */
    else assert_true(d >= 0 && d <= 7);              /* 7 modulo the GPUs seen */
    clear_launchers();
}

static void test_params_take_auto(void **state)
{
    (void)state;
    bn_gravity_params g = bn_gravity_params_default();
    assert_int_equal(g.device, BN_DEVICE_AUTO);
    TU_OK(bn_gravity_params_validate(&g));
    g.device = -2;
    assert_int_equal(bn_gravity_params_validate(&g), BN_ERR_ARGUMENT);
    assert_non_null(strstr(bn_last_error(), "BN_DEVICE_AUTO"));
    bn_field_params f = bn_field_params_default(BN_FIELD_GRAVITY);
    assert_int_equal(f.device, BN_DEVICE_AUTO);
    TU_OK(bn_field_params_validate(&f));
    f.device = BN_DEVICE_MAX + 1;
    assert_int_equal(bn_field_params_validate(&f), BN_ERR_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_hint_from_each_launcher),
        cmocka_unit_test(test_rank_hint_refuses_garbage),
        cmocka_unit_test(test_device_pick),
        cmocka_unit_test(test_params_take_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
