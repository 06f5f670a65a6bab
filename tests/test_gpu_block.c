/* Block time steps on the CUDA backend: one bin is the shared step bit for
 * bit; the active walk gives the active particles exactly a full
 * evaluation's forces and leaves the others alone; a refreshed tree meets
 * the error bars against double direct summation; the device's bins and
 * orbits follow the CPU backend's and a rerun's bits; a Plummer sphere
 * keeps its energy.
 * Skipped without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#ifdef BANYAN_HAVE_CUDA
#include "core/backend.h"
#include "core/backend_cuda.h"

static void test_one_bin_is_the_shared_step(void **state)
{
    (void)state;
    tu_check_one_bin_is_shared(BN_BACKEND_GPU);
}

static void test_plummer_energy_with_block_steps(void **state)
{
    (void)state;
    tu_check_block_energy(BN_BACKEND_GPU);
}

/* A backend state holding p, with its forces computed. */
static void *gpu_state(const bn_gravity_params *g, const bn_particles *p)
{
    const bn_backend_ops *ops = bn_cuda_backend_ops();
    void *st = NULL;
    TU_OK(ops->create(&st, g));
    TU_OK(ops->upload(st, p));
    TU_OK(ops->forces(st, NULL));
    return st;
}

static bn_particles *download(void *st)
{
    bn_particles *q = NULL;
    TU_OK(bn_particles_create(&q, 0));
    TU_OK(bn_cuda_backend_ops()->download(st, q));
    return q;
}

/* Bins from the downloaded accelerations, as the kick kernel makes them
 * (the same double arithmetic on the float values). */
static void host_bins(const bn_particles *q, const bn_block_kick *k, int *bin)
{
    for (size_t i = 0; i < q->n; i++) {
        const double ax = q->acc[0][i], ay = q->acc[1][i], az = q->acc[2][i];
        bin[i] = bn_time_bin(bn_time_step_wanted(k, ax * ax + ay * ay + az * az, 0.0), k->tick, k->n_bins, k->bin_min);
    }
}

/* Bins by an opening kick, a drift, then forces of bins >= 2 only: the
 * active particles get exactly the forces of a full evaluation of the
 * same positions, the others keep their old ones. Groups of up to
 * group_size bodies (above 64 the walk runs once per chunk of 64, the
 * later chunks reusing the first one's far-field expansion). */
static void check_active_walk(int group_size)
{
    const bn_backend_ops *ops = bn_cuda_backend_ops();
    bn_particles *p = tu_random_particles(30000, 17, 2);
    bn_gravity_params g = tu_block_gravity(BN_BACKEND_GPU, BN_METHOD_TREE, 1e-3);
    g.group_size = group_size;
    void *st = gpu_state(&g, p);
    bn_particles *before = download(st);
    const bn_block_kick open = {0, 0, 1, 4, 1.0 / 64, 1.0, 1e-3, 0}; /* bins 0-3 all occupied */
    int *bin = malloc(p->n * sizeof *bin);
    host_bins(before, &open, bin);
    int max_bin = -1;
    long kicked = 0;
    TU_OK(ops->block_kick(st, &open, &max_bin, &kicked));
    assert_int_equal(kicked, (long)p->n);
    TU_OK(ops->drift(st, 0.002));
    TU_OK(ops->forces_active(st, 2, 1));
    bn_particles *after = download(st);
    void *full_st = gpu_state(&g, after);
    bn_particles *full = download(full_st);
    long n_active = 0, host_max = 0;
    for (size_t i = 0; i < p->n; i++) {
        host_max = bin[i] > host_max ? bin[i] : host_max;
        const bn_particles *want = bin[i] >= 2 ? full : before;
        n_active += bin[i] >= 2;
        for (int k = 0; k < 3; k++) assert_true(after->acc[k][i] == want->acc[k][i]);
        assert_true(after->pot[i] == want->pot[i]);
    }
    assert_int_equal(max_bin, host_max);
    print_message("active walk, groups <= %d: %ld of %zu particles active\n", group_size, n_active, p->n);
    assert_true(n_active > 1000 && n_active < (long)p->n - 1000);
    ops->destroy(full_st);
    ops->destroy(st);
    free(bin);
    bn_particles_free(full);
    bn_particles_free(after);
    bn_particles_free(before);
    bn_particles_free(p);
}

