/*
 * Kick (shared and block steps), drift, the largest acceleration and the
 * energies on the device:
 * a step of the simulation moves no particle data to the host. The
 * energy sums are per-block partial sums in a fixed tree order, then one
 * block adds the partials in order: deterministic, no atomics.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>
#include "integrate/integrate_cuda.h"

namespace {
const int kThreads = 256;
const int kMaxBlocks = 1024;
const int kSums = 12; /* kinetic, potential, p[3], L[3], m x[3], mass */

int blocks_for(int n)
{
    const int b = (n + kThreads - 1) / kThreads;
    return b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b);
}

/* Explicit round-to-nearest multiply and add (no fused multiply-add), so
 * that kick and drift round exactly as the CPU backend's C code does. */
__device__ double axpy(double a, double x, double y) { return __dadd_rn(__dmul_rn(a, x), y); }

/* With a clock: half of its step, nothing when the step is idle. */
__global__ void kick_kernel(double *vx, double *vy, double *vz, const float4 *acc, int n, double dt,
                            const bn_clock *c)
{
    if (c) {
        if (!c->live) return;
        dt = 0.5 * c->dt;
    }
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float4 a = acc[i];
    vx[i] = axpy(dt, (double)a.x, vx[i]);
    vy[i] = axpy(dt, (double)a.y, vy[i]);
    vz[i] = axpy(dt, (double)a.z, vz[i]);
}

/* The CPU's cpu_block_kick, particle for particle: two separate
 * round-to-nearest additions (close, then open) like its C code. Returns
 * the particle's bin after the kick. */
__device__ int block_kick_one(double *vx, double *vy, double *vz, const float4 *acc, uint8_t *bin, int i,
                              const bn_block_kick &k)
{
    const float4 a = acc[i];
    const double ax = a.x, ay = a.y, az = a.z;
    int b = bin[i];
    if (k.close) {
        const double h = bn_time_bin_half_step(b, k.n_bins, k.tick);
        vx[i] = axpy(h, ax, vx[i]);
        vy[i] = axpy(h, ay, vy[i]);
        vz[i] = axpy(h, az, vz[i]);
    }
    if (k.open) {
        const double a2 = __dadd_rn(__dadd_rn(__dmul_rn(ax, ax), __dmul_rn(ay, ay)), __dmul_rn(az, az));
        b = bn_time_bin(bn_time_step_wanted(&k, a2, (double)a.w), k.tick, k.n_bins, k.bin_min);
        bin[i] = (uint8_t)b;
        const double h = bn_time_bin_half_step(b, k.n_bins, k.tick);
        vx[i] = axpy(h, ax, vx[i]);
        vy[i] = axpy(h, ay, vy[i]);
        vz[i] = axpy(h, az, vz[i]);
    }
    return b;
}

/* Every thread stays to the warp reductions: one pair of integer atomics
 * per warp, not per particle (millions on one address would serialise).
 * With a clock: its kick, when it has one, and its reductions. */
__global__ void block_kick_kernel(double *vx, double *vy, double *vz, const float4 *acc, uint8_t *bin, int n,
                                  bn_block_kick k, int *out, bn_clock *c)
{
    if (c) {
        if (!c->kick_on) return;
        k = c->kick;
        out = &c->max_bin;
    }
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool kicked = i < n && bin[i] >= k.bin_min;
    const int b = kicked ? block_kick_one(vx, vy, vz, acc, bin, i, k) : 0;
    const unsigned count = __reduce_add_sync(0xffffffffu, kicked ? 1u : 0u);
    const unsigned bmax = __reduce_max_sync(0xffffffffu, (unsigned)b);
    if ((threadIdx.x & 31) == 0 && count) {
        atomicMax(&out[0], (int)bmax);
        atomicAdd(&out[1], (int)count);
    }
}

__global__ void drift_kernel(double *x, double *y, double *z, const double *vx, const double *vy, const double *vz,
                             int n, double dt, const bn_clock *c)
{
    if (c) {
        if (!c->live) return;
        dt = c->dt;
    }
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    x[i] = axpy(dt, vx[i], x[i]);
    y[i] = axpy(dt, vy[i], y[i]);
    z[i] = axpy(dt, vz[i], z[i]);
}

