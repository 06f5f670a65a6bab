/* Internal: the HDF5 plumbing of the snapshot reader and writer.
 *
 * HDF5 prints its own error stack to stderr by default; the library must
 * not print, so every entry point calls bn_h5_quiet() and failures become
 * bn_status messages that name the file and dataset and end with HDF5's
 * own innermost reason (bn_h5_fail). */
#ifndef BN_SNAPSHOT_H5_H
#define BN_SNAPSHOT_H5_H
#include <hdf5.h>
#include "banyan.h"
#include "core/error.h"

/* GADGET-2/4 write 6 particle types, SWIFT 7; we look for up to 16. */
#define BN_H5_MAX_TYPES 16
/* Rows per block when converting between SoA arrays and N x 3 datasets:
 * bounds the scratch memory whatever N is. */
#define BN_H5_BLOCK_ROWS 65536

/* Turn off HDF5's automatic error printing (for this library's calls). */
void bn_h5_quiet(void);
/* Like bn_fail, appending HDF5's innermost error description, if any,
 * and clearing HDF5's error stack. */
bn_status bn_h5_fail(bn_status s, const char *fmt, ...) BN_PRINTF(2, 3);

/* ---- attributes: writing (scalars when n == 0) ---- */
bn_status bn_h5_attr_write(hid_t obj, const char *name, hid_t mem_type, hid_t file_type, size_t n,
                           const void *data);
bn_status bn_h5_attr_write_double(hid_t obj, const char *name, double v);
bn_status bn_h5_attr_write_int(hid_t obj, const char *name, int v);
/* Fixed-length, NUL-terminated ASCII, as GADGET-4 writes its strings
 * (h5py reads them as bytes, which yt's format checks expect). */
bn_status bn_h5_attr_write_string(hid_t obj, const char *name, const char *s);

/* ---- attributes: reading ---- */
/* *present: does obj have attribute `name`? Fails (naming where/name)
 * when HDF5 cannot tell: a damaged file is not an absent attribute. */
bn_status bn_h5_attr_present(hid_t obj, const char *where, const char *name, int *present);
/* Read a numeric attribute (any integer or float type) as doubles: up to
 * max values into out, the count in *n. `where` names obj in messages. */
bn_status bn_h5_attr_read_doubles(hid_t obj, const char *where, const char *name, double *out, size_t max,
                                  size_t *n);
/* A numeric attribute with exactly one value. */
bn_status bn_h5_attr_read_double(hid_t obj, const char *where, const char *name, double *out);
/* A string attribute (fixed or variable length) into buf (truncated). */
bn_status bn_h5_attr_read_string(hid_t obj, const char *where, const char *name, char *buf, size_t len);

/* ---- groups and datasets ---- */
/* *present: does loc have a link `name`? Fails when HDF5 cannot tell. */
bn_status bn_h5_link_present(hid_t loc, const char *where, const char *name, int *present);
/* name in loc is a hard or soft link: external and user-defined links
 * (to another file, a FIFO, a device) are refused, naming where/name. */
bn_status bn_h5_check_local(hid_t loc, const char *where, const char *name);
/* Create group `name` in loc; *g is -1 on failure (close it when >= 0). */
bn_status bn_h5_group_create(hid_t loc, const char *name, hid_t *g);
/* Write ncol arrays of n doubles as an n x ncol float64 dataset
 * (ncol == 1: a 1-D dataset of n). */
bn_status bn_h5_write_columns(hid_t group, const char *name, size_t n, int ncol, const double *const *cols);
bn_status bn_h5_write_ids(hid_t group, const char *name, size_t n, const uint64_t *ids);

/* Open dataset `name` of `group`: present, a local link, its data in the
 * file (no external storage or virtual mapping); *dset -1 on failure. */
bn_status bn_h5_open_local(hid_t group, const char *where, const char *name, hid_t *dset);
/* The same for a link the caller has found present (and named missing in
 * its own words when it was not). */
bn_status bn_h5_open_present(hid_t group, const char *where, const char *name, hid_t *dset);
/* "(100, 2)", "(100,)": numpy's way of writing a shape, for messages. */
void bn_h5_shape_text(int rank, const hsize_t *dims, char *buf, size_t len);

/* ---- whole files ---- */
/* Write `path` whole or not at all: fill(tmp, ctx) writes a temporary
 * file next to it (HDF5 quiet), which replaces path only when fill
 * succeeds; on failure it is removed and the message says "writing path". */
bn_status bn_h5_write_atomic(const char *path, bn_status (*fill)(const char *tmp, void *ctx), void *ctx);
/* Open dataset `name` of `group` and check its shape: n x ncol (ncol 3)
 * or n (ncol 1). *rows gets n. `where` is the group path ("/PartType1"). */
bn_status bn_h5_open_dataset(hid_t group, const char *where, const char *name, int ncol, hid_t *dset,
                             size_t *rows);
/* Read an opened dataset of rows x ncol numbers into ncol double arrays,
 * converting from any integer or float type; reject NaN and Inf naming
 * the dataset path and row. */
bn_status bn_h5_read_columns(hid_t dset, const char *path, size_t rows, int ncol, double *const *cols);
/* Read integer ids (8 to 64 bits, signed or unsigned); reject negatives. */
bn_status bn_h5_read_ids(hid_t dset, const char *path, size_t rows, uint64_t *ids);
#endif
