/* Tree forces over the ranks (locally essential trees, CPU backend), run
 * alone and under mpirun with 2, 3 and 4 ranks. Every rank builds the
 * same global set, keeps a share, cuts the domains and computes the
 * forces of its particles with the trees of the others; the results,
 * gathered by id, must match double direct summation over the whole set
 * as closely as the single-process tree does: the same criterion on
 * other trees (each rank's cube and cells differ from the single tree's)
 * gives errors of the same distribution, not the same errors. The bound,
 * over every particle: p99 of the relative acceleration and potential
 * errors within 1.3x the single tree's, p999 within 1.6x; on a Plummer sphere, a Hernquist
 * halo, two clusters far apart and a thin disk; with one rank the forces
 * are the single tree's bits. Checks are agreed over the ranks before
 * they are asserted (a failed assertion on one rank must not leave the
 * others in a collective). */
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "core/backend.h"
#include "gravity/gravity_cpu.h"
#include "parallel/comm.h"
#include "parallel/forces_dist.h"
#include "parallel/let.h"

static bn_comm *comm;

static int everywhere(int ok) { return tu_everywhere(comm, ok); }

/* Every P-th particle of the global set from an offset. */
static bn_particles *share(const bn_particles *all)
{
    return tu_deal(all, bn_comm_size(comm), bn_comm_rank(comm), 5, 1);
}

/* The global set with ids 1..n (tu_model's may differ: renumbered). */
static bn_particles *numbered(bn_particles *p)
{
    for (size_t i = 0; i < p->n; i++) p->id[i] = i + 1;
    return p;
}

/* Two Plummer spheres 200 scale radii apart. */
static bn_particles *two_clusters(size_t n)
{
    bn_particles *p = tu_model(BN_IC_PLUMMER, n, 21);
    for (size_t i = 0; i < n; i += 2) p->pos[0][i] += 200.0;
    return numbered(p);
}

/* An exponential disk of scale length 1, 0.02 thick, inside nothing. */
static bn_particles *thin_disk(size_t n)
{
    bn_particles *p = tu_random_particles(n, 22, 0);
    for (size_t i = 0; i < n; i++) {
        const double u = 0.5 * (p->pos[0][i] + 1.0) * 0.999 + 5e-4, ph = M_PI * (p->pos[1][i] + 1.0);
        const double R = -log(u);
        p->pos[0][i] = R * cos(ph);
        p->pos[1][i] = R * sin(ph);
        p->pos[2][i] *= 0.02;
    }
    return numbered(p);
}

/* Records (index, ax, ay, az, phi) of every rank, n_all in all, into
 * acc[3 index + k], pot[index] on every rank. */
static void gather_by_index(const double *rec, size_t n, size_t n_all, double *acc, double *pot)
{
    void *got = NULL;
    size_t total = 0;
    TU_OK(bn_comm_gather(comm, -1, rec, n, 5 * sizeof *rec, &got, &total, NULL));
    assert_int_equal(total, n_all);
    const double *r = got;
    for (size_t j = 0; j < total; j++) {
        const size_t i = (size_t)r[5 * j];
        for (int k = 0; k < 3; k++) acc[3 * i + k] = r[5 * j + 1 + k];
        pot[i] = r[5 * j + 4];
    }
    free(got);
}

/* This rank's n forces (a xyz, pot; particle i has id[i], ids 1..n_all)
 * gathered by id into acc[3 (id-1) + k], pot_all[id-1] on every rank. */
static void gather_forces(const uint64_t *id, size_t n, double *const a[3], const double *pot, size_t n_all,
                         double *acc, double *pot_all)
{
    double *rec = malloc((5 * n + 1) * sizeof *rec);
    for (size_t i = 0; i < n; i++) {
        rec[5 * i] = (double)(id[i] - 1);
        for (int k = 0; k < 3; k++) rec[5 * i + 1 + k] = a[k][i];
        rec[5 * i + 4] = pot[i];
    }
    gather_by_index(rec, n, n_all, acc, pot_all);
    free(rec);
}

/* The distributed forces of the global set all, gathered by id into
 * acc[3 (id-1) + k], pot[id-1] on every rank. */
static void distributed_forces(const bn_particles *all, const bn_gravity_params *g, const double *acc_old_global,
                               double *acc, double *pot, bn_let_stats *let)
{
    bn_particles *p = share(all);
    bn_domain d;
    TU_OK(bn_domain_decompose(comm, p, NULL, BN_CURVE_HILBERT, &d, NULL));
    double *a[3], *ph = malloc((p->n + 1) * sizeof *ph), *old = malloc((p->n + 1) * sizeof *old);
    for (int k = 0; k < 3; k++) a[k] = malloc((p->n + 1) * sizeof *a[k]);
    for (size_t i = 0; i < p->n; i++) old[i] = acc_old_global ? acc_old_global[p->id[i] - 1] : 0.0;
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    TU_OK(bn_tree_forces_dist_cpu(ws, comm, g, p, acc_old_global ? old : NULL, NULL, 0, 1, a, ph, NULL, let));
    gather_forces(p->id, p->n, a, ph, all->n, acc, pot);
    bn_tree_workspace_free(ws);
    for (int k = 0; k < 3; k++) free(a[k]);
    free(ph);
    free(old);
    bn_domain_release(&d);
    bn_particles_free(p);
}

/* The single-process tree's forces of the whole set (id order). */
static void single_forces(const bn_particles *all, const bn_gravity_params *g, const double *acc_old, double *acc,
                          double *pot)
{
    double *a[3];
    for (int k = 0; k < 3; k++) a[k] = malloc(all->n * sizeof *a[k]);
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    TU_OK(bn_tree_forces_cpu(ws, g, all, acc_old, a, pot, NULL));
    for (size_t i = 0; i < all->n; i++)
        for (int k = 0; k < 3; k++) acc[3 * i + k] = a[k][i];
    bn_tree_workspace_free(ws);
    for (int k = 0; k < 3; k++) free(a[k]);
}

