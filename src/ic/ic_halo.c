/*
 * Hernquist and NFW halos: radii from the truncated model's mass profile
 * (inverse transform of a uniform mass fraction), isotropic velocities
 * with speeds from the Eddington distribution function (ic_eddington.c).
 */
#include "core/error.h"
#include "ic/ic_internal.h"

static double halo_radius(const void *ctx, double mass_fraction)
{
    const ic_df *df = ctx;
    return ic_profile_radius_of_mass(df->pr, mass_fraction);
}

static double halo_speed(const void *ctx, double r, uint64_t seed, uint64_t i, uint64_t draw)
{
    return ic_df_sample_speed(ctx, r, seed, i, draw);
}

bn_status ic_halo(const bn_ic_params *prm, bn_particles *p)
{
    double trunc = prm->truncation;
    if (trunc == 0)
        trunc = prm->model == BN_IC_HERNQUIST ? IC_HERNQUIST_DEFAULT_TRUNCATION : IC_NFW_DEFAULT_TRUNCATION;
    ic_profile pr;
    ic_df df;
    BN_TRY(ic_profile_init(&pr, prm->model, trunc));
    BN_TRY(ic_df_build(&df, &pr));
    const ic_spherical model = {bn_ic_model_name(prm->model), &df, halo_radius, halo_speed};
    bn_status s = ic_sample_spherical(prm->seed, p, 0, p->n, 1.0 / (double)p->n, &model);
    ic_df_free(&df);
    return s;
}
