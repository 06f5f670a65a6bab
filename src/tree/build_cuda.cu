/*
 * Octree and groups on the GPU from the sorted keys, in one pass over the
 * bodies instead of a loop over levels (the tree is the CPU builder's,
 * node for node: tree_build.c, tree_groups.c).
 *
 * Why it works: the top 3l bits of a key name the level-l cell of a body,
 * so a cell is a run of equal prefixes in the sorted keys, and
 * common_levels(a, b) (the deepest level on which keys a and b share a
 * cell) answers every question about cell sizes:
 *  - a cell holds more than L bodies iff it holds L+1 consecutive ones,
 *    i.e. some window [j, j+L] inside it has common_levels >= its level.
 *    The cells holding body i that have more than L bodies are therefore
 *    those on levels <= C_i = max over the windows containing i; the leaf
 *    holding i is on level D_i = min(C_i + 1, 21), and every cell above it
 *    exists (its ancestors all split).
 *  - body i is the first body of its cells on levels d_i < l <= D_i, where
 *    d_i = common_levels(key[i-1], key[i]): it "starts" D_i - d_i nodes.
 *  - a cell that starts at i holds more than G bodies iff
 *    common_levels(key[i], key[i+G]) >= its level: one test.
 * So: plan (per body: nodes and group it starts, level histogram), one
 * exclusive scan for the write positions, one read-back of the tree's
 * shape (the only copy to the host in a step: it sizes the launches
 * and allocations), write (per body, its nodes and its group), a stable
 * 5-bit sort of the nodes into level order, and fill (per node: its body
 * range by a short binary search; its first child is the node its first
 * body starts one level down, the next one in body order).
 * Integer atomics only (histograms): deterministic.
 */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include "tree/tree_cuda.h"

namespace {
const int kThreads = 256;
const int kLevels = BN_KEY_MAX_LEVEL + 1;

/* The deepest level on which keys a and b lie in the same cell. */
__device__ int common_levels(uint64_t a, uint64_t b)
{
    return a == b ? BN_KEY_MAX_LEVEL : (__clzll((long long)(a ^ b)) - 1) / 3;
}

__device__ int shift_of(int level) { return 3 * (BN_KEY_MAX_LEVEL - level); }

/* First index in [lo, hi) with keys[index] >= value. */
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

/* End of the level-l cell holding body i (searched in [i + 1, hi)). */
__device__ int cell_end(const uint64_t *keys, int i, int hi, int level)
{
    if (level == 0) return hi;
    const int sh = shift_of(level);
    return lower_bound_key(keys, i + 1, hi, ((keys[i] >> sh) + 1) << sh);
}

/* First body of the level-l cell holding body i. */
__device__ int cell_start(const uint64_t *keys, int i, int level)
{
    if (level == 0) return 0;
    const int sh = shift_of(level);
    return lower_bound_key(keys, 0, i, (keys[i] >> sh) << sh);
}

struct build_args {
    const uint64_t *keys;
    int n, leaf, group;
};

/* What plan learns about body i, packed for write. */
enum { kNoGroup = 0, kCellGroup = 1, kChunkGroup = 2 };
__device__ unsigned pack(int d, int D, int kind, int glevel)
{
    return (unsigned)(d + 1) | (unsigned)D << 5 | (unsigned)kind << 10 | (unsigned)glevel << 12;
}
__device__ void unpack(unsigned u, int *d, int *D, int *kind, int *glevel)
{
    *d = (int)(u & 31u) - 1;
    *D = (int)(u >> 5 & 31u);
    *kind = (int)(u >> 10 & 3u);
    *glevel = (int)(u >> 12 & 31u);
}

/* Level of the leaf holding body i (see the file comment). */
__device__ int leaf_level(const build_args &a, int i)
{
    int c = -1;
    const int lo = max(0, i - a.leaf), hi = min(i, a.n - 1 - a.leaf);
    for (int j = lo; j <= hi; j++) c = max(c, common_levels(a.keys[j], a.keys[j + a.leaf]));
    return min(c + 1, BN_KEY_MAX_LEVEL);
}

/* Whether the level-d cell holding body i has more than G bodies: its
 * range clipped to [i - G, i + G] decides, so both searches are short
 * (a search over all bodies would cost a cache miss per step at large N). */
__device__ bool parent_is_big(const build_args &a, int i, int d)
{
    const int sh = shift_of(d);
    const uint64_t prefix = (a.keys[i] >> sh) << sh;
    const int s = lower_bound_key(a.keys, max(0, i - a.group), i, prefix);
    const int e = cell_end(a.keys, i, min(a.n, i + a.group + 1), d);
    return e - s > a.group;
}

/* The group body i starts, if any: *glevel = its level for a cell group.
 * A cell is a group when it has at most G bodies and its parent more (or
 * it is the root); a leaf with more than G bodies is cut in chunks of G
 * from its first body. */
__device__ int group_start(const build_args &a, int i, int d, int D, int *glevel)
{
    const uint64_t *k = a.keys;
    *glevel = 0;
    if (d < D) { /* i starts the cells of levels d+1..D */
        const int big = i + a.group < a.n ? common_levels(k[i], k[i + a.group]) : -1;
        if (big >= D) return kChunkGroup; /* its leaf is too big: chunk 0 */
        if (big > d) {
            *glevel = big + 1;
            return kCellGroup;
        }
        *glevel = d + 1; /* small from its first level: a group iff its parent is big */
        if (d < 0) return kCellGroup; /* the root */
        return parent_is_big(a, i, d) ? kCellGroup : kNoGroup;
    }
    /* inside a leaf: only a leaf too big to be one group (leaves bigger
     * than G, or level-21 runs of equal keys) starts chunks inside it */
    if (a.leaf <= a.group && D < BN_KEY_MAX_LEVEL) return kNoGroup;
    const int s = cell_start(k, i, D), e = cell_end(k, i, a.n, D);
    return e - s > a.group && (i - s) % a.group == 0 ? kChunkGroup : kNoGroup;
}

/* Per body: nodes and group it starts (plan[i], scanned next), packed
 * info for write, and the shape histograms in the frame. */
__global__ void plan_kernel(build_args a, int2 *plan, unsigned *info, bn_gpu_frame *frame)
{
    __shared__ int hist[kLevels], groups, leaves;
    if (threadIdx.x < kLevels) hist[threadIdx.x] = 0;
    if (threadIdx.x == 0) groups = leaves = 0;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < a.n) {
        const int d = i > 0 ? common_levels(a.keys[i - 1], a.keys[i]) : -1;
        const int D = leaf_level(a, i);
        int glevel;
        const int kind = group_start(a, i, d, D, &glevel);
        for (int l = d + 1; l <= D; l++) atomicAdd(&hist[l], 1);
        if (d < D) atomicAdd(&leaves, 1);
        if (kind != kNoGroup) atomicAdd(&groups, 1);
        plan[i] = make_int2(d < D ? D - d : 0, kind != kNoGroup);
        info[i] = pack(d, D, kind, glevel);
    }
    __syncthreads();
    if (threadIdx.x < kLevels && hist[threadIdx.x]) atomicAdd(&frame->per_level[threadIdx.x], hist[threadIdx.x]);
    if (threadIdx.x == 0 && groups) atomicAdd(&frame->n_groups, groups);
    if (threadIdx.x == 0 && leaves) atomicAdd(&frame->n_leaves, leaves);
}

