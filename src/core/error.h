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
/* malloc of count x size bytes: fails (naming what) when the product
 * overflows instead of allocating a wrapped-around size. */
void *bn_alloc_array(size_t count, size_t size, const char *what);
/* The machine's physical memory in bytes (SIZE_MAX when unknown). */
size_t bn_memory_bytes(void);
/* Fail, naming the count, when `count` items of `item_bytes` bytes each
 * overflow size_t or exceed the machine's memory: sizes that come from
 * files or options are checked with it before anything is allocated. */
bn_status bn_check_count(size_t count, size_t item_bytes, const char *what);
#endif
