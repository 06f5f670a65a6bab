/* The CPU backend's part of block time steps: the tree refresh (bodies
 * moved, structure kept), the walk of the active groups only, the forces
 * of the active particles and the block kick, against full evaluations,
 * double direct summation and hand-written kicks. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "core/backend.h"
#include "gravity/gravity_cpu.h"
#include "tree/refresh_guard.h"
#include "tree/tree_cpu.h"

#define SENTINEL 1234.5

static bn_gravity_params tree_params(bn_mac mac, double theta)
{
    bn_gravity_params g = tu_block_gravity(BN_BACKEND_CPU, BN_METHOD_TREE, 1e-3);
    g.mac = mac;
    g.theta = theta;
    return g;
}

static bn_particles *plummer(size_t n, uint64_t seed)
{
    bn_particles *p = tu_model(BN_IC_PLUMMER, n, seed);
    TU_OK(bn_particles_ensure_forces(p));
    return p;
}

/* Forces of p into p->acc/pot through the workspace. */
static bn_force_stats forces(bn_tree_workspace *ws, const bn_gravity_params *g, bn_particles *p,
                             const uint8_t *bin, int bin_min, int rebuild)
{
    bn_force_stats st;
    memset(&st, 0, sizeof st);
    TU_OK(bn_tree_forces_active_cpu(ws, g, p, NULL, bin, bin_min, rebuild, p->acc, p->pot, &st));
    return st;
}

/* forces() with old accelerations |a_old| (the accel criterion). */
static bn_force_stats forces_old(bn_tree_workspace *ws, const bn_gravity_params *g, bn_particles *p,
                                 const double *old, int rebuild)
{
    bn_force_stats st;
    memset(&st, 0, sizeof st);
    TU_OK(bn_tree_forces_active_cpu(ws, g, p, old, NULL, 0, rebuild, p->acc, p->pot, &st));
    return st;
}

/* |a| of every particle, from a bonsai evaluation (what the accel
 * criterion's first evaluation would use). */
static double *old_accelerations(bn_particles *p)
{
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    const bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.5);
    forces_old(ws, &g, p, NULL, 1);
    double *a = malloc(p->n * sizeof *a);
    for (size_t i = 0; i < p->n; i++)
        a[i] = sqrt(p->acc[0][i] * p->acc[0][i] + p->acc[1][i] * p->acc[1][i] + p->acc[2][i] * p->acc[2][i]);
    bn_tree_workspace_free(ws);
    return a;
}

static void drift(bn_particles *p, double dt)
{
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < p->n; i++) p->pos[k][i] += dt * p->vel[k][i];
}

/* acc/pot of p equal to the saved copy q, bit for bit, at every i with
 * want[i] (all when want is NULL). */
static void assert_same_forces(const bn_particles *p, const bn_particles *q, const uint8_t *want)
{
    for (size_t i = 0; i < p->n; i++) {
        if (want && !want[i]) continue;
        for (int k = 0; k < 3; k++)
            if (p->acc[k][i] != q->acc[k][i]) fail_msg("acc[%d][%zu] %.17g != %.17g", k, i, p->acc[k][i], q->acc[k][i]);
        if (p->pot[i] != q->pot[i]) fail_msg("pot[%zu] %.17g != %.17g", i, p->pot[i], q->pot[i]);
    }
}

static bn_particles *copy_of(const bn_particles *p)
{
    bn_particles *q = NULL;
    TU_OK(bn_particles_copy(&q, p));
    return q;
}

/* bonsai-box takes the radius from the bodies' box either way: a refresh
 * of unmoved bodies is the build, bit for bit. A non-finite coordinate
 * fails, as in a build. */
static void test_refresh_unmoved_is_build(void **state)
{
    (void)state;
    bn_particles *p = plummer(1u << 14, 5);
    const bn_gravity_params g = tree_params(BN_MAC_BONSAI_BOX, 0.5);
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    const bn_force_stats built = forces(ws, &g, p, NULL, 0, 1);
    bn_particles *q = copy_of(p);
    const bn_force_stats refreshed = forces(ws, &g, p, NULL, 0, 0);
    assert_same_forces(p, q, NULL);
    assert_true(built.t_sort > 0 && refreshed.t_sort == 0 && refreshed.t_build == 0);
    assert_true(refreshed.n_pp == built.n_pp && refreshed.n_pc == built.n_pc);
    p->pos[1][77] = NAN;
    TU_FAILS(bn_tree_forces_active_cpu(ws, &g, p, NULL, NULL, 0, 0, p->acc, p->pot, NULL), BN_ERR_ARGUMENT,
             "non-finite");
    bn_tree_workspace_free(ws);
    bn_particles_free(q);
    bn_particles_free(p);
}

