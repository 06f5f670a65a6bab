/* Percentiles of the relative force and potential errors. */
#include <math.h>
#include <stdlib.h>
#include "gravity/error_stats.h"
#include "core/error.h"

int bn_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bn_percentile(const double *v, size_t n, double q)
{
    if (n == 0) return 0.0;
    size_t k = (size_t)ceil(q * (double)n);
    if (k > 0) k--;
    if (k >= n) k = n - 1;
    return v[k];
}

bn_status bn_error_stats_compute(size_t n, const double *acc, const double *acc_ref, const double *pot,
                                 const double *pot_ref, bn_error_stats *out)
{
    if (!out || !acc || !acc_ref || n == 0) return bn_fail(BN_ERR_ARGUMENT, "error statistics: no data");
    double *e = bn_alloc(n * sizeof(double), "error statistics");
    if (!e) return BN_ERR_NOMEM;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        const double *a = acc + 3 * i, *r = acc_ref + 3 * i;
        /* hypot: no squares that overflow beyond 1e154 or vanish below 1e-154 */
        const double d = hypot(hypot(a[0] - r[0], a[1] - r[1]), a[2] - r[2]);
        const double ref = hypot(hypot(r[0], r[1]), r[2]);
        e[i] = ref > 0 ? d / ref : d;
        if (isnan(e[i])) e[i] = INFINITY; /* NaN must never pass a bound */
        sum += e[i] / (double)n; /* a mean that cannot overflow where each e[i] is finite */
    }
    qsort(e, n, sizeof(double), bn_cmp_double);
    out->n = n;
    out->acc_p50 = bn_percentile(e, n, 0.50);
    out->acc_p90 = bn_percentile(e, n, 0.90);
    out->acc_p99 = bn_percentile(e, n, 0.99);
    out->acc_p999 = bn_percentile(e, n, 0.999);
    out->acc_max = e[n - 1];
    out->acc_mean = sum;
    out->pot_p50 = out->pot_p99 = out->pot_max = 0;
    if (pot && pot_ref) {
        for (size_t i = 0; i < n; i++) {
            double r = fabs(pot_ref[i]);
            e[i] = r > 0 ? fabs(pot[i] - pot_ref[i]) / r : fabs(pot[i]);
            if (isnan(e[i])) e[i] = INFINITY;
        }
        qsort(e, n, sizeof(double), bn_cmp_double);
        out->pot_p50 = bn_percentile(e, n, 0.50);
        out->pot_p99 = bn_percentile(e, n, 0.99);
        out->pot_max = e[n - 1];
    }
    free(e);
    return BN_OK;
}
