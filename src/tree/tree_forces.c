/* bn_tree_forces_cpu: the CPU tree code, stage by stage, with the stage
 * times and work counts in bn_force_stats. The tree and the walk's output
 * buffer live in the workspace and are reused between evaluations; with
 * block time steps (bn_tree_forces_active_cpu) the tree itself is too,
 * refreshed for the moved particles between rebuilds. */
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/timer.h"
#include "core/trace.h"
#include "gravity/gravity_cpu.h"
#include "gravity/walk_cpu.h"
#include "tree/refresh_guard.h"
#include "tree/refresh_lag.h"
#include "tree/tree_cpu.h"

struct bn_tree_workspace {
    bn_tree tree;
    double *out;      /* ax, ay, az, phi per sorted body */
    size_t out_capacity;
    double *cost;     /* the caller's: each body's walk flops added
                         (bn_tree_workspace_measure), or NULL          */
    double ahead;     /* the next block-step build's lead (bn_tree_workspace_ahead) */
};

void bn_tree_workspace_measure(bn_tree_workspace *ws, double *cost) { ws->cost = cost; }

void bn_tree_workspace_ahead(bn_tree_workspace *ws, double tau) { ws->ahead = tau; }

void bn_tree_workspace_align(bn_tree_workspace *ws, const double lo[3], double side)
{
    for (int k = 0; k < 3; k++) ws->tree.align_lo[k] = side > 0 ? lo[k] : 0.0;
    ws->tree.align_side = side > 0 ? side : 0.0;
}

bn_status bn_tree_workspace_create(bn_tree_workspace **out)
{
    *out = bn_calloc(1, sizeof **out, "tree workspace");
    return *out ? BN_OK : BN_ERR_NOMEM;
}

void bn_tree_workspace_free(bn_tree_workspace *ws)
{
    if (!ws) return;
    bn_tree_release(&ws->tree);
    free(ws->out);
    free(ws);
}

static bn_status reserve_out(bn_tree_workspace *ws, size_t n)
{
    if (n <= ws->out_capacity) return BN_OK;
    double *o = realloc(ws->out, 4 * n * sizeof *o);
    if (!o) return bn_fail(BN_ERR_NOMEM, "tree: cannot allocate the forces of %zu particles", n);
    ws->out = o;
    ws->out_capacity = n;
    return BN_OK;
}

/* Back to the original order, G applied once; with bin, only for the
 * active particles (the others keep their values). */
static void scatter(const bn_tree *t, const double *o, double G, const uint8_t *bin, int bin_min, double *acc[3],
                    double *pot)
{
    const long n = (long)t->n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        const uint32_t j = t->order[i];
        if (bin && bin[j] < bin_min) continue;
        for (int k = 0; k < 3; k++) acc[k][j] = G * o[4 * i + k];
        pot[j] = G * o[4 * i + 3];
    }
}

/* Stages 1-6 from scratch; their times into stats. */
static bn_status build(bn_tree *t, const bn_gravity_params *g, const bn_particles *p, bn_mac mac,
                       bn_force_stats *stats)
{
    BN_TRY(bn_tree_sort_bodies(t, (const double *const *)p->pos, p->mass, p->n, g->curve, &stats->t_bbox,
                               &stats->t_keys, &stats->t_sort));
    const double t1 = bn_wall_seconds();
    BN_TRY(bn_tree_build(t, g->leaf_size));
    const double t2 = bn_wall_seconds();
    bn_tree_moments(t, mac, g->theta, g->quadrupole);
    const double t3 = bn_wall_seconds();
    BN_TRY(bn_tree_groups(t, g->group_size));
    stats->t_build = t2 - t1;
    stats->t_moments = t3 - t2;
    stats->t_groups = bn_wall_seconds() - t3;
    return BN_OK;
}

/* The last build's tree for the moved particles: the whole refresh
 * (gather, moments, group boxes) counts as the moments stage. */
static bn_status refresh(bn_tree *t, const bn_gravity_params *g, const bn_particles *p, bn_mac mac,
                         bn_force_stats *stats)
{
    const double t0 = bn_wall_seconds();
    BN_TRY(bn_tree_refresh(t, (const double *const *)p->pos, mac, g->theta, g->quadrupole));
    stats->t_bbox = stats->t_keys = stats->t_sort = stats->t_build = stats->t_groups = 0;
    stats->t_moments = bn_wall_seconds() - t0;
    return BN_OK;
}

/* Whether t's groups have outgrown the cells they were built in
 * (tree/refresh_guard.h), their mean growth into *mean (traced as
 * `what`): a refresh's, or a build ahead's at x. */
