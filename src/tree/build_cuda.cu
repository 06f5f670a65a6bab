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
 * exclusive scan for the write positions, the shape (one thread: level
 * starts, and whether the tree fits the capacities), write (per body,
 * its nodes and its group), a stable 5-bit sort of the nodes into level
 * order, and fill (per node: its body range by a short binary search; its
 * first child is the node its first body starts one level down, the next
 * one in body order).
 *
 * The host does not wait: every launch is sized by the capacities, and
 * the kernels read the counts on the device. A tree that does not fit is
 * not written (frame->fits = 0): the last one stays, the particles keep
 * its order (the sort's permutation becomes the identity) and the
 * moments refresh it. Only
 * a build with no tree to fall back on (the first after an upload) reads
 * the shape back, to size the buffers.
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

/* The windows' levels a block's bodies need: win[t] = common_levels of
 * keys j and j + L for j = (block's first body) - L + t, -1 where that
 * window is not inside the bodies. Made once per block in shared memory:
 * each body's leaf level is the largest of its L + 1 windows, which
 * read from the keys cost 2 (L + 1) loads a body. */
__device__ void load_windows(const build_args &a, signed char *win)
{
    const int first = blockIdx.x * blockDim.x - a.leaf;
    for (int t = threadIdx.x; t < (int)blockDim.x + a.leaf; t += blockDim.x) {
        const int j = first + t;
        win[t] = (signed char)(j >= 0 && j + a.leaf < a.n ? common_levels(a.keys[j], a.keys[j + a.leaf]) : -1);
    }
}

/* Level of the leaf holding body i (see the file comment): the windows
 * [j, j + L] for j in [i - L, i], entries threadIdx.x to threadIdx.x + L
 * of load_windows's. */
__device__ int leaf_level(const build_args &a, const signed char *win)
{
    int c = -1;
    for (int t = threadIdx.x; t <= (int)threadIdx.x + a.leaf; t++) c = max(c, (int)win[t]);
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
    extern __shared__ signed char win[]; /* blockDim.x + L windows */
    if (threadIdx.x < kLevels) hist[threadIdx.x] = 0;
    if (threadIdx.x == 0) groups = leaves = 0;
    load_windows(a, win);
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < a.n) {
        const int d = i > 0 ? common_levels(a.keys[i - 1], a.keys[i]) : -1;
        const int D = leaf_level(a, win);
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

/* Per body: its nodes in body order (level, and the body in pre_first),
 * their own index as the sort's value, and its group. */
__global__ void write_kernel(build_args a, const bn_gpu_frame *f, const int2 *offset, const unsigned *info,
                             int *node_level, int *node_index, int *pre_first, int2 *group_body)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n || !f->fits) return;
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
__global__ void rank_kernel(const bn_gpu_frame *f, const int *index, const int *pre_first, int *first, int *pos)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (!f->fits || p >= f->shape.n_nodes) return;
    const int q = index[p];
    first[p] = pre_first[q];
    pos[q] = p;
}

struct fill_args {
    build_args b;
    const bn_gpu_frame *f;  /* fits, and the shape's level starts */
    const int *level, *index, *first, *pos; /* the nodes in tree order */
    int2 *node_body, *node_child;
};

/* Per node: its bodies (its end lies before the next node of its level
 * starts), and its children: the first is the node its first body starts
 * one level down, next in body order (q + 1), the others follow it in
 * the next level while they start inside the node (at most 8). */
__global__ void fill_kernel(fill_args a)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (!a.f->fits || p >= a.f->shape.n_nodes) return;
    const int *level_start = a.f->shape.level_start;
    const int i = a.first[p], l = a.level[p];
    const uint64_t *k = a.b.keys;
    const int L = a.b.leaf, n = a.b.n;
    const bool splits = l < BN_KEY_MAX_LEVEL && i + L < n && common_levels(k[i], k[i + L]) >= l;
    int hi = p + 1 < level_start[l + 1] ? a.first[p + 1] : n;
    if (!splits && l < BN_KEY_MAX_LEVEL) hi = min(hi, i + L + 1); /* a leaf has at most L bodies */
    const int end = cell_end(k, i, hi, l);
    a.node_body[p] = make_int2(i, end - i);
    if (!splits) {
        a.node_child[p] = make_int2(-1, 0);
        return;
    }
    const int c0 = a.pos[a.index[p] + 1], last = level_start[l + 2];
    int c = 1;
    while (c < 8 && c0 + c < last && a.first[c0 + c] < end) c++;
    a.node_child[p] = make_int2(c0, c);
}

