/*
 * Per-interaction math of the field solver (src/mesh/field_*.c, .cu):
 * sources with K = 1 or 3 signed strength components (mesh cells, the
 * vorticity's components; particle masses), shared by both backends and
 * compiled in double (_d, CPU) and float (_f, GPU) from
 * field_interact_impl.h, as interact.h is for particles.
 *
 * Why not interact.h's cells: signed strengths have no centre of mass, so
 * a cell's expansion is taken about the centre c of its sources' box,
 * with monopole M, dipole D = sum q s and traceless quadrupole Q = sum q
 * (3 s s - s^2 I) per component (s = x - c); with positive masses about
 * their com the dipole would vanish, here it is carried.
 *
 * Conventions as in interact.h: d = x_source (or c) - x_target; per
 * component the sums phi -= q / r and g += q d / r^3 (g = grad of sum q/r
 * at the target), the caller scales them (gravity: G phi, G g;
 * vorticity: psi = -phi / (4 pi), grad psi = g / (4 pi)).
 *
 *   cell:  phi -= M/r - D.d/r^3 + 1/2 d.Q.d/r^5
 *          g   += M d/r^3 + D/r^3 - 3 (D.d) d/r^5 - Q.d/r^5
 *                 + 5/2 (d.Q.d) d/r^7
 *   smoothed point (paper 002, e^2 = eps2 > 0):
 *          phi -= q (r^2 + 3/2 e^2) / (r^2 + e^2)^(3/2)
 *          g   += q (r^2 + 5/2 e^2) / (r^2 + e^2)^(5/2) d
 *
 * Flop counts (rsqrt as 4): point 12 + 8 K; smoothed 20 + 8 K; cell 12 +
 * 44 K (per component: dipole 11, quadrupole 20, monopole and sums 13).
 */
#ifndef BN_FIELD_INTERACT_H
#define BN_FIELD_INTERACT_H
#include <math.h>
#include "core/hostdevice.h"
#include "gravity/interact.h"

#define BN_FIELD_FLOPS_PP(K) (12 + 8 * (K))
#define BN_FIELD_FLOPS_PC(K) (12 + 44 * (K))
/* Moments of one component of a cell: M, D x y z, Q xx yy zz xy xz yz. */
#define BN_FIELD_MOMENTS 10

#define BN_T double
#define BN_FN(name) name##_d
#define BN_RSQRT(x) BN_RSQRT_D(x)
#include "gravity/field_interact_impl.h"
#undef BN_T
#undef BN_FN
#undef BN_RSQRT

#define BN_T float
#define BN_FN(name) name##_f
#define BN_RSQRT(x) BN_RSQRT_F(x)
#include "gravity/field_interact_impl.h"
#undef BN_T
#undef BN_FN
#undef BN_RSQRT

/* A node's moments are summed as raw moments about its centre, per
 * component: M = sum q, D = sum q s, S = sum q s s (xx yy zz xy xz yz);
 * bn_field_moments_finish turns S into the traceless Q = 3 S - tr(S) I. */
BN_HD void bn_field_moments_add(double *w, double q, const double s[3])
{
    w[0] += q;
    for (int a = 0; a < 3; a++) w[1 + a] += q * s[a];
    w[4] += q * s[0] * s[0];
    w[5] += q * s[1] * s[1];
    w[6] += q * s[2] * s[2];
    w[7] += q * s[0] * s[1];
    w[8] += q * s[0] * s[2];
    w[9] += q * s[1] * s[2];
}

/* A child's raw moments v, its centre at d from the parent's, added to the
 * parent's w: D += M d, S_ab += D_a d_b + d_a D_b + M d_a d_b. */
BN_HD void bn_field_moments_shift_add(double *w, const double *v, const double d[3])
{
    const int pa[6] = {0, 1, 2, 0, 0, 1}, pb[6] = {0, 1, 2, 1, 2, 2};
    w[0] += v[0];
    for (int a = 0; a < 3; a++) w[1 + a] += v[1 + a] + v[0] * d[a];
    for (int p = 0; p < 6; p++)
        w[4 + p] += v[4 + p] + v[1 + pa[p]] * d[pb[p]] + d[pa[p]] * v[1 + pb[p]] + v[0] * d[pa[p]] * d[pb[p]];
}

/* In place: S to the traceless Q = 3 S - tr(S) I (M and D kept). */
BN_HD void bn_field_moments_finish(double *w)
{
    const double tr = w[4] + w[5] + w[6];
    for (int p = 0; p < 6; p++) w[4 + p] = 3.0 * w[4 + p] - (p < 3 ? tr : 0.0);
}

/* A cell's opening radius: a target group whose box comes within it of
 * the centre of the cell's box (largest side l, half diagonal a) opens
 * the cell: l / theta, as FLASH's and Bonsai's d > l/theta + delta with
 * delta = 0 (the expansion is about that centre; its error goes as
 * (a/d)^3), and never less than a, so that no accepted cell holds a
 * target. theta <= 0: open everything. */
BN_HD double bn_field_open_radius(double l, double a, double theta)
{
    if (!(theta > 0.0)) return 1e300;
    const double r = l / theta;
    return r > a ? r : a;
}
#endif
