/*
 * The CPU tree walk: Bonsai's breadth-first walk per group (paper 003 sec.
 * 4.2.2), written the way the GPU runs it so that the GPU walk mirrors it
 * one to one. For each group (OpenMP, dynamic schedule: groups differ in
 * cost), starting from the root:
 *   for every cell of the current list: d2 = squared distance from the
 *   group's box to the cell's centre of mass; the MAC (interact.h)
 *   accepts it -> particle-cell list; opens a leaf -> its bodies go to the
 *   particle-particle list; opens a node -> its children (contiguous) go
 *   to the next list. Then next becomes current, until it is empty.
 * The two lists are structure-of-arrays tiles of TILE sources, evaluated
 * against all targets of the group whenever full (and at the end), so
 * they stay in L1/L2 and the inner loops vectorise (walk_kernels_cpu.c).
 * The group's own bodies are always in its particle-particle list (its
 * box is at distance 0 from every cell holding them); the self term
 * (-m/eps in phi, zero force) is removed at the end.
 */
#include <math.h>
#include <stdlib.h>
#include "core/error.h"
#include "gravity/interact.h"
#include "gravity/walk_cpu.h"
#include "gravity/walk_remote.h"

/* Sources per tile: 10 arrays of doubles for cells = 20 KiB, fits L1. */
#define TILE 256

typedef struct walk_scratch {
    int32_t *cur, *next;           /* cell lists of the breadth-first walk */
    double *pp[4];                 /* x, y, z, m of particle sources       */
    double *pc[10];                /* x, y, z, m, Qxx..Qyz of cell sources */
    double *acc[4];                /* ax, ay, az, phi of the group targets */
    double *fc[10];                /* x, y, z, m, Qxx..Qyz of far cells    */
    double *ft[BN_LOCAL_TERMS];    /* their expansion terms, per cell      */
    int npp, npc, nfc;
    double count_pp, count_pc, count_far;
    double count_visit;            /* cells the traversal took          */
    double local[BN_LOCAL_TERMS];  /* the group's far-field expansion, in
                                      BN_LOCAL_FIELDS order               */
    int32_t *front;                /* a box's frontier (received trees)   */
} walk_scratch;

static void scratch_free(walk_scratch *s)
{
    free(s->cur);
    free(s->next);
    free(s->front);
    for (int k = 0; k < 4; k++) free(s->pp[k]);
    for (int k = 0; k < 10; k++) free(s->pc[k]);
    for (int k = 0; k < 10; k++) free(s->fc[k]);
    for (int k = 0; k < BN_LOCAL_TERMS; k++) free(s->ft[k]);
    for (int k = 0; k < 4; k++) free(s->acc[k]);
}

static int scratch_alloc(walk_scratch *s, int n_nodes, int max_group)
{
    int ok = (s->cur = malloc((size_t)n_nodes * sizeof(int32_t))) != NULL;
    ok &= (s->next = malloc((size_t)n_nodes * sizeof(int32_t))) != NULL;
    ok &= (s->front = malloc((size_t)n_nodes * sizeof(int32_t))) != NULL;
    for (int k = 0; k < 4; k++) ok &= (s->pp[k] = malloc(TILE * sizeof(double))) != NULL;
    for (int k = 0; k < 10; k++) ok &= (s->pc[k] = malloc(TILE * sizeof(double))) != NULL;
    for (int k = 0; k < 10; k++) ok &= (s->fc[k] = malloc(TILE * sizeof(double))) != NULL;
    for (int k = 0; k < BN_LOCAL_TERMS; k++) ok &= (s->ft[k] = malloc(TILE * sizeof(double))) != NULL;
    for (int k = 0; k < 4; k++) ok &= (s->acc[k] = malloc((size_t)max_group * sizeof(double))) != NULL;
    return ok;
}

/* The group being walked: its targets (sorted arrays) and MAC inputs. */
typedef struct walk_group {
    int first, count;
    double lo[3], hi[3];
    double centre[3];  /* of the box: the far-field expansion centre   */
    double far_r2;     /* cells with com farther than this (squared)
                          from the centre act through the expansion    */
    double alpha_amin; /* accel MAC: alpha * min |a_old| of the group */
} walk_group;

static void flush_pp(const bn_tree *t, const walk_group *g, double eps2, walk_scratch *s)
{
    if (s->npp == 0) return;
    const int f = g->first;
    bn_walk_pp_tile(g->count, t->pos[0] + f, t->pos[1] + f, t->pos[2] + f, s->npp, s->pp[0], s->pp[1], s->pp[2],
                    s->pp[3], eps2, s->acc[0], s->acc[1], s->acc[2], s->acc[3]);
    s->count_pp += (double)g->count * s->npp;
    s->npp = 0;
}