struct add_int2 {
    __device__ int2 operator()(int2 x, int2 y) const { return make_int2(x.x + y.x, x.y + y.y); }
};

/* Per body: its nodes in body order (level, and the body in pre_first),
 * their own index as the sort's value, and its group. */
__global__ void write_kernel(build_args a, const int2 *offset, const unsigned *info, int *node_level, int *node_index,
                             int *pre_first, int2 *group_body)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    int d, D, kind, glevel;
    unpack(info[i], &d, &D, &kind, &glevel);
    const int2 o = offset[i];
    for (int l = d + 1; l <= D; l++) {
        const int q = o.x + l - d - 1;
        node_level[q] = l;
        node_index[q] = q;
        pre_first[q] = i;
    }
    if (kind == kCellGroup) {
        const int hi = glevel == 0 ? a.n : min(a.n, i + a.group + 1);
        group_body[o.y] = make_int2(i, cell_end(a.keys, i, hi, glevel) - i);
    } else if (kind == kChunkGroup) {
        group_body[o.y] = make_int2(i, min(a.group, cell_end(a.keys, i, a.n, D) - i));
    }
}

/* After the sort (node p of the tree was node q = index[p] in body
 * order): the first body of every node, and where each q went. */
__global__ void rank_kernel(const int *index, const int *pre_first, int m, int *first, int *pos)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= m) return;
    const int q = index[p];
    first[p] = pre_first[q];
    pos[q] = p;
}

struct fill_args {
    build_args b;
    const int *level, *index, *first, *pos; /* the nodes in tree order */
    int level_start[kLevels + 1];
    int2 *node_body, *node_child;
};

/* Per node: its bodies (its end lies before the next node of its level
 * starts), and its children: the first is the node its first body starts
 * one level down, next in body order (q + 1), the others follow it in
 * the next level while they start inside the node (at most 8). */
