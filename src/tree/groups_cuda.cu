/*
 * Group boxes on the GPU, the mirror of the CPU stage (tree_groups.c):
 * the build (build_cuda.cu) has already listed the groups, in key order
 * (neighbouring warps walk neighbouring groups); this stage gives each the
 * bounding box of its bodies, once the float bodies exist (one warp per
 * group; exact min/max: deterministic) and with it its frame, and for the acceleration
 * criterion the smallest old |a| in the group.
 */
#include "tree/refresh_guard.h"
#include "tree/tree_cuda.h"

namespace {
const int kThreads = 256;

/* Where the bodies come from: positions and masses (key order). */
struct body_source {
    const double *pos[3];
    const float *mass;
    const bn_gpu_frame *frame; /* ref, moved by the moments */
    float mass_scale;
};

/* Group g's bodies and box (one warp); with f (a refresh), its growth
 * term added to *acc. */
__device__ void group_box(const bn_gpu_tree &t, const body_source &src, const float4 *acc_old, float alpha,
                          const bn_gpu_frame *f, int g, int lane, unsigned long long *acc)
{
    const int2 b = t.group_body[g];
    const double ref[3] = {src.frame->ref[0], src.frame->ref[1], src.frame->ref[2]};
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    float amin = INFINITY;
    for (int i = b.x + lane; i < b.x + b.y; i += 32) {
        float4 p, q;
        bn_gpu_body(src.pos, src.mass, ref, t.len_scale, src.mass_scale, i, &p, &q);
        t.body[i] = p;
        t.body_lo[i] = q;
        const double x[3] = {(double)p.x + q.x, (double)p.y + q.y, (double)p.z + q.z};
        for (int k = 0; k < 3; k++) lo[k] = fmin(lo[k], x[k]), hi[k] = fmax(hi[k], x[k]);
        if (acc_old) {
            const float4 a = acc_old[i];
            amin = fminf(amin, sqrtf(a.x * a.x + a.y * a.y + a.z * a.z));
        }
    }
    for (int off = 16; off > 0; off /= 2) {
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], __shfl_xor_sync(0xffffffffu, lo[k], off));
            hi[k] = fmax(hi[k], __shfl_xor_sync(0xffffffffu, hi[k], off));
        }
        amin = fminf(amin, __shfl_xor_sync(0xffffffffu, amin, off));
    }
    if (lane == 0) {
        float c[3], h[3];
        for (int k = 0; k < 3; k++) {
            c[k] = (float)(0.5 * (lo[k] + hi[k]));
            h[k] = __double2float_ru(fmax(hi[k] - c[k], c[k] - lo[k]));
        }
        t.group_box[g] = make_float4(c[0], c[1], c[2], 0.0f);
        t.group_half[g] = make_float4(h[0], h[1], h[2], acc_old ? alpha * amin : 0.0f);
        if (f) { /* the exact half width, as the CPU's; half its smallest key cell at the build */
            double size = 0;
            for (int k = 0; k < 3; k++) size = fmax(size, 0.5 * (hi[k] - lo[k]));
            const double cell = ldexp(f->tree_box_size * t.len_scale, -(t.group_level[g] + 1));
            atomicAdd(acc, bn_refresh_growth_term(size, cell, b.y));
        }
    }
}

/* One warp per group: its bodies (every body is in one group), the box
 * of their hi + lo (in double: exact) and the smallest old |a|. Making
 * the bodies here spares a pass that wrote them and this one reading
 * them back. The box's centre, rounded to a float, is the
 * group's frame (tree_gpu.h); its half sizes are rounded up from that
 * centre, so the float box holds every body. A refresh (growth not NULL) sums
 * its groups' growth (tree/refresh_guard.h): one atomic per block. */
__global__ void group_boxes(bn_gpu_tree t, body_source src, const float4 *acc_old, float alpha,
                            const bn_gpu_frame *f, unsigned long long *growth)
{
    __shared__ unsigned long long block_growth;
    if (growth && threadIdx.x == 0) block_growth = 0;
    if (growth) __syncthreads();
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (g < bn_gpu_tree_groups(&t)) group_box(t, src, acc_old, alpha, growth ? f : NULL, g, lane, &block_growth);
    if (!growth) return;
    __syncthreads();
    if (threadIdx.x == 0 && block_growth) atomicAdd(growth, block_growth);
}

/* One thread per group of a build that fits: the levels its first and
 * last bodies' keys share (every body between lies in that cell). */
__global__ void group_levels(bn_gpu_tree t, const uint64_t *keys, const bn_gpu_frame *f)
{
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (!f->fits || g >= bn_gpu_tree_groups(&t)) return;
    const int2 b = t.group_body[g];
    t.group_level[g] = (unsigned char)(b.y > 0 ? bn_key_common_levels(keys[b.x], keys[b.x + b.y - 1]) : 0);
}

/* One thread per group: is any of its bodies active? Each warp appends
 * its active groups in order, with one integer atomic for the warp's
 * place in the list: the list's order between warps varies from run to
 * run, the forces do not (groups are walked independently). */
__global__ void select_active(bn_gpu_tree t, const uint8_t *bin, const int *first_bin, int *list, int *count)
{
    const int g = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    const int bin_min = *first_bin;
    bool active = false;
    if (g < bn_gpu_tree_groups(&t)) {
        const int2 b = t.group_body[g];
        for (int i = b.x; i < b.x + b.y && !active; i++) active = bin[i] >= bin_min;
    }
    const unsigned mask = __ballot_sync(0xffffffffu, active);
    int base = 0;
    if (lane == 0 && mask) base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(0xffffffffu, base, 0);
    if (active) list[base + __popc(mask & ((1u << lane) - 1u))] = g;
}

} // namespace

extern "C" bn_status bn_gpu_group_levels(bn_gpu_tree_store *st, const uint64_t *keys, cudaStream_t s)
{
    if (st->t.group_bound <= 0) return BN_OK;
    group_levels<<<(st->t.group_bound + kThreads - 1) / kThreads, kThreads, 0, s>>>(st->t, keys, st->frame);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_active_groups(const bn_gpu_tree *t, const uint8_t *bin, const int *bin_min, int *groups,
                                          int *count, cudaStream_t s)
{
    BN_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(int), s));
    if (t->group_bound <= 0) return BN_OK;
    select_active<<<(t->group_bound + kThreads - 1) / kThreads, kThreads, 0, s>>>(*t, bin, bin_min, groups, count);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_groups(bn_gpu_tree_store *st, double *const pos[3], const float *mass,
                                   const float4 *acc_old, double alpha, unsigned long long *growth, cudaStream_t s)
{
    const bn_gpu_tree *t = &st->t;
    if (growth) BN_CUDA_CHECK(cudaMemsetAsync(growth, 0, sizeof *growth, s));
    if (t->group_bound <= 0) return BN_OK;
    const int warps_per_block = kThreads / 32;
    const body_source src = {{pos[0], pos[1], pos[2]}, mass, st->frame, (float)t->mass_scale};
    group_boxes<<<(t->group_bound + warps_per_block - 1) / warps_per_block, kThreads, 0, s>>>(
        *t, src, acc_old, (float)alpha, st->frame, growth);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
