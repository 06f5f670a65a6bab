/* `banyan run`'s restart files: written at a wall-clock interval, at the
 * end and on SIGTERM/SIGUSR1; the newest one that loads continues a run
 * (--restart). Each rank writes its own file (bn_simulation_save_state);
 * the CLI's own state rides along as the file's user bytes. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/run.h"
#include "core/error.h"
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

void run_restart_path(char *out, size_t size, const char *dir, int index, const bn_comm *c)
{
    if (bn_comm_size(c) > 1) snprintf(out, size, "%s/restart_%04d.%d.hdf5", dir, index, bn_comm_rank(c));
    else snprintf(out, size, "%s/restart_%04d.hdf5", dir, index);
}

bn_status run_restart_write(bn_simulation *sim, const char *dir, run_saved *saved, int keep, const bn_comm *c)
{
    char path[RUN_PATH_MAX];
    BN_TRY(bn_comm_agree(c, bn_comm_rank(c) == 0 ? run_make_dirs(dir) : BN_OK));
    run_restart_path(path, sizeof path, dir, saved->index, c);
    BN_TRY(bn_comm_agree(c, bn_simulation_save_state(sim, path, saved, sizeof *saved)));
    if (saved->index - keep >= 0) { /* only once every rank has its new one */
        run_restart_path(path, sizeof path, dir, saved->index - keep, c);
        unlink(path);
    }
    saved->index++;
    return BN_OK;
}

/* Restart file `index`, if every rank's loads; *found 0 when none of
 * that number exists on any rank. */
static bn_status try_load(bn_simulation *sim, const char *dir, int index, run_saved *saved, bn_state_info *info,
                          const bn_comm *c, int *found)
{
    char path[RUN_PATH_MAX];
    run_restart_path(path, sizeof path, dir, index, c);
    double exists = access(path, F_OK) == 0;
    BN_TRY(bn_comm_allreduce(c, &exists, 1, BN_REDUCE_MAX));
    *found = exists > 0;
    if (!*found) return BN_OK;
    void *user = NULL;
    size_t size = 0;
    bn_status s = bn_simulation_load_state(sim, path, info, &user, &size);
    if (s == BN_OK && size != sizeof *saved)
        s = bn_fail(BN_ERR_FORMAT, "%s: its run state has %zu bytes, this build's %zu", path, size, sizeof *saved);
    if (s == BN_OK) memcpy(saved, user, sizeof *saved);
    free(user);
    return bn_comm_agree(c, s);
}

bn_status run_restart_load(bn_simulation *sim, const char *dir, run_saved *saved, bn_state_info *info,
                           const bn_comm *c)
{
    int newest = -1;
    char path[RUN_PATH_MAX];
    for (int i = 0; i <= RUN_RESTART_MAX; i++) { /* a gap ends the numbers of a run */
        run_restart_path(path, sizeof path, dir, i, c);
        if (access(path, F_OK) == 0) newest = i;
        else if (newest >= 0) break;
    }
    double agreed = newest;
    BN_TRY(bn_comm_allreduce(c, &agreed, 1, BN_REDUCE_MAX));
    for (int i = (int)agreed; i >= 0; i--) {
        int found = 0;
        const bn_status s = try_load(sim, dir, i, saved, info, c, &found);
        if (s == BN_OK && found) {
            saved->index = i + 1;
            return BN_OK;
        }
        if (s != BN_OK && bn_comm_rank(c) == 0) /* the CLI's word, not the library's */
            fprintf(stderr, "banyan run: %s; trying the restart file before it\n", bn_last_error());
        if (s != BN_OK || !found) continue;
    }
    return bn_fail(BN_ERR_IO, "--restart %s: no restart file there loads (restart_NNNN.hdf5)", dir);
}
