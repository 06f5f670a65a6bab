/* Raw HDF5 writers for the snapshot tests: files made here do not go
 * through banyan's writer, so the reader is tested against files "other
 * codes" wrote, and our writer's layout is checked independently. */
#ifndef BN_TEST_SNAPSHOT_FIXTURES_H
#define BN_TEST_SNAPSHOT_FIXTURES_H
#include <dirent.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"

static inline void fx_check(herr_t r, const char *what)
{
    if (r < 0) fail_msg("HDF5 fixture: %s failed", what);
}

static inline hid_t fx_create(const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    fx_check(f, path);
    return f;
}

static inline hid_t fx_group(hid_t loc, const char *name)
{
    hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    fx_check(g, name);
    return g;
}

/* A dataset of d0 rows (and d1 columns when d1 > 0). */
static inline void fx_dataset(hid_t g, const char *name, hid_t file_type, hid_t mem_type, hsize_t d0, hsize_t d1,
                       const void *data)
{
    hsize_t dims[2] = {d0, d1};
    hid_t s = H5Screate_simple(d1 > 0 ? 2 : 1, dims, NULL);
    hid_t d = H5Dcreate2(g, name, file_type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    fx_check(d, name);
    fx_check(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), name);
    H5Dclose(d);
    H5Sclose(s);
}

/* An attribute of n values (n == 0: a scalar). */
static inline void fx_attr(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, hsize_t n, const void *data)
{
    hsize_t dims[1] = {n};
    hid_t s = n ? H5Screate_simple(1, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, file_type, s, H5P_DEFAULT, H5P_DEFAULT);
    fx_check(a, name);
    fx_check(H5Awrite(a, mem_type, data), name);
    H5Aclose(a);
    H5Sclose(s);
}

static inline void fx_attr_double(hid_t obj, const char *name, double v)
{
    fx_attr(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &v);
}

/* Variable-length string (what h5py writes for a Python str). */
static inline void fx_attr_vstring(hid_t obj, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    fx_attr(obj, name, t, t, 0, &v);
    H5Tclose(t);
}

/* A string attribute of any kind HDF5 allows: fixed or variable length,
 * ASCII or UTF-8, NUL- or space-padded. */
static inline void fx_attr_string(hid_t obj, const char *name, const char *v, int variable, H5T_cset_t cset,
                                  H5T_str_t pad)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, variable ? H5T_VARIABLE : strlen(v) + (pad == H5T_STR_SPACEPAD ? 3 : 1));
    H5Tset_cset(t, cset);
    if (!variable) H5Tset_strpad(t, pad);
    char buf[256];
    snprintf(buf, sizeof buf, "%s%s", v, pad == H5T_STR_SPACEPAD ? "   " : "");
    if (variable) fx_attr(obj, name, t, t, 0, &v);
    else fx_attr(obj, name, t, t, 0, buf);
    H5Tclose(t);
}

/* A dataset of d0 x d1 (d1 = 0: 1-D) doubles that claims its rows but
 * stores none (chunked, never written): a tiny file for any count. */
static inline void fx_sparse_dataset(hid_t g, const char *name, hsize_t d0, hsize_t d1)
{
    hsize_t dims[2] = {d0, d1}, chunk[2] = {1024, d1};
    hid_t s = H5Screate_simple(d1 > 0 ? 2 : 1, dims, NULL);
    hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(pl, d1 > 0 ? 2 : 1, chunk);
    hid_t d = H5Dcreate2(g, name, H5T_IEEE_F64LE, s, H5P_DEFAULT, pl, H5P_DEFAULT);
    fx_check(d, name);
    H5Dclose(d);
    H5Pclose(pl);
    H5Sclose(s);
}

/* A GADGET-2 header: int32 counts, MassTable, Time, Redshift, BoxSize. */
static inline void fx_gadget2_header(hid_t f, const int counts[6], const double mass_table[6], double time)
{
    hid_t h = fx_group(f, "Header");
    unsigned zeros[6] = {0};
    double z = 0, box = 0;
    int one = 1;
    fx_attr(h, "NumPart_ThisFile", H5T_STD_I32LE, H5T_NATIVE_INT, 6, counts);
    fx_attr(h, "NumPart_Total", H5T_STD_U32LE, H5T_NATIVE_INT, 6, counts);
    fx_attr(h, "NumPart_Total_HighWord", H5T_STD_U32LE, H5T_NATIVE_UINT, 6, zeros);
    fx_attr(h, "MassTable", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 6, mass_table);
    fx_attr(h, "Time", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &time);
    fx_attr(h, "Redshift", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &z);
    fx_attr(h, "BoxSize", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &box);
    fx_attr(h, "NumFilesPerSnapshot", H5T_STD_I32LE, H5T_NATIVE_INT, 0, &one);
    H5Gclose(h);
}

/* A private scratch directory, removed (with its files) by fx_rmdir. */
static char *fx_tmpdir(void)
{
    char *d = strdup("/tmp/bn_snapshot_test_XXXXXX");
    if (!mkdtemp(d)) fail_msg("mkdtemp failed");
    return d;
}

static char *fx_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Number of entries in dir (besides . and ..); names into `list` if given. */
static inline int fx_count_files(const char *dir, char *list, size_t len)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    if (list) list[0] = '\0';
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        if (list) { /* "name " appended while it fits (gcc 13 flags strncat with a strlen bound) */
            const size_t used = strlen(list), add = strlen(e->d_name);
            if (used + add + 2 <= len) {
                memcpy(list + used, e->d_name, add);
                memcpy(list + used + add, " ", 2);
            }
        }
    }
    if (d) closedir(d);
    return n;
}

static inline void fx_rmdir(char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = fx_path(dir, e->d_name);
        unlink(p);
        free(p);
    }
    if (d) closedir(d);
    rmdir(dir);
    free(dir);
}
/* Readers of `ranks` shares of path, their particles in rank order,
 * against p (compared by `same`); every share has the set's total and
 * the time `time`. */
static inline void fx_assert_shares(const char *path, int ranks, const bn_particles *p, double time,
                                    void (*same)(const bn_particles *want, const bn_particles *got))
{
    size_t at = 0;
    for (int r = 0; r < ranks; r++) {
        bn_particles *q = NULL;
        uint64_t total = 0;
        bn_snapshot_meta m;
        TU_OK(bn_snapshot_read_share(path, r, ranks, &q, &m, &total));
        assert_int_equal(total, p->n);
        assert_true(m.time == time);
        bn_particles *want = tu_rows(p, at, at + q->n);
        same(want, q);
        at += q->n;
        bn_particles_free(want);
        bn_particles_free(q);
    }
    assert_int_equal(at, p->n);
}
#endif
