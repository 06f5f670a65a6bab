/* The host side of the GPU walk of a received tree (walk_remote.h), in
 * every build: the checks that a source is one the walk can take, the
 * bound on its stack, and the staged copy (the LET message's own layout).
 * The walk itself: test_gpu_let. */
#include "testutil.h"
#include <string.h>
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

static void make_tree(src_tree *s, size_t n, uint64_t seed, double dx)
{
    memset(s, 0, sizeof *s);
    const bn_gravity_params g = bn_gravity_params_default();
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trees_pass),
        cmocka_unit_test(test_depth_bound),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