/* Bodies of t outside their leaf's octant at positions pos (original
 * order): the refresh cannot trust the octants. */
static size_t bodies_out_of_octant(const bn_tree *t, double *const pos[3])
{
    size_t out = 0;
    for (int i = 0; i < t->n_nodes; i++) {
        if (t->n_children[i] != 0) continue;
        for (int b = t->first_body[i]; b < t->first_body[i] + t->n_bodies[i]; b++) {
            int inside = 1;
            for (int k = 0; k < 3; k++)
                inside &= fabs(pos[k][t->order[b]] - t->center[3 * i + k]) <= 0.5 * t->size[i];
            out += !inside;
        }
    }
    return out;
}

/* Every body of t's node i within [lo, hi] (3 each) and, when r >= 0,
 * within r of the node's centre of mass (the guard every criterion's
 * opening radius must keep). */
static void assert_bounded(const bn_tree *t, int first, int count, const double *lo, const double *hi,
                           const double *com, double r)
{
    for (int b = first; b < first + count; b++) {
        double d2 = 0;
        for (int k = 0; k < 3; k++) {
            const double x = t->pos[k][b];
            if (!(x >= lo[k] && x <= hi[k])) fail_msg("body %d: %c = %.17g outside [%.17g, %.17g]", b, "xyz"[k], x,
                                                      lo[k], hi[k]);
            if (com) d2 += (x - com[k]) * (x - com[k]);
        }
        if (com && !(sqrt(d2) <= r)) fail_msg("body %d at %.17g from the com, opening radius %.17g", b, sqrt(d2), r);
    }
}

/* The build's tree at the old positions p, refreshed for the drifted
 * positions q: many bodies left their leaves' octants, and still every
 * node's box, opening radius and every group's box holds its bodies. */
static void check_refreshed_tree(const bn_particles *p, const bn_particles *q, const bn_gravity_params *g)
{
    bn_tree t;
    memset(&t, 0, sizeof t);
    TU_OK(bn_tree_sort_bodies(&t, (const double *const *)p->pos, p->mass, p->n, g->curve, NULL, NULL, NULL));
    TU_OK(bn_tree_build(&t, g->leaf_size));
    bn_tree_moments(&t, g->mac, g->theta, g->quadrupole);
    TU_OK(bn_tree_groups(&t, g->group_size));
    assert_int_equal(bodies_out_of_octant(&t, p->pos), 0);
    const size_t left = bodies_out_of_octant(&t, q->pos);
    print_message("%zu of %zu bodies left their leaf's octant\n", left, p->n);
    assert_true(left > p->n / 10);
    TU_OK(bn_tree_refresh(&t, (const double *const *)q->pos, g->mac, g->theta, g->quadrupole));
    for (int i = 0; i < t.n_nodes; i++)
        assert_bounded(&t, t.first_body[i], t.n_bodies[i], t.body_lo + 3 * i, t.body_hi + 3 * i, t.com + 3 * i,
                       t.open_radius[i]);
    for (int i = 0; i < t.n_groups; i++)
        assert_bounded(&t, t.group_first[i], t.group_count[i], t.group_lo + 3 * i, t.group_hi + 3 * i, NULL, 0);
    double m = 0, c = 0; /* the root's com: the new positions' */
    for (size_t i = 0; i < q->n; i++) {
        m += q->mass[i];
        c += q->mass[i] * q->pos[0][i];
    }
    assert_true(fabs(t.com[0] - c / m) < 1e-12);
    bn_tree_release(&t);
}

/* The refresh guard's sum (tree/refresh_guard.h) on a fresh build: every
 * group's bodies lie in the smallest key cell of its first and last
 * body, so each term is its count at ratio 1, exactly: the key cells
 * come out right on both curves. */
