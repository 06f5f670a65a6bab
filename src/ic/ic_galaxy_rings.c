/* A disk measured from its particles in rings (bn_galaxy_disk_rings):
 * surface density, radial dispersion, Toomre's Q and, from the forces,
 * the circular speed; the numbers `banyan ic galaxy --plots` draws over
 * the model's curves. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "ic/ic_galaxy.h"

#define DISK_TYPE 2

/* The disk particles' mean position and velocity; *n their count. */
static void disk_centre(const bn_particles *p, double x[3], double v[3], size_t *n)
{
    *n = 0;
    for (int k = 0; k < 3; k++) x[k] = v[k] = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (bn_particles_part_type(p, i) != DISK_TYPE) continue;
        ++*n;
        for (int k = 0; k < 3; k++) x[k] += p->pos[k][i], v[k] += p->vel[k][i];
    }
    for (int k = 0; k < 3; k++) x[k] /= *n ? (double)*n : 1, v[k] /= *n ? (double)*n : 1;
}

/* Sums per ring: count, mass, R, v_R, v_R^2, and -a.R_hat R and the count
 * of the midplane particles. */
static void ring_sums(const bn_particles *p, double zmid, size_t nr, double R_max, const double c[3],
                      const double cv[3], double (*sum)[7])
{
    for (size_t i = 0; i < p->n; i++) {
        if (bn_particles_part_type(p, i) != DISK_TYPE) continue;
        const double x = p->pos[0][i] - c[0], y = p->pos[1][i] - c[1], R = hypot(x, y);
        const size_t b = (size_t)(R / R_max * (double)nr);
        if (b >= nr || !(R > 0)) continue;
        const double vR = ((p->vel[0][i] - cv[0]) * x + (p->vel[1][i] - cv[1]) * y) / R;
        double *s = sum[b];
        s[0] += 1, s[1] += p->mass[i], s[2] += R, s[3] += vR, s[4] += vR * vR;
        if (p->acc[0] && fabs(p->pos[2][i] - c[2]) < zmid) s[5] -= p->acc[0][i] * x + p->acc[1][i] * y, s[6] += 1;
    }
}

bn_status bn_galaxy_disk_rings(const bn_galaxy_model *m, const bn_particles *p, size_t n_rings, double R_max,
                               bn_galaxy_ring *out)
{
    if (!m || !p || !out || n_rings == 0 || !(R_max > 0 && isfinite(R_max)))
        return bn_fail(BN_ERR_ARGUMENT, "bn_galaxy_disk_rings: NULL argument, no ring or R_max = %g", R_max);
    if (m->disk.profile != BN_GALAXY_EXPONENTIAL) return bn_fail(BN_ERR_ARGUMENT, "galaxy rings: the model has no disk");
    double c[3], cv[3];
    size_t nd;
    disk_centre(p, c, cv, &nd);
    if (nd == 0) return bn_fail(BN_ERR_ARGUMENT, "galaxy rings: no disk particle (PartType2) in the set");
    double (*sum)[7] = bn_calloc(n_rings, sizeof *sum, "galaxy rings");
    if (!sum) return BN_ERR_NOMEM;
    ring_sums(p, 0.5 * m->disk.scale_height, n_rings, R_max, c, cv, sum);
    bn_status s = BN_OK;
    for (size_t b = 0; b < n_rings && s == BN_OK; b++) {
        const double *t = sum[b], n = t[0] > 0 ? t[0] : NAN;
        bn_galaxy_ring *r = &out[b];
        r->R_lo = R_max * (double)b / (double)n_rings;
        r->R_hi = R_max * (double)(b + 1) / (double)n_rings;
        r->n = (size_t)t[0];
        r->R = t[2] / n;
        r->v_circ = t[6] > 0 ? sqrt(fmax(0.0, t[5] / t[6])) : NAN;
        r->sigma_R = sqrt(fmax(0.0, t[4] / n - (t[3] / n) * (t[3] / n)));
        r->surface_density = t[1] / (M_PI * (r->R_hi * r->R_hi - r->R_lo * r->R_lo));
        r->toomre_q = NAN;
        bn_galaxy_disk_point at;
        if (r->n > 0) s = bn_galaxy_disk_curve(m, 1, &r->R, &at);
        if (r->n > 0 && s == BN_OK) r->toomre_q = r->sigma_R * at.kappa / (3.36 * m->units.G * r->surface_density);
    }
    free(sum);
    return s;
}
