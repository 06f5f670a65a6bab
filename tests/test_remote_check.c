/* The host side of the GPU walk of a received tree (walk_remote.h), in
 * every build: the checks that a source is one the walk can take, the
 * bound on its stack, and the staged copy (the LET message's own layout).
 * The GPU walk itself: test_gpu_let. And the CPU's walk of a received
 * tree by boxes of groups (walk_cpu.c, the GPU's bn_gpu_box_far in
 * double) against its walk from the root and double direct summation. */
#include "testutil.h"
#include <math.h>
#include <omp.h>
#include <string.h>
#include "gravity/error_stats.h"
#include "gravity/interact.h"
#include "gravity/walk_remote.h"
#include "parallel/let.h"
#include "tree/tree_cpu.h"

/* A Plummer sphere's tree and its walk source. */
typedef struct src_tree {
    bn_particles *p;
    bn_tree t;
    bn_walk_cell *cells;
    bn_walk_source src;
} src_tree;

static void make_tree_with(src_tree *s, size_t n, uint64_t seed, double dx, bn_gravity_params g)
{
    memset(s, 0, sizeof *s);
    s->p = tu_random_particles(n, seed, 2);
    for (size_t i = 0; i < n; i++) s->p->pos[0][i] += dx;
    TU_OK(bn_tree_sort_bodies(&s->t, (const double *const *)s->p->pos, s->p->mass, n, g.curve, NULL, NULL, NULL));
    TU_OK(bn_tree_build(&s->t, g.leaf_size));
    bn_tree_moments(&s->t, g.mac, g.theta, g.quadrupole);
    TU_OK(bn_tree_groups(&s->t, g.group_size));
    s->cells = bn_walk_cells_alloc(s->t.n_nodes);
    assert_non_null(s->cells);
    bn_walk_pack_cells(&s->t, g.G, s->cells);
    const bn_tree *t = &s->t;
    s->src = (bn_walk_source){t->n_nodes, s->cells, t->quad, {t->pos[0], t->pos[1], t->pos[2]}, t->mass};
}

static void make_tree(src_tree *s, size_t n, uint64_t seed, double dx)
{
    make_tree_with(s, n, seed, dx, bn_gravity_params_default());
}

static void free_tree(src_tree *s)
{
    bn_tree_release(&s->t);
    free(s->cells);
    bn_particles_free(s->p);
}

/* An own tree and a LET of it pass, within the builder's bound of 148
 * cells of stack; the staged copy is the message's words after its two
 * counts. */
static void test_trees_pass(void **state)
{
    (void)state;
    src_tree a;
    make_tree(&a, 20000, 51, 0.0);
    bn_remote_shape sh;
    TU_OK(bn_remote_check(&a.src, &sh));
    assert_int_equal(sh.n_bodies, 20000);
    assert_true(sh.stack_need > 1 && sh.stack_need <= 148);
    const double box[BN_LET_BOX] = {3.0, -0.5, -0.5, 4.0, 0.5, 0.5, 0.0}; /* targets beside the sphere */
    bn_words msg = {0};
    TU_OK(bn_let_pack(&a.src, box, 1, BN_MAC_BONSAI, &msg));
    bn_let let;
    size_t used = 0;
    TU_OK(bn_let_unpack(msg.w, msg.n, &let, &used));
    TU_OK(bn_remote_check(&let.src, &sh));
    print_message("LET: %d cells, %d bodies, stack %d\n", sh.n_cells, sh.n_bodies, sh.stack_need);
    assert_int_equal((uint64_t)sh.n_bodies, msg.w[1]);
    assert_true(sh.n_bodies > 0 && sh.n_bodies < 20000);
    const size_t words = bn_remote_stage_words(&sh);
    assert_int_equal(words, msg.n - 2);
    uint64_t *staged = malloc(words * sizeof *staged);
    assert_non_null(staged);
    bn_remote_stage(&let.src, &sh, staged);
    assert_memory_equal(staged, msg.w + 2, words * sizeof *staged);
    free(staged);
    bn_let_free(&let);
    bn_words_free(&msg);
    free_tree(&a);
}

/* A chain of nodes of 8 children: a walk that opens everything needs
 * 1 + 7 depth cells; BN_REMOTE_STACK holds depth (STACK - 1) / 7. */
static bn_walk_cell *chain(int depth, double **quad, bn_walk_source *src)
{
    const int nc = 1 + 8 * depth;
    bn_walk_cell *c = bn_walk_cells_alloc(nc);
    *quad = calloc(6 * (size_t)nc, sizeof **quad);
    assert_true(c && *quad);
    memset(c, 0, (size_t)nc * sizeof *c);
    for (int i = 0; i < nc; i++) {
        c[i].mass = 1.0;
        c[i].r2 = 1.0;
    }
    for (int l = 0; l < depth; l++) {
        bn_walk_cell *node = c + (l == 0 ? 0 : 1 + 8 * (l - 1));
        node->first_child = 1 + 8 * l;
        node->n_children = 8;
    }
    *src = (bn_walk_source){nc, c, *quad, {NULL, NULL, NULL}, NULL};
    return c;
}

