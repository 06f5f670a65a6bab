/* Tallied device allocations and the CUDA error messages (cuda_check.h). */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include "core/cuda_check.h"

namespace {
std::mutex g_lock;
/* Live allocations (a few dozen at most): a plain array, searched
 * linearly. (No std containers: their template code would be exported
 * from the shared library, which must export bn_ symbols only.) */
struct live_alloc {
    void *ptr;
    size_t bytes;
};
live_alloc *g_live = NULL;
size_t g_n_live = 0, g_cap_live = 0;
size_t g_in_use = 0, g_peak = 0, g_limit = 0;
long g_reads = 0; /* bn_cuda_read calls */
double g_bytes_per_particle = 150.0;        /* the issue's budget until measured */
bool g_pool_ready = false;

bool remember(void *ptr, size_t bytes)
{
    if (g_n_live == g_cap_live) {
        const size_t cap = g_cap_live ? 2 * g_cap_live : 64;
        live_alloc *grown = (live_alloc *)realloc(g_live, cap * sizeof *grown);
        if (!grown) return false;
        g_live = grown;
        g_cap_live = cap;
    }
    g_live[g_n_live++] = live_alloc{ptr, bytes};
    return true;
}

/* Forget ptr; returns its size (0 if unknown). */
size_t forget(void *ptr)
{
    for (size_t i = 0; i < g_n_live; i++)
        if (g_live[i].ptr == ptr) {
            const size_t bytes = g_live[i].bytes;
            g_live[i] = g_live[--g_n_live];
            return bytes;
        }
    return 0;
}

/* Keep freed memory in the pool: transient buffers of one evaluation are
 * reused by the next without going back to the driver. */
void prepare_pool(void)
{
    if (g_pool_ready) return;
    int dev = 0;
    cudaMemPool_t pool;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
        uint64_t keep = ~(uint64_t)0;
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    g_pool_ready = true;
}

/* The pool keeps what was freed, in blocks of the sizes freed: a larger
 * request can fail while enough is free in smaller blocks. Give the
 * pool's unused memory back to the driver (after the stream's frees have
 * happened) so that the request can be mapped from it. Only on the
 * failure path: it waits for the stream. */
cudaError_t retry_after_trim(void **ptr, size_t bytes, cudaStream_t s)
{
    (void)cudaGetLastError();
    int dev = 0;
    cudaMemPool_t pool;
    if (cudaStreamSynchronize(s) != cudaSuccess || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess || cudaMemPoolTrimTo(pool, 0) != cudaSuccess)
        return cudaErrorMemoryAllocation;
    return cudaMallocAsync(ptr, bytes, s);
}

bn_status out_of_memory(const char *what, size_t bytes, const char *where)
{
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    (void)cudaGetLastError(); /* out of memory is not sticky: clear it */
    const double fit = (double)total_b * 0.95 / g_bytes_per_particle;
    return bn_fail(BN_ERR_DEVICE_NOMEM,
                   "out of GPU memory allocating %s (%.1f MiB)%s%s: %.1f MiB in use by banyan, %.1f of %.1f MiB "
                   "free on the device; at about %.0f bytes per particle this GPU holds at most about %.0f "
                   "particles",
                   what, (double)bytes / 1048576.0, where ? " at " : "", where ? where : "",
                   (double)g_in_use / 1048576.0, (double)free_b / 1048576.0, (double)total_b / 1048576.0,
                   g_bytes_per_particle, fit);
}
} // namespace

extern "C" bn_status bn_cuda_fail(cudaError_t err, const char *expr, const char *file, int line)
{
    char where[512];
    snprintf(where, sizeof where, "%s (%s:%d)", expr, file, line);
    if (err == cudaErrorMemoryAllocation) {
        std::lock_guard<std::mutex> hold(g_lock);
        return out_of_memory("a device buffer", 0, where);
    }
    (void)cudaGetLastError();
    return bn_fail(BN_ERR_DEVICE, "CUDA error '%s' (%s) in %s", cudaGetErrorString(err), cudaGetErrorName(err),
                   where);
}

