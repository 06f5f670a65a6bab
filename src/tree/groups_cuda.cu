/*
 * Walk groups on the GPU, the mirror of the CPU stage (tree_groups.c): a
 * count-scan-write pass over the nodes (one thread per node). A node with
 * more than group_size bodies emits those of its children that have at
 * most group_size; a leaf with more than group_size bodies (coincident
 * keys) emits itself cut in chunks of group_size; a root with at most
 * group_size bodies emits itself. Every body lands in exactly one group.
 * The groups are then put in key order (sorted by first body, so that
 * neighbouring warps walk neighbouring groups) and given the bounding box
 * of their bodies (one warp per group; exact min/max: deterministic).
 */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include "tree/tree_cuda.h"

namespace {
const int kThreads = 256;

/* Groups node i emits; written from out[] when out != NULL. */
__device__ int emit_groups(const int2 *node_body, const int2 *node_child, int i, int gs, int2 *out)
{
    const int2 b = node_body[i], ch = node_child[i];
    if (b.y <= gs) {
        if (i != 0) return 0; /* emitted by its parent */
        if (out) out[0] = b;
        return 1;
    }
    int c = 0;
    if (ch.y == 0) {
        for (int k = 0; k < b.y; k += gs, c++)
            if (out) out[c] = make_int2(b.x + k, b.y - k < gs ? b.y - k : gs);
        return c;
    }
    for (int j = ch.x; j < ch.x + ch.y; j++) {
        const int2 cb = node_body[j];
        if (cb.y > gs) continue;
        if (out) out[c] = cb;
        c++;
    }
    return c;
}

__global__ void count_groups(const int2 *node_body, const int2 *node_child, int n_nodes, int gs, int *count)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_nodes) count[i] = emit_groups(node_body, node_child, i, gs, NULL);
}

__global__ void write_groups(const int2 *node_body, const int2 *node_child, int n_nodes, int gs,
                             const int *offset_excl, int *first, int *count)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_nodes) return;
    int2 g[8];
    const int2 b = node_body[i], ch = node_child[i];
    if (b.y > gs && ch.y == 0) { /* a big leaf: chunks, any number */
        for (int k = 0, o = offset_excl[i]; k < b.y; k += gs, o++) {
            first[o] = b.x + k;
            count[o] = b.y - k < gs ? b.y - k : gs;
        }
        return;
    }
    const int c = emit_groups(node_body, node_child, i, gs, g); /* at most 8 */
    for (int k = 0; k < c; k++) {
        first[offset_excl[i] + k] = g[k].x;
        count[offset_excl[i] + k] = g[k].y;
    }
}

/* One warp per group: box of its bodies and the smallest old |a|. */
__global__ void group_boxes(const int *first, const int *count, int n_groups, const float4 *body,
                            const float4 *acc_old, float alpha, int2 *group_body, float4 *box, float4 *half)
{
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (g >= n_groups) return; /* whole warps leave together */
    const int2 b = make_int2(first[g], count[g]);
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
        group_body[g] = b;
        box[g] = make_float4(0.5f * (lo[0] + hi[0]), 0.5f * (lo[1] + hi[1]), 0.5f * (lo[2] + hi[2]), 0.0f);
        half[g] = make_float4(0.5f * (hi[0] - lo[0]), 0.5f * (hi[1] - lo[1]), 0.5f * (hi[2] - lo[2]),
                              acc_old ? alpha * amin : 0.0f);
    }
}

int bits_for(int n)
{
    int b = 1;
    while (b < 31 && (1 << b) <= n) b++;
    return b;
}