/* Double direct summation for every particle of the set (id order), the
 * targets shared among the ranks and the results gathered. */
static void reference_forces(const bn_particles *all, const bn_gravity_params *g, double *acc, double *pot)
{
    const size_t P = (size_t)bn_comm_size(comm), me = (size_t)bn_comm_rank(comm);
    const size_t mine = (all->n + P - 1 - me) / P; /* targets me, me + P, ... */
    size_t *idx = malloc((mine + 1) * sizeof *idx);
    double *r = malloc((4 * mine + 1) * sizeof *r), *rec = malloc((5 * mine + 1) * sizeof *rec);
    for (size_t j = 0; j < mine; j++) idx[j] = me + j * P;
    TU_OK(bn_direct_reference(all, g->G, g->softening, idx, mine, r, r + 3 * mine));
    for (size_t j = 0; j < mine; j++) {
        rec[5 * j] = (double)idx[j];
        for (int k = 0; k < 3; k++) rec[5 * j + 1 + k] = r[3 * j + k];
        rec[5 * j + 4] = r[3 * mine + j];
    }
    gather_by_index(rec, mine, all->n, acc, pot);
    free(idx);
    free(r);
    free(rec);
}

static void check_set(const char *name, bn_particles *all, bn_mac mac, double theta)
{
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    g.theta = theta;
    g.mac = mac;
    g.softening = 1e-3;
    const size_t n = all->n;
    double *ad = malloc(3 * n * sizeof *ad), *pd = malloc(n * sizeof *pd), *as = malloc(3 * n * sizeof *as),
           *ps = malloc(n * sizeof *ps), *old = NULL;
    if (mac == BN_MAC_ACCEL) { /* the criterion's |a_old|: the bonsai tree's */
        bn_gravity_params b = g;
        b.mac = BN_MAC_BONSAI;
        single_forces(all, &b, NULL, as, ps);
        old = malloc(n * sizeof *old);
        for (size_t i = 0; i < n; i++) old[i] = sqrt(as[3 * i] * as[3 * i] + as[3 * i + 1] * as[3 * i + 1] +
                                                     as[3 * i + 2] * as[3 * i + 2]);
    }
    bn_let_stats let;
    distributed_forces(all, &g, old, ad, pd, &let);
    single_forces(all, &g, old, as, ps);
    double *ra = malloc(3 * n * sizeof *ra), *rp = malloc(n * sizeof *rp);
    reference_forces(all, &g, ra, rp);
    bn_error_stats ed, es;
    TU_OK(bn_error_stats_compute(n, ad, ra, pd, rp, &ed));
    TU_OK(bn_error_stats_compute(n, as, ra, ps, rp, &es));
    int ok = ed.acc_p99 <= 1.3 * es.acc_p99 + 1e-9 && ed.acc_p999 <= 1.6 * es.acc_p999 + 1e-9 &&
             ed.pot_p99 <= 1.3 * es.pot_p99 + 1e-9;
    if (bn_comm_size(comm) == 1) /* no remote part: the single tree's bits */
        ok &= !memcmp(ad, as, 3 * n * sizeof *ad) && !memcmp(pd, ps, n * sizeof *pd);
    if (bn_comm_rank(comm) == 0 || !ok)
        print_message("%s, %d ranks, %s: acc p99 %.3e p999 %.3e (single %.3e %.3e), pot p99 %.3e (single %.3e); "
                      "LET from rank %d: %zu cells, %zu bodies sent\n",
                      name, bn_comm_size(comm), bn_mac_name(mac), ed.acc_p99, ed.acc_p999, es.acc_p99, es.acc_p999,
                      ed.pot_p99, es.pot_p99, bn_comm_rank(comm), let.cells_sent, let.bodies_sent);
    assert_true(everywhere(ok));
    free(ad);
    free(pd);
    free(as);
    free(ps);
    free(old);
    free(ra);
    free(rp);
}

static void test_plummer(void **state)
{
    (void)state;
    bn_particles *p = numbered(tu_model(BN_IC_PLUMMER, 12000, 31));
    check_set("Plummer", p, BN_MAC_BONSAI, 0.6);
    check_set("Plummer", p, BN_MAC_ACCEL, 0.6);
    bn_particles_free(p);
}

static void test_hernquist(void **state)
{
    (void)state;
    bn_particles *p = numbered(tu_model(BN_IC_HERNQUIST, 12000, 32));
    check_set("Hernquist", p, BN_MAC_BONSAI_BOX, 0.6);
    bn_particles_free(p);
}

static void test_two_clusters(void **state)
{
    (void)state;
    bn_particles *p = two_clusters(12000);
    check_set("two clusters", p, BN_MAC_BONSAI, 0.6);
    bn_particles_free(p);
}

static void test_thin_disk(void **state)
{
    (void)state;
    bn_particles *p = thin_disk(12000);
    check_set("thin disk", p, BN_MAC_BONSAI, 0.6);
    bn_particles_free(p);
}

/* Fewer particles than ranks: ranks without particles serve nothing and
 * receive everything. theta 0 opens every cell (direct summation): the
 * bodies travel exactly. */
static void test_three_particles(void **state)
{
    (void)state;
    bn_particles *p = numbered(tu_random_particles(3, 33, 0));
    check_set("three particles", p, BN_MAC_BONSAI, 0.0);
    bn_particles_free(p);
}

/* A message of nc cells in which cell i has children at i + 1 .. i + k
 * (the first `inner` cells), the others leaves of one body each. */
