/* `banyan run` under mpirun: every rank holds the whole initial set
 * (read or generated), keeps its slice, and the simulation cuts the
 * domains; for a snapshot or the picture rank 0 gathers every rank's
 * particles and puts them back in the initial set's order (by id: each
 * id is the same particle all run long), so that P ranks write the same
 * layout as one process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/run.h"
#include "core/error.h"
#include "parallel/comm.h"

/* One particle on its way to rank 0. */
typedef struct run_record {
    uint64_t id;
    double pos[3], vel[3], mass, acc[3], pot;
    uint8_t type; /* part type */
} run_record;

static int by_id(const void *a, const void *b)
{
    const uint64_t x = ((const run_id_place *)a)->id, y = ((const run_id_place *)b)->id;
    return (x > y) - (x < y);
}

static int record_by_id(const void *a, const void *b)
{
    const uint64_t x = ((const run_record *)a)->id, y = ((const run_record *)b)->id;
    return (x > y) - (x < y);
}

/* Rank 0's map from ids to places in the file; the ids must be unique
 * (the same map on every rank would need them anyway). */
static bn_status build_places(run_ranks *rr, const bn_particles *all)
{
    rr->place = bn_alloc_array(all->n ? all->n : 1, sizeof *rr->place, "particle places");
    if (!rr->place) return BN_ERR_NOMEM;
    rr->n = all->n;
    for (size_t i = 0; i < all->n; i++) {
        rr->place[i].id = all->id[i];
        rr->place[i].index = i;
    }
    qsort(rr->place, rr->n, sizeof *rr->place, by_id);
    for (size_t i = 1; i < rr->n; i++)
        if (rr->place[i].id == rr->place[i - 1].id)
            return bn_fail(BN_ERR_PARAMETER, "ParticleIDs: id %llu is held by particles %zu and %zu; several ranks "
                           "put the particles back in order by id, which must be unique",
                           (unsigned long long)rr->place[i].id, rr->place[i - 1].index, rr->place[i].index);
    return BN_OK;
}

bn_status run_ranks_split(const bn_comm *c, run_ranks *rr, bn_particles **p, int places)
{
    bn_particles *mine = NULL;
    bn_status s = places && bn_comm_rank(c) == 0 ? build_places(rr, *p) : BN_OK;
    if (s == BN_OK) s = cli_take_slice(c, *p, 0, &mine);
    BN_TRY(bn_comm_agree(c, s));
    bn_particles_free(*p);
    *p = mine;
    return BN_OK;
}

static void to_record(const bn_particles *p, size_t i, run_record *r)
{
    memset(r, 0, sizeof *r);
    r->id = p->id[i];
    for (int k = 0; k < 3; k++) {
        r->pos[k] = p->pos[k][i];
        r->vel[k] = p->vel[k][i];
        if (p->acc[k]) r->acc[k] = p->acc[k][i];
    }
    r->mass = p->mass[i];
    if (p->pot) r->pot = p->pot[i];
    r->type = (uint8_t)bn_particles_part_type(p, i);
}

/* The gathered records, sorted by id, into their places of the file
 * (without the places map: in id order). */
static bn_status place_records(const run_ranks *rr, run_record *got, size_t n, int forces, bn_particles **out)
{
    if (rr->place && n != rr->n) return bn_fail(BN_ERR_INTERNAL, "gathered %zu particles of %zu", n, rr->n);
    qsort(got, n, sizeof *got, record_by_id);
    BN_TRY(bn_particles_create(out, n));
    bn_particles *p = *out;
    if (forces) BN_TRY(bn_particles_ensure_forces(p));
    for (size_t j = 0; j < n; j++) /* types kept unless every particle is PartType1 */
        if (got[j].type != 1) BN_TRY(bn_particles_ensure_types(p));
    for (size_t j = 0; j < n; j++) {
        if (rr->place && got[j].id != rr->place[j].id)
            return bn_fail(BN_ERR_INTERNAL, "gathered id %llu where id %llu was expected",
                           (unsigned long long)got[j].id, (unsigned long long)rr->place[j].id);
        const size_t i = rr->place ? rr->place[j].index : j;
        p->id[i] = got[j].id;
        p->mass[i] = got[j].mass;
        for (int k = 0; k < 3; k++) {
            p->pos[k][i] = got[j].pos[k];
            p->vel[k][i] = got[j].vel[k];
            if (forces) p->acc[k][i] = got[j].acc[k];
        }
        if (forces) p->pot[i] = got[j].pot;
        if (p->type) p->type[i] = got[j].type;
    }
    return BN_OK;
}