static void flush_pc(const bn_tree *t, const walk_group *g, double eps2, walk_scratch *s)
{
    if (s->npc == 0) return;
    const int f = g->first;
    const double *const q[6] = {s->pc[4], s->pc[5], s->pc[6], s->pc[7], s->pc[8], s->pc[9]};
    bn_walk_pc_tile(g->count, t->pos[0] + f, t->pos[1] + f, t->pos[2] + f, s->npc, s->pc[0], s->pc[1], s->pc[2],
                    s->pc[3], q, eps2, s->acc[0], s->acc[1], s->acc[2], s->acc[3]);
    s->count_pc += (double)g->count * s->npc;
    s->npc = 0;
}

/* Far cells: their field joins the group's expansion (walk_kernels_cpu.c). */
static void flush_far(const walk_group *g, double eps2, walk_scratch *s)
{
    if (s->nfc == 0) return;
    bn_walk_far_tile(s->nfc, (const double *const *)s->fc, g->centre, eps2, s->ft, s->local);
    s->count_far += s->nfc;
    s->nfc = 0;
}

/* Column j of a cell tile: com, mass, quadrupole of cell c. */
static void store_cell(double *const col[10], int j, const bn_walk_source *src, int c)
{
    const bn_walk_cell *cell = src->cells + c;
    for (int k = 0; k < 3; k++) col[k][j] = cell->com[k];
    col[3][j] = cell->mass;
    for (int k = 0; k < 6; k++) col[4 + k][j] = src->quad[6 * c + k];
}

static void push_far(const bn_walk_source *src, int c, const walk_group *g, double eps2, walk_scratch *s)
{
    store_cell(s->fc, s->nfc, src, c);
    if (++s->nfc == TILE) flush_far(g, eps2, s);
}

static int is_far(const bn_walk_cell *cell, const walk_group *g)
{
    const double dx = cell->com[0] - g->centre[0], dy = cell->com[1] - g->centre[1], dz = cell->com[2] - g->centre[2];
    return dx * dx + dy * dy + dz * dz > g->far_r2;
}

static void push_cell(const bn_tree *t, const bn_walk_source *src, int c, const walk_group *g, double eps2,
                      walk_scratch *s)
{
    store_cell(s->pc, s->npc, src, c);
    if (++s->npc == TILE) flush_pc(t, g, eps2, s);
}

static void push_bodies(const bn_tree *t, const bn_walk_source *src, const bn_walk_cell *cell, const walk_group *g,
                        double eps2, walk_scratch *s)
{
    int b = cell->first_body;
    const int e = b + cell->n_bodies;
    while (b < e) {
        const int take = e - b < TILE - s->npp ? e - b : TILE - s->npp;
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < take; i++) s->pp[k][s->npp + i] = src->pos[k][b + i];
        for (int i = 0; i < take; i++) s->pp[3][s->npp + i] = src->mass[b + i];
        s->npp += take;
        b += take;
        if (s->npp == TILE) flush_pp(t, g, eps2, s);
    }
}