/* |a|^2 >= 0, so its float bits order like unsigned integers. */
__global__ void max_accel_kernel(const float4 *acc, int n, unsigned int *out)
{
    __shared__ float sh[kThreads];
    float m = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float4 a = acc[i];
        m = fmaxf(m, a.x * a.x + a.y * a.y + a.z * a.z);
    }
    sh[threadIdx.x] = m;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicMax(out, __float_as_uint(sh[0]));
}

struct energy_args {
    const double *x, *y, *z, *vx, *vy, *vz;
    const float *mass;
    const float4 *acc;
    int have_pot, n;
    const uint8_t *type; /* with want >= 0: sum only the particles i */
    const int *orig;     /* with type[orig[i]] == want               */
    int want;
    double *partial; /* kSums per block */
};

__global__ void energy_partials(energy_args a)
{
    __shared__ double sh[kSums][kThreads];
    double v[kSums] = {};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += gridDim.x * blockDim.x) {
        if (a.want >= 0 && a.type[a.orig[i]] != a.want) continue;
        const double m = a.mass[i], x = a.x[i], y = a.y[i], z = a.z[i];
        const double ux = a.vx[i], uy = a.vy[i], uz = a.vz[i];
        v[0] += 0.5 * m * (ux * ux + uy * uy + uz * uz);
        if (a.have_pot) v[1] += 0.5 * m * (double)a.acc[i].w;
        v[2] += m * ux, v[3] += m * uy, v[4] += m * uz;
        v[5] += m * (y * uz - z * uy), v[6] += m * (z * ux - x * uz), v[7] += m * (x * uy - y * ux);
        v[8] += m * x, v[9] += m * y, v[10] += m * z;
        v[11] += m;
    }
    for (int k = 0; k < kSums; k++) sh[k][threadIdx.x] = v[k];
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            for (int k = 0; k < kSums; k++) sh[k][threadIdx.x] += sh[k][threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x < kSums) a.partial[blockIdx.x * kSums + threadIdx.x] = sh[threadIdx.x][0];
}

/* The clock's own stages (clock.h), with the shared plan's max |a| from
 * the float bits the reduction left. */
__global__ void clock_kernel(bn_clock *c, bn_step_rule r, int stage)
{
    if (stage == BN_STAGE_SHARED_PLAN) c->amax = r.eta > 0 ? sqrt((double)__uint_as_float(c->amax2_bits)) : 0.0;
    bn_clock_apply(c, &r, stage);
}

__global__ void clock_set_kernel(bn_clock *c, bn_clock value) { *c = value; }

/* One thread per sum adds the block partials in block order. */
__global__ void energy_total(const double *partial, int blocks, double *total)
{
    const int k = threadIdx.x;
    if (k >= kSums) return;
    double s = 0;
    for (int b = 0; b < blocks; b++) s += partial[b * kSums + k];
    total[k] = s;
}
} // namespace

static_assert(offsetof(bn_clock, n_active) == offsetof(bn_clock, max_bin) + sizeof(int),
              "the block kick adds into max_bin and n_active as out[0] and out[1]");

