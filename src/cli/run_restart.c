/* `banyan run`'s restart files: written at a wall-clock interval, at the
 * end and on SIGTERM/SIGUSR1; the newest one that loads continues a run
 * (--restart). Each rank writes its own file (bn_simulation_save_state);
 * the CLI's own state rides along as the file's user bytes. The rank
 * count recorded in a set's file 0 decides how it loads: written by this
 * run's count, each rank loads its own (bit for bit); by another, rank r
 * reads files r, r + ranks, ... (bn_simulation_load_state_set) and the
 * run cuts its domains anew at the next synchronised time (not bit for
 * bit). */
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

/* The run state of a loaded restart file (the CLI's user bytes). */
static bn_status take_saved(const char *path, void *user, size_t size, run_saved *saved)
{
    bn_status s = BN_OK;
    if (size != sizeof *saved)
        s = bn_fail(BN_ERR_FORMAT, "%s: its run state has %zu bytes, this build's %zu", path, size, sizeof *saved);
    else
        memcpy(saved, user, sizeof *saved);
    free(user);
    return s;
}

/* Restart file `index`, written by this run's rank count, into sim. */
static bn_status load_same(bn_simulation *sim, const char *dir, int index, run_saved *saved, bn_state_info *info,
                           const bn_comm *c)
{
    char path[RUN_PATH_MAX];
    run_restart_path(path, sizeof path, dir, index, c);
    int ranks = 0; /* a file of another set beside this rank's others */
    bn_status s = bn_simulation_state_ranks(path, &ranks);
    if (s == BN_OK && ranks != bn_comm_size(c))
        s = bn_fail(BN_ERR_FORMAT, "%s: one of a set of %d rank(s)' files, found among %d", path, ranks,
                    bn_comm_size(c));
    s = bn_comm_agree(c, s);
    void *user = NULL;
    size_t size = 0;
    if (s == BN_OK) s = bn_simulation_load_state(sim, path, info, &user, &size);
    if (s == BN_OK) s = take_saved(path, user, size, saved);
    return bn_comm_agree(c, s);
}

/* Restart file `index` of `files` ranks' files on this run's other rank
 * count (bn_simulation_load_state_set: rank r reads files r, r + ranks,
 * ...; not bit for bit). */
static bn_status load_other(bn_simulation *sim, const char *dir, int index, int files, run_saved *saved,
                            bn_state_info *info, const bn_comm *c)
{
    char(*paths)[RUN_PATH_MAX] = malloc((size_t)files * sizeof *paths);
    const char **names = malloc((size_t)files * sizeof *names);
    bn_status s = paths && names ? BN_OK : bn_fail(BN_ERR_NOMEM, "the names of %d restart files", files);
    for (int j = 0; s == BN_OK && j < files; j++) {
        path_of(paths[j], sizeof paths[j], dir, index, files, j);
        names[j] = paths[j];
    }
    s = bn_comm_agree(c, s);
    void *user = NULL;
    size_t size = 0;
    if (s == BN_OK) s = bn_simulation_load_state_set(sim, names, files, info, &user, &size);
    if (s == BN_OK) s = bn_comm_agree(c, take_saved(names[0], user, size, saved));
    const bn_particles *p = NULL;
    if (s == BN_OK) s = bn_simulation_particles(sim, &p); /* the host's: no copy */
    double n = p ? (double)p->n : 0;
    if (s == BN_OK) s = bn_comm_allreduce(c, &n, 1, BN_REDUCE_SUM);
    if (s == BN_OK && (size_t)n != saved->n)
        s = bn_fail(BN_ERR_FORMAT, "%s: its %d file(s) hold %.0f particles, the run has %zu", names[0], files, n,
                    saved->n);
    free(paths);
    free(names);
    return s;
}

/* Rank 0's number on every rank. */
static bn_status share(const bn_comm *c, int *v)
{
    double x = bn_comm_rank(c) == 0 ? *v : -1e300;
    BN_TRY(bn_comm_allreduce(c, &x, 1, BN_REDUCE_MAX));
    *v = (int)x;
    return BN_OK;
}

/* The rank count recorded in file 0 of restart file `index` (rank 0
 * reads it, this run's form of name first; every rank learns it): 0
 * when there is no file 0, -1 when it does not say (damaged: rank 0
 * holds the message). */
static bn_status recorded_ranks(const char *dir, int index, const bn_comm *c, int *out)
{
    int r = 0;
    if (bn_comm_rank(c) == 0) {
        const int forms[2] = {bn_comm_size(c) > 1 ? 2 : 1, bn_comm_size(c) > 1 ? 1 : 2};
        char path[RUN_PATH_MAX];
        for (int k = 0; k < 2 && r == 0; k++) {
            path_of(path, sizeof path, dir, index, forms[k], 0);
            if (!exists(path)) continue;
            if (bn_simulation_state_ranks(path, &r) != BN_OK) {
                r = -1;
            } else if ((r > 1) != (forms[k] > 1)) { /* restart_NNNN.hdf5 is one rank's, .0.hdf5 several's */
                bn_fail(BN_ERR_FORMAT, "%s: written by %d rank(s), named as %s", path, r,
                        r > 1 ? "one rank's" : "one of several ranks' files");
                r = -1;
            }
        }
    }
    BN_TRY(share(c, &r));
    *out = r;
    return BN_OK;
}

/* Whether every file of a set of `files` lies in dir: this run's own
 * (each rank its file: a directory per node works) or another count's
 * (rank 0 looks at all of them). */