static uint64_t *let_message(size_t nc, size_t inner, int k, size_t *nw)
{
    const size_t cw = sizeof(bn_walk_cell) / 8, nb = nc - inner;
    *nw = 2 + nc * (cw + 6) + 4 * nb;
    uint64_t *w = calloc(*nw, sizeof *w);
    w[0] = nc;
    w[1] = nb;
    bn_walk_cell *c = (bn_walk_cell *)(void *)(w + 2);
    for (size_t i = 0, b = 0; i < nc; i++) {
        c[i].mass = 1.0;
        c[i].r2 = 1.0;
        c[i].first_child = -1;
        if (i < inner) {
            c[i].first_child = (int32_t)(i + 1);
            c[i].n_children = k;
        } else {
            c[i].first_body = (int32_t)b++;
            c[i].n_bodies = 1;
        }
    }
    return w;
}

/* The target boxes' size rule (let.h): 256 boxes up to 8 M bodies a
 * rank (M31's block steps at 2 M a rank lost with more), boxes of 32768
 * bodies up to 1024 of them, then 1024; never below a group; the tuning
 * aid's fixed count. */
static void test_let_box_bodies(void **state)
{
    (void)state;
    unsetenv("BANYAN_LET_BOXES");
    assert_int_equal(bn_let_box_bodies((size_t)1 << 21, 256), 8192);
    assert_int_equal(bn_let_box_bodies((size_t)1 << 23, 256), 32768);
    assert_int_equal(bn_let_box_bodies((size_t)1 << 24, 256), 32768);
    assert_int_equal(bn_let_box_bodies((size_t)1 << 25, 256), 32768);
    assert_int_equal(bn_let_box_bodies((size_t)1 << 26, 256), 65536);
    assert_int_equal(bn_let_box_bodies(1000, 256), 256);
    assert_int_equal(bn_let_box_bodies(0, 64), 64);
    setenv("BANYAN_LET_BOXES", "4096", 1);
    assert_int_equal(bn_let_box_bodies((size_t)1 << 25, 256), 8192);
    setenv("BANYAN_LET_BOXES", "7", 1); /* out of range: the rule */
    assert_int_equal(bn_let_box_bodies((size_t)1 << 25, 256), 32768);
    unsetenv("BANYAN_LET_BOXES");
}

/* Unpacking trusts no message: children shared by several cells (the
 * walk's lists, n_cells long, would overflow) and cells without a parent
 * are refused; the breadth-first layout the packer writes is taken. */
static void test_let_messages_checked(void **state)
{
    (void)state;
    size_t nw, used;
    bn_let let;
    uint64_t *ok = let_message(3, 1, 2, &nw); /* a root and two leaves */
    TU_OK(bn_let_unpack(ok, nw, &let, &used));
    assert_int_equal(used, nw);
    assert_int_equal(let.src.n_cells, 3);
    bn_let_free(&let);
    free(ok);
    uint64_t *shared = let_message(40, 38, 2, &nw); /* cell i's children i+1, i+2 */
    TU_FAILS(bn_let_unpack(shared, nw, &let, &used), BN_ERR_INTERNAL, "locally essential tree");
    free(shared);
    uint64_t *orphans = let_message(5, 1, 2, &nw); /* cells 3 and 4: no parent */
    TU_FAILS(bn_let_unpack(orphans, nw, &let, &used), BN_ERR_INTERNAL, "no parent");
    free(orphans);
    uint64_t *cut = let_message(3, 1, 2, &nw);
    TU_FAILS(bn_let_unpack(cut, nw - 1, &let, &used), BN_ERR_INTERNAL, "words");
    free(cut);
}

/* ---- measured costs: the domains' weights ---- */

/* Each particle's cost from one distributed walk (the local tree's and
 * the received ones'): without the group expansion it is the walk's
 * flops exactly, 23 n_pp + 65 n_pc summed over the rank's particles (the
 * counts are the walk's own, summed apart); with it, the far cells' 180
 * each plus at most 95 per particle and expansion (the expansion is
 * evaluated at each body after each tree that used one; a received
 * tree's walk by boxes of groups adds its box's expansion: two for each
 * received tree). Every particle costs something. */
static void test_measured_costs(void **state)
{
    (void)state;
    bn_particles *all = two_clusters(8000);
    for (int expand = 0; expand < 2; expand++) {
        bn_gravity_params g = bn_gravity_params_default();
        g.softening = 0.01;
        g.theta = 0.6;
        g.group_expansion = expand ? 0.2 : 0.0;
        bn_particles *p = share(all);
        bn_domain d;
        TU_OK(bn_domain_decompose(comm, p, NULL, BN_CURVE_HILBERT, &d, NULL));
        double *a[3], *ph = malloc((p->n + 1) * sizeof *ph), *cost = calloc(p->n + 1, sizeof *cost);
        for (int k = 0; k < 3; k++) a[k] = malloc((p->n + 1) * sizeof *a[k]);
        bn_tree_workspace *ws = NULL;
        TU_OK(bn_tree_workspace_create(&ws));
        bn_tree_workspace_measure(ws, cost);
        bn_force_stats st;
        TU_OK(bn_tree_forces_dist_cpu(ws, comm, &g, p, NULL, NULL, 0, 1, a, ph, &st, NULL));
        double sum = 0, least = INFINITY;
        for (size_t i = 0; i < p->n; i++) {
            sum += cost[i];
            least = fmin(least, cost[i]);
        }
        const double lists = 23 * st.n_pp + 65 * st.n_pc, far = 180 * st.n_far;
        int ok = p->n == 0 || least > 0;
        const double evals = 95.0 * (double)p->n * (2 * bn_comm_size(comm) - 1); /* the own tree's, a received
                                                                                     one's and its box's */
        if (expand) ok = ok && st.n_far > 0 && sum >= (lists + far) * (1 - 1e-12) &&
                         sum <= (lists + far + evals) * (1 + 1e-12);
        else ok = ok && fabs(sum - lists) <= 1e-12 * lists;
        if (!ok)
            print_message("rank %d expand %d: cost sum %.17g, lists %.17g, far %.17g, least %g, n %zu\n",
                          bn_comm_rank(comm), expand, sum, lists, far, least, p->n);
        assert_true(everywhere(ok));
        bn_tree_workspace_free(ws);
        for (int k = 0; k < 3; k++) free(a[k]);
        free(ph);
        free(cost);
        bn_domain_release(&d);
        bn_particles_free(p);
    }
    bn_particles_free(all);
}

