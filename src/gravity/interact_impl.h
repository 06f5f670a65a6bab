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
 * group box is closer to the centre of mass than the opening radius. */
BN_HD int BN_FN(bn_mac_geometric_open)(BN_T dist2, BN_T open_radius2)
{
    return dist2 < open_radius2;
}

/* Relative acceleration criterion (GADGET-2 eq. 18, GOTHIC eq. 5): accept
 * a cell of mass M and size l at distance d when
 *     G M l^2 / d^4 <= alpha |a_old|,
 * |a_old| the smallest old acceleration of the group. Open otherwise.
 * gml2 = G M l^2 per cell; alpha_amin = alpha * min |a_old|. */
BN_HD int BN_FN(bn_mac_accel_open)(BN_T dist2, BN_T open_radius2, BN_T gml2, BN_T alpha_amin)
{
    return dist2 < open_radius2 || gml2 > alpha_amin * dist2 * dist2;
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
    const BN_T r2 = dx * dx + dy * dy + dz * dz + eps2;
    const BN_T rinv = BN_FN(bn_rinv)(r2);
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
    const BN_T r2 = dx * dx + dy * dy + dz * dz + eps2;
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
