/* Internal: copies into memory that will not be read again soon (pinned
 * staging buffers, the caller's result arrays) with stores that bypass
 * the cache where the CPU has them (SSE2's streaming stores): a normal
 * store first reads the line it writes, so a large copy moves a third
 * more bytes than it needs, and at 2^24 particles host memory bandwidth
 * is what a call from host arrays waits for. Values are the same bits as
 * the plain loops. Host C, called per run from inside parallel loops. */
#ifndef BN_STREAM_STORE_H
#define BN_STREAM_STORE_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
/* dst[i] = src[i], i < n. */
void bn_stream_doubles(double *dst, const double *src, size_t n);
/* dst[i] = scale * (double)src[i], i < n. */
void bn_stream_scaled_floats(double *dst, const float *src, size_t n, double scale);
#ifdef __cplusplus
}
#endif
#endif
