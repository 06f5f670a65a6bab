/* banyan compare A B for two mesh files: variable by variable, cell by
 * cell, the relative error |a - b| / |b| (cells where b is 0 left out and
 * counted), and the vectors gac*, vel*, psi* as |a - b| / |b| of the
 * vector. The meshes must have the same leaf blocks, in any order: blocks
 * are paired by their place in the octree (level and integer position),
 * so one problem written in FLASH's block order and in banyan's compares. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/error.h"
#include "gravity/error_stats.h"
#include "mesh/mesh_internal.h"

typedef struct rel_stats {
    size_t n, zero_ref;
    double p50, p90, p99, max, max_norm; /* max_norm: max |a - b| / max |b| */
} rel_stats;

/* One line of the table: a variable or a vector. */
typedef struct row {
    const char *name;
    rel_stats st;
} row;

/* The values a row compares: nc components, each from its own array. */
typedef struct fields {
    int nc;
    const double *a[3], *b[3];
} fields;

/* ---- which block of b is block i of a ------------------------------------- */

static int close_to(double x, double y) { return fabs(x - y) <= 1e-12 * fmax(1.0, fabs(y)); }

/* Both octrees on the same root blocks: else equal integer positions
 * would name different places. */
static bn_status same_frame(const bn_mesh_octree *oa, const bn_mesh_octree *ob, const char *pa, const char *pb)
{
    for (int k = 0; k < 3; k++)
        if (!close_to(oa->domain_lo[k], ob->domain_lo[k]) || !close_to(oa->root_side[k], ob->root_side[k]) ||
            oa->nroot[k] != ob->nroot[k])
            return bn_fail(BN_ERR_ARGUMENT, "%s and %s lie on different root blocks (along %c: %d of side %g from %g, "
                           "%d of side %g from %g): not the same mesh", pa, pb, "xyz"[k], oa->nroot[k],
                           oa->root_side[k], oa->domain_lo[k], ob->nroot[k], ob->root_side[k], ob->domain_lo[k]);
    return BN_OK;
}

/* pair[i]: the block of b at the place of a's block i, found through a
 * map of b's blocks by (level, position); each must hold the same box. */
static bn_status match(const bn_mesh *a, const bn_mesh *b, const bn_mesh_octree *oa, const bn_mesh_octree *ob,
                       const char *pa, const char *pb, size_t *pair)
{
    bn_block_map map;
    BN_TRY(bn_block_map_init(&map, b->n_blocks));
    bn_status s = BN_OK;
    for (size_t j = 0; s == BN_OK && j < b->n_blocks; j++) {
        bn_block_slot *k = NULL;
        s = bn_block_map_put(&map, b->level[j], ob->ijk + 3 * j, (int64_t)j, 0, &k);
    }
    for (size_t i = 0; s == BN_OK && i < a->n_blocks; i++) {
        const bn_block_slot *k = bn_block_map_find(&map, a->level[i], oa->ijk + 3 * i);
        if (!k) {
            s = bn_fail(BN_ERR_ARGUMENT, "leaf block %zu of %s (level %d, from %g, %g, %g) is not a leaf block of %s: "
                        "not the same mesh", i, pa, a->level[i], a->lo[3 * i], a->lo[3 * i + 1], a->lo[3 * i + 2], pb);
            break;
        }
        pair[i] = (size_t)k->v[0];
        for (int c = 0; s == BN_OK && c < 3; c++)
            if (!close_to(a->lo[3 * i + c], b->lo[3 * pair[i] + c]) || !close_to(a->hi[3 * i + c], b->hi[3 * pair[i] + c]))
                s = bn_fail(BN_ERR_ARGUMENT, "leaf block %zu of %s lies elsewhere than block %zu of %s: not the same mesh",
                            i, pa, pair[i], pb);
    }
    bn_block_map_free(&map);
    return s;
}

