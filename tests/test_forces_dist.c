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
#include "testutil.h"
#include "gravity/gravity_cpu.h"
#include "parallel/comm.h"
#include "parallel/forces_dist.h"

static bn_comm *comm;

static int everywhere(int ok) { return tu_everywhere(comm, ok); }

/* Every P-th particle of the global set from an offset. */
static bn_particles *share(const bn_particles *all)
{
    const int P = bn_comm_size(comm), me = bn_comm_rank(comm);
    bn_particles *p = NULL;
    TU_OK(bn_particles_create(&p, 0));
    size_t n = 0;
    for (size_t i = 0; i < all->n; i++) n += (int)((i * 5 + 1) % (size_t)P) == me;
    TU_OK(bn_particles_resize(p, n));
    for (size_t i = 0, j = 0; i < all->n; i++) {
        if ((int)((i * 5 + 1) % (size_t)P) != me) continue;
        for (int k = 0; k < 3; k++) {
            p->pos[k][j] = all->pos[k][i];
            p->vel[k][j] = all->vel[k][i];
        }
        p->mass[j] = all->mass[i];
        p->id[j++] = all->id[i];
    }
    return p;
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
    /* records (id, ax, ay, az, phi) to every rank */
    double *rec = malloc((5 * p->n + 1) * sizeof *rec);
    for (size_t i = 0; i < p->n; i++) {
        rec[5 * i] = (double)p->id[i];
        for (int k = 0; k < 3; k++) rec[5 * i + 1 + k] = a[k][i];
        rec[5 * i + 4] = ph[i];
    }
    void *got = NULL;
    size_t bytes = 0;
    TU_OK(bn_comm_allgather(comm, rec, 5 * p->n * sizeof *rec, &got, &bytes, NULL));
    const double *r = got;
    assert_int_equal(bytes / (5 * sizeof *rec), all->n);
    for (size_t j = 0; j < all->n; j++) {
        const size_t id = (size_t)r[5 * j] - 1;
        for (int k = 0; k < 3; k++) acc[3 * id + k] = r[5 * j + 1 + k];
        pot[id] = r[5 * j + 4];
    }
    free(got);
    free(rec);
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
    double *r = malloc((4 * mine + 1) * sizeof *r);
    for (size_t j = 0; j < mine; j++) idx[j] = me + j * P;
    TU_OK(bn_direct_reference(all, g->G, g->softening, idx, mine, r, r + 3 * mine));
    void *got[2] = {NULL, NULL};
    size_t bytes[2], counts[2][64];
    TU_OK(bn_comm_allgather(comm, r, 3 * mine * sizeof *r, &got[0], &bytes[0], counts[0]));
    TU_OK(bn_comm_allgather(comm, r + 3 * mine, mine * sizeof *r, &got[1], &bytes[1], counts[1]));
    const double *ga = got[0], *gp = got[1];
    for (size_t q = 0, at = 0; q < P; at += counts[1][q] / sizeof *r, q++)
        for (size_t j = 0; j < counts[1][q] / sizeof *r; j++) {
            const size_t i = q + j * P;
            for (int k = 0; k < 3; k++) acc[3 * i + k] = ga[3 * (at + j) + k];
            pot[i] = gp[at + j];
        }
    free(got[0]);
    free(got[1]);
    free(idx);
    free(r);
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

int main(void)
{
    if (bn_comm_world(&comm) != BN_OK) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plummer),      cmocka_unit_test(test_hernquist),
        cmocka_unit_test(test_two_clusters), cmocka_unit_test(test_thin_disk),
        cmocka_unit_test(test_three_particles),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    bn_comm_free(comm);
    return failed;
}
