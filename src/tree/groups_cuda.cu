/*
 * Group boxes on the GPU, the mirror of the CPU stage (tree_groups.c):
 * the build (build_cuda.cu) has already listed the groups, in key order
 * (neighbouring warps walk neighbouring groups); this stage gives each the
 * bounding box of its bodies, once the float bodies exist (one warp per
 * group; exact min/max: deterministic), and for the acceleration
 * criterion the smallest old |a| in the group.
 */
#include "tree/tree_cuda.h"

namespace {
const int kThreads = 256;

/* One warp per group: box of its bodies and the smallest old |a|. */
__global__ void group_boxes(bn_gpu_tree t, const float4 *acc_old, float alpha)
{
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (g >= bn_gpu_tree_groups(&t)) return; /* whole warps leave together */
    const float4 *body = t.body;
    const int2 b = t.group_body[g];
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, amin = INFINITY;
    for (int i = b.x + lane; i < b.x + b.y; i += 32) {
        const float4 p = body[i];
        lo[0] = fminf(lo[0], p.x), hi[0] = fmaxf(hi[0], p.x);
        lo[1] = fminf(lo[1], p.y), hi[1] = fmaxf(hi[1], p.y);
        lo[2] = fminf(lo[2], p.z), hi[2] = fmaxf(hi[2], p.z);
        if (acc_old) {
            const float4 a = acc_old[i];
            amin = fminf(amin, sqrtf(a.x * a.x + a.y * a.y + a.z * a.z));
        }
    }
    for (int off = 16; off > 0; off /= 2) {
        for (int k = 0; k < 3; k++) {
            lo[k] = fminf(lo[k], __shfl_xor_sync(0xffffffffu, lo[k], off));
            hi[k] = fmaxf(hi[k], __shfl_xor_sync(0xffffffffu, hi[k], off));
        }
        amin = fminf(amin, __shfl_xor_sync(0xffffffffu, amin, off));
    }
    if (lane == 0) {
        t.group_box[g] = make_float4(0.5f * (lo[0] + hi[0]), 0.5f * (lo[1] + hi[1]), 0.5f * (lo[2] + hi[2]), 0.0f);
        t.group_half[g] = make_float4(0.5f * (hi[0] - lo[0]), 0.5f * (hi[1] - lo[1]), 0.5f * (hi[2] - lo[2]),
                              acc_old ? alpha * amin : 0.0f);
    }
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

extern "C" bn_status bn_gpu_active_groups(const bn_gpu_tree *t, const uint8_t *bin, const int *bin_min, int *groups,
                                          int *count, cudaStream_t s)
{
    BN_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(int), s));
    if (t->group_bound <= 0) return BN_OK;
    select_active<<<(t->group_bound + kThreads - 1) / kThreads, kThreads, 0, s>>>(*t, bin, bin_min, groups, count);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

extern "C" bn_status bn_gpu_groups(bn_gpu_tree_store *st, const float4 *acc_old, double alpha, cudaStream_t s)
{
    const bn_gpu_tree *t = &st->t;
    if (t->group_bound <= 0) return BN_OK;
    const int warps_per_block = kThreads / 32;
    group_boxes<<<(t->group_bound + warps_per_block - 1) / warps_per_block, kThreads, 0, s>>>(*t, acc_old,
                                                                                             (float)alpha);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
