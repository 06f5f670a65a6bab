/* The mesh solver across ranks (bn_field_mesh_dist), run by CTest alone
 * and under mpirun with 2, 3 and 4 ranks: the gathered values equal one
 * process's bit for bit on the same backend, on the root only (the
 * others' mesh unchanged) or on every rank (root < 0); a root beyond the
 * ranks is refused on every rank. The GPU case (each rank's blocks by
 * the device's part path) skips without a GPU. */
#include <string.h>
#include "testutil.h"
#include "parallel/comm.h"
#include "parallel/field_dist.h"

static bn_comm *comm;

static int everywhere(int ok) { return tu_everywhere(comm, ok); }

static const char *const names[4] = {"gpot", "gacx", "gacy", "gacz"};

/* One process's values on `backend` (every rank solves the whole mesh). */
static double *one_process(bn_field_params p, size_t *n)
{
    bn_mesh *m = tu_mesh(BN_MESH_MACLAURIN, 4, 8);
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, &p));
    TU_OK(bn_field_mesh(f, m, NULL));
    *n = bn_mesh_cells(m);
    double *v = malloc(4 * *n * sizeof *v);
    for (int k = 0; k < 4; k++) memcpy(v + (size_t)k * *n, m->var[bn_mesh_var_index(m, names[k])], *n * sizeof *v);
    bn_field_free(f);
    bn_mesh_free(m);
    return v;
}

/* Across the ranks to root: the ranks that receive hold one process's
 * bits, the others a mesh without the output variables. */
static void across(bn_backend backend, int root)
{
    bn_field_params p = bn_field_params_default(BN_FIELD_GRAVITY);
    p.backend = backend;
    p.theta = 0.6;
    size_t n = 0;
    double *ref = one_process(p, &n);
    bn_mesh *m = tu_mesh(BN_MESH_MACLAURIN, 4, 8);
    const int vars_before = m->n_vars;
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, &p));
    bn_field_dist_stats st;
    TU_OK(bn_field_mesh_dist(f, comm, m, NULL, root, &st));
    const int me = bn_comm_rank(comm), gets = root < 0 || root == me || bn_comm_size(comm) == 1;
    size_t differ = 0;
    int ok = 1;
    if (gets)
        for (int k = 0; k < 4; k++) {
            const int v = bn_mesh_var_index(m, names[k]);
            ok &= v >= 0;
            for (size_t i = 0; v >= 0 && i < n; i++) differ += m->var[v][i] != ref[(size_t)k * n + i];
        }
    else
        ok &= m->n_vars == vars_before && bn_mesh_var_index(m, "gpot") < 0;
    if (me == 0)
        print_message("%s, %d ranks, root %d: %zu blocks on rank 0, %zu values differ from one process's\n",
                      bn_backend_name(backend), bn_comm_size(comm), root, st.blocks, differ);
    assert_true(everywhere(ok && differ == 0));
    bn_field_free(f);
    bn_mesh_free(m);
    free(ref);
}

static void test_to_root_and_everywhere(void **state)
{
    (void)state;
    across(BN_BACKEND_CPU, 0);
    across(BN_BACKEND_CPU, bn_comm_size(comm) - 1);
    across(BN_BACKEND_CPU, -1);
}

static void test_gpu_parts(void **state)
{
    (void)state;
    if (!bn_gpu_available()) skip();
    across(BN_BACKEND_GPU, 0);
    across(BN_BACKEND_GPU, -1);
}

static void test_root_beyond_the_ranks(void **state)
{
    (void)state;
    if (bn_comm_size(comm) == 1) skip(); /* one rank is bn_field_mesh itself */
    bn_field_params p = bn_field_params_default(BN_FIELD_GRAVITY);
    p.backend = BN_BACKEND_CPU;
    bn_mesh *m = tu_mesh(BN_MESH_MACLAURIN, 3, 8);
    bn_field *f = NULL;
    TU_OK(bn_field_create(&f, &p));
    TU_FAILS(bn_field_mesh_dist(f, comm, m, NULL, bn_comm_size(comm), NULL), BN_ERR_ARGUMENT, "root");
    /* the gather itself refuses it too, on every rank (no values lost) */
    const size_t where[1] = {0};
    double one[2] = {1.0, 2.0}, *dest[1] = {one};
    TU_FAILS(bn_comm_gather_blocks(comm, bn_comm_size(comm), one, 0, 2, 1, where, dest), BN_ERR_ARGUMENT,
             "gathering blocks to rank");
    assert_true(one[0] == 1.0 && one[1] == 2.0); /* nothing written */
    bn_field_free(f);
    bn_mesh_free(m);
}

int main(void)
{
    if (bn_comm_world(&comm) != BN_OK) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_to_root_and_everywhere),
        cmocka_unit_test(test_gpu_parts),
        cmocka_unit_test(test_root_beyond_the_ranks),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    bn_comm_free(comm);
    return failed;
}
