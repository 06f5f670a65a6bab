/*
 * Internal (CUDA sources only): checked CUDA runtime calls and tallied
 * device allocations.
 *
 * BN_CUDA_CHECK(expr) turns a failed runtime call into a bn_status whose
 * message names the expression, file and line (out of device memory ->
 * BN_ERR_DEVICE_NOMEM). Every device buffer goes through bn_cuda_alloc /
 * bn_cuda_free: stream-ordered (cudaMallocAsync from the device's pool,
 * so transient buffers cost no device synchronisation) and counted, so
 * that bn_force_stats.device_bytes_peak is the real peak of live buffers
 * and an allocation failure can say how many particles would fit.
 */
#ifndef BN_CUDA_CHECK_H
#define BN_CUDA_CHECK_H
#include <cuda_runtime.h>
#include <stddef.h>
#include "banyan.h"

#ifdef __cplusplus
extern "C" {
#endif
#include "core/error.h"

/* Record a failed runtime call (expression, file, line) and return its status. */
bn_status bn_cuda_fail(cudaError_t err, const char *expr, const char *file, int line);

#define BN_CUDA_CHECK(expr)                                                          \
    do {                                                                             \
        cudaError_t bn_ce_ = (expr);                                                 \
        if (bn_ce_ != cudaSuccess) return bn_cuda_fail(bn_ce_, #expr, __FILE__, __LINE__); \
    } while (0)

/* After a kernel launch: launch-configuration errors and earlier faults. */
#define BN_CUDA_LAUNCH_CHECK() BN_CUDA_CHECK(cudaGetLastError())

/* Tallied stream-ordered allocation; *ptr = NULL when bytes == 0. */
bn_status bn_cuda_alloc(void **ptr, size_t bytes, const char *what, cudaStream_t s);
/* Free a pointer from bn_cuda_alloc (NULL is fine). */
void bn_cuda_free(void *ptr, cudaStream_t s);
/* The bytes ptr was allocated with (bn_cuda_alloc; 0 for NULL or a
 * pointer it did not make): an array's room, which may exceed its use. */
size_t bn_cuda_alloc_bytes(const void *ptr);
/* Room for a particle array of n that may grow (a migration's arrivals,
 * migrate_cuda.cu): n and a 1/32 margin, so that a rank receiving a few
 * more crossers than it sends does not copy its arrays at every step
 * (growing one costs new device memory: 126 ms at 2^25 on an H200,
 * session 24); 0 for none. Every per-particle array is made so. */
static inline size_t bn_cuda_particle_room(size_t n) { return n ? n + n / 32 + 16 : 0; }
/* Bytes now live, and the most live at once since the last reset. */
size_t bn_cuda_bytes_in_use(void);
size_t bn_cuda_bytes_peak(void);
void bn_cuda_reset_peak(void);
/* Device bytes one particle needs at the peak of an evaluation, used to
 * say how many particles would fit when memory runs out (the backend
 * sets it from its measured peak; an estimate before the first one). */
void bn_cuda_set_bytes_per_particle(double bytes);
/* Every copy to the host goes through here: queued on s, waited for,
 * and counted, so that a test can show what a queue of steps reads (a
 * batch of steps: the clock and the tree's frame, once, at its end). */
bn_status bn_cuda_read(void *dst, const void *src, size_t bytes, const char *what, cudaStream_t s);
/* The same copy (dst pinned), queued and counted but not waited for: the
 * next wait on s covers it (several small reads, one wait). */
bn_status bn_cuda_read_queued(void *dst, const void *src, size_t bytes, const char *what, cudaStream_t s);
/* Copies to the host so far (bn_cuda_read). */
long bn_cuda_reads(void);
/* Tests: make allocations fail once more than `bytes` would be live
 * (0 = no limit), to exercise the out-of-memory path. */
void bn_cuda_set_alloc_limit(size_t bytes);

#ifdef __cplusplus
}

/* n elements of T, tallied (bn_cuda_alloc); NULL when n == 0 (nothing
 * reads a buffer of no elements). The one typed form for every CUDA
 * source. */
template <typename T>
bn_status bn_cuda_dev_alloc(T **p, size_t n, const char *what, cudaStream_t s)
{
    return bn_cuda_alloc((void **)p, n * sizeof(T), what, s);
}
#endif
#endif