__global__ void fill_kernel(fill_args a, int n_nodes)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_nodes) return;
    const int i = a.first[p], l = a.level[p];
    const uint64_t *k = a.b.keys;
    const int L = a.b.leaf, n = a.b.n;
    const bool splits = l < BN_KEY_MAX_LEVEL && i + L < n && common_levels(k[i], k[i + L]) >= l;
    int hi = p + 1 < a.level_start[l + 1] ? a.first[p + 1] : n;
    if (!splits && l < BN_KEY_MAX_LEVEL) hi = min(hi, i + L + 1); /* a leaf has at most L bodies */
    const int end = cell_end(k, i, hi, l);
    a.node_body[p] = make_int2(i, end - i);
    if (!splits) {
        a.node_child[p] = make_int2(-1, 0);
        return;
    }
    const int c0 = a.pos[a.index[p] + 1], last = a.level_start[l + 2];
    int c = 1;
    while (c < 8 && c0 + c < last && a.first[c0 + c] < end) c++;
    a.node_child[p] = make_int2(c0, c);
}

int blocks_for(int m) { return (m + kThreads - 1) / kThreads; }

template <typename T>
bn_status realloc_array(T **p, size_t n, const char *what, cudaStream_t s)
{
    bn_cuda_free(*p, s);
    *p = NULL;
    return bn_cuda_alloc((void **)p, n * sizeof(T), what, s);
}

/* Room for `need` nodes (contents are rewritten, never kept). */
bn_status ensure_nodes(bn_gpu_tree_store *st, int need, cudaStream_t s)
{
    if (need <= st->node_capacity) return BN_OK;
    const int cap = need + need / 8 + 1024; /* room for a run's growth */
    bn_gpu_tree *t = &st->t;
    st->node_capacity = 0;
    BN_TRY(realloc_array(&t->node_body, cap, "tree nodes (bodies)", s));
    BN_TRY(realloc_array(&t->node_child, cap, "tree nodes (children)", s));
    BN_TRY(realloc_array(&t->node_com, cap, "tree nodes (centre of mass)", s));
    BN_TRY(realloc_array(&t->node_quad0, cap, "tree nodes (quadrupole)", s));
    BN_TRY(realloc_array(&t->node_quad1, cap, "tree nodes (quadrupole, MAC)", s));
    st->node_capacity = cap;
    return BN_OK;
}

bn_status ensure_groups(bn_gpu_tree_store *st, int need, cudaStream_t s)
{
    if (need <= st->group_capacity) return BN_OK;
    const int cap = need + need / 8 + 64;
    bn_gpu_tree *t = &st->t;
    st->group_capacity = 0;
    BN_TRY(realloc_array(&t->group_body, cap, "groups", s));
    BN_TRY(realloc_array(&t->group_box, cap, "group boxes", s));
    BN_TRY(realloc_array(&t->group_half, cap, "group boxes", s));
    st->group_capacity = cap;
    return BN_OK;
}

/* plan + scan; the write offsets stay in plan. */
bn_status plan_bodies(bn_gpu_tree_store *st, const build_args &a, int2 *plan, unsigned *info, cudaStream_t s)
{
    plan_kernel<<<blocks_for(a.n), kThreads, 0, s>>>(a, plan, info, st->frame);
    BN_CUDA_LAUNCH_CHECK();
    size_t bytes = 0;
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(NULL, bytes, plan, plan, add_int2(), make_int2(0, 0), a.n, s));
    if (bytes > st->scan_tmp_bytes) {
        st->scan_tmp_bytes = 0;
        BN_TRY(realloc_array((char **)&st->scan_tmp, bytes, "tree build scan scratch", s));
        st->scan_tmp_bytes = bytes;
    }
    BN_CUDA_CHECK(
        cub::DeviceScan::ExclusiveScan(st->scan_tmp, bytes, plan, plan, add_int2(), make_int2(0, 0), a.n, s));
    return BN_OK;
}

/* The one read-back: the frame with the tree's shape. */
bn_status read_shape(bn_gpu_tree_store *st, cudaStream_t s)
{
    BN_CUDA_CHECK(cudaMemcpyAsync(st->frame_host, st->frame, sizeof *st->frame, cudaMemcpyDeviceToHost, s));
    BN_CUDA_CHECK(cudaStreamSynchronize(s));
    const bn_gpu_frame *f = st->frame_host;
    if (f->bad_box)
        return bn_fail(BN_ERR_ARGUMENT, "GPU tree: a particle coordinate is not finite, or the particles span "
                                        "too much for keys (bounding box %g..%g in x)",
                       f->box_lo[0], f->box_lo[0] + f->box_size);
    bn_gpu_tree *t = &st->t;
    t->level_start[0] = 0;
    t->n_levels = 0;
    for (int l = 0; l < kLevels; l++) {
        t->level_start[l + 1] = t->level_start[l] + f->per_level[l];
        if (f->per_level[l] > 0) t->n_levels = l + 1;
    }
    t->n_nodes = t->level_start[t->n_levels];
    t->n_leaves = f->n_leaves;
    t->n_groups = f->n_groups;
    return BN_OK;
}

