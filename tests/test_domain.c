/* Domains along the curve (bn_domain_decompose), run by CTest alone and
 * under mpirun with 2, 3 and 4 ranks. Every rank builds the same global
 * set and keeps its share of it; after the decomposition every particle
 * must sit on exactly one rank with every field intact, inside its rank's
 * key range and in key order, the shares equal to within the sampling's
 * bound, and a bad particle on one rank must stop every rank with that
 * rank's message. Checks are agreed over the ranks before they are
 * asserted, so that a failure on one rank cannot leave the others waiting
 * in a collective. */
#include <omp.h>
#include <string.h>
#include "testutil.h"
#include "parallel/balance.h"
#include "parallel/comm.h"
#include "tree/tree_cpu.h"

static bn_comm *comm;

static int everywhere(int ok) { return tu_everywhere(comm, ok); }

/* This rank's share of the global set: every P-th particle from an
 * offset (all of them on rank 0 when `on_root`). */
static bn_particles *share(const bn_particles *all, int on_root)
{
    return tu_deal(all, bn_comm_size(comm), bn_comm_rank(comm), on_root ? 0 : 7, on_root ? 0 : 3);
}

/* Every global particle on exactly one rank, with its fields' bits. */
static int intact(const bn_particles *all, const bn_particles *p)
{
    void *ids = NULL;
    size_t n = 0;
    TU_OK(bn_comm_gather(comm, -1, p->id, p->n, sizeof *p->id, &ids, &n, NULL));
    int ok = n == all->n;
    char *seen = calloc(all->n + 1, 1);
    for (size_t i = 0; i < n; i++) {
        const uint64_t id = ((uint64_t *)ids)[i]; /* ids are 1..n (tu_random_particles) */
        ok &= id >= 1 && id <= all->n && !seen[id];
        if (id >= 1 && id <= all->n) seen[id] = 1;
    }
    for (size_t j = 0; j < p->n; j++) {
        const size_t i = (size_t)p->id[j] - 1;
        for (int k = 0; k < 3; k++) ok &= p->pos[k][j] == all->pos[k][i] && p->vel[k][j] == all->vel[k][i];
        ok &= p->mass[j] == all->mass[i] && bn_particles_part_type(p, j) == bn_particles_part_type(all, i);
    }
    free(ids);
    free(seen);
    return ok;
}

/* This rank's particles inside its key range, in key order. */
static int in_range_ordered(const bn_particles *p, const bn_domain *d, int ordered)
{
    const int me = bn_comm_rank(comm);
    uint64_t *key = malloc((p->n + 1) * sizeof *key);
    bn_tree_keys((const double *const *)p->pos, p->n, d->lo, d->side, d->curve, key);
    int ok = d->nranks == bn_comm_size(comm) && d->split[0] == 0 && d->split[d->nranks] == UINT64_C(1) << 63;
    for (int r = 0; r < d->nranks; r++) ok &= d->split[r] <= d->split[r + 1];
    for (size_t j = 0; j < p->n; j++) {
        ok &= key[j] >= d->split[me] && key[j] < d->split[me + 1];
        if (j && ordered) ok &= key[j - 1] <= key[j];
    }
    free(key);
    return ok;
}

static int in_range(const bn_particles *p, const bn_domain *d) { return in_range_ordered(p, d, 1); }

/* The largest rank's weight over the mean, from the particles each rank
 * holds (weights recomputed from their positions; 1 each without). */
static double measured_imbalance(const bn_particles *p, const double *(*weights)(const bn_particles *))
{
    const double *w = weights ? weights(p) : NULL;
    double W = 0.0, *all = NULL, max = 0.0, sum = 0.0;
    for (size_t i = 0; i < p->n; i++) W += w ? w[i] : 1.0;
    size_t n = 0;
    TU_OK(bn_comm_gather(comm, -1, &W, 1, sizeof W, (void **)&all, &n, NULL));
    for (size_t r = 0; r < n; r++) {
        max = fmax(max, all[r]);
        sum += all[r];
    }
    free(all);
    free((void *)w);
    return max / (sum / (double)n);
}

