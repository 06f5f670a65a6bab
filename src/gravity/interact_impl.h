/* Included by interact.h once per precision with BN_T (the real type),
 * BN_FN(name) (the suffixed name), BN_RSQRT and BN_RSQRT_CELL defined. No include guard
 * on purpose. */

/* Squared distance from point c to the box [lo, hi] (0 inside). */
BN_HD BN_T BN_FN(bn_box_dist2)(BN_T cx, BN_T cy, BN_T cz, BN_T lox, BN_T loy, BN_T loz,
                               BN_T hix, BN_T hiy, BN_T hiz)
{
    /* max(lo - c, c - hi, 0) per axis: selects, no branches (the walk
     * tests every cell it meets; branches here mispredict half the time) */
    BN_T dx = lox - cx, dy = loy - cy, dz = loz - cz;
    const BN_T ex = cx - hix, ey = cy - hiy, ez = cz - hiz;
    dx = dx > ex ? dx : ex;
    dy = dy > ey ? dy : ey;
    dz = dz > ez ? dz : ez;
    dx = dx > (BN_T)0 ? dx : (BN_T)0;
    dy = dy > (BN_T)0 ? dy : (BN_T)0;
    dz = dz > (BN_T)0 ? dz : (BN_T)0;
    return dx * dx + dy * dy + dz * dz;
}

/* Geometric criteria (bonsai, bh, and the guard of accel): open when the
 * group box is not farther from the centre of mass than the opening
 * radius. "Not farther", so that a cell of radius 0 (bonsai-box: one body,
 * or bodies at one point) is opened by a group that holds it. */
BN_HD int BN_FN(bn_mac_geometric_open)(BN_T dist2, BN_T open_radius2)
{
    return dist2 <= open_radius2;
}

/* Relative acceleration criterion (GADGET-2 eq. 18, GOTHIC eq. 5): accept
 * a cell of mass M and size l at distance d when
 *     G M l^2 / d^4 <= alpha |a_old|,
 * |a_old| the smallest old acceleration of the group. Open otherwise.
 * gml2 = G M l^2 per cell; alpha_amin = alpha * min |a_old|. */
BN_HD int BN_FN(bn_mac_accel_open)(BN_T dist2, BN_T open_radius2, BN_T gml2, BN_T alpha_amin)
{
    return dist2 <= open_radius2 || gml2 > alpha_amin * dist2 * dist2;
}

/* 1/sqrt(r2), and 0 for r2 = 0 (a source on the target without
 * softening: no force, no potential). Written as a select on the value
 * instead of a branch around the rsqrt so that loops over it vectorise
 * (gcc does not if-convert the branch for AVX2 and older). */
BN_HD BN_T BN_FN(bn_rinv)(BN_T r2)
{
    const BN_T live = r2 > (BN_T)0 ? (BN_T)1 : (BN_T)0;
    return BN_RSQRT(r2 + ((BN_T)1 - live)) * live;
}

/* Softened particle-particle interaction; d = x_source - x_target.
 * A source at the target's own position contributes m/eps to the
 * potential (callers remove the self term) and nothing to the force. */
BN_HD void BN_FN(bn_pp)(BN_T dx, BN_T dy, BN_T dz, BN_T m, BN_T eps2, BN_T *ax, BN_T *ay,
                        BN_T *az, BN_T *phi)
{
    const BN_T r2 = eps2 + dx * dx + dy * dy + dz * dz; /* three fma */
    const BN_T rinv = BN_FN(bn_rinv)(r2);
    const BN_T mrinv = m * rinv;
    const BN_T mrinv3 = mrinv * rinv * rinv;
    *ax += mrinv3 * dx;
    *ay += mrinv3 * dy;
    *az += mrinv3 * dz;
    *phi -= mrinv;
}

/* bn_pp for softened forces only (eps2 > 0, so r^2 > 0): without the
 * r^2 = 0 guard, the same bits as bn_pp. The hottest loops (the GPU's
 * direct summation and particle-particle tiles) take it when eps > 0. */
BN_HD void BN_FN(bn_pp_soft)(BN_T dx, BN_T dy, BN_T dz, BN_T m, BN_T eps2, BN_T *ax, BN_T *ay, BN_T *az,
                             BN_T *phi)
{
    const BN_T r2 = eps2 + dx * dx + dy * dy + dz * dz; /* three fma */
    const BN_T rinv = BN_RSQRT(r2);
    const BN_T mrinv = m * rinv;
    const BN_T mrinv3 = mrinv * rinv * rinv;
    *ax += mrinv3 * dx;
    *ay += mrinv3 * dy;
    *az += mrinv3 * dz;
    *phi -= mrinv;
}

