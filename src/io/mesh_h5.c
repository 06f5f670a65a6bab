/* HDF5 plumbing of the mesh files: see mesh_h5.h. */
#include "io/mesh_h5.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "io/snapshot_h5.h"

#define FLASH_NAME_LEN 80

/* Every group on the way to `name` ("blocks/lower": blocks) must be a link
 * of this file: HDF5 follows an external link in the middle of a path
 * into another file (or a FIFO) before the last link is looked at.
 * *present is 0 when one of them is missing. */
static bn_status parents_local(hid_t loc, const char *file, const char *name, int *present)
{
    char part[256];
    *present = 1;
    for (const char *slash = strchr(name, '/'); slash && *present; slash = strchr(slash + 1, '/')) {
        const size_t len = (size_t)(slash - name);
        if (len == 0) continue; /* "/x": the root group */
        if (len >= sizeof part) return bn_fail(BN_ERR_FORMAT, "%s: the path '%.60s...' is too long", file, name);
        memcpy(part, name, len);
        part[len] = '\0';
        BN_TRY(bn_h5_link_present(loc, file, part, present));
        if (*present) BN_TRY(bn_h5_check_local(loc, file, part));
    }
    return BN_OK;
}

bn_status bn_mh5_has(hid_t loc, const char *file, const char *name, int *present)
{
    BN_TRY(parents_local(loc, file, name, present));
    if (!*present) return BN_OK;
    return bn_h5_link_present(loc, file, name, present);
}

/* A whole number in memory must come from integers in the file: HDF5
 * would turn a level of 3.7 into 3 without a word. Compound types (FLASH's
 * tables) are checked member by member. */
static bn_status check_integers(hid_t d, const char *file, const char *name, hid_t mtype)
{
    hid_t ft = H5Dget_type(d);
    if (ft < 0) return bn_h5_fail(BN_ERR_FORMAT, "%s: cannot read the type of dataset '%s'", file, name);
    const H5T_class_t mc = H5Tget_class(mtype), fc = H5Tget_class(ft);
    bn_status s = BN_OK;
    if (mc == H5T_INTEGER && fc != H5T_INTEGER)
        s = bn_fail(BN_ERR_FORMAT, "%s: dataset '%s' must hold integers (it holds %s)", file, name,
                    fc == H5T_FLOAT ? "floating-point numbers" : "something else");
    const int nm = mc == H5T_COMPOUND && fc == H5T_COMPOUND ? H5Tget_nmembers(mtype) : 0;
    for (int i = 0; s == BN_OK && i < nm; i++) {
        if (H5Tget_member_class(mtype, (unsigned)i) != H5T_INTEGER) continue;
        char *mname = H5Tget_member_name(mtype, (unsigned)i);
        const int at = mname ? H5Tget_member_index(ft, mname) : -1;
        if (at >= 0 && H5Tget_member_class(ft, (unsigned)at) != H5T_INTEGER)
            s = bn_fail(BN_ERR_FORMAT, "%s: field '%s' of dataset '%s' must hold integers", file, mname, name);
        H5free_memory(mname);
    }
    H5Tclose(ft);
    H5Eclear2(H5E_DEFAULT); /* a member missing from the file: H5Dread names it */
    return s;
}

/* The shape of d: rank `rank`, extents want[k] where > 0; got gets it. */
static bn_status check_shape(hid_t d, const char *file, const char *name, int rank, const hsize_t *want,
                             hsize_t got[BN_MH5_MAX_RANK])
{
    hid_t space = H5Dget_space(d);
    const int r = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    bn_status s = BN_OK;
    if (r != rank) s = bn_fail(BN_ERR_FORMAT, "%s: dataset '%s' has %d dimensions, expected %d", file, name, r, rank);
    else H5Sget_simple_extent_dims(space, got, NULL);
    for (int k = 0; s == BN_OK && k < rank; k++)
        if (want && want[k] > 0 && got[k] != want[k]) {
            char a[96], b[96];
            bn_h5_shape_text(rank, got, a, sizeof a);
            bn_h5_shape_text(rank, want, b, sizeof b);
            s = bn_fail(BN_ERR_FORMAT, "%s: dataset '%s' has shape %s, expected %s (0: any)", file, name, a, b);
        }
    if (space >= 0) H5Sclose(space);
    return s;
}