bn_status run_ranks_gather(const bn_comm *c, const run_ranks *rr, const bn_particles *mine, bn_particles **all)
{
    *all = NULL;
    run_record *send = bn_alloc_array(mine->n ? mine->n : 1, sizeof *send, "particles to gather");
    BN_TRY(bn_comm_agree(c, send ? BN_OK : BN_ERR_NOMEM));
    for (size_t i = 0; i < mine->n; i++) to_record(mine, i, send + i);
    /* forces on every rank or on none (every rank computed them together) */
    double forces = mine->acc[0] && mine->pot ? 1 : 0;
    bn_status s = bn_comm_allreduce(c, &forces, 1, BN_REDUCE_MIN);
    void *got = NULL;
    size_t n = 0;
    if (s == BN_OK) s = bn_comm_gather(c, 0, send, mine->n, sizeof *send, &got, &n, NULL);
    free(send);
    if (s != BN_OK) return s;
    s = bn_comm_rank(c) == 0 ? place_records(rr, got, n, forces > 0, all) : BN_OK;
    free(got);
    if (s != BN_OK) {
        bn_particles_free(*all);
        *all = NULL;
    }
    return bn_comm_agree(c, s);
}

bn_status run_ranks_write_part(const bn_comm *c, const char *path, const bn_particles *mine,
                               const bn_snapshot_meta *meta)
{
    char part[RUN_PATH_MAX + 16], tmp[RUN_PATH_MAX + 32];
    double total[BN_PART_TYPES] = {0}; /* per part type; exact below 2^53 particles */
    for (size_t i = 0; i < mine->n; i++) {
        const int t = bn_particles_part_type(mine, i);
        if (t < BN_PART_TYPES) total[t] += 1; /* others: refused by the writer */
    }
    BN_TRY(bn_comm_allreduce(c, total, BN_PART_TYPES, BN_REDUCE_SUM));
    uint64_t n_total[BN_PART_TYPES];
    for (int t = 0; t < BN_PART_TYPES; t++) n_total[t] = (uint64_t)total[t];
    const int me = bn_comm_rank(c);
    /* every rank's file under a temporary name first, renamed only once
     * all are written: a failure leaves the set as it was (an older set of
     * the same name whole, not mixed with new files) */
    bn_status s = bn_snapshot_part_path(path, me, part, sizeof part);
    if (s == BN_OK && snprintf(tmp, sizeof tmp, "%s.partial", part) >= (int)sizeof tmp)
        s = bn_fail(BN_ERR_IO, "%s: the name is too long", part);
    if (s == BN_OK) s = bn_snapshot_write_part_types(tmp, mine, meta, me, bn_comm_size(c), n_total);
    const int wrote = s == BN_OK;
    s = bn_comm_agree(c, s);
    if (s != BN_OK) {
        if (wrote) remove(tmp);
        return s;
    }
    const int moved = rename(tmp, part) == 0;
    s = bn_comm_agree(c, moved ? BN_OK : bn_fail(BN_ERR_IO, "cannot rename %s to %s: %s", tmp, part, strerror(errno)));
    if (s != BN_OK) remove(moved ? part : tmp); /* an incomplete set is refused by readers; a mixed one might not be */
    return s;
}

void run_ranks_free(run_ranks *rr)
{
    free(rr->place);
    rr->place = NULL;
    rr->n = 0;
}
