/*
 * Hernquist and NFW halos: radii from the truncated model's mass profile
 * (inverse transform of a uniform mass fraction), isotropic velocities
 * with speeds from the Eddington distribution function (ic_eddington.c).
 *
 * Draws per particle: 0 mass fraction, 1-2 position direction, 3-4 velocity
 * direction, 5 on speed rejection.
 */
#include "core/error.h"
#include "core/rng.h"
#include "ic/ic_internal.h"

bn_status ic_halo(const bn_ic_params *prm, bn_particles *p)
{
    double trunc = prm->truncation;
    if (trunc == 0)
        trunc = prm->model == BN_IC_HERNQUIST ? IC_HERNQUIST_DEFAULT_TRUNCATION : IC_NFW_DEFAULT_TRUNCATION;
    ic_profile pr;
    ic_df df;
    BN_TRY(ic_profile_init(&pr, prm->model, trunc));
    BN_TRY(ic_df_build(&df, &pr));
    const long n = (long)p->n;
    const double m = 1.0 / (double)p->n;
    int failed = 0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        const uint64_t id = (uint64_t)i;
        double x[3], v[3];
        const double r = ic_profile_radius_of_mass(&pr, bn_rng_uniform(prm->seed, id, 0));
        ic_isotropic(prm->seed, id, 1, r, x);
        const double speed = ic_df_sample_speed(&df, r, prm->seed, id, 5);
        if (speed < 0) {
#pragma omp atomic write
            failed = 1;
        }
        ic_isotropic(prm->seed, id, 3, speed, v);
        ic_store3(p->pos, (size_t)i, x);
        ic_store3(p->vel, (size_t)i, v);
        p->mass[i] = m;
    }
    ic_df_free(&df);
    if (failed)
        return bn_fail(BN_ERR_INTERNAL, "%s: speed sampling from the Eddington distribution did not converge",
                       bn_ic_model_name(prm->model));
    return BN_OK;
}