bn_status bn_mh5_read(hid_t loc, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims,
                      hid_t mtype, size_t elem, void **buf)
{
    *buf = NULL;
    int present;
    BN_TRY(bn_mh5_has(loc, file, name, &present));
    if (!present) return bn_fail(BN_ERR_FORMAT, "%s: no dataset '%s'", file, name);
    hid_t d;
    BN_TRY(bn_h5_open_present(loc, file, name, &d));
    hsize_t got[BN_MH5_MAX_RANK] = {0, 0, 0, 0};
    bn_status s = check_shape(d, file, name, rank, want, got);
    if (s == BN_OK) s = check_integers(d, file, name, mtype);
    size_t count = 1;
    for (int k = 0; s == BN_OK && k < rank; k++) {
        if (got[k] > SIZE_MAX || __builtin_mul_overflow(count, (size_t)got[k], &count))
            s = bn_fail(BN_ERR_FORMAT, "%s: dataset '%s': its size overflows", file, name);
    }
    if (s == BN_OK) s = bn_check_count(count, elem, name);
    void *b = NULL;
    if (s == BN_OK && !(b = bn_alloc_array(count ? count : 1, elem, name))) s = BN_ERR_NOMEM;
    if (s == BN_OK && count > 0 && H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, b) < 0)
        s = bn_h5_fail(BN_ERR_FORMAT, "%s: cannot read dataset '%s' (wrong type?)", file, name);
    H5Dclose(d);
    if (s != BN_OK) {
        free(b);
        return s;
    }
    for (int k = 0; k < rank; k++) dims[k] = got[k];
    *buf = b;
    return BN_OK;
}

bn_status bn_mh5_write(hid_t loc, const char *name, int rank, const hsize_t *dims, hid_t ftype, hid_t mtype,
                       const void *buf)
{
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t d = space >= 0 ? H5Dcreate2(loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    herr_t w = d >= 0 ? H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) : -1;
    if (d >= 0) H5Dclose(d);
    if (space >= 0) H5Sclose(space);
    if (w < 0) return bn_h5_fail(BN_ERR_IO, "cannot write dataset '%s'", name);
    return BN_OK;
}

/* ---- FLASH's parameter tables ---------------------------------------------- */

typedef struct {
    char name[FLASH_NAME_LEN];
    int value;
} flash_int;
typedef struct {
    char name[FLASH_NAME_LEN];
    double value;
} flash_real;
typedef struct {
    char name[FLASH_NAME_LEN];
    char value[FLASH_NAME_LEN];
} flash_str;

/* The compound type of a table: name (80 characters, space padded as
 * FLASH's Fortran writes them) and value. */
static hid_t table_type(bn_flash_table_type type)
{
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, FLASH_NAME_LEN);
    H5Tset_strpad(str, H5T_STR_SPACEPAD);
    const size_t size = type == BN_FLASH_STRING ? sizeof(flash_str)
                        : type == BN_FLASH_REAL ? sizeof(flash_real)
                                                : sizeof(flash_int);
    hid_t t = H5Tcreate(H5T_COMPOUND, size);
    H5Tinsert(t, "name", 0, str);
    if (type == BN_FLASH_STRING) H5Tinsert(t, "value", offsetof(flash_str, value), str);
    else if (type == BN_FLASH_REAL) H5Tinsert(t, "value", offsetof(flash_real, value), H5T_NATIVE_DOUBLE);
    else H5Tinsert(t, "value", offsetof(flash_int, value), H5T_NATIVE_INT);
    H5Tclose(str);
    return t;
}

/* Fortran's space padding for an 80-character field. */
static void pad(char *dst, const char *src)
{
    const size_t n = strlen(src) < FLASH_NAME_LEN ? strlen(src) : FLASH_NAME_LEN;
    memset(dst, ' ', FLASH_NAME_LEN);
    memcpy(dst, src, n);
}

bn_status bn_flash_table_write(hid_t f, const char *table, bn_flash_table_type type, const bn_flash_param *p, int n)
{
    const size_t size = type == BN_FLASH_STRING ? sizeof(flash_str)
                        : type == BN_FLASH_REAL ? sizeof(flash_real)
                                                : sizeof(flash_int);
    unsigned char *buf = bn_calloc((size_t)n, size, table);
    if (!buf) return BN_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        unsigned char *row = buf + (size_t)i * size;
        pad((char *)row, p[i].name);
        if (type == BN_FLASH_STRING) pad(((flash_str *)row)->value, p[i].text ? p[i].text : "");
        else if (type == BN_FLASH_REAL) ((flash_real *)row)->value = p[i].value;
        else ((flash_int *)row)->value = (int)p[i].value;
    }
    hid_t t = table_type(type);
    const hsize_t dims[1] = {(hsize_t)n};
    bn_status s = bn_mh5_write(f, table, 1, dims, t, t, buf);
    H5Tclose(t);
    free(buf);
    return s;
}

