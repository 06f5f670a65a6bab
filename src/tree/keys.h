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

/* The same curve as a state machine, for the GPU's keys (keys_cuda.cu),
 * where the loop above is compute bound. bn_key_hilbert's frame at a
 * level is which input axis each of px, py, pz holds and whether it is
 * inverted: 6 orders x 8 inversions = BN_KEY_HILBERT_STATES. An entry of
 * the table, for a state and the input's 3 bits at a level, holds the
 * key's 3 bits (low) and the next state (above them). The table is made
 * from the loop's own rules (bn_key_hilbert_entry), never typed in, and
 * test_keys checks the two encoders against each other. */
#define BN_KEY_HILBERT_STATES 48
#define BN_KEY_HILBERT_TABLE (BN_KEY_HILBERT_STATES * 8)

/* Order index 2 a + (b > c) of the axis order (a, b, c), and back. */
BN_HD int bn_key_order_index(const int ax[3]) { return 2 * ax[0] + (ax[1] > ax[2]); }
BN_HD void bn_key_order_axes(int idx, int ax[3])
{
    ax[0] = idx / 2;
    const int lo = ax[0] == 0 ? 1 : 0, hi = ax[0] == 2 ? 1 : 2;
    ax[1] = (idx & 1) ? hi : lo;
    ax[2] = (idx & 1) ? lo : hi;
}

/* One level of bn_key_hilbert in state s (order index * 8 + inversion
 * bits, x's bit highest) for input bits oct = ix_bit << 2 | iy_bit << 1 |
 * iz_bit: the key's 3 bits | next state << 3. */
BN_HD uint16_t bn_key_hilbert_entry(int s, int oct)
{
    int ax[3], inv[3];
    bn_key_order_axes(s >> 3, ax);
    for (int k = 0; k < 3; k++) inv[k] = (s >> (2 - k)) & 1;
    const int in[3] = {(oct >> 2) & 1, (oct >> 1) & 1, oct & 1};
    const int xi = in[ax[0]] ^ inv[0], yi = in[ax[1]] ^ inv[1], zi = in[ax[2]] ^ inv[2];
    const int nyi = yi ^ 1, nzi = zi ^ 1;
    const int digit = (xi << 2) | ((xi ^ yi) << 1) | ((xi ^ zi) ^ yi);
    inv[0] ^= xi & (nyi | zi);
    inv[1] ^= (xi & (yi | zi)) | (yi & nzi);
    inv[2] ^= (xi & nyi & nzi) | (yi & nzi);
    int to[3] = {0, 1, 2}; /* new px, py, pz = old words to[0..2] */
    if (zi) { /* px <- py, py <- pz, pz <- px */
        to[0] = 1;
        to[1] = 2;
        to[2] = 0;
    } else if (!yi) { /* exchange x and z */
        to[0] = 2;
        to[2] = 0;
    }
    int nax[3], ninv = 0;
    for (int k = 0; k < 3; k++) {
        nax[k] = ax[to[k]];
        ninv |= inv[to[k]] << (2 - k);
    }
    return (uint16_t)(digit | (bn_key_order_index(nax) * 8 + ninv) << 3);
}

BN_HD void bn_key_hilbert_table(uint16_t table[BN_KEY_HILBERT_TABLE])
{
    for (int e = 0; e < BN_KEY_HILBERT_TABLE; e++) table[e] = bn_key_hilbert_entry(e >> 3, e & 7);
}

/* bn_key_hilbert through the table: one lookup a level. The start state
 * is the identity order (index 0) with no inversion. */