static void decompose_and_check(const bn_particles *all, int on_root, const double *(*weights)(const bn_particles *),
                                double bound)
{
    bn_particles *p = share(all, on_root);
    const double *w = weights ? weights(p) : NULL;
    bn_domain d;
    bn_domain_stats st;
    TU_OK(bn_domain_decompose(comm, p, w, BN_CURVE_HILBERT, &d, &st));
    if (bn_comm_rank(comm) == 0)
        print_message("%d ranks, %zu particles%s%s: imbalance %.4f, sent %zu, received %zu (rank 0)\n",
                      bn_comm_size(comm), all->n, on_root ? ", all from rank 0" : "", weights ? ", weighted" : "",
                      st.imbalance, st.sent, st.received);
    assert_true(everywhere(intact(all, p)));
    assert_true(everywhere(in_range(p, &d)));
    const double imbalance = measured_imbalance(p, weights);
    assert_true(imbalance >= 1.0 && imbalance <= bound);
    assert_true(fabs(st.imbalance - imbalance) <= 1e-12 * imbalance); /* what it reports */
    /* the same input again: the same domains and the same particles */
    bn_particles *q = share(all, on_root);
    const double *wq = weights ? weights(q) : NULL;
    bn_domain e;
    TU_OK(bn_domain_decompose(comm, q, wq, BN_CURVE_HILBERT, &e, NULL));
    int same = q->n == p->n && !memcmp(d.split, e.split, ((size_t)d.nranks + 1) * sizeof *d.split);
    for (size_t j = 0; same && j < p->n; j++) same = q->id[j] == p->id[j];
    assert_true(everywhere(same));
    bn_domain_release(&d);
    bn_domain_release(&e);
    free((void *)w);
    free((void *)wq);
    bn_particles_free(p);
    bn_particles_free(q);
}

/* bn_comm_alltoallv_placed (the GPU re-balance's exchange, with host
 * buffers here): rank s sends rank d s + d + 1 records from a chosen
 * place, each holding (s, d, k); every rank receives them where it asked
 * (senders in rank order, its own part left out and a gap of 3 records
 * kept), and the counts of bn_comm_counts are the senders'. */
static void test_placed_exchange(void **state)
{
    (void)state;
    const int P = bn_comm_size(comm), me = bn_comm_rank(comm);
    size_t *cnt = calloc(4 * (size_t)P, sizeof *cnt), *at = cnt + P, *rc = at + P, *rat = rc + P;
    size_t n = 0;
    for (int d = 0; d < P; d++) {
        at[d] = n + 2; /* 2 unused records before each part */
        cnt[d] = d == me ? 0 : (size_t)(me + d + 1);
        n = at[d] + cnt[d];
    }
    double *send = calloc(3 * n + 3, sizeof *send);
    for (int d = 0; d < P; d++)
        for (size_t k = 0; k < cnt[d]; k++) {
            double *x = send + 3 * (at[d] + k);
            x[0] = me, x[1] = d, x[2] = (double)k;
        }
    TU_OK(bn_comm_counts(comm, cnt, rc));
    size_t m = 3;
    for (int r = 0; r < P; r++) {
        rat[r] = m;
        m += rc[r];
    }
    double *recv = calloc(3 * m + 3, sizeof *recv);
    TU_OK(bn_comm_alltoallv_placed(comm, send, cnt, at, 3 * sizeof *send, recv, rc, rat));
    int ok = 1;
    for (int r = 0; r < P; r++) {
        ok = ok && rc[r] == (r == me ? 0 : (size_t)(r + me + 1));
        for (size_t k = 0; k < rc[r]; k++) {
            const double *x = recv + 3 * (rat[r] + k);
            ok = ok && x[0] == r && x[1] == me && x[2] == (double)k;
        }
    }
    ok = ok && recv[0] == 0 && recv[8] == 0; /* the gap untouched */
    assert_true(tu_everywhere(comm, ok));
    free(send);
    free(recv);
    free(cnt);
}

