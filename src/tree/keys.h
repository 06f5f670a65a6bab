/*
 * Space-filling-curve keys: 21 bits per axis, 63-bit keys.
 * Shared by the CPU and CUDA backends (BN_HD).
 *
 * Peano-Hilbert: GOTHIC's level-by-level encoder and decoder (Miki &
 * Umemura 2017, appendix A, listings 1-2; after Lam & Shapiro 1994): at
 * each level the three coordinate bits pick the sub-cube, then the frame
 * is turned and rotated for the next level. The top 3L bits of either key
 * name the level-L octree cell that holds the point, so key prefixes are
 * octree cells for both curves.
 */
#ifndef BN_KEYS_H
#define BN_KEYS_H
#include <math.h>
#include <stdint.h>
#include "core/hostdevice.h"

#define BN_KEY_BITS 21               /* bits per axis                  */
#define BN_KEY_MAX_LEVEL 21          /* deepest octree level           */
#define BN_KEY_COORD_MAX ((1u << BN_KEY_BITS) - 1u)

/* Spread the low 21 bits of v so that bit k lands at bit 3k. */
BN_HD uint64_t bn_key_dilate3(uint64_t v)
{
    v &= 0x1fffffull;
    v = (v | (v << 32)) & 0x001f00000000ffffull;
    v = (v | (v << 16)) & 0x001f0000ff0000ffull;
    v = (v | (v << 8)) & 0x100f00f00f00f00full;
    v = (v | (v << 4)) & 0x10c30c30c30c30c3ull;
    v = (v | (v << 2)) & 0x1249249249249249ull;
    return v;
}

/* Inverse of bn_key_dilate3: gather bits 3k into bit k. */
BN_HD uint32_t bn_key_compact3(uint64_t v)
{
    v &= 0x1249249249249249ull;
    v = (v ^ (v >> 2)) & 0x10c30c30c30c30c3ull;
    v = (v ^ (v >> 4)) & 0x100f00f00f00f00full;
    v = (v ^ (v >> 8)) & 0x001f0000ff0000ffull;
    v = (v ^ (v >> 16)) & 0x001f00000000ffffull;
    v = (v ^ (v >> 32)) & 0x1fffffull;
    return (uint32_t)v;
}

/* Morton (Z-order) key, x in the most significant bit of each triple. */
BN_HD uint64_t bn_key_morton(uint32_t ix, uint32_t iy, uint32_t iz)
{
    return (bn_key_dilate3(ix) << 2) | (bn_key_dilate3(iy) << 1) | bn_key_dilate3(iz);
}

BN_HD void bn_key_morton_decode(uint64_t key, uint32_t *ix, uint32_t *iy, uint32_t *iz)
{
    *ix = bn_key_compact3(key >> 2);
    *iy = bn_key_compact3(key >> 1);
    *iz = bn_key_compact3(key);
}

/* Peano-Hilbert key of integer coordinates (each < 2^21). The frame's
 * coordinates stay in 32-bit words (21 bits are used): half the integer
 * work of 64-bit ones on the GPU, where the keys of a build are compute
 * bound. */
BN_HD uint64_t bn_key_hilbert(uint32_t ix, uint32_t iy, uint32_t iz)
{
    uint32_t px = ix, py = iy, pz = iz;
    uint64_t key = 0;
    for (int jj = BN_KEY_BITS - 1; jj >= 0; jj--) {
        const uint32_t xi = (px >> jj) & 1u, yi = (py >> jj) & 1u, zi = (pz >> jj) & 1u;
        const uint32_t nyi = yi ^ 1u, nzi = zi ^ 1u;
        /* turn the frame: invert the lower bits where the Karnaugh-map
         * minimised conditions hold */
        px ^= 0u - (xi & (nyi | zi));
        py ^= 0u - ((xi & (yi | zi)) | (yi & nzi));
        pz ^= 0u - ((xi & nyi & nzi) | (yi & nzi));
        key |= (uint64_t)((xi << 2) | ((xi ^ yi) << 1) | ((xi ^ zi) ^ yi)) << (3 * jj);
        if (zi) { /* rotate uncyclic x -> z -> y -> x */
            const uint32_t pt = px;
            px = py;
            py = pz;
            pz = pt;
        } else if (!yi) { /* exchange x and z */
            const uint32_t pt = px;
            px = pz;
            pz = pt;
        }
    }
    return key;
}

