/* Internal: copies into memory that will not be read again soon (the
 * caller's result arrays, out of the pinned staging buffers) with stores
 * that bypass the cache where the CPU has them (SSE2's streaming stores):
 * a normal store first reads the line it writes, so a large copy moves a
 * third more bytes than it needs, and at 2^24 cells host memory bandwidth
 * is what a call from host arrays waits for (the mesh download: 14.5 ms
 * -> 9.5 ms on the H100's host). Into the pinned buffers themselves they
 * were slower (the upload 16 -> 20-27 ms): plain copies there. Values
 * are the same bits as the plain loops. Host C, called per run from
 * inside parallel loops. */
#ifndef BN_STREAM_STORE_H
#define BN_STREAM_STORE_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
/* dst[i] = scale * (double)src[i], i < n. */
void bn_stream_scaled_floats(double *dst, const float *src, size_t n, double scale);
#ifdef __cplusplus
}
#endif
#endif