static void test_active_walk(void **state)
{
    (void)state;
    check_active_walk(64);
    check_active_walk(200);
}

/* A Plummer sphere of 2^15 particles (the library's default model). */
static bn_particles *plummer_32k(void)
{
    bn_ic_params icp = bn_ic_params_default();
    icp.n = 1 << 15;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&icp, &p));
    return p;
}

/* After a drift that moves bodies out of their octants, a refreshed tree
 * (no rebuild) still meets the bars of a fresh one against double direct
 * summation, for the octant, the box and the acceleration criterion (the
 * last with the accelerations of the evaluation before). */
static void test_refreshed_tree_accuracy(void **state)
{
    (void)state;
    const bn_backend_ops *ops = bn_cuda_backend_ops();
    bn_particles *p = plummer_32k();
    const bn_mac macs[3] = {BN_MAC_BONSAI, BN_MAC_BONSAI_BOX, BN_MAC_ACCEL};
    for (int m = 0; m < 3; m++) {
        bn_gravity_params g = tu_block_gravity(BN_BACKEND_GPU, BN_METHOD_TREE, 1e-3);
        g.mac = macs[m];
        void *st = gpu_state(&g, p);
        TU_OK(ops->drift(st, 0.05));
        TU_OK(ops->forces_active(st, 0, 0)); /* everything, on the old tree */
        bn_force_stats fs;
        TU_OK(ops->stats(st, &fs));
        assert_int_equal(fs.refresh_refused, 0); /* refreshed indeed */
        bn_particles *moved = download(st);
        const bn_error_stats refreshed = tu_errors_vs_direct(moved, g.G, g.softening, 2000, 3);
        TU_OK(ops->forces_active(st, 0, 1)); /* a fresh tree */
        bn_particles *fresh = download(st);
        const bn_error_stats rebuilt = tu_errors_vs_direct(fresh, g.G, g.softening, 2000, 3);
        print_message("%s: refreshed p50 %.2e p99 %.2e, rebuilt p50 %.2e p99 %.2e\n", bn_mac_name(g.mac),
                      refreshed.acc_p50, refreshed.acc_p99, rebuilt.acc_p50, rebuilt.acc_p99);
        assert_true(refreshed.acc_p99 < 1.5 * rebuilt.acc_p99 && refreshed.acc_p99 < 2e-3);
        assert_true(refreshed.acc_p50 < 1.5 * rebuilt.acc_p50);
        ops->destroy(st);
        bn_particles_free(moved);
        bn_particles_free(fresh);
    }
    bn_particles_free(p);
}

/* An unmoved refresh has grown by exactly 1; one after a short drift is
 * kept, its growth between 1 and 8 (the CPU's test sees the same range);
 * after a drift long enough to scatter every group (each body's velocity
 * carries it far from its group's others: a walk of nearly all pairs) it
 * is refused and the tree built anew (tree/refresh_guard.h), with a
 * fresh build's forces, bit for bit. */
