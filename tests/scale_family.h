/* Inputs with structure on very different scales (issue 14): systems far
 * from the origin and from each other, small satellites, mass ratios,
 * a cold thin disk inside a large halo. Each case is a particle set made
 * of components (contiguous ranges); the tests compare the tree's errors
 * on every component against double direct summation, on both backends
 * and against the same component placed alone at the origin. */
#ifndef BN_SCALE_FAMILY_H
#define BN_SCALE_FAMILY_H
#include "banyan.h"

#define TU_SCALE_MAX_COMPONENTS 2

typedef struct tu_scale_case {
    const char *name;
    bn_particles *p;
    double eps;               /* softening: 1e-3 of the smallest scale     */
    double ratio;             /* extent / size of the smallest structure  */
    int n_comp;
    size_t first[TU_SCALE_MAX_COMPONENTS], count[TU_SCALE_MAX_COMPONENTS];
    const char *comp_name[TU_SCALE_MAX_COMPONENTS];
} tu_scale_case;

/* Number of cases, and case k (0 <= k < count) with `scale` times the
 * default particle counts (at least 1/8 of them). Free with
 * tu_scale_case_free. */
int tu_scale_case_count(void);
tu_scale_case tu_scale_case_make(int k, double scale);
void tu_scale_case_free(tu_scale_case *c);

/* Component j of c alone, its centre of mass moved to the origin. */
bn_particles *tu_scale_component_alone(const tu_scale_case *c, int j);

/* Relative errors of p's forces (acc, pot set) on up to nsample
 * particles of [first, first + count) (evenly spaced), against double
 * direct summation over all of p. */
bn_error_stats tu_range_errors(const bn_particles *p, double G, double eps, size_t first, size_t count,
                               size_t nsample);
#endif
