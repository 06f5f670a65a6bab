/* HDF5 plumbing for snapshots: quiet errors, attributes, column datasets. */
#include "io/snapshot_h5.h"
#include "io/atomic_file.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bn_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* Walking downward ends at the innermost (most specific) record. */
static herr_t keep_innermost(unsigned n, const H5E_error2_t *err, void *data)
{
    (void)n;
    if (err->desc && err->desc[0]) snprintf((char *)data, 256, "%s", err->desc);
    return 0;
}

bn_status bn_h5_fail(bn_status s, const char *fmt, ...)
{
    char msg[768], reason[256] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_innermost, reason);
    H5Eclear2(H5E_DEFAULT);
    if (reason[0]) return bn_fail(s, "%s (HDF5: %s)", msg, reason);
    return bn_fail(s, "%s", msg);
}

/* ------------------------------------------------------------------ */
/* Attributes                                                          */
/* ------------------------------------------------------------------ */
bn_status bn_h5_attr_write(hid_t obj, const char *name, hid_t mem_type, hid_t file_type, size_t n,
                           const void *data)
{
    hsize_t dims[1] = {n};
    hid_t space = n ? H5Screate_simple(1, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = space >= 0 ? H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT) : -1;
    herr_t w = a >= 0 ? H5Awrite(a, mem_type, data) : -1;
    if (a >= 0) H5Aclose(a);
    if (space >= 0) H5Sclose(space);
    if (w < 0) return bn_h5_fail(BN_ERR_IO, "cannot write attribute %s", name);
    return BN_OK;
}

bn_status bn_h5_attr_write_double(hid_t obj, const char *name, double v)
{
    return bn_h5_attr_write(obj, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, 0, &v);
}

bn_status bn_h5_attr_write_int(hid_t obj, const char *name, int v)
{
    return bn_h5_attr_write(obj, name, H5T_NATIVE_INT, H5T_STD_I32LE, 0, &v);
}

bn_status bn_h5_attr_write_string(hid_t obj, const char *name, const char *s)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0 || H5Tset_size(t, strlen(s) + 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) {
        if (t >= 0) H5Tclose(t);
        return bn_h5_fail(BN_ERR_IO, "cannot make a string type for attribute %s", name);
    }
    bn_status st = bn_h5_attr_write(obj, name, t, t, 0, s);
    H5Tclose(t);
    return st;
}

/* H5Aexists fails (< 0) on a damaged attribute header (a dataspace that
 * claims 2^40 values): that is an error, not an absent attribute. */
bn_status bn_h5_attr_present(hid_t obj, const char *where, const char *name, int *present)
{
    const htri_t e = H5Aexists(obj, name);
    *present = e > 0;
    if (e < 0) return bn_h5_fail(BN_ERR_FORMAT, "%s: cannot read attribute %s (damaged?)", where, name);
    return BN_OK;
}

bn_status bn_h5_attr_read_doubles(hid_t obj, const char *where, const char *name, double *out, size_t max,
                                  size_t *n)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return bn_h5_fail(BN_ERR_FORMAT, "%s: missing attribute %s", where, name);
    hid_t t = H5Aget_type(a), space = H5Aget_space(a);
    H5T_class_t cls = H5Tget_class(t);
    hssize_t np = H5Sget_simple_extent_npoints(space);
    bn_status s = BN_OK;
    double *buf = NULL;
    if (cls != H5T_INTEGER && cls != H5T_FLOAT)
        s = bn_fail(BN_ERR_FORMAT, "%s: attribute %s is not numeric", where, name);
    else if (np < 1)
        s = bn_fail(BN_ERR_FORMAT, "%s: attribute %s is empty", where, name);
    else if (!(buf = bn_alloc_array((size_t)np, sizeof *buf, name)))
        s = BN_ERR_NOMEM;
    else if (H5Aread(a, H5T_NATIVE_DOUBLE, buf) < 0)
        s = bn_h5_fail(BN_ERR_FORMAT, "%s: cannot read attribute %s", where, name);
    if (s == BN_OK) {
        size_t k = (size_t)np < max ? (size_t)np : max;
        memcpy(out, buf, k * sizeof *buf);
        *n = (size_t)np;
    }
    free(buf);
    H5Sclose(space);
    H5Tclose(t);
    H5Aclose(a);
    return s;
}