int bn_walk_opens(const bn_walk_cell *cell, const double lo[3], const double hi[3], bn_mac mac, double alpha_amin)
{
    const double *cm = cell->com;
    const double d2 = bn_box_dist2_d(cm[0], cm[1], cm[2], lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
    if (mac != BN_MAC_ACCEL) return bn_mac_geometric_open_d(d2, cell->r2);
    return bn_mac_accel_open_d(d2, cell->r2, cell->gml2, alpha_amin);
}

/* Does the group open cell c? (interact.h: the same test the GPU makes) */
static int opens(const bn_walk_cell *cell, const walk_group *g, bn_mac mac)
{
    return bn_walk_opens(cell, g->lo, g->hi, mac, g->alpha_amin);
}

/* The group's walk from the root, or (start) from a box's frontier. */
static void walk_group_cells(const bn_tree *t, const bn_walk_source *src, const walk_group *g, bn_mac mac,
                             double eps2, const int32_t *start, int n_start, walk_scratch *s)
{
    const bn_walk_cell *cells = src->cells;
    int ncur = 1, nnext;
    s->cur[0] = 0;
    if (start) {
        for (int i = 0; i < n_start; i++) s->cur[i] = start[i];
        ncur = n_start;
    }
    while (ncur > 0) {
        nnext = 0;
        s->count_visit += ncur;
        for (int i = 0; i < ncur; i++) {
            const int c = s->cur[i];
            const bn_walk_cell *cell = cells + c;
            if (!opens(cell, g, mac)) {
                if (is_far(cell, g)) push_far(src, c, g, eps2, s);
                else push_cell(t, src, c, g, eps2, s);
            }
            else if (cell->n_children == 0) push_bodies(t, src, cell, g, eps2, s);
            else
                for (int j = 0; j < cell->n_children; j++) s->next[nnext++] = cell->first_child + j;
        }
        int32_t *tmp = s->cur;
        s->cur = s->next;
        s->next = tmp;
        ncur = nnext;
    }
    flush_pp(t, g, eps2, s);
    flush_pc(t, g, eps2, s);
    flush_far(g, eps2, s);
}

static void setup_group(const bn_tree *t, int gi, const bn_gravity_params *gp, bn_mac mac, const double *acc_old,
                        walk_group *g)
{
    g->first = t->group_first[gi];
    g->count = t->group_count[gi];
    for (int k = 0; k < 3; k++) {
        g->lo[k] = t->group_lo[3 * gi + k];
        g->hi[k] = t->group_hi[3 * gi + k];
    }
    double r2 = 0;
    for (int k = 0; k < 3; k++) {
        g->centre[k] = 0.5 * (g->lo[k] + g->hi[k]);
        r2 += 0.25 * (g->hi[k] - g->lo[k]) * (g->hi[k] - g->lo[k]);
    }
    const double kt = gp->group_expansion * gp->theta;
    g->far_r2 = kt > 0 ? r2 / (kt * kt) : INFINITY;
    g->alpha_amin = 0;
    if (mac == BN_MAC_ACCEL) {
        double amin = INFINITY;
        for (int b = g->first; b < g->first + g->count; b++) amin = fmin(amin, acc_old[t->order[b]]);
        g->alpha_amin = gp->accel_alpha * amin;
    }
}

/* The expansion terms (BN_LOCAL_FIELDS order) about centre at each of
 * g's targets. */
static void add_expansion(const bn_tree *t, const walk_group *g, const double *terms, const double centre[3],
                          walk_scratch *s)
{
    bn_local_d L;
    int k = 0;
#define LOAD_TERM(f) L.f = terms[k++];
    BN_LOCAL_FIELDS(LOAD_TERM)
#undef LOAD_TERM
    for (int i = 0; i < g->count; i++) {
        const int b = g->first + i;
        bn_local_eval_d(&L, t->pos[0][b] - centre[0], t->pos[1][b] - centre[1], t->pos[2][b] - centre[2],
                        &s->acc[0][i], &s->acc[1][i], &s->acc[2][i], &s->acc[3][i]);
    }
}

/* ---- the received trees' far field per box of groups: walk_gpu.h's
 * bn_gpu_box_far, in double. A box (BN_WALK_BOX_GROUPS consecutive
 * groups) walks src once: the cells every group accepts (the MAC at the
 * box's nearest point, the groups' smallest alpha |a_old|) beyond its
 * far distance (interact.h's BN_WALK_BOX_RATIO) go into its expansion,
 * the nodes every group opens (the farthest point, the largest alpha)
 * are opened, the rest is its frontier; each group walks from there and
 * adds the box's expansion. ---- */
typedef struct walk_box {
    walk_group g;         /* the box's bounds, centre, far distance; alpha_amin the groups' smallest;
                             first, count unused (its groups need not be one body range) */
    double alpha_max;     /* the groups' largest alpha |a_old|                    */
    const int *groups;    /* its groups: groups[0 .. n_groups)                    */
    int n_groups, bodies;
    int n_front;          /* its frontier: the scratch's front[0 .. n_front)     */
    int has_far;          /* a cell went into its expansion                       */
    double local[BN_LOCAL_TERMS];
} walk_box;

static int opens_at(const bn_walk_cell *cell, double d2, bn_mac mac, double alpha_amin)
{
    if (mac != BN_MAC_ACCEL) return bn_mac_geometric_open_d(d2, cell->r2);
    return bn_mac_accel_open_d(d2, cell->r2, cell->gml2, alpha_amin);
}

static void setup_box(const bn_tree *t, const int *groups, int n_groups, const bn_gravity_params *gp, bn_mac mac,
                      const double *acc_old, walk_box *b)
{
    walk_group one;
    b->groups = groups;
    b->n_groups = n_groups;
    b->bodies = 0;
    b->alpha_max = 0;
    b->g.alpha_amin = INFINITY;
    for (int k = 0; k < 3; k++) b->g.lo[k] = INFINITY, b->g.hi[k] = -INFINITY;
    for (int j = 0; j < n_groups; j++) {
        setup_group(t, groups[j], gp, mac, acc_old, &one);
        b->bodies += one.count;
        for (int k = 0; k < 3; k++) b->g.lo[k] = fmin(b->g.lo[k], one.lo[k]), b->g.hi[k] = fmax(b->g.hi[k], one.hi[k]);
        b->g.alpha_amin = fmin(b->g.alpha_amin, one.alpha_amin);
        b->alpha_max = fmax(b->alpha_max, one.alpha_amin);
    }
    b->g.first = b->g.count = 0;
    double r2 = 0;
    for (int k = 0; k < 3; k++) {
        b->g.centre[k] = 0.5 * (b->g.lo[k] + b->g.hi[k]);
        r2 += 0.25 * (b->g.hi[k] - b->g.lo[k]) * (b->g.hi[k] - b->g.lo[k]);
    }
    const double kt = BN_WALK_BOX_RATIO * gp->group_expansion * gp->theta;
    b->g.far_r2 = r2 / (kt * kt);
}

static void walk_box_cells(const bn_walk_source *src, walk_box *b, bn_mac mac, double eps2, walk_scratch *s)
{
    int ncur = 1;
    s->cur[0] = 0;
    b->n_front = 0;
    const double far_before = s->count_far + s->nfc;
    for (int k = 0; k < BN_LOCAL_TERMS; k++) s->local[k] = 0;
    while (ncur > 0) {
        int nnext = 0;
        s->count_visit += ncur;
        for (int i = 0; i < ncur; i++) {
            const int c = s->cur[i];
            const bn_walk_cell *cell = src->cells + c;
            const double *cm = cell->com, *lo = b->g.lo, *hi = b->g.hi;
            const int accepted = !opens_at(cell, bn_box_dist2_d(cm[0], cm[1], cm[2], lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]),
                                           mac, b->g.alpha_amin);
            double far2 = 0; /* to the box's farthest point */
            for (int k = 0; k < 3; k++) {
                const double e = fabs(cm[k] - b->g.centre[k]) + 0.5 * (hi[k] - lo[k]);
                far2 += e * e;
            }
            if (accepted && is_far(cell, &b->g)) push_far(src, c, &b->g, eps2, s);
            else if (!accepted && cell->n_children > 0 && opens_at(cell, far2, mac, b->alpha_max))
                for (int j = 0; j < cell->n_children; j++) s->next[nnext++] = cell->first_child + j;
            else s->front[b->n_front++] = c;
        }
        int32_t *tmp = s->cur;
        s->cur = s->next;
        s->next = tmp;
        ncur = nnext;
    }
    flush_far(&b->g, eps2, s);
    b->has_far = s->count_far > far_before;
    for (int k = 0; k < BN_LOCAL_TERMS; k++) b->local[k] = s->local[k];
}

