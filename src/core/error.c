#include "core/error.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
