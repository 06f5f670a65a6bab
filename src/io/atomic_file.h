/* Internal: output files appear whole or not at all.
 *
 * A writer creates a temporary file next to the target (same directory,
 * so the final rename is atomic on POSIX), writes it, and either commits
 * (rename over the target) or aborts (unlink). A crash or a failed write
 * never leaves a half-written file under the name the user asked for. */
#ifndef BN_ATOMIC_FILE_H
#define BN_ATOMIC_FILE_H
#include "banyan.h"

/* Create an empty, exclusive temporary file "<path>.tmp.<pid>.<k>" and
 * return its name in *tmp_path (free it through commit or abort). A path
 * that is a symbolic link to a regular file is written through: the
 * temporary file lies next to the link's target, which commit replaces. */
bn_status bn_atomic_begin(const char *path, char **tmp_path);
/* Rename tmp_path to path; on failure unlink tmp_path. Frees tmp_path. */
bn_status bn_atomic_commit(char *tmp_path, const char *path);
/* Unlink tmp_path and free it (NULL is fine). Keeps the current error
 * message: call it on the failure path. */
void bn_atomic_abort(char *tmp_path);
#endif
