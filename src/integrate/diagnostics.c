/* Energies, momenta and angular momentum of a particle set, in total and
 * per part type. Summed in a fixed order (serial) so that the result is
 * bit-identical whatever the thread count. */
#include <string.h>
#include "core/error.h"

bn_status bn_energies_compute(const bn_particles *p, bn_energies *e)
{
    if (!p || !e) return bn_fail(BN_ERR_ARGUMENT, "bn_energies_compute: NULL argument");
    memset(e, 0, sizeof *e);
    double mtot = 0.0;
    for (size_t i = 0; i < p->n; i++) {
        const double m = p->mass[i];
        const double x = p->pos[0][i], y = p->pos[1][i], z = p->pos[2][i];
        const double vx = p->vel[0][i], vy = p->vel[1][i], vz = p->vel[2][i];
        const double k = 0.5 * m * (vx * vx + vy * vy + vz * vz), w = p->pot ? 0.5 * m * p->pot[i] : 0.0;
        const double l[3] = {m * (y * vz - z * vy), m * (z * vx - x * vz), m * (x * vy - y * vx)};
        e->kinetic += k;
        e->potential += w;
        e->momentum[0] += m * vx;
        e->momentum[1] += m * vy;
        e->momentum[2] += m * vz;
        bn_component_energies *c = &e->part[bn_particles_part_type(p, i)];
        c->count += 1;
        c->mass += m;
        c->kinetic += k;
        c->potential += w;
        for (int d = 0; d < 3; d++) {
            e->angular_momentum[d] += l[d];
            c->angular_momentum[d] += l[d];
        }
        e->com[0] += m * x;
        e->com[1] += m * y;
        e->com[2] += m * z;
        mtot += m;
    }
    if (mtot > 0)
        for (int k = 0; k < 3; k++) e->com[k] /= mtot;
    e->total = e->kinetic + e->potential;
    return BN_OK;
}
