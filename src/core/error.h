/* Internal: record a failure message (per thread) and return its status. */
#ifndef BN_ERROR_H
#define BN_ERROR_H
#include "banyan.h"

#if defined(__GNUC__)
#define BN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define BN_PRINTF(a, b)
#endif

/* Set the message of this thread to the formatted text and return s. */
bn_status bn_fail(bn_status s, const char *fmt, ...) BN_PRINTF(2, 3);
/* Prefix the current message with context ("reading x.hdf5: ..."). */
bn_status bn_fail_context(bn_status s, const char *fmt, ...) BN_PRINTF(2, 3);

/* Propagate a failure: BN_TRY(call) returns the call's status if not OK. */
#define BN_TRY(expr)                       \
    do {                                   \
        bn_status bn_try_s_ = (expr);      \
        if (bn_try_s_ != BN_OK) return bn_try_s_; \
    } while (0)

/* malloc that records an error naming what was being allocated. */
void *bn_alloc(size_t bytes, const char *what);
void *bn_calloc(size_t count, size_t size, const char *what);
#endif
