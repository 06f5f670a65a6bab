/* Internal: what every reader asks of a path before opening it. */
#ifndef BN_CORE_FILES_H
#define BN_CORE_FILES_H
#include "banyan.h"

/* path exists and is a regular file: a FIFO would block the reader for
 * ever, a directory or a device is no input. `name` is how messages call
 * it ("x.hdf5", "parameter file 'x.yml'"); *st gets its stat (NULL: not
 * wanted). */
struct stat;
bn_status bn_check_regular_file(const char *path, const char *name, struct stat *st);
#endif
