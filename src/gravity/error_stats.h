/*
 * Internal: the order statistics behind bn_error_stats_compute, shared
 * with the mesh commands (compare and bench --mesh on meshes) so that
 * every table of errors uses one definition of a percentile.
 */
#ifndef BN_ERROR_STATS_H
#define BN_ERROR_STATS_H
#include <stddef.h>

/* qsort comparison of doubles, ascending (NaN must be kept out). */
int bn_cmp_double(const void *a, const void *b);
/* Percentile q in [0, 1] of sorted v by nearest rank (0 when n is 0). */
double bn_percentile(const double *v, size_t n, double q);
#endif
