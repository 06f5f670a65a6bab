/* Restart files of a bn_simulation (bn_simulation_save_state / _load_state):
 * everything it keeps between steps, so that a simulation loaded from one
 * continues with the same bits as the one saved (same backend, ranks and
 * threads). The layout is io/state_h5.h's; one file per rank. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/simulation_internal.h"
#include "io/snapshot_foreign.h"
#include "integrate/timebins.h"
#include "io/state_h5.h"
#include "parallel/comm.h"

/* The fields of bn_simulation that are not particles, as saved (the
 * structs whole: a restart file is read by the build that wrote it,
 * BN_STATE_FORMAT and the blobs' sizes check it). */
typedef struct saved_sim {
    bn_gravity_params grav; /* an error target's chosen settings */
    bn_integrator_params integ;
    bn_accuracy acc;
    int tuned, ranks;
    bn_backend backend;
    long last_check, steps_since_build;
    bn_rebuild_tuner tuner;
} saved_sim;

static saved_sim saved_of(const bn_simulation *sim)
{
    saved_sim v;
    memset(&v, 0, sizeof v); /* padding too: the checksum reads it */
    v.grav = sim->grav;
    v.integ = sim->integ;
    v.acc = sim->acc;
    v.tuned = sim->tuned;
    v.ranks = bn_comm_size(sim->comm);
    v.backend = bn_simulation_backend(sim);
    v.last_check = sim->last_check;
    v.steps_since_build = sim->steps_since_build;
    v.tuner = sim->tuner;
    return v;
}

/* The blobs that are not the clock, the fields or the user's: read with
 * size 0 (allocated), written with what the simulation has. */
typedef struct extra_blobs {
    void *cost, *cut, *tree;
    size_t cost_bytes, cut_bytes, tree_bytes;
} extra_blobs;

static void set_blobs(bn_state_file *f, bn_clock *clock, saved_sim *v, void *user, size_t user_size,
                      const extra_blobs *x)
{
    static const extra_blobs none = {NULL, NULL, NULL, 0, 0, 0};
    if (!x) x = &none;
    f->n_blobs = 6;
    f->blob[0] = (bn_state_blob){"Clock", clock, sizeof *clock, 0};
    f->blob[1] = (bn_state_blob){"Simulation", v, sizeof *v, 0};
    f->blob[2] = (bn_state_blob){"User", user, user_size, 0};
    f->blob[3] = (bn_state_blob){"Costs", x->cost, x->cost_bytes, 0}; /* the domains' weights since their last cut */
    f->blob[4] = (bn_state_blob){"Cut", x->cut, x->cut_bytes, 0};       /* the cut the steps keep (crossers) */
    f->blob[5] = (bn_state_blob){"Tree", x->tree, x->tree_bytes, 0};    /* the tree the next refresh starts from */
}

/* The kept cut as bytes: its numbers, then its nranks + 1 keys; none
 * before the first cut. */
typedef struct saved_cut {
    int64_t nranks, curve;
    double lo[3], side;
} saved_cut;

static bn_status cut_bytes_of(const bn_domain *d, void **out, size_t *bytes)
{
    *out = NULL;
    *bytes = 0;
    if (!d->split) return BN_OK;
    const size_t keys = ((size_t)d->nranks + 1) * sizeof *d->split;
    unsigned char *b = bn_alloc(sizeof(saved_cut) + keys, "the domains' cut");
    if (!b) return BN_ERR_NOMEM;
    saved_cut h;
    memset(&h, 0, sizeof h);
    h.nranks = d->nranks;
    h.curve = d->curve;
    memcpy(h.lo, d->lo, sizeof h.lo);
    h.side = d->side;
    memcpy(b, &h, sizeof h);
    memcpy(b + sizeof h, d->split, keys);
    *out = b;
    *bytes = sizeof h + keys;
    return BN_OK;
}