static void test_depth_bound(void **state)
{
    (void)state;
    const int ok = (BN_REMOTE_STACK - 1) / 7;
    double *q;
    bn_walk_source src;
    bn_remote_shape sh;
    bn_walk_cell *c = chain(ok, &q, &src);
    TU_OK(bn_remote_check(&src, &sh));
    assert_int_equal(sh.stack_need, 1 + 7 * ok);
    free(c);
    free(q);
    c = chain(ok + 1, &q, &src);
    TU_FAILS(bn_remote_check(&src, &sh), BN_ERR_ARGUMENT, "too deep");
    free(c);
    free(q);
}

/* Each malformed source is refused, naming the cell or body. */
static void test_malformed(void **state)
{
    (void)state;
    double *q;
    bn_walk_source src;
    bn_remote_shape sh;
    bn_walk_cell *c = chain(3, &q, &src);
    c[1].first_child = 1; /* a cycle: its own child */
    TU_FAILS(bn_remote_check(&src, &sh), BN_ERR_ARGUMENT, "cell 1's children");
    c[1].first_child = 9;
    c[9].n_children = 30; /* past the end */
    TU_FAILS(bn_remote_check(&src, &sh), BN_ERR_ARGUMENT, "cell 9's children");
    c[9].n_children = 7; /* the last cell has no parent */
    TU_FAILS(bn_remote_check(&src, &sh), BN_ERR_ARGUMENT, "1 of 25 cells have no parent");
    c[9].n_children = 8;
    c[4].n_bodies = -1;
    TU_FAILS(bn_remote_check(&src, &sh), BN_ERR_ARGUMENT, "cell 4 has 0 children and -1 bodies");
    c[4].n_bodies = 0;
    c[5].r2 = -1.0;
    c[5].gml2 = 2.0; /* closed, yet the accel test would open it */
    TU_FAILS(bn_remote_check(&src, &sh), BN_ERR_ARGUMENT, "cell 5 is closed");
    c[5].gml2 = 0.0;
    TU_OK(bn_remote_check(&src, &sh));
    q[6 * 7 + 2] = NAN;
    TU_FAILS(bn_remote_check(&src, &sh), BN_ERR_ARGUMENT, "cell 7 has a moment");
    q[6 * 7 + 2] = 0.0;
    double x[2] = {0, 0}, y[2] = {0, 0}, z[2] = {0, 0}, m[2] = {1, NAN};
    c[3].n_bodies = 2; /* a leaf with bodies, one of them NaN */
    src.pos[0] = x, src.pos[1] = y, src.pos[2] = z, src.mass = m;
    TU_FAILS(bn_remote_check(&src, &sh), BN_ERR_ARGUMENT, "body 1");
    m[1] = 1.0;
    TU_OK(bn_remote_check(&src, &sh));
    assert_int_equal(sh.n_bodies, 2);
    src.mass = NULL;
    TU_FAILS(bn_remote_check(&src, &sh), BN_ERR_ARGUMENT, "no positions or masses");
    free(c);
    free(q);
}

/* The received tree's field at a's bodies (key order, 4 per body, G
 * left out as the walk leaves it) by the CPU walk, with boxes of
 * `boxes` groups ("0": each group from the root); its counts and costs. */
static double *remote_walk(const src_tree *a, const src_tree *b, const bn_gravity_params *g, const double *acc_old,
                           const char *boxes, bn_force_stats *st, double *cost)
{
    double *out = calloc(4 * a->t.n, sizeof *out);
    assert_non_null(out);
    setenv("BANYAN_REMOTE_BOX_GROUPS", boxes, 1);
    memset(st, 0, sizeof *st);
    TU_OK(bn_tree_walk_remote_cpu(&a->t, &b->src, g, g->mac, acc_old, NULL, 0, out, st, cost));
    unsetenv("BANYAN_REMOTE_BOX_GROUPS");
    return out;
}

/* p50 and p99 of |da|/|a| against double direct summation of b's
 * particles at 500 of a's bodies (key order). */