/* Inverse of bn_key_hilbert. */
BN_HD void bn_key_hilbert_decode(uint64_t key, uint32_t *rx, uint32_t *ry, uint32_t *rz)
{
    uint64_t px = 0, py = 0, pz = 0;
    for (int jj = 0; jj < BN_KEY_BITS; jj++) {
        const uint64_t xi = (key >> (3 * jj + 2)) & 1u;
        const uint64_t yi = (key >> (3 * jj + 1)) & 1u;
        const uint64_t zi = (key >> (3 * jj)) & 1u;
        const uint64_t nxi = xi ^ 1u, nyi = yi ^ 1u, nzi = zi ^ 1u;
        if (yi ^ zi) { /* rotate cyclic x -> y -> z -> x */
            const uint64_t pt = px;
            px = pz;
            pz = py;
            py = pt;
        } else if ((nxi & nyi & nzi) | (xi & yi & zi)) { /* exchange x and z */
            const uint64_t pt = px;
            px = pz;
            pz = pt;
        }
        const uint64_t mask = ((uint64_t)1 << jj) - 1u;
        px ^= mask & ((uint64_t)0 - (xi & (yi | zi)));
        py ^= mask & ((uint64_t)0 - ((xi & (nyi | nzi)) | (nxi & yi & zi)));
        pz ^= mask & ((uint64_t)0 - ((xi & nyi & nzi) | (yi & zi)));
        px |= xi << jj;
        py |= (xi ^ yi) << jj;
        pz |= (yi ^ zi) << jj;
    }
    *rx = (uint32_t)px;
    *ry = (uint32_t)py;
    *rz = (uint32_t)pz;
}

/* Integer coordinate of x in a cube [lo, lo + size): clamped to 21 bits. */
BN_HD uint32_t bn_key_quantize(double x, double lo, double inv_size)
{
    double f = (x - lo) * inv_size * (double)(1u << BN_KEY_BITS);
    if (!(f > 0.0)) return 0u; /* also NaN */
    if (f >= (double)BN_KEY_COORD_MAX) return BN_KEY_COORD_MAX;
    return (uint32_t)f;
}

BN_HD uint64_t bn_key_encode(int hilbert, uint32_t ix, uint32_t iy, uint32_t iz)
{
    return hilbert ? bn_key_hilbert(ix, iy, iz) : bn_key_morton(ix, iy, iz);
}

/* The key of point (x, y, z) in the cube [lo, lo + 1 / inv_size)^3. */
BN_HD uint64_t bn_key_of_point(int hilbert, double x, double y, double z, const double lo[3], double inv_size)
{
    return bn_key_encode(hilbert, bn_key_quantize(x, lo[0], inv_size), bn_key_quantize(y, lo[1], inv_size),
                         bn_key_quantize(z, lo[2], inv_size));
}

BN_HD void bn_key_decode(int hilbert, uint64_t key, uint32_t *ix, uint32_t *iy, uint32_t *iz)
{
    if (hilbert)
        bn_key_hilbert_decode(key, ix, iy, iz);
    else
        bn_key_morton_decode(key, ix, iy, iz);
}
/* The key cube [lo, lo + side)^3 around the bounding box [mn, mx] (both
 * backends): enlarged by a relative 2^-20 so that the largest coordinate
 * quantises below 2^21, widened again where the centre's rounding pushes
 * the top out; a single point gets a unit cube (any positive side works).
 * The side is at least 2^-40 of the largest coordinate: far from the
 * origin (all bodies at 1e100) a side of 1 or of the extent would vanish
 * in lo + side, and the cube with it.
 * Returns the side, not finite when the particles span too much. */
BN_HD double bn_key_cube(const double mn[3], const double mx[3], double lo[3])
{
    double extent = 0, mag = 0;
    for (int k = 0; k < 3; k++) {
        if (mx[k] - mn[k] > extent) extent = mx[k] - mn[k];
        mag = fmax(mag, fmax(fabs(mn[k]), fabs(mx[k])));
    }
    double side = extent > 0 ? extent * (1.0 + 0x1p-20) : 1.0;
    if (side < 0x1p-40 * mag) side = 0x1p-40 * mag;
    for (int k = 0; k < 3; k++) {
        lo[k] = 0.5 * (mn[k] + mx[k]) - 0.5 * side;
        if (lo[k] + side <= mx[k]) side = (mx[k] - lo[k]) * (1.0 + 0x1p-20);
    }
    return side;
}

/* The levels two keys' cells share from the root (BN_KEY_MAX_LEVEL for
 * equal keys): the smallest cell holding both, and every key between
 * them, has side cube / 2^levels. */
BN_HD int bn_key_common_levels(uint64_t a, uint64_t b)
{
    const uint64_t x = a ^ b;
    int L = 0;
    while (L < BN_KEY_MAX_LEVEL && (x >> (3 * (BN_KEY_MAX_LEVEL - 1 - L))) == 0) L++;
    return L;
}

#endif