static void test_scattered_refresh_is_refused(void **state)
{
    (void)state;
    const bn_backend_ops *ops = bn_cuda_backend_ops();
    bn_particles *p = plummer_32k();
    bn_gravity_params g = tu_block_gravity(BN_BACKEND_GPU, BN_METHOD_TREE, 1e-3);
    g.mac = BN_MAC_BONSAI_BOX;
    void *st = gpu_state(&g, p), *ref = gpu_state(&g, p);
    bn_force_stats s;
    TU_OK(ops->forces_active(st, 0, 0)); /* unmoved: every group in its key cell (the cells' units right) */
    TU_OK(ops->stats(st, &s));
    assert_true(s.refresh_growth == 1.0);
    TU_OK(ops->drift(st, 0.05));
    TU_OK(ops->forces_active(st, 0, 0));
    TU_OK(ops->stats(st, &s));
    print_message("growth after a drift of 0.05: %.3f\n", s.refresh_growth);
    assert_int_equal(s.refresh_refused, 0);
    assert_true(s.refresh_growth > 1.0 && s.refresh_growth < 8.0);
    TU_OK(ops->drift(st, 4.95));
    TU_OK(ops->drift(ref, 0.05));
    TU_OK(ops->drift(ref, 4.95));
    TU_OK(ops->forces_active(st, 0, 0));
    TU_OK(ops->stats(st, &s));
    assert_int_equal(s.refresh_refused, 1);
    TU_OK(ops->forces_active(ref, 0, 1));
    bn_particles *a = download(st), *b = download(ref);
    for (int k = 0; k < 3; k++) assert_memory_equal(a->acc[k], b->acc[k], a->n * sizeof(double));
    assert_memory_equal(a->pot, b->pot, a->n * sizeof(double));
    ops->destroy(st);
    ops->destroy(ref);
    bn_particles_free(a);
    bn_particles_free(b);
    bn_particles_free(p);
}

/* A build ahead (tree/refresh_lag.h) is kept on a quiet sphere (its
 * tree then differs from one built at x); one whose lead scrambles the
 * cells is refused and built again from x, with the forces of a build
 * from x, bit for bit (the CPU's test_refresh_lag sees the same). */
static void test_scrambling_lead_is_refused(void **state)
{
    (void)state;
    const bn_backend_ops *ops = bn_cuda_backend_ops();
    const double tau = 1.0 / 512;
    const bn_block_kick open = {0, 0, 1, 4, 1.0 / 64, 1.0, 1e-3, 0}; /* bins 0-3 */
    bn_particles *p = plummer_32k();
    const bn_gravity_params g = tu_block_gravity(BN_BACKEND_GPU, BN_METHOD_TREE, 1e-3);
    for (int scrambled = 0; scrambled < 2; scrambled++) {
        if (scrambled) tu_scramble_velocities(p, tau);
        void *st = gpu_state(&g, p), *ref = gpu_state(&g, p);
        int max_bin = -1;
        long kicked = 0;
        TU_OK(ops->block_kick(st, &open, &max_bin, &kicked));
        TU_OK(ops->block_kick(ref, &open, &max_bin, &kicked));
        ops->build_ahead(st, tau);
        TU_OK(ops->forces_active(st, 1, 1));
        bn_force_stats s;
        TU_OK(ops->stats(st, &s));
        assert_int_equal(s.lead_refused, scrambled);
        TU_OK(ops->forces_active(ref, 1, 1)); /* built at x */
        bn_particles *a = download(st), *b = download(ref);
        int same = memcmp(a->pot, b->pot, a->n * sizeof(double)) == 0;
        for (int k = 0; k < 3; k++) same &= memcmp(a->acc[k], b->acc[k], a->n * sizeof(double)) == 0;
        assert_int_equal(same, scrambled);
        ops->destroy(st);
        ops->destroy(ref);
        bn_particles_free(a);
        bn_particles_free(b);
    }
    bn_particles_free(p);
}

/* A rebuild whose tree does not fit the buffers (as when a run's tree
 * outgrows them between polls) is decided on the device: the particles
 * keep their order and the last tree is refreshed, so the forces are
 * those of a refresh (float rounding of another reference point apart)
 * and meet the bars against double direct summation. The next poll grows
 * the buffers; the rebuild after it fits and gives exactly the forces of
 * a state that never fell back. */
