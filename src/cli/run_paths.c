/* Output paths of `banyan run`. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/run.h"
#include "core/error.h"

bn_status run_path_join(char *out, size_t size, const char *dir, const char *name)
{
    int n = (name[0] == '/' || !strcmp(dir, ".")) ? snprintf(out, size, "%s", name)
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
