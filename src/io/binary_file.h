/* Internal: the binary snapshot formats of other codes (GADGET-2, tipsy)
 * read from a whole file in memory with every access bounds-checked, and
 * written through a temporary file. Values are decoded byte by byte in
 * the file's byte order, so the host's order never matters. */
#ifndef BN_BINARY_FILE_H
#define BN_BINARY_FILE_H
#include <stdio.h>
#include "banyan.h"
#include "core/error.h"

typedef struct {
    const char *path;
    unsigned char *data;
    size_t size, pos;
    int big; /* the file is big-endian */
} bn_binfile;

/* Load a regular file whole (its size checked against memory first). */
bn_status bn_binfile_load(const char *path, bn_binfile *b);
void bn_binfile_free(bn_binfile *b);
/* The next n bytes, or a failure naming the file, the field and where
 * the file ends ("truncated"). */
bn_status bn_binfile_take(bn_binfile *b, size_t n, const char *field, const unsigned char **out);

uint32_t bn_bin_u32(const unsigned char *p, int big);
uint64_t bn_bin_u64(const unsigned char *p, int big);
float bn_bin_f32(const unsigned char *p, int big);
double bn_bin_f64(const unsigned char *p, int big);
/* A float of 4 or 8 bytes. */
double bn_bin_real(const unsigned char *p, int width, int big);
/* Is this machine big-endian (tipsy's "native" order)? */
int bn_host_big_endian(void);

/* Writing: a FILE plus the order; errors are collected by fclose's check. */
typedef struct {
    FILE *fp;
    int big;
} bn_binout;
void bn_put_u32(bn_binout *o, uint32_t v);
void bn_put_u64(bn_binout *o, uint64_t v);
void bn_put_f32(bn_binout *o, float v);
void bn_put_f64(bn_binout *o, double v);
void bn_put_bytes(bn_binout *o, const void *v, size_t n);

/* Write `path` whole or not at all: fill(fp, ctx) writes the temporary
 * file that replaces path when fill and the flush succeed. */
bn_status bn_binfile_write_atomic(const char *path, bn_status (*fill)(FILE *fp, void *ctx), void *ctx);
/* Only the temporary file, its name in *tmp (NULL on failure): the
 * caller commits or aborts it (atomic_file.h), e.g. with a set's others. */
bn_status bn_binfile_write_tmp(const char *path, bn_status (*fill)(FILE *fp, void *ctx), void *ctx, char **tmp);

/* A value read from a file is finite, or the failure names the file,
 * the block, the particle and the component. */
bn_status bn_bin_check_finite(const char *path, const char *block, size_t i, const char *what, double v);
#endif
