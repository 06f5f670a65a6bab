/*
 * Initial conditions: parameters, model names, validation, dispatch to the
 * generators, ids and the centre-of-mass correction shared by all models.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/limits.h"
#include "core/rng.h"
#include "ic/ic_internal.h"

#define IC_MAX_PARTICLES ((size_t)1 << 40)
#define IC_SUM_BLOCK 8192

bn_ic_params bn_ic_params_default(void)
{
    bn_ic_params p;
    memset(&p, 0, sizeof p);
    p.model = BN_IC_PLUMMER;
    p.n = 0;
    p.seed = 1;
    p.G = 1.0;
    p.virial_ratio = 0.0;
    p.truncation = 0.0;
    p.cube_half_size = 3.0;
    p.mass_spread = 0;
    return p;
}

typedef bn_status (*ic_generator)(const bn_ic_params *prm, bn_particles *p);

/* One row per model, in enum order. */
static const struct {
    const char *name;
    ic_generator generate;
} ic_models[] = {
    {"plummer", ic_plummer},
    {"hernquist", ic_halo},
    {"nfw", ic_halo},
    {"uniform-sphere", ic_uniform_sphere},
    {"uniform-cube", ic_uniform_cube},
};
#define IC_N_MODELS (sizeof ic_models / sizeof ic_models[0])

const char *bn_ic_model_name(bn_ic_model m)
{
    return (unsigned)m < IC_N_MODELS ? ic_models[m].name : "unknown";
}

bn_status bn_ic_model_parse(const char *s, bn_ic_model *out)
{
    char valid[128] = "";
    for (size_t i = 0; i < IC_N_MODELS; i++) {
        if (s && out && strcmp(s, ic_models[i].name) == 0) {
            *out = (bn_ic_model)i;
            return BN_OK;
        }
        strncat(valid, i ? ", " : "", sizeof valid - strlen(valid) - 1);
        strncat(valid, ic_models[i].name, sizeof valid - strlen(valid) - 1);
    }
    return bn_fail(BN_ERR_ARGUMENT, "unknown initial-conditions model '%s' (valid: %s)", s ? s : "(null)", valid);
}

static bn_status ic_validate(const bn_ic_params *prm)
{
    if ((unsigned)prm->model >= IC_N_MODELS)
        return bn_fail(BN_ERR_ARGUMENT, "initial conditions: unknown model %d", (int)prm->model);
    if (prm->n < 1 || prm->n > IC_MAX_PARTICLES)
        return bn_fail(BN_ERR_ARGUMENT, "initial conditions: n (number of particles) must be in [1, 2^40], got %zu",
                       prm->n);
    if (!(isfinite(prm->G) && prm->G > 0))
        return bn_fail(BN_ERR_ARGUMENT, "initial conditions: G must be finite and > 0, got %g", prm->G);
    if (!(isfinite(prm->virial_ratio) && prm->virial_ratio >= 0))
        return bn_fail(BN_ERR_ARGUMENT, "initial conditions: virial_ratio must be finite and >= 0, got %g",
                       prm->virial_ratio);
    /* core/limits.h says why the range */
    if (!(isfinite(prm->truncation) &&
          (prm->truncation == 0 || (prm->truncation >= BN_IC_TRUNCATION_MIN && prm->truncation <= BN_IC_TRUNCATION_MAX))))
        return bn_fail(BN_ERR_ARGUMENT,
                       "initial conditions: truncation must be in [%.15g, %.15g] scale radii (0: model default), got %g",
                       BN_IC_TRUNCATION_MIN, BN_IC_TRUNCATION_MAX, prm->truncation);
    if (!(isfinite(prm->cube_half_size) && prm->cube_half_size > 0))
        return bn_fail(BN_ERR_ARGUMENT, "initial conditions: cube_half_size must be finite and > 0, got %g",
                       prm->cube_half_size);
    if (prm->mass_spread != 0 && prm->mass_spread != 1)
        return bn_fail(BN_ERR_ARGUMENT, "initial conditions: mass_spread must be 0 or 1, got %d", prm->mass_spread);
    return BN_OK;
}

/* First particle with a non-finite coordinate (what = 0) or velocity
 * (what = 1), or n. */
static size_t first_non_finite(const bn_particles *p, int *what)
{
    const long n = (long)p->n;
    long first = n;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            if (!isfinite(p->pos[k][i]) || !isfinite(p->vel[k][i])) first = i < first ? i : first;
    *what = 0;
    for (int k = 0; first < n && k < 3; k++)
        if (!isfinite(p->vel[k][first])) *what = 1;
    return (size_t)first;
}

/* Outputs must be as valid as inputs: parameters near the top of their
 * ranges (G, virial_ratio or cube_half_size near 1e308) can overflow the
 * velocities or the coordinates. Refuse then, naming the parameters, rather
 * than hand out particles that no reader accepts. */
static bn_status ic_check_finite(const bn_ic_params *prm, const bn_particles *p)
{
    int vel;
    const size_t i = first_non_finite(p, &vel);
    if (i == p->n) return BN_OK;
    if (vel)
        return bn_fail(BN_ERR_ARGUMENT,
                       "initial conditions: %s with G = %g and virial_ratio = %g: the velocity of particle %zu "
                       "overflows (velocities scale as sqrt(G), a uniform sphere's also as sqrt(virial_ratio)); "
                       "use smaller values",
                       bn_ic_model_name(prm->model), prm->G, prm->virial_ratio, i);
    return bn_fail(BN_ERR_ARGUMENT,
                   "initial conditions: %s with cube_half_size = %g: the coordinates of particle %zu overflow "
                   "(relative to the centre of mass); use a smaller half size",
                   bn_ic_model_name(prm->model), prm->cube_half_size, i);
}