static void test_plummer_shares(void **state)
{
    (void)state;
    bn_particles *all = tu_random_particles(30000, 11, 2);
    decompose_and_check(all, 0, NULL, 1.01);
    bn_particles_free(all);
}

/* Two clusters 1e4 apart, all read by rank 0 (the others start empty). */
static void test_all_from_one_rank(void **state)
{
    (void)state;
    bn_particles *all = tu_random_particles(20000, 12, 1);
    for (size_t i = 0; i < all->n; i += 2) all->pos[0][i] += 1e4;
    decompose_and_check(all, 1, NULL, 1.01);
    bn_particles_free(all);
}

/* The cost of particles with x > 0 counted ten times. */
static const double *tenfold_right(const bn_particles *p)
{
    double *w = malloc((p->n + 1) * sizeof *w);
    for (size_t i = 0; i < p->n; i++) w[i] = p->pos[0][i] > 0 ? 10.0 : 1.0;
    return w;
}

static void test_weighted_shares(void **state)
{
    (void)state;
    bn_particles *all = tu_random_particles(30000, 13, 0);
    decompose_and_check(all, 0, tenfold_right, 1.02);
    bn_particles_free(all);
}

/* Gravity:balance_cost time's factors (parallel/balance.h): rank r
 * counted (r + 1) 1e9 flops in (r + 1)^2 ms, so its flops ran r + 1
 * times slower than rank 0's; each factor is the square root of its time
 * per flop (the damped step), normalised so that the scaled weights add
 * up to the counted flops, computed here independently. A rank that
 * counted flops without a time makes every rank weigh work (1); a rank
 * without flops keeps 1 and adds nothing to the others' factors. */
static double damped_factor(int r, int P)
{
    double F = 0, FR = 0;
    for (int q = 0; q < P; q++) F += (q + 1) * 1e9, FR += (q + 1) * 1e9 * sqrt((q + 1) * 1e-12);
    return sqrt((r + 1) * 1e-12) * F / FR;
}

static void test_time_scale(void **state)
{
    (void)state;
    const int P = bn_comm_size(comm), r = bn_comm_rank(comm);
    double scale = 0;
    TU_OK(bn_balance_time_scale(comm, (r + 1) * (r + 1) * 1e-3, (r + 1) * 1e9, &scale));
    const double want = damped_factor(r, P);
    int ok = fabs(scale - want) <= 1e-12 * want;
    ok &= P == 1 ? fabs(scale - 1) < 1e-14 : (r == 0 ? scale < 1 : 1) && (r == P - 1 ? scale > 1 : 1);
    double sum = (r + 1) * 1e9 * scale, F = 0;
    for (int q = 0; q < P; q++) F += (q + 1) * 1e9;
    TU_OK(bn_comm_allreduce(comm, &sum, 1, BN_REDUCE_SUM));
    ok &= fabs(sum - F) <= 1e-9 * F;
    /* rank 0 without a time: work everywhere */
    TU_OK(bn_balance_time_scale(comm, r == 0 ? 0.0 : 1.0, 1e9 * (r + 1), &scale));
    ok &= scale == 1.0;
    /* the last rank without flops (nor time): the others as without it */
    const int idle = r == P - 1 && P > 1;
    TU_OK(bn_balance_time_scale(comm, idle ? 0.0 : (r + 1) * (r + 1) * 1e-3, idle ? 0.0 : (r + 1) * 1e9, &scale));
    ok &= idle ? scale == 1.0 : fabs(scale - damped_factor(r, P > 1 ? P - 1 : 1)) <= 1e-12 * scale;
    assert_true(everywhere(ok));
}

/* Part types travel with their particles: from every rank, and from rank
 * 0 alone (the others start without a type array and must get one). */