/* The cut back from a restart file's bytes (none: no cut yet). */
static bn_status cut_from_bytes(const bn_state_blob *b, int ranks, bn_domain *d)
{
    memset(d, 0, sizeof *d);
    if (b->size == 0) return BN_OK;
    saved_cut h;
    if (b->size < sizeof h) return bn_fail(BN_ERR_FORMAT, "restart file: %zu bytes of the domains' cut", b->size);
    memcpy(&h, b->data, sizeof h);
    if (h.nranks != ranks || b->size != sizeof h + ((size_t)ranks + 1) * sizeof(uint64_t))
        return bn_fail(BN_ERR_FORMAT, "restart file: a cut for %lld ranks in %zu bytes, this run has %d ranks",
                       (long long)h.nranks, b->size, ranks);
    bn_domain c = {ranks, NULL, {h.lo[0], h.lo[1], h.lo[2]}, h.side, (bn_curve)h.curve};
    c.split = bn_alloc(((size_t)ranks + 1) * sizeof *c.split, "the domains' cut");
    if (!c.split) return BN_ERR_NOMEM;
    memcpy(c.split, (const unsigned char *)b->data + sizeof h, ((size_t)ranks + 1) * sizeof *c.split);
    /* a cut as bn_domain_decompose makes one: bounds from 0 to 2^63 in
     * order, a finite cube, a known curve */
    int sane = c.split[0] == 0 && c.split[ranks] == UINT64_C(1) << 63 && h.side > 0 && isfinite(h.side) &&
               (h.curve == BN_CURVE_HILBERT || h.curve == BN_CURVE_MORTON);
    for (int r = 0; r < 3; r++) sane = sane && isfinite(h.lo[r]);
    for (int r = 0; r < ranks; r++) sane = sane && c.split[r] <= c.split[r + 1];
    if (!sane) {
        free(c.split);
        return bn_fail(BN_ERR_FORMAT, "restart file: the domains' cut is not one (bounds out of order or range)");
    }
    *d = c;
    return BN_OK;
}

/* Several ranks: the measured costs since the last cut (read, which
 * starts them from 0, and put back), so that a continued run cuts where
 * the unstopped one does; none with one rank or a backend that cannot put
 * them back. */
static bn_status collect_costs(bn_simulation *sim, double **cost, size_t *bytes)
{
    *cost = NULL;
    *bytes = 0;
    if (bn_comm_size(sim->comm) <= 1 || !sim->ops || !sim->ops->costs_set || !sim->backend_current) return BN_OK;
    const size_t n = sim->host->n;
    double total = 0, *c = bn_alloc((n + 1) * sizeof *c, "particle costs");
    int measured = 0;
    if (!c) return BN_ERR_NOMEM;
    bn_status s = sim->ops->costs(sim->state, c, &total, &measured);
    if (s == BN_OK && measured) s = sim->ops->costs_set(sim->state, c, n);
    if (s != BN_OK || !measured) {
        free(c);
        return s;
    }
    *cost = c;
    *bytes = n * sizeof *c;
    return BN_OK;
}

/* Block steps need the backend's bins (backend.h bins_read/bins_write;
 * both backends have them: a backend without would be refused here). */
static bn_status bins_supported(const bn_simulation *sim, const char *what)
{
    if (sim->ops->bins_read && sim->ops->bins_write) return BN_OK;
    return bn_fail(BN_ERR_UNSUPPORTED, "%s: restart files of block time steps (TimeIntegration:time_bins = %d) on "
                   "the %s backend are not supported yet; shared steps are, and the cpu backend", what,
                   sim->integ.time_bins, sim->ops->name);
}

