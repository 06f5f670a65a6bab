/*
 * The error target's reference on the GPU (sample_cuda.cu): the forces on
 * a sample of targets by double-precision direct summation over every
 * particle (positions in double, masses as the device keeps them: float,
 * exact to 2^-24 of the user's), beside the forces the last evaluation
 * gave them. CUDA sources only.
 */
#ifndef BN_SAMPLE_GPU_H
#define BN_SAMPLE_GPU_H
#include <cuda_runtime.h>
#include "banyan.h"

#ifdef __cplusplus
extern "C" {
#endif
/* targets (device, n_targets indices into the arrays); out (device,
 * 8 n_targets doubles): per target G (ax, ay, az, phi) by direct
 * summation (the target itself left out), then acc[target]. */
bn_status bn_gpu_sample_direct(double *const pos[3], const float *mass, int n, const int *targets, int n_targets,
                               double G, double eps, const float4 *acc, double *out, cudaStream_t s);
#ifdef __cplusplus
}
#endif
#endif