/* Walk one group of t over the source src. self: src is t's own tree:
 * write the targets' results with the self term removed; otherwise add
 * them (a remote tree's field). */
static void walk_one(const bn_tree *t, const bn_walk_source *src, int self, int gi, const bn_gravity_params *gp,
                     bn_mac mac, const double *acc_old, const walk_box *box, double *out, walk_scratch *s)
{
    walk_group g;
    setup_group(t, gi, gp, mac, acc_old, &g);
    const double eps2 = gp->softening * gp->softening;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < g.count; i++) s->acc[k][i] = 0;
    for (int k = 0; k < BN_LOCAL_TERMS; k++) s->local[k] = 0;
    walk_group_cells(t, src, &g, mac, eps2, box ? s->front : NULL, box ? box->n_front : 0, s);
    add_expansion(t, &g, s->local, g.centre, s);
    if (box) add_expansion(t, &g, box->local, box->g.centre, s);
    const double self_phi = self && eps2 > 0 ? 1.0 / sqrt(eps2) : 0.0; /* bn_pp_d's 1/r at r = 0 */
    for (int i = 0; i < g.count; i++) {
        double *o = out + 4 * (size_t)(g.first + i);
        if (self) {
            for (int k = 0; k < 3; k++) o[k] = s->acc[k][i];
            o[3] = s->acc[3][i] + t->mass[g.first + i] * self_phi;
        } else {
            for (int k = 0; k < 4; k++) o[k] += s->acc[k][i];
        }
    }
    if (self) s->count_pp -= g.count; /* the self pairs */
}