/* The particles with their forces and bins as the backend holds them. */
static bn_status collect(bn_simulation *sim, uint8_t **bin)
{
    *bin = NULL;
    /* forces that moved with a re-balance are the run's: saved as they are
     * (computing them again on the new domains would give other bits) */
    const int moved = sim->forces_moved && sim->host_current && sim->host->acc[0] && sim->host->pot;
    if (!sim->have_forces && !moved) {
        if (sim->clock.tick != 0) return bn_fail(BN_ERR_INTERNAL, "save_state: no forces inside a block-step cycle");
        BN_TRY(bn_simulation_compute_forces(sim));
    }
    BN_TRY(bn_sim_sync_host(sim));
    /* at tick 0 the next cycle's opening kick gives every particle its bin
     * anew: the bins matter only inside a cycle (where no re-balance is;
     * crossers move with their bins) */
    if (sim->integ.time_bins == 0 || !sim->ops || sim->clock.tick == 0) return BN_OK;
    BN_TRY(bins_supported(sim, "save_state"));
    const size_t n = sim->host->n;
    *bin = bn_alloc(n + 1, "time bins");
    if (!*bin) return BN_ERR_NOMEM;
    return sim->ops->bins_read(sim->state, *bin, n);
}

/* Block steps that refresh their tree between rebuilds: the tree the
 * next step may refresh, where the backend can give it. None where the
 * backend is not current (a re-balance on the host gave this rank
 * other particles: the next step uploads them and builds anew, and so
 * does the continued run; the backend's tree is of the particles that
 * were). */
static bn_status collect_tree(bn_simulation *sim, void **tree, size_t *bytes)
{
    *tree = NULL;
    *bytes = 0;
    if (!bn_block_steps_refresh(sim->grav.method, sim->integ.time_bins, sim->integ.tree_rebuild) || !sim->ops ||
        !sim->ops->tree_save || !sim->backend_current)
        return BN_OK;
    return sim->ops->tree_save(sim->state, tree, bytes);
}

bn_status bn_simulation_save_state(bn_simulation *sim, const char *path, const void *user, size_t user_size)
{
    if (!sim || !path) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_save_state: NULL argument");
    uint8_t *bin = NULL;
    extra_blobs x = {NULL, NULL, NULL, 0, 0, 0};
    double *cost = NULL;
    bn_status s = collect(sim, &bin);
    if (s == BN_OK) s = collect_costs(sim, &cost, &x.cost_bytes);
    x.cost = cost;
    if (s == BN_OK) s = cut_bytes_of(&sim->cut, &x.cut, &x.cut_bytes);
    if (s == BN_OK) s = collect_tree(sim, &x.tree, &x.tree_bytes);
    bn_clock clock = sim->clock;
    saved_sim v = saved_of(sim);
    bn_state_file f = {sim->host, bin, 0, {{0}}};
    set_blobs(&f, &clock, &v, (void *)user, user ? user_size : 0, &x);
    if (s == BN_OK) s = bn_state_write(path, &f);
    free(bin);
    free(cost);
    free(x.cut);
    free(x.tree);
    return s;
}

/* The saved fields back; the backend and device stay the caller's. */
static bn_status restore_fields(bn_simulation *sim, const saved_sim *v, const bn_clock *clock)
{
    bn_gravity_params g = v->grav;
    g.backend = sim->grav.backend;
    g.device = sim->grav.device;
    sim->clock.tick = 0; /* the settings change at a synchronised state */
    BN_TRY(bn_simulation_set_gravity(sim, &g));
    BN_TRY(bn_simulation_set_integrator(sim, &v->integ));
    sim->acc = v->acc;
    sim->tuned = v->tuned;
    sim->last_check = v->last_check;
    sim->steps_since_build = v->steps_since_build;
    sim->refused_builds = 0; /* not saved: counted from here */
    sim->tuner = v->tuner;
    sim->clock = *clock;
    return BN_OK;
}

/* The particles (with their forces: the next step starts from them, as
 * the saved run's did) on the backend, then its clock and bins. */
