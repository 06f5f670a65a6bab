#include "core/error.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

#define BN_MSG_LEN 1024
static _Thread_local char bn_msg[BN_MSG_LEN];

const char *bn_status_name(bn_status s)
{
    switch (s) {
    case BN_OK: return "ok";
    case BN_ERR_ARGUMENT: return "invalid argument";
    case BN_ERR_NOMEM: return "out of memory";
    case BN_ERR_IO: return "i/o error";
    case BN_ERR_FORMAT: return "bad file content";
    case BN_ERR_PARAMETER: return "bad parameter";
    case BN_ERR_UNSUPPORTED: return "unsupported";
    case BN_ERR_DEVICE: return "GPU error";
    case BN_ERR_DEVICE_NOMEM: return "out of GPU memory";
    case BN_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *bn_last_error(void) { return bn_msg; }
void bn_clear_error(void) { bn_msg[0] = '\0'; }

bn_status bn_fail(bn_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(bn_msg, BN_MSG_LEN, fmt, ap);
    va_end(ap);
    return s;
}

bn_status bn_fail_context(bn_status s, const char *fmt, ...)
{
    char old[BN_MSG_LEN], prefix[BN_MSG_LEN];
    memcpy(old, bn_msg, BN_MSG_LEN);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, BN_MSG_LEN, fmt, ap);
    va_end(ap);
    /* truncation is fine: the message is for people */
    size_t np = strlen(prefix);
    if (np > BN_MSG_LEN - 3) np = BN_MSG_LEN - 3;
    memcpy(bn_msg, prefix, np);
    memcpy(bn_msg + np, ": ", 2);
    size_t room = BN_MSG_LEN - np - 3, no = strlen(old);
    if (no > room) no = room;
    memcpy(bn_msg + np + 2, old, no);
    bn_msg[np + 2 + no] = '\0';
    return s;
}

void *bn_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) bn_fail(BN_ERR_NOMEM, "cannot allocate %zu bytes for %s", bytes, what);
    return p;
}

void *bn_calloc(size_t count, size_t size, const char *what)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) bn_fail(BN_ERR_NOMEM, "cannot allocate %zu x %zu bytes for %s", count, size, what);
    return p;
}

void *bn_alloc_array(size_t count, size_t size, const char *what)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        bn_fail(BN_ERR_NOMEM, "cannot allocate %zu x %zu bytes for %s: the size overflows", count, size, what);
        return NULL;
    }
    return bn_alloc(bytes, what);
}

size_t bn_memory_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return SIZE_MAX;
    size_t bytes;
    if (__builtin_mul_overflow((size_t)pages, (size_t)page, &bytes)) return SIZE_MAX;
    return bytes;
}

bn_status bn_check_count(size_t count, size_t item_bytes, const char *what)
{
    size_t bytes, have = bn_memory_bytes();
    if (__builtin_mul_overflow(count, item_bytes, &bytes))
        return bn_fail(BN_ERR_NOMEM, "%zu %s would need %zu x %zu bytes, more than 2^64: refused", count, what, count,
                       item_bytes);
    if (bytes > have)
        return bn_fail(BN_ERR_NOMEM, "%zu %s would need %.3g GiB (%zu bytes each), more than this machine's %.3g GiB "
                       "of memory: refused", count, what, (double)bytes / 1073741824.0, item_bytes,
                       (double)have / 1073741824.0);
    return BN_OK;
}
