/* Qualifiers that let one inline function compile for the CPU (C11) and
 * for CUDA (host and device). Shared per-interaction math uses them so
 * the two backends can never drift apart. */
#ifndef BN_HOSTDEVICE_H
#define BN_HOSTDEVICE_H
#ifdef __CUDACC__
#define BN_HD __host__ __device__ static __forceinline__
#else
#define BN_HD static inline
#endif
#endif