static void test_built_groups_have_not_grown(void **state)
{
    (void)state;
    bn_particles *p = plummer(1u << 14, 3);
    for (int curve = 0; curve < 2; curve++) {
        bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.5);
        g.curve = curve ? BN_CURVE_HILBERT : BN_CURVE_MORTON;
        bn_tree t;
        memset(&t, 0, sizeof t);
        TU_OK(bn_tree_sort_bodies(&t, (const double *const *)p->pos, p->mass, p->n, g.curve, NULL, NULL, NULL));
        TU_OK(bn_tree_build(&t, g.leaf_size));
        bn_tree_moments(&t, g.mac, g.theta, g.quadrupole);
        TU_OK(bn_tree_groups(&t, g.group_size));
        assert_true(bn_tree_group_growth(&t) == (unsigned long long)BN_REFRESH_GROWTH_UNIT * p->n);
        bn_tree_release(&t);
    }
    assert_true(bn_key_common_levels(5, 5) == BN_KEY_MAX_LEVEL);
    assert_true(bn_key_common_levels(0, 1) == BN_KEY_MAX_LEVEL - 1);     /* the last digit differs */
    assert_true(bn_key_common_levels(0, 1ull << 62) == 0);              /* the root's octants */
    assert_true(bn_key_common_levels(1ull << 59, 1ull << 58) == 1);      /* level 2's digit */
    assert_true(bn_refresh_growth_term(2.0, 1.0, 3) == 3 * 8 * 64);       /* twice the size: 8x */
    assert_true(bn_refresh_growth_term(0.5, 1.0, 3) == 3 * 64);           /* smaller counts as 1 */
    assert_true(bn_refresh_growth_term(1.0, 0.0, 1) == 64ull * 4096);    /* from a point: the cap */
    assert_true(bn_refresh_growth_term(100.0, 1.0, 2) == 2 * 64ull * 4096); /* 100x: the cap too */
    bn_particles_free(p);
}

/* A refresh of a slightly drifted Plummer sphere is kept; one whose
 * particles were shuffled among each other's positions (every group
 * spans the sphere: a walk of nearly all pairs) is refused and the tree
 * built anew, with the forces of a fresh build, bit for bit. */
static void test_scattered_refresh_is_refused(void **state)
{
    (void)state;
    bn_particles *p = plummer(1u << 14, 9);
    const bn_gravity_params g = tree_params(BN_MAC_BONSAI_BOX, 0.5);
    bn_tree_workspace *ws = NULL, *fresh = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    TU_OK(bn_tree_workspace_create(&fresh));
    forces(ws, &g, p, NULL, 0, 1);
    bn_force_stats st = forces(ws, &g, p, NULL, 0, 0); /* unmoved: every group in its cell */
    assert_true(st.refresh_growth == 1.0);
    drift(p, 0.05);
    st = forces(ws, &g, p, NULL, 0, 0);
    print_message("growth after a drift of 0.05: %.3f\n", st.refresh_growth);
    assert_int_equal(st.refresh_refused, 0);
    assert_true(st.refresh_growth > 1.0 && st.refresh_growth < BN_REFRESH_GROWTH_MAX);
    assert_true(st.t_sort == 0);
    uint64_t rng = 77;
    for (size_t i = p->n - 1; i > 0; i--) { /* shuffled positions */
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        const size_t j = (size_t)((rng >> 33) % (i + 1));
        for (int k = 0; k < 3; k++) {
            const double x = p->pos[k][i];
            p->pos[k][i] = p->pos[k][j];
            p->pos[k][j] = x;
        }
    }
    st = forces(ws, &g, p, NULL, 0, 0);
    print_message("growth after the shuffle: %.1f\n", st.refresh_growth);
    assert_int_equal(st.refresh_refused, 1);
    assert_true(st.t_sort > 0);
    bn_particles *q = copy_of(p);
    const bn_force_stats fs = forces(fresh, &g, q, NULL, 0, 1);
    assert_same_forces(p, q, NULL);
    assert_true(st.n_pp == fs.n_pp && st.n_pc == fs.n_pc);
    bn_tree_workspace_free(ws);
    bn_tree_workspace_free(fresh);
    bn_particles_free(q);
    bn_particles_free(p);
}

/* A drifted Plummer sphere: the refreshed tree (the old structure, the
 * bodies far outside their octants) is as accurate as a fresh build at
 * the new positions, against double direct summation. The accel
 * criterion gets the old accelerations. */
