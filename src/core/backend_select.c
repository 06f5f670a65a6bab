#include "core/backend.h"
#include "core/error.h"
#include "core/rng.h"

bn_status bn_backend_select(bn_backend want, int device, const bn_backend_ops **out)
{
    const bn_backend_ops *gpu = bn_cuda_backend_ops();
    (void)device;
    switch (want) {
    case BN_BACKEND_CPU:
        *out = &bn_cpu_backend_ops;
        return BN_OK;
    case BN_BACKEND_AUTO:
        *out = (gpu && bn_gpu_available()) ? gpu : &bn_cpu_backend_ops;
        return BN_OK;
    case BN_BACKEND_GPU:
        if (!gpu)
            return bn_fail(BN_ERR_UNSUPPORTED,
                           "backend 'gpu' requested but this build has no CUDA support (rebuild with nvcc on PATH)");
        if (!bn_gpu_available())
            return bn_fail(BN_ERR_DEVICE, "backend 'gpu' requested but no usable CUDA device was found");
        *out = gpu;
        return BN_OK;
    }
    return bn_fail(BN_ERR_ARGUMENT, "unknown backend %d", (int)want);
}

size_t bn_sample_target(uint64_t seed, size_t j, size_t s, size_t n)
{
    const double u = bn_rng_uniform(seed, j, 0); /* in (0, 1) */
    size_t i = (size_t)(((double)j + u) * (double)n / (double)s);
    const size_t run_end = (size_t)((double)(j + 1) * (double)n / (double)s);
    if (i >= run_end && run_end > 0) i = run_end - 1; /* rounding at the run's end */
    return i < n ? i : n - 1;
}