static void test_build_that_does_not_fit(void **state)
{
    (void)state;
    const bn_backend_ops *ops = bn_cuda_backend_ops();
    bn_particles *p = plummer_32k();
    bn_gravity_params g = tu_block_gravity(BN_BACKEND_GPU, BN_METHOD_TREE, 1e-3);
    g.mac = BN_MAC_BONSAI_BOX;
    void *ref = gpu_state(&g, p), *st = gpu_state(&g, p);
    TU_OK(ops->drift(ref, 0.05));
    TU_OK(ops->drift(st, 0.05));
    TU_OK(ops->forces_active(ref, 0, 0)); /* the refresh, asked for */
    int cap0 = 0;
    assert_int_equal(bn_gpu_test_tree_fallbacks(st, &cap0), 0);
    bn_gpu_test_shrink_tree_capacity(st, 100);
    TU_OK(ops->forces(st, NULL)); /* a rebuild that does not fit */
    bn_particles *a = download(ref), *b = download(st);
    int cap1 = 0;
    assert_int_equal(bn_gpu_test_tree_fallbacks(st, &cap1), 1);
    assert_true(cap1 > 100); /* the poll made room again */
    for (size_t i = 0; i < a->n; i++) {
        assert_true(a->id[i] == b->id[i]);
        const double amag = sqrt(a->acc[0][i] * a->acc[0][i] + a->acc[1][i] * a->acc[1][i] +
                                 a->acc[2][i] * a->acc[2][i]);
        for (int k = 0; k < 3; k++)
            if (fabs(a->acc[k][i] - b->acc[k][i]) > 1e-5 * amag)
                fail_msg("body %zu acc[%d]: fallback %.9g refresh %.9g", i, k, b->acc[k][i], a->acc[k][i]);
    }
    const bn_error_stats e = tu_errors_vs_direct(b, g.G, g.softening, 2000, 5);
    print_message("fallback on the last tree: p50 %.2e p99 %.2e\n", e.acc_p50, e.acc_p99);
    assert_true(e.acc_p99 < 2e-3);
    TU_OK(ops->forces(st, NULL)); /* fits now */
    TU_OK(ops->forces_active(ref, 0, 1));
    assert_int_equal(bn_gpu_test_tree_fallbacks(st, NULL), 1);
    bn_particles *c = download(ref), *d = download(st);
    for (int k = 0; k < 3; k++) assert_memory_equal(c->acc[k], d->acc[k], c->n * sizeof(double));
    assert_memory_equal(c->pot, d->pot, c->n * sizeof(double));
    ops->destroy(ref);
    ops->destroy(st);
    bn_particles_free(a);
    bn_particles_free(b);
    bn_particles_free(c);
    bn_particles_free(d);
    bn_particles_free(p);
}

static void test_batches_are_the_steps(void **state)
{
    (void)state;
    tu_check_batches(BN_BACKEND_GPU);
}

static void test_idle_steps_change_nothing(void **state)
{
    (void)state;
    tu_check_idle_steps(BN_BACKEND_GPU);
}

/* A batch of steps copies to the host only at its end (the clock, and
 * the tree's frame that the poll reads while the host waits anyway):
 * as many copies for 16 steps as for one. Adaptive shared steps, whose
 * length comes from max |a|, and block steps, whose next tick comes from
 * the bins. */
static void test_batch_reads_only_at_its_end(void **state)
{
    (void)state;
    bn_particles *p = plummer_32k();
    const bn_integrator_params rules[2] = {{1.0 / 64, 0.05, 0, 1, 0, BN_STEP_ACCEL, BN_TUNE_TIME}, {1.0 / 16, 0.05, 4, 1, 0, BN_STEP_ACCEL, BN_TUNE_TIME}};
    for (int r = 0; r < 2; r++) {
        bn_simulation *sim = tu_make_sim(p, tu_block_gravity(BN_BACKEND_GPU, BN_METHOD_TREE, 0.01), rules[r]);
        TU_OK(bn_simulation_compute_forces(sim));
        TU_OK(bn_simulation_finish(sim));
        const long sizes[2] = {1, 16};
        long reads[2];
        for (int k = 0; k < 2; k++) {
            const long r0 = bn_gpu_host_reads();
            long made = 0;
            TU_OK(bn_simulation_advance(sim, INFINITY, sizes[k], &made));
            reads[k] = bn_gpu_host_reads() - r0;
            assert_int_equal(made, sizes[k]);
        }
        print_message("%s steps: %ld copies to the host for a batch of 1 step, %ld for 16\n",
                      r ? "block" : "adaptive shared", reads[0], reads[1]);
        assert_true(reads[1] == reads[0] && reads[1] <= 2);
        bn_simulation_free(sim);
    }
    bn_particles_free(p);
}