bn_status bn_h5_attr_read_double(hid_t obj, const char *where, const char *name, double *out)
{
    size_t n = 0;
    BN_TRY(bn_h5_attr_read_doubles(obj, where, name, out, 1, &n));
    if (n != 1) return bn_fail(BN_ERR_FORMAT, "%s: attribute %s has %zu values, expected 1", where, name, n);
    return BN_OK;
}

static bn_status read_string_value(hid_t a, hid_t ftype, char *buf, size_t len)
{
    if (H5Tis_variable_str(ftype) > 0) {
        /* the memory type takes the file's character set: HDF5 does not
         * convert between ASCII and UTF-8 (h5py writes UTF-8 by default) */
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ftype));
        char *v = NULL;
        herr_t r = H5Aread(a, mt, &v);
        H5Tclose(mt);
        if (r < 0) return BN_ERR_FORMAT;
        snprintf(buf, len, "%s", v ? v : "");
        H5free_memory(v);
        return BN_OK;
    }
    size_t sz = H5Tget_size(ftype);
    char *tmp = bn_alloc(sz + 1, "string attribute");
    if (!tmp) return BN_ERR_NOMEM;
    hid_t mt = H5Tcopy(ftype);
    herr_t r = H5Aread(a, mt, tmp);
    H5Tclose(mt);
    tmp[sz] = '\0';
    /* Fortran writers pad with spaces (H5T_STR_SPACEPAD) */
    if (H5Tget_strpad(ftype) == H5T_STR_SPACEPAD)
        for (size_t k = strlen(tmp); k > 0 && tmp[k - 1] == ' '; k--) tmp[k - 1] = '\0';
    if (r >= 0) snprintf(buf, len, "%s", tmp);
    free(tmp);
    return r < 0 ? BN_ERR_FORMAT : BN_OK;
}

bn_status bn_h5_attr_read_string(hid_t obj, const char *where, const char *name, char *buf, size_t len)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return bn_h5_fail(BN_ERR_FORMAT, "%s: missing attribute %s", where, name);
    hid_t t = H5Aget_type(a), space = H5Aget_space(a);
    bn_status s = BN_OK;
    if (H5Tget_class(t) != H5T_STRING)
        s = bn_fail(BN_ERR_FORMAT, "%s: attribute %s is not a string", where, name);
    else if (H5Sget_simple_extent_npoints(space) != 1)
        s = bn_fail(BN_ERR_FORMAT, "%s: attribute %s is not a single string", where, name);
    else if (read_string_value(a, t, buf, len) != BN_OK)
        s = bn_h5_fail(BN_ERR_FORMAT, "%s: cannot read attribute %s", where, name);
    H5Sclose(space);
    H5Tclose(t);
    H5Aclose(a);
    return s;
}

/* ------------------------------------------------------------------ */
/* Datasets                                                            */
/* ------------------------------------------------------------------ */
bn_status bn_h5_link_present(hid_t loc, const char *where, const char *name, int *present)
{
    const htri_t e = H5Lexists(loc, name, H5P_DEFAULT);
    *present = e > 0;
    if (e < 0) return bn_h5_fail(BN_ERR_FORMAT, "cannot look up %s/%s (damaged?)", where, name);
    return BN_OK;
}

