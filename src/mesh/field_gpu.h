/* Internal (CUDA sources only): the field solver's GPU state, shared by
 * the tree (field_cuda.cu) and the FFT solver (fft_cuda.cu). */
#ifndef BN_FIELD_GPU_H
#define BN_FIELD_GPU_H
#include <cuda_runtime.h>
#include "core/staging_cuda.h"
#include "tree/tree_cuda.h"

/* What the FFT solver keeps between calls on one grid: its plans and the
 * kernels' spectra (fft_cuda.cu). */
struct bn_fft_cache {
    int n[3], near;
    double h[3];
    void *spectra;         /* the 4 kernels' transforms (cufftDoubleComplex) */
    int fwd, inv;          /* cuFFT plans (cufftHandle)                   */
    int valid;
};

struct bn_field_gpu {
    int device;
    cudaStream_t s;        /* every transfer and kernel of the solver      */
    bn_gpu_tree_store tree;
    bn_staging stage;      /* between pageable host arrays and the device */
    struct bn_fft_cache fft;
};

#ifdef __cplusplus
extern "C" {
#endif
#include "banyan.h"
/* n doubles between host and device through the pinned staging buffers,
 * pipelined (field_cuda.cu). */
bn_status bn_field_stage_copy(struct bn_field_gpu *fg, double *dst, const double *src, size_t n, int to_device);
/* Free the FFT cache (fft_cuda.cu). */
void bn_fft_cache_free(struct bn_field_gpu *fg);
#ifdef __cplusplus
}
#endif
#endif