static void check_refresh_accuracy(bn_mac mac)
{
    bn_particles *p = plummer(1u << 14, 7);
    const bn_gravity_params g = tree_params(mac, 0.5);
    double *old = mac == BN_MAC_ACCEL ? old_accelerations(p) : NULL;
    bn_tree_workspace *ws = NULL, *fresh = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    TU_OK(bn_tree_workspace_create(&fresh));
    const bn_force_stats built = forces_old(ws, &g, p, old, 1);
    bn_particles *moved = copy_of(p);
    drift(moved, 0.04);
    check_refreshed_tree(p, moved, &g);
    const bn_force_stats rs = forces_old(ws, &g, moved, old, 0);
    assert_int_equal(rs.refresh_refused, 0); /* refreshed indeed */
    const bn_error_stats er = tu_errors_vs_direct(moved, g.G, g.softening, 1000, 11);
    const bn_force_stats fs = forces_old(fresh, &g, moved, old, 1);
    const bn_error_stats ef = tu_errors_vs_direct(moved, g.G, g.softening, 1000, 11);
    print_message("%s refresh: p50 %.2e p99 %.2e max %.2e pp %.0f | fresh: p50 %.2e p99 %.2e max %.2e pp %.0f\n",
                  bn_mac_name(mac), er.acc_p50, er.acc_p99, er.acc_max, rs.n_pp / p->n, ef.acc_p50, ef.acc_p99,
                  ef.acc_max, fs.n_pp / p->n);
    assert_true(rs.n_nodes == built.n_nodes && rs.t_build == 0); /* the old tree */
    /* accel with the octant's l in G M l^2 (not the moved bodies'
     * spread) gave p99 1.36x and max 1.77x the fresh tree's */
    assert_true(er.acc_p99 <= 1.2 * ef.acc_p99 && er.acc_p99 < 1e-3);
    assert_true(er.acc_p50 <= 1.2 * ef.acc_p50 && er.acc_max <= 1.5 * ef.acc_max);
    bn_tree_workspace_free(fresh);
    bn_tree_workspace_free(ws);
    bn_particles_free(moved);
    bn_particles_free(p);
    free(old);
}

static void test_refresh_moved_bonsai(void **state)
{
    (void)state;
    check_refresh_accuracy(BN_MAC_BONSAI);
}

static void test_refresh_moved_bonsai_box(void **state)
{
    (void)state;
    check_refresh_accuracy(BN_MAC_BONSAI_BOX);
}

static void test_refresh_moved_accel(void **state)
{
    (void)state;
    check_refresh_accuracy(BN_MAC_ACCEL);
}

/* xorshift bins 0..3, independent of the library's generator. */
static uint8_t *random_bins(size_t n, uint64_t s)
{
    uint8_t *bin = malloc(n);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        bin[i] = (uint8_t)((s >> 20) & 3);
    }
    return bin;
}

static void fill_sentinel(bn_particles *p)
{
    for (size_t i = 0; i < p->n; i++) {
        for (int k = 0; k < 3; k++) p->acc[k][i] = SENTINEL;
        p->pot[i] = SENTINEL;
    }
}

/* Bins >= 2 active: their forces are the full evaluation's bit for bit
 * (on a new tree and on a refreshed one), the others keep what they had;
 * less work; nobody active: no work, nothing written. */
static void test_active_walk(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(20000, 31, 2);
    TU_OK(bn_particles_ensure_forces(p));
    const bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.5);
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    uint8_t *bin = random_bins(p->n, 99), *active = malloc(p->n), *inactive = malloc(p->n);
    size_t n_active = 0;
    for (size_t i = 0; i < p->n; i++) {
        active[i] = bin[i] >= 2;
        inactive[i] = !active[i];
        n_active += active[i];
    }
    assert_true(n_active > p->n / 3 && n_active < 2 * p->n / 3);
    bn_particles *sentinel = copy_of(p);
    fill_sentinel(sentinel);
    for (int rebuild = 1; rebuild >= 0; rebuild--) {
        const bn_force_stats all = forces(ws, &g, p, NULL, 0, rebuild);
        bn_particles *full = copy_of(p);
        fill_sentinel(p);
        const bn_force_stats some = forces(ws, &g, p, bin, 2, rebuild);
        assert_same_forces(p, full, active);
        assert_same_forces(p, sentinel, inactive);
        assert_true(some.n_pp > 0 && some.n_pp < all.n_pp && some.n_pc < all.n_pc);
        bn_particles_free(full);
    }
    const bn_force_stats none = forces(ws, &g, p, bin, 4, 1);
    assert_same_forces(p, sentinel, inactive);
    assert_true(none.n_pp == 0 && none.n_pc == 0 && none.n_far == 0);
    free(active);
    free(inactive);
    free(bin);
    bn_particles_free(sentinel);
    bn_tree_workspace_free(ws);
    bn_particles_free(p);
}

