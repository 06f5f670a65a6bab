#include "testutil.h"
#include "core/rng.h"
#include "parallel/comm.h"
#include "core/backend.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tu_assert_fails(bn_status got, bn_status want, const char *needle, const char *expr)
{
    if (got != want)
        fail_msg("%s: expected status '%s', got '%s' (%s)", expr, bn_status_name(want), bn_status_name(got),
                 bn_last_error());
    if (needle && !strstr(bn_last_error(), needle))
        fail_msg("%s: message '%s' does not mention '%s'", expr, bn_last_error(), needle);
}

/* xorshift-style generator private to the tests (independent of the library's). */
static double tu_uniform(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
}

bn_particles *tu_random_particles(size_t n, uint64_t seed, int shape)
{
    bn_particles *p = NULL;
    if (bn_particles_create(&p, n) != BN_OK) return NULL;
    uint64_t s = seed * 2654435761u + 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        double x[3];
        if (shape == 0) {
            for (int k = 0; k < 3; k++) x[k] = 2 * tu_uniform(&s) - 1;
        } else {
            /* direction uniform on the sphere, radius by shape */
            double u = 2 * tu_uniform(&s) - 1, ph = 2 * M_PI * tu_uniform(&s);
            double st = sqrt(1 - u * u), r;
            if (shape == 1) {
                double g1 = tu_uniform(&s), g2 = tu_uniform(&s);
                r = fabs(sqrt(-2 * log(g1)) * cos(2 * M_PI * g2));
            } else {
                double m = tu_uniform(&s) * 0.999;
                r = 1.0 / sqrt(pow(m, -2.0 / 3.0) - 1.0);
            }
            x[0] = r * st * cos(ph);
            x[1] = r * st * sin(ph);
            x[2] = r * u;
        }
        for (int k = 0; k < 3; k++) {
            p->pos[k][i] = x[k];
            p->vel[k][i] = 0.1 * (2 * tu_uniform(&s) - 1);
        }
        p->mass[i] = (0.5 + tu_uniform(&s)) / (double)n;
        p->id[i] = i + 1;
    }
    return p;
}

bn_particles *tu_model(bn_ic_model model, size_t n, uint64_t seed)
{
    bn_ic_params ic = bn_ic_params_default();
    ic.model = model;
    ic.n = n;
    ic.seed = seed;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&ic, &p));
    return p;
}

bn_error_stats tu_errors_vs_direct(const bn_particles *p, double G, double eps, size_t nsample, uint64_t seed)
{
    bn_error_stats st;
    memset(&st, 0, sizeof st);
    if (nsample > p->n) nsample = p->n;
    size_t *idx = malloc(nsample * sizeof *idx);
    double *ref = malloc(3 * nsample * sizeof *ref), *pref = malloc(nsample * sizeof *pref);
    double *got = malloc(3 * nsample * sizeof *got), *pgot = malloc(nsample * sizeof *pgot);
    uint64_t s = seed * 11400714819323198485ull + 1;
    for (size_t t = 0; t < nsample; t++) {
        idx[t] = nsample == p->n ? t : (size_t)(tu_uniform(&s) * (double)p->n) % p->n;
        for (int k = 0; k < 3; k++) got[3 * t + k] = p->acc[k][idx[t]];
        pgot[t] = p->pot[idx[t]];
    }
    if (bn_direct_reference(p, G, eps, idx, nsample, ref, pref) != BN_OK)
        fail_msg("direct reference failed: %s", bn_last_error());
    if (bn_error_stats_compute(nsample, got, ref, pgot, pref, &st) != BN_OK)
        fail_msg("error stats failed: %s", bn_last_error());
    free(idx);
    free(ref);
    free(pref);
    free(got);
    free(pgot);
    return st;
}

void tu_require_gpu(void)
{
    if (!bn_gpu_available()) {
        printf("no usable GPU: test skipped\n");
        exit(77);
    }
}

