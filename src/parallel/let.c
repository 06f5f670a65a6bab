/* Locally essential trees: see let.h. */
#include "parallel/let.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"

#define CELL_WORDS (sizeof(bn_walk_cell) / 8)
_Static_assert(sizeof(bn_walk_cell) % 8 == 0, "cells travel as whole words");

void bn_words_free(bn_words *b)
{
    free(b->w);
    memset(b, 0, sizeof *b);
}

bn_status bn_words_reserve(bn_words *b, size_t more)
{
    if (b->n + more <= b->cap) return BN_OK;
    size_t cap = b->cap ? 2 * b->cap : 1024;
    while (cap < b->n + more) cap *= 2;
    uint64_t *w = realloc(b->w, cap * sizeof *w);
    if (!w) return bn_fail(BN_ERR_NOMEM, "locally essential tree: cannot grow a message to %zu words", cap);
    b->w = w;
    b->cap = cap;
    return BN_OK;
}

/* The selection, breadth first so that children stay contiguous: cell i
 * of the message is src cell pick[i]; body runs are the opened leaves'. */
typedef struct {
    int32_t *pick;
    bn_walk_cell *out;
    int n;
    size_t bodies;
} let_select;

/* The receiver's boxes and their unions (let.h). */
typedef struct {
    const double *box;
    int n, n_runs;
    double all[BN_LET_BOX];
    double *run; /* n_runs unions */
} let_boxes;

static void box_union(double *u, const double *x, int first)
{
    for (int k = 0; k < 3; k++) {
        u[k] = first ? x[k] : (x[k] < u[k] ? x[k] : u[k]);
        u[3 + k] = first ? x[3 + k] : (x[3 + k] > u[3 + k] ? x[3 + k] : u[3 + k]);
    }
    const double a = x[6] >= 0 ? x[6] : 0; /* NaN as 0: the union opens at least what its boxes do */
    u[6] = first ? a : (a < u[6] ? a : u[6]);
}

void bn_let_box_unions(const double *box, int n, double *all, double *runs)
{
    for (int i = 0; i < n; i++) {
        box_union(all, box + BN_LET_BOX * i, i == 0);
        box_union(runs + BN_LET_BOX * (i / BN_LET_BOX_RUN), box + BN_LET_BOX * i, i % BN_LET_BOX_RUN == 0);
    }
}

static bn_status boxes_make(const double *box, int n, let_boxes *b)
{
    b->box = box;
    b->n = n;
    b->n_runs = (n + BN_LET_BOX_RUN - 1) / BN_LET_BOX_RUN;
    b->run = bn_alloc_array((size_t)b->n_runs + 1, BN_LET_BOX * sizeof(double), "locally essential tree");
    if (!b->run) return BN_ERR_NOMEM;
    bn_let_box_unions(box, n, b->all, b->run);
    return BN_OK;
}

static int box_opens(const bn_walk_cell *c, const double *x, bn_mac mac)
{
    return bn_walk_opens(c, x, x + 3, mac, x[6]);
}

/* Does any of the boxes open the cell? */
static int any_opens(const bn_walk_cell *c, const let_boxes *b, bn_mac mac)
{
    if (!box_opens(c, b->all, mac)) return 0;
    for (int r = 0; r < b->n_runs; r++) {
        if (!box_opens(c, b->run + BN_LET_BOX * r, mac)) continue;
        const int e = (r + 1) * BN_LET_BOX_RUN < b->n ? (r + 1) * BN_LET_BOX_RUN : b->n;
        for (int i = r * BN_LET_BOX_RUN; i < e; i++)
            if (box_opens(c, b->box + BN_LET_BOX * i, mac)) return 1;
    }
    return 0;
}

static bn_status select_cells(const bn_walk_source *src, const let_boxes *boxes, bn_mac mac, let_select *sel)
{
    sel->pick = bn_alloc_array((size_t)src->n_cells, sizeof *sel->pick, "locally essential tree");
    sel->out = bn_alloc_array((size_t)src->n_cells, sizeof *sel->out, "locally essential tree");
    if (!sel->pick || !sel->out) return BN_ERR_NOMEM;
    int n = 1;
    sel->pick[0] = 0;
    sel->bodies = 0;
    for (int i = 0; i < n; i++) {
        const bn_walk_cell *c = src->cells + sel->pick[i];
        bn_walk_cell *o = sel->out + i;
        *o = *c;
        o->first_child = -1;
        o->n_children = o->first_body = o->n_bodies = 0;
        if (!any_opens(c, boxes, mac)) {
            o->r2 = -1.0; /* closed: its moments act on every group */
            o->gml2 = 0.0;
        } else if (c->n_children == 0) {
            o->first_body = (int32_t)sel->bodies;
            o->n_bodies = c->n_bodies;
            sel->bodies += (size_t)c->n_bodies;
        } else {
            o->first_child = n;
            o->n_children = c->n_children;
            for (int k = 0; k < c->n_children; k++) sel->pick[n++] = c->first_child + k;
        }
    }
    sel->n = n;
    return BN_OK;
}