void bn_walk_pack_cells(const bn_tree *t, double G, bn_walk_cell *cells)
{
#pragma omp parallel for schedule(static)
    for (int c = 0; c < t->n_nodes; c++) {
        bn_walk_cell *w = cells + c;
        for (int k = 0; k < 3; k++) w->com[k] = t->com[3 * c + k];
        w->r2 = t->open_radius[c] * t->open_radius[c];
        const double l = bn_mac_cell_side(BN_MAC_ACCEL, t->size[c], t->body_lo + 3 * c, t->body_hi + 3 * c);
        w->gml2 = G * t->mass_node[c] * l * l;
        w->mass = t->mass_node[c];
        w->first_child = t->first_child[c];
        w->n_children = t->n_children[c];
        w->first_body = t->first_body[c];
        w->n_bodies = t->n_bodies[c];
    }
}

/* Block time steps: a group is walked when one of its bodies is active
 * (the walk is per group; its inactive bodies' results are then computed
 * too, and dropped by the caller). */
static int group_active(const bn_tree *t, int gi, const uint8_t *bin, int bin_min)
{
    if (!bin) return 1;
    const int f = t->group_first[gi], e = f + t->group_count[gi];
    for (int b = f; b < e; b++)
        if (bin[t->order[b]] >= bin_min) return 1;
    return 0;
}

/* The flops of a group's walk (the counts it added to s since *before,
 * which it then takes) shared equally by its bodies' cost (original
 * order): a group is walked as one, so its bodies cost alike. */
static void charge_group(const bn_tree *t, int gi, const walk_scratch *s, double before[3], double *cost)
{
    const int f = t->group_first[gi], n = t->group_count[gi];
    const double flops = bn_walk_flops(s->count_pp - before[0], s->count_pc - before[1], s->count_far - before[2], n);
    for (int b = f; b < f + n; b++) cost[t->order[b]] += flops / n;
    before[0] = s->count_pp;
    before[1] = s->count_pc;
    before[2] = s->count_far;
}

/* The box of groups[0 .. n) (neighbours in body order): its pass, then
 * each group over src from its frontier; its far cells' flops (and their
 * expansion's evaluation at each body) shared by its bodies' costs, then
 * each group's own as charge_group. */
static void walk_box_groups(const bn_tree *t, const bn_walk_source *src, const int *groups, int n,
                            const bn_gravity_params *g, bn_mac mac, const double *acc_old, double *out, double *cost,
                            double before[3], walk_scratch *s)
{
    walk_box box;
    setup_box(t, groups, n, g, mac, acc_old, &box);
    walk_box_cells(src, &box, mac, g->softening * g->softening, s);
    if (cost && box.bodies > 0) {
        const double share = (BN_FLOPS_FAR * (s->count_far - before[2]) + (box.has_far ? BN_FLOPS_FAR_EVAL : 0) * box.bodies) /
                             box.bodies;
        for (int j = 0; j < n; j++)
            for (int b = t->group_first[groups[j]]; b < t->group_first[groups[j]] + t->group_count[groups[j]]; b++)
                cost[t->order[b]] += share;
        before[2] = s->count_far;
    }
    for (int j = 0; j < n; j++) {
        walk_one(t, src, 0, groups[j], g, mac, acc_old, &box, out, s);
        if (cost) charge_group(t, groups[j], s, before, cost);
    }
}

/* The groups in body order (the GPU's order, whose boxes are runs of
 * neighbours): the CPU's builder lists them node by node. */
typedef struct first_group {
    int first, group;
} first_group;

static int by_first_body(const void *x, const void *y)
{
    const int a = ((const first_group *)x)->first, b = ((const first_group *)y)->first;
    return (a > b) - (a < b);
}

static int *groups_by_body(const bn_tree *t)
{
    const size_t n = (size_t)(t->n_groups > 0 ? t->n_groups : 1);
    first_group *pairs = malloc(n * sizeof *pairs);
    int *order = malloc(n * sizeof *order);
    if (pairs && order) {
        for (int i = 0; i < t->n_groups; i++) pairs[i] = (first_group){t->group_first[i], i};
        qsort(pairs, (size_t)t->n_groups, sizeof *pairs, by_first_body);
        for (int i = 0; i < t->n_groups; i++) order[i] = pairs[i].group;
    } else {
        free(order);
        order = NULL;
    }
    free(pairs);
    return order;
}