/* Every particle of all (ids 1..n) once among the ranks' particles,
 * with its position, velocity and mass to the bit, and its x force that
 * of ref (acc[3 (id-1)]): nothing lost, doubled or changed in moving. */
static int same_set(bn_simulation *sim, const bn_particles *all, const double *ref)
{
    const bn_particles *p = NULL;
    TU_OK(bn_simulation_particles(sim, &p));
    double *rec = malloc((5 * p->n + 1) * sizeof *rec);
    for (size_t i = 0; i < p->n; i++) {
        rec[5 * i] = (double)(p->id[i] - 1);
        rec[5 * i + 1] = p->pos[0][i];
        rec[5 * i + 2] = p->vel[2][i];
        rec[5 * i + 3] = p->acc[0] ? p->acc[0][i] : NAN;
        rec[5 * i + 4] = p->mass[i];
    }
    void *got = NULL;
    size_t total = 0;
    TU_OK(bn_comm_gather(comm, -1, rec, p->n, 5 * sizeof *rec, &got, &total, NULL));
    char *seen = calloc(all->n, 1);
    int ok = total == all->n;
    const double *r = got;
    for (size_t j = 0; ok && j < total; j++) {
        const size_t i = (size_t)r[5 * j];
        ok = i < all->n && !seen[i] && r[5 * j + 1] == all->pos[0][i] && r[5 * j + 2] == all->vel[2][i] &&
             r[5 * j + 4] == all->mass[i] && r[5 * j + 3] == ref[3 * i];
        if (i < all->n) seen[i] = 1;
    }
    free(seen);
    free(got);
    free(rec);
    return ok;
}

/* A simulation of particles p (none: NULL) over the ranks of c (NULL:
 * this process alone): the backend, softening 0.01, ip's integrator
 * (NULL: the default). */
static bn_simulation *sim_over(bn_backend backend, const bn_particles *p, const bn_integrator_params *ip,
                               bn_comm *c)
{
    bn_simulation *sim = NULL;
    TU_OK(bn_simulation_create(&sim));
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = backend;
    g.softening = 0.01;
    TU_OK(bn_simulation_set_gravity(sim, &g));
    if (ip) TU_OK(bn_simulation_set_integrator(sim, ip));
    if (c) TU_OK(bn_simulation_set_comm(sim, c));
    if (p) TU_OK(bn_simulation_set_particles(sim, p));
    return sim;
}

/* A simulation across the ranks of this rank's particles p. */
static bn_simulation *ranks_sim(bn_backend backend, const bn_particles *p, const bn_integrator_params *ip)
{
    return sim_over(backend, p, ip, comm);
}

/* test_FN and test_FN_gpu: FN(backend) on the CPU's backend and on the
 * GPU's, over several ranks (skipped on one, and the GPU's without a GPU:
 * the device runs them under mpirun, scripts/gpu-verify.sh). */
#define RANKS_TESTS(FN)                                                      \
    static void test_##FN(void **state)                                      \
    {                                                                        \
        (void)state;                                                         \
        if (bn_comm_size(comm) == 1) skip();                                 \
        FN(BN_BACKEND_CPU);                                                  \
    }                                                                        \
    static void test_##FN##_gpu(void **state)                                \
    {                                                                        \
        (void)state;                                                         \
        if (bn_comm_size(comm) == 1 || !bn_gpu_available()) skip();          \
        FN(BN_BACKEND_GPU);                                                  \
    }

/* The pp interactions of one evaluation over the ranks, summed; sim's
 * particles cut by count first when it has several ranks. */
static double pp_summed(bn_simulation *sim)
{
    if (bn_comm_size(comm) > 1) TU_OK(bn_simulation_rebalance(sim, NULL));
    TU_OK(bn_simulation_compute_forces(sim));
    double pp = bn_simulation_force_stats(sim)->n_pp;
    TU_OK(bn_comm_allreduce(comm, &pp, 1, BN_REDUCE_SUM));
    return pp;
}

/* Every rank's tree takes its octants from the cut's cube (keys.h's
 * bn_key_cube_in): a cell inside a rank's domain then holds the bodies
 * of the one tree's cell, and the ranks' walks together take as many
 * bodies one by one as one process does (within 1%: the few cells the
 * domains' ends cut). Each rank's own cube cut the domains' surfaces
 * into wider leaves: Plummer 2^15 on 2 ranks took 30-40% more. */
static void trees_aligned(bn_backend backend)
{
    const size_t n = 32768;
    bn_particles *all = numbered(tu_model(BN_IC_PLUMMER, n, 51));
    bn_simulation *one = sim_over(backend, all, NULL, NULL);
    TU_OK(bn_simulation_compute_forces(one));
    const double pp_one = bn_simulation_force_stats(one)->n_pp;
    bn_particles *p = share(all);
    bn_simulation *sim = ranks_sim(backend, p, NULL);
    const double pp_ranks = pp_summed(sim);
    if (bn_comm_rank(comm) == 0)
        print_message("%s, pp of %d ranks over one process's: %.4f\n", backend == BN_BACKEND_GPU ? "gpu" : "cpu",
                      bn_comm_size(comm), pp_ranks / pp_one);
    assert_true(everywhere(pp_one > 0 && fabs(pp_ranks / pp_one - 1.0) < 0.01));
    bn_simulation_free(sim);
    bn_simulation_free(one);
    bn_particles_free(p);
    bn_particles_free(all);
}

RANKS_TESTS(trees_aligned)

