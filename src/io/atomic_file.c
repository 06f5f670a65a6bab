/* Temporary file + rename: see atomic_file.h. */
#include "io/atomic_file.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/error.h"

/* Distinct names for concurrent writers in one process (threads); the
 * pid separates processes. */
static atomic_uint tmp_counter;

/* The file a write of `path` replaces: path itself, or, when path is a
 * symbolic link to a regular file, that file (a rename onto the link
 * would replace the link instead of writing through it). */
static const char *write_target(const char *path, char *buf)
{
    struct stat ls, st;
    if (lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode) && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
        realpath(path, buf))
        return buf;
    return path;
}

bn_status bn_atomic_begin(const char *path, char **tmp_path)
{
    *tmp_path = NULL;
    if (!path || !path[0]) return bn_fail(BN_ERR_ARGUMENT, "output path is empty");
    char real[PATH_MAX];
    path = write_target(path, real);
    size_t len = strlen(path) + 64;
    char *tmp = bn_alloc(len, "temporary file name");
    if (!tmp) return BN_ERR_NOMEM;
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned k = atomic_fetch_add(&tmp_counter, 1u);
        snprintf(tmp, len, "%s.tmp.%ld.%u", path, (long)getpid(), k);
        /* 0666 and the user's umask: the renamed file gets the usual mode */
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd >= 0) {
            close(fd);
            *tmp_path = tmp;
            return BN_OK;
        }
        if (errno != EEXIST) {
            bn_status s = bn_fail(BN_ERR_IO, "cannot write %s: cannot create its temporary file %s: %s", path,
                                  tmp, strerror(errno));
            free(tmp);
            return s;
        }
    }
    free(tmp);
    return bn_fail(BN_ERR_IO, "cannot find a free temporary name next to %s", path);
}

bn_status bn_atomic_commit(char *tmp_path, const char *path)
{
    bn_status s = BN_OK;
    char real[PATH_MAX];
    if (rename(tmp_path, write_target(path, real)) != 0) {
        s = bn_fail(BN_ERR_IO, "cannot write %s: renaming %s to it failed: %s", path, tmp_path, strerror(errno));
        unlink(tmp_path);
    }
    free(tmp_path);
    return s;
}

void bn_atomic_abort(char *tmp_path)
{
    if (!tmp_path) return;
    unlink(tmp_path);
    free(tmp_path);
}