static int groups_outgrown(const bn_tree *t, const char *what, double *mean)
{
    return bn_refresh_judge(bn_tree_group_growth(t), (double)t->n, what, mean);
}

/* A build ahead, refused as a refresh is (tree/refresh_guard.h): its
 * groups' boxes at x against the cells of the lead positions. Where
 * particles cross each other within tau (the core of a cold collapse)
 * those cells put far apart bodies together: a walk of 130 times a
 * fresh tree's (BENCHMARKS.md session 32). Then built again from x, both
 * builds' time in the build's stages. */
static bn_status lead_judged(bn_tree *t, const bn_gravity_params *g, const bn_particles *p, bn_mac mac,
                             bn_force_stats *stats)
{
    double mean = 0;
    if (!groups_outgrown(t, "build: lead groups' growth x1000", &mean)) return BN_OK;
    const double t_lead = stats->t_bbox + stats->t_keys + stats->t_sort + stats->t_build + stats->t_moments +
                          stats->t_groups;
    BN_TRY(build(t, g, p, mac, stats));
    stats->t_bbox += t_lead;
    stats->lead_refused = 1;
    return BN_OK;
}

/* A block-step build whose tree is refreshed later (tree/refresh_lag.h):
 * the structure from the positions x + tau v, then refreshed at x. */
static bn_status build_ahead(bn_tree *t, const bn_gravity_params *g, const bn_particles *p, double tau, bn_mac mac,
                             bn_force_stats *stats)
{
    if (tau == 0.0 || !p->vel[0]) return build(t, g, p, mac, stats);
    bn_particles q = *p; /* the caller's arrays but the positions: the lead's (24 bytes a particle) */
    const long n = (long)p->n;
    double *lead = bn_alloc_array(3 * (size_t)(n ? n : 1), sizeof *lead, "the build's lead positions");
    if (!lead) return BN_ERR_NOMEM;
    for (int k = 0; k < 3; k++) q.pos[k] = lead + (size_t)k * (size_t)n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) q.pos[k][i] = bn_refresh_lead(p->pos[k][i], p->vel[k][i], tau);
    bn_status s = build(t, g, &q, mac, stats);
    free(lead);
    BN_TRY(s);
    const double t0 = bn_wall_seconds();
    BN_TRY(bn_tree_refresh(t, (const double *const *)p->pos, mac, g->theta, g->quadrupole));
    stats->t_moments += bn_wall_seconds() - t0;
    return lead_judged(t, g, p, mac, stats);
}

/* The local tree, built or refreshed; a refresh whose groups have grown
 * too much since the build is refused and the tree built anew
 * (tree/refresh_guard.h), its time in the build's stages. */
static bn_status local_tree(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p, bn_mac mac,
                            int rebuild, bn_force_stats *stats)
{
    bn_tree *t = &ws->tree;
    BN_TRY(reserve_out(ws, p->n));
    if (rebuild || t->n_nodes == 0 || t->n != p->n) return build_ahead(t, g, p, ws->ahead, mac, stats);
    BN_TRY(refresh(t, g, p, mac, stats));
    if (!groups_outgrown(t, "refresh: groups' growth x1000", &stats->refresh_growth)) return BN_OK;
    const double t_refresh = stats->t_moments;
    BN_TRY(build_ahead(t, g, p, ws->ahead, mac, stats)); /* refresh_growth stays: why */
    stats->t_bbox += t_refresh;
    stats->refresh_refused = 1;
    return BN_OK;
}

static bn_status local_walk(bn_tree_workspace *ws, const bn_gravity_params *g, bn_mac mac, const double *acc_old,
                            const uint8_t *bin, int bin_min, bn_force_stats *stats)
{
    const double t4 = bn_wall_seconds();
    const bn_status s = bn_tree_walk_cpu(&ws->tree, g, mac, acc_old, bin, bin_min, ws->out, stats, ws->cost);
    stats->t_walk = bn_wall_seconds() - t4;
    return s;
}

bn_status bn_tree_forces_active_cpu(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p,
                                    const double *acc_old, const uint8_t *bin, int bin_min, int rebuild,
                                    double *acc[3], double *pot, bn_force_stats *stats)
{
    return bn_tree_forces_with_cpu(ws, g, p, acc_old, bin, bin_min, rebuild, NULL, acc, pot, stats);
}

