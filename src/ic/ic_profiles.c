/*
 * Truncated Hernquist and NFW profiles in units G = 1, scale radius 1,
 * total mass 1.
 *
 * Untruncated models with mass scale 1 (x = r / r_s):
 *   Hernquist (1990, eqs. 2-5): rho = 1/(2 pi x (1+x)^3), M = x^2/(1+x)^2,
 *                               Phi = -1/(1+x)
 *   NFW (Navarro, Frenk & White 1997, eq. 3): rho = 1/(4 pi x (1+x)^2),
 *                               M = ln(1+x) - x/(1+x), Phi = -ln(1+x)/x
 *
 * Truncation. A density that jumps to zero at rt admits no isotropic
 * equilibrium: Eddington's formula then reproduces rho - rho(rt), not rho
 * (for NFW at rt = 10 the sampled halo starts with 2T/|W| = 0.90). So the
 * truncated model subtracts the edge density,
 *   rho_t(r) = rho(r) - rho(rt) for r < rt, 0 beyond,
 * which falls continuously to zero at rt and has an exact isotropic DF in
 * its own potential. Its mass is M(r) - (4 pi / 3) rho(rt) r^3 and its
 * depth above the centre D(r) = Phi(r) - Phi(0) - (2 pi / 3) rho(rt) r^2 (the
 * potential of a uniform sphere of density -rho(rt)); rho_t, M and Phi are
 * then divided by the mass inside rt. Outside, Phi_t = -1/r, and inside
 * Phi_t(r) = -1/rt - (D(rt) - D(r)) / mass(rt): the shells beyond rt are
 * gone, so the truncation changes the potential, not only its gradient.
 */
#include <math.h>
#include "core/error.h"
#include "ic/ic_internal.h"

/* Untruncated density (mass scale 1). */
static double rho_u(const ic_profile *pr, double x)
{
    return pr->amp / (x * pow(1 + x, pr->k));
}

/* Enclosed mass before normalisation, edge density subtracted. */
static double mass_s(const ic_profile *pr, double x)
{
    const double m = pr->k == 3 ? x * x / ((1 + x) * (1 + x)) : log1p(x) - x / (1 + x);
    return m - (4 * M_PI / 3) * pr->rho_edge * x * x * x;
}

/* D(x) = Phi(x) - Phi(0) >= 0 before normalisation, without cancellation. */
static double depth_s(const ic_profile *pr, double x)
{
    double d;
    if (pr->k == 3) d = x / (1 + x);
    else if (x < 1e-3) d = x * (0.5 - x * (1.0 / 3 - x * (0.25 - x * 0.2))); /* 1 - ln(1+x)/x */
    else d = 1 - log1p(x) / x;
    return d - (2 * M_PI / 3) * pr->rho_edge * x * x;
}

bn_status ic_profile_init(ic_profile *pr, bn_ic_model model, double truncation)
{
    if (model != BN_IC_HERNQUIST && model != BN_IC_NFW)
        return bn_fail(BN_ERR_INTERNAL, "ic_profile_init: model %d has no halo profile", (int)model);
    if (!(isfinite(truncation) && truncation > 0))
        return bn_fail(BN_ERR_ARGUMENT, "truncation must be finite and > 0, got %g", truncation);
    pr->model = model;
    pr->k = model == BN_IC_HERNQUIST ? 3 : 2;
    pr->amp = model == BN_IC_HERNQUIST ? 1 / (2 * M_PI) : 1 / (4 * M_PI);
    pr->rt = truncation;
    pr->rho_edge = 0;
    pr->rho_edge = rho_u(pr, truncation);
    pr->mnorm = mass_s(pr, truncation);
    pr->psi_max = depth_s(pr, truncation) / pr->mnorm;
    return BN_OK;
}

double ic_profile_density(const ic_profile *pr, double r)
{
    if (r >= pr->rt) return 0;
    return (rho_u(pr, r) - pr->rho_edge) / pr->mnorm;
}

double ic_profile_mass(const ic_profile *pr, double r)
{
    return r >= pr->rt ? 1.0 : mass_s(pr, r) / pr->mnorm;
}

double ic_profile_psi(const ic_profile *pr, double r)
{
    if (r >= pr->rt) return 1 / r - 1 / pr->rt;
    return (depth_s(pr, pr->rt) - depth_s(pr, r)) / pr->mnorm;
}

double ic_profile_depth(const ic_profile *pr, double r)
{
    return r >= pr->rt ? pr->psi_max - ic_profile_psi(pr, r) : depth_s(pr, r) / pr->mnorm;
}