static void test_part_types_travel(void **state)
{
    (void)state;
    bn_particles *all = tu_random_particles(9000, 17, 2);
    TU_OK(bn_particles_ensure_types(all));
    for (size_t i = 0; i < all->n; i++) all->type[i] = (uint8_t)(1 + i % 3);
    for (int on_root = 0; on_root < 2; on_root++) {
        bn_particles *p = share(all, on_root);
        bn_domain d;
        TU_OK(bn_domain_decompose(comm, p, NULL, BN_CURVE_HILBERT, &d, NULL));
        assert_true(everywhere(p->type != NULL));
        assert_true(everywhere(intact(all, p)));
        bn_domain_release(&d);
        bn_particles_free(p);
    }
    bn_particles_free(all);
}

/* Weights that are all 0 (no cost measured yet): cut as if 1 each, not
 * every particle onto the last rank. */
static const double *no_weight(const bn_particles *p)
{
    return calloc(p->n + 1, sizeof(double));
}

static void test_zero_weights(void **state)
{
    (void)state;
    bn_particles *all = tu_random_particles(12000, 16, 0);
    bn_particles *p = share(all, 0);
    const double *w = no_weight(p);
    bn_domain d;
    TU_OK(bn_domain_decompose(comm, p, w, BN_CURVE_HILBERT, &d, NULL));
    assert_true(everywhere(intact(all, p)));
    const double imbalance = measured_imbalance(p, NULL); /* in particles */
    assert_true(imbalance <= 1.01);
    bn_domain_release(&d);
    free((void *)w);
    bn_particles_free(p);
    bn_particles_free(all);
}

/* Fewer particles than ranks' worth: some ranks end empty. */
static void test_tiny_set(void **state)
{
    (void)state;
    bn_particles *all = tu_random_particles(5, 14, 0);
    bn_particles *p = share(all, 0);
    bn_domain d;
    TU_OK(bn_domain_decompose(comm, p, NULL, BN_CURVE_MORTON, &d, NULL));
    assert_true(everywhere(intact(all, p)));
    assert_true(everywhere(in_range(p, &d)));
    bn_domain_release(&d);
    bn_particles_free(p);
    bn_particles_free(all);
}

/* A NaN on the last rank: every rank fails with its message. */
static void test_bad_particle_stops_all(void **state)
{
    (void)state;
    const int P = bn_comm_size(comm), me = bn_comm_rank(comm);
    bn_particles *all = tu_random_particles(1000, 15, 0);
    bn_particles *p = share(all, 0);
    if (me == P - 1 && p->n > 3) p->pos[1][3] = NAN;
    bn_domain d;
    const bn_status s = bn_domain_decompose(comm, p, NULL, BN_CURVE_HILBERT, &d, NULL);
    char want[64];
    snprintf(want, sizeof want, "rank %d of %d", P - 1, P);
    int ok = s == BN_ERR_ARGUMENT && strstr(bn_last_error(), "y coordinate") && d.split == NULL;
    if (P > 1) ok &= strstr(bn_last_error(), want) != NULL;
    if (!ok) print_message("rank %d: %s\n", me, bn_last_error());
    assert_true(everywhere(ok));
    bn_particles_free(p);
    bn_particles_free(all);
}

/* The decomposition at 1 and at 3 threads: the same particles in the
 * same order on every rank, bit for bit (the packing counts and places
 * records per thread chunk); ties of equal keys (a hundred particles at
 * one point) in their senders' order, which one process sees as
 * ascending ids. */
static void test_same_at_any_thread_count(void **state)
{
    (void)state;
    bn_particles *all = tu_random_particles(30000, 19, 2);
    for (size_t i = 1; i <= 100; i++)
        for (int k = 0; k < 3; k++) all->pos[k][i * 97] = all->pos[k][0];
    bn_particles *p[2];
    const int threads[2] = {1, 3}, before = omp_get_max_threads();
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(threads[t]);
        p[t] = share(all, 0);
        bn_domain d;
        TU_OK(bn_domain_decompose(comm, p[t], NULL, BN_CURVE_HILBERT, &d, NULL));
        bn_domain_release(&d);
    }
    omp_set_num_threads(before);
    int ok = p[0]->n == p[1]->n;
    for (size_t j = 0; ok && j < p[0]->n; j++) {
        ok &= p[0]->id[j] == p[1]->id[j] && p[0]->mass[j] == p[1]->mass[j];
        for (int k = 0; k < 3; k++) ok &= p[0]->pos[k][j] == p[1]->pos[k][j] && p[0]->vel[k][j] == p[1]->vel[k][j];
    }
    if (bn_comm_size(comm) == 1)
        for (size_t j = 1; j < p[0]->n; j++)
            if (p[0]->pos[0][j] == p[0]->pos[0][j - 1] && p[0]->pos[1][j] == p[0]->pos[1][j - 1])
                ok &= p[0]->id[j - 1] < p[0]->id[j];
    assert_true(everywhere(ok));
    bn_particles_free(p[0]);
    bn_particles_free(p[1]);
    bn_particles_free(all);
}