/* Particle-cell interaction, monopole + traceless quadrupole about the
 * cell's centre of mass; d = com - x_target:
 *   phi = -M/r - (d.Q.d) / (2 r^5)
 *   a   =  M d/r^3 - Q.d/r^5 + 5/2 (d.Q.d) d / r^7
 * The six components come as values (xx, yy, zz, xy, xz, yz), so that a
 * loop over structure-of-arrays cell lists vectorises (an array argument
 * built per source defeats gcc's vectoriser); bn_pc below takes them as
 * an array. Pass zeros for monopole only. */
BN_HD void BN_FN(bn_pc6)(BN_T dx, BN_T dy, BN_T dz, BN_T m, BN_T qxx, BN_T qyy, BN_T qzz, BN_T qxy, BN_T qxz,
                         BN_T qyz, BN_T eps2, BN_T *ax, BN_T *ay, BN_T *az, BN_T *phi)
{
    /* an accepted cell is never at r = 0 (d > opening radius > 0), so
     * no guard; see BN_RSQRT_CELL in interact.h */
    const BN_T r2 = eps2 + dx * dx + dy * dy + dz * dz; /* three fma */
    const BN_T rinv = BN_RSQRT_CELL(r2);
    const BN_T rinv2 = rinv * rinv;
    const BN_T mrinv = m * rinv;
    const BN_T qdx = qxx * dx + qxy * dy + qxz * dz;
    const BN_T qdy = qxy * dx + qyy * dy + qyz * dz;
    const BN_T qdz = qxz * dx + qyz * dy + qzz * dz;
    const BN_T dqd = dx * qdx + dy * qdy + dz * qdz;
    const BN_T rinv5 = rinv2 * rinv2 * rinv;
    const BN_T half_dqd_r5 = (BN_T)0.5 * dqd * rinv5;
    const BN_T radial = (mrinv + (BN_T)5 * half_dqd_r5) * rinv2;
    /* one product per update: each folds into an fma on the accumulator */
    *phi -= mrinv;
    *phi -= half_dqd_r5;
    *ax += radial * dx;
    *ax -= rinv5 * qdx;
    *ay += radial * dy;
    *ay -= rinv5 * qdy;
    *az += radial * dz;
    *az -= rinv5 * qdz;
}

/* The same with q holding xx, yy, zz, xy, xz, yz. */
BN_HD void BN_FN(bn_pc)(BN_T dx, BN_T dy, BN_T dz, BN_T m, const BN_T *q, BN_T eps2,
                        BN_T *ax, BN_T *ay, BN_T *az, BN_T *phi)
{
    BN_FN(bn_pc6)(dx, dy, dz, m, q[BN_QXX], q[BN_QYY], q[BN_QZZ], q[BN_QXY], q[BN_QXZ], q[BN_QYZ], eps2, ax, ay,
                  az, phi);
}

/* Local (Taylor) expansion of the potential about a group's centre: the
 * far field of many cells, made once per group and evaluated at each of
 * its targets (y = x_target - centre):
 *   phi(y) = phi + (-a).y + 1/2 y.H.y + 1/6 T[y,y,y]
 *   a(y)   = a - H.y - 1/2 T[.,y,y]
 * phi, a: potential and acceleration at the centre (monopole +
 * quadrupole, exactly bn_pc6); H: the Hessian of phi (monopole +
 * quadrupole); T: third derivatives (monopole). Dropped terms are of
 * relative size (|y|/d)^3 and (l/d)^2 |y|/d for a cell of size l at
 * distance d, the order of the quadrupole's own truncation error when
 * |y| < l: a second-order expansion suits a quadrupole tree. Accumulated
 * without G, like bn_pc6. */
#define BN_LOCAL_DECLARE(f) BN_T f;
typedef struct BN_FN(bn_local) {
    BN_LOCAL_FIELDS(BN_LOCAL_DECLARE)
} BN_FN(bn_local);
#undef BN_LOCAL_DECLARE

/* The expansion of one cell (mass m, traceless quadrupole q.., centre of
 * mass at d = com - centre) about the centre: every term assigned. */