static bn_status install(bn_simulation *sim, bn_state_file *f)
{
    bn_particles_free(sim->host);
    sim->host = f->p;
    f->p = NULL;
    sim->host_current = 1;
    sim->backend_current = 0;
    sim->have_forces = 0;
    sim->forces_moved = 1; /* upload() keeps the forces that come along */
    sim->stats_current = 0;
    BN_TRY(bn_sim_ensure_backend(sim));
    if (f->bin) BN_TRY(bn_comm_agree(sim->comm, bins_supported(sim, "load_state")));
    bn_status s = f->bin ? sim->ops->bins_write(sim->state, f->bin, sim->host->n) : BN_OK;
    const bn_state_blob *cost = &f->blob[3];
    if (s == BN_OK && cost->size && sim->ops->costs_set) {
        if (cost->size != sim->host->n * sizeof(double))
            s = bn_fail(BN_ERR_FORMAT, "restart file: %zu bytes of costs for %zu particles", cost->size, sim->host->n);
        else
            s = sim->ops->costs_set(sim->state, cost->data, sim->host->n);
    }
    const bn_state_blob *tree = &f->blob[5]; /* a backend without tree_load builds one */
    if (s == BN_OK && tree->size && sim->ops->tree_load) s = sim->ops->tree_load(sim->state, tree->data, tree->size);
    return bn_comm_agree(sim->comm, s);
}

/* Every rank's file of one save (the same time, step and tick), as the
 * set path checks file by file: a rank's file of another save would
 * continue the run from two states. One reduction of each number and its
 * negative (the maximum of -x is minus the minimum of x): every rank sees
 * the same range, so every rank fails alike, without another agreement. */
static bn_status one_save(const bn_comm *c, const char *path, const bn_clock *clock)
{
    if (bn_comm_size(c) <= 1) return BN_OK;
    const double t = clock->time, steps = (double)clock->steps, tick = clock->tick;
    double v[6] = {t, steps, tick, -t, -steps, -tick};
    BN_TRY(bn_comm_allreduce(c, v, 6, BN_REDUCE_MAX));
    if (v[0] == -v[3] && v[1] == -v[4] && v[2] == -v[5]) return BN_OK;
    return bn_fail(BN_ERR_FORMAT, "%s: written at t = %.17g (step %ld, tick %d), the %d ranks' files at t = %.17g to "
                   "%.17g (steps %.0f to %.0f, ticks %.0f to %.0f): not one save", path, t, clock->steps, clock->tick,
                   bn_comm_size(c), -v[3], v[0], -v[4], v[1], -v[5], v[2]);
}

bn_status bn_simulation_load_state(bn_simulation *sim, const char *path, bn_state_info *info, void **user,
                                   size_t *user_size)
{
    if (!sim || !path) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_load_state: NULL argument");
    bn_clock clock;
    saved_sim v;
    bn_state_file f = {NULL, NULL, 0, {{0}}};
    set_blobs(&f, &clock, &v, NULL, 0, NULL);
    bn_status s = bn_state_read(path, &f);
    if (s == BN_OK && v.ranks != bn_comm_size(sim->comm))
        s = bn_fail(BN_ERR_ARGUMENT, "restart file %s was written by %d rank(s), this run has %d: continue it with "
                    "%d", path, v.ranks, bn_comm_size(sim->comm), v.ranks);
    s = bn_comm_agree(sim->comm, s);
    if (s == BN_OK) s = one_save(sim->comm, path, &clock); /* the same on every rank */
    if (s == BN_OK) s = restore_fields(sim, &v, &clock);
    if (s == BN_OK) s = install(sim, &f);
    bn_domain cut;
    memset(&cut, 0, sizeof cut);
    if (s == BN_OK) s = bn_comm_agree(sim->comm, cut_from_bytes(&f.blob[4], bn_comm_size(sim->comm), &cut));
    if (s == BN_OK) { /* the unstopped run's cut: its crossers move as they did */
        bn_domain_release(&sim->cut);
        sim->cut = cut;
    } else {
        bn_domain_release(&cut); /* made here, another rank failed */
    }
    if (s == BN_OK && info) {
        info->time = clock.time;
        info->steps = clock.steps;
        info->ranks = v.ranks;
        info->backend = v.backend;
    }
    if (s == BN_OK && user) {
        *user = f.blob[2].data;
        *user_size = f.blob[2].size;
        f.blob[2].owned = 0;
    }
    bn_state_file_release(&f);
    return s;
}

