/* Regular files only: see files.h. */
#include "core/files.h"
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include "core/error.h"

bn_status bn_check_regular_file(const char *path, const char *name, struct stat *out)
{
    struct stat st;
    if (stat(path, &st) != 0) return bn_fail(BN_ERR_IO, "cannot open %s: %s", name, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return bn_fail(BN_ERR_IO, "%s is not a regular file (%s)", name,
                       S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket");
    if (out) *out = st;
    return BN_OK;
}