BN_HD uint64_t bn_key_hilbert_lut(const uint16_t *table, uint32_t ix, uint32_t iy, uint32_t iz)
{
    uint64_t key = 0;
    unsigned s = 0;
    for (int jj = BN_KEY_BITS - 1; jj >= 0; jj--) {
        const unsigned oct = ((ix >> jj) & 1u) << 2 | ((iy >> jj) & 1u) << 1 | ((iz >> jj) & 1u);
        const unsigned e = table[s * 8 + oct];
        key = key << 3 | (e & 7u);
        s = e >> 3;
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

/* bn_key_of_point through the Hilbert table (table: bn_key_hilbert_table's;
 * unread for Morton keys): the GPU's keys of every particle, where the
 * loop's turns are compute bound (the build's keys, the crossers'
 * search). The same key as bn_key_of_point. */
BN_HD uint64_t bn_key_of_point_table(const uint16_t *table, int hilbert, double x, double y, double z,
                                     const double lo[3], double inv_size)
{
    const uint32_t ix = bn_key_quantize(x, lo[0], inv_size), iy = bn_key_quantize(y, lo[1], inv_size),
                   iz = bn_key_quantize(z, lo[2], inv_size);
    return hilbert ? bn_key_hilbert_lut(table, ix, iy, iz) : bn_key_morton(ix, iy, iz);
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

/* Whether [mn, mx] lies in the cube [lo, lo + side)^3 as the keys see
 * it: in bn_key_quantize's own arithmetic (x - lo) / side lands in [0, 1)
 * for both corners, so that no coordinate is clamped (a test on lo + side
 * would round where the side is below 2^-33 of the coordinates). */
BN_HD int bn_key_cube_holds(const double lo[3], double side, const double mn[3], const double mx[3])
{
    const double inv = 1.0 / side;
    for (int k = 0; k < 3; k++)
        if (!(mn[k] >= lo[k] && (mx[k] - lo[k]) * inv < 1.0)) return 0;
    return 1;
}

/* The key cube of [mn, mx] as a cell of the octree of the cube [a_lo,
 * a_lo + a_side)^3 (the domains' cube, the same on every rank), or of
 * one of its aligned super-cubes where the box leaves it: the smallest
 * such cell that holds the box (bn_key_cube_holds). Every rank's tree
 * then has the octants one tree of all ranks' bodies would have, so a
 * cell inside a rank's domain (a run of keys: a union of such cells)
 * holds the bodies of that one tree's cell. A cube of the box's own
 * (bn_key_cube) cuts the domains' surfaces with its octants: the cells
 * there hold a part of their bodies, leaves of up to leaf_size bodies
 * grow wider, and a walk takes more bodies one by one (Plummer 2^20 on 2
 * ranks, leaf 32: 31% more pp than one rank; aligned: the same).
 * a_side <= 0 or not finite, a box not finite, or a cell wider than 2^8
 * times the box's own cube (a small box across a wide cell's face, such
 * as the cube's centre, or a cube widened by one far body: keys too
 * coarse for this rank's bodies): bn_key_cube's. */
BN_HD double bn_key_cube_in(const double mn[3], const double mx[3], const double a_lo[3], double a_side,
                            double lo[3])
{
    double own_lo[3];
    const double own = bn_key_cube(mn, mx, own_lo);
    for (int k = 0; k < 3; k++) lo[k] = own_lo[k];
    if (!(a_side > 0.0 && a_side < INFINITY) || !(own < INFINITY)) return own;
    double c[3] = {a_lo[0], a_lo[1], a_lo[2]}, side = a_side;
    for (int up = 0; up < 64 && !bn_key_cube_holds(c, side, mn, mx); up++) { /* the cube doubled, itself an octant */
        for (int k = 0; k < 3; k++)
            if (mn[k] < c[k]) c[k] -= side;
        side *= 2.0;
    }
    if (!(side < INFINITY) || !bn_key_cube_holds(c, side, mn, mx)) return own;
    for (int down = 0; down < 64; down++) { /* into the octant that holds the box, while one does */
        const double h = 0.5 * side;
        double d[3];
        for (int k = 0; k < 3; k++) d[k] = mn[k] >= c[k] + h ? c[k] + h : c[k];
        if (h < own || !bn_key_cube_holds(d, h, mn, mx)) break;
        for (int k = 0; k < 3; k++) c[k] = d[k];
        side = h;
    }
    if (side > 0x1p8 * own) return own;
    for (int k = 0; k < 3; k++) lo[k] = c[k];
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