bn_status bn_h5_check_local(hid_t loc, const char *where, const char *name)
{
    H5L_info_t info;
    if (H5Lget_info(loc, name, &info, H5P_DEFAULT) < 0)
        return bn_h5_fail(BN_ERR_FORMAT, "cannot look up %s/%s", where, name);
    if (info.type == H5L_TYPE_HARD || info.type == H5L_TYPE_SOFT) return BN_OK;
    return bn_fail(BN_ERR_FORMAT, "%s/%s is an external or user-defined link: only what the file itself holds is read "
                   "(a link to another file, a FIFO or a device could block or read anything)", where, name);
}

/* Raw data kept outside the file (external storage, a virtual dataset
 * mapping other files) is refused for the same reason. */
static bn_status check_local_storage(hid_t d, const char *where, const char *name)
{
    hid_t pl = H5Dget_create_plist(d);
    if (pl < 0) return bn_h5_fail(BN_ERR_FORMAT, "cannot read the layout of %s/%s", where, name);
    const H5D_layout_t layout = H5Pget_layout(pl);
    const int external = H5Pget_external_count(pl);
    H5Pclose(pl);
    if (layout == H5D_VIRTUAL || external != 0)
        return bn_fail(BN_ERR_FORMAT, "dataset %s/%s keeps its data outside the file (%s): not read", where, name,
                       layout == H5D_VIRTUAL ? "a virtual dataset" : "external storage");
    return BN_OK;
}

bn_status bn_h5_group_create(hid_t loc, const char *name, hid_t *g)
{
    *g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (*g < 0) return bn_h5_fail(BN_ERR_IO, "cannot create group %s", name);
    return BN_OK;
}

/* Write rows [r0, r0 + nr) of an n x ncol dataset from an interleaved buffer. */
static herr_t write_rows(hid_t d, hid_t fspace, int rank, hsize_t r0, hsize_t nr, int ncol, hid_t mtype,
                         const void *buf)
{
    hsize_t start[2] = {r0, 0}, count[2] = {nr, (hsize_t)ncol};
    if (H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0) return -1;
    hid_t mspace = H5Screate_simple(rank, count, NULL);
    herr_t w = mspace >= 0 ? H5Dwrite(d, mtype, mspace, fspace, H5P_DEFAULT, buf) : -1;
    if (mspace >= 0) H5Sclose(mspace);
    return w;
}

bn_status bn_h5_write_columns(hid_t group, const char *name, size_t n, int ncol, const double *const *cols)
{
    int rank = ncol == 1 ? 1 : 2;
    hsize_t dims[2] = {n, (hsize_t)ncol};
    hid_t fspace = H5Screate_simple(rank, dims, NULL);
    hid_t d = fspace >= 0 ? H5Dcreate2(group, name, H5T_IEEE_F64LE, fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                          : -1;
    size_t block = n < BN_H5_BLOCK_ROWS ? n : BN_H5_BLOCK_ROWS;
    double *buf = d >= 0 && ncol > 1 ? bn_alloc(block * (size_t)ncol * sizeof *buf, name) : NULL;
    herr_t w = d >= 0 ? 0 : -1;
    if (w == 0 && ncol == 1)
        w = H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, cols[0]);
    else if (w == 0 && !buf)
        w = -2;
    for (size_t r0 = 0; w == 0 && ncol > 1 && r0 < n; r0 += block) {
        size_t nr = n - r0 < block ? n - r0 : block;
        for (size_t i = 0; i < nr; i++)
            for (int k = 0; k < ncol; k++) buf[i * (size_t)ncol + (size_t)k] = cols[k][r0 + i];
        w = write_rows(d, fspace, rank, r0, nr, ncol, H5T_NATIVE_DOUBLE, buf);
    }
    free(buf);
    if (d >= 0) H5Dclose(d);
    if (fspace >= 0) H5Sclose(fspace);
    if (w == -2) return BN_ERR_NOMEM;
    if (w < 0) return bn_h5_fail(BN_ERR_IO, "cannot write dataset %s", name);
    return BN_OK;
}