static bn_status pair_blocks(const bn_mesh *a, const bn_mesh *b, const char *pa, const char *pb, size_t *pair)
{
    if (a->n_blocks != b->n_blocks || memcmp(a->nb, b->nb, sizeof a->nb))
        return bn_fail(BN_ERR_ARGUMENT, "%s has %zu leaf blocks of %dx%dx%d cells, %s %zu of %dx%dx%d: not the same mesh",
                       pa, a->n_blocks, a->nb[0], a->nb[1], a->nb[2], pb, b->n_blocks, b->nb[0], b->nb[1], b->nb[2]);
    bn_mesh_octree oa, ob;
    memset(&ob, 0, sizeof ob);
    bn_status s = bn_mesh_octree_make(a, &oa);
    if (s != BN_OK) return bn_fail_context(s, "%s", pa);
    s = bn_mesh_octree_make(b, &ob);
    if (s != BN_OK) s = bn_fail_context(s, "%s", pb);
    if (s == BN_OK) s = same_frame(&oa, &ob, pa, pb);
    if (s == BN_OK) s = match(a, b, &oa, &ob, pa, pb, pair);
    bn_mesh_octree_free(&oa);
    bn_mesh_octree_free(&ob);
    return s;
}

/* ---- the statistics ------------------------------------------------------- */

/* |a - b| and |b| at cell ca of a and its pair cb of b, by hypot: squares
 * of values beyond 1e154 would overflow (a reference of 1e200 made inf /
 * inf, NaN, and a maximum of 0). */
static void cell_norms(const fields *f, size_t ca, size_t cb, double *d, double *r)
{
    *d = 0;
    *r = 0;
    for (int k = 0; k < f->nc; k++) {
        *d = hypot(*d, f->a[k][ca] - f->b[k][cb]);
        *r = hypot(*r, f->b[k][cb]);
    }
}

/* A ratio that is not a number (a difference of 1e308 over a reference of
 * 1e-310) has no place in a table or in JSON: refused, naming the cell. */
static bn_status stats_of(const char *name, const fields *f, const bn_mesh *a, const size_t *pair, const char *pa,
                          const char *pb, rel_stats *st)
{
    const size_t cells = bn_mesh_cells(a), bc = bn_mesh_block_cells(a);
    double *e = bn_alloc_array(cells ? cells : 1, sizeof *e, "compare");
    if (!e) return BN_ERR_NOMEM;
    memset(st, 0, sizeof *st);
    double bmax = 0, dmax = 0;
    bn_status s = BN_OK;
    for (size_t i = 0; s == BN_OK && i < cells; i++) {
        const size_t blk = i / bc, cb = pair[blk] * bc + i % bc;
        double d, r;
        cell_norms(f, i, cb, &d, &r);
        bmax = fmax(bmax, r);
        dmax = fmax(dmax, d);
        if (r == 0) {
            st->zero_ref++;
            continue;
        }
        e[st->n] = d / r;
        if (!isfinite(e[st->n]))
            s = bn_fail(BN_ERR_ARGUMENT, "%s, leaf block %zu of %s (block %zu of %s), cell %zu: the reference is %g "
                        "and the difference %g: the relative error is not a finite number", name, blk, pa, pair[blk],
                        pb, i % bc, r, d);
        st->n++;
    }
    st->max_norm = bmax > 0 ? dmax / bmax : dmax;
    if (s == BN_OK && !isfinite(st->max_norm))
        s = bn_fail(BN_ERR_ARGUMENT, "%s: the largest difference %g over the largest reference %g of %s is not a "
                    "finite number", name, dmax, bmax, pb);
    if (s == BN_OK) {
        qsort(e, st->n, sizeof *e, bn_cmp_double);
        st->p50 = bn_percentile(e, st->n, 0.5);
        st->p90 = bn_percentile(e, st->n, 0.9);
        st->p99 = bn_percentile(e, st->n, 0.99);
        st->max = st->n ? e[st->n - 1] : 0.0;
    }
    free(e);
    return s;
}

/* The vector groups whose three components are all present in both. */
static const char *const vectors[][4] = {{"|gac|", "gacx", "gacy", "gacz"},
                                         {"|vel|", "velx", "vely", "velz"},
                                         {"|psi|", "psix", "psiy", "psiz"}};
#define MAX_ROWS (BN_MESH_MAX_VARS + (int)(sizeof vectors / sizeof *vectors))

/* Every row, computed before anything is printed: a failure must not
 * leave half a table or half a JSON object behind. */
