/* banyan forces under mpirun: every rank reads the snapshot, takes a
 * contiguous slice of it, the domains are cut along the curve, the forces
 * computed by all ranks together (locally essential trees), gathered
 * back into the file's order on rank 0, which writes the output. */
#include <stdio.h>
#include <stdlib.h>
#include "cli/cli.h"
#include "core/error.h"
#include "core/timer.h"
#include "parallel/comm.h"

bn_status cli_take_slice(const bn_comm *c, const bn_particles *all, int ids_as_index, bn_particles **out)
{
    const size_t P = (size_t)bn_comm_size(c), me = (size_t)bn_comm_rank(c);
    const size_t a = all->n * me / P, e = all->n * (me + 1) / P;
    BN_TRY(bn_particles_create(out, e - a));
    const bn_status s = all->type ? bn_particles_ensure_types(*out) : BN_OK;
    if (s != BN_OK) {
        bn_particles_free(*out);
        *out = NULL;
        return s;
    }
    for (size_t i = a; i < e; i++) {
        if (all->type) (*out)->type[i - a] = all->type[i];
        for (int k = 0; k < 3; k++) {
            (*out)->pos[k][i - a] = all->pos[k][i];
            (*out)->vel[k][i - a] = all->vel[k][i];
        }
        (*out)->mass[i - a] = all->mass[i];
        (*out)->id[i - a] = ids_as_index ? i : all->id[i];
    }
    return BN_OK;
}

/* Every rank's forces into all (file order) on rank 0, the writer. */
static bn_status gather_forces(const bn_comm *c, const bn_particles *mine, bn_particles *all)
{
    const int root = bn_comm_rank(c) == 0;
    double *r = bn_alloc_array(5 * mine->n, sizeof *r, "forces to gather");
    bn_status s = bn_comm_agree(c, !r ? BN_ERR_NOMEM : root ? bn_particles_ensure_forces(all) : BN_OK);
    for (size_t i = 0; s == BN_OK && i < mine->n; i++) {
        r[5 * i] = (double)mine->id[i]; /* the index in the file (cli_take_slice) */
        for (int k = 0; k < 3; k++) r[5 * i + 1 + k] = mine->acc[k][i];
        r[5 * i + 4] = mine->pot[i];
    }
    void *got = NULL;
    size_t n = 0; /* (index, ax, ay, az, phi) records, on rank 0 */
    if (s == BN_OK) s = bn_comm_gather(c, 0, r, mine->n, 5 * sizeof *r, &got, &n, NULL);
    const double *g = got;
    for (size_t j = 0; s == BN_OK && j < n; j++) {
        const size_t i = (size_t)g[5 * j];
        for (int k = 0; k < 3; k++) all->acc[k][i] = g[5 * j + 1 + k];
        all->pot[i] = g[5 * j + 4];
    }
    free(got);
    free(r);
    return s;
}

bn_status cli_forces_ranks(const bn_comm *c, const bn_gravity_params *g, bn_particles *all, bn_gravity **grav,
                           double *t_call, bn_domain_stats *dst)
{
    bn_particles *mine = NULL;
    bn_domain d = {0};
    bn_status s = bn_comm_agree(c, cli_take_slice(c, all, 1, &mine));
    if (s == BN_OK) s = bn_domain_decompose(c, mine, NULL, g->curve, &d, dst); /* timed in dst */
    if (s == BN_OK) s = bn_comm_agree(c, bn_gravity_create(grav, g));
    if (s == BN_OK) s = bn_comm_agree(c, bn_gravity_set_comm(*grav, c));
    /* the call alone, as in one process (a device's context is made by
     * bn_gravity_create, the decomposition is timed apart) */
    const double t0 = bn_wall_seconds();
    if (s == BN_OK) s = bn_gravity_compute(*grav, mine);
    *t_call = bn_wall_seconds() - t0;
    if (s == BN_OK) s = gather_forces(c, mine, all);
    bn_domain_release(&d);
    bn_particles_free(mine);
    return s;
}