/* A Plummer sphere in a wide sparse cloud of as many particles: cut by
 * count, the ranks' costs differ (a cloud particle's walk is not a
 * cluster particle's); cut again by the measured costs, the largest
 * rank's cost is within 10% of the mean, and closer than by count. The
 * particles arrive whole, with the forces they had (on the GPU they move
 * device to device: backend.h's rebalance()). */
static void rebalance_by_cost(bn_backend backend)
{
    const size_t n = 16000;
    bn_particles *all = tu_model(BN_IC_PLUMMER, n, 41);
    bn_particles *cloud = tu_random_particles(n / 2, 42, 0);
    for (size_t i = 0; i < n / 2; i++)
        for (int k = 0; k < 3; k++) all->pos[k][2 * i] = 40.0 * cloud->pos[k][i] + (k == 0 ? 100.0 : 0.0);
    bn_particles_free(cloud);
    bn_particles *p = share(numbered(all));
    bn_simulation *sim = ranks_sim(backend, p, NULL);
    double by_count = 0, by_cost = 0;
    bn_domain_stats ds;
    TU_OK(bn_simulation_rebalance(sim, &ds)); /* no forces yet: by count */
    TU_OK(bn_simulation_compute_forces(sim));
    TU_OK(bn_simulation_imbalance(sim, &by_count));
    double *a = malloc(3 * n * sizeof *a), *ph = malloc(n * sizeof *ph);
    const bn_particles *q = NULL;
    TU_OK(bn_simulation_particles(sim, &q));
    gather_forces(q->id, q->n, q->acc, q->pot, n, a, ph);
    TU_OK(bn_simulation_rebalance(sim, &ds));
    const int moved_whole = same_set(sim, all, a); /* the forces that moved, to the bit */
    TU_OK(bn_simulation_compute_forces(sim));
    TU_OK(bn_simulation_imbalance(sim, &by_cost));
    if (bn_comm_rank(comm) == 0)
        print_message("%s, imbalance of %d ranks: %.3f by count, %.3f by measured cost (cut's own estimate %.3f); "
                      "moved whole %d\n", backend == BN_BACKEND_GPU ? "gpu" : "cpu", bn_comm_size(comm), by_count,
                      by_cost, ds.imbalance, moved_whole);
    assert_true(everywhere(by_cost <= 1.1 && by_cost < by_count && moved_whole));
    free(a);
    free(ph);
    bn_simulation_free(sim);
    bn_particles_free(p);
    bn_particles_free(all);
}

RANKS_TESTS(rebalance_by_cost)

/* Forces of the global set all (ids 1..n) on the GPU across the ranks,
 * cut by count, gathered by id: acc[3 (id-1) + k], then pot[id-1]. */
static double *gpu_forces_by_id(const bn_particles *all)
{
    const size_t n = all->n;
    bn_particles *p = share(all);
    bn_simulation *sim = ranks_sim(BN_BACKEND_GPU, p, NULL);
    TU_OK(bn_simulation_rebalance(sim, NULL));
    TU_OK(bn_simulation_compute_forces(sim));
    const bn_particles *q = NULL;
    TU_OK(bn_simulation_particles(sim, &q));
    double *f = malloc(4 * n * sizeof *f);
    gather_forces(q->id, q->n, q->acc, q->pot, n, f, f + 3 * n);
    bn_simulation_free(sim);
    bn_particles_free(p);
    return f;
}

/* The received trees walked beside the local walk (the default: their
 * own sums, added once both are done) give the forces of the walk after
 * it (BANYAN_REMOTE_BESIDE=0) to the bit (GPU only). */
static void test_received_beside_gpu(void **state)
{
    (void)state;
    if (bn_comm_size(comm) == 1 || !bn_gpu_available()) skip();
    bn_particles *all = numbered(tu_model(BN_IC_HERNQUIST, 30000, 43));
    setenv("BANYAN_REMOTE_BESIDE", "0", 1);
    double *after = gpu_forces_by_id(all);
    unsetenv("BANYAN_REMOTE_BESIDE");
    double *beside = gpu_forces_by_id(all);
    size_t differ = 0;
    for (size_t i = 0; i < 4 * all->n; i++) differ += memcmp(after + i, beside + i, sizeof *after) != 0;
    if (bn_comm_rank(comm) == 0)
        print_message("gpu, %d ranks: forces beside and after the local walk differ in %zu of %zu values\n",
                      bn_comm_size(comm), differ, 4 * all->n);
    assert_true(everywhere(differ == 0));
    free(after);
    free(beside);
    bn_particles_free(all);
}

/* ---- the particles that cross the cut in shared steps ---- */

/* This rank's particles by id into rec[id - 1] (7 values: x, y, z, vx,
 * vy, vz, mass; part type in types[id - 1]) on every rank, the others'
 * gathered; *complete: every id once. */
static void gather_state(bn_simulation *sim, size_t n_all, double *rec, uint8_t *types, int *complete)
{
    const bn_particles *p = NULL;
    TU_OK(bn_simulation_particles(sim, &p));
    double *mine = malloc((9 * p->n + 1) * sizeof *mine);
    for (size_t i = 0; i < p->n; i++) {
        double *m = mine + 9 * i;
        m[0] = (double)p->id[i];
        for (int k = 0; k < 3; k++) m[1 + k] = p->pos[k][i], m[4 + k] = p->vel[k][i];
        m[7] = p->mass[i];
        m[8] = bn_particles_part_type(p, i);
    }
    void *got = NULL;
    size_t total = 0;
    TU_OK(bn_comm_gather(comm, -1, mine, p->n, 9 * sizeof *mine, &got, &total, NULL));
    char *seen = calloc(n_all + 1, 1);
    *complete = total == n_all;
    for (size_t j = 0; j < total; j++) {
        const double *g = (const double *)got + 9 * j;
        const size_t id = (size_t)g[0];
        if (id < 1 || id > n_all || seen[id]) {
            *complete = 0;
            continue;
        }
        seen[id] = 1;
        memcpy(rec + 7 * (id - 1), g + 1, 7 * sizeof *rec);
        types[id - 1] = (uint8_t)g[8];
    }
    free(seen);
    free(got);
    free(mine);
}