extern "C" bn_status bn_gpu_kick(double *vel[3], const float4 *acc, int n, double dt, const bn_clock *c,
                                 cudaStream_t s)
{
    if (n <= 0) return BN_OK;
    kick_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, s>>>(vel[0], vel[1], vel[2], acc, n, dt, c);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_block_kick(double *vel[3], const float4 *acc, uint8_t *bin, int n,
                                       const bn_block_kick *k, int *out, bn_clock *c, cudaStream_t s)
{
    if (n <= 0) return BN_OK;
    bn_block_kick none;
    memset(&none, 0, sizeof none);
    block_kick_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, s>>>(vel[0], vel[1], vel[2], acc, bin, n,
                                                                         k ? *k : none, out, c);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_drift(double *pos[3], double *const vel[3], int n, double dt, const bn_clock *c,
                                  cudaStream_t s)
{
    if (n <= 0) return BN_OK;
    drift_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, s>>>(pos[0], pos[1], pos[2], vel[0], vel[1],
                                                                     vel[2], n, dt, c);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

/* *out = the float bits of max |a|^2 over acc, queued (out zeroed here). */
static bn_status queue_max_accel(const float4 *acc, int n, unsigned int *out, cudaStream_t s)
{
    BN_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof *out, s));
    if (n > 0) max_accel_kernel<<<blocks_for(n), kThreads, 0, s>>>(acc, n, out);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_max_accel(const float4 *acc, int n, double *amax, cudaStream_t s)
{
    unsigned int *d = NULL, h = 0;
    BN_TRY(bn_cuda_alloc((void **)&d, sizeof *d, "max |a| reduction", s));
    bn_status r = queue_max_accel(acc, n, d, s);
    if (r == BN_OK) r = bn_cuda_read(&h, d, sizeof h, "max |a|", s);
    bn_cuda_free(d, s);
    float a2;
    memcpy(&a2, &h, sizeof a2);
    *amax = sqrt((double)a2);
    return r;
}

extern "C" bn_status bn_gpu_clock_update(bn_clock *c, const bn_step_rule *r, int stage, const float4 *acc, int n,
                                         cudaStream_t s)
{
    if (stage == BN_STAGE_SHARED_PLAN && r->eta > 0) BN_TRY(queue_max_accel(acc, n, &c->amax2_bits, s));
    clock_kernel<<<1, 1, 0, s>>>(c, *r, stage);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_clock_set(bn_clock *c, const bn_clock *value, cudaStream_t s)
{
    clock_set_kernel<<<1, 1, 0, s>>>(c, *value);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

/* The kSums sums of a's particles into h: block partials, then their
 * total in block order. */
static bn_status energy_sums(const energy_args &a, int blocks, double h[kSums], cudaStream_t s)
{
    energy_partials<<<blocks, kThreads, 0, s>>>(a);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) {
        energy_total<<<1, 32, 0, s>>>(a.partial, blocks, a.partial + (size_t)blocks * kSums);
        err = cudaGetLastError();
    }
    BN_TRY(err == cudaSuccess ? BN_OK : bn_cuda_fail(err, "energy reduction", __FILE__, __LINE__));
    return bn_cuda_read(h, a.partial + (size_t)blocks * kSums, kSums * sizeof(double), "energy sums", s);
}

/* e->part[] from one pass per part type present; a set without types is
 * all PartType1, whose share is the totals' h. */
static bn_status part_sums(energy_args a, int blocks, const bn_gpu_types *t, const double *h_all, bn_energies *e,
                           cudaStream_t s)
{
    for (int k = 0; k < BN_PART_TYPES; k++) {
        if (!(t->count[k] > 0)) continue;
        double h[kSums];
        if (t->type) {
            a.type = t->type, a.orig = t->orig, a.want = k;
            BN_TRY(energy_sums(a, blocks, h, s));
        } else memcpy(h, h_all, sizeof h);
        bn_component_energies *c = &e->part[k];
        c->count = t->count[k], c->mass = h[11], c->kinetic = h[0], c->potential = h[1];
        for (int d = 0; d < 3; d++) c->angular_momentum[d] = h[5 + d];
    }
    return BN_OK;
}

extern "C" bn_status bn_gpu_energies(double *const pos[3], double *const vel[3], const float *mass,
                                     const float4 *acc, int have_pot, int n, const bn_gpu_types *types,
                                     bn_energies *e, cudaStream_t s)
{
    const int blocks = blocks_for(n);
    double *buf = NULL, h[kSums];
    BN_TRY(bn_cuda_alloc((void **)&buf, (size_t)(blocks + 1) * kSums * sizeof(double), "energy sums", s));
    energy_args a = {pos[0], pos[1], pos[2], vel[0], vel[1], vel[2], mass, acc, have_pot, n, NULL, NULL, -1, buf};
    memset(e, 0, sizeof *e);
    bn_status r = energy_sums(a, blocks, h, s);
    if (r == BN_OK) r = part_sums(a, blocks, types, h, e, s);
    bn_cuda_free(buf, s);
    BN_TRY(r);
    e->kinetic = h[0];
    e->potential = h[1];
    for (int k = 0; k < 3; k++) {
        e->momentum[k] = h[2 + k];
        e->angular_momentum[k] = h[5 + k];
        e->com[k] = h[11] > 0 ? h[8 + k] / h[11] : 0.0;
    }
    e->total = e->kinetic + e->potential;
    return BN_OK;
}
