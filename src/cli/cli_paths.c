/* Is an output the same file as an input or another output? Compared by
 * resolved path (symbolic links, "..", "./" and the working directory
 * taken into account) and, for files that exist, by device and inode
 * (hard links), never by the strings as typed. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "core/error.h"

/* Append component `c` (length n) to the absolute path `out`, resolving
 * "." and ".." by the text (used only below the deepest existing
 * directory, where no symbolic link can be). */
static void append_component(char *out, size_t size, const char *c, size_t n)
{
    if (n == 0 || (n == 1 && c[0] == '.')) return;
    if (n == 2 && c[0] == '.' && c[1] == '.') {
        char *slash = strrchr(out, '/');
        if (slash) slash[slash == out ? 1 : 0] = '\0';
        return;
    }
    size_t len = strlen(out);
    if (len + n + 2 > size) return;
    if (len == 0 || out[len - 1] != '/') out[len++] = '/';
    memcpy(out + len, c, n);
    out[len + n] = '\0';
}

/* The deepest existing ancestor of `abs` resolved by realpath(), and the
 * rest appended by the text. */
static int resolve(const char *abs, char *out, size_t size)
{
    char head[PATH_MAX];
    if (snprintf(head, sizeof head, "%s", abs) >= (int)sizeof head) return 0;
    size_t cut = strlen(head);
    for (;;) {
        char real[PATH_MAX];
        if (realpath(head[0] ? head : "/", real)) {
            if (snprintf(out, size, "%s", real) >= (int)size) return 0;
            break;
        }
        char *slash = strrchr(head, '/');
        if (!slash) return 0;
        *slash = '\0';
        cut = (size_t)(slash - head);
    }
    for (const char *c = abs + cut; *c;) {
        while (*c == '/') c++;
        size_t n = strcspn(c, "/");
        append_component(out, size, c, n);
        c += n;
    }
    return 1;
}

int cli_path_resolve(const char *path, char *out, size_t size)
{
    char abs[PATH_MAX];
    if (!path || !path[0]) return 0;
    if (path[0] == '/') {
        if (snprintf(abs, sizeof abs, "%s", path) >= (int)sizeof abs) return 0;
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return 0;
        if (snprintf(abs, sizeof abs, "%s/%s", cwd, path) >= (int)sizeof abs) return 0;
    }
    return resolve(abs, out, size);
}

void cli_file_identify(const char *path, cli_file_id *id)
{
    if (!cli_path_resolve(path, id->real, sizeof id->real)) snprintf(id->real, sizeof id->real, "%s", path);
    id->exists = stat(path, &id->st) == 0;
}

int cli_file_same(const cli_file_id *a, const cli_file_id *b)
{
    if (a->exists && b->exists) return a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino;
    return !strcmp(a->real, b->real);
}

int cli_file_holds(const cli_file_id *a, const cli_file_id *b)
{
    const size_t n = strlen(a->real);
    return n > 1 && !strncmp(a->real, b->real, n) && b->real[n] == '/';
}

int cli_same_file(const char *a, const char *b)
{
    cli_file_id ia, ib;
    cli_file_identify(a, &ia);
    cli_file_identify(b, &ib);
    return cli_file_same(&ia, &ib);
}

bn_status cli_check_distinct(const char *what, const char *path, const char *other_what, const char *other)
{
    if (!path || !other || !cli_same_file(path, other)) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "%s '%s' is the same file as %s '%s': refusing to overwrite it", what, path,
                   other_what, other);
}

/* Can a file be created in `dir`? Probed by creating and removing one
 * (access() answers yes to root for /proc, where creating fails). */
static bn_status probe_write(const char *what, const char *dir)
{
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof probe, "%s/.banyan-probe-XXXXXX", dir) >= (int)sizeof probe)
        return bn_fail(BN_ERR_ARGUMENT, "%s: the directory name '%.60s...' is too long", what, dir);
    const int fd = mkstemp(probe);
    if (fd < 0) return bn_fail(BN_ERR_IO, "%s: cannot write in directory '%s': %s", what, dir, strerror(errno));
    close(fd);
    unlink(probe);
    return BN_OK;
}

bn_status cli_check_dir_writable(const char *what, const char *dir, int may_create)
{
    char head[PATH_MAX];
    /* resolved first: "new/../file" walks up through a directory that
     * does not exist yet, which stat() cannot */
    if (!cli_path_resolve(dir[0] ? dir : ".", head, sizeof head))
        return bn_fail(BN_ERR_ARGUMENT, "%s: cannot resolve the directory name '%.60s'", what, dir);
    for (;;) {
        struct stat st;
        if (stat(head, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                return bn_fail(BN_ERR_IO, "%s: '%s' exists and is not a directory", what, head);
            break;
        }
        if (errno != ENOENT && errno != ENOTDIR)
            return bn_fail(BN_ERR_IO, "%s: cannot look at '%s': %s", what, head, strerror(errno));
        if (!may_create) return bn_fail(BN_ERR_IO, "%s: directory '%s' does not exist", what, head);
        char *slash = strrchr(head, '/');
        if (!slash) snprintf(head, sizeof head, ".");
        else if (slash == head) head[1] = '\0';
        else *slash = '\0';
    }
    return probe_write(what, head);
}

bn_status cli_check_output_dir(const char *what, const char *path, int may_create)
{
    char dir[PATH_MAX], label[PATH_MAX + 64];
    snprintf(label, sizeof label, "%s '%s'", what, path);
    what = label;
    const char *slash = strrchr(path, '/');
    if (!slash) return probe_write(what, ".");
    const int n = slash == path ? 1 : (int)(slash - path);
    if (snprintf(dir, sizeof dir, "%.*s", n, path) >= (int)sizeof dir)
        return bn_fail(BN_ERR_ARGUMENT, "%s: the path '%.60s...' is too long", what, path);
    return cli_check_dir_writable(what, dir, may_create);
}