bn_status bn_ic_generate(const bn_ic_params *prm, bn_particles **out)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_ic_generate: out is NULL");
    *out = NULL;
    if (!prm) return bn_fail(BN_ERR_ARGUMENT, "bn_ic_generate: params is NULL");
    BN_TRY(ic_validate(prm));
    bn_particles *p = NULL;
    BN_TRY(bn_particles_create(&p, prm->n));
    bn_status s = ic_models[prm->model].generate(prm, p);
    if (s == BN_OK) s = ic_centre(p);
    if (s != BN_OK) {
        bn_particles_free(p);
        return s;
    }
    const long n = (long)p->n;
    const double vscale = sqrt(prm->G); /* generated with G = 1 */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        p->id[i] = (uint64_t)i + 1;
        for (int k = 0; k < 3; k++) p->vel[k][i] *= vscale;
    }
    s = ic_check_finite(prm, p);
    if (s != BN_OK) {
        bn_particles_free(p);
        return s;
    }
    *out = p;
    return BN_OK;
}

/* ---- helpers shared by the generators ---------------------------------- */

void ic_isotropic(uint64_t seed, uint64_t i, uint64_t draw, double len, double out[3])
{
    const double cos_t = 2 * bn_rng_uniform(seed, i, draw) - 1, phi = 2 * M_PI * bn_rng_uniform(seed, i, draw + 1);
    const double sin_t = sqrt(fmax(0.0, 1 - cos_t * cos_t));
    out[0] = len * sin_t * cos(phi);
    out[1] = len * sin_t * sin(phi);
    out[2] = len * cos_t;
}

void ic_store3(double *arr[3], size_t i, const double v[3])
{
    for (int k = 0; k < 3; k++) arr[k][i] = v[k];
}

bn_status ic_sum(const bn_particles *p, ic_terms_fn terms, int nterms, double *out)
{
    const size_t nblocks = (p->n + IC_SUM_BLOCK - 1) / IC_SUM_BLOCK;
    double *part = bn_calloc(nblocks ? nblocks : 1, 8 * sizeof *part, "initial conditions: block sums");
    if (!part) return BN_ERR_NOMEM;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < (long)nblocks; b++) {
        const size_t end = (size_t)(b + 1) * IC_SUM_BLOCK < p->n ? (size_t)(b + 1) * IC_SUM_BLOCK : p->n;
        for (size_t i = (size_t)b * IC_SUM_BLOCK; i < end; i++) {
            double t[8];
            terms(p, i, t);
            for (int k = 0; k < nterms; k++) part[8 * b + k] += t[k];
        }
    }
    for (int k = 0; k < nterms; k++) out[k] = 0;
    for (size_t b = 0; b < nblocks; b++)
        for (int k = 0; k < nterms; k++) out[k] += part[8 * b + k];
    free(part);
    return BN_OK;
}

bn_status ic_sample_spherical(uint64_t seed, bn_particles *p, size_t first, size_t n, double mass,
                              const ic_spherical *model)
{
    int failed = 0;
#pragma omp parallel for schedule(static)
    for (long j = 0; j < (long)n; j++) {
        const size_t i = first + (size_t)j;
        const uint64_t id = (uint64_t)i;
        double x[3], v[3];
        const double r = model->radius(model->ctx, bn_rng_uniform(seed, id, 0));
        const double speed = model->speed(model->ctx, r, seed, id, 5);
        if (speed < 0) {
#pragma omp atomic write
            failed = 1;
        }
        ic_isotropic(seed, id, 1, r, x);
        ic_isotropic(seed, id, 3, speed, v);
        ic_store3(p->pos, i, x);
        ic_store3(p->vel, i, v);
        p->mass[i] = mass;
    }
    if (failed) return bn_fail(BN_ERR_INTERNAL, "%s: speed sampling did not converge (a bug)", model->name);
    return BN_OK;
}

/* m, m x, m v of particle i. */
static void com_terms(const bn_particles *p, size_t i, double *t)
{
    t[0] = p->mass[i];
    for (int k = 0; k < 3; k++) {
        t[1 + k] = p->mass[i] * p->pos[k][i];
        t[4 + k] = p->mass[i] * p->vel[k][i];
    }
}

bn_status ic_centre(bn_particles *p)
{
    double s[7];
    BN_TRY(ic_sum(p, com_terms, 7, s));
    if (!(s[0] > 0)) return bn_fail(BN_ERR_INTERNAL, "initial conditions: total mass %g is not positive", s[0]);
    double x0[3], v0[3];
    for (int k = 0; k < 3; k++) {
        x0[k] = s[1 + k] / s[0];
        v0[k] = s[4 + k] / s[0];
    }
    const long n = (long)p->n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            p->pos[k][i] -= x0[k];
            p->vel[k][i] -= v0[k];
        }
    return BN_OK;
}

static void kinetic_terms(const bn_particles *p, size_t i, double *t)
{
    const double v2 = p->vel[0][i] * p->vel[0][i] + p->vel[1][i] * p->vel[1][i] + p->vel[2][i] * p->vel[2][i];
    t[0] = 0.5 * p->mass[i] * v2;
}

bn_status ic_kinetic(const bn_particles *p, double *T)
{
    return ic_sum(p, kinetic_terms, 1, T);
}
