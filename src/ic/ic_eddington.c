/*
 * Isotropic distribution function of a spherical component by Eddington's
 * formula (Binney & Tremaine 2008, eq. 4.46b), computed numerically for its
 * density in a potential (ic_df_model: a truncated halo's own, or a
 * galaxy's total), and speed sampling from it.
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
#define DF_NOISE 1e-9  /* |f_a| below this fraction of its peak: quadrature noise */
#define DF_FLOOR 1e-250 /* ln f_a floor, as a fraction of the peak               */

static const double edd_norm = 0.03582244801567226; /* 1 / (sqrt(8) pi^2) */

/* 8-point Gauss-Legendre nodes and weights on [-1, 1] (positive half). */
static const double gl_x[4] = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363};
static const double gl_w[4] = {0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763};

/* E - Psi(r) from whichever side keeps the digits. */
static double energy_above_psi(const ic_df_model *m, double E, double depth_E, double r)
{
    if (E < 0.5 * m->psi_max) return E - m->psi(m->ctx, r);
    return m->depth(m->ctx, r) - depth_E;
}

/*
 * int_0^E d2rho/dPsi2 dPsi / sqrt(E - Psi) over radii r_E..rt, with
 * s = ln r = s_E + L w^2: the w^2 removes the 1/sqrt singularity at r_E
 * and crowds nodes where the cusp's integrand is largest.
 */
static double eddington_integral(const ic_df_model *m, double E, double depth_E)
{
    const double rE = m->radius_of_depth(m->ctx, depth_E);
    const double sE = log(rE), L = log(m->r_max) - sE;
    double sum = 0;
    for (int p = 0; p < DF_PANELS; p++) {
        const double mid = (p + 0.5) / DF_PANELS, half = 0.5 / DF_PANELS;
        for (int q = 0; q < 8; q++) {
            const double w = mid + half * (q < 4 ? -gl_x[q] : gl_x[q - 4]);
            const double r = exp(sE + L * w * w), gap = energy_above_psi(m, E, depth_E, r);
            if (!(gap > 0)) continue;
            double d1, d2;
            m->drho_dpsi(m->ctx, r, &d1, &d2);
            /* dPsi = (G M/r) ds, ds = 2 L w dw */
            sum += gl_w[q & 3] * half * d2 * m->dpsi_ds(m->ctx, r) * 2 * L * w / sqrt(gap);
        }
    }
    return sum;
}

/* f_a must not be negative (else no isotropic equilibrium); where it
 * vanishes (energies that only reach where the component's density has
 * underflowed, beyond its taper) ln f_a is floored far below its peak.
 * f_a need not increase with E (a taper in a potential dominated by other
 * components makes a dip near E = 0): the speed sampler bounds it by its
 * running maximum (bound_a), which needs it to increase on the two end
 * intervals, where the table is extrapolated. Turns the table into ln f_a. */
static bn_status check_table(ic_df *df)
{
    double peak = 0;
    for (size_t i = 0; i < df->n; i++) peak = fmax(peak, df->lnfa[i]);
    for (size_t i = 0; i < df->n; i++) {
        const double E = df->m.psi_max / (1 + exp(-(df->u0 + (double)i * df->du))), fa = df->lnfa[i];
        if (!(fa >= -DF_NOISE * peak) || !(peak > 0))
            return bn_fail(BN_ERR_ARGUMENT, "%s: the isotropic distribution function f(E) is negative at E = %g (of "
                           "%g at the centre; f = %g, at most %g): this density has no isotropic equilibrium in this "
                           "potential (a truncation too sharp where other components dominate the potential: widen "
                           "the cutoff)", df->m.name, E, df->m.psi_max, fa, peak);
        df->lnfa[i] = log(fmax(fa, DF_FLOOR * peak));
        df->lnfa_max[i] = i > 0 && df->lnfa_max[i - 1] > df->lnfa[i] ? df->lnfa_max[i - 1] : df->lnfa[i];
    }
    const size_t n = df->n;
    if (df->lnfa[1] < df->lnfa[0] || df->lnfa[n - 1] < df->lnfa[n - 2])
        return bn_fail(BN_ERR_ARGUMENT, "%s: the isotropic distribution function f(E) decreases at the %s end of its "
                       "table: its speeds cannot be sampled", df->m.name, df->lnfa[1] < df->lnfa[0] ? "low" : "high");
    return BN_OK;
}