bn_status bn_tree_forces_with_cpu(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p,
                                  const double *acc_old, const uint8_t *bin, int bin_min, int rebuild,
                                  const bn_tree_remote *remote, double *acc[3], double *pot, bn_force_stats *stats)
{
    if (!ws || !g || !p || (p->n && (!acc[0] || !acc[1] || !acc[2] || !pot)))
        return bn_fail(BN_ERR_ARGUMENT, "tree forces: NULL argument");
    if (p->n == 0 && !remote) return bn_fail(BN_ERR_ARGUMENT, "tree: no particles");
    bn_force_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    /* the accel criterion needs old accelerations: without them (first
     * evaluation) the tree is opened by the bonsai criterion */
    const bn_mac mac = (g->mac == BN_MAC_ACCEL && !acc_old) ? BN_MAC_BONSAI : g->mac;
    bn_tree *t = &ws->tree;
    const double t0 = bn_wall_seconds();
    bn_status s = p->n ? local_tree(ws, g, p, mac, rebuild, stats) : BN_OK;
    /* other ranks' trees: every rank takes part, also after a local
     * failure; they travel while this rank walks its own */
    if (remote && remote->begin) BN_TRY(remote->begin(remote->ctx, s, p->n ? t : NULL, mac, acc_old));
    if (s == BN_OK && p->n) s = local_walk(ws, g, mac, acc_old, bin, bin_min, stats);
    if (remote) {
        const double t6 = bn_wall_seconds();
        s = remote->add(remote->ctx, s, p->n && s == BN_OK ? t : NULL, mac, acc_old, bin, bin_min, ws->out, stats,
                        ws->cost);
        stats->t_walk += bn_wall_seconds() - t6;
    }
    BN_TRY(s);
    if (p->n) scatter(t, ws->out, g->G, bin, bin_min, acc, pot);
    const double t5 = bn_wall_seconds();
    stats->t_total = t5 - t0;
    if (p->n) { /* a rank without particles has no tree this time */
        stats->n_nodes = t->n_nodes;
        stats->n_leaves = t->n_leaves;
        stats->n_groups = t->n_groups;
        stats->depth = t->n_levels - 1;
    }
    stats->device_bytes_peak = 0;
    stats->backend = "cpu";
    return BN_OK;
}

bn_status bn_tree_forces_cpu(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p,
                             const double *acc_old, double *acc[3], double *pot, bn_force_stats *stats)
{
    return bn_tree_forces_active_cpu(ws, g, p, acc_old, NULL, 0, 1, acc, pot, stats);
}

bn_status bn_tree_workspace_save(const bn_tree_workspace *ws, size_t n_particles, void **bytes, size_t *size)
{
    *bytes = NULL;
    *size = 0;
    const bn_tree *t = &ws->tree;
    if (t->n_nodes == 0 || t->n != n_particles) return BN_OK;
    const size_t n = t->n, total = sizeof(bn_saved_tree) + n * (sizeof *t->keys + sizeof *t->order);
    unsigned char *b = bn_alloc(total, "the saved tree");
    if (!b) return BN_ERR_NOMEM;
    bn_saved_tree h;
    memset(&h, 0, sizeof h);
    h.n = (int64_t)n;
    h.curve = t->curve;
    memcpy(h.box_lo, t->box_lo, sizeof h.box_lo);
    h.box_size = t->box_size;
    memcpy(b, &h, sizeof h);
    memcpy(b + sizeof h, t->keys, n * sizeof *t->keys);
    memcpy(b + sizeof h + n * sizeof *t->keys, t->order, n * sizeof *t->order);
    *bytes = b;
    *size = total;
    return BN_OK;
}

bn_status bn_tree_workspace_load(bn_tree_workspace *ws, const void *bytes, size_t size, const bn_gravity_params *g,
                                 const bn_particles *p)
{
    bn_saved_tree h;
    const uint64_t *keys = NULL;
    const uint32_t *order = NULL;
    BN_TRY(bn_tree_saved_parse(bytes, size, p->n, g->curve, &h, &keys, &order));
    bn_tree *t = &ws->tree;
    t->n_nodes = 0; /* no half tree: on a failure the next evaluation builds */
    BN_TRY(bn_tree_reserve_bodies(t, p->n));
    BN_TRY(reserve_out(ws, p->n));
    bn_tree_restore_bodies(t, &h, keys, order, (const double *const *)p->pos, p->mass);
    bn_status s = bn_tree_build(t, g->leaf_size);
    if (s == BN_OK) bn_tree_moments(t, g->mac, g->theta, g->quadrupole); /* the cells' geometry, from the keys */
    if (s == BN_OK) s = bn_tree_groups(t, g->group_size); /* moments and boxes: the next refresh's */
    if (s != BN_OK) t->n_nodes = 0;
    return s;
}