static bn_status set_complete(const char *dir, int index, int files, const bn_comm *c, int *complete)
{
    char path[RUN_PATH_MAX];
    double own = 1;
    if (files == bn_comm_size(c)) {
        run_restart_path(path, sizeof path, dir, index, c);
        own = exists(path);
    } else if (bn_comm_rank(c) == 0) {
        for (int j = 0; j < files && own > 0; j++) {
            path_of(path, sizeof path, dir, index, files, j);
            own = exists(path);
        }
    }
    BN_TRY(bn_comm_allreduce(c, &own, 1, BN_REDUCE_MIN));
    *complete = own > 0;
    return BN_OK;
}

/* The newest number of a restart file in dir (-1: none): rank 0 sees
 * every rank count's file 0, every rank its own (restart files in a
 * directory per node). A gap ends the numbers of a run. */
static bn_status newest_index(const char *dir, const bn_comm *c, int *newest)
{
    char path[RUN_PATH_MAX];
    int i_max = -1;
    for (int i = 0; i <= RUN_RESTART_MAX; i++) {
        run_restart_path(path, sizeof path, dir, i, c);
        int found = exists(path);
        for (int form = 1; !found && form <= 2 && bn_comm_rank(c) == 0; form++) {
            path_of(path, sizeof path, dir, i, form, 0);
            found = exists(path);
        }
        if (found) i_max = i;
        else if (i_max >= 0) break;
    }
    double agreed = i_max;
    BN_TRY(bn_comm_allreduce(c, &agreed, 1, BN_REDUCE_MAX));
    *newest = (int)agreed;
    return BN_OK;
}

/* Restart file `index` into sim, as its recorded rank count says. */
static bn_status load_index(bn_simulation *sim, const char *dir, int index, run_saved *saved, run_restart_found *found,
                            const bn_comm *c)
{
    int files = 0, complete = 0;
    BN_TRY(recorded_ranks(dir, index, c, &files));
    if (files == 0)
        return bn_fail(BN_ERR_IO, "restart file %d in %s: no file of rank 0 (restart_%04d.hdf5 or .0.hdf5)", index,
                       dir, index);
    if (files < 0) { /* rank 0's message (bn_fail formats into the buffer it is read from: copied first) */
        char why[1024];
        snprintf(why, sizeof why, "%s", bn_comm_rank(c) == 0 ? bn_last_error() : "its file 0 is damaged");
        return bn_fail(BN_ERR_FORMAT, "%s", why);
    }
    BN_TRY(set_complete(dir, index, files, c, &complete));
    if (!complete)
        return bn_fail(BN_ERR_IO, "restart file %d in %s: written by %d rank(s), not every rank's file is there",
                       index, dir, files);
    found->ranks = files;
    if (files == bn_comm_size(c)) return load_same(sim, dir, index, saved, &found->info, c);
    return load_other(sim, dir, index, files, saved, &found->info, c);
}

/* The restart files refused: the numbers with a file 0, those of them
 * of an older format than this build's, the newest of these (rank 0's
 * name) and its format. */
typedef struct refused_files {
    int present, old, format;
    char newest[RUN_PATH_MAX];
} refused_files;

/* Refused restart file `index` noted: its file 0's format, which rank 0
 * reads (every rank learns it; -1: no file 0, a number not kept). */
static bn_status note_refused(const char *dir, int index, const bn_comm *c, refused_files *r)
{
    char path[RUN_PATH_MAX] = "";
    int format = bn_comm_rank(c) == 0 ? -1 : 0;
    for (int form = 1; bn_comm_rank(c) == 0 && form <= 2 && format < 0; form++) {
        path_of(path, sizeof path, dir, index, form, 0);
        if (exists(path) && bn_state_format(path, &format) != BN_OK) format = 0;
    }
    BN_TRY(share(c, &format));
    if (format < 0) return BN_OK;
    r->present++;
    if (format < 1 || format >= BN_STATE_FORMAT) return BN_OK;
    if (r->old++ == 0) {
        r->format = format;
        snprintf(r->newest, sizeof r->newest, "%s", path);
    }
    return BN_OK;
}

/* No restart file loads: when each is of an older format, what to do
 * instead. */
static bn_status none_loads(const char *dir, const refused_files *r)
{
    if (r->present == 0 || r->old < r->present)
        return bn_fail(BN_ERR_IO, "--restart %s: no restart file there loads (restart_NNNN.hdf5)", dir);
    char others[64] = "";
    if (r->present == 2) snprintf(others, sizeof others, " (so is the one before it)");
    if (r->present > 2) snprintf(others, sizeof others, " (so are the %d before it)", r->present - 1);
    const char *them = r->present > 1 ? "them" : "it";
    return bn_fail(BN_ERR_FORMAT, "--restart %s: no restart file there loads: %s is of restart format %d, older than "
                   "this build's %d%s; this build cannot continue %s: start a new run from one of the run's snapshots "
                   "(InitialConditions:file), or continue with the banyan that wrote %s", dir, r->newest, r->format,
                   BN_STATE_FORMAT, others, them, them);
}

bn_status run_restart_load(bn_simulation *sim, const char *dir, run_saved *saved, run_restart_found *found,
                           const bn_comm *c)
{
    memset(found, 0, sizeof *found);
    int newest = -1;
    refused_files refused;
    memset(&refused, 0, sizeof refused);
    BN_TRY(newest_index(dir, c, &newest));
    for (int i = newest; i >= 0; i--) {
        const bn_status s = load_index(sim, dir, i, saved, found, c);
        if (s == BN_OK) {
            saved->index = i + 1;
            return BN_OK;
        }
        if (!damaged(s)) return bn_fail_context(s, "--restart %s, restart file %d", dir, i);
        if (bn_comm_rank(c) == 0) /* the CLI's word, not the library's */
            fprintf(stderr, "banyan run: %s; trying the restart file before it\n", bn_last_error());
        BN_TRY(note_refused(dir, i, c, &refused));
    }
    return none_loads(dir, &refused);
}
