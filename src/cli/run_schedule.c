/* When `banyan run` writes snapshots. */
#include <math.h>
#include <stdlib.h>
#include "cli/run.h"
#include "core/error.h"

#define MAX_SNAPSHOTS 1000000

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t interval_count(const bn_run_params *p, double t_start)
{
    if (!(p->snap_interval > 0)) return 0;
    double k = floor((p->t_end - t_start) / p->snap_interval * (1 + 1e-12)) + 1;
    return k > 0 ? (size_t)fmin(k, (double)MAX_SNAPSHOTS + 1) : 0;
}

bn_status run_schedule_build(run_schedule *s, const bn_run_params *p, double t_start)
{
    s->times = NULL;
    s->n = s->next = 0;
    for (int i = 0; i < p->snap_times.n; i++) {
        double t = p->snap_times.v[i];
        if (t < t_start || t > p->t_end)
            return bn_fail(BN_ERR_PARAMETER, "Snapshots:times entry %g is outside the run [%g, %g] (start time, "
                                             "TimeIntegration:t_end)", t, t_start, p->t_end);
    }
    size_t n_int = interval_count(p, t_start);
    if (n_int > MAX_SNAPSHOTS)
        return bn_fail(BN_ERR_PARAMETER, "Snapshots:interval = %g asks for more than %d snapshots", p->snap_interval,
                       MAX_SNAPSHOTS);
    size_t cap = (size_t)p->snap_times.n + n_int + 1, n = 0;
    double *t = bn_alloc(cap * sizeof *t, "snapshot times");
    if (!t) return BN_ERR_NOMEM;
    for (int i = 0; i < p->snap_times.n; i++) t[n++] = p->snap_times.v[i];
    /* t_start + k dt, not a running sum: no drift over many outputs */
    for (size_t k = 0; k < n_int; k++) t[n++] = fmin(t_start + (double)k * p->snap_interval, p->t_end);
    if (p->snap_final) t[n++] = p->t_end;
    qsort(t, n, sizeof *t, cmp_double);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || t[i] != t[m - 1]) t[m++] = t[i];
    s->times = t;
    s->n = m;
    return BN_OK;
}

void run_schedule_free(run_schedule *s)
{
    free(s->times);
    s->times = NULL;
    s->n = s->next = 0;
}

double run_schedule_next(const run_schedule *s) { return s->next < s->n ? s->times[s->next] : INFINITY; }