static bn_simulation *stepping(bn_backend backend, const bn_particles *p, int bins)
{
    bn_integrator_params ip = bn_integrator_params_default();
    ip.dt = 1.0 / 32; /* long steps: many crossers */
    if (bins) { /* block steps: cycles of 1/8 in 4 bins, a step each tick */
        ip.dt = 1.0 / 8;
        ip.time_bins = bins;
        ip.eta = 0.1;
    }
    return ranks_sim(backend, p, &ip);
}

/* Shared steps across the ranks move the particles that cross the cut
 * (bn_simulation_crossers): some do; every particle stays once with its
 * mass and part type (typed on rank 0 only at the start: the others make
 * types as typed ones arrive); the energy is kept; and a run saved and
 * loaded halfway continues with the same bits (the cut is saved). */
static void crossers_move(bn_backend backend, int bins)
{
    const size_t n = 8000;
    bn_particles *all = numbered(tu_model(BN_IC_PLUMMER, n, 43));
    TU_OK(bn_particles_ensure_types(all));
    for (size_t i = 0; i < n; i++) all->type[i] = (uint8_t)(1 + i % 3);
    bn_particles *p = share(all);
    if (bn_comm_rank(comm) != 0) { /* the others start without types: PartType1 each */
        free(p->type);
        p->type = NULL;
    }
    double *types0 = malloc((2 * p->n + 1) * sizeof *types0); /* every particle's type as it starts */
    for (size_t i = 0; i < p->n; i++) types0[2 * i] = (double)p->id[i], types0[2 * i + 1] = bn_particles_part_type(p, i);
    void *got0 = NULL;
    size_t total0 = 0;
    TU_OK(bn_comm_gather(comm, -1, types0, p->n, 2 * sizeof *types0, &got0, &total0, NULL));
    for (size_t j = 0; j < total0; j++) all->type[(size_t)((double *)got0)[2 * j] - 1] = (uint8_t)((double *)got0)[2 * j + 1];
    free(got0);
    free(types0);
    bn_simulation *sim = stepping(backend, p, bins);
    TU_OK(bn_simulation_rebalance(sim, NULL));
    bn_energies e0, e1;
    TU_OK(bn_simulation_compute_forces(sim));
    TU_OK(bn_simulation_energies(sim, &e0));
    for (int k = 0; k < 3; k++) TU_OK(bn_simulation_step(sim, NULL));
    char path[256];
    snprintf(path, sizeof path, "%s/banyan-crossers-%d-%ld.h5", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             bn_comm_rank(comm), (long)getpid());
    TU_OK(bn_simulation_save_state(sim, path, NULL, 0));
    for (int k = 0; k < 3; k++) TU_OK(bn_simulation_step(sim, NULL));
    TU_OK(bn_simulation_energies(sim, &e1));
    bn_domain_stats moved;
    TU_OK(bn_simulation_crossers(sim, &moved));
    double sent = (double)moved.sent;
    TU_OK(bn_comm_allreduce(comm, &sent, 1, BN_REDUCE_SUM));
    double *a = malloc(7 * n * sizeof *a), *b = malloc(7 * n * sizeof *b);
    uint8_t *ta = malloc(n), *tb = malloc(n);
    int complete = 0, again = 0;
    gather_state(sim, n, a, ta, &complete);
    int kept = complete;
    for (size_t i = 0; kept && i < n; i++) kept = a[7 * i + 6] == all->mass[i] && ta[i] == all->type[i];
    /* the same from the restart file */
    bn_simulation *cont = stepping(backend, NULL, bins);
    TU_OK(bn_simulation_load_state(cont, path, NULL, NULL, NULL));
    for (int k = 0; k < 3; k++) TU_OK(bn_simulation_step(cont, NULL));
    gather_state(cont, n, b, tb, &again);
    const int same = again && !memcmp(a, b, 7 * n * sizeof *a) && !memcmp(ta, tb, n);
    const double drift = fabs(e1.total - e0.total) / fabs(e0.total);
    if (bn_comm_rank(comm) == 0)
        print_message("%s%s, %d ranks: %.0f crossers moved in 6 steps; every particle once with its mass and type %d; "
                      "energy error %.2e; continued from the restart file with the same bits %d\n",
                      backend == BN_BACKEND_GPU ? "gpu" : "cpu", bins ? ", block steps" : "", bn_comm_size(comm), sent,
                      kept, drift, same);
    assert_true(sent > 0);
    assert_true(everywhere(kept && same));
    assert_true(drift < 1e-3);
    remove(path);
    free(a);
    free(b);
    free(ta);
    free(tb);
    bn_simulation_free(cont);
    bn_simulation_free(sim);
    bn_particles_free(p);
    bn_particles_free(all);
}

static void test_crossers_move(void **state)
{
    (void)state;
    if (bn_comm_size(comm) == 1) skip();
    crossers_move(BN_BACKEND_CPU, 0);
    crossers_move(BN_BACKEND_CPU, 4); /* inside a cycle: the bins travel, the restart holds them */
}

static void test_crossers_move_gpu(void **state)
{
    (void)state;
    if (bn_comm_size(comm) == 1 || !bn_gpu_available()) skip();
    crossers_move(BN_BACKEND_GPU, 0);
    crossers_move(BN_BACKEND_GPU, 4);
}

/* A cluster streaming across the cut (vx = 4, 3/4 of its half-mass
 * radius in 6 steps): most of a rank's particles go to another, whose
 * set grows past the particle arrays' room (bn_cuda_particle_room: the
 * GPU's arrays grow, the others close their gaps in place). Every
 * particle stays once with its mass and part type, the energy is kept,
 * and a rank grew by more than the room's margin. */