bn_status bn_let_pack(const bn_walk_source *src, const double *boxes, int nbox, bn_mac mac, bn_words *msg)
{
    if (src->n_cells == 0 || nbox <= 0) return BN_OK;
    let_select sel = {0};
    let_boxes lb = {0};
    bn_status s = boxes_make(boxes, nbox, &lb);
    if (s == BN_OK) s = select_cells(src, &lb, mac, &sel);
    free(lb.run);
    const size_t nc = (size_t)sel.n, nb = sel.bodies;
    if (s == BN_OK) s = bn_words_reserve(msg, 2 + nc * (CELL_WORDS + 6) + 4 * nb);
    if (s == BN_OK) {
        uint64_t *w = msg->w + msg->n;
        w[0] = nc;
        w[1] = nb;
        memcpy(w + 2, sel.out, nc * sizeof(bn_walk_cell));
        double *q = (double *)(void *)(w + 2 + nc * CELL_WORDS), *b = q + 6 * nc;
        for (size_t i = 0; i < nc; i++) memcpy(q + 6 * i, src->quad + 6 * (size_t)sel.pick[i], 6 * sizeof *q);
        for (size_t i = 0; i < nc; i++) {
            const bn_walk_cell *o = sel.out + i, *c = src->cells + sel.pick[i];
            for (int k = 0; k < 3; k++)
                memcpy(b + (size_t)k * nb + (size_t)o->first_body, src->pos[k] + c->first_body,
                       (size_t)o->n_bodies * sizeof *b);
            memcpy(b + 3 * nb + (size_t)o->first_body, src->mass + c->first_body, (size_t)o->n_bodies * sizeof *b);
        }
        msg->n += 2 + nc * (CELL_WORDS + 6) + 4 * nb;
    }
    free(sel.pick);
    free(sel.out);
    return s;
}

/* A received cell's links in the breadth-first layout bn_let_pack
 * writes: the children of the cells with children follow each other from
 * cell 1 on (*next: the first not yet claimed), so that every cell but
 * the root has exactly one parent and the walk's lists (n_cells long)
 * cannot overflow; bodies within the bodies. */
static int cell_sane(const bn_walk_cell *c, size_t *next, size_t nc, size_t nb)
{
    if (c->n_children < 0 || c->n_bodies < 0 || c->first_body < 0) return 0;
    if (c->n_children > 0) {
        if (c->n_bodies != 0 || (size_t)c->first_child != *next || *next + (size_t)c->n_children > nc) return 0;
        *next += (size_t)c->n_children;
        return 1;
    }
    return (size_t)c->first_body + (size_t)c->n_bodies <= nb;
}

bn_status bn_let_unpack(const uint64_t *words, size_t n, bn_let *let, size_t *used)
{
    memset(let, 0, sizeof *let);
    *used = 0;
    if (n < 2) return bn_fail(BN_ERR_INTERNAL, "locally essential tree: a message of %zu words", n);
    const uint64_t nc = words[0], nb = words[1];
    if (nc == 0 || nc > (uint64_t)INT32_MAX || nb > (uint64_t)INT32_MAX ||
        nc * (CELL_WORDS + 6) + 4 * nb > n - 2)
        return bn_fail(BN_ERR_INTERNAL, "locally essential tree: %llu cells and %llu bodies in %zu words",
                       (unsigned long long)nc, (unsigned long long)nb, n);
    let->cells = bn_walk_cells_alloc((int)nc);
    let->quad = bn_alloc_array(6 * nc, sizeof *let->quad, "locally essential tree");
    double *b = bn_alloc_array(4 * nb, sizeof *b, "locally essential tree");
    if (!let->cells || !let->quad || !b) {
        free(b);
        bn_let_free(let);
        return bn_fail(BN_ERR_NOMEM, "locally essential tree: %llu cells", (unsigned long long)nc);
    }
    memcpy(let->cells, words + 2, nc * sizeof(bn_walk_cell));
    memcpy(let->quad, words + 2 + nc * CELL_WORDS, 6 * nc * sizeof *let->quad);
    memcpy(b, words + 2 + nc * (CELL_WORDS + 6), 4 * nb * sizeof *b);
    for (int k = 0; k < 3; k++) let->pos[k] = b + (size_t)k * nb;
    let->mass = b + 3 * nb;
    size_t next = 1;
    for (size_t i = 0; i < nc; i++)
        if (!cell_sane(let->cells + i, &next, nc, nb)) {
            bn_let_free(let);
            return bn_fail(BN_ERR_INTERNAL, "locally essential tree: cell %zu links outside the message's tree", i);
        }
    if (next != nc) {
        bn_let_free(let);
        return bn_fail(BN_ERR_INTERNAL, "locally essential tree: %zu of %zu cells have no parent", nc - next,
                       (size_t)nc);
    }
    let->src = (bn_walk_source){(int)nc, let->cells, let->quad, {let->pos[0], let->pos[1], let->pos[2]}, let->mass};
    *used = 2 + nc * (CELL_WORDS + 6) + 4 * nb;
    return BN_OK;
}

void bn_let_free(bn_let *let)
{
    free(let->cells);
    free(let->quad);
    free(let->pos[0]); /* the bodies' one block */
    memset(let, 0, sizeof *let);
}

int bn_let_box_bodies(size_t n, int group_size)
{
    const char *e = getenv("BANYAN_LET_BOXES");
    const long v = e ? strtol(e, NULL, 10) : 0;
    double boxes = (double)(n / BN_LET_BOX_BODIES);
    if (boxes < BN_LET_BOXES_MIN) boxes = BN_LET_BOXES_MIN;
    if (boxes > BN_LET_BOXES_MAX) boxes = BN_LET_BOXES_MAX;
    if (v >= 16 && v <= 65536) boxes = (double)v;
    return (int)fmax((double)group_size, (double)n / boxes);
}