/* ---- through the backend table ---- */

static void *backend_with(const bn_gravity_params *g, const bn_particles *p)
{
    void *st = NULL;
    TU_OK(bn_cpu_backend_ops.create(&st, g));
    TU_OK(bn_cpu_backend_ops.upload(st, p));
    return st;
}

static bn_particles *downloaded(void *st)
{
    bn_particles *q = NULL;
    TU_OK(bn_particles_create(&q, 0));
    TU_OK(bn_cpu_backend_ops.download(st, q));
    return q;
}

static bn_block_kick kick_params(int bin_min, int close, int open, int n_bins, double tick)
{
    bn_block_kick k;
    k.bin_min = bin_min;
    k.close = close;
    k.open = open;
    k.n_bins = n_bins;
    k.tick = tick;
    k.eta = 1;
    k.eps = 1;
    k.criterion = BN_STEP_ACCEL;
    return k;
}

#define NK 7
/* With eta = eps = 1, dt_i = |a_i|^-1/2 and K = 4 bins of a cycle of 1
 * (tick 1/8): |a| = 1 -> bin 0, 2 and 4 -> 1, 16 -> 2, 64 and more -> 3,
 * 0 -> the smallest allowed; half steps 1/2, 1/4, 1/8, 1/16. All exact. */
static const double kick_acc[NK][3] = {{1, 0, 0}, {0, 4, 0}, {0, 0, -16}, {64, 0, 0}, {0, 0, 0}, {2, 0, 0}, {1e6, 0, 0}};
static const int kick_bin[NK] = {0, 1, 2, 3, 0, 1, 3};

static bn_particles *kick_particles(void)
{
    bn_particles *p = NULL;
    TU_OK(bn_particles_create(&p, NK));
    TU_OK(bn_particles_ensure_forces(p));
    for (int i = 0; i < NK; i++) {
        for (int k = 0; k < 3; k++) {
            p->pos[k][i] = i + 0.25 * k;
            p->vel[k][i] = 0.5 * i - k;
            p->acc[k][i] = kick_acc[i][k];
        }
        p->mass[i] = 1;
        p->id[i] = (uint64_t)i + 1;
    }
    return p;
}

/* One kick; then every particle's velocity is its start plus `halves[i]`
 * of its bin's half steps 2^-(1 + kick_bin[i]) times a (0: untouched). */
static void kick_and_check(void *st, const bn_particles *p0, int bin_min, int close, int open, const int halves[NK],
                           int want_max, long want_n)
{
    const bn_block_kick k = kick_params(bin_min, close, open, 4, 0.125);
    int max_bin = -7;
    long n = -7;
    TU_OK(bn_cpu_backend_ops.block_kick(st, &k, &max_bin, &n));
    assert_int_equal(max_bin, want_max);
    assert_int_equal(n, want_n);
    bn_particles *q = downloaded(st);
    for (int i = 0; i < NK; i++)
        for (int c = 0; c < 3; c++) {
            const double want = p0->vel[c][i] + halves[i] * ldexp(0.5, -kick_bin[i]) * kick_acc[i][c];
            if (q->vel[c][i] != want) fail_msg("vel[%d][%d] = %.17g, expected %.17g", c, i, q->vel[c][i], want);
        }
    bn_particles_free(q);
}

/* A cycle of K = 4 by hand: opening kicks at its start, the finest bin
 * alone at tick 1, bins >= 2 at tick 2, the closing kicks at its end;
 * an upload puts every particle back in bin 0. */
