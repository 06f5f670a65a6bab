/* Internal (CUDA sources only): the field solver's GPU state, shared by
 * the tree (field_cuda.cu) and the FFT solver (fft_cuda.cu). */
#ifndef BN_FIELD_GPU_H
#define BN_FIELD_GPU_H
#include <cuda_runtime.h>
#include "tree/tree_cuda.h"

#define FIELD_PINNED (32u << 20) /* bytes of each of the two staging buffers */

struct bn_field_gpu {
    int device;
    cudaStream_t s;
    bn_gpu_tree_store tree;
    void *pinned[2];       /* staging between pageable host arrays and the device */
    cudaEvent_t staged[2]; /* a staging buffer's last transfer                      */
};
#endif