bn_status ensure_groups(bn_gpu_tree_store *st, int n, cudaStream_t s)
{
    if (n <= st->group_capacity) return BN_OK;
    bn_gpu_tree *t = &st->t;
    bn_cuda_free(t->group_body, s);
    bn_cuda_free(t->group_box, s);
    bn_cuda_free(t->group_half, s);
    t->group_body = NULL;
    t->group_box = t->group_half = NULL;
    st->group_capacity = 0;
    const int cap = n + n / 4 + 64;
    BN_TRY(bn_cuda_alloc((void **)&t->group_body, cap * sizeof(int2), "groups", s));
    BN_TRY(bn_cuda_alloc((void **)&t->group_box, cap * sizeof(float4), "group boxes", s));
    BN_TRY(bn_cuda_alloc((void **)&t->group_half, cap * sizeof(float4), "group boxes", s));
    st->group_capacity = cap;
    return BN_OK;
}

/* The groups' (first body, count), sorted by first body, in buf[0..3]
 * (four arrays of n_nodes ints: first, count and their sort partners). */
bn_status make_groups(bn_gpu_tree_store *st, int gs, int *buf[4], int **first, int **count, cudaStream_t s)
{
    bn_gpu_tree *t = &st->t;
    const int nn = t->n_nodes, blocks = (nn + kThreads - 1) / kThreads;
    count_groups<<<blocks, kThreads, 0, s>>>(t->node_body, t->node_child, nn, gs, st->level_count);
    BN_CUDA_LAUNCH_CHECK();
    size_t tmp = st->scan_tmp_bytes;
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(st->scan_tmp, tmp, st->level_count, st->level_offset, nn, s));
    int last[2];
    BN_CUDA_CHECK(cudaMemcpyAsync(&last[0], st->level_count + nn - 1, sizeof(int), cudaMemcpyDeviceToHost, s));
    BN_CUDA_CHECK(cudaMemcpyAsync(&last[1], st->level_offset + nn - 1, sizeof(int), cudaMemcpyDeviceToHost, s));
    BN_CUDA_CHECK(cudaStreamSynchronize(s));
    t->n_groups = last[0] + last[1];
    const size_t ng = (size_t)t->n_groups;
    for (int k = 0; k < 4; k++) BN_TRY(bn_cuda_alloc((void **)&buf[k], ng * sizeof(int), "group order", s));
    write_groups<<<blocks, kThreads, 0, s>>>(t->node_body, t->node_child, nn, gs, st->level_offset, buf[0], buf[1]);
    BN_CUDA_LAUNCH_CHECK();
    cub::DoubleBuffer<int> keys(buf[0], buf[2]), vals(buf[1], buf[3]);
    size_t sort_bytes = 0;
    BN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, keys, vals, (int)ng, 0, bits_for(t->n), s));
    void *sort_tmp = NULL;
    BN_TRY(bn_cuda_alloc(&sort_tmp, sort_bytes, "group sort scratch", s));
    const cudaError_t err = cub::DeviceRadixSort::SortPairs(sort_tmp, sort_bytes, keys, vals, (int)ng, 0,
                                                            bits_for(t->n), s);
    bn_cuda_free(sort_tmp, s);
    BN_CUDA_CHECK(err);
    *first = keys.Current();
    *count = vals.Current();
    return BN_OK;
}
} // namespace

extern "C" bn_status bn_gpu_groups(bn_gpu_tree_store *st, int group_size, const float4 *acc_old, double alpha,
                                   cudaStream_t s)
{
    bn_gpu_tree *t = &st->t;
    int *buf[4] = {NULL, NULL, NULL, NULL}, *first = NULL, *count = NULL;
    bn_status r = make_groups(st, group_size, buf, &first, &count, s);
    if (r == BN_OK) r = ensure_groups(st, t->n_groups, s);
    if (r == BN_OK && t->n_groups > 0) {
        const int warps_per_block = kThreads / 32;
        group_boxes<<<(t->n_groups + warps_per_block - 1) / warps_per_block, kThreads, 0, s>>>(
            first, count, t->n_groups, t->body, acc_old, (float)alpha, t->group_body, t->group_box, t->group_half);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) r = bn_cuda_fail(err, "group_boxes launch", __FILE__, __LINE__);
    }
    for (int k = 0; k < 4; k++) bn_cuda_free(buf[k], s);
    return r;
}