extern "C" bn_status bn_cuda_alloc(void **ptr, size_t bytes, const char *what, cudaStream_t s)
{
    *ptr = NULL;
    if (bytes == 0) return BN_OK;
    std::lock_guard<std::mutex> hold(g_lock);
    prepare_pool();
    if (g_limit && g_in_use + bytes > g_limit) return out_of_memory(what, bytes, "(test limit)");
    cudaError_t err = cudaMallocAsync(ptr, bytes, s);
    if (err == cudaErrorMemoryAllocation) err = retry_after_trim(ptr, bytes, s);
    if (err == cudaErrorMemoryAllocation) {
        *ptr = NULL;
        return out_of_memory(what, bytes, NULL);
    }
    if (err != cudaSuccess) {
        *ptr = NULL;
        (void)cudaGetLastError();
        return bn_fail(BN_ERR_DEVICE, "CUDA error '%s' allocating %s (%zu bytes)", cudaGetErrorString(err), what,
                       bytes);
    }
    if (!remember(*ptr, bytes)) {
        cudaFreeAsync(*ptr, s);
        *ptr = NULL;
        return bn_fail(BN_ERR_NOMEM, "host memory for the device allocation table (%s)", what);
    }
    g_in_use += bytes;
    if (g_in_use > g_peak) g_peak = g_in_use;
    return BN_OK;
}

extern "C" void bn_cuda_free(void *ptr, cudaStream_t s)
{
    if (!ptr) return;
    std::lock_guard<std::mutex> hold(g_lock);
    g_in_use -= forget(ptr);
    cudaFreeAsync(ptr, s);
}

extern "C" size_t bn_cuda_alloc_bytes(const void *ptr)
{
    if (!ptr) return 0;
    std::lock_guard<std::mutex> hold(g_lock);
    for (size_t i = 0; i < g_n_live; i++)
        if (g_live[i].ptr == ptr) return g_live[i].bytes;
    return 0;
}

extern "C" size_t bn_cuda_bytes_in_use(void)
{
    std::lock_guard<std::mutex> hold(g_lock);
    return g_in_use;
}

extern "C" size_t bn_cuda_bytes_peak(void)
{
    std::lock_guard<std::mutex> hold(g_lock);
    return g_peak;
}

extern "C" void bn_cuda_reset_peak(void)
{
    std::lock_guard<std::mutex> hold(g_lock);
    g_peak = g_in_use;
}

extern "C" void bn_cuda_set_bytes_per_particle(double bytes)
{
    std::lock_guard<std::mutex> hold(g_lock);
    if (bytes > 0) g_bytes_per_particle = bytes;
}

extern "C" bn_status bn_cuda_read_queued(void *dst, const void *src, size_t bytes, const char *what, cudaStream_t s)
{
    {
        std::lock_guard<std::mutex> hold(g_lock);
        g_reads++;
    }
    const cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s);
    return err == cudaSuccess ? BN_OK : bn_cuda_fail(err, what, __FILE__, __LINE__);
}

extern "C" bn_status bn_cuda_read(void *dst, const void *src, size_t bytes, const char *what, cudaStream_t s)
{
    BN_TRY(bn_cuda_read_queued(dst, src, bytes, what, s));
    const cudaError_t err = cudaStreamSynchronize(s);
    return err == cudaSuccess ? BN_OK : bn_cuda_fail(err, what, __FILE__, __LINE__);
}

extern "C" long bn_cuda_reads(void)
{
    std::lock_guard<std::mutex> hold(g_lock);
    return g_reads;
}

extern "C" void bn_cuda_set_alloc_limit(size_t bytes)
{
    std::lock_guard<std::mutex> hold(g_lock);
    g_limit = bytes;
}
