/* The tests' own byte writer for hand-made binary files (GADGET-2,
 * tipsy): independent of the library's writers, so that a reader is
 * checked against bytes laid out here from the formats' descriptions. */
#ifndef BN_TEST_BYTES_H
#define BN_TEST_BYTES_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned char b[4096];
    size_t n;
    int big;
} tb_buf;

static inline void tb_raw(tb_buf *t, const void *v, size_t n, int swap)
{
    const unsigned char *c = v;
    for (size_t i = 0; i < n; i++) t->b[t->n + i] = c[swap ? n - 1 - i : i];
    t->n += n;
}
/* the host is little-endian on every machine the tests run on (x86, arm64) */
static inline void tb_u32(tb_buf *t, uint32_t v) { tb_raw(t, &v, 4, t->big); }
static inline void tb_u64(tb_buf *t, uint64_t v) { tb_raw(t, &v, 8, t->big); }
static inline void tb_f32(tb_buf *t, float v) { tb_raw(t, &v, 4, t->big); }
static inline void tb_f64(tb_buf *t, double v) { tb_raw(t, &v, 8, t->big); }
static inline void tb_zeros(tb_buf *t, size_t n)
{
    memset(t->b + t->n, 0, n);
    t->n += n;
}
/* overwrite the 32-bit value at byte `at` */
static inline void tb_set_u32(tb_buf *t, size_t at, uint32_t v)
{
    const size_t n = t->n;
    t->n = at;
    tb_u32(t, v);
    t->n = n;
}
static inline void tb_save(const tb_buf *t, const char *path, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(t->b, 1, n, f) != n || fclose(f) != 0) abort();
}
#endif