static void test_block_kick(void **state)
{
    (void)state;
    bn_particles *p = kick_particles();
    const bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.5);
    void *st = backend_with(&g, p);
    kick_and_check(st, p, 0, 0, 1, (const int[NK]){1, 1, 1, 1, 1, 1, 1}, 3, NK);
    kick_and_check(st, p, 3, 1, 1, (const int[NK]){1, 1, 1, 3, 1, 1, 3}, 3, 2);
    kick_and_check(st, p, 2, 1, 1, (const int[NK]){1, 1, 3, 5, 1, 1, 5}, 3, 3);
    kick_and_check(st, p, 0, 1, 0, (const int[NK]){2, 2, 4, 6, 2, 2, 6}, 3, NK); /* bins kept */
    kick_and_check(st, p, 1, 1, 0, (const int[NK]){2, 3, 5, 7, 2, 3, 7}, 3, 5);
    TU_OK(bn_cpu_backend_ops.upload(st, p));
    kick_and_check(st, p, 1, 1, 1, (const int[NK]){0, 0, 0, 0, 0, 0, 0}, 0, 0); /* all in bin 0 */
    const bn_block_kick k = kick_params(0, 0, 1, 4, 0.125);
    TU_OK(bn_cpu_backend_ops.block_kick(st, &k, NULL, NULL)); /* no counts asked */
    kick_and_check(st, p, 0, 1, 0, (const int[NK]){2, 2, 2, 2, 2, 2, 2}, 3, NK);
    const bn_block_kick bad = kick_params(4, 1, 0, 4, 0.125);
    TU_FAILS(bn_cpu_backend_ops.block_kick(st, &bad, NULL, NULL), BN_ERR_ARGUMENT, "block kick");
    bn_cpu_backend_ops.destroy(st);
    bn_particles_free(p);
}

/* K = 1 is the shared step: the opening kick is kick(dt / 2) bit for bit
 * (the same rounding), on more particles than run in parallel. */
static void test_one_bin_is_shared_kick(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(6000, 41, 1);
    TU_OK(bn_particles_ensure_forces(p));
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) p->acc[k][i] = p->pos[(k + 1) % 3][i] * 3.7 - p->vel[k][i] / 3;
    const bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.5);
    void *a = backend_with(&g, p), *b = backend_with(&g, p);
    const double D = 0.0123;
    TU_OK(bn_cpu_backend_ops.kick(a, 0.5 * D));
    const bn_block_kick k = kick_params(0, 0, 1, 1, D);
    int max_bin = -1;
    long n = 0;
    TU_OK(bn_cpu_backend_ops.block_kick(b, &k, &max_bin, &n));
    assert_true(max_bin == 0 && n == (long)p->n);
    bn_particles *qa = downloaded(a), *qb = downloaded(b);
    for (size_t i = 0; i < p->n; i++)
        for (int c = 0; c < 3; c++) {
            assert_true(qa->vel[c][i] != p->vel[c][i] || p->acc[c][i] == 0);
            assert_true(qa->vel[c][i] == qb->vel[c][i]);
        }
    bn_particles_free(qa);
    bn_particles_free(qb);
    bn_cpu_backend_ops.destroy(a);
    bn_cpu_backend_ops.destroy(b);
    bn_particles_free(p);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double accel2(const bn_particles *p, size_t i)
{
    return p->acc[0][i] * p->acc[0][i] + p->acc[1][i] * p->acc[1][i] + p->acc[2][i] * p->acc[2][i];
}

/* A cycle of K = 4 bins, twice the median step eta sqrt(eps/|a|): the
 * particles with less than the median step are in bins >= 2. bin: those the
 * kick is to choose (the shared rule). */
static bn_block_kick spread_bins(const bn_particles *p, uint8_t *bin)
{
    double *dt = malloc(p->n * sizeof *dt);
    for (size_t i = 0; i < p->n; i++) dt[i] = sqrt(1e-3 / sqrt(accel2(p, i)));
    qsort(dt, p->n, sizeof *dt, cmp_double);
    bn_block_kick k = kick_params(0, 0, 1, 4, 2 * dt[p->n / 2] / 8);
    k.eps = 1e-3;
    free(dt);
    for (size_t i = 0; i < p->n; i++) bin[i] = (uint8_t)bn_time_bin(bn_time_step_wanted(&k, accel2(p, i), p->pot[i]), k.tick, 4, 0);
    return k;
}

/* Through the backend: the first forces_active builds a tree (there is
 * none); after the opening kicks and a drift, forces_active refreshes it
 * and gives the particles in bins >= 2 the forces of the same refresh
 * through a workspace, bit for bit, while the others keep theirs. */
