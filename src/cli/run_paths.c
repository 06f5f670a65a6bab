/* Output paths of `banyan run`: joined, created, and checked before the
 * first file is written (lengths, and no output that is an input or
 * another output). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "cli/run.h"
#include "core/error.h"

bn_status run_path_join(char *out, size_t size, const char *dir, const char *name)
{
    int n = !strcmp(name, ".")                       ? snprintf(out, size, "%s", dir)
            : (name[0] == '/' || !strcmp(dir, ".")) ? snprintf(out, size, "%s", name)
                                                     : snprintf(out, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size) return bn_fail(BN_ERR_ARGUMENT, "path '%s/%s' is too long", dir, name);
    return BN_OK;
}

static bn_status make_one_dir(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return BN_OK;
        return bn_fail(BN_ERR_IO, "'%s' exists and is not a directory", path);
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return bn_fail(BN_ERR_IO, "cannot create directory '%s': %s", path, strerror(errno));
    return BN_OK;
}

bn_status run_make_dirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return bn_fail(BN_ERR_ARGUMENT, "directory name too long: '%s'", path);
    for (char *c = buf + 1; *c; c++) {
        if (*c != '/') continue;
        *c = '\0';
        BN_TRY(make_one_dir(buf));
        *c = '/';
    }
    return make_one_dir(buf);
}

bn_status run_make_parent_dirs(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return BN_OK; /* the current directory or / */
    char buf[4096];
    int n = snprintf(buf, sizeof buf, "%.*s", (int)(slash - path), path);
    if (n < 0 || (size_t)n >= sizeof buf) return bn_fail(BN_ERR_ARGUMENT, "path too long: '%s'", path);
    return run_make_dirs(buf);
}

bn_status run_check_name(const char *what, const char *path)
{
    if (strlen(path) >= RUN_PATH_MAX)
        return bn_fail(BN_ERR_PARAMETER, "%s: the path '%.60s...' is %zu characters long (at most %d)", what, path,
                       strlen(path), RUN_PATH_MAX - 1);
    for (const char *c = path; *c;) {
        size_t n = strcspn(c, "/");
        if (n > NAME_MAX)
            return bn_fail(BN_ERR_PARAMETER, "%s: a name in '%.60s...' is %zu characters long (at most %d)", what,
                           path, n, NAME_MAX);
        c += n;
        while (*c == '/') c++;
    }
    return BN_OK;
}

/* What an output name may be (cli_check_output_kind): a new name or a
 * regular file; as a run's parameter error. */
static bn_status check_output_kind(const run_named_path *f)
{
    return cli_check_output_kind(f->what, f->path) == BN_OK ? BN_OK : BN_ERR_PARAMETER;
}

/* Two files of the run (b an output): the same file, or one where the
 * other would need a directory. */
static bn_status check_pair(const run_named_path *a, const cli_file_id *ia, const run_named_path *b,
                            const cli_file_id *ib)
{
    if (cli_file_same(ia, ib))
        return bn_fail(BN_ERR_PARAMETER, "%s '%s' is the same file as %s '%s': refusing to overwrite it", b->what,
                       b->path, a->what, a->path);
    if (cli_file_holds(ia, ib) || cli_file_holds(ib, ia)) {
        const run_named_path *dir = cli_file_holds(ia, ib) ? a : b, *file = dir == a ? b : a;
        return bn_fail(BN_ERR_PARAMETER, "%s '%s' would have to be a directory holding %s '%s'", dir->what, dir->path,
                       file->what, file->path);
    }
    return BN_OK;
}

/* Snapshot k's file as written: BASENAME_kkkk.hdf5, or with parts > 0
 * its file r of parts (BASENAME_kkkk.r.hdf5). */
static bn_status snapshot_name(const char *snapdir, const char *basename, size_t k, int parts, int r, char *out,
                               size_t cap)
{
    char name[BN_PARAM_STRLEN + 32], whole[RUN_PATH_MAX];
    snprintf(name, sizeof name, "%s_%04zu.hdf5", basename, k);
    if (parts == 0) return run_path_join(out, cap, snapdir, name);
    BN_TRY(run_path_join(whole, sizeof whole, snapdir, name));
    return bn_snapshot_part_path(whole, r, out, cap);
}

bn_status run_check_distinct(const run_named_path *files, int n, const char *snapdir, const char *basename,
                             size_t n_snapshots, int parts)
{
    cli_file_id *ids = bn_alloc_array((size_t)n + 1, sizeof *ids, "output names");
    if (!ids) return BN_ERR_NOMEM;
    bn_status s = BN_OK;
    for (int i = 0; s == BN_OK && i < n; i++) {
        cli_file_identify(files[i].path, &ids[i]);
        if (files[i].output && files[i].path[0]) s = check_output_kind(&files[i]);
    }
    for (int i = 0; s == BN_OK && i < n; i++)
        for (int j = i + 1; s == BN_OK && j < n; j++)
            if (files[i].path[0] && files[j].path[0] && files[j].output) s = check_pair(&files[i], &ids[i], &files[j], &ids[j]);
    /* snapshots (each of their files) differ from each other by their
     * numbers: each against the rest */
    run_named_path snap = {"snapshot", 1, ""};
    for (size_t k = 0; s == BN_OK && k < n_snapshots; k++)
        for (int r = 0; s == BN_OK && r < (parts > 0 ? parts : 1); r++) {
            if (snapshot_name(snapdir, basename, k, parts, r, snap.path, sizeof snap.path) != BN_OK) break;
            cli_file_identify(snap.path, &ids[n]);
            s = check_output_kind(&snap);
            for (int i = 0; s == BN_OK && i < n; i++)
                if (files[i].path[0]) s = check_pair(&files[i], &ids[i], &snap, &ids[n]);
        }
    free(ids);
    return s;
}
