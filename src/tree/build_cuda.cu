/*
 * Level-by-level octree build on the GPU (Bonsai, paper 003 sec. 4.2),
 * the mirror of the CPU builder: the root holds every body; a node with
 * more than leaf_size bodies (and above the deepest level) splits by the
 * next 3 key bits into its non-empty octants, found by binary search in
 * its sorted keys. Per level: count children per node, scan, write the
 * children contiguously after the level. Only the level's child total is
 * read back (it sizes the next launch).
 */
#include <cub/device/device_scan.cuh>
#include "tree/tree_cuda.h"

namespace {
const int kThreads = 256;

__device__ int lower_bound_key(const uint64_t *keys, int lo, int hi, uint64_t value)
{
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (keys[mid] < value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Bounds of the 8 octants of node (first, count) at `level`: bodies of
 * octant c are [bound[c], bound[c+1]). Returns the non-empty count. */
__device__ int octant_bounds(const uint64_t *keys, int first, int count, int level, int bound[9])
{
    const int shift = 3 * (BN_KEY_MAX_LEVEL - level - 1);
    const uint64_t base = (keys[first] >> (shift + 3)) << (shift + 3);
    bound[0] = first;
    bound[8] = first + count;
    int nonempty = 0;
    for (int c = 1; c < 8; c++)
        bound[c] = lower_bound_key(keys, bound[c - 1], first + count, base + ((uint64_t)c << shift));
    for (int c = 0; c < 8; c++) nonempty += bound[c + 1] > bound[c];
    return nonempty;
}

__device__ bool splits(int2 body, int level, int leaf_size)
{
    return body.y > leaf_size && level < BN_KEY_MAX_LEVEL;
}

__global__ void count_children(const int2 *node_body, int start, int m, int level, int leaf_size,
                               const uint64_t *keys, int *count)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    const int2 b = node_body[start + i];
    int bound[9];
    count[i] = splits(b, level, leaf_size) ? octant_bounds(keys, b.x, b.y, level, bound) : 0;
}

__global__ void write_children(int2 *node_body, int2 *node_child, int start, int m, int next_start, int level,
                               int leaf_size, const uint64_t *keys, const int *offset_incl)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    const int2 b = node_body[start + i];
    if (!splits(b, level, leaf_size)) {
        node_child[start + i] = make_int2(-1, 0);
        return;
    }
    int bound[9];
    const int nc = octant_bounds(keys, b.x, b.y, level, bound);
    int child = next_start + offset_incl[i] - nc;
    node_child[start + i] = make_int2(child, nc);
    for (int c = 0; c < 8; c++)
        if (bound[c + 1] > bound[c]) node_body[child++] = make_int2(bound[c], bound[c + 1] - bound[c]);
}

__global__ void count_leaves(const int2 *node_child, int n_nodes, int *leaves)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int leaf = i < n_nodes && node_child[i].y == 0;
    leaf = __syncthreads_count(leaf);
    if (threadIdx.x == 0 && leaf) atomicAdd(leaves, leaf); /* integer: order-free */
}

template <typename T>
bn_status grow_array(T **p, int old_n, int keep, int new_n, const char *what, cudaStream_t s)
{
    T *fresh = NULL;
    BN_TRY(bn_cuda_alloc((void **)&fresh, (size_t)new_n * sizeof(T), what, s));
    if (*p && keep > 0) BN_CUDA_CHECK(cudaMemcpyAsync(fresh, *p, (size_t)keep * sizeof(T), cudaMemcpyDeviceToDevice, s));
    (void)old_n;
    bn_cuda_free(*p, s);
    *p = fresh;
    return BN_OK;
}

/* Room for `need` nodes, keeping the first `keep` nodes and the first
 * `keep_scan` entries of the level scan (moments arrays are rewritten
 * later, so they are not copied). */
