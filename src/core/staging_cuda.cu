/* The pinned staging pipeline (staging_cuda.h). */
#include <string.h>
#include "core/staging_cuda.h"

namespace {
size_t chunk_len(size_t n, size_t off, size_t chunk) { return n - off < chunk ? n - off : chunk; }
} // namespace

bn_status bn_staging_init(bn_staging *sg)
{
    for (int k = 0; k < 2; k++) {
        if (!sg->pinned[k]) {
            void *p = NULL;
            BN_CUDA_CHECK(cudaMallocHost(&p, BN_STAGING_BYTES));
            sg->pinned[k] = p;
        }
        if (!sg->done[k]) {
            cudaEvent_t e = NULL;
            BN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
            sg->done[k] = e;
        }
    }
    return BN_OK;
}

void bn_staging_free(bn_staging *sg)
{
    for (int k = 0; k < 2; k++) {
        if (sg->done[k]) cudaEventDestroy(sg->done[k]);
        if (sg->pinned[k]) cudaFreeHost(sg->pinned[k]);
    }
    memset(sg, 0, sizeof *sg);
}

bn_status bn_stage_up(bn_staging *sg, cudaStream_t s, void *dst, size_t n, size_t item_bytes, bn_stage_fill fill,
                      void *ctx)
{
    const size_t chunk = BN_STAGING_BYTES / item_bytes;
    for (size_t off = 0, c = 0; off < n; off += chunk, c++) {
        const size_t len = chunk_len(n, off, chunk);
        void *pin = sg->pinned[c & 1];
        BN_CUDA_CHECK(cudaEventSynchronize(sg->done[c & 1])); /* its last transfer is done */
        fill(ctx, pin, off, len);
        BN_CUDA_CHECK(
            cudaMemcpyAsync((char *)dst + off * item_bytes, pin, len * item_bytes, cudaMemcpyHostToDevice, s));
        BN_CUDA_CHECK(cudaEventRecord(sg->done[c & 1], s));
    }
    return BN_OK;
}

bn_status bn_stage_down(bn_staging *sg, cudaStream_t s, const void *src, size_t n, size_t item_bytes,
                        bn_stage_drain drain, void *ctx, const char *what)
{
    const size_t chunk = BN_STAGING_BYTES / item_bytes, chunks = (n + chunk - 1) / chunk;
    for (size_t c = 0; c <= chunks; c++) {
        if (c < chunks) { /* queue chunk c's transfer, then drain chunk c - 1 */
            const size_t off = c * chunk;
            BN_TRY(bn_cuda_read_queued(sg->pinned[c & 1], (const char *)src + off * item_bytes,
                                       chunk_len(n, off, chunk) * item_bytes, what, s));
            BN_CUDA_CHECK(cudaEventRecord(sg->done[c & 1], s));
        }
        if (c == 0) continue;
        const size_t p = c - 1, off = p * chunk;
        BN_CUDA_CHECK(cudaEventSynchronize(sg->done[p & 1]));
        drain(ctx, sg->pinned[p & 1], off, chunk_len(n, off, chunk));
    }
    return BN_OK;
}