static void crossers_stream(bn_backend backend)
{
    const size_t n = 8000;
    bn_particles *all = numbered(tu_model(BN_IC_PLUMMER, n, 47));
    TU_OK(bn_particles_ensure_types(all));
    for (size_t i = 0; i < n; i++) all->type[i] = (uint8_t)(1 + i % 2), all->vel[0][i] += 4.0;
    bn_particles *p = share(all);
    bn_simulation *sim = stepping(backend, p, 0);
    TU_OK(bn_simulation_rebalance(sim, NULL));
    const bn_particles *mine = NULL;
    TU_OK(bn_simulation_particles(sim, &mine));
    const double n0 = (double)mine->n;
    bn_energies e0, e1;
    TU_OK(bn_simulation_compute_forces(sim));
    TU_OK(bn_simulation_energies(sim, &e0));
    double grew = 0; /* the largest growth of a rank's set over its start, at any step */
    for (int k = 0; k < 6; k++) {
        TU_OK(bn_simulation_step(sim, NULL));
        TU_OK(bn_simulation_particles(sim, &mine));
        grew = fmax(grew, (double)mine->n - n0);
    }
    TU_OK(bn_simulation_energies(sim, &e1));
    double margin = n0 / 32 + 16, v[2] = {grew - margin, grew};
    TU_OK(bn_comm_allreduce(comm, v, 2, BN_REDUCE_MAX));
    double *a = malloc(7 * n * sizeof *a);
    uint8_t *ta = malloc(n);
    int complete = 0;
    gather_state(sim, n, a, ta, &complete);
    int kept = complete;
    for (size_t i = 0; kept && i < n; i++) kept = a[7 * i + 6] == all->mass[i] && ta[i] == all->type[i];
    const double drift = fabs(e1.total - e0.total) / fabs(e0.total);
    if (bn_comm_rank(comm) == 0)
        print_message("%s, %d ranks, streaming: a rank grew by %.0f particles (%.0f past the room's margin); every "
                      "particle once with its mass and type %d; energy error %.2e\n",
                      backend == BN_BACKEND_GPU ? "gpu" : "cpu", bn_comm_size(comm), v[1], v[0], kept, drift);
    assert_true(v[0] > 0);
    assert_true(everywhere(kept));
    assert_true(drift < 1e-3);
    free(a);
    free(ta);
    bn_simulation_free(sim);
    bn_particles_free(p);
    bn_particles_free(all);
}

RANKS_TESTS(crossers_stream)

/* ---- the error target over the ranks ---- */

/* bn_gravity with an error target over the ranks on the global set all:
 * every rank's choice in *used (checked the same on every rank: 0 if
 * not), the record in *acc, the forces gathered by id. */
static int targeted_dist(const bn_particles *all, const bn_gravity_params *g, bn_gravity_params *used,
                         bn_accuracy *acc, double *a, double *ph)
{
    bn_particles *p = share(all);
    bn_domain d;
    TU_OK(bn_domain_decompose(comm, p, NULL, BN_CURVE_HILBERT, &d, NULL));
    bn_gravity *grav = NULL;
    TU_OK(bn_gravity_create(&grav, g));
    TU_OK(bn_gravity_set_comm(grav, comm));
    TU_OK(bn_gravity_compute(grav, p));
    *used = *bn_gravity_params_used(grav);
    *acc = *bn_gravity_accuracy(grav);
    gather_forces(p->id, p->n, p->acc, p->pot, all->n, a, ph);
    /* the same settings and record on every rank: the bits of rank 0's */
    double mine[8] = {used->theta, used->mac, used->leaf_size, used->group_size, used->group_expansion, acc->p99,
                      acc->t_eval, (double)acc->evaluations};
    double lo[8], hi[8];
    memcpy(lo, mine, sizeof mine);
    memcpy(hi, mine, sizeof mine);
    TU_OK(bn_comm_allreduce(comm, lo, 8, BN_REDUCE_MIN));
    TU_OK(bn_comm_allreduce(comm, hi, 8, BN_REDUCE_MAX));
    bn_gravity_free(grav);
    bn_domain_release(&d);
    bn_particles_free(p);
    return !memcmp(lo, hi, sizeof lo);
}

/* The error target over the ranks (counted work: a deterministic search)
 * meets E over every particle against an independent double reference,
 * as one process's choice does, within 2x of its p99; the ranks choose
 * the same, and a second search the same bits. */
static void test_error_target(void **state)
{
    (void)state;
    bn_particles *all = numbered(tu_model(BN_IC_PLUMMER, 3000, 41));
    const size_t n = all->n;
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    g.softening = 1e-3;
    g.error_target = 2e-3;
    g.error_cost = BN_TUNE_WORK;
    double *a = malloc(3 * n * sizeof *a), *ph = malloc(n * sizeof *ph), *ra = malloc(3 * n * sizeof *ra),
           *rp = malloc(n * sizeof *rp);
    reference_forces(all, &g, ra, rp);
    bn_gravity_params u1, u2;
    bn_accuracy r1, r2;
    int ok = targeted_dist(all, &g, &u1, &r1, a, ph);
    bn_error_stats ed, es;
    TU_OK(bn_error_stats_compute(n, a, ra, ph, rp, &ed));
    ok &= targeted_dist(all, &g, &u2, &r2, a, ph);
    const int same = !memcmp(&u1, &u2, sizeof u1) && r1.p99 == r2.p99 && r1.t_eval == r2.t_eval;
    /* one process's choice on the whole set (rank 0's, shared) */
    double single = 0;
    if (bn_comm_rank(comm) == 0) {
        bn_particles *c = NULL;
        TU_OK(bn_particles_copy(&c, all));
        bn_gravity *one = NULL;
        TU_OK(bn_gravity_create(&one, &g));
        TU_OK(bn_gravity_compute(one, c));
        double *ac = malloc(3 * n * sizeof *ac);
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++) ac[3 * i + k] = c->acc[k][i];
        TU_OK(bn_error_stats_compute(n, ac, ra, c->pot, rp, &es));
        single = es.acc_p99;
        free(ac);
        bn_gravity_free(one);
        bn_particles_free(c);
    }
    TU_OK(bn_comm_allreduce(comm, &single, 1, BN_REDUCE_SUM));
    const int met = r1.met && ed.acc_p99 <= g.error_target && ed.acc_p99 <= 2 * single && single <= 2 * ed.acc_p99;
    if (bn_comm_rank(comm) == 0 || !(ok && same && met))
        print_message("error target %g, %d ranks: %s theta %.4f leaf %d group %d kappa %.2f, sample p99 %.3e, "
                      "every particle's p99 %.3e (one process's choice: %.3e); ranks agree %d, again the same %d\n",
                      g.error_target, bn_comm_size(comm), bn_mac_name(u1.mac), u1.theta, u1.leaf_size,
                      u1.group_size, u1.group_expansion, r1.p99, ed.acc_p99, single, ok, same);
    assert_true(everywhere(ok && same && met));
    free(a);
    free(ph);
    free(ra);
    free(rp);
    bn_particles_free(all);
}