double ic_profile_potential(const ic_profile *pr, double r)
{
    return r >= pr->rt ? -1 / r : -1 / pr->rt - ic_profile_psi(pr, r);
}

/*
 * rho = A/(x (1+x)^k) (+ const): rho' = -rho g with g = 1/x + k/(1+x), and
 * rho'' = rho (g^2 + 1/x^2 + k/(1+x)^2) (rho without the constant). Psi' = -M/r^2 and
 * Psi'' = -4 pi rho + 2 M / r^3. Then by the chain rule
 *   drho/dPsi = rho'/Psi',  d2rho/dPsi2 = (rho'' Psi' - rho' Psi'') / Psi'^3.
 */
void ic_profile_drho_dpsi(const ic_profile *pr, double r, double *d1, double *d2)
{
    const double rho = ic_profile_density(pr, r), m = ic_profile_mass(pr, r);
    const double rho_full = rho_u(pr, r) / pr->mnorm; /* the constant shift has no derivative */
    const double g = 1 / r + pr->k / (1 + r);
    const double rho1 = -rho_full * g;
    const double rho2 = rho_full * (g * g + 1 / (r * r) + pr->k / ((1 + r) * (1 + r)));
    const double psi1 = -m / (r * r), psi2 = -4 * M_PI * rho + 2 * m / (r * r * r);
    *d1 = rho1 / psi1;
    *d2 = (rho2 * psi1 - rho1 * psi2) / (psi1 * psi1 * psi1);
}

/*
 * Solve value(e^s) = target for s = ln r, value increasing, by Newton's
 * method on s kept inside a shrinking bracket (bisection when a step
 * leaves it). deriv is d value / d s.
 */
typedef double (*profile_fn)(const ic_profile *pr, double x);

static double solve_log_radius(const ic_profile *pr, profile_fn value, profile_fn deriv_s, double target,
                               double guess)
{
    double lo = -700, hi = log(pr->rt);
    double s = guess > 0 ? log(guess) : 0.5 * (lo + hi);
    if (!(s > lo && s < hi)) s = 0.5 * (lo + hi);
    for (int it = 0; it < 200; it++) {
        const double x = exp(s), f = value(pr, x) - target;
        if (f > 0) hi = s;
        else lo = s;
        const double d = deriv_s(pr, x);
        double next = d > 0 ? s - f / d : 0.5 * (lo + hi);
        if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
        if (fabs(next - s) < 1e-14 || hi - lo < 1e-14) return exp(next);
        s = next;
    }
    return exp(s);
}

/* dM/ds = 4 pi x^3 rho. */
static double dmass_ds(const ic_profile *pr, double x)
{
    return 4 * M_PI * x * x * x * (rho_u(pr, x) - pr->rho_edge);
}
/* dD/ds = x dPhi/dx = M(x) / x. */
static double ddepth_ds(const ic_profile *pr, double x) { return mass_s(pr, x) / x; }

double ic_profile_radius_of_mass(const ic_profile *pr, double m)
{
    if (m >= 1) return pr->rt;
    /* Near the centre both models have M ~ x^2 (Hernquist) or x^2/2 (NFW). */
    const double y = m * pr->mnorm, guess = sqrt(y * (pr->k == 3 ? 1.0 : 2.0));
    return solve_log_radius(pr, mass_s, dmass_ds, y, guess);
}

double ic_profile_radius_of_depth(const ic_profile *pr, double depth)
{
    return solve_log_radius(pr, depth_s, ddepth_ds, depth * pr->mnorm, 0);
}

/* ---- the profile as Eddington's formula sees it (ic_df_model) ---------- */
static double pm_psi(const void *c, double r) { return ic_profile_psi(c, r); }
static double pm_depth(const void *c, double r) { return ic_profile_depth(c, r); }
static double pm_radius_of_depth(const void *c, double d) { return ic_profile_radius_of_depth(c, d); }
static double pm_dpsi_ds(const void *c, double r) { return ic_profile_mass(c, r) / r; }
static void pm_drho_dpsi(const void *c, double r, double *d1, double *d2) { ic_profile_drho_dpsi(c, r, d1, d2); }

ic_df_model ic_profile_df_model(const ic_profile *pr)
{
    const ic_df_model m = {pr, bn_ic_model_name(pr->model), pr->rt, pr->psi_max, pm_psi, pm_depth,
                           pm_radius_of_depth, pm_dpsi_ds, pm_drho_dpsi};
    return m;
}