bn_status ic_df_build_model(ic_df *df, const ic_df_model *m)
{
    df->m = *m;
    df->pr = NULL;
    df->n = DF_NODES;
    df->u0 = DF_U_MIN;
    df->du = (DF_U_MAX - DF_U_MIN) / (DF_NODES - 1);
    df->lnfa = bn_alloc(2 * DF_NODES * sizeof *df->lnfa, "Eddington distribution function table");
    if (!df->lnfa) return BN_ERR_NOMEM;
    df->lnfa_max = df->lnfa + DF_NODES;
    double d1, d2;
    m->drho_dpsi(m->ctx, m->r_max, &d1, &d2);
    df->fb = edd_norm * d1;
#pragma omp parallel for schedule(dynamic, 16)
    for (long i = 0; i < DF_NODES; i++) {
        const double u = df->u0 + (double)i * df->du;
        const double E = m->psi_max / (1 + exp(-u)), depth = m->psi_max / (1 + exp(u));
        df->lnfa[i] = edd_norm * eddington_integral(m, E, depth); /* f_a itself until check_table */
    }
    const bn_status s = check_table(df);
    if (s != BN_OK) ic_df_free(df);
    return s;
}

bn_status ic_df_build(ic_df *df, const ic_profile *pr)
{
    const ic_df_model m = ic_profile_df_model(pr);
    BN_TRY(ic_df_build_model(df, &m));
    df->pr = pr;
    return BN_OK;
}

void ic_df_free(ic_df *df)
{
    free(df->lnfa);
    df->lnfa = df->lnfa_max = NULL;
}

/* ln f_a is linear in u at both ends (power laws in E and psi_max - E),
 * so the table is interpolated, and extrapolated, linearly in u. */
/* Table position of E: node i and weight a of node i + 1. */
static void table_place(const ic_df *df, double E, double depth, size_t *i, double *a)
{
    const double t = (log(E) - log(depth) - df->u0) / df->du;
    double fl = floor(t);
    if (fl < 0) fl = 0;
    if (fl > (double)(df->n - 2)) fl = (double)(df->n - 2);
    *i = (size_t)fl;
    *a = t - fl;
}

double ic_df_eval_a(const ic_df *df, double E, double depth)
{
    size_t i;
    double a;
    table_place(df, E, depth, &i, &a);
    return exp(df->lnfa[i] + a * (df->lnfa[i + 1] - df->lnfa[i]));
}

/* A bound of f_a over every energy up to E: f_a(E), or the running
 * maximum of the nodes below E where f_a dipped (the interpolant between
 * nodes lies between them). Where f_a increases, f_a(E) itself. */
static double bound_a(const ic_df *df, double E, double depth)
{
    size_t i;
    double a;
    table_place(df, E, depth, &i, &a);
    const double here = df->lnfa[i] + a * (df->lnfa[i + 1] - df->lnfa[i]);
    return exp(here > df->lnfa_max[i] ? here : df->lnfa_max[i]);
}

double ic_df_eval(const ic_df *df, double E, double depth)
{
    return ic_df_eval_a(df, E, depth) + df->fb / sqrt(E);
}

/*
 * Rejection from a proposal that bounds each part of v^2 f:
 *  - v^2 f_a: on the step [v_j, v_j+1], by v_j+1^2 times the bound of f_a
 *    up to E(v_j) (E falls with v);
 *  - v^2 f_b / sqrt(E) = sqrt(2) f_b v^2 / sqrt(vmax^2 - v^2), by
 *    sqrt(2) f_b vmax^2 / sqrt(vmax^2 - v^2), sampled as v = vmax sin(theta)
 *    with theta uniform in [0, pi/2].
 * Each try uses three draws: which part, where, accept.
 */