bn_status bn_h5_write_ids(hid_t group, const char *name, size_t n, const uint64_t *ids)
{
    hsize_t dims[1] = {n};
    hid_t fspace = H5Screate_simple(1, dims, NULL);
    hid_t d = fspace >= 0 ? H5Dcreate2(group, name, H5T_STD_U64LE, fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                          : -1;
    herr_t w = d >= 0 ? H5Dwrite(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids) : -1;
    if (d >= 0) H5Dclose(d);
    if (fspace >= 0) H5Sclose(fspace);
    if (w < 0) return bn_h5_fail(BN_ERR_IO, "cannot write dataset %s", name);
    return BN_OK;
}

void bn_h5_shape_text(int rank, const hsize_t *dims, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < rank && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
    if (at < len) snprintf(buf + at, len - at, rank == 1 ? ",)" : ")");
}

static void shape_text(hid_t space, char *buf, size_t len)
{
    hsize_t dims[8];
    int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 0 || rank > 8) {
        snprintf(buf, len, "(?)");
        return;
    }
    H5Sget_simple_extent_dims(space, dims, NULL);
    bn_h5_shape_text(rank, dims, buf, len);
}

bn_status bn_h5_open_local(hid_t group, const char *where, const char *name, hid_t *dset)
{
    *dset = -1;
    int present;
    BN_TRY(bn_h5_link_present(group, where, name, &present));
    if (!present) return bn_fail(BN_ERR_FORMAT, "missing dataset %s/%s", where, name);
    return bn_h5_open_present(group, where, name, dset);
}

bn_status bn_h5_open_present(hid_t group, const char *where, const char *name, hid_t *dset)
{
    *dset = -1;
    BN_TRY(bn_h5_check_local(group, where, name));
    hid_t d = H5Dopen2(group, name, H5P_DEFAULT);
    if (d < 0) return bn_h5_fail(BN_ERR_FORMAT, "cannot open dataset %s/%s", where, name);
    bn_status local = check_local_storage(d, where, name);
    if (local != BN_OK) {
        H5Dclose(d);
        return local;
    }
    *dset = d;
    return BN_OK;
}

bn_status bn_h5_open_dataset(hid_t group, const char *where, const char *name, int ncol, hid_t *dset,
                             size_t *rows)
{
    hid_t d;
    BN_TRY(bn_h5_open_local(group, where, name, &d));
    *dset = -1;
    hid_t t = H5Dget_type(d), space = H5Dget_space(d);
    H5T_class_t cls = H5Tget_class(t);
    hsize_t dims[2] = {0, 0};
    int rank = H5Sget_simple_extent_ndims(space);
    if (rank >= 1 && rank <= 2) H5Sget_simple_extent_dims(space, dims, NULL);
    char shape[96];
    shape_text(space, shape, sizeof shape);
    bn_status s = BN_OK;
    if (cls != H5T_INTEGER && cls != H5T_FLOAT)
        s = bn_fail(BN_ERR_FORMAT, "dataset %s/%s does not hold numbers", where, name);
    else if (ncol == 1 && rank != 1)
        s = bn_fail(BN_ERR_FORMAT, "dataset %s/%s has shape %s, expected (N,)", where, name, shape);
    else if (ncol > 1 && (rank != 2 || dims[1] != (hsize_t)ncol))
        s = bn_fail(BN_ERR_FORMAT, "dataset %s/%s has shape %s, expected (N, %d)", where, name, shape, ncol);
    H5Sclose(space);
    H5Tclose(t);
    if (s != BN_OK) {
        H5Dclose(d);
        return s;
    }
    *dset = d;
    *rows = (size_t)dims[0];
    return BN_OK;
}

/* First non-finite value of a column, or n. */
static size_t first_non_finite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return i;
    return n;
}