void tu_check_step_stats(bn_backend backend)
{
    bn_particles *p = tu_random_particles(20000, 41, 2);
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = backend;
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    TU_OK(bn_simulation_set_gravity(sim, &g));
    bn_integrator_params ip = {0.01, 0, 0, 0, 0, BN_STEP_ACCEL, BN_TUNE_TIME};
    TU_OK(bn_simulation_set_integrator(sim, &ip));
    TU_OK(bn_simulation_set_particles(sim, p));
    TU_OK(bn_simulation_step(sim, NULL));
    TU_OK(bn_simulation_step(sim, NULL));
    TU_OK(bn_simulation_finish(sim));
    const bn_force_stats s = *bn_simulation_force_stats(sim);
    const bn_particles *now = NULL;
    TU_OK(bn_simulation_particles(sim, &now));
    bn_particles *copy = NULL;
    TU_OK(bn_particles_copy(&copy, now));
    bn_gravity *grav = NULL;
    TU_OK(bn_gravity_create(&grav, &g));
    TU_OK(bn_gravity_compute(grav, copy));
    const bn_force_stats *r = bn_gravity_stats(grav);
    assert_true(s.n_pp > 0 && s.n_pc > 0 && s.n_far > 0 && s.n_nodes > 0 && s.t_total > 0);
    assert_true(s.n_pp == r->n_pp && s.n_pc == r->n_pc && s.n_far == r->n_far);
    assert_true(s.n_nodes == r->n_nodes && s.n_groups == r->n_groups && s.depth == r->depth);
    bn_gravity_free(grav);
    bn_particles_free(copy);
    bn_simulation_free(sim);
    bn_particles_free(p);
}

bn_simulation *tu_make_sim(const bn_particles *p, bn_gravity_params g, bn_integrator_params ip)
{
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    TU_OK(bn_simulation_set_gravity(sim, &g));
    TU_OK(bn_simulation_set_integrator(sim, &ip));
    TU_OK(bn_simulation_set_particles(sim, p));
    return sim;
}

bn_gravity_params tu_block_gravity(bn_backend backend, bn_method method, double eps)
{
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = backend;
    g.method = method;
    g.softening = eps;
    g.mac = BN_MAC_BONSAI_BOX;
    return g;
}

/* time_bins = 1: every particle in bin 0, the cycle is the step: the
 * same operations as the shared fixed step, so the same bits. */
void tu_assert_same_particles(bn_simulation *a, bn_simulation *b)
{
    const bn_particles *qa = NULL, *qb = NULL;
    TU_OK(bn_simulation_particles(a, &qa));
    TU_OK(bn_simulation_particles(b, &qb));
    assert_int_equal(qa->n, qb->n);
    for (int k = 0; k < 3; k++) {
        assert_memory_equal(qa->pos[k], qb->pos[k], qa->n * sizeof(double));
        assert_memory_equal(qa->vel[k], qb->vel[k], qa->n * sizeof(double));
    }
}

void tu_check_one_bin_is_shared(bn_backend backend)
{
    bn_particles *p = tu_random_particles(700, 5, 1);
    const bn_gravity_params g = tu_block_gravity(backend, BN_METHOD_TREE, 0.01);
    bn_integrator_params shared = {1.0 / 64, 0, 0, 0, 0, BN_STEP_ACCEL, BN_TUNE_TIME}, block = {1.0 / 64, 0, 1, 0, 0, BN_STEP_ACCEL, BN_TUNE_TIME};
    bn_simulation *a = tu_make_sim(p, g, shared), *b = tu_make_sim(p, g, block);
    for (int s = 0; s < 6; s++) {
        TU_OK(bn_simulation_step(a, NULL));
        TU_OK(bn_simulation_step(b, NULL));
    }
    assert_true(bn_simulation_time(a) == bn_simulation_time(b));
    tu_assert_same_particles(a, b);
    bn_simulation_free(a);
    bn_simulation_free(b);
    bn_particles_free(p);
}

/* A Plummer sphere over one time unit with block steps and the
 * self-tuned rebuild weighing work (deterministic, so that the last
 * assertion cannot depend on the machine's timing): the energy error stays below 2e-4, under half of
 * the forces the shared steps at the finest dt would need are computed,
 * and the tuner both refreshes and rebuilds inside cycles. */
void tu_check_block_energy(bn_backend backend)
{
    bn_ic_params icp = bn_ic_params_default();
    icp.n = 4096;
    icp.seed = 3;
    bn_particles *p = NULL;
    TU_OK(bn_ic_generate(&icp, &p));
    bn_gravity_params g = tu_block_gravity(backend, BN_METHOD_TREE, 0.01);
    g.theta = 0.5;
    bn_integrator_params ip = {1.0 / 16, 0.1, 5, 0, 0, BN_STEP_ACCEL, BN_TUNE_WORK};
    bn_simulation *sim = tu_make_sim(p, g, ip);
    bn_energies e0, e1;
    TU_OK(bn_simulation_energies(sim, &e0));
    double work = 0;
    long steps = 0;
    const double t_end = 1.0;
    int finest = 0, refreshes = 0, mid_cycle_builds = 0;
    long builds = 0;
    while (bn_simulation_time(sim) < t_end) {
        TU_OK(bn_simulation_step_to(sim, t_end, NULL));
        const bn_block_info b = bn_simulation_block_info(sim);
        const int built = b.tree_builds > builds;
        builds = b.tree_builds;
        refreshes += !built;
        mid_cycle_builds += built && b.tick != 0;
        work += (double)b.n_active;
        finest = b.max_bin > finest ? b.max_bin : finest;
        steps++;
    }
    assert_true(bn_simulation_time(sim) == t_end);
    TU_OK(bn_simulation_energies(sim, &e1));
    const double rel = fabs((e1.total - e0.total) / e0.total);
    const double shared_work = (double)p->n * t_end / ldexp(ip.dt, -finest);
    print_message("block steps: %ld steps, finest bin %d, energy error %.2e, forces %.3f of the shared steps', "
                  "%d refreshed trees, %d rebuilt inside cycles\n",
                  steps, finest, rel, work / shared_work, refreshes, mid_cycle_builds);
    assert_true(refreshes > 0 && mid_cycle_builds > 0);
    assert_true(finest >= 2);
    assert_true(rel < 2e-4);
    assert_true(work < 0.5 * shared_work);
    bn_simulation_free(sim);
    bn_particles_free(p);
}


