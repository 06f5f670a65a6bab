/* Internal: the rank that owns a key under a cut, for the host's domains
 * (domain.c) and the GPU's move of the crossers (core/migrate_cuda.cu):
 * one search, so that the two can never disagree about a particle. */
#ifndef BN_PARALLEL_DOMAIN_OWNER_H
#define BN_PARALLEL_DOMAIN_OWNER_H
#include <stdint.h>
#include "core/hostdevice.h"

/* The last rank r with split[r] <= key (split: nranks + 1 ascending
 * bounds, split[0] = 0). */
BN_HD int bn_domain_owner(const uint64_t *split, int nranks, uint64_t key)
{
    int a = 0, b = nranks - 1;
    while (a < b) {
        const int m = (a + b + 1) / 2;
        if (split[m] <= key) a = m;
        else b = m - 1;
    }
    return a;
}
#endif