static bn_status non_finite(const char *path, size_t row, int col, int ncol, double v)
{
    if (ncol == 1) return bn_fail(BN_ERR_FORMAT, "dataset %s: particle %zu has a non-finite value (%g)", path, row, v);
    return bn_fail(BN_ERR_FORMAT, "dataset %s: particle %zu has a non-finite value (%g) in %c", path, row, v,
                   ncol == 3 ? 'x' + col : '0' + col);
}

bn_status bn_h5_read_columns(hid_t dset, const char *path, size_t rows, int ncol, double *const *cols)
{
    if (rows == 0) return BN_OK;
    if (ncol == 1) {
        if (H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, cols[0]) < 0)
            return bn_h5_fail(BN_ERR_FORMAT, "cannot read dataset %s", path);
        size_t bad = first_non_finite(cols[0], rows);
        return bad < rows ? non_finite(path, bad, 0, 1, cols[0][bad]) : BN_OK;
    }
    size_t block = rows < BN_H5_BLOCK_ROWS ? rows : BN_H5_BLOCK_ROWS;
    double *buf = bn_alloc(block * (size_t)ncol * sizeof *buf, path);
    if (!buf) return BN_ERR_NOMEM;
    hid_t fspace = H5Dget_space(dset);
    bn_status s = BN_OK;
    for (size_t r0 = 0; s == BN_OK && r0 < rows; r0 += block) {
        size_t nr = rows - r0 < block ? rows - r0 : block;
        hsize_t start[2] = {r0, 0}, count[2] = {nr, (hsize_t)ncol};
        hid_t mspace = H5Screate_simple(2, count, NULL);
        if (H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
            H5Dread(dset, H5T_NATIVE_DOUBLE, mspace, fspace, H5P_DEFAULT, buf) < 0)
            s = bn_h5_fail(BN_ERR_FORMAT, "cannot read dataset %s", path);
        H5Sclose(mspace);
        for (size_t i = 0; s == BN_OK && i < nr; i++)
            for (int k = 0; s == BN_OK && k < ncol; k++) {
                double v = buf[i * (size_t)ncol + (size_t)k];
                if (!isfinite(v)) s = non_finite(path, r0 + i, k, ncol, v);
                cols[k][r0 + i] = v;
            }
    }
    H5Sclose(fspace);
    free(buf);
    return s;
}

bn_status bn_h5_read_ids(hid_t dset, const char *path, size_t rows, uint64_t *ids)
{
    hid_t t = H5Dget_type(dset);
    int is_int = H5Tget_class(t) == H5T_INTEGER;
    int is_signed = is_int && H5Tget_sign(t) == H5T_SGN_2;
    size_t size = H5Tget_size(t);
    H5Tclose(t);
    if (!is_int || size > 8)
        return bn_fail(BN_ERR_FORMAT, "dataset %s must hold integers of at most 64 bits", path);
    if (rows == 0) return BN_OK;
    /* signed ids are read as int64 into the same storage, then checked */
    hid_t mtype = is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64;
    if (H5Dread(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids) < 0)
        return bn_h5_fail(BN_ERR_FORMAT, "cannot read dataset %s", path);
    if (is_signed) {
        const int64_t *sid = (const int64_t *)ids;
        for (size_t i = 0; i < rows; i++)
            if (sid[i] < 0)
                return bn_fail(BN_ERR_FORMAT, "dataset %s: particle %zu has a negative id (%lld)", path, i,
                               (long long)sid[i]);
    }
    return BN_OK;
}

bn_status bn_h5_write_atomic(const char *path, bn_status (*fill)(const char *tmp, void *ctx), void *ctx)
{
    bn_h5_quiet();
    char *tmp = NULL;
    BN_TRY(bn_atomic_begin(path, &tmp));
    const bn_status s = fill(tmp, ctx);
    if (s != BN_OK) {
        bn_atomic_abort(tmp);
        return bn_fail_context(s, "writing %s", path);
    }
    return bn_atomic_commit(tmp, path);
}
