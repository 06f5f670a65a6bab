/* Tree forces over the ranks: see forces_dist.h. */
#include "parallel/forces_dist.h"
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/backend.h"
#include "core/error.h"
#include "core/timer.h"
#include "core/trace.h"
#include "parallel/comm.h"
#include "parallel/let.h"
#include "tree/tree.h"

typedef struct {
    const bn_comm *c;
    const bn_gravity_params *g;
    bn_let_stats *let;
    struct bn_let_pending *pending; /* begun, not yet finished */
} dist_ctx;

/* This rank's target boxes: the bodies' boxes of the shallowest nodes
 * with at most bn_let_box_bodies(n, group_size) bodies (or leaves). Such a
 * node holds whole groups (a group is the shallowest node with at most
 * group_size bodies), and the nodes stay compact in space, unlike runs
 * of groups along the curve (an outer group spans half the system).
 * With the accel criterion, alpha times the node's smallest |a_old|. */
static bn_status target_boxes(const bn_tree *t, const bn_gravity_params *g, bn_mac mac, const double *acc_old,
                              double **out, size_t *nbox)
{
    *out = NULL;
    *nbox = 0;
    if (!t || t->n_nodes == 0) return BN_OK;
    const int thr = bn_let_box_bodies((size_t)t->n, g->group_size);
    int32_t *stack = bn_alloc_array((size_t)t->n_nodes, sizeof *stack, "target boxes");
    double *box = bn_alloc_array((size_t)t->n_nodes * BN_LET_BOX, sizeof *box, "target boxes");
    if (!stack || !box) {
        free(stack);
        free(box);
        return BN_ERR_NOMEM;
    }
    size_t nb = 0;
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const int v = stack[--top];
        if (t->n_bodies[v] > thr && t->n_children[v] > 0) {
            for (int k = t->n_children[v] - 1; k >= 0; k--) stack[top++] = t->first_child[v] + k;
            continue;
        }
        double *x = box + BN_LET_BOX * nb++;
        for (int k = 0; k < 3; k++) {
            x[k] = t->body_lo[3 * v + k];
            x[3 + k] = t->body_hi[3 * v + k];
        }
        double amin = INFINITY;
        for (int b = t->first_body[v]; mac == BN_MAC_ACCEL && b < t->first_body[v] + t->n_bodies[v]; b++)
            amin = fmin(amin, acc_old[t->order[b]]);
        x[6] = mac == BN_MAC_ACCEL ? g->accel_alpha * amin : 0.0;
    }
    free(stack);
    *out = box;
    *nbox = nb;
    return BN_OK;
}

/* Every other rank's LET of this rank's tree, concatenated in rank
 * order; counts[d] words for rank d. */
static bn_status pack_all(const dist_ctx *x, const bn_let_packer *pk, const double *boxes, const size_t *box_count,
                          uint64_t **send, size_t *counts)
{
    const int P = bn_comm_size(x->c), me = bn_comm_rank(x->c);
    bn_words *msg = bn_calloc((size_t)P, sizeof *msg, "locally essential trees");
    size_t *first_box = bn_alloc_array((size_t)P, sizeof *first_box, "locally essential trees");
    for (int d = 0; first_box && d < P; d++) first_box[d] = d ? first_box[d - 1] + box_count[d - 1] : 0;
    bn_status s = msg && first_box ? BN_OK : BN_ERR_NOMEM;
    bn_status *got = s == BN_OK && pk ? bn_calloc((size_t)P, sizeof *got, "locally essential trees") : NULL;
    if (s == BN_OK && pk && !got) s = BN_ERR_NOMEM;
    if (s == BN_OK && pk) {
        int failed = 0; /* one at a time: the first failure stops (its message is then the last) */
#pragma omp parallel for schedule(dynamic, 1) if (pk->concurrent)
        for (int d = 0; d < P; d++) {
            if (d == me || box_count[d] == 0 || (!pk->concurrent && failed)) continue; /* itself, no targets */
            got[d] = pk->pack(pk->ctx, boxes + BN_LET_BOX * first_box[d], (int)box_count[d], msg + d);
            if (!pk->concurrent && got[d] != BN_OK) failed = 1;
        }
        for (int d = 0; d < P && s == BN_OK; d++) /* the first failure in rank order; its message was its thread's */
            if (got[d] != BN_OK)
                s = pk->concurrent ? bn_fail(got[d], "locally essential tree for rank %d: cannot pack it", d)
                                   : bn_fail_context(got[d], "the locally essential tree for rank %d", d);
    }
    free(got);
    size_t total = 0;
    for (int d = 0; msg && d < P; d++) total += counts[d] = msg[d].n;
    *send = s == BN_OK ? bn_alloc_array(total, sizeof **send, "locally essential trees to send") : NULL;
    if (s == BN_OK && !*send) s = BN_ERR_NOMEM;
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
    free(first_box);
    return s;
}