/* Timed costs differ between ranks: the search agrees on them, so every
 * rank still chooses the same (a divergent choice would hang or differ). */
static void test_error_target_timed(void **state)
{
    (void)state;
    bn_particles *all = numbered(tu_model(BN_IC_HERNQUIST, 2000, 42));
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = BN_BACKEND_CPU;
    g.error_target = 3e-3;
    g.error_cost = BN_TUNE_TIME;
    double *a = malloc(3 * all->n * sizeof *a), *ph = malloc(all->n * sizeof *ph);
    bn_gravity_params u;
    bn_accuracy r;
    const int ok = targeted_dist(all, &g, &u, &r, a, ph);
    assert_true(everywhere(ok && r.p99 > 0 && r.sample == 512));
    free(a);
    free(ph);
    bn_particles_free(all);
}

/* The sample over the ranks: the targets of the one global order (every
 * rank's particles in rank order), their reference equal to double
 * direct summation over the whole set (self left out), on every rank. */
static void test_sample_reference(void **state)
{
    (void)state;
    bn_particles *all = numbered(tu_model(BN_IC_PLUMMER, 1500, 43));
    bn_gravity_params g = bn_gravity_params_default();
    g.softening = 0.01;
    const size_t n = all->n, ns = 100;
    double *ra = malloc(3 * n * sizeof *ra), *rp = malloc(n * sizeof *rp);
    reference_forces(all, &g, ra, rp);
    bn_particles *p = share(all);
    bn_domain d;
    TU_OK(bn_domain_decompose(comm, p, NULL, BN_CURVE_HILBERT, &d, NULL));
    TU_OK(bn_particles_ensure_forces(p));
    for (size_t i = 0; i < p->n; i++) { /* the "tree" force: the id, to find it again */
        for (int k = 0; k < 3; k++) p->acc[k][i] = (double)p->id[i];
        p->pot[i] = -(double)p->id[i];
    }
    double *buf = malloc(8 * ns * sizeof *buf);
    TU_OK(bn_sample_forces_dist_cpu(comm, p, g.G, g.softening, ns, 7, buf, buf + 3 * ns, buf + 4 * ns,
                                    buf + 7 * ns));
    /* every rank's ids in rank order: the global order */
    void *got = NULL;
    size_t total = 0;
    TU_OK(bn_comm_gather(comm, -1, p->id, p->n, sizeof *p->id, &got, &total, NULL));
    const uint64_t *ids = got;
    int ok = total == n;
    double worst = 0;
    for (size_t j = 0; ok && j < ns; j++) {
        const uint64_t id = ids[bn_sample_target(7, j, ns, n)];
        ok &= buf[4 * ns + 3 * j] == (double)id && buf[7 * ns + j] == -(double)id;
        const size_t i = (size_t)id - 1;
        for (int k = 0; k < 3; k++) worst = fmax(worst, fabs(buf[3 * j + k] - ra[3 * i + k]) / fabs(ra[3 * i + k]));
        worst = fmax(worst, fabs(buf[3 * ns + j] - rp[i]) / fabs(rp[i]));
    }
    if (!(ok && worst < 1e-12)) print_message("sample over %d ranks: targets %d, reference off by %.3e\n",
                                              bn_comm_size(comm), ok, worst);
    assert_true(everywhere(ok && worst < 1e-12));
    free(got);
    free(buf);
    free(ra);
    free(rp);
    bn_domain_release(&d);
    bn_particles_free(p);
    bn_particles_free(all);
}

int main(void)
{
    if (bn_comm_world(&comm) != BN_OK) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plummer),      cmocka_unit_test(test_hernquist),
        cmocka_unit_test(test_two_clusters), cmocka_unit_test(test_thin_disk),
        cmocka_unit_test(test_three_particles), cmocka_unit_test(test_let_messages_checked),
        cmocka_unit_test(test_let_box_bodies),
        cmocka_unit_test(test_sample_reference), cmocka_unit_test(test_error_target),
        cmocka_unit_test(test_error_target_timed), cmocka_unit_test(test_measured_costs),
        cmocka_unit_test(test_rebalance_by_cost), cmocka_unit_test(test_rebalance_by_cost_gpu),
        cmocka_unit_test(test_received_beside_gpu),
        cmocka_unit_test(test_trees_aligned), cmocka_unit_test(test_trees_aligned_gpu),
        cmocka_unit_test(test_crossers_move), cmocka_unit_test(test_crossers_move_gpu),
        cmocka_unit_test(test_crossers_stream), cmocka_unit_test(test_crossers_stream_gpu),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    bn_comm_free(comm);
    return failed;
}