static void assert_same_state(const bn_particles *a, const bn_particles *b)
{
    assert_int_equal(a->n, b->n);
    for (int k = 0; k < 3; k++) {
        assert_memory_equal(a->pos[k], b->pos[k], a->n * sizeof(double));
        assert_memory_equal(a->vel[k], b->vel[k], a->n * sizeof(double));
    }
}

/* t_end reached one step at a time, and in batches of at most `batch`. */
static void check_batches_with(const bn_particles *p, bn_gravity_params g, bn_integrator_params ip, double t_end,
                               long batch)
{
    bn_simulation *one = tu_make_sim(p, g, ip), *many = tu_make_sim(p, g, ip);
    while (bn_simulation_time(one) < t_end) TU_OK(bn_simulation_step_to(one, t_end, NULL));
    long calls = 0;
    while (bn_simulation_time(many) < t_end) {
        TU_OK(bn_simulation_advance(many, t_end, batch, NULL));
        calls++;
    }
    const long steps = bn_simulation_steps(one);
    print_message("bins %d, rebuild %d: %ld steps, in %ld batches of <= %ld (%ld idle steps)\n", ip.time_bins,
                  ip.tree_rebuild, steps, calls, batch, bn_simulation_idle_steps(many));
    assert_true(bn_simulation_time(one) == t_end && bn_simulation_time(many) == t_end);
    assert_int_equal(bn_simulation_steps(many), steps);
    assert_true(steps > 10);
    if (ip.time_bins == 0 || ip.tree_rebuild == 1) assert_true(calls < steps); /* else one step per batch */
    const bn_particles *a = NULL, *b = NULL;
    TU_OK(bn_simulation_particles(one, &a));
    TU_OK(bn_simulation_particles(many, &b));
    assert_same_state(a, b);
    bn_simulation_free(one);
    bn_simulation_free(many);
}

void tu_check_batches(bn_backend backend)
{
    bn_particles *p = tu_random_particles(3000, 9, 1);
    const bn_gravity_params g = tu_block_gravity(backend, BN_METHOD_TREE, 0.01);
    const bn_integrator_params shared = {1.0 / 32, 0.02, 0, 1, 0, BN_STEP_ACCEL, BN_TUNE_TIME}, block = {1.0 / 16, 0.05, 4, 1, 0, BN_STEP_ACCEL, BN_TUNE_TIME},
                               block_host = {1.0 / 16, 0.05, 4, 3, 0, BN_STEP_ACCEL, BN_TUNE_TIME};
    check_batches_with(p, g, shared, 0.1, 1000);
    check_batches_with(p, g, shared, 0.1, 7);
    check_batches_with(p, g, block, 0.25, 1000);
    check_batches_with(p, g, block_host, 0.25, 1000);
    bn_particles_free(p);
}

static bn_particles *backend_particles(const bn_backend_ops *ops, void *st)
{
    bn_particles *q = NULL;
    TU_OK(bn_particles_create(&q, 0));
    TU_OK(ops->download(st, q));
    return q;
}

