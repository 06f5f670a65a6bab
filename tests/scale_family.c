/* The scale family of scale_family.h: components drawn with their own
 * random numbers (splitmix64), independent of the IC module. */
#include "scale_family.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sf_uniform(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * (1.0 / 9007199254740992.0); /* (0, 1) */
}

static double sf_gauss(uint64_t *s) { return sqrt(-2 * log(sf_uniform(s))) * cos(2 * M_PI * sf_uniform(s)); }

typedef enum { SF_GAUSS, SF_PLUMMER, SF_DISK } sf_shape;

/* One component: n particles of total mass `mass`, scale `a`, centred
 * (centre of mass, exactly) on `centre`. The disk is exponential (scale
 * length a, cut at 6a) with a Gaussian thickness `h`, tilted by 30
 * degrees about x. */
typedef struct sf_comp {
    sf_shape shape;
    size_t n;
    double a, h, mass, centre[3];
} sf_comp;

static void sf_draw(const sf_comp *c, uint64_t *s, double x[3])
{
    if (c->shape == SF_GAUSS) {
        for (int k = 0; k < 3; k++) x[k] = c->a * sf_gauss(s);
        return;
    }
    if (c->shape == SF_PLUMMER) {
        const double m = sf_uniform(s) * 0.999, r = c->a / sqrt(pow(m, -2.0 / 3.0) - 1.0);
        const double u = 2 * sf_uniform(s) - 1, ph = 2 * M_PI * sf_uniform(s), st = sqrt(1 - u * u);
        x[0] = r * st * cos(ph);
        x[1] = r * st * sin(ph);
        x[2] = r * u;
        return;
    }
    double R;
    do R = -c->a * log(sf_uniform(s) * sf_uniform(s)); /* R e^{-R/a}: gamma(2) */
    while (R > 6 * c->a);
    const double ph = 2 * M_PI * sf_uniform(s), z = c->h * sf_gauss(s);
    const double y = R * sin(ph), ct = cos(M_PI / 6), st = sin(M_PI / 6);
    x[0] = R * cos(ph);
    x[1] = ct * y - st * z;
    x[2] = st * y + ct * z;
}

static void sf_fill(bn_particles *p, size_t first, const sf_comp *c, uint64_t seed)
{
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
    double com[3] = {0, 0, 0};
    for (size_t i = first; i < first + c->n; i++) {
        double x[3];
        sf_draw(c, &s, x);
        for (int k = 0; k < 3; k++) {
            p->pos[k][i] = x[k];
            com[k] += x[k] / (double)c->n;
            p->vel[k][i] = 0;
        }
        p->mass[i] = c->mass / (double)c->n;
        p->id[i] = i + 1;
    }
    for (size_t i = first; i < first + c->n; i++)
        for (int k = 0; k < 3; k++) p->pos[k][i] += c->centre[k] - com[k];
}

typedef struct sf_spec {
    const char *name;
    double eps, ratio;
    int n_comp;
    const char *comp_name[TU_SCALE_MAX_COMPONENTS];
    sf_comp comp[TU_SCALE_MAX_COMPONENTS];
} sf_spec;

/* eps is 1e-3 of the smallest scale; ratio: the extent over it. */
static const sf_spec sf_specs[] = {
    {"far-cluster", 1e-3, 3.7e6, 1, {"cluster"}, {{SF_PLUMMER, 12000, 1, 0, 1, {3e6, -1e6, 2e6}}}},
    {"satellite", 1e-5, 1.1e6, 2, {"host", "satellite"},
     {{SF_PLUMMER, 12000, 1, 0, 1, {0, 0, 0}}, {SF_PLUMMER, 6000, 1e-2, 0, 1e-3, {1e4, 5e3, -3e3}}}},
    {"binary-far", 1e-3, 2e5, 2, {"west", "east"},
     {{SF_GAUSS, 8000, 1, 0, 1, {-7e4, -7e4, 1e3}}, {SF_GAUSS, 8000, 1, 0, 1, {7e4, 7e4, -1e3}}}},
    {"deep-zoom", 1e-9, 1e7, 2, {"host", "zoom"},
     {{SF_GAUSS, 12000, 1, 0, 1, {0, 0, 0}}, {SF_GAUSS, 4000, 1e-6, 0, 1e-6, {6, 0, 0}}}},
    {"mass-ratio", 1e-7, 1e6, 2, {"heavy", "light"},
     {{SF_PLUMMER, 8000, 1, 0, 1, {0, 0, 0}}, {SF_GAUSS, 6000, 1e-4, 0, 1e-6, {50, 20, 0}}}},
    {"disk-in-halo", 1e-7, 2.4e6, 2, {"halo", "disk"},
     {{SF_GAUSS, 8000, 30, 0, 10, {0, 0, 0}}, {SF_DISK, 12000, 1, 1e-4, 1, {30, 10, 0}}}},
};