/* The planned tree's shape from the plan's counters (on the device, and
 * on the host when it reads the plan back). */
__host__ __device__ bn_gpu_shape planned_shape(const bn_gpu_frame *f)
{
    bn_gpu_shape c;
    c.level_start[0] = 0;
    c.n_levels = 0;
    for (int l = 0; l < kLevels; l++) {
        c.level_start[l + 1] = c.level_start[l] + f->per_level[l];
        if (f->per_level[l] > 0) c.n_levels = l + 1;
    }
    c.n_nodes = c.level_start[kLevels];
    c.n_leaves = f->n_leaves;
    c.n_groups = f->n_groups;
    return c;
}

/* One thread: the planned tree's shape, and whether it fits the
 * buffers. If so it becomes current; if not, the current tree stays and
 * is refreshed, and what the build needed is kept for the host's poll. */
__global__ void shape_kernel(bn_gpu_frame *f, int node_capacity, int group_capacity)
{
    const bn_gpu_shape c = planned_shape(f);
    f->fits = !f->bad_box && c.n_nodes <= node_capacity && c.n_groups <= group_capacity;
    if (f->fits) {
        f->shape = c;
        f->tree_box_size = f->box_size;
        return;
    }
    f->fallbacks++;
    f->need_nodes = max(f->need_nodes, c.n_nodes);
    f->need_groups = max(f->need_groups, c.n_groups);
    if (f->bad_box) f->shape.n_groups = 0; /* nothing to walk: the poll reports it */
}

/* A build that did not fit: the particles keep the order of the tree
 * that stays. */
__global__ void keep_order_kernel(int *perm, int n, const bn_gpu_frame *f)
{
    if (f->fits) return;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) perm[i] = i;
}

int blocks_for(int m) { return (m + kThreads - 1) / kThreads; }

/* plan + scan; the write offsets stay in plan. */
bn_status plan_bodies(bn_gpu_tree_store *st, const build_args &a, int2 *plan, unsigned *info, cudaStream_t s)
{
    plan_kernel<<<blocks_for(a.n), kThreads, (size_t)(kThreads + a.leaf), s>>>(a, plan, info, st->frame);
    BN_CUDA_LAUNCH_CHECK();
    size_t bytes = 0;
    /* both counts scanned at once as one 64-bit word (x low, y high): the
     * low sum (nodes, under 2^31) never carries into the high one, and
     * CUB scans a word twice as fast as a pair with its own operator */
    unsigned long long *words = (unsigned long long *)plan;
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, bytes, words, words, a.n, s));
    if (bytes > st->scan_tmp_bytes) {
        bn_cuda_free(st->scan_tmp, s);
        st->scan_tmp = NULL;
        st->scan_tmp_bytes = 0;
        BN_TRY(bn_cuda_alloc(&st->scan_tmp, bytes, "tree build scan scratch", s));
        st->scan_tmp_bytes = bytes;
    }
    BN_CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(st->scan_tmp, bytes, words, words, a.n, s));
    return BN_OK;
}

/* A build with no tree to fall back on: read the planned shape back and
 * make room for it (the shape kernel then finds that it fits). */