/* ---- a restart set of another rank count ---- */

/* What every rank takes from file 0 of a set. */
typedef struct set_head {
    saved_sim v;
    bn_clock clock;
} set_head;

/* The bins of a file after those of the files before (*bin holds *n of
 * them); a set's files all have bins (inside a cycle) or none. */
static bn_status append_bins(const char *path, const bn_state_file *f, size_t before, uint8_t **bin)
{
    const size_t m = f->p ? f->p->n : 0;
    if (!f->bin) return *bin ? bn_fail(BN_ERR_FORMAT, "%s: no time bins, the set's other files have them", path)
                              : BN_OK;
    if (!*bin && before > 0) return bn_fail(BN_ERR_FORMAT, "%s: time bins, the set's other files have none", path);
    uint8_t *b = realloc(*bin, before + m + 1);
    if (!b) return bn_fail(BN_ERR_NOMEM, "%s: out of memory for %zu time bins", path, before + m);
    memcpy(b + before, f->bin, m);
    *bin = b;
    return BN_OK;
}

/* Whether two files' clocks are of one save (the same time, step, tick). */
static int same_save(const bn_clock *a, const bn_clock *b)
{
    return a->time == b->time && a->steps == b->steps && a->tick == b->tick;
}

/* File `path` of a set of n_files: its particles (with their forces)
 * after *mine, its bins after *bin; file 0's head and user bytes; *seen:
 * the clock of the first file this rank read (the others must be of the
 * same save). All blobs are read: the checksum covers them. */
static bn_status read_set_file(const char *path, int n_files, int first, bn_particles **mine, uint8_t **bin,
                               set_head *head, bn_state_blob *user, bn_clock *seen, int *n_seen)
{
    set_head h;
    bn_state_file f = {NULL, NULL, 0, {{0}}};
    set_blobs(&f, &h.clock, &h.v, NULL, 0, NULL);
    BN_TRY(bn_state_read(path, &f));
    bn_status s = BN_OK;
    if (h.v.ranks != n_files)
        s = bn_fail(BN_ERR_FORMAT, "%s: one of a set of %d rank(s)' files, read as one of %d", path, h.v.ranks,
                    n_files);
    if (s == BN_OK && *n_seen > 0 && !same_save(seen, &h.clock))
        s = bn_fail(BN_ERR_FORMAT, "%s: written at t = %.17g (step %ld), another file of its set at t = %.17g: not one "
                    "save", path, h.clock.time, h.clock.steps, seen->time);
    if (s == BN_OK && (*n_seen)++ == 0) *seen = h.clock;
    const size_t before = *mine ? (*mine)->n : 0;
    if (s == BN_OK) s = append_bins(path, &f, before, bin);
    if (s == BN_OK) s = bn_snapshot_append(mine, f.p);
    if (s == BN_OK && first) {
        *head = h;
        *user = f.blob[2];
        f.blob[2].owned = 0; /* the caller's now */
    }
    bn_state_file_release(&f);
    return s;
}

/* Rank 0's head and user bytes (file 0's) on every rank. */
static bn_status share_head(const bn_comm *c, set_head *head, bn_state_blob *user)
{
    const int root = bn_comm_rank(c) == 0;
    void *got = NULL;
    size_t total = 0;
    BN_TRY(bn_comm_gather(c, -1, head, root ? 1 : 0, sizeof *head, &got, &total, NULL));
    if (total == 1) memcpy(head, got, sizeof *head);
    free(got);
    got = NULL;
    BN_TRY(bn_comm_gather(c, -1, user->data, root ? user->size : 0, 1, &got, &total, NULL));
    if (user->owned) free(user->data);
    *user = (bn_state_blob){"User", got, total, 1};
    return BN_OK;
}