/* One cycle of 8 ticks on both backends: the same number of steps and
 * active particles up to a few bin flips (float against double
 * accelerations), and positions that agree to float-force level. */
static void test_same_as_cpu(void **state)
{
    (void)state;
    bn_ic_params icp = bn_ic_params_default();
    icp.n = 1 << 14;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&icp, &p));
    const bn_integrator_params ip = {1.0 / 32, 0.05, 4, 0, 0, BN_STEP_ACCEL, BN_TUNE_WORK};
    bn_simulation *gpu = tu_make_sim(p, tu_block_gravity(BN_BACKEND_GPU, BN_METHOD_TREE, 0.01), ip);
    bn_simulation *cpu = tu_make_sim(p, tu_block_gravity(BN_BACKEND_CPU, BN_METHOD_TREE, 0.01), ip);
    bn_simulation *again = tu_make_sim(p, tu_block_gravity(BN_BACKEND_GPU, BN_METHOD_TREE, 0.01), ip);
    int steps = 0;
    do {
        TU_OK(bn_simulation_step(gpu, NULL));
        TU_OK(bn_simulation_step(cpu, NULL));
        TU_OK(bn_simulation_step(again, NULL));
        const bn_block_info a = bn_simulation_block_info(gpu), b = bn_simulation_block_info(cpu);
        assert_int_equal(a.tick, b.tick);
        assert_true(labs(a.n_active - b.n_active) <= 1 + b.n_active / 200);
        steps++;
    } while (bn_simulation_block_info(cpu).tick != 0);
    assert_true(steps >= 4);
    const bn_particles *qg = NULL, *qc = NULL, *q2 = NULL;
    TU_OK(bn_simulation_particles(gpu, &qg));
    TU_OK(bn_simulation_particles(cpu, &qc));
    TU_OK(bn_simulation_particles(again, &q2));
    for (int k = 0; k < 3; k++) { /* a rerun: the same bits (the active list's order may differ) */
        assert_memory_equal(qg->pos[k], q2->pos[k], p->n * sizeof(double));
        assert_memory_equal(qg->vel[k], q2->vel[k], p->n * sizeof(double));
    }
    size_t far = 0;
    for (size_t i = 0; i < p->n; i++) {
        double d2 = 0;
        for (int k = 0; k < 3; k++) d2 += (qg->pos[k][i] - qc->pos[k][i]) * (qg->pos[k][i] - qc->pos[k][i]);
        far += sqrt(d2) > 1e-6;
    }
    print_message("GPU vs CPU after one cycle (%d steps): %zu of %zu positions differ by > 1e-6\n", steps, far, p->n);
    assert_true(far <= p->n / 100);
    bn_simulation_free(gpu);
    bn_simulation_free(cpu);
    bn_simulation_free(again);
    bn_particles_free(p);
}
#endif

TU_GPU_TEST_MAIN(cmocka_unit_test(test_one_bin_is_the_shared_step),
                 cmocka_unit_test(test_active_walk),
                 cmocka_unit_test(test_refreshed_tree_accuracy),
                 cmocka_unit_test(test_build_that_does_not_fit),
                 cmocka_unit_test(test_scattered_refresh_is_refused),
                 cmocka_unit_test(test_scrambling_lead_is_refused),
                 cmocka_unit_test(test_same_as_cpu),
                 cmocka_unit_test(test_batches_are_the_steps),
                 cmocka_unit_test(test_idle_steps_change_nothing),
                 cmocka_unit_test(test_batch_reads_only_at_its_end),
                 cmocka_unit_test(test_plummer_energy_with_block_steps))
