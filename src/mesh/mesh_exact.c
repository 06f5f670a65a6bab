/* Exact fields of the mesh test problems (bn_mesh_ic_exact, banyan.h).
 *
 * Uniform sphere: phi = -2 pi G rho (R^2 - r^2/3) inside, -G M / r out.
 *
 * MacLaurin spheroid (a1 = a2 = a > a3 = c, Chandrasekhar 1969, ch. 3):
 *   phi = -pi G rho a^2 c [J0 - (x^2 + y^2) J1 - z^2 J3],
 *   J0 = int_l^inf du / ((a^2 + u) sqrt(c^2 + u)), J1 the same with
 *   (a^2 + u)^2, J3 with (c^2 + u)^(3/2); l = 0 inside, outside the
 *   positive root of (x^2 + y^2) / (a^2 + l) + z^2 / (c^2 + l) = 1.
 *   With s0 = sqrt(c^2 + l), k^2 = a^2 - c^2 (s = sqrt(c^2 + u)):
 *   J0 = 2/k atan(k/s0), J1 = atan(k/s0)/k^3 - s0 / (k^2 (s0^2 + k^2)),
 *   J3 = 2/k^2 (1/s0 - atan(k/s0)/k),
 *   and g = -grad phi = -2 pi G rho a^2 c (x J1, y J1, z J3) (the lower
 *   limit's derivative meets an integrand that is 0 on the surface).
 *   Inside this is -pi G rho (2 A1 a^2 + A3 c^2 - A1 (x^2 + y^2) - A3 z^2)
 *   with the index symbols A1 = a^2 c J1, A3 = a^2 c J3; FLASH's paper
 *   prints the A3 terms with the opposite signs (the issue warned). The
 *   sphere limit and direct summation check it (tests/test_mesh_exact.c).
 *
 * Vortex ring (paper 002): Psi = F(s) e_theta, s the distance from the
 * ring's core circle (radius R) in the meridional plane, F(s) = c1
 * exp(-c2 / (1 - (s/R)^2)) for s < R. omega = curl curl Psi = -(vector
 * Laplacian) Psi = -(F'' + F'/s + F' (r - R) / (s r) - F / r^2) e_theta
 * (r the distance from the axis), u = curl Psi = -F' z/s e_r +
 * (F/r + F' (r - R)/s) e_z.
 */
#include <math.h>
#include <string.h>
#include "core/error.h"
#include "mesh/mesh_internal.h"

#define BN_PI 3.14159265358979323846

/* ---- gravity ------------------------------------------------------------- */

static void sphere_field(const bn_mesh_ic_params *p, const double x[3], double *out)
{
    const double R = p->radius, rho = p->density, G = p->G;
    const double r2 = x[0] * x[0] + x[1] * x[1] + x[2] * x[2], r = sqrt(r2);
    const double M = 4.0 / 3.0 * BN_PI * R * R * R * rho;
    if (r <= R) {
        out[0] = -2.0 * BN_PI * G * rho * (R * R - r2 / 3.0);
        for (int k = 0; k < 3; k++) out[1 + k] = -4.0 / 3.0 * BN_PI * G * rho * x[k];
    } else {
        out[0] = -G * M / r;
        for (int k = 0; k < 3; k++) out[1 + k] = -G * M * x[k] / (r2 * r);
    }
}

/* J1 s0^3 and J3 s0^3 / 2 as functions of t = k / s0 (the formulas above
 * with k = t s0):
 *   J1 s0^3     = atan(t)/t^3 - 1/(t^2 (1 + t^2)) = sum_n (-1)^n (2n+2)/(2n+3) t^2n
 *   J3 s0^3 / 2 = (1 - atan(t)/t) / t^2           = sum_n (-1)^n t^2n / (2n+3)
 * The closed forms lose (eps / t^2) of their precision to cancellation (a
 * spheroid of e = 1e-6 had the potential wrong in the fifth digit, and
 * NaN at 1e-9): below t = 0.1 the series, whose terms fall by 100 each,
 * to 1e-17. */
static void maclaurin_j13(double t, double *j1, double *j3)
{
    if (t >= 0.1) {
        const double at = atan(t), t2 = t * t;
        *j1 = at / (t2 * t) - 1.0 / (t2 * (1.0 + t2));
        *j3 = (1.0 - at / t) / t2;
        return;
    }
    double a = 0.0, b = 0.0, p = 1.0;
    for (int n = 0; n < 9; n++, p *= -t * t) {
        a += p * (2.0 * n + 2.0) / (2.0 * n + 3.0);
        b += p / (2.0 * n + 3.0);
    }
    *j1 = a;
    *j3 = b;
}