void tu_check_idle_steps(bn_backend backend)
{
    const bn_backend_ops *ops = backend == BN_BACKEND_GPU ? bn_cuda_backend_ops() : &bn_cpu_backend_ops;
    bn_particles *p = tu_random_particles(5000, 12, 1);
    const bn_gravity_params g = tu_block_gravity(backend, BN_METHOD_TREE, 0.01);
    void *st = NULL;
    TU_OK(ops->create(&st, &g));
    TU_OK(ops->upload(st, p));
    TU_OK(ops->forces(st, NULL));
    bn_particles *before = backend_particles(ops, st);
    bn_clock c;
    memset(&c, 0, sizeof c);
    c.time = c.t_limit = 0.5; /* the limit is reached */
    TU_OK(ops->clock_write(st, &c));
    const bn_step_rule shared = {0.01, 0.05, 0.01, 0, 1, 0, 0}, block = {0.01, 0.05, 0.01, 3, 1, 0, 0};
    const bn_clock_stage shared_step[] = {BN_STAGE_SHARED_PLAN, BN_STAGE_HALF_KICK, BN_STAGE_DRIFT,
                                          BN_STAGE_FORCES, BN_STAGE_HALF_KICK, BN_STAGE_SHARED_END};
    const bn_clock_stage block_step[] = {BN_STAGE_BLOCK_BEGIN, BN_STAGE_BLOCK_KICK, BN_STAGE_BLOCK_PLAN,
                                         BN_STAGE_DRIFT, BN_STAGE_FORCES, BN_STAGE_BLOCK_KICK, BN_STAGE_BLOCK_END};
    for (size_t i = 0; i < sizeof shared_step / sizeof *shared_step; i++)
        TU_OK(ops->clock_stage(st, &shared, shared_step[i]));
    for (size_t i = 0; i < sizeof block_step / sizeof *block_step; i++)
        TU_OK(ops->clock_stage(st, &block, block_step[i]));
    TU_OK(ops->clock_read(st, &c));
    assert_true(c.time == 0.5 && c.steps == 0 && c.idle_steps == 2 && c.tick == 0);
    bn_particles *after = backend_particles(ops, st);
    assert_same_state(before, after);
    for (int k = 0; k < 3; k++) assert_memory_equal(before->acc[k], after->acc[k], p->n * sizeof(double));
    assert_memory_equal(before->pot, after->pot, p->n * sizeof(double));
    ops->destroy(st);
    bn_particles_free(before);
    bn_particles_free(after);
    bn_particles_free(p);
}

bn_mesh *tu_mesh(bn_mesh_problem problem, int levels, int block)
{
    bn_mesh_ic_params ip = bn_mesh_ic_params_default(problem);
    ip.max_level = levels;
    ip.block = block;
    bn_mesh *m = NULL;
    TU_OK(bn_mesh_ic_generate(&ip, &m));
    return m;
}

int tu_everywhere(const bn_comm *c, int ok)
{
    double v = ok ? 1.0 : 0.0;
    TU_OK(bn_comm_allreduce(c, &v, 1, BN_REDUCE_MIN));
    return v > 0.5;
}

bn_particles *tu_deal(const bn_particles *all, int P, int me, size_t mul, size_t add)
{
    bn_particles *p = NULL;
    TU_OK(bn_particles_create(&p, 0));
    size_t n = 0;
    for (size_t i = 0; i < all->n; i++) n += (int)((i * mul + add) % (size_t)P) == me;
    TU_OK(bn_particles_resize(p, n));
    if (all->type && n > 0) TU_OK(bn_particles_ensure_types(p)); /* a rank dealt none has no types */
    for (size_t i = 0, j = 0; i < all->n; i++) {
        if ((int)((i * mul + add) % (size_t)P) != me) continue;
        for (int k = 0; k < 3; k++) {
            p->pos[k][j] = all->pos[k][i];
            p->vel[k][j] = all->vel[k][i];
        }
        if (p->type) p->type[j] = all->type[i];
        p->mass[j] = all->mass[i];
        p->id[j++] = all->id[i];
    }
    return p;
}

bn_particles *tu_rows(const bn_particles *p, size_t a, size_t e)
{
    bn_particles *q = NULL;
    TU_OK(bn_particles_create(&q, e - a));
    if (p->acc[0]) TU_OK(bn_particles_ensure_forces(q));
    if (p->type) TU_OK(bn_particles_ensure_types(q));
    for (size_t i = a; i < e; i++) {
        for (int k = 0; k < 3; k++) {
            q->pos[k][i - a] = p->pos[k][i];
            q->vel[k][i - a] = p->vel[k][i];
            if (p->acc[0]) q->acc[k][i - a] = p->acc[k][i];
        }
        q->mass[i - a] = p->mass[i];
        q->id[i - a] = p->id[i];
        if (p->pot) q->pot[i - a] = p->pot[i];
        if (p->type) q->type[i - a] = p->type[i];
    }
    return q;
}

void tu_scramble_velocities(bn_particles *p, double tau)
{
    for (size_t i = 0; i < p->n; i++) {
        const size_t j = (size_t)(bn_rng_u64(99, i, 0) % p->n);
        for (int k = 0; k < 3; k++) p->vel[k][i] = (p->pos[k][j] - p->pos[k][i]) / tau;
    }
}