static int name_is(const char *field, const char *key)
{
    size_t n = FLASH_NAME_LEN;
    while (n > 0 && (field[n - 1] == ' ' || field[n - 1] == '\0')) n--;
    return strlen(key) == n && !strncmp(field, key, n);
}

bn_status bn_flash_table_get(hid_t f, const char *file, const char *table, bn_flash_table_type type, const char *key,
                             double *value, int *found)
{
    *found = 0;
    int present;
    BN_TRY(bn_mh5_has(f, file, table, &present));
    if (!present) return BN_OK;
    hid_t t = table_type(type);
    const size_t size = H5Tget_size(t);
    hsize_t dims[1];
    void *buf = NULL;
    bn_status s = bn_mh5_read(f, file, table, 1, NULL, dims, t, size, &buf);
    H5Tclose(t);
    for (hsize_t i = 0; s == BN_OK && i < dims[0] && !*found; i++) {
        const unsigned char *row = (const unsigned char *)buf + i * size;
        if (!name_is((const char *)row, key)) continue;
        *found = 1;
        *value = type == BN_FLASH_REAL ? ((const flash_real *)row)->value : (double)((const flash_int *)row)->value;
    }
    free(buf);
    return s;
}

/* ---- "unknown names" -------------------------------------------------------- */

static hid_t unknown_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, BN_FLASH_VAR_LEN);
    H5Tset_strpad(t, H5T_STR_NULLPAD);
    return t;
}

bn_status bn_flash_unknowns_read(hid_t f, const char *file, char names[][BN_MESH_NAME_LEN], int max, int *n)
{
    hid_t t = unknown_type();
    hsize_t dims[2];
    const hsize_t want[2] = {0, 1};
    void *buf = NULL;
    bn_status s = bn_mh5_read(f, file, "unknown names", 2, want, dims, t, BN_FLASH_VAR_LEN, &buf);
    H5Tclose(t);
    if (s != BN_OK) return s;
    if (dims[0] > (hsize_t)max)
        s = bn_fail(BN_ERR_FORMAT, "%s: 'unknown names' lists %llu variables (at most %d)", file,
                    (unsigned long long)dims[0], max);
    for (hsize_t v = 0; s == BN_OK && v < dims[0]; v++) {
        char *dst = names[v];
        memset(dst, 0, BN_MESH_NAME_LEN);
        memcpy(dst, (char *)buf + v * BN_FLASH_VAR_LEN, BN_FLASH_VAR_LEN);
        for (int c = BN_FLASH_VAR_LEN - 1; c >= 0 && (dst[c] == ' ' || dst[c] == '\0'); c--) dst[c] = '\0';
        if (!dst[0]) s = bn_fail(BN_ERR_FORMAT, "%s: 'unknown names' entry %llu is empty", file, (unsigned long long)v);
    }
    /* a name twice would make two variables of one dataset (and a copy
     * that lists the variable it writes twice) */
    const int twice = s == BN_OK ? bn_mesh_names_repeated(names, (int)dims[0]) : -1;
    if (twice >= 0)
        s = bn_fail(BN_ERR_FORMAT, "%s: 'unknown names' lists '%s' twice (entry %d)", file, names[twice], twice);
    free(buf);
    *n = s == BN_OK ? (int)dims[0] : 0;
    return s;
}

bn_status bn_flash_unknowns_write(hid_t f, char names[][BN_MESH_NAME_LEN], int n)
{
    char *buf = bn_calloc((size_t)n ? (size_t)n : 1, BN_FLASH_VAR_LEN, "unknown names");
    if (!buf) return BN_ERR_NOMEM;
    for (int v = 0; v < n; v++) memcpy(buf + v * BN_FLASH_VAR_LEN, names[v], strlen(names[v]));
    hid_t t = unknown_type();
    const hsize_t dims[2] = {(hsize_t)n, 1};
    bn_status s = bn_mh5_write(f, "unknown names", 2, dims, t, t, buf);
    H5Tclose(t);
    free(buf);
    return s;
}

int bn_mesh_names_repeated(char names[][BN_MESH_NAME_LEN], int n)
{
    for (int i = 1; i < n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j])) return i;
    return -1;
}