bn_status ensure_nodes(bn_gpu_tree_store *st, int need, int keep, int keep_scan, cudaStream_t s)
{
    if (need <= st->node_capacity) return BN_OK;
    /* the first guess exactly, a grown one with room to spare */
    const int cap = keep == 0 ? need + 1024 : need + need / 4 + 1024;
    bn_gpu_tree *t = &st->t;
    BN_TRY(grow_array(&t->node_body, st->node_capacity, keep, cap, "tree nodes (bodies)", s));
    BN_TRY(grow_array(&t->node_child, st->node_capacity, keep, cap, "tree nodes (children)", s));
    BN_TRY(grow_array(&t->node_com, st->node_capacity, 0, cap, "tree nodes (centre of mass)", s));
    BN_TRY(grow_array(&t->node_quad0, st->node_capacity, 0, cap, "tree nodes (quadrupole)", s));
    BN_TRY(grow_array(&t->node_quad1, st->node_capacity, 0, cap, "tree nodes (quadrupole, MAC)", s));
    BN_TRY(grow_array(&st->level_count, st->node_capacity, 0, cap, "tree build scratch", s));
    BN_TRY(grow_array(&st->level_offset, st->node_capacity, keep_scan, cap, "tree build scratch", s));
    size_t tmp = 0, tmp_excl = 0; /* scratch for both scans (the groups use the exclusive one) */
    BN_CUDA_CHECK(cub::DeviceScan::InclusiveSum(NULL, tmp, st->level_count, st->level_offset, cap, s));
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, tmp_excl, st->level_count, st->level_offset, cap, s));
    if (tmp_excl > tmp) tmp = tmp_excl;
    bn_cuda_free(st->scan_tmp, s);
    st->scan_tmp = NULL;
    BN_TRY(bn_cuda_alloc(&st->scan_tmp, tmp, "tree build scan scratch", s));
    st->scan_tmp_bytes = tmp;
    st->node_capacity = cap;
    return BN_OK;
}

int blocks_for(int m) { return (m + kThreads - 1) / kThreads; }

/* Split the nodes [start, start + m) of `level`; returns the child total. */
bn_status build_level(bn_gpu_tree_store *st, const uint64_t *keys, int start, int m, int level, int leaf_size,
                      int *children, cudaStream_t s)
{
    bn_gpu_tree *t = &st->t;
    count_children<<<blocks_for(m), kThreads, 0, s>>>(t->node_body, start, m, level, leaf_size, keys,
                                                      st->level_count);
    BN_CUDA_LAUNCH_CHECK();
    size_t tmp = st->scan_tmp_bytes;
    BN_CUDA_CHECK(cub::DeviceScan::InclusiveSum(st->scan_tmp, tmp, st->level_count, st->level_offset, m, s));
    BN_CUDA_CHECK(cudaMemcpyAsync(children, st->level_offset + m - 1, sizeof(int), cudaMemcpyDeviceToHost, s));
    BN_CUDA_CHECK(cudaStreamSynchronize(s));
    BN_TRY(ensure_nodes(st, start + m + *children, start + m, m, s));
    write_children<<<blocks_for(m), kThreads, 0, s>>>(t->node_body, t->node_child, start, m, start + m, level,
                                                      leaf_size, keys, st->level_offset);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
} // namespace

extern "C" bn_status bn_gpu_build(bn_gpu_tree_store *st, const uint64_t *keys, int n, int leaf_size, cudaStream_t s)
{
    bn_gpu_tree *t = &st->t;
    BN_TRY(ensure_nodes(st, n / 4 + 1, 0, 0, s));
    const int2 root = make_int2(0, n);
    BN_CUDA_CHECK(cudaMemcpyAsync(t->node_body, &root, sizeof root, cudaMemcpyHostToDevice, s));
    int start = 0, m = 1, level = 0;
    t->level_start[0] = 0;
    for (;;) {
        int children = 0;
        BN_TRY(build_level(st, keys, start, m, level, leaf_size, &children, s));
        t->level_start[level + 1] = start + m;
        if (children == 0) break;
        start += m;
        m = children;
        level++;
    }
    t->n_levels = level + 1;
    t->n_nodes = start + m;
    BN_CUDA_CHECK(cudaMemsetAsync(st->counter, 0, sizeof(int), s));
    count_leaves<<<blocks_for(t->n_nodes), kThreads, 0, s>>>(t->node_child, t->n_nodes, st->counter);
    BN_CUDA_LAUNCH_CHECK();
    BN_CUDA_CHECK(cudaMemcpyAsync(&t->n_leaves, st->counter, sizeof(int), cudaMemcpyDeviceToHost, s));
    BN_CUDA_CHECK(cudaStreamSynchronize(s));
    return BN_OK;
}
