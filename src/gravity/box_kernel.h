/*
 * The exact field of a uniform rectangular box: what a mesh cell is, as a
 * source, near its targets (the point-mass kernel of interact.h is off by
 * the cell's hexadecapole and higher there, and infinite on the cell
 * itself). One source for both backends (BN_HD).
 *
 * For the box [x1, x2] x [y1, y2] x [z1, z2], given relative to the field
 * point (corners minus target), of unit density (MacMillan 1930; Nagy,
 * Papp and Benedek 2000, eqs. 8-10):
 *
 *   V   = integral dV / r
 *       = ||| x y ln(z + r) + y z ln(x + r) + z x ln(y + r)
 *             - x^2/2 atan(y z / (x r)) - y^2/2 atan(z x / (y r))
 *             - z^2/2 atan(x y / (z r)) |||
 *   g_x = integral x / r^3 dV      (the sources' pull, d = source - target)
 *       = -||| y ln(z + r) + z ln(y + r) - x atan(y z / (x r)) |||
 *
 * with ||| F ||| = sum over the 8 corners of (-1)^(i + j + k) F(x_i, y_j,
 * z_k), i, j, k = 1 for the lower and 2 for the upper bound, sign + for
 * i + j + k odd... written out below as the product of (+1 upper, -1
 * lower) per axis. A term whose coefficient is 0 is 0 (its logarithm or
 * arctangent may not exist there: a corner on the target).
 *
 * The sums cancel in the corners as the box moves away, losing about
 * (r / side)^3 of the precision: use it for the nearest cells only (the
 * callers do: within a few cells), where double keeps 1e-12.
 *
 * Results follow interact.h's convention: phi accumulates -V, the field
 * +g (multiply by G rho, or by the strength per volume).
 */
#ifndef BN_BOX_KERNEL_H
#define BN_BOX_KERNEL_H
#include <math.h>
#include "core/hostdevice.h"

/* c ln(a + r), r = |(a, b, d)|, 0 where c == 0. For a < 0, a + r cancels
 * (to exactly 0 once b^2 + d^2 < 1e-16 a^2: a target within 1e-8 sides of
 * a cell's edge, where ln(0) times a tiny c made NaN); there a + r = (b^2
 * + d^2) / (r - a), r - a > 0, and hypot keeps b^2 + d^2 from underflow.
 * Every caller's c is 0 where b = d = 0 (c is b, d or b d), so ln(0) is
 * never multiplied. */
BN_HD double bn_box_clog(double c, double a, double b, double d, double r)
{
    if (c == 0.0) return 0.0;
    if (a >= 0.0) return c * log(a + r);
    return c * (2.0 * log(hypot(b, d)) - log(r - a));
}

/* c atan(p / (q r)), 0 where c == 0 (q == 0 there). */
BN_HD double bn_box_catan(double c, double p, double q, double r)
{
    return c == 0.0 ? 0.0 : c * atan(p / (q * r));
}

/* The corner function of V. */
BN_HD double bn_box_corner_pot(double x, double y, double z)
{
    const double r = sqrt(x * x + y * y + z * z);
    return bn_box_clog(x * y, z, x, y, r) + bn_box_clog(y * z, x, y, z, r) + bn_box_clog(z * x, y, z, x, r) -
           bn_box_catan(0.5 * x * x, y * z, x, r) - bn_box_catan(0.5 * y * y, z * x, y, r) -
           bn_box_catan(0.5 * z * z, x * y, z, r);
}

/* The corner function of g_x (permute the arguments for y and z). */
BN_HD double bn_box_corner_gx(double x, double y, double z)
{
    const double r = sqrt(x * x + y * y + z * z);
    return -(bn_box_clog(y, z, x, y, r) + bn_box_clog(z, y, z, x, r) - bn_box_catan(x, y * z, x, r));
}

/* Potential and field of the box [lo, hi] (relative to the target) of
 * unit density: adds -V to *phi and g to g[0..2]. */
BN_HD void bn_box_field(const double lo[3], const double hi[3], double *phi, double g[3])
{
    double v = 0.0, gx = 0.0, gy = 0.0, gz = 0.0;
    for (int c = 0; c < 8; c++) {
        const double x = (c & 1) ? hi[0] : lo[0], y = (c & 2) ? hi[1] : lo[1], z = (c & 4) ? hi[2] : lo[2];
        /* + for an even number of lower bounds */
        const double s = ((((c & 1) == 0) + ((c & 2) == 0) + ((c & 4) == 0)) & 1) ? -1.0 : 1.0;
        v += s * bn_box_corner_pot(x, y, z);
        gx += s * bn_box_corner_gx(x, y, z);
        gy += s * bn_box_corner_gx(y, z, x);
        gz += s * bn_box_corner_gx(z, x, y);
    }
    *phi -= v;
    g[0] += gx;
    g[1] += gy;
    g[2] += gz;
}

/* The same for a box of sides h centred at d (source centre - target). */
BN_HD void bn_box_field_at(const double d[3], const double h[3], double *phi, double g[3])
{
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = d[k] - 0.5 * h[k];
        hi[k] = d[k] + 0.5 * h[k];
    }
    bn_box_field(lo, hi, phi, g);
}
#endif
