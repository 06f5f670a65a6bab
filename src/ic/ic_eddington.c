/*
 * Isotropic distribution function of a truncated halo by Eddington's
 * formula (Binney & Tremaine 2008, eq. 4.46b), computed numerically for the
 * truncated model's own density and potential, and speed sampling from it.
 *
 * The relative potential Psi is zero at the truncation radius rt, so no
 * particle is bound beyond rt; the truncated density falls to zero there
 * (ic_profiles.c), so f reproduces it exactly (checked by the tests).
 */
#include <math.h>
#include <stdlib.h>
#include "core/error.h"
#include "core/rng.h"
#include "ic/ic_internal.h"

#define DF_NODES 4097
#define DF_U_MIN -16.0 /* E / psi_max = 1.1e-7: below, ln f_a is extrapolated */
#define DF_U_MAX 25.0  /* psi_max - E = 1.4e-11 psi_max                       */
#define DF_PANELS 48   /* Gauss-Legendre panels of the Eddington integral     */
#define SPEED_BINS 16  /* steps of the rejection envelope in v                */
#define SPEED_TRIES 1000

static const double edd_norm = 0.03582244801567226; /* 1 / (sqrt(8) pi^2) */

/* 8-point Gauss-Legendre nodes and weights on [-1, 1] (positive half). */
static const double gl_x[4] = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363};
static const double gl_w[4] = {0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763};

/* E - Psi(r) from whichever side keeps the digits. */
static double energy_above_psi(const ic_profile *pr, double E, double depth_E, double r)
{
    if (E < 0.5 * pr->psi_max) return E - ic_profile_psi(pr, r);
    return ic_profile_depth(pr, r) - depth_E;
}

/*
 * int_0^E d2rho/dPsi2 dPsi / sqrt(E - Psi) over radii r_E..rt, with
 * s = ln r = s_E + L w^2: the w^2 removes the 1/sqrt singularity at r_E
 * and crowds nodes where the cusp's integrand is largest.
 */
static double eddington_integral(const ic_profile *pr, double E, double depth_E)
{
    const double rE = ic_profile_radius_of_depth(pr, depth_E);
    const double sE = log(rE), L = log(pr->rt) - sE;
    double sum = 0;
    for (int p = 0; p < DF_PANELS; p++) {
        const double mid = (p + 0.5) / DF_PANELS, half = 0.5 / DF_PANELS;
        for (int q = 0; q < 8; q++) {
            const double w = mid + half * (q < 4 ? -gl_x[q] : gl_x[q - 4]);
            const double r = exp(sE + L * w * w), gap = energy_above_psi(pr, E, depth_E, r);
            if (!(gap > 0)) continue;
            double d1, d2;
            ic_profile_drho_dpsi(pr, r, &d1, &d2);
            /* dPsi = (M/r) ds, ds = 2 L w dw */
            sum += gl_w[q & 3] * half * d2 * (ic_profile_mass(pr, r) / r) * 2 * L * w / sqrt(gap);
        }
    }
    return sum;
}

bn_status ic_df_build(ic_df *df, const ic_profile *pr)
{
    df->pr = pr;
    df->n = DF_NODES;
    df->u0 = DF_U_MIN;
    df->du = (DF_U_MAX - DF_U_MIN) / (DF_NODES - 1);
    df->lnfa = bn_alloc(DF_NODES * sizeof *df->lnfa, "Eddington distribution function table");
    if (!df->lnfa) return BN_ERR_NOMEM;
    double d1, d2;
    ic_profile_drho_dpsi(pr, pr->rt, &d1, &d2);
    df->fb = edd_norm * d1;
#pragma omp parallel for schedule(dynamic, 16)
    for (long i = 0; i < DF_NODES; i++) {
        const double u = df->u0 + (double)i * df->du;
        const double E = pr->psi_max / (1 + exp(-u)), depth = pr->psi_max / (1 + exp(u));
        const double fa = edd_norm * eddington_integral(pr, E, depth);
        df->lnfa[i] = fa > 0 ? log(fa) : -HUGE_VAL;
    }
    /* Speed sampling bounds f_a on an interval by its value at the highest
     * energy: that needs f_a > 0 and non-decreasing. */
    for (size_t i = 0; i < df->n; i++) {
        if (!(df->lnfa[i] > -HUGE_VAL) || (i > 0 && df->lnfa[i] < df->lnfa[i - 1] - 1e-9)) {
            const double u = df->u0 + (double)i * df->du;
            bn_status s = bn_fail(BN_ERR_INTERNAL,
                                  "%s truncated at %g: Eddington f(E) is not positive and increasing at E = %g "
                                  "(ln f = %g)",
                                  bn_ic_model_name(pr->model), pr->rt, pr->psi_max / (1 + exp(-u)), df->lnfa[i]);
            ic_df_free(df);
            return s;
        }
    }
    return BN_OK;
}