static bn_status compare(const bn_mesh *a, const bn_mesh *b, const size_t *pair, const char *pa, const char *pb,
                         row *rows, int *n)
{
    *n = 0;
    for (int v = 0; v < a->n_vars; v++) {
        const int w = bn_mesh_var_index(b, a->var_name[v]);
        if (w < 0) continue;
        const fields f = {1, {a->var[v]}, {b->var[w]}};
        rows[*n].name = a->var_name[v];
        BN_TRY(stats_of(rows[*n].name, &f, a, pair, pa, pb, &rows[*n].st));
        ++*n;
    }
    for (size_t g = 0; g < sizeof vectors / sizeof *vectors; g++) {
        fields f = {3, {NULL}, {NULL}};
        int ok = 1;
        for (int k = 0; k < 3 && ok; k++) {
            const int i = bn_mesh_var_index(a, vectors[g][1 + k]), j = bn_mesh_var_index(b, vectors[g][1 + k]);
            ok = i >= 0 && j >= 0;
            if (ok) {
                f.a[k] = a->var[i];
                f.b[k] = b->var[j];
            }
        }
        if (!ok) continue;
        rows[*n].name = vectors[g][0];
        BN_TRY(stats_of(rows[*n].name, &f, a, pair, pa, pb, &rows[*n].st));
        ++*n;
    }
    if (*n == 0) return bn_fail(BN_ERR_ARGUMENT, "%s and %s have no variable in common", pa, pb);
    return BN_OK;
}

/* ---- printing ------------------------------------------------------------- */

static void print_json(const char *pa, const char *pb, const bn_mesh *a, const row *rows, int n)
{
    printf("{\"out\": ");
    cli_json_string(pa);
    printf(", \"ref\": ");
    cli_json_string(pb);
    printf(", \"cells\": %zu, \"variables\": {", bn_mesh_cells(a));
    for (int i = 0; i < n; i++) {
        const rel_stats *st = &rows[i].st;
        printf("%s\n  ", i ? "," : "");
        cli_json_string(rows[i].name);
        printf(": {\"p50\": %.17g, \"p90\": %.17g, \"p99\": %.17g, \"max\": %.17g, \"max_over_max_ref\": %.17g, "
               "\"cells\": %zu, \"zero_ref\": %zu}", st->p50, st->p90, st->p99, st->max, st->max_norm, st->n,
               st->zero_ref);
    }
    printf("}}\n");
}

static void print_table(const char *pa, const char *pb, const bn_mesh *a, const row *rows, int n)
{
    printf("%s against %s: %zu cells in %zu leaf blocks\n\n", pa, pb, bn_mesh_cells(a), a->n_blocks);
    printf("%-22s %10s %10s %10s %10s %12s %10s\n", "|a - b| / |b|", "p50", "p90", "p99", "max", "max/max|b|",
           "b = 0");
    for (int i = 0; i < n; i++) {
        const rel_stats *st = &rows[i].st;
        printf("%-22s %10.3e %10.3e %10.3e %10.3e %12.3e %10zu\n", rows[i].name, st->p50, st->p90, st->p99, st->max,
               st->max_norm, st->zero_ref);
    }
}

int cli_compare_meshes(const char *pa, const char *pb, int json)
{
    bn_mesh *a = NULL, *b = NULL;
    size_t *pair = NULL;
    row rows[MAX_ROWS];
    int n = 0;
    bn_status s = bn_mesh_read(pa, NULL, &a);
    if (s == BN_OK) s = bn_mesh_read(pb, NULL, &b);
    if (s == BN_OK && !(pair = bn_alloc_array(a->n_blocks, sizeof *pair, "compare"))) s = BN_ERR_NOMEM;
    if (s == BN_OK) s = pair_blocks(a, b, pa, pb, pair);
    if (s == BN_OK) s = compare(a, b, pair, pa, pb, rows, &n);
    if (s == BN_OK && json) print_json(pa, pb, a, rows, n);
    else if (s == BN_OK) print_table(pa, pb, a, rows, n);
    free(pair);
    bn_mesh_free(a);
    bn_mesh_free(b);
    return s == BN_OK ? 0 : cli_fail("compare", s);
}
