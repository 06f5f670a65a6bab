/*
 * Internal: HDF5 plumbing of the mesh files (FLASH's PARAMESH layout and
 * banyan's own): whole datasets of any rank read with their shape checked
 * and their size checked against memory before anything is allocated,
 * datasets written, and FLASH's tables of named scalars.
 */
#ifndef BN_MESH_H5_H
#define BN_MESH_H5_H
#include <hdf5.h>
#include "banyan.h"

#define BN_MH5_MAX_RANK 4

/* Read dataset `name` of loc whole into a new buffer (*buf, free it) of
 * memory type mtype (elem bytes each). Its rank must be `rank`; dims gets
 * its shape; want[k] > 0 demands that extent (0: any). Every link on the
 * way (groups included) must be the file's own, and integers in memory
 * must be integers in the file (no silent 3.7 -> 3). Fails naming
 * file/name and the shapes. */
bn_status bn_mh5_read(hid_t loc, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims,
                      hid_t mtype, size_t elem, void **buf);
/* Write a new dataset of file type ftype from memory of type mtype. */
bn_status bn_mh5_write(hid_t loc, const char *name, int rank, const hsize_t *dims, hid_t ftype, hid_t mtype,
                       const void *buf);
/* Does loc have link `name`? (fails when HDF5 cannot tell, or when a
 * group on the way is an external link) */
bn_status bn_mh5_has(hid_t loc, const char *file, const char *name, int *present);

/* FLASH's parameter tables: 1-D arrays of {name: 80 characters, value}
 * ("integer scalars", "real runtime parameters", ...). */
typedef struct bn_flash_param {
    const char *name;
    double value;         /* integer and logical tables: a whole number */
    const char *text;     /* string tables                              */
} bn_flash_param;
typedef enum { BN_FLASH_INT, BN_FLASH_REAL, BN_FLASH_LOGICAL, BN_FLASH_STRING } bn_flash_table_type;
bn_status bn_flash_table_write(hid_t f, const char *table, bn_flash_table_type type, const bn_flash_param *p, int n);
/* The value of `key` in table `table` (integer, logical or real): *found
 * 0 when the table or the key is missing. */
bn_status bn_flash_table_get(hid_t f, const char *file, const char *table, bn_flash_table_type type,
                             const char *key, double *value, int *found);

/* FLASH's "unknown names": (nvar, 1) strings of 4 characters, read (each
 * non-empty and listed once, at most max) and written. */
#define BN_FLASH_VAR_LEN 4
bn_status bn_flash_unknowns_read(hid_t f, const char *file, char names[][BN_MESH_NAME_LEN], int max, int *n);
bn_status bn_flash_unknowns_write(hid_t f, char names[][BN_MESH_NAME_LEN], int n);
/* The first of names[0..n) that repeats an earlier one, or -1. */
int bn_mesh_names_repeated(char names[][BN_MESH_NAME_LEN], int n);
#endif