static void maclaurin_field(const bn_mesh_ic_params *p, const double x[3], double *out)
{
    const double a = p->radius, e = p->eccentricity, c = a * sqrt(1.0 - e * e);
    const double a2 = a * a, c2 = c * c, k = a * e; /* k^2 = a^2 - c^2, without the cancellation */
    const double w2 = x[0] * x[0] + x[1] * x[1], z2 = x[2] * x[2];
    double lambda = 0.0;
    if (w2 / a2 + z2 / c2 > 1.0) {
        /* l^2 + B l + C = 0, B = a^2 + c^2 - w^2 - z^2, C = a^2 c^2 - w^2 c^2 - z^2 a^2 (< 0 outside) */
        const double B = a2 + c2 - w2 - z2, C = a2 * c2 - w2 * c2 - z2 * a2;
        const double disc = sqrt(B * B - 4.0 * C);
        lambda = B > 0 ? -2.0 * C / (B + disc) : 0.5 * (disc - B); /* the stable form of the root */
    }
    const double s0 = sqrt(c2 + lambda), t = k / s0, s3 = s0 * s0 * s0;
    double j1, j3;
    maclaurin_j13(t, &j1, &j3);
    const double J0 = 2.0 / s0 * (t > 0.0 ? atan(t) / t : 1.0); /* no cancellation: atan(t)/t -> 1 */
    const double J1 = j1 / s3, J3 = 2.0 * j3 / s3;
    const double f = BN_PI * p->G * p->density * a2 * c;
    out[0] = -f * (J0 - w2 * J1 - z2 * J3);
    out[1] = -2.0 * f * x[0] * J1;
    out[2] = -2.0 * f * x[1] * J1;
    out[3] = -2.0 * f * x[2] * J3;
}

/* ---- vortex rings -------------------------------------------------------- */

/* F(s), F'(s), F''(s) and F'(s)/s (finite at s = 0) of the ring profile. */
static void ring_profile(const bn_mesh_ic_params *p, double s, double F[4])
{
    const double R = p->radius, t = s / R;
    F[0] = F[1] = F[2] = F[3] = 0.0;
    if (!(t < 1.0)) return;
    const double q = 1.0 - t * t, c2 = p->c2;
    const double f = p->c1 * exp(-c2 / q);
    const double ft_over_t = f * (-2.0 * c2 / (q * q));                      /* F_t / t          */
    const double ftt = f * (4.0 * c2 * c2 * t * t / (q * q * q * q) - 2.0 * c2 * (1.0 / (q * q) + 4.0 * t * t / (q * q * q)));
    F[0] = f;
    F[1] = ft_over_t * t / R;
    F[2] = ftt / (R * R);
    F[3] = ft_over_t / (R * R);
}

/* One ring (centre C, unit axis n) at x: adds Psi, u and omega. */
static void ring_add(const bn_mesh_ic_params *p, const double C[3], const double n[3], const double x[3],
                     double psi[3], double u[3], double omega[3])
{
    double d[3], z = 0.0;
    for (int k = 0; k < 3; k++) d[k] = x[k] - C[k];
    for (int k = 0; k < 3; k++) z += d[k] * n[k];
    double er[3], r = 0.0;
    for (int k = 0; k < 3; k++) {
        er[k] = d[k] - z * n[k];
        r += er[k] * er[k];
    }
    r = sqrt(r);
    const double R = p->radius, s = sqrt((r - R) * (r - R) + z * z);
    if (!(s < R) || r == 0.0) return; /* outside the support (the axis is outside it) */
    for (int k = 0; k < 3; k++) er[k] /= r;
    const double et[3] = {n[1] * er[2] - n[2] * er[1], n[2] * er[0] - n[0] * er[2], n[0] * er[1] - n[1] * er[0]};
    double F[4];
    ring_profile(p, s, F);
    const double lap = F[2] + F[3] + F[3] * (r - R) / r - F[0] / (r * r);
    const double ur = -F[3] * z, uz = F[0] / r + F[3] * (r - R);
    for (int k = 0; k < 3; k++) {
        psi[k] += F[0] * et[k];
        u[k] += ur * er[k] + uz * n[k];
        if (omega) omega[k] += -lap * et[k];
    }
}

static void rings_field(const bn_mesh_ic_params *p, const double x[3], double *out, double *omega)
{
    static const double C1[3] = {0.25, 0.25, 0.25}, N1[3] = {0, 0, 1};
    static const double C2[3] = {0.75, 0.75, 0.75}, N2[3] = {1, 0, 0};
    double psi[3] = {0, 0, 0}, u[3] = {0, 0, 0};
    if (omega) omega[0] = omega[1] = omega[2] = 0.0;
    ring_add(p, C1, N1, x, psi, u, omega);
    ring_add(p, C2, N2, x, psi, u, omega);
    for (int k = 0; k < 3; k++) {
        out[k] = psi[k];
        out[3 + k] = u[k];
    }
}

bn_status bn_mesh_ic_exact(const bn_mesh_ic_params *p, const double x[3], double *out, double *omega)
{
    if (!p || !x || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_ic_exact: NULL argument");
    BN_TRY(bn_mesh_ic_check(p));
    if (p->problem == BN_MESH_VORTEX_RINGS) {
        rings_field(p, x, out, omega);
        return BN_OK;
    }
    const double c[3] = {x[0] - 0.5, x[1] - 0.5, x[2] - 0.5}; /* the body sits at the unit cube's centre */
    if (p->problem == BN_MESH_SPHERE || p->eccentricity == 0.0) sphere_field(p, c, out);
    else maclaurin_field(p, c, out);
    if (omega) omega[0] = omega[1] = omega[2] = 0.0;
    return BN_OK;
}