/* Every (active) group of t over src: see walk_cpu.h. */
static bn_status walk_groups(const bn_tree *t, const bn_walk_source *src, int self, const bn_gravity_params *g,
                             bn_mac mac, const double *acc_old, const uint8_t *bin, int bin_min, double *out,
                             bn_force_stats *stats, double *cost)
{
    if (mac == BN_MAC_ACCEL && !acc_old)
        return bn_fail(BN_ERR_INTERNAL, "tree walk: the accel criterion needs old accelerations");
    int max_group = 1;
    for (int i = 0; i < t->n_groups; i++) max_group = t->group_count[i] > max_group ? t->group_count[i] : max_group;
    int failed = 0;
    double cpp = 0, cpc = 0, cfar = 0, cvisit = 0;
    /* a received tree, every group walked, the group expansion on: by boxes */
    const int per_box = !self && !bin && g->group_expansion * g->theta > 0 ? bn_remote_box_groups() : 0;
    const int n_boxes = per_box > 0 ? (t->n_groups + per_box - 1) / per_box : 0;
    int *by_body = per_box > 0 ? groups_by_body(t) : NULL;
    if (per_box > 0 && !by_body) return bn_fail(BN_ERR_NOMEM, "tree walk: cannot allocate the groups' order");
#pragma omp parallel reduction(+ : cpp, cpc, cfar, cvisit) reduction(| : failed)
    {
        walk_scratch s = {0};
        double before[3] = {0, 0, 0};
        if (!scratch_alloc(&s, src->n_cells, max_group)) failed = 1;
        if (per_box > 0) {
#pragma omp for schedule(dynamic, 1)
            for (int bi = 0; bi < n_boxes; bi++)
                if (!failed) {
                    const int g0 = bi * per_box, n = g0 + per_box < t->n_groups ? per_box : t->n_groups - g0;
                    walk_box_groups(t, src, by_body + g0, n, g, mac, acc_old, out, cost, before, &s);
                }
        } else {
#pragma omp for schedule(dynamic, 4)
            for (int gi = 0; gi < t->n_groups; gi++)
                if (!failed && group_active(t, gi, bin, bin_min)) {
                    walk_one(t, src, self, gi, g, mac, acc_old, NULL, out, &s);
                    if (cost) charge_group(t, gi, &s, before, cost);
                }
        }
        cpp += s.count_pp;
        cpc += s.count_pc;
        cfar += s.count_far;
        cvisit += s.count_visit;
        scratch_free(&s);
    }
    free(by_body);
    if (failed) return bn_fail(BN_ERR_NOMEM, "tree walk: cannot allocate the interaction lists");
    if (stats) {
        stats->n_pp = self ? cpp : stats->n_pp + cpp;
        stats->n_pc = self ? cpc : stats->n_pc + cpc;
        stats->n_far = self ? cfar : stats->n_far + cfar;
        stats->n_visit = self ? cvisit : stats->n_visit + cvisit;
    }
    return BN_OK;
}

bn_walk_cell *bn_walk_cells_alloc(int n)
{
    return aligned_alloc(64, ((size_t)(n > 0 ? n : 1) * sizeof(bn_walk_cell) + 63) / 64 * 64);
}

bn_status bn_tree_walk_cpu(const bn_tree *t, const bn_gravity_params *g, bn_mac mac, const double *acc_old,
                           const uint8_t *bin, int bin_min, double *out, bn_force_stats *stats, double *cost)
{
    bn_walk_cell *cells = bn_walk_cells_alloc(t->n_nodes);
    if (!cells) return bn_fail(BN_ERR_NOMEM, "tree walk: cannot allocate %d cells", t->n_nodes);
    bn_walk_pack_cells(t, g->G, cells);
    const bn_walk_source src = {t->n_nodes, cells, t->quad, {t->pos[0], t->pos[1], t->pos[2]}, t->mass};
    const bn_status s = walk_groups(t, &src, 1, g, mac, acc_old, bin, bin_min, out, stats, cost);
    free(cells);
    return s;
}

bn_status bn_tree_walk_remote_cpu(const bn_tree *t, const bn_walk_source *src, const bn_gravity_params *g, bn_mac mac,
                                  const double *acc_old, const uint8_t *bin, int bin_min, double *out,
                                  bn_force_stats *stats, double *cost)
{
    return walk_groups(t, src, 0, g, mac, acc_old, bin, bin_min, out, stats, cost);
}
