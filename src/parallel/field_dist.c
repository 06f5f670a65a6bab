/* The mesh solver across ranks (field_dist.h): replicated sources,
 * distributed targets. Every rank reads the whole mesh, so the tree over
 * the source cells, its moments and the near field's exact cubes (which
 * look up the source cell's block in the mesh) are the same on every rank
 * as in one process; only the target bricks are split, by whole leaf
 * blocks along the curve. A brick's walk depends on the tree and on the
 * brick alone, so every cell's value has the bits of one process's, and
 * the result of P ranks is that of one. */
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/timer.h"
#include "core/trace.h"
#include "mesh/field_internal.h"
#include "parallel/comm.h"
#include "parallel/field_dist.h"
#include "tree/keys.h"

typedef struct {
    uint64_t key;
    size_t index;
} block_key;

static int cmp_block_key(const void *a, const void *b)
{
    const block_key *x = a, *y = b;
    if (x->key != y->key) return (x->key > y->key) - (x->key < y->key);
    return (x->index > y->index) - (x->index < y->index);
}

bn_status bn_field_dist_blocks(const bn_mesh *m, int P, size_t *order, size_t *cut)
{
    const size_t n = m->n_blocks;
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (size_t b = 0; b < n; b++)
        for (int k = 0; k < 3; k++) {
            lo[k] = b ? (m->lo[3 * b + k] < lo[k] ? m->lo[3 * b + k] : lo[k]) : m->lo[3 * b + k];
            hi[k] = b ? (m->hi[3 * b + k] > hi[k] ? m->hi[3 * b + k] : hi[k]) : m->hi[3 * b + k];
        }
    double side = 0;
    for (int k = 0; k < 3; k++) side = hi[k] - lo[k] > side ? hi[k] - lo[k] : side;
    const double inv = side > 0 ? 1.0 / side : 0.0;
    block_key *k = bn_alloc_array(n ? n : 1, sizeof *k, "the blocks' keys");
    if (!k) return BN_ERR_NOMEM;
    for (size_t b = 0; b < n; b++) {
        uint32_t c[3];
        for (int a = 0; a < 3; a++)
            c[a] = bn_key_quantize(0.5 * (m->lo[3 * b + a] + m->hi[3 * b + a]), lo[a], inv);
        k[b] = (block_key){bn_key_hilbert(c[0], c[1], c[2]), b};
    }
    qsort(k, n, sizeof *k, cmp_block_key);
    for (size_t b = 0; b < n; b++) order[b] = k[b].index;
    free(k);
    /* every block holds the same cells: the cut at r C / P of the cells is
     * at r n / P of the blocks */
    for (int r = 0; r <= P; r++) cut[r] = n * (size_t)r / (size_t)P;
    return BN_OK;
}

/* The refusals across ranks, the same on every rank. */
static bn_status check_supported(const bn_field *f)
{
    const bn_field_params *p = bn_field_params_of(f);
    if (p->method == BN_FIELD_FFT)
        return bn_fail(BN_ERR_UNSUPPORTED, "the FFT solver (--method fft) runs in one process; across ranks use "
                       "--method tree (the default)");
    return BN_OK;
}

bn_status bn_field_mesh_dist(bn_field *f, const bn_comm *c, bn_mesh *m, const bn_particles *extra, int root,
                             bn_field_dist_stats *st)
{
    const int P = bn_comm_size(c), me = bn_comm_rank(c);
    bn_field_dist_stats local;
    memset(&local, 0, sizeof local);
    local.nranks = P;
    if (!f || !m) return bn_comm_agree(c, bn_fail(BN_ERR_ARGUMENT, "bn_field_mesh_dist: NULL argument"));
    if (root >= P)
        return bn_comm_agree(c, bn_fail(BN_ERR_ARGUMENT, "bn_field_mesh_dist: root %d of %d ranks", root, P));
    if (P == 1) {
        const double t0 = bn_wall_seconds();
        bn_status s = bn_field_mesh(f, m, extra);
        local.blocks = m->n_blocks;
        local.cells = bn_mesh_cells(m);
        local.cells_max = local.cells_mean = (double)local.cells;
        local.t_solve = local.t_solve_max = bn_wall_seconds() - t0;
        if (st) *st = local;
        return s;
    }
    BN_TRY(bn_comm_agree(c, check_supported(f)));
    /* the whole mesh checked on every rank (the same verdict everywhere;
     * the solve checks it again, with the source values) before its boxes
     * are keyed */
    double tr = bn_wall_seconds(); /* BANYAN_GRAVITY_TRACE=1: each part's time */
    BN_TRY(bn_comm_agree(c, bn_mesh_validate(m, "the mesh")));
    bn_trace_stage("mesh across ranks: validated", &tr);
    const bn_field_params *prm = bn_field_params_of(f);
    const size_t n = m->n_blocks, cells = bn_mesh_block_cells(m);
    const int nv = bn_field_mesh_values(prm);
    size_t *order = bn_alloc_array(n ? n : 1, sizeof *order, "the blocks' order");
    size_t *cut = bn_alloc_array((size_t)P + 1, sizeof *cut, "the ranks' blocks");
    bn_status s = order && cut ? BN_OK : BN_ERR_NOMEM;
    if (s == BN_OK) s = bn_field_dist_blocks(m, P, order, cut);
    double *mine = NULL;
    size_t nsel = 0;
    if (s == BN_OK) {
        nsel = cut[me + 1] - cut[me];
        mine = bn_alloc_array(nsel ? nsel * cells : 1, (size_t)nv * sizeof(double), "this rank's field values");
        if (!mine) s = BN_ERR_NOMEM;
    }
    s = bn_comm_agree(c, s);
    bn_trace_stage("mesh across ranks: blocks cut", &tr);
    const double t0 = bn_wall_seconds();
    if (s == BN_OK) s = bn_comm_agree(c, bn_field_mesh_blocks(f, m, extra, order + cut[me], nsel, mine));
    local.t_solve = bn_wall_seconds() - t0;
    bn_trace_stage("mesh across ranks: solved", &tr);
    /* every rank's values straight to their blocks in the mesh's new
     * variables (added first, where they arrive), the ranks' blocks in
     * the curve's order */
    const int gets = root < 0 || root == me; /* this rank's m takes the values */
    int var[6];
    double *dest[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    for (int k = 0; s == BN_OK && gets && k < nv; k++) s = bn_mesh_add_var(m, bn_field_mesh_var_name(prm, k), &var[k]);
    for (int k = 0; s == BN_OK && gets && k < nv; k++) dest[k] = m->var[var[k]];
    s = bn_comm_agree(c, s);
    const double t1 = bn_wall_seconds();
    if (s == BN_OK) s = bn_comm_gather_blocks(c, root < 0 ? -1 : root, mine, nsel, cells, nv, order, dest);
    local.t_gather = bn_wall_seconds() - t1;
    bn_trace_stage("mesh across ranks: gathered in place", &tr);
    s = bn_comm_agree(c, s);
    double red[3] = {(double)(nsel * cells), (double)(nsel * cells), local.t_solve};
    if (s == BN_OK) s = bn_comm_allreduce(c, red, 1, BN_REDUCE_SUM);
    if (s == BN_OK) s = bn_comm_allreduce(c, red + 1, 2, BN_REDUCE_MAX);
    local.blocks = nsel;
    local.cells = nsel * cells;
    local.cells_mean = red[0] / P;
    local.cells_max = red[1];
    local.t_solve_max = red[2];
    if (st) *st = local;
    free(mine);
    free(order);
    free(cut);
    return s;
}
