/*
 * Counter-based random numbers: the value is a pure function of (seed,
 * particle index, draw number), so sampling is bit-identical whatever the
 * thread count or loop schedule. The mixer is SplitMix64's finaliser
 * applied to a Weyl sequence of the combined counter (Steele et al. 2014),
 * which passes BigCrush on such counters.
 */
#ifndef BN_RNG_H
#define BN_RNG_H
#include <stdint.h>
#include "core/hostdevice.h"

BN_HD uint64_t bn_rng_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 64 random bits for draw `k` of item `i` under `seed`. */
BN_HD uint64_t bn_rng_u64(uint64_t seed, uint64_t i, uint64_t k)
{
    uint64_t z = bn_rng_mix64(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull);
    z = bn_rng_mix64(z ^ (i * 0xd1b54a32d192ed03ull));
    return bn_rng_mix64(z + (k + 1) * 0x9e3779b97f4a7c15ull);
}

/* Uniform double in the open interval (0, 1). */
BN_HD double bn_rng_uniform(uint64_t seed, uint64_t i, uint64_t k)
{
    return ((double)(bn_rng_u64(seed, i, k) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
#endif
