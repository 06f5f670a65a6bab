/* Internal (CUDA sources only): kick, drift and reductions on device
 * particle arrays (leapfrog_cuda.cu). */
#ifndef BN_INTEGRATE_CUDA_H
#define BN_INTEGRATE_CUDA_H
#include "banyan.h"
#include "core/cuda_check.h"
#include "integrate/clock.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The stages of a step take either a host value or, with a clock c (device
 * memory, clock.h), what the clock says, so that queued steps need
 * nothing from the host; on an idle step (c->live 0) they do nothing. */
/* v += dt a (a from the float4 acc, G included); with c: dt = c->dt / 2. */
bn_status bn_gpu_kick(double *vel[3], const float4 *acc, int n, double dt, const bn_clock *c, cudaStream_t s);
/* Block time steps (timebins.h): closing and/or opening half kicks and
 * new bins of the particles with bin >= k->bin_min. out[0] (atomicMax)
 * receives the finest new (or, without opening, old) bin of the kicked
 * particles and out[1] (atomicAdd) their number: zero them first. With
 * c: k is c->kick (when c->kick_on) and out is &c->max_bin. */
bn_status bn_gpu_block_kick(double *vel[3], const float4 *acc, uint8_t *bin, int n, const bn_block_kick *k,
                            int *out, bn_clock *c, cudaStream_t s);
/* x += dt v; with c: dt = c->dt. */
bn_status bn_gpu_drift(double *pos[3], double *const vel[3], int n, double dt, const bn_clock *c, cudaStream_t s);
/* A stage of the clock alone (bn_clock_apply) in a one-thread kernel;
 * SHARED_PLAN with eta > 0 first reduces max |a| of acc into it. */
bn_status bn_gpu_clock_update(bn_clock *c, const bn_step_rule *r, int stage, const float4 *acc, int n,
                              cudaStream_t s);
/* *c = *value, queued (no wait, no copy from pageable memory). */
bn_status bn_gpu_clock_set(bn_clock *c, const bn_clock *value, cudaStream_t s);
/* Largest |a| (exact: a max is order-free); one scalar read back. */
bn_status bn_gpu_max_accel(const float4 *acc, int n, double *amax, cudaStream_t s);
/* The particles' part types for the per-component sums: type (device,
 * NULL: all PartType1) in uploaded order, read as type[orig[i]] for the
 * particle at i (the arrays are in key order), and the count of each. */
typedef struct bn_gpu_types {
    const uint8_t *type;
    const int *orig;
    const double *count; /* BN_PART_TYPES of them, host */
} bn_gpu_types;
/* Energies, momenta, angular momentum and centre of mass, and e->part[]
 * of each part type present (one more pass each), summed in double in a
 * fixed order (bit-identical run to run). */
bn_status bn_gpu_energies(double *const pos[3], double *const vel[3], const float *mass, const float4 *acc,
                          int have_pot, int n, const bn_gpu_types *types, bn_energies *e, cudaStream_t s);
#ifdef __cplusplus
}
#endif
#endif