static void test_backend_forces_active(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(20000, 51, 2);
    const bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.5);
    void *st = backend_with(&g, p);
    TU_OK(bn_cpu_backend_ops.forces_active(st, 0, 0));
    bn_particles *p0 = downloaded(st), *ref = copy_of(p0);
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    const bn_force_stats built = forces(ws, &g, ref, NULL, 0, 1);
    assert_same_forces(p0, ref, NULL);
    uint8_t *bin = malloc(p->n), *active = malloc(p->n), *inactive = malloc(p->n);
    const bn_block_kick k = spread_bins(p0, bin);
    int max_bin = -1;
    TU_OK(bn_cpu_backend_ops.block_kick(st, &k, &max_bin, NULL));
    TU_OK(bn_cpu_backend_ops.drift(st, 0.02));
    TU_OK(bn_cpu_backend_ops.forces_active(st, 2, 0));
    bn_particles *p1 = downloaded(st);
    bn_particles_free(ref);
    ref = copy_of(p1);
    fill_sentinel(ref);
    forces(ws, &g, ref, bin, 2, 0);
    size_t n_active = 0, changed = 0;
    for (size_t i = 0; i < p->n; i++) {
        active[i] = bin[i] >= 2;
        inactive[i] = !active[i];
        n_active += active[i];
        changed += active[i] && p1->acc[0][i] != p0->acc[0][i];
    }
    print_message("%zu of %zu active, max bin %d\n", n_active, p->n, max_bin);
    assert_true(n_active > p->n / 5 && n_active < 4 * p->n / 5 && changed == n_active);
    assert_int_equal(max_bin, 3);
    assert_same_forces(p1, ref, active);
    assert_same_forces(p1, p0, inactive);
    bn_force_stats last;
    TU_OK(bn_cpu_backend_ops.stats(st, &last));
    assert_true(last.n_nodes == built.n_nodes && last.t_sort == 0 && last.n_pp < built.n_pp);
    free(active);
    free(inactive);
    free(bin);
    bn_tree_workspace_free(ws);
    bn_particles_free(ref);
    bn_particles_free(p1);
    bn_particles_free(p0);
    bn_cpu_backend_ops.destroy(st);
    bn_particles_free(p);
}

/* An upload drops the tree (a refresh of the old particles' tree would
 * give other forces) and the bins; direct summation computes every
 * particle whatever the bins. */
static void test_backend_upload_and_direct(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(5000, 61, 2), *q = tu_random_particles(5000, 62, 1);
    bn_gravity_params g = tree_params(BN_MAC_BONSAI, 0.5);
    void *st = backend_with(&g, p);
    TU_OK(bn_cpu_backend_ops.forces(st, NULL));
    TU_OK(bn_cpu_backend_ops.upload(st, q));
    TU_OK(bn_cpu_backend_ops.forces_active(st, 0, 0));
    bn_particles *got = downloaded(st), *ref = copy_of(q);
    TU_OK(bn_particles_ensure_forces(ref));
    bn_tree_workspace *ws = NULL;
    TU_OK(bn_tree_workspace_create(&ws));
    TU_OK(bn_tree_forces_cpu(ws, &g, ref, NULL, ref->acc, ref->pot, NULL));
    assert_same_forces(got, ref, NULL);
    bn_cpu_backend_ops.destroy(st);
    g.method = BN_METHOD_DIRECT;
    st = backend_with(&g, q);
    TU_OK(bn_cpu_backend_ops.forces(st, NULL));
    bn_particles *all = downloaded(st);
    const bn_block_kick k = kick_params(0, 0, 1, 4, 0.5);
    TU_OK(bn_cpu_backend_ops.block_kick(st, &k, NULL, NULL));
    TU_OK(bn_cpu_backend_ops.forces_active(st, 3, 0));
    bn_particles_free(got);
    got = downloaded(st);
    assert_same_forces(got, all, NULL);
    bn_force_stats last;
    TU_OK(bn_cpu_backend_ops.stats(st, &last));
    assert_true(last.n_pp == 5000.0 * 4999.0);
    bn_cpu_backend_ops.destroy(st);
    bn_tree_workspace_free(ws);
    bn_particles_free(all);
    bn_particles_free(got);
    bn_particles_free(ref);
    bn_particles_free(q);
    bn_particles_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refresh_unmoved_is_build),
        cmocka_unit_test(test_built_groups_have_not_grown),
        cmocka_unit_test(test_scattered_refresh_is_refused),
        cmocka_unit_test(test_refresh_moved_bonsai),
        cmocka_unit_test(test_refresh_moved_bonsai_box),
        cmocka_unit_test(test_refresh_moved_accel),
        cmocka_unit_test(test_active_walk),
        cmocka_unit_test(test_block_kick),
        cmocka_unit_test(test_one_bin_is_shared_kick),
        cmocka_unit_test(test_backend_forces_active),
        cmocka_unit_test(test_backend_upload_and_direct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