/* The envelope's bins: uniform in [0, vmax] (e NULL), unless the speeds
 * where v^2 f peaks (about sqrt(depth): in a cusp f rises as E nears the
 * potential's bottom) are far below one uniform bin. Then the first bin
 * ends at sqrt(depth / 2), below the peak, and the others grow
 * geometrically to vmax: edges e[0..SPEED_BINS]. (Uniform bins put the
 * peak deep inside the first, whose bound, taken at v = 0, then exceeds
 * the mean of v^2 f there by a factor that grows as depth falls: at
 * r = 4e-5 of a Hernquist halo, met at 2^27 particles, 1000 tries
 * accepted nothing.) Returns whether the bins are uniform. */
static int speed_edges(double vmax, double depth, double *e)
{
    const double v1 = sqrt(0.5 * depth);
    if (!(v1 < vmax / SPEED_BINS)) return 1; /* NaN too (depth 0): the uniform bins, as always */
    const double q = pow(vmax / v1, 1.0 / (SPEED_BINS - 1));
    e[0] = 0;
    e[1] = v1;
    for (int j = 2; j < SPEED_BINS; j++) e[j] = e[j - 1] * q;
    e[SPEED_BINS] = vmax;
    return 0;
}

/* Bin j's lower edge and width (uniform: j dv and dv, as always). */
static double edge(const double *e, int uniform, double dv, int j) { return uniform ? j * dv : e[j]; }
static double width(const double *e, int uniform, double dv, int j) { return uniform ? dv : e[j + 1] - e[j]; }

/* The bin of speed v. */
static int bin_of(const double *e, int uniform, double dv, double v)
{
    int j = 0;
    if (uniform) j = (int)(v / dv);
    else
        while (j < SPEED_BINS - 1 && v >= e[j + 1]) j++;
    return j < SPEED_BINS ? j : SPEED_BINS - 1;
}

double ic_df_sample_speed(const ic_df *df, double r, uint64_t seed, uint64_t i, uint64_t draw)
{
    const double psi = df->m.psi(df->m.ctx, r), depth = df->m.depth(df->m.ctx, r);
    const double vmax = sqrt(2 * psi), dv = vmax / SPEED_BINS;
    double e[SPEED_BINS + 1], env[SPEED_BINS], total_a = 0;
    const int u = speed_edges(vmax, depth, e);
    for (int j = 0; j < SPEED_BINS; j++) {
        const double v0 = edge(e, u, dv, j), v1 = u ? (j + 1) * dv : e[j + 1];
        env[j] = v1 * v1 * bound_a(df, psi - 0.5 * v0 * v0, depth + 0.5 * v0 * v0);
        total_a += env[j] * width(e, u, dv, j);
    }
    const double cb = sqrt(2.0) * df->fb * vmax * vmax; /* h_b(v) = cb / sqrt(vmax^2 - v^2) */
    const double total_b = cb * 0.5 * M_PI;
    for (uint64_t t = 0; t < SPEED_TRIES; t++) {
        const uint64_t k = draw + 3 * t;
        double x = bn_rng_uniform(seed, i, k) * (total_a + total_b), v;
        if (x < total_a) {
            int j = 0;
            while (j < SPEED_BINS - 1 && x >= env[j] * width(e, u, dv, j)) x -= env[j] * width(e, u, dv, j), j++;
            v = u ? (j + bn_rng_uniform(seed, i, k + 1)) * dv : e[j] + bn_rng_uniform(seed, i, k + 1) * width(e, u, dv, j);
        } else {
            v = vmax * sin(0.5 * M_PI * bn_rng_uniform(seed, i, k + 1));
        }
        const double E = psi - 0.5 * v * v;
        if (!(E > 0)) continue;
        const int j = bin_of(e, u, dv, v);
        const double target = v * v * ic_df_eval(df, E, depth + 0.5 * v * v);
        const double proposal = env[j] + cb / sqrt(vmax * vmax - v * v);
        if (bn_rng_uniform(seed, i, k + 2) * proposal < target) return v;
    }
    return -1;
}
