/* A source tree for the GPU walk, host side: see walk_remote.h. */
#include "gravity/walk_remote.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "gravity/interact.h"

_Static_assert(sizeof(bn_walk_cell) == 64, "a cell is staged as 8 words");

/* The links of cell i: the breadth-first shape (let.c's), body ranges
 * that fit an int; *next is the first cell no parent has claimed yet. */
static bn_status check_links(const bn_walk_cell *c, int i, int n_cells, int *next, int *n_bodies)
{
    if (c->n_children < 0 || c->n_bodies < 0 || c->first_body < 0)
        return bn_fail(BN_ERR_ARGUMENT, "source tree: cell %d has %d children and %d bodies from %d", i,
                       (int)c->n_children, (int)c->n_bodies, (int)c->first_body);
    if ((int64_t)c->first_body + c->n_bodies > INT_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "source tree: cell %d's bodies end past 2^31", i);
    if (c->n_children == 0) {
        if (c->first_body + c->n_bodies > *n_bodies) *n_bodies = c->first_body + c->n_bodies;
        return BN_OK;
    }
    if (c->first_child != *next || (int64_t)*next + c->n_children > n_cells)
        return bn_fail(BN_ERR_ARGUMENT,
                       "source tree: cell %d's children [%d, %d) are not the next unclaimed cells (%d of %d)", i,
                       (int)c->first_child, (int)(c->first_child + c->n_children), *next, n_cells);
    *next += c->n_children;
    return BN_OK;
}

/* Moments the float walk can take: finite, and a cell sent closed
 * (r2 < 0) that no criterion can open (gml2 = 0: the accel test opens
 * where gml2 > alpha |a| d^4). */
static bn_status check_moments(const bn_walk_source *src, int i)
{
    const bn_walk_cell *c = src->cells + i;
    int ok = isfinite(c->mass) && !isnan(c->r2) && isfinite(c->gml2) && c->gml2 >= 0;
    for (int k = 0; k < 3; k++) ok &= isfinite(c->com[k]) != 0;
    for (int k = 0; k < 6; k++) ok &= isfinite(src->quad[6 * (size_t)i + k]) != 0;
    if (!ok) return bn_fail(BN_ERR_ARGUMENT, "source tree: cell %d has a moment that is not finite", i);
    if (c->r2 < 0 && c->gml2 != 0)
        return bn_fail(BN_ERR_ARGUMENT, "source tree: cell %d is closed (r2 %g) but gml2 %g would open it", i, c->r2,
                       c->gml2);
    return BN_OK;
}

static bn_status check_bodies(const bn_walk_source *src, int n_bodies)
{
    if (n_bodies > 0 && (!src->pos[0] || !src->pos[1] || !src->pos[2] || !src->mass))
        return bn_fail(BN_ERR_ARGUMENT, "source tree: %d bodies but no positions or masses", n_bodies);
    for (int b = 0; b < n_bodies; b++) {
        int ok = isfinite(src->mass[b]);
        for (int k = 0; k < 3; k++) ok &= isfinite(src->pos[k][b]) != 0;
        if (!ok) return bn_fail(BN_ERR_ARGUMENT, "source tree: body %d has a position or mass that is not finite", b);
    }
    return BN_OK;
}

/* The deepest stack of a depth-first walk that opens everything: a
 * child waits on the stack with its parent's other children and with
 * everything its ancestors' siblings left there, need(child) =
 * need(parent) + children(parent) - 1 (parents precede children). */
static bn_status stack_need(const bn_walk_source *src, int *out)
{
    int *need = bn_alloc_array((size_t)src->n_cells, sizeof *need, "source tree stack bound");
    if (!need) return BN_ERR_NOMEM;
    int most = 1;
    need[0] = 1;
    for (int i = 0; i < src->n_cells; i++) {
        const bn_walk_cell *c = src->cells + i;
        for (int j = 0; j < c->n_children; j++) {
            need[c->first_child + j] = need[i] + c->n_children - 1;
            if (need[c->first_child + j] > most) most = need[c->first_child + j];
        }
    }
    free(need);
    *out = most;
    return BN_OK;
}

bn_status bn_remote_check(const bn_walk_source *src, bn_remote_shape *shape)
{
    memset(shape, 0, sizeof *shape);
    if (!src || src->n_cells < 0) return bn_fail(BN_ERR_ARGUMENT, "source tree: NULL or a negative cell count");
    if (src->n_cells == 0) return BN_OK;
    if (!src->cells || !src->quad)
        return bn_fail(BN_ERR_ARGUMENT, "source tree: %d cells but no cells or quadrupoles", src->n_cells);
    int next = 1, n_bodies = 0;
    for (int i = 0; i < src->n_cells; i++) {
        BN_TRY(check_links(src->cells + i, i, src->n_cells, &next, &n_bodies));
        BN_TRY(check_moments(src, i));
    }
    if (next != src->n_cells)
        return bn_fail(BN_ERR_ARGUMENT, "source tree: %d of %d cells have no parent", src->n_cells - next,
                       src->n_cells);
    BN_TRY(check_bodies(src, n_bodies));
    int need = 0;
    BN_TRY(stack_need(src, &need));
    if (need > BN_REMOTE_STACK)
        return bn_fail(BN_ERR_ARGUMENT,
                       "source tree: a walk of it may need a stack of %d cells, more than the GPU walk's %d (too deep)",
                       need, BN_REMOTE_STACK);
    shape->n_cells = src->n_cells;
    shape->n_bodies = n_bodies;
    shape->stack_need = need;
    return BN_OK;
}

size_t bn_remote_stage_words(const bn_remote_shape *shape)
{
    return (size_t)shape->n_cells * (sizeof(bn_walk_cell) / 8 + 6) + 4 * (size_t)shape->n_bodies;
}

void bn_remote_stage(const bn_walk_source *src, const bn_remote_shape *shape, uint64_t *words)
{
    const size_t nc = (size_t)shape->n_cells, nb = (size_t)shape->n_bodies;
    memcpy(words, src->cells, nc * sizeof(bn_walk_cell));
    double *q = (double *)(void *)(words + nc * (sizeof(bn_walk_cell) / 8)), *b = q + 6 * nc;
    memcpy(q, src->quad, 6 * nc * sizeof *q);
    for (int k = 0; k < 3 && nb; k++) memcpy(b + k * nb, src->pos[k], nb * sizeof *b);
    if (nb) memcpy(b + 3 * nb, src->mass, nb * sizeof *b);
}

int bn_remote_box_groups(void)
{
    const char *e = getenv("BANYAN_REMOTE_BOX_GROUPS");
    if (!e || !*e) return BN_WALK_BOX_GROUPS;
    char *end = NULL;
    const long v = strtol(e, &end, 10);
    return end != e && *end == '\0' && v >= 0 && v <= 32 ? (int)v : BN_WALK_BOX_GROUPS; /* "abc", "4x": the default */
}
