/* `banyan run`'s restart files: written at a wall-clock interval, at the
 * end and on SIGTERM/SIGUSR1; the newest one that loads continues a run
 * (--restart). Each rank writes its own file (bn_simulation_save_state);
 * the CLI's own state rides along as the file's user bytes. The same
 * rank count loads them into the simulation (bit for bit); another reads
 * every rank's particles (io/state_h5.h) and shares them out, and the
 * run cuts its domains anew (not bit for bit). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/run.h"
#include "core/error.h"
#include "io/state_h5.h"
#include "parallel/comm.h"

/* The most restart files looked at when searching for the newest. */
#define RUN_RESTART_MAX 9999

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1; /* async-signal-safe: the run loop acts on it */
}

void run_restart_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

int run_restart_signalled(void) { return stop_requested != 0; }

/* File `rank` of restart file `index` written by `ranks` ranks. */
static void path_of(char *out, size_t size, const char *dir, int index, int ranks, int rank)
{
    if (ranks > 1) snprintf(out, size, "%s/restart_%04d.%d.hdf5", dir, index, rank);
    else snprintf(out, size, "%s/restart_%04d.hdf5", dir, index);
}

void run_restart_path(char *out, size_t size, const char *dir, int index, const bn_comm *c)
{
    path_of(out, size, dir, index, bn_comm_size(c), bn_comm_rank(c));
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* The files of restart file `index` on disk: restart_NNNN.hdf5 (one
 * rank: 1, *split 0) or restart_NNNN.0.hdf5 ... .R-1.hdf5 (R, *split 1);
 * 0 when there is none. */
static int files_of(const char *dir, int index, int *split)
{
    char path[RUN_PATH_MAX];
    path_of(path, sizeof path, dir, index, 1, 0);
    *split = 0;
    if (exists(path)) return 1;
    int r = 0;
    for (;; r++) {
        path_of(path, sizeof path, dir, index, 2, r);
        if (!exists(path)) break;
    }
    *split = r > 0;
    return r;
}

/* Rank 0: the files of restart file `index` of any rank count but
 * `keep_ranks` (0: of every count). Names past the first gap beyond
 * this run's count stay: none of banyan's runs leaves such a gap. */
static void remove_files(const char *dir, int index, int keep_ranks, int ranks)
{
    char path[RUN_PATH_MAX];
    if (keep_ranks != 1) {
        path_of(path, sizeof path, dir, index, 1, 0);
        unlink(path);
    }
    for (int r = keep_ranks > 1 ? keep_ranks : 0;; r++) {
        path_of(path, sizeof path, dir, index, 2, r);
        if (unlink(path) != 0 && r >= ranks) break;
    }
}

bn_status run_restart_write(bn_simulation *sim, const char *dir, run_saved *saved, int keep, const bn_comm *c)
{
    char path[RUN_PATH_MAX];
    const int root = bn_comm_rank(c) == 0, ranks = bn_comm_size(c);
    BN_TRY(bn_comm_agree(c, root ? run_make_dirs(dir) : BN_OK));
    /* a file of this number but of another rank count (a damaged newer
     * set passed over, or another branch) would mix with the new one */
    if (root) remove_files(dir, saved->index, ranks, ranks);
    run_restart_path(path, sizeof path, dir, saved->index, c);
    BN_TRY(bn_comm_agree(c, bn_simulation_save_state(sim, path, saved, sizeof *saved)));
    if (saved->index - keep >= 0) { /* only once every rank has its new one */
        run_restart_path(path, sizeof path, dir, saved->index - keep, c);
        unlink(path); /* each rank its own (a directory per node works too) */
        if (root) remove_files(dir, saved->index - keep, 0, ranks); /* and those of other rank counts */
    }
    saved->index++;
    return BN_OK;
}

/* A failure that says the file is bad (refused, and the one before it
 * tried), not that this run cannot go on (no device for the backend,
 * out of memory: stop with it). */
static int damaged(bn_status s) { return s == BN_ERR_FORMAT || s == BN_ERR_IO; }

/* Restart file `index`, written by this run's rank count, into sim. */
static bn_status load_same(bn_simulation *sim, const char *dir, int index, run_saved *saved, bn_state_info *info,
                           const bn_comm *c)
{
    char path[RUN_PATH_MAX];
    run_restart_path(path, sizeof path, dir, index, c);
    void *user = NULL;
    size_t size = 0;
    bn_status s = bn_simulation_load_state(sim, path, info, &user, &size);
    if (s == BN_OK && size != sizeof *saved)
        s = bn_fail(BN_ERR_FORMAT, "%s: its run state has %zu bytes, this build's %zu", path, size, sizeof *saved);
    if (s == BN_OK) memcpy(saved, user, sizeof *saved);
    if (s == BN_OK && saved->ranks != bn_comm_size(c))
        s = bn_fail(BN_ERR_FORMAT, "%s: one of a set of %d rank(s)' files, found as one of %d", path, saved->ranks,
                    bn_comm_size(c));
    free(user);
    return bn_comm_agree(c, s);
}

/* The particles of `from` after those of `to`. */
static bn_status append(bn_particles *to, const bn_particles *from)
{
    const size_t n0 = to->n, m = from->n;
    if (m == 0) return BN_OK;
    if (from->type && !to->type) BN_TRY(bn_particles_ensure_types(to));
    BN_TRY(bn_particles_resize(to, n0 + m));
    for (int k = 0; k < 3; k++) {
        memcpy(to->pos[k] + n0, from->pos[k], m * sizeof(double));
        memcpy(to->vel[k] + n0, from->vel[k], m * sizeof(double));
    }
    memcpy(to->mass + n0, from->mass, m * sizeof(double));
    memcpy(to->id + n0, from->id, m * sizeof(uint64_t));
    if (to->type && from->type) memcpy(to->type + n0, from->type, m);
    return BN_OK;
}

/* One file of another rank count's set: its particles after *mine, its
 * run state into *v. The blobs are bn_simulation_save_state's
 * (core/simulation_state.c), all read: the checksum covers them. */
static bn_status read_part(const char *path, int files, bn_particles *mine, run_saved *v)
{
    bn_state_file f = {NULL, NULL, 5, {{0}}};
    static const char *const names[5] = {"Clock", "Simulation", "User", "Costs", "Cut"};
    for (int b = 0; b < 5; b++) f.blob[b] = (bn_state_blob){names[b], NULL, 0, 0};
    bn_status s = bn_state_read(path, &f);
    if (s == BN_OK && f.blob[2].size != sizeof *v)
        s = bn_fail(BN_ERR_FORMAT, "%s: its run state has %zu bytes, this build's %zu", path, f.blob[2].size,
                    sizeof *v);
    if (s == BN_OK) memcpy(v, f.blob[2].data, sizeof *v);
    if (s == BN_OK && v->ranks != files)
        s = bn_fail(BN_ERR_FORMAT, "%s: one of %d rank(s)' files, but %d of them are there", path, v->ranks, files);
    if (s == BN_OK) s = append(mine, f.p);
    bn_state_file_release(&f);
    return s;
}

/* Restart file `index` of `files` ranks' files on this run's other rank
 * count: rank r reads files r, r + ranks, ...; every rank gets rank 0's
 * run state (file 0's). */
static bn_status load_other(const char *dir, int index, int files, int split, run_saved *saved, bn_particles **out,
                            const bn_comm *c)
{
    const int rank = bn_comm_rank(c), ranks = bn_comm_size(c);
    char path[RUN_PATH_MAX];
    bn_particles *mine = NULL;
    bn_status s = bn_particles_create(&mine, 0);
    for (int j = rank; s == BN_OK && j < files; j += ranks) {
        run_saved v;
        path_of(path, sizeof path, dir, index, split ? 2 : 1, j);
        s = read_part(path, files, mine, &v);
        if (s == BN_OK && j == 0) *saved = v;
    }
    s = bn_comm_agree(c, s);
    void *got = NULL;
    size_t total = 0;
    if (s == BN_OK) s = bn_comm_gather(c, -1, saved, rank == 0 ? 1 : 0, sizeof *saved, &got, &total, NULL);
    if (s == BN_OK && total == 1) memcpy(saved, got, sizeof *saved);
    free(got);
    double n = mine ? (double)mine->n : 0;
    if (s == BN_OK) s = bn_comm_allreduce(c, &n, 1, BN_REDUCE_SUM);
    path_of(path, sizeof path, dir, index, split ? 2 : 1, 0);
    if (s == BN_OK && (size_t)n != saved->n)
        s = bn_fail(BN_ERR_FORMAT, "%s: its %d file(s) hold %.0f particles, the run has %zu", path, files, n,
                    saved->n);
    if (s == BN_OK && saved->tick != 0) /* not damaged: no file before it is tried */
        s = bn_fail(BN_ERR_ARGUMENT, "%s (t = %.9g, step %ld) was written by %d rank(s) inside a block-step cycle "
                    "(its particles' velocities are kicked to different times): it continues on %d rank(s) only, "
                    "this run has %d (mpirun -np %d banyan run --restart %s); a restart file written at a cycle's "
                    "end (a run's last one) continues on any number", path, saved->time, saved->steps, files, files,
                    ranks, files, dir);
    if (s != BN_OK) {
        bn_particles_free(mine);
        return s;
    }
    *out = mine;
    return BN_OK;
}

bn_status run_restart_load(bn_simulation *sim, const char *dir, run_saved *saved, run_restart_found *found,
                           const bn_comm *c)
{
    const int root = bn_comm_rank(c) == 0, ranks = bn_comm_size(c);
    memset(found, 0, sizeof *found);
    char path[RUN_PATH_MAX];
    /* the newest number: rank 0 sees every rank count's files, every rank
     * its own (restart files in a directory per node) */
    int newest = -1;
    for (int i = 0; i <= RUN_RESTART_MAX; i++) { /* a gap ends the numbers of a run */
        run_restart_path(path, sizeof path, dir, i, c);
        int split = 0;
        if (exists(path) || (root && files_of(dir, i, &split) > 0)) newest = i;
        else if (newest >= 0) break;
    }
    double agreed = newest;
    BN_TRY(bn_comm_allreduce(c, &agreed, 1, BN_REDUCE_MAX));
    for (int i = (int)agreed; i >= 0; i--) {
        /* this run's rank count when every rank has its file and rank 0
         * sees no more files than ranks (fewer: a directory per node) */
        run_restart_path(path, sizeof path, dir, i, c);
        int split = 0;
        double v[3] = {exists(path) ? 1 : 0, root ? files_of(dir, i, &split) : -1, root ? split : -1};
        double own = v[0];
        BN_TRY(bn_comm_allreduce(c, &own, 1, BN_REDUCE_MIN));
        BN_TRY(bn_comm_allreduce(c, v, 3, BN_REDUCE_MAX));
        const int files = (int)v[1];
        split = (int)v[2];
        if (own == 0 && files == 0) { /* no set of that number */
            if (v[0] > 0 && root)
                fprintf(stderr, "banyan run: restart file %d in %s: not every rank's file is there; trying the "
                        "restart file before it\n", i, dir);
            continue;
        }
        bn_status s;
        const int same = own > 0 && files <= ranks;
        if (same) {
            found->ranks = ranks;
            s = load_same(sim, dir, i, saved, &found->info, c);
        } else {
            found->ranks = files;
            s = load_other(dir, i, files, split, saved, &found->p, c);
            found->info = (bn_state_info){saved->time, saved->steps, files, (bn_backend)saved->backend};
        }
        if (s == BN_OK) {
            saved->index = i + 1;
            return BN_OK;
        }
        if (!damaged(s)) /* the refusal inside a cycle names its file */
            return same ? bn_fail_context(s, "--restart %s, restart file %d", dir, i) : s;
        if (root) /* the CLI's word, not the library's */
            fprintf(stderr, "banyan run: %s; trying the restart file before it\n", bn_last_error());
    }
    return bn_fail(BN_ERR_IO, "--restart %s: no restart file there loads (restart_NNNN.hdf5)", dir);
}