/* The host tree's packer: its cells packed once, then one LET per
 * receiver (concurrently: the tree is only read). */
typedef struct host_packer {
    const bn_tree *t;
    const bn_gravity_params *g;
    bn_mac mac;
    const double *acc_old;
    bn_walk_cell *cells;
    bn_walk_source src;
} host_packer;

static bn_status host_boxes(void *ctx, double **box, size_t *n)
{
    const host_packer *h = ctx;
    return target_boxes(h->t, h->g, h->mac, h->acc_old, box, n);
}

static bn_status host_pack(void *ctx, const double *boxes, int n, bn_words *msg)
{
    const host_packer *h = ctx;
    return bn_let_pack(&h->src, boxes, n, h->mac, msg);
}

/* The received words as one tree per sender (n_cells 0 for none), each
 * checked to take exactly its sender's words. */
static bn_status unpack_all(const dist_ctx *x, const uint64_t *in, const size_t *counts, bn_let *lets)
{
    const int P = bn_comm_size(x->c);
    size_t at = 0;
    for (int r = 0; r < P; at += counts[r], r++) {
        if (counts[r] == 0) continue;
        size_t used = 0;
        BN_TRY(bn_let_unpack(in + at, counts[r], lets + r, &used));
        if (used != counts[r])
            return bn_fail(BN_ERR_INTERNAL, "locally essential tree from rank %d: %zu of %zu words", r, used,
                           counts[r]);
        if (x->let) {
            x->let->cells_received += (size_t)lets[r].src.n_cells;
            x->let->bodies_received += (size_t)in[at + 1];
        }
    }
    return BN_OK;
}

void bn_lets_free(bn_let *lets, int n)
{
    for (int r = 0; lets && r < n; r++) bn_let_free(lets + r);
    free(lets);
}

struct bn_let_pending {
    bn_comm_pending *x;
    size_t *counts; /* words out, in, boxes: P each */
};

static void let_pending_free(bn_let_pending *p)
{
    if (!p) return;
    free(p->counts);
    free(p);
}

bn_status bn_let_exchange_start_with(const bn_comm *c, const bn_let_packer *pk, bn_let_pending **out,
                                     bn_let_stats *let)
{
    *out = NULL;
    const dist_ctx cx = {c, NULL, let, NULL}, *x = &cx;
    const double t0 = bn_wall_seconds();
    const int P = bn_comm_size(c);
    double *box = NULL;
    size_t nbox = 0, n_box = 0;
    void *boxes = NULL;
    bn_let_pending *p = bn_calloc(1, sizeof *p, "pending exchange");
    size_t *counts = p ? bn_calloc(3 * (size_t)P, sizeof *counts, "exchange counts") : NULL;
    if (p) p->counts = counts;
    double t = t0;
    bn_status s = !counts ? BN_ERR_NOMEM : pk ? pk->boxes(pk->ctx, &box, &nbox) : BN_OK;
    bn_trace_stage("exchange: target boxes", &t);
    /* a box is BN_LET_BOX doubles: gathered as one record each */
    if ((s = bn_comm_agree(c, s)) == BN_OK)
        s = bn_comm_gather(c, -1, box, nbox, BN_LET_BOX * sizeof *box, &boxes, &n_box, counts + 2 * P);
    free(box);
    bn_trace_stage("exchange: boxes gathered", &t);
    uint64_t *send = NULL;
    if (s == BN_OK) s = bn_comm_agree(c, pack_all(x, pk, boxes, counts + 2 * P, &send, counts));
    free(boxes);
    bn_trace_stage("exchange: trees packed", &t);
    if (s == BN_OK) s = bn_comm_alltoallv_start(c, send, counts, sizeof *send, counts + P, &p->x); /* owns send */
    else free(send);
    bn_trace_stage("exchange: sends started", &t);
    if (let) let->t_exchange += bn_wall_seconds() - t0;
    if (s != BN_OK) {
        let_pending_free(p);
        return s;
    }
    *out = p;
    return BN_OK;
}