bn_status size_for_plan(bn_gpu_tree_store *st, cudaStream_t s)
{
    BN_TRY(bn_cuda_read(st->frame_host, st->frame, sizeof *st->frame, "tree frame", s));
    BN_TRY(bn_gpu_frame_check(st->frame_host));
    const bn_gpu_shape c = planned_shape(st->frame_host);
    bn_gpu_tree_take_shape(&st->t, &c);
    return bn_gpu_tree_store_reserve(st, c.n_nodes, c.n_groups, 0, s);
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

/* write, sort, rank and fill, sized by the node capacity (the kernels
 * read the shape; none writes when the tree does not fit). list[0..4]:
 * node level, index and their sort partners, first body in body order. */
bn_status make_nodes(bn_gpu_tree_store *st, const build_args &a, const int2 *offset, const unsigned *info,
                     int *list[5], cudaStream_t s)
{
    bn_gpu_tree *t = &st->t;
    const int m = st->node_capacity;
    for (int k = 0; k < 5; k++) BN_TRY(bn_cuda_alloc((void **)&list[k], (size_t)m * sizeof(int), "tree node list", s));
    /* the entries past the tree's nodes sort last: level 31 (0x1f1f1f1f
     * in the 5 bits sorted), index 0 */
    BN_CUDA_CHECK(cudaMemsetAsync(list[0], 0x1f, (size_t)m * sizeof(int), s));
    BN_CUDA_CHECK(cudaMemsetAsync(list[1], 0, (size_t)m * sizeof(int), s));
    write_kernel<<<blocks_for(a.n), kThreads, 0, s>>>(a, st->frame, offset, info, list[0], list[1], list[4],
                                                     t->group_body);
    BN_CUDA_LAUNCH_CHECK();
    BN_TRY(sort_nodes(&list[0], &list[2], &list[1], &list[3], m, s));
    /* the sort's spare buffers become first (tree order) and pos */
    rank_kernel<<<blocks_for(m), kThreads, 0, s>>>(st->frame, list[1], list[4], list[2], list[3]);
    BN_CUDA_LAUNCH_CHECK();
    fill_args f;
    f.b = a;
    f.f = st->frame;
    f.level = list[0];
    f.index = list[1];
    f.first = list[2];
    f.pos = list[3];
    f.node_body = t->node_body;
    f.node_child = t->node_child;
    fill_kernel<<<blocks_for(m), kThreads, 0, s>>>(f);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
} // namespace

extern "C" bn_status bn_gpu_build(bn_gpu_tree_store *st, const uint64_t *keys, int *perm, int n, int leaf_size,
                                  int group_size, int can_fall_back, int2 *plan, unsigned *info, cudaStream_t s)
{
    if (n <= 0 || leaf_size < 1 || group_size < 1 || !perm || !plan || !info)
        return bn_fail(BN_ERR_ARGUMENT, "bn_gpu_build: n = %d, leaf_size = %d, group_size = %d, scratch %p %p", n,
                       leaf_size, group_size, (void *)plan, (void *)info);
    if (can_fall_back && (st->node_capacity <= 0 || st->group_capacity <= 0)) can_fall_back = 0;
    const size_t counters = offsetof(bn_gpu_frame, n_groups);
    BN_CUDA_CHECK(cudaMemsetAsync((char *)st->frame + counters, 0, sizeof *st->frame - counters, s));
    build_args a = {keys, n, leaf_size, group_size};
    BN_TRY(plan_bodies(st, a, plan, info, s));
    if (!can_fall_back) BN_TRY(size_for_plan(st, s));
    st->t.shape = &st->frame->shape;
    st->t.node_bound = st->node_alloc;
    st->t.group_bound = st->group_capacity;
    shape_kernel<<<1, 1, 0, s>>>(st->frame, st->node_capacity, st->group_capacity);
    BN_CUDA_LAUNCH_CHECK();
    int *list[5] = {NULL, NULL, NULL, NULL, NULL};
    const bn_status r = make_nodes(st, a, plan, info, list, s);
    for (int k = 0; k < 5; k++) bn_cuda_free(list[k], s);
    if (r != BN_OK || !can_fall_back) return r; /* a build sized here fits */
    /* few blocks: the usual build fits, and each block only reads that */
    keep_order_kernel<<<min(blocks_for(n), 264), kThreads, 0, s>>>(perm, n, st->frame);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
