/* Tree forces over the ranks: see forces_dist.h. */
#include "parallel/forces_dist.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/timer.h"
#include "parallel/comm.h"
#include "parallel/let.h"
#include "tree/tree.h"

typedef struct {
    const bn_comm *c;
    const bn_gravity_params *g;
    size_t n;           /* local particles (acc_old's length) */
    bn_let_stats *let;
} dist_ctx;

/* Where this rank's targets lie (the union of its group boxes; empty
 * when it has none) and, for the accel criterion, alpha times their
 * smallest old |a|: what a sender judges its cells against. */
static void target_box(const bn_tree *t, const bn_gravity_params *g, bn_mac mac, const double *acc_old, size_t n,
                       double box[7])
{
    for (int k = 0; k < 3; k++) {
        box[k] = INFINITY;
        box[3 + k] = -INFINITY;
    }
    box[6] = 0;
    if (!t) return;
    for (int gi = 0; gi < t->n_groups; gi++)
        for (int k = 0; k < 3; k++) {
            box[k] = fmin(box[k], t->group_lo[3 * gi + k]);
            box[3 + k] = fmax(box[3 + k], t->group_hi[3 * gi + k]);
        }
    if (mac == BN_MAC_ACCEL) {
        double amin = INFINITY;
        for (size_t i = 0; i < n; i++) amin = fmin(amin, acc_old[i]);
        box[6] = g->accel_alpha * amin;
    }
}

/* Every other rank's LET of this rank's tree t, concatenated in rank
 * order; counts[d] words for rank d. */
static bn_status pack_all(const dist_ctx *x, const bn_tree *t, bn_mac mac, const double *boxes, uint64_t **send,
                          size_t *counts)
{
    const int P = bn_comm_size(x->c), me = bn_comm_rank(x->c);
    bn_words *msg = calloc((size_t)P, sizeof *msg);
    bn_walk_cell *cells = t ? bn_walk_cells_alloc(t->n_nodes) : NULL;
    bn_status s = msg && (cells || !t) ? BN_OK : bn_fail(BN_ERR_NOMEM, "locally essential trees: %d ranks", P);
    if (s == BN_OK && t) {
        bn_walk_pack_cells(t, x->g->G, cells);
        const bn_walk_source src = {t->n_nodes, cells, t->quad, {t->pos[0], t->pos[1], t->pos[2]}, t->mass};
        int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : failed)
        for (int d = 0; d < P; d++) {
            const double *b = boxes + 7 * d;
            if (d == me || !(b[0] <= b[3])) continue; /* itself, or a rank without targets */
            failed |= bn_let_pack(&src, b, b + 3, mac, b[6], msg + d) != BN_OK;
        }
        if (failed) s = bn_fail(BN_ERR_NOMEM, "locally essential trees: cannot pack the messages");
    }
    size_t total = 0;
    for (int d = 0; msg && d < P; d++) total += counts[d] = msg[d].n;
    *send = s == BN_OK ? malloc(total * sizeof **send + 1) : NULL;
    if (s == BN_OK && !*send) s = bn_fail(BN_ERR_NOMEM, "locally essential trees: %zu words to send", total);
    size_t at = 0;
    for (int d = 0; s == BN_OK && d < P; at += counts[d], d++)
        if (counts[d]) memcpy(*send + at, msg[d].w, counts[d] * sizeof **send);
    if (x->let && msg)
        for (int d = 0; d < P; d++)
            if (msg[d].n) {
                x->let->cells_sent += msg[d].w[0];
                x->let->bodies_sent += msg[d].w[1];
            }
    for (int d = 0; msg && d < P; d++) bn_words_free(msg + d);
    free(msg);
    free(cells);
    return s;
}

/* The received trees walked for this rank's targets, senders in rank
 * order (the same sums in the same order every time). */
static bn_status walk_received(const dist_ctx *x, const bn_tree *t, const uint64_t *in, const size_t *counts,
                               bn_mac mac, const double *acc_old, const uint8_t *bin, int bin_min, double *out,
                               bn_force_stats *stats)
{
    const int P = bn_comm_size(x->c);
    size_t at = 0;
    bn_status s = BN_OK;
    for (int r = 0; r < P && s == BN_OK; at += counts[r], r++) {
        if (counts[r] == 0) continue;
        bn_let let;
        size_t used = 0;
        s = bn_let_unpack(in + at, counts[r], &let, &used);
        if (s == BN_OK && used != counts[r])
            s = bn_fail(BN_ERR_INTERNAL, "locally essential tree from rank %d: %zu of %zu words", r, used, counts[r]);
        if (s == BN_OK && x->let) {
            x->let->cells_received += (size_t)let.src.n_cells;
            x->let->bodies_received += (size_t)in[at + 1];
        }
        if (s == BN_OK && t) s = bn_tree_walk_remote_cpu(t, &let.src, x->g, mac, acc_old, bin, bin_min, out, stats);
        bn_let_free(&let);
    }
    return s;
}

/* bn_tree_remote.add: agree, exchange the target boxes, the trees, walk. */
static bn_status add_remote(void *ctx, bn_status local, const bn_tree *t, bn_mac mac, const double *acc_old,
                            const uint8_t *bin, int bin_min, double *out, bn_force_stats *stats)
{
    const dist_ctx *x = ctx;
    BN_TRY(bn_comm_agree(x->c, local));
    const double t0 = bn_wall_seconds();
    double box[7];
    target_box(t, x->g, mac, acc_old, x->n, box);
    void *boxes = NULL, *in = NULL;
    size_t bytes = 0, n_in = 0;
    BN_TRY(bn_comm_allgather(x->c, box, sizeof box, &boxes, &bytes, NULL));
    const int P = bn_comm_size(x->c);
    size_t *counts = calloc(2 * (size_t)P, sizeof *counts);
    uint64_t *send = NULL;
    bn_status s = counts ? pack_all(x, t, mac, boxes, &send, counts) : BN_ERR_NOMEM;
    s = bn_comm_agree(x->c, s);
    if (s == BN_OK) s = bn_comm_alltoallv(x->c, send, counts, sizeof *send, &in, counts + P, &n_in);
    free(send);
    free(boxes);
    if (x->let) x->let->t_exchange += bn_wall_seconds() - t0;
    if (s == BN_OK) s = bn_comm_agree(x->c, walk_received(x, t, in, counts + P, mac, acc_old, bin, bin_min, out, stats));
    free(in);
    free(counts);
    return s;
}

bn_status bn_tree_forces_dist_cpu(bn_tree_workspace *ws, const bn_comm *c, const bn_gravity_params *g,
                                  const bn_particles *p, const double *acc_old, const uint8_t *bin, int bin_min,
                                  int rebuild, double *acc[3], double *pot, bn_force_stats *stats,
                                  bn_let_stats *let)
{
    if (let) memset(let, 0, sizeof *let);
    dist_ctx x = {c, g, p->n, let};
    const bn_tree_remote remote = {add_remote, &x};
    return bn_tree_forces_with_cpu(ws, g, p, acc_old, bin, bin_min, rebuild, bn_comm_size(c) > 1 ? &remote : NULL,
                                   acc, pot, stats);
}