bn_status bn_let_exchange_start(const bn_comm *c, const bn_gravity_params *g, const bn_tree *t, bn_mac mac,
                                const double *acc_old, bn_let_pending **out, bn_let_stats *let)
{
    host_packer h = {t, g, mac, acc_old, NULL, {0}};
    if (t) {
        h.cells = bn_walk_cells_alloc(t->n_nodes);
        if (h.cells) bn_walk_pack_cells(t, g->G, h.cells);
        h.src = (bn_walk_source){t->n_nodes, h.cells, t->quad, {t->pos[0], t->pos[1], t->pos[2]}, t->mass};
    }
    const bn_let_packer pk = {host_boxes, host_pack, 1, &h};
    bn_status s = bn_comm_agree(c, t && !h.cells ? bn_fail(BN_ERR_NOMEM, "locally essential trees: %d cells",
                                                          t->n_nodes)
                                                 : BN_OK);
    if (s == BN_OK) s = bn_let_exchange_start_with(c, t ? &pk : NULL, out, let);
    free(h.cells);
    return s;
}

bn_status bn_let_exchange_finish(const bn_comm *c, bn_let_pending *p, bn_let **lets_out, bn_let_stats *let)
{
    *lets_out = NULL;
    if (!p) return bn_fail(BN_ERR_INTERNAL, "no pending exchange of locally essential trees");
    const double t0 = bn_wall_seconds();
    const int P = bn_comm_size(c);
    const dist_ctx cx = {c, NULL, let, NULL};
    void *in = NULL;
    size_t n_in = 0;
    double t = t0;
    bn_status s = bn_comm_alltoallv_wait(c, p->x, &in, &n_in);
    bn_trace_stage("exchange: trees received", &t);
    bn_let *lets = bn_calloc((size_t)P, sizeof *lets, "received trees");
    if (s == BN_OK) s = bn_comm_agree(c, lets ? unpack_all(&cx, in, p->counts + P, lets) : BN_ERR_NOMEM);
    bn_trace_stage("exchange: trees unpacked", &t);
    if (let) let->t_exchange += bn_wall_seconds() - t0;
    free(in);
    let_pending_free(p);
    if (s != BN_OK) {
        bn_lets_free(lets, P);
        return s;
    }
    *lets_out = lets;
    return BN_OK;
}

bn_status bn_let_exchange(const bn_comm *c, const bn_gravity_params *g, const bn_tree *t, bn_mac mac,
                          const double *acc_old, bn_let **lets, bn_let_stats *let)
{
    bn_let_pending *p = NULL;
    BN_TRY(bn_let_exchange_start(c, g, t, mac, acc_old, &p, let));
    return bn_let_exchange_finish(c, p, lets, let);
}

/* bn_tree_remote.begin, after this rank's tree is made: the local status
 * agreed, then the exchange started, to travel while the local tree is
 * walked. */
static bn_status begin_remote(void *ctx, bn_status local, const bn_tree *t, bn_mac mac, const double *acc_old)
{
    dist_ctx *x = ctx;
    BN_TRY(bn_comm_agree(x->c, local));
    return bn_let_exchange_start(x->c, x->g, t, mac, acc_old, &x->pending, x->let);
}

/* bn_tree_remote.add, after the local walk: the exchange finished (every
 * rank waits for it, whatever its walk did), the walk's status agreed,
 * the received trees walked for this rank's targets, senders in rank
 * order (the same sums in the same order every time). */
static bn_status add_remote(void *ctx, bn_status local, const bn_tree *t, bn_mac mac, const double *acc_old,
                            const uint8_t *bin, int bin_min, double *out, bn_force_stats *stats, double *cost)
{
    dist_ctx *x = ctx;
    bn_let *lets = NULL;
    const double t0 = bn_wall_seconds();
    bn_status s = bn_let_exchange_finish(x->c, x->pending, &lets, x->let); /* agreed */
    x->pending = NULL;
    if (s == BN_OK) s = bn_comm_agree(x->c, local);
    const int P = bn_comm_size(x->c);
    const double t1 = bn_wall_seconds();
    for (int r = 0; s == BN_OK && t && r < P; r++)
        if (lets[r].src.n_cells > 0)
            s = bn_tree_walk_remote_cpu(t, &lets[r].src, x->g, mac, acc_old, bin, bin_min, out, stats, cost);
    bn_lets_free(lets, P);
    const double t2 = bn_wall_seconds();
    s = bn_comm_agree(x->c, s);
    if (x->let) x->let->t_wait += (t1 - t0) + (bn_wall_seconds() - t2);
    return s;
}

