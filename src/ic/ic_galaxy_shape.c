/* A galaxy's shape from its particles (bn_galaxy_shape_measure): what a
 * run should keep if the model is in equilibrium and the particles do not
 * heat it. Sorting makes the radii and the median exact and independent
 * of the particles' order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"

#define DISK_TYPE 2

typedef struct keyed {
    double key, mass;
} keyed;

static int by_key(const void *a, const void *b)
{
    const double x = ((const keyed *)a)->key, y = ((const keyed *)b)->key;
    return (x > y) - (x < y);
}

static void centre_of_mass(const bn_particles *p, int type, double c[3])
{
    double m = 0;
    c[0] = c[1] = c[2] = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (bn_particles_part_type(p, i) != type) continue;
        m += p->mass[i];
        for (int k = 0; k < 3; k++) c[k] += p->mass[i] * p->pos[k][i];
    }
    for (int k = 0; k < 3 && m > 0; k++) c[k] /= m;
}

/* The particles of `type` as (key, mass): distance to c (vertical = 0) or
 * |z - c_z| (vertical = 1), sorted; their count. */
static size_t sorted_keys(const bn_particles *p, int type, int vertical, keyed *out)
{
    double c[3];
    centre_of_mass(p, type, c);
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (bn_particles_part_type(p, i) != type) continue;
        double d2 = 0;
        for (int k = vertical ? 2 : 0; k < 3; k++) d2 += (p->pos[k][i] - c[k]) * (p->pos[k][i] - c[k]);
        out[n].key = sqrt(d2), out[n].mass = p->mass[i];
        n++;
    }
    qsort(out, n, sizeof *out, by_key);
    return n;
}

/* The key where the cumulative mass first reaches fraction f. */
static double key_of_fraction(const keyed *k, size_t n, double f)
{
    double total = 0, m = 0;
    for (size_t i = 0; i < n; i++) total += k[i].mass;
    for (size_t i = 0; i < n; i++)
        if ((m += k[i].mass) >= f * total) return k[i].key;
    return n ? k[n - 1].key : 0;
}

static void disk_numbers(const bn_galaxy_model *m, const keyed *z, size_t n, bn_galaxy_shape *out)
{
    /* the median of |z| for a profile sech^2(z / z_d) is z_d atanh(1/2),
     * for exp(-|z| / z_d) z_d ln 2 (the disk's own profile: equal
     * masses weigh the median as the density does) */
    const double median = key_of_fraction(z, n, 0.5);
    out->scale_height = median / (m->disk.vertical == BN_GALAXY_EXP ? log(2.0) : atanh(0.5));
}

bn_status bn_galaxy_shape_measure(const bn_galaxy_model *m, const bn_particles *p, bn_galaxy_shape *out)
{
    if (!m || !p || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_galaxy_shape_measure: NULL argument");
    static const double fraction[3] = BN_GALAXY_LAGRANGIAN_FRACTIONS;
    memset(out, 0, sizeof *out);
    out->scale_height = out->toomre_q = NAN;
    keyed *k = bn_alloc(p->n * sizeof *k + 1, "galaxy shape: sorted particles");
    if (!k) return BN_ERR_NOMEM;
    for (int t = 0; t < BN_PART_TYPES; t++) {
        const size_t n = sorted_keys(p, t, 0, k);
        for (int f = 0; f < 3 && n > 0; f++) out->lagrangian[t][f] = key_of_fraction(k, n, fraction[f]);
    }
    const size_t nd = sorted_keys(p, DISK_TYPE, 1, k);
    if (nd > 0 && m->disk.profile == BN_GALAXY_EXPONENTIAL) disk_numbers(m, k, nd, out);
    free(k);
    if (!(nd > 0 && m->disk.profile == BN_GALAXY_EXPONENTIAL)) return BN_OK;
    /* rings of width 0.4 q_radius: the third is centred on q_radius */
    bn_galaxy_ring ring[3];
    BN_TRY(bn_galaxy_disk_rings(m, p, 3, 1.2 * m->disk.q_radius, ring));
    out->toomre_q = ring[2].toomre_q;
    out->q_ring_n = ring[2].n;
    return BN_OK;
}
