/* Stage 6: groups of bodies that walk the tree together: the deepest
 * nodes with at most group_size bodies. A flag-scan-compact pass over the
 * nodes (one GPU thread per node): a node with more than group_size
 * bodies emits those of its children that have at most group_size; a
 * leaf with more than group_size bodies (coincident keys at the deepest
 * level, or leaf_size > group_size) emits itself cut in chunks of
 * group_size; a root with at most group_size bodies emits itself. Every
 * body ends in exactly one group and the bodies of a group are contiguous. */
#include <math.h>
#include <stdlib.h>
#include "core/error.h"
#include "core/trace.h"
#include "tree/refresh_guard.h"
#include "tree/tree_cpu.h"

/* Groups node i emits (count only when `out` < 0, else write from `out`). */
static int emit_groups(bn_tree *t, int i, int gs, int out)
{
    const int nb = t->n_bodies[i];
    int c = 0;
    if (nb <= gs) {
        if (i != 0) return 0; /* emitted by its parent */
        if (out >= 0) {
            t->group_first[out] = t->first_body[i];
            t->group_count[out] = nb;
        }
        return 1;
    }
    if (t->n_children[i] == 0) {
        for (int b = 0; b < nb; b += gs, c++)
            if (out >= 0) {
                t->group_first[out + c] = t->first_body[i] + b;
                t->group_count[out + c] = nb - b < gs ? nb - b : gs;
            }
        return c;
    }
    for (int j = t->first_child[i]; j < t->first_child[i] + t->n_children[i]; j++) {
        if (t->n_bodies[j] > gs) continue;
        if (out >= 0) {
            t->group_first[out + c] = t->first_body[j];
            t->group_count[out + c] = t->n_bodies[j];
        }
        c++;
    }
    return c;
}

static bn_status reserve_groups(bn_tree *t, int n)
{
    if (n <= t->group_capacity) return BN_OK;
    int32_t *f = realloc(t->group_first, (size_t)n * sizeof *f);
    if (f) t->group_first = f;
    int32_t *c = realloc(t->group_count, (size_t)n * sizeof *c);
    if (c) t->group_count = c;
    double *lo = realloc(t->group_lo, 3 * (size_t)n * sizeof *lo);
    if (lo) t->group_lo = lo;
    double *hi = realloc(t->group_hi, 3 * (size_t)n * sizeof *hi);
    if (hi) t->group_hi = hi;
    if (!f || !c || !lo || !hi) return bn_fail(BN_ERR_NOMEM, "tree groups: cannot allocate %d groups", n);
    t->group_capacity = n;
    return BN_OK;
}

static void group_box(bn_tree *t, int g)
{
    const int f = t->group_first[g], e = f + t->group_count[g];
    for (int k = 0; k < 3; k++) {
        double lo = INFINITY, hi = -INFINITY;
        for (int b = f; b < e; b++) {
            lo = fmin(lo, t->pos[k][b]);
            hi = fmax(hi, t->pos[k][b]);
        }
        t->group_lo[3 * g + k] = lo;
        t->group_hi[3 * g + k] = hi;
    }
}

void bn_tree_group_boxes(bn_tree *t)
{
    const int n = t->n_groups;
#pragma omp parallel for schedule(static)
    for (int g = 0; g < n; g++) group_box(t, g);
}

double bn_refresh_growth_max(void)
{
    static double max = 0;
    if (max > 0) return max;
    const char *env = getenv("BANYAN_REFRESH_GROWTH_MAX");
    char *end = NULL;
    const double v = env ? strtod(env, &end) : 0;
    max = env && end != env && *end == '\0' && v >= 1 && v <= BN_REFRESH_GROWTH_CAP ? v : BN_REFRESH_GROWTH_MAX;
    return max;
}

int bn_refresh_judge(unsigned long long sum, double n, const char *what, double *mean)
{
    *mean = n > 0 ? (double)sum / (BN_REFRESH_GROWTH_UNIT * n) : 0.0;
    if (bn_trace_on()) bn_trace_count(what, 1e3 * *mean);
    return bn_refresh_refused(sum, n, bn_refresh_growth_max());
}

unsigned long long bn_tree_group_growth(const bn_tree *t)
{
    const int n = t->n_groups;
    unsigned long long sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int g = 0; g < n; g++) {
        const int f = t->group_first[g], c = t->group_count[g];
        if (c <= 0) continue;
        double size = 0; /* the box's largest half side */
        for (int k = 0; k < 3; k++) size = fmax(size, 0.5 * (t->group_hi[3 * g + k] - t->group_lo[3 * g + k]));
        const int L = bn_key_common_levels(t->keys[f], t->keys[f + c - 1]);
        sum += bn_refresh_growth_term(size, ldexp(t->box_size, -(L + 1)), c);
    }
    return sum;
}

bn_status bn_tree_groups(bn_tree *t, int group_size)
{
    if (group_size < 1) return bn_fail(BN_ERR_ARGUMENT, "tree groups: group_size must be >= 1, got %d", group_size);
    const int nn = t->n_nodes;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < nn; i++) t->scan[i] = emit_groups(t, i, group_size, -1);
    const int total = bn_tree_exclusive_scan(t->scan, nn);
    BN_TRY(reserve_groups(t, total));
#pragma omp parallel for schedule(static)
    for (int i = 0; i < nn; i++) emit_groups(t, i, group_size, t->scan[i]);
    t->n_groups = total;
    bn_tree_group_boxes(t);
    return BN_OK;
}