bn_status bn_tree_forces_dist_cpu(bn_tree_workspace *ws, const bn_comm *c, const bn_gravity_params *g,
                                  const bn_particles *p, const double *acc_old, const uint8_t *bin, int bin_min,
                                  int rebuild, double *acc[3], double *pot, bn_force_stats *stats,
                                  bn_let_stats *let)
{
    if (let) memset(let, 0, sizeof *let);
    dist_ctx x = {c, g, let, NULL};
    const bn_tree_remote remote = {begin_remote, add_remote, &x};
    return bn_tree_forces_with_cpu(ws, g, p, acc_old, bin, bin_min, rebuild, bn_comm_size(c) > 1 ? &remote : NULL,
                                   acc, pot, stats);
}

bn_status bn_gather_sources(const bn_comm *c, const bn_particles *p, bn_particles **all, size_t *first)
{
    const int P = bn_comm_size(c), me = bn_comm_rank(c);
    double *mine = bn_alloc_array(4 * p->n, sizeof *mine, "sources to gather");
    size_t *counts = bn_alloc_array((size_t)P, sizeof *counts, "gather counts");
    bn_status s = bn_comm_agree(c, mine && counts ? BN_OK : BN_ERR_NOMEM);
    for (size_t i = 0; s == BN_OK && i < p->n; i++) {
        for (int k = 0; k < 3; k++) mine[4 * i + k] = p->pos[k][i];
        mine[4 * i + 3] = p->mass[i];
    }
    void *got = NULL;
    size_t n = 0; /* x, y, z, m: one record per particle */
    if (s == BN_OK) s = bn_comm_gather(c, -1, mine, p->n, 4 * sizeof *mine, &got, &n, counts);
    *first = 0;
    for (int r = 0; s == BN_OK && r < me; r++) *first += counts[r];
    if (s == BN_OK) s = bn_comm_agree(c, bn_particles_create(all, n));
    const double *g = got;
    for (size_t i = 0; s == BN_OK && i < n; i++) {
        for (int k = 0; k < 3; k++) (*all)->pos[k][i] = g[4 * i + k];
        (*all)->mass[i] = g[4 * i + 3];
        (*all)->id[i] = i;
    }
    if (s != BN_OK) {
        bn_particles_free(*all);
        *all = NULL;
    }
    free(got);
    free(mine);
    free(counts);
    return s;
}

bn_status bn_direct_forces_dist_cpu(const bn_comm *c, const bn_particles *p, double G, double eps, double *acc[3],
                                    double *pot, bn_force_stats *stats)
{
    bn_particles *all = NULL;
    size_t first = 0;
    BN_TRY(bn_gather_sources(c, p, &all, &first)); /* agreed */
    size_t *idx = bn_alloc_array(p->n, sizeof *idx, "direct targets");
    double *a = bn_alloc_array(4 * p->n, sizeof *a, "direct forces");
    bn_status s = idx && a ? BN_OK : BN_ERR_NOMEM;
    for (size_t i = 0; s == BN_OK && i < p->n; i++) idx[i] = first + i;
    if (s == BN_OK && p->n) s = bn_direct_reference(all, G, eps, idx, p->n, a, a + 3 * p->n);
    for (size_t i = 0; s == BN_OK && i < p->n; i++) {
        for (int k = 0; k < 3; k++) acc[k][i] = a[3 * i + k];
        pot[i] = a[3 * p->n + i];
    }
    if (s == BN_OK && stats) stats->n_pp = (double)p->n * (double)(all->n - 1);
    bn_particles_free(all);
    free(idx);
    free(a);
    return bn_comm_agree(c, s);
}

/* Every rank's particle count: *first this rank's first global index (in
 * rank order), *total every rank's. */
static bn_status global_range(const bn_comm *c, size_t n, size_t *first, size_t *total)
{
    const int P = bn_comm_size(c), me = bn_comm_rank(c);
    const uint64_t mine = n;
    void *got = NULL;
    size_t count = 0;
    BN_TRY(bn_comm_gather(c, -1, &mine, 1, sizeof mine, &got, &count, NULL)); /* agreed */
    const uint64_t *all = got;
    *first = *total = 0;
    for (int r = 0; r < P; r++) {
        if (r < me) *first += (size_t)all[r];
        *total += (size_t)all[r];
    }
    free(got);
    return BN_OK;
}

/* A sample target's record: position, then the tree's force (ax, ay, az,
 * phi), then the owner's local index (a double: exact below 2^53). */
#define SAMPLE_REC 8

/* This rank's targets of the global sample (seed, n of total; this rank
 * holds global indices [first, first + p->n)), in sample order, as
 * records; *mine their number. */