void ic_df_free(ic_df *df)
{
    free(df->lnfa);
    df->lnfa = NULL;
}

/* ln f_a is linear in u at both ends (power laws in E and psi_max - E),
 * so the table is interpolated, and extrapolated, linearly in u. */
double ic_df_eval_a(const ic_df *df, double E, double depth)
{
    const double t = (log(E) - log(depth) - df->u0) / df->du;
    double fl = floor(t);
    if (fl < 0) fl = 0;
    if (fl > (double)(df->n - 2)) fl = (double)(df->n - 2);
    const size_t i = (size_t)fl;
    const double a = t - fl;
    return exp(df->lnfa[i] + a * (df->lnfa[i + 1] - df->lnfa[i]));
}

double ic_df_eval(const ic_df *df, double E, double depth)
{
    return ic_df_eval_a(df, E, depth) + df->fb / sqrt(E);
}

/*
 * Rejection from a proposal that bounds each part of v^2 f:
 *  - v^2 f_a: on the step [v_j, v_j+1], by v_j+1^2 f_a(E(v_j)) (f_a grows
 *    with E, E falls with v);
 *  - v^2 f_b / sqrt(E) = sqrt(2) f_b v^2 / sqrt(vmax^2 - v^2), by
 *    sqrt(2) f_b vmax^2 / sqrt(vmax^2 - v^2), sampled as v = vmax sin(theta)
 *    with theta uniform in [0, pi/2].
 * Each try uses three draws: which part, where, accept.
 */
double ic_df_sample_speed(const ic_df *df, double r, uint64_t seed, uint64_t i, uint64_t draw)
{
    const double psi = ic_profile_psi(df->pr, r), depth = ic_profile_depth(df->pr, r);
    const double vmax = sqrt(2 * psi), dv = vmax / SPEED_BINS;
    double env[SPEED_BINS], total_a = 0;
    for (int j = 0; j < SPEED_BINS; j++) {
        const double v0 = j * dv, v1 = (j + 1) * dv;
        env[j] = v1 * v1 * ic_df_eval_a(df, psi - 0.5 * v0 * v0, depth + 0.5 * v0 * v0);
        total_a += env[j] * dv;
    }
    const double cb = sqrt(2.0) * df->fb * vmax * vmax; /* h_b(v) = cb / sqrt(vmax^2 - v^2) */
    const double total_b = cb * 0.5 * M_PI;
    for (uint64_t t = 0; t < SPEED_TRIES; t++) {
        const uint64_t k = draw + 3 * t;
        double x = bn_rng_uniform(seed, i, k) * (total_a + total_b), v;
        if (x < total_a) {
            int j = 0;
            while (j < SPEED_BINS - 1 && x >= env[j] * dv) x -= env[j++] * dv;
            v = (j + bn_rng_uniform(seed, i, k + 1)) * dv;
        } else {
            v = vmax * sin(0.5 * M_PI * bn_rng_uniform(seed, i, k + 1));
        }
        const double E = psi - 0.5 * v * v;
        if (!(E > 0)) continue;
        int j = (int)(v / dv);
        if (j >= SPEED_BINS) j = SPEED_BINS - 1;
        const double target = v * v * ic_df_eval(df, E, depth + 0.5 * v * v);
        const double proposal = env[j] + cb / sqrt(vmax * vmax - v * v);
        if (bn_rng_uniform(seed, i, k + 2) * proposal < target) return v;
    }
    return -1;
}
