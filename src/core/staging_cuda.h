/*
 * Internal (CUDA sources only): transfers between pageable host arrays
 * and the device through two pinned staging buffers, shared by the
 * particle transfers (particles_cuda.cu) and the mesh's (field_cuda.cu,
 * fft_cuda.cu). The buffers take turns: the host fills (or drains) one
 * while the other's transfer runs. Each buffer's event marks its last
 * transfer, and the events live as long as the buffers, so a buffer is
 * refilled only after its transfer is done, across calls too.
 *
 * What the host does with a chunk is the caller's: a fill callback
 * writes items [off, off + len) of its source into the buffer (the
 * particle upload inspects its inputs there), a drain callback reads
 * them out of it (the mesh's scaled floats).
 */
#ifndef BN_STAGING_CUDA_H
#define BN_STAGING_CUDA_H
#include <cuda_runtime.h>
#include <stddef.h>
#include "core/cuda_check.h"

#define BN_STAGING_BYTES ((size_t)32 << 20) /* bytes of each staging buffer */

typedef struct {
    void *pinned[2];
    cudaEvent_t done[2]; /* a buffer's last transfer */
} bn_staging;

/* Items [off, off + len) of the host side into pin (fill) or out of it
 * (drain); ctx is the caller's. */
typedef void (*bn_stage_fill)(void *ctx, void *pin, size_t off, size_t len);
typedef void (*bn_stage_drain)(void *ctx, const void *pin, size_t off, size_t len);

/* The buffers and events, made where missing (nothing when made). */
bn_status bn_staging_init(bn_staging *sg);
/* Release them; the stream that used them has drained. */
void bn_staging_free(bn_staging *sg);

/* n items of item_bytes each to device dst, a buffer at a time: fill
 * writes a chunk, its transfer is queued on s, the next fill overlaps
 * it. Returns with the last transfers queued, not waited for. */
bn_status bn_stage_up(bn_staging *sg, cudaStream_t s, void *dst, size_t n, size_t item_bytes, bn_stage_fill fill,
                      void *ctx);
/* n items of item_bytes each from device src: the next chunk's transfer
 * is queued before drain reads the last one. Returns with every chunk
 * drained. */
bn_status bn_stage_down(bn_staging *sg, cudaStream_t s, const void *src, size_t n, size_t item_bytes,
                        bn_stage_drain drain, void *ctx, const char *what);
#endif