static bn_status own_targets(const bn_particles *p, size_t first, size_t total, size_t n, uint64_t seed,
                             double **rec, size_t *mine)
{
    *mine = 0;
    *rec = bn_alloc_array(SAMPLE_REC * (n + 1), sizeof **rec, "error sample records");
    if (!*rec) return BN_ERR_NOMEM;
    for (size_t j = 0; j < n; j++) {
        const size_t gi = bn_sample_target(seed, j, n, total);
        if (gi < first || gi >= first + p->n) continue;
        const size_t i = gi - first;
        double *r = *rec + SAMPLE_REC * (*mine)++;
        for (int k = 0; k < 3; k++) {
            r[k] = p->pos[k][i];
            r[3 + k] = p->acc[k][i];
        }
        r[6] = p->pot[i];
        r[7] = (double)i;
    }
    return BN_OK;
}

/* This rank's contribution to the reference at every gathered target
 * (its own target's particle left out), then the sum over the ranks in
 * rank order: the same bits on every rank. */
static bn_status sample_reference(const bn_comm *c, const bn_particles *p, double G, double eps, const double *rec,
                                  size_t n, size_t first_mine, size_t n_mine, double *acc_ref, double *pot_ref)
{
    double *x = bn_alloc_array(3 * n + 1, sizeof *x, "error sample positions");
    size_t *skip = bn_alloc_array(n + 1, sizeof *skip, "error sample positions");
    double *sum = bn_alloc_array(4 * n + 1, sizeof *sum, "error sample reference");
    bn_status s = bn_comm_agree(c, x && skip && sum ? BN_OK : BN_ERR_NOMEM);
    for (size_t j = 0; s == BN_OK && j < n; j++) {
        for (int k = 0; k < 3; k++) x[3 * j + k] = rec[SAMPLE_REC * j + k];
        const int own = j >= first_mine && j < first_mine + n_mine;
        skip[j] = own ? (size_t)rec[SAMPLE_REC * j + 7] : SIZE_MAX;
    }
    if (s == BN_OK) s = bn_comm_agree(c, bn_direct_at_points(p, G, eps, x, skip, n, sum, sum + 3 * n));
    /* one allreduce of 4n values (n is a few hundred): exact sums of
     * every rank's particles, taken in rank order */
    if (s == BN_OK && n > INT_MAX / 4) s = bn_fail(BN_ERR_ARGUMENT, "error sample: %zu targets", n);
    if (s == BN_OK) s = bn_comm_allreduce(c, sum, (int)(4 * n), BN_REDUCE_SUM);
    if (s == BN_OK) {
        memcpy(acc_ref, sum, 3 * n * sizeof *sum);
        memcpy(pot_ref, sum + 3 * n, n * sizeof *sum);
    }
    free(x);
    free(skip);
    free(sum);
    return s;
}

bn_status bn_sample_forces_dist_cpu(const bn_comm *c, const bn_particles *p, double G, double eps, size_t n,
                                    uint64_t seed, double *acc_ref, double *pot_ref, double *acc, double *pot)
{
    const int P = bn_comm_size(c), me = bn_comm_rank(c);
    size_t first = 0, total = 0, mine = 0, got_n = 0;
    BN_TRY(global_range(c, p->n, &first, &total));
    if (n == 0 || n > total) /* the same on every rank */
        return bn_fail(BN_ERR_ARGUMENT, "error sample: %zu targets of %zu particles over %d ranks", n, total, P);
    double *rec = NULL;
    void *got = NULL;
    size_t *counts = bn_alloc_array((size_t)P, sizeof *counts, "error sample counts");
    bn_status s = bn_comm_agree(c, counts ? own_targets(p, first, total, n, seed, &rec, &mine) : BN_ERR_NOMEM);
    /* targets in sample order: each rank's are a run of it, in rank order */
    if (s == BN_OK) s = bn_comm_gather(c, -1, rec, mine, SAMPLE_REC * sizeof *rec, &got, &got_n, counts);
    if (s == BN_OK && got_n != n)
        s = bn_fail(BN_ERR_INTERNAL, "error sample: %zu targets gathered of %zu", got_n, n); /* the same everywhere */
    size_t first_mine = 0;
    for (int r = 0; s == BN_OK && r < me; r++) first_mine += counts[r];
    const double *g = got;
    if (s == BN_OK) s = sample_reference(c, p, G, eps, g, n, first_mine, mine, acc_ref, pot_ref);
    for (size_t j = 0; s == BN_OK && j < n; j++) {
        for (int k = 0; k < 3; k++) acc[3 * j + k] = g[SAMPLE_REC * j + 3 + k];
        pot[j] = g[SAMPLE_REC * j + 6];
    }
    free(rec);
    free(got);
    free(counts);
    return s;
}