int tu_scale_case_count(void) { return (int)(sizeof sf_specs / sizeof sf_specs[0]); }

tu_scale_case tu_scale_case_make(int k, double scale)
{
    const sf_spec *sp = &sf_specs[k];
    tu_scale_case c;
    memset(&c, 0, sizeof c);
    c.name = sp->name;
    c.eps = sp->eps;
    c.ratio = sp->ratio;
    c.n_comp = sp->n_comp;
    if (scale < 0.125) scale = 0.125;
    sf_comp comp[TU_SCALE_MAX_COMPONENTS];
    size_t n = 0;
    for (int j = 0; j < sp->n_comp; j++) {
        comp[j] = sp->comp[j];
        comp[j].n = (size_t)(scale * (double)comp[j].n);
        c.first[j] = n;
        c.count[j] = comp[j].n;
        c.comp_name[j] = sp->comp_name[j];
        n += comp[j].n;
    }
    if (bn_particles_create(&c.p, n) != BN_OK) return c;
    for (int j = 0; j < sp->n_comp; j++) sf_fill(c.p, c.first[j], &comp[j], 1000u * (uint64_t)k + (uint64_t)j + 7);
    return c;
}

void tu_scale_case_free(tu_scale_case *c)
{
    bn_particles_free(c->p);
    c->p = NULL;
}

bn_particles *tu_scale_component_alone(const tu_scale_case *c, int j)
{
    bn_particles *q = NULL;
    if (bn_particles_create(&q, c->count[j]) != BN_OK) return NULL;
    double com[3] = {0, 0, 0}, m = 0;
    for (size_t i = 0; i < c->count[j]; i++) {
        const size_t s = c->first[j] + i;
        m += c->p->mass[s];
        for (int k = 0; k < 3; k++) com[k] += c->p->mass[s] * c->p->pos[k][s];
    }
    for (size_t i = 0; i < c->count[j]; i++) {
        const size_t s = c->first[j] + i;
        for (int k = 0; k < 3; k++) {
            q->pos[k][i] = c->p->pos[k][s] - com[k] / m;
            q->vel[k][i] = c->p->vel[k][s];
        }
        q->mass[i] = c->p->mass[s];
        q->id[i] = c->p->id[s];
    }
    return q;
}

bn_error_stats tu_range_errors(const bn_particles *p, double G, double eps, size_t first, size_t count,
                               size_t nsample)
{
    bn_error_stats st;
    memset(&st, 0, sizeof st);
    if (nsample > count) nsample = count;
    if (nsample == 0) return st;
    size_t *idx = calloc(nsample, sizeof *idx);
    double *ref = malloc(3 * nsample * sizeof *ref), *pref = malloc(nsample * sizeof *pref);
    double *acc = malloc(3 * nsample * sizeof *acc), *pot = malloc(nsample * sizeof *pot);
    if (idx && ref && pref && acc && pot) {
        for (size_t s = 0; s < nsample; s++) idx[s] = first + s * count / nsample;
        if (bn_direct_reference(p, G, eps, idx, nsample, ref, pref) == BN_OK) {
            for (size_t s = 0; s < nsample; s++) {
                for (int k = 0; k < 3; k++) acc[3 * s + k] = p->acc[k][idx[s]];
                pot[s] = p->pot[idx[s]];
            }
            bn_error_stats_compute(nsample, acc, ref, pot, pref, &st);
        }
    }
    free(idx);
    free(ref);
    free(pref);
    free(acc);
    free(pot);
    return st;
}