/* Stable sort of the nodes by level: level order, body (key) order
 * within a level, as the CPU's breadth-first build. */
bn_status sort_nodes(int **level, int **level_alt, int **index, int **index_alt, int m, cudaStream_t s)
{
    cub::DoubleBuffer<int> k(*level, *level_alt), v(*index, *index_alt);
    size_t bytes = 0;
    BN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, bytes, k, v, m, 0, 5, s));
    void *tmp = NULL;
    BN_TRY(bn_cuda_alloc(&tmp, bytes, "tree node sort scratch", s));
    const cudaError_t err = cub::DeviceRadixSort::SortPairs(tmp, bytes, k, v, m, 0, 5, s);
    bn_cuda_free(tmp, s);
    BN_CUDA_CHECK(err);
    *level = k.Current();
    *level_alt = k.Alternate();
    *index = v.Current();
    *index_alt = v.Alternate();
    return BN_OK;
}

/* write, sort, rank and fill, once the shape is known. list[0..4]: node
 * level, index and their sort partners, first body in body order. */
bn_status make_nodes(bn_gpu_tree_store *st, const build_args &a, const int2 *offset, const unsigned *info,
                     int *list[5], cudaStream_t s)
{
    bn_gpu_tree *t = &st->t;
    const int m = t->n_nodes;
    for (int k = 0; k < 5; k++) BN_TRY(bn_cuda_alloc((void **)&list[k], (size_t)m * sizeof(int), "tree node list", s));
    write_kernel<<<blocks_for(a.n), kThreads, 0, s>>>(a, offset, info, list[0], list[1], list[4], t->group_body);
    BN_CUDA_LAUNCH_CHECK();
    BN_TRY(sort_nodes(&list[0], &list[2], &list[1], &list[3], m, s));
    /* the sort's spare buffers become first (tree order) and pos */
    rank_kernel<<<blocks_for(m), kThreads, 0, s>>>(list[1], list[4], m, list[2], list[3]);
    BN_CUDA_LAUNCH_CHECK();
    fill_args f;
    f.b = a;
    f.level = list[0];
    f.index = list[1];
    f.first = list[2];
    f.pos = list[3];
    for (int l = 0; l <= kLevels; l++) f.level_start[l] = t->level_start[l];
    f.node_body = t->node_body;
    f.node_child = t->node_child;
    fill_kernel<<<blocks_for(m), kThreads, 0, s>>>(f, m);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
} // namespace

extern "C" bn_status bn_gpu_tree_store_init(bn_gpu_tree_store *st, cudaStream_t s)
{
    if (st->frame) return BN_OK;
    BN_TRY(bn_cuda_alloc((void **)&st->frame, sizeof *st->frame, "tree frame", s));
    BN_TRY(bn_cuda_alloc((void **)&st->minmax, 6 * sizeof(unsigned long long), "bounding box", s));
    BN_CUDA_CHECK(cudaMallocHost((void **)&st->frame_host, sizeof *st->frame_host));
    return BN_OK;
}

extern "C" bn_status bn_gpu_build(bn_gpu_tree_store *st, const uint64_t *keys, int n, int leaf_size, int group_size,
                                  cudaStream_t s)
{
    if (n <= 0 || leaf_size < 1 || group_size < 1)
        return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_build: n = %d, leaf_size = %d, group_size = %d", n, leaf_size,
                       group_size);
    const size_t shape = offsetof(bn_gpu_frame, n_groups);
    BN_CUDA_CHECK(cudaMemsetAsync((char *)st->frame + shape, 0, sizeof *st->frame - shape, s));
    build_args a = {keys, n, leaf_size, group_size};
    int2 *plan = NULL;
    unsigned *info = NULL;
    int *list[5] = {NULL, NULL, NULL, NULL, NULL};
    bn_status r = bn_cuda_alloc((void **)&plan, (size_t)n * sizeof(int2), "tree build plan", s);
    if (r == BN_OK) r = bn_cuda_alloc((void **)&info, (size_t)n * sizeof(unsigned), "tree build plan", s);
    if (r == BN_OK) r = plan_bodies(st, a, plan, info, s);
    if (r == BN_OK) r = read_shape(st, s);
    if (r == BN_OK) r = ensure_nodes(st, st->t.n_nodes, s);
    if (r == BN_OK) r = ensure_groups(st, st->t.n_groups, s);
    if (r == BN_OK) r = make_nodes(st, a, plan, info, list, s);
    bn_cuda_free(plan, s);
    bn_cuda_free(info, s);
    for (int k = 0; k < 5; k++) bn_cuda_free(list[k], s);
    return r;
}
