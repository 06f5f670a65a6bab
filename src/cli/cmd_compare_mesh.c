/* banyan compare A B for two mesh files: variable by variable, cell by
 * cell (the meshes must have the same leaf blocks), the relative error
 * |a - b| / |b| (cells where b is 0 left out and counted), and the
 * vectors gac*, vel*, psi* as |a - b| / |b| of the vector. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/error.h"

typedef struct rel_stats {
    size_t n, zero_ref;
    double p50, p90, p99, max, max_norm; /* max_norm: max |a - b| / max |b| */
} rel_stats;

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n);
    return n ? v[(k ? k : 1) - 1] : 0.0;
}

/* Relative errors of nc-component values (cells x nc each, components
 * from separate arrays). */
static bn_status stats_of(const double *const *a, const double *const *b, int nc, size_t cells, rel_stats *st)
{
    double *e = bn_alloc_array(cells ? cells : 1, sizeof *e, "compare");
    if (!e) return BN_ERR_NOMEM;
    memset(st, 0, sizeof *st);
    double bmax = 0, dmax = 0;
    for (size_t i = 0; i < cells; i++) {
        double d2 = 0, r2 = 0;
        for (int k = 0; k < nc; k++) {
            d2 += (a[k][i] - b[k][i]) * (a[k][i] - b[k][i]);
            r2 += b[k][i] * b[k][i];
        }
        bmax = fmax(bmax, sqrt(r2));
        dmax = fmax(dmax, sqrt(d2));
        if (r2 > 0) e[st->n++] = sqrt(d2 / r2);
        else st->zero_ref++;
    }
    qsort(e, st->n, sizeof *e, cmp_d);
    st->p50 = pct(e, st->n, 0.5);
    st->p90 = pct(e, st->n, 0.9);
    st->p99 = pct(e, st->n, 0.99);
    st->max = st->n ? e[st->n - 1] : 0.0;
    st->max_norm = bmax > 0 ? dmax / bmax : dmax;
    free(e);
    return BN_OK;
}

static bn_status same_blocks(const bn_mesh *a, const bn_mesh *b, const char *pa, const char *pb)
{
    if (a->n_blocks != b->n_blocks || memcmp(a->nb, b->nb, sizeof a->nb))
        return bn_fail(BN_ERR_ARGUMENT, "%s has %zu leaf blocks of %dx%dx%d cells, %s %zu of %dx%dx%d: not the same mesh",
                       pa, a->n_blocks, a->nb[0], a->nb[1], a->nb[2], pb, b->n_blocks, b->nb[0], b->nb[1], b->nb[2]);
    for (size_t i = 0; i < a->n_blocks; i++)
        for (int k = 0; k < 6; k++) {
            const double x = k < 3 ? a->lo[3 * i + k] : a->hi[3 * i + k - 3], y = k < 3 ? b->lo[3 * i + k] : b->hi[3 * i + k - 3];
            if (fabs(x - y) > 1e-12 * fmax(1.0, fabs(y)))
                return bn_fail(BN_ERR_ARGUMENT, "leaf block %zu lies elsewhere in %s than in %s: not the same mesh", i, pa, pb);
        }
    return BN_OK;
}

static void print_row(const char *name, const rel_stats *st, int json, int *first)
{
    if (json) {
        printf("%s\n  \"%s\": {\"p50\": %.17g, \"p90\": %.17g, \"p99\": %.17g, \"max\": %.17g, \"max_over_max_ref\": %.17g, "
               "\"cells\": %zu, \"zero_ref\": %zu}", *first ? "" : ",", name, st->p50, st->p90, st->p99, st->max,
               st->max_norm, st->n, st->zero_ref);
    } else {
        printf("%-22s %10.3e %10.3e %10.3e %10.3e %12.3e %10zu\n", name, st->p50, st->p90, st->p99, st->max, st->max_norm,
               st->zero_ref);
    }
    *first = 0;
}

/* The vector groups whose three components are all present in both. */
static const char *const vectors[][4] = {{"|gac|", "gacx", "gacy", "gacz"},
                                         {"|vel|", "velx", "vely", "velz"},
                                         {"|psi|", "psix", "psiy", "psiz"}};

static bn_status compare(const bn_mesh *a, const bn_mesh *b, int json)
{
    const size_t cells = bn_mesh_cells(a);
    int first = 1;
    if (!json) printf("%-22s %10s %10s %10s %10s %12s %10s\n", "|a - b| / |b|", "p50", "p90", "p99", "max",
                      "max/max|b|", "b = 0");
    for (int v = 0; v < a->n_vars; v++) {
        const int w = bn_mesh_var_index(b, a->var_name[v]);
        if (w < 0) continue;
        const double *pa[1] = {a->var[v]}, *pb[1] = {b->var[w]};
        rel_stats st;
        BN_TRY(stats_of(pa, pb, 1, cells, &st));
        print_row(a->var_name[v], &st, json, &first);
    }
    for (size_t g = 0; g < sizeof vectors / sizeof *vectors; g++) {
        const double *pa[3], *pb[3];
        int ok = 1;
        for (int k = 0; k < 3; k++) {
            const int i = bn_mesh_var_index(a, vectors[g][1 + k]), j = bn_mesh_var_index(b, vectors[g][1 + k]);
            ok &= i >= 0 && j >= 0;
            if (ok) {
                pa[k] = a->var[i];
                pb[k] = b->var[j];
            }
        }
        if (!ok) continue;
        rel_stats st;
        BN_TRY(stats_of(pa, pb, 3, cells, &st));
        print_row(vectors[g][0], &st, json, &first);
    }
    if (first) return bn_fail(BN_ERR_ARGUMENT, "the meshes have no variable in common");
    return BN_OK;
}

int cli_compare_meshes(const char *pa, const char *pb, int json)
{
    bn_mesh *a = NULL, *b = NULL;
    bn_status s = bn_mesh_read(pa, NULL, &a);
    if (s == BN_OK) s = bn_mesh_read(pb, NULL, &b);
    if (s == BN_OK) s = same_blocks(a, b, pa, pb);
    if (s == BN_OK && !json) printf("%s against %s: %zu cells in %zu leaf blocks\n\n", pa, pb, bn_mesh_cells(a),
                                    a->n_blocks);
    if (s == BN_OK && json) {
        printf("{\"out\": ");
        cli_json_string(pa);
        printf(", \"ref\": ");
        cli_json_string(pb);
        printf(", \"cells\": %zu, \"variables\": {", bn_mesh_cells(a));
    }
    if (s == BN_OK) s = compare(a, b, json);
    if (s == BN_OK && json) printf("}}\n");
    bn_mesh_free(a);
    bn_mesh_free(b);
    return s == BN_OK ? 0 : cli_fail("compare", s);
}