/* The cut kept (bn_domain_update): after a drift only the particles that
 * crossed it move, each to the rank that owns its key, with its fields;
 * a second update moves nothing; a cut for other ranks is refused. */
static void test_update_moves_crossers(void **state)
{
    (void)state;
    bn_particles *all = tu_random_particles(30000, 14, 2);
    bn_particles *p = share(all, 0);
    bn_domain d;
    TU_OK(bn_domain_decompose(comm, p, NULL, BN_CURVE_HILBERT, &d, NULL));
    const double dt = 0.02; /* the same drift, with the same bits, here and in the reference */
    for (int k = 0; k < 3; k++) {
        for (size_t j = 0; j < p->n; j++) p->pos[k][j] += dt * p->vel[k][j];
        for (size_t i = 0; i < all->n; i++) all->pos[k][i] += dt * all->vel[k][i];
    }
    bn_domain_stats st;
    TU_OK(bn_domain_update(comm, p, NULL, &d, &st));
    double sent = (double)st.sent, received = (double)st.received;
    TU_OK(bn_comm_allreduce(comm, &sent, 1, BN_REDUCE_SUM));
    TU_OK(bn_comm_allreduce(comm, &received, 1, BN_REDUCE_SUM));
    if (bn_comm_rank(comm) == 0)
        print_message("%d ranks: %.0f of %zu particles crossed the cut\n", bn_comm_size(comm), sent, all->n);
    if (bn_comm_size(comm) > 1) assert_true(sent > 0 && sent < 0.1 * (double)all->n); /* a shell at the cut */
    assert_true(sent == received);
    assert_true(everywhere(intact(all, p)));
    assert_true(everywhere(in_range_ordered(p, &d, 0))); /* the stayers, then the received */
    TU_OK(bn_domain_update(comm, p, NULL, &d, &st)); /* nothing left to move */
    assert_true(everywhere(st.sent == 0 && st.received == 0));
    bn_domain copy, other = d;
    TU_OK(bn_domain_copy(&d, &copy));
    assert_true(copy.nranks == d.nranks && !memcmp(copy.split, d.split, ((size_t)d.nranks + 1) * sizeof *d.split));
    other.nranks = d.nranks + 1;
    assert_int_equal(bn_domain_update(comm, p, NULL, &other, NULL), BN_ERR_ARGUMENT);
    bn_domain_release(&copy);
    bn_domain_release(&d);
    bn_particles_free(p);
    bn_particles_free(all);
}

int main(void)
{
    /* two communicators, the first (which started MPI) freed first: MPI
     * must live on while the second is in use */
    bn_comm *first = NULL;
    if (bn_comm_world(&first) != BN_OK || bn_comm_world(&comm) != BN_OK) return 1;
    bn_comm_free(first);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plummer_shares),  cmocka_unit_test(test_all_from_one_rank),
        cmocka_unit_test(test_weighted_shares), cmocka_unit_test(test_tiny_set),
        cmocka_unit_test(test_bad_particle_stops_all), cmocka_unit_test(test_zero_weights),
        cmocka_unit_test(test_part_types_travel), cmocka_unit_test(test_placed_exchange),
        cmocka_unit_test(test_same_at_any_thread_count), cmocka_unit_test(test_update_moves_crossers),
        cmocka_unit_test(test_time_scale),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    bn_comm_free(comm);
    return failed;
}
