/* Whole binary files in memory, bounds-checked; see binary_file.h. */
#include "io/binary_file.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/files.h"
#include "io/atomic_file.h"

bn_status bn_binfile_load(const char *path, bn_binfile *b)
{
    memset(b, 0, sizeof *b);
    b->path = path;
    struct stat st;
    BN_TRY(bn_check_regular_file(path, path, &st));
    if (st.st_size < 0) return bn_fail(BN_ERR_IO, "%s: negative file size", path);
    BN_TRY(bn_check_count((size_t)st.st_size, 1, path));
    FILE *fp = fopen(path, "rb");
    if (!fp) return bn_fail(BN_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    b->size = (size_t)st.st_size;
    b->data = bn_alloc(b->size ? b->size : 1, path);
    size_t got = b->data ? fread(b->data, 1, b->size, fp) : 0;
    int err = ferror(fp);
    fclose(fp);
    if (!b->data) return BN_ERR_NOMEM;
    if (err || got != b->size) {
        bn_binfile_free(b);
        return bn_fail(BN_ERR_IO, "cannot read %s (%zu of its %lld bytes read)", path, got, (long long)st.st_size);
    }
    return BN_OK;
}

void bn_binfile_free(bn_binfile *b)
{
    free(b->data);
    b->data = NULL;
    b->size = b->pos = 0;
}

bn_status bn_binfile_take(bn_binfile *b, size_t n, const char *field, const unsigned char **out)
{
    if (n > b->size - b->pos)
        return bn_fail(BN_ERR_FORMAT, "%s: truncated: %s needs %zu bytes at byte %zu but the file ends at %zu",
                       b->path, field, n, b->pos, b->size);
    *out = b->data + b->pos;
    b->pos += n;
    return BN_OK;
}

uint32_t bn_bin_u32(const unsigned char *p, int big)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[big ? 3 - i : i] << (8 * i);
    return v;
}

uint64_t bn_bin_u64(const unsigned char *p, int big)
{
    uint64_t lo = bn_bin_u32(p + (big ? 4 : 0), big), hi = bn_bin_u32(p + (big ? 0 : 4), big);
    return hi << 32 | lo;
}

float bn_bin_f32(const unsigned char *p, int big)
{
    uint32_t u = bn_bin_u32(p, big);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double bn_bin_f64(const unsigned char *p, int big)
{
    uint64_t u = bn_bin_u64(p, big);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

double bn_bin_real(const unsigned char *p, int width, int big)
{
    return width == 8 ? bn_bin_f64(p, big) : (double)bn_bin_f32(p, big);
}

int bn_host_big_endian(void)
{
    const uint16_t one = 1;
    unsigned char c;
    memcpy(&c, &one, 1);
    return c == 0;
}

void bn_put_u32(bn_binout *o, uint32_t v)
{
    unsigned char c[4];
    for (int i = 0; i < 4; i++) c[o->big ? 3 - i : i] = (unsigned char)(v >> (8 * i));
    fwrite(c, 1, 4, o->fp);
}

void bn_put_u64(bn_binout *o, uint64_t v)
{
    bn_put_u32(o, (uint32_t)(o->big ? v >> 32 : v));
    bn_put_u32(o, (uint32_t)(o->big ? v : v >> 32));
}

void bn_put_f32(bn_binout *o, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    bn_put_u32(o, u);
}

void bn_put_f64(bn_binout *o, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    bn_put_u64(o, u);
}

void bn_put_bytes(bn_binout *o, const void *v, size_t n) { fwrite(v, 1, n, o->fp); }

bn_status bn_binfile_write_tmp(const char *path, bn_status (*fill)(FILE *fp, void *ctx), void *ctx, char **tmp)
{
    BN_TRY(bn_atomic_begin(path, tmp));
    FILE *fp = fopen(*tmp, "wb");
    bn_status s = fp ? fill(fp, ctx) : bn_fail(BN_ERR_IO, "cannot write %s: %s", *tmp, strerror(errno));
    if (fp) {
        const int bad = ferror(fp);
        if (fclose(fp) != 0 || bad)
            if (s == BN_OK) s = bn_fail(BN_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    if (s == BN_OK) return BN_OK;
    bn_atomic_abort(*tmp);
    *tmp = NULL;
    return bn_fail_context(s, "writing %s", path);
}

bn_status bn_binfile_write_atomic(const char *path, bn_status (*fill)(FILE *fp, void *ctx), void *ctx)
{
    char *tmp = NULL;
    BN_TRY(bn_binfile_write_tmp(path, fill, ctx, &tmp));
    return bn_atomic_commit(tmp, path);
}

bn_status bn_bin_check_finite(const char *path, const char *block, size_t i, const char *what, double v)
{
    if (isfinite(v)) return BN_OK;
    return bn_fail(BN_ERR_FORMAT, "%s: block %s: particle %zu has a non-finite %s (%g)", path, block, i, what, v);
}
