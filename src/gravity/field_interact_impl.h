/* Included by field_interact.h once per precision (BN_T, BN_FN,
 * BN_RSQRT defined); no include guard on purpose. */

/* K sources at offset d with potential kernel f and force kernel h:
 * phi[k] -= q[k] f, g[3k..3k+2] += q[k] h d. */
BN_HD void BN_FN(bn_field_accumulate)(int K, BN_T dx, BN_T dy, BN_T dz, const BN_T *q, BN_T f, BN_T h, BN_T *phi,
                                      BN_T *g)
{
    for (int k = 0; k < K; k++) {
        phi[k] -= q[k] * f;
        const BN_T w = q[k] * h;
        g[3 * k + 0] += w * dx;
        g[3 * k + 1] += w * dy;
        g[3 * k + 2] += w * dz;
    }
}

/* K point sources at one place (strengths q[0..K-1]) on one target:
 * d = source - target; phi[k] and g[3 k + 0..2] accumulate. A source on
 * the target (r = 0) adds nothing (its cell's exact self term comes from
 * the near-field correction). */
BN_HD void BN_FN(bn_field_pp)(int K, BN_T dx, BN_T dy, BN_T dz, const BN_T *q, BN_T *phi, BN_T *g)
{
    const BN_T r2 = dx * dx + dy * dy + dz * dz;
    const BN_T rinv = BN_FN(bn_rinv)(r2);
    BN_FN(bn_field_accumulate)(K, dx, dy, dz, q, rinv, rinv * rinv * rinv, phi, g);
}

/* The same with paper 002's smoothed kernel (eps2 > 0). */
BN_HD void BN_FN(bn_field_pp_smooth)(int K, BN_T dx, BN_T dy, BN_T dz, const BN_T *q, BN_T eps2, BN_T *phi, BN_T *g)
{
    const BN_T r2 = dx * dx + dy * dy + dz * dz;
    const BN_T s = r2 + eps2;
    const BN_T sinv = BN_RSQRT(s);
    const BN_T sinv2 = sinv * sinv;
    const BN_T f = (r2 + (BN_T)1.5 * eps2) * sinv2 * sinv;
    const BN_T h = (r2 + (BN_T)2.5 * eps2) * sinv2 * sinv2 * sinv;
    BN_FN(bn_field_accumulate)(K, dx, dy, dz, q, f, h, phi, g);
}

/* A cell with K components of moments m[k * BN_FIELD_MOMENTS + 0..9]
 * (M, Dx, Dy, Dz, Qxx, Qyy, Qzz, Qxy, Qxz, Qyz) about its centre; d =
 * centre - target (never 0: accepted cells lie beyond their radius). */
BN_HD void BN_FN(bn_field_pc)(int K, BN_T dx, BN_T dy, BN_T dz, const BN_T *m, BN_T *phi, BN_T *g)
{
    const BN_T r2 = dx * dx + dy * dy + dz * dz;
    const BN_T rinv = BN_RSQRT(r2);
    const BN_T rinv2 = rinv * rinv;
    const BN_T rinv3 = rinv2 * rinv;
    const BN_T rinv5 = rinv3 * rinv2;
    for (int k = 0; k < K; k++) {
        const BN_T *c = m + k * 10;
        const BN_T dd = c[1] * dx + c[2] * dy + c[3] * dz;          /* D.d  */
        const BN_T qx = c[4] * dx + c[7] * dy + c[8] * dz;          /* Q.d  */
        const BN_T qy = c[7] * dx + c[5] * dy + c[9] * dz;
        const BN_T qz = c[8] * dx + c[9] * dy + c[6] * dz;
        const BN_T dqd = dx * qx + dy * qy + dz * qz;
        phi[k] -= c[0] * rinv - dd * rinv3 + (BN_T)0.5 * dqd * rinv5;
        /* radial: M/r^3 - 3 (D.d)/r^5 + 5/2 (d.Q.d)/r^7 */
        const BN_T radial = c[0] * rinv3 + ((BN_T)2.5 * dqd * rinv2 - (BN_T)3 * dd) * rinv5;
        g[3 * k + 0] += radial * dx + c[1] * rinv3 - qx * rinv5;
        g[3 * k + 1] += radial * dy + c[2] * rinv3 - qy * rinv5;
        g[3 * k + 2] += radial * dz + c[3] * rinv3 - qz * rinv5;
    }
}