BN_HD void BN_FN(bn_local_set)(BN_T dx, BN_T dy, BN_T dz, BN_T m, BN_T qxx, BN_T qyy, BN_T qzz, BN_T qxy,
                               BN_T qxz, BN_T qyz, BN_T eps2, BN_FN(bn_local) *L)
{
    const BN_T r2 = eps2 + dx * dx + dy * dy + dz * dz; /* three fma */
    const BN_T rinv = BN_RSQRT_CELL(r2); /* one rsqrt: see bn_pc6 */
    const BN_T rinv2 = rinv * rinv;
    const BN_T a = m * rinv * rinv2;    /* m / r^3   */
    const BN_T b = (BN_T)3 * a * rinv2; /* 3 m / r^5 */
    const BN_T c = (BN_T)5 * b * rinv2; /* 15 m / r^7 */
    const BN_T qdx = qxx * dx + qxy * dy + qxz * dz;
    const BN_T qdy = qxy * dx + qyy * dy + qyz * dz;
    const BN_T qdz = qxz * dx + qyz * dy + qzz * dz;
    const BN_T dqd = dx * qdx + dy * qdy + dz * qdz;
    /* 1/r^5 and 1/r^7 never stand alone: each product starts from a
     * moment (m, Q), so that it stays of the size of the field it makes
     * (float on the GPU: 1/r^7 alone overflows for r < 2^-18.3 in the
     * tree's units, while Q / r^7 does not) */
    const BN_T r5 = rinv2 * rinv2 * rinv;
    const BN_T q5x = qdx * r5, q5y = qdy * r5, q5z = qdz * r5; /* (Q.d) / r^5 */
    const BN_T dqd5 = dqd * r5, dqd7 = dqd5 * rinv2;          /* d.Q.d / r^5, / r^7 */
    /* phi and a at the centre: bn_pc6's expressions */
    const BN_T half_dqd_r5 = (BN_T)0.5 * dqd5;
    const BN_T radial = a + (BN_T)5 * half_dqd_r5 * rinv2;
    L->phi = -m * rinv - half_dqd_r5;
    L->ax = radial * dx - q5x;
    L->ay = radial * dy - q5y;
    L->az = radial * dz - q5z;
    /* H = a I - b d d + the quadrupole part -1/6 Q:d4(1/r) =
     *   -35/2 (d.Q.d) d d / r^9 + 5/2 (2 d q + 2 q d + (d.Q.d) I) / r^7 - Q / r^5,  q = Q.d */
    const BN_T u = b + (BN_T)17.5 * dqd7 * rinv2; /* monopole + quadrupole d d coefficient */
    const BN_T v = (BN_T)5 * rinv2, w = a + (BN_T)2.5 * dqd7;
    L->hxx = w - u * dx * dx + v * (dx * q5x + dx * q5x) - qxx * r5;
    L->hyy = w - u * dy * dy + v * (dy * q5y + dy * q5y) - qyy * r5;
    L->hzz = w - u * dz * dz + v * (dz * q5z + dz * q5z) - qzz * r5;
    L->hxy = -u * dx * dy + v * (dx * q5y + dy * q5x) - qxy * r5;
    L->hxz = -u * dx * dz + v * (dx * q5z + dz * q5x) - qxz * r5;
    L->hyz = -u * dy * dz + v * (dy * q5z + dz * q5y) - qyz * r5;
    /* T = -c d d d + b (d_i I_jk + d_j I_ik + d_k I_ij), monopole only */
    const BN_T cx = c * dx, cy = c * dy, cz = c * dz;
    L->txxx = ((BN_T)3 * b - cx * dx) * dx;
    L->tyyy = ((BN_T)3 * b - cy * dy) * dy;
    L->tzzz = ((BN_T)3 * b - cz * dz) * dz;
    L->txxy = (b - cx * dx) * dy;
    L->txxz = (b - cx * dx) * dz;
    L->txyy = (b - cy * dy) * dx;
    L->tyyz = (b - cy * dy) * dz;
    L->txzz = (b - cz * dz) * dx;
    L->tyzz = (b - cz * dz) * dy;
    L->txyz = -cx * dy * dz;
}

/* Add the expansion's field at y = x_target - centre. */
BN_HD void BN_FN(bn_local_eval)(const BN_FN(bn_local) *L, BN_T yx, BN_T yy, BN_T yz, BN_T *ax, BN_T *ay,
                                BN_T *az, BN_T *phi)
{
    const BN_T hx = L->hxx * yx + L->hxy * yy + L->hxz * yz;
    const BN_T hy = L->hxy * yx + L->hyy * yy + L->hyz * yz;
    const BN_T hz = L->hxz * yx + L->hyz * yy + L->hzz * yz;
    const BN_T xx = yx * yx, yy2 = yy * yy, zz = yz * yz;
    const BN_T xy = (BN_T)2 * yx * yy, xz = (BN_T)2 * yx * yz, yz2 = (BN_T)2 * yy * yz;
    const BN_T tx = L->txxx * xx + L->txyy * yy2 + L->txzz * zz + L->txxy * xy + L->txxz * xz + L->txyz * yz2;
    const BN_T ty = L->txxy * xx + L->tyyy * yy2 + L->tyzz * zz + L->txyy * xy + L->txyz * xz + L->tyyz * yz2;
    const BN_T tz = L->txxz * xx + L->tyyz * yy2 + L->tzzz * zz + L->txyz * xy + L->txzz * xz + L->tyzz * yz2;
    *ax += L->ax - hx - (BN_T)0.5 * tx;
    *ay += L->ay - hy - (BN_T)0.5 * ty;
    *az += L->az - hz - (BN_T)0.5 * tz;
    *phi += L->phi - (L->ax * yx + L->ay * yy + L->az * yz) +
            (BN_T)0.5 * (yx * hx + yy * hy + yz * hz) + (yx * tx + yy * ty + yz * tz) / (BN_T)6;
}