bn_status bn_simulation_load_state_set(bn_simulation *sim, const char *const *paths, int n_files, bn_state_info *info,
                                       void **user, size_t *user_size)
{
    if (!sim || !paths || n_files < 1)
        return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_load_state_set: NULL argument or no files");
    const int rank = bn_comm_rank(sim->comm), ranks = bn_comm_size(sim->comm);
    set_head head;
    memset(&head, 0, sizeof head);
    bn_state_blob mine_user = {"User", NULL, 0, 0};
    bn_particles *mine = NULL;
    uint8_t *bin = NULL;
    bn_clock seen;
    int n_seen = 0;
    bn_status s = bn_particles_create(&mine, 0);
    if (s == BN_OK) s = bn_particles_ensure_forces(mine); /* appended along: the files' forces */
    for (int j = rank; s == BN_OK && j < n_files; j += ranks)
        s = read_set_file(paths[j], n_files, j == 0, &mine, &bin, &head, &mine_user, &seen, &n_seen);
    s = bn_comm_agree(sim->comm, s);
    if (s == BN_OK) s = bn_comm_agree(sim->comm, share_head(sim->comm, &head, &mine_user));
    if (s == BN_OK && n_seen > 0 && !same_save(&seen, &head.clock)) /* a stray file among the set's */
        s = bn_fail(BN_ERR_FORMAT, "%s: written at t = %.17g (step %ld), the set's file 0 at t = %.17g: not one save",
                    paths[rank], seen.time, seen.steps, head.clock.time);
    if (s == BN_OK && head.clock.tick != 0 && !bin) /* a rank without files inside a cycle: none to write */
        s = (bin = calloc(1, 1)) ? BN_OK : bn_fail(BN_ERR_NOMEM, "time bins");
    s = bn_comm_agree(sim->comm, s); /* every rank, before the collectives that follow */
    if (s == BN_OK) s = bn_comm_agree(sim->comm, restore_fields(sim, &head.v, &head.clock));
    bn_state_file f = {mine, bin, 0, {{0}}};
    set_blobs(&f, &head.clock, &head.v, NULL, 0, NULL); /* no costs, no tree: anew */
    mine = NULL;
    bin = NULL;
    if (s == BN_OK) s = install(sim, &f); /* agreed; no cut: the next rebalance makes one */
    if (s == BN_OK) bn_domain_release(&sim->cut);
    if (s == BN_OK && info) *info = (bn_state_info){head.clock.time, head.clock.steps, n_files, head.v.backend};
    if (s == BN_OK && user) {
        *user = mine_user.data;
        *user_size = mine_user.size;
        mine_user.owned = 0;
    }
    if (mine_user.owned) free(mine_user.data);
    bn_state_file_release(&f);
    bn_particles_free(mine);
    free(bin);
    return s;
}

bn_status bn_simulation_state_ranks(const char *path, int *ranks)
{
    if (!path || !ranks) return bn_fail(BN_ERR_ARGUMENT, "bn_simulation_state_ranks: NULL argument");
    bn_clock clock;
    saved_sim v;
    bn_state_file f = {NULL, NULL, 0, {{0}}};
    set_blobs(&f, &clock, &v, NULL, 0, NULL);
    f.n_blobs = 2; /* the clock and the simulation's fields */
    BN_TRY(bn_state_read_blobs(path, &f));
    bn_state_file_release(&f);
    if (v.ranks < 1) return bn_fail(BN_ERR_FORMAT, "%s: written by %d ranks", path, v.ranks);
    *ranks = v.ranks;
    return BN_OK;
}