static void remote_errors(const src_tree *a, const src_tree *b, const bn_gravity_params *g, const double *out,
                          double *p50, double *p99)
{
    enum { M = 500 };
    double e[M];
    const double e2 = g->softening * g->softening;
    for (size_t k = 0; k < M; k++) {
        const size_t j = (k * 2654435761u) % a->t.n;
        double d[3] = {0, 0, 0};
        for (size_t i = 0; i < b->p->n; i++) {
            const double x = b->p->pos[0][i] - a->t.pos[0][j], y = b->p->pos[1][i] - a->t.pos[1][j],
                         z = b->p->pos[2][i] - a->t.pos[2][j];
            const double r2 = x * x + y * y + z * z + e2, w = b->p->mass[i] / (r2 * sqrt(r2));
            d[0] += w * x, d[1] += w * y, d[2] += w * z;
        }
        const double *o = out + 4 * j;
        e[k] = sqrt((o[0] - d[0]) * (o[0] - d[0]) + (o[1] - d[1]) * (o[1] - d[1]) + (o[2] - d[2]) * (o[2] - d[2])) /
               sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    }
    qsort(e, M, sizeof *e, bn_cmp_double);
    *p50 = bn_percentile(e, M, 0.5);
    *p99 = bn_percentile(e, M, 0.99);
}

/* One case: the walk by boxes took another way than the walk from the
 * root (forces differ, fewer far cells are counted), its errors against
 * direct summation are the other's (p50 within a quarter, p99 within
 * twice or below the box expansion's (BN_WALK_BOX_RATIO kappa theta)^3,
 * test_gpu_let's bars), its costs hold its counts' flops and at most
 * two expansions' evaluations a body (its group's and its box's), and it gives
 * the same bits on 1 thread as on all. */
static void box_case(const char *what, size_t n, double dx, bn_gravity_params g)
{
    src_tree a, b;
    make_tree_with(&a, n, 61, 0.0, g);
    make_tree_with(&b, n, 62, dx, g);
    double *acc_old = malloc(n * sizeof *acc_old), *cost = calloc(n, sizeof *cost);
    assert_true(acc_old && cost);
    for (size_t i = 0; i < n; i++) acc_old[i] = 1.0 + 0.5 * (double)(i % 7); /* the accel MAC's |a_old| */
    bn_force_stats sp, sb, s1;
    double *plain = remote_walk(&a, &b, &g, acc_old, "0", &sp, NULL);
    double *box = remote_walk(&a, &b, &g, acc_old, "16", &sb, cost);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    double *one = remote_walk(&a, &b, &g, acc_old, "16", &s1, NULL);
    omp_set_num_threads(threads);
    assert_memory_equal(one, box, 4 * n * sizeof *box);
    size_t differ = 0;
    for (size_t i = 0; i < 4 * n; i++) differ += plain[i] != box[i];
    double b50, b99, p50, p99, total = 0;
    remote_errors(&a, &b, &g, box, &b50, &b99);
    remote_errors(&a, &b, &g, plain, &p50, &p99);
    for (size_t i = 0; i < n; i++) total += cost[i];
    const double kt = BN_WALK_BOX_RATIO * g.group_expansion * g.theta;
    print_message("%s: vs direct: boxes p50 %.2e p99 %.2e, from the root p50 %.2e p99 %.2e; far cells %.0f against "
                  "%.0f; %zu values differ\n", what, b50, b99, p50, p99, sb.n_far, sp.n_far, differ);
    assert_true(differ > 0 && sb.n_far < sp.n_far);
    assert_true(b50 <= 1.25 * p50 + 1e-9 && b99 <= fmax(2.0 * p99, kt * kt * kt) + 1e-9);
    const double lists = bn_walk_flops(sb.n_pp, sb.n_pc, sb.n_far, 0); /* at most 2 expansions a body: its group's, its box's */
    assert_true(total >= lists * (1 - 1e-12) && total <= (lists + 2.0 * BN_FLOPS_FAR_EVAL * n) * (1 + 1e-12));
    free(plain);
    free(box);
    free(one);
    free(acc_old);
    free(cost);
    free_tree(&a);
    free_tree(&b);
}

static bn_gravity_params walk_params(bn_mac mac, double theta, double eps, int group_size)
{
    bn_gravity_params g = bn_gravity_params_default();
    g.mac = mac;
    g.theta = theta;
    g.softening = eps;
    g.group_size = group_size;
    g.accel_alpha = 1e-3;
    return g;
}

static void test_box_far_cpu(void **state)
{
    (void)state;
    box_case("overlapping, bonsai", 20000, 0.5, walk_params(BN_MAC_BONSAI, 0.5, 1e-3, 64));
    box_case("side by side, accel", 20000, 1.0, walk_params(BN_MAC_ACCEL, 0.5, 1e-3, 64));
    box_case("100 units off, eps 0, groups <= 200", 20000, 100.0, walk_params(BN_MAC_BONSAI, 0.6, 0.0, 200));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trees_pass),
        cmocka_unit_test(test_depth_bound),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_box_far_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
