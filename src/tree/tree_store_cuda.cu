/*
 * The buffers of the device tree and the host's view of them.
 *
 * A build sizes its launches and buffers by the store's capacities and
 * decides on the device whether its tree fits (build_cuda.cu), so the
 * host never waits inside a step. The host looks at the device's frame
 * only where it waits anyway (stats, finish, energies, tests): a poll
 * copies the frame, refreshes the host copies of the tree's shape, and
 * grows the capacities when a build did not fit, keeping the current
 * tree so that the next build can still fall back on it.
 */
#include <string.h>
#include "tree/tree_cuda.h"

namespace {

/* Room for the headroom of a run whose tree grows between polls. */
int with_headroom(int need, int extra) { return need + need / 8 + extra; }

/* *p becomes a buffer of cap elements; keep: its first `keep` elements
 * are copied over (the current tree), else its contents are lost. */
template <typename T>
bn_status regrow(T **p, int cap, int keep, const char *what, cudaStream_t s)
{
    T *q = NULL;
    BN_TRY(bn_cuda_alloc((void **)&q, (size_t)cap * sizeof(T), what, s));
    if (keep > 0) {
        const cudaError_t e = cudaMemcpyAsync(q, *p, (size_t)keep * sizeof(T), cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess) {
            bn_cuda_free(q, s);
            return bn_cuda_fail(e, what, __FILE__, __LINE__);
        }
    }
    bn_cuda_free(*p, s);
    *p = q;
    return BN_OK;
}

bn_status reserve_nodes(bn_gpu_tree_store *st, int need, int keep, cudaStream_t s)
{
    if (need <= st->node_capacity) return BN_OK;
    const int cap = with_headroom(need, 1024);
    bn_gpu_tree *t = &st->t;
    BN_TRY(regrow(&t->node_body, cap, keep, "tree nodes (bodies)", s));
    BN_TRY(regrow(&t->node_child, cap, keep, "tree nodes (children)", s));
    BN_TRY(regrow(&t->node_com, cap, keep, "tree nodes (centre of mass)", s));
    BN_TRY(regrow(&t->node_com_lo, cap, keep, "tree nodes (centre of mass, lo parts)", s));
    BN_TRY(regrow(&t->node_quad0, cap, keep, "tree nodes (quadrupole)", s));
    BN_TRY(regrow(&t->node_quad1, cap, keep, "tree nodes (quadrupole, MAC)", s));
    st->node_capacity = st->node_alloc = cap;
    t->node_bound = cap;
    return BN_OK;
}

bn_status reserve_groups(bn_gpu_tree_store *st, int need, int keep, cudaStream_t s)
{
    if (need <= st->group_capacity) return BN_OK;
    const int cap = with_headroom(need, 64);
    bn_gpu_tree *t = &st->t;
    BN_TRY(regrow(&t->group_body, cap, keep, "groups", s));
    BN_TRY(regrow(&t->group_box, cap, keep, "group boxes", s));
    BN_TRY(regrow(&t->group_half, cap, keep, "group boxes", s));
    BN_TRY(regrow(&t->group_level, cap, keep, "group levels", s));
    st->group_capacity = cap;
    t->group_bound = cap;
    return BN_OK;
}

} // namespace

extern "C" bn_status bn_gpu_tree_store_init(bn_gpu_tree_store *st, cudaStream_t s)
{
    if (st->frame) return BN_OK;
    BN_TRY(bn_cuda_alloc((void **)&st->frame, sizeof *st->frame, "tree frame", s));
    BN_CUDA_CHECK(cudaMemsetAsync(st->frame, 0, sizeof *st->frame, s));
    BN_TRY(bn_cuda_alloc((void **)&st->minmax, 6 * sizeof(unsigned long long), "bounding box", s));
    BN_CUDA_CHECK(cudaMallocHost((void **)&st->frame_host, sizeof *st->frame_host));
    memset(st->frame_host, 0, sizeof *st->frame_host);
    return BN_OK;
}

extern "C" void bn_gpu_tree_store_free(bn_gpu_tree_store *ts, cudaStream_t s)
{
    bn_gpu_tree *t = &ts->t;
    void *bufs[] = {t->node_body, t->node_child, t->node_com, t->node_com_lo, t->node_quad0, t->node_quad1, t->group_body,
                    t->group_box, t->group_half, t->group_level, ts->scan_tmp, ts->minmax, ts->frame};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) bn_cuda_free(bufs[i], s);
    if (ts->frame_host) cudaFreeHost(ts->frame_host);
    memset(ts, 0, sizeof *ts);
}

extern "C" bn_status bn_gpu_tree_store_reserve(bn_gpu_tree_store *st, int nodes, int groups, int keep,
                                               cudaStream_t s)
{
    BN_TRY(reserve_nodes(st, nodes, keep ? st->t.n_nodes : 0, s));
    return reserve_groups(st, groups, keep ? st->t.n_groups : 0, s);
}

extern "C" bn_status bn_gpu_tree_poll(bn_gpu_tree_store *st, cudaStream_t s)
{
    if (!st->frame) return BN_OK;
    BN_TRY(bn_cuda_read(st->frame_host, st->frame, sizeof *st->frame, "tree frame", s));
    const bn_gpu_frame *f = st->frame_host;
    BN_TRY(bn_gpu_frame_check(f));
    bn_gpu_tree_take_shape(&st->t, &f->shape);
    for (int k = 0; k < 3; k++) st->t.ref[k] = f->ref[k];
    const int nodes = st->node_capacity, groups = st->group_capacity;
    BN_TRY(bn_gpu_tree_store_reserve(st, f->need_nodes, f->need_groups, 1, s));
    /* grown: the current tree's copy into the new buffers done before the
     * host reads them from another stream (bn_gpu_tree_to_host) */
    if (st->node_capacity != nodes || st->group_capacity != groups) BN_CUDA_CHECK(cudaStreamSynchronize(s));
    return BN_OK;
}


extern "C" bn_status bn_gpu_frame_check(const bn_gpu_frame *f)
{
    if (!f->bad_box) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "GPU tree: a particle coordinate is not finite, or the particles span too "
                                    "much for keys (bounding box %g..%g in x)",
                   f->box_lo[0], f->box_lo[0] + f->box_size);
}

extern "C" void bn_gpu_tree_take_shape(bn_gpu_tree *t, const bn_gpu_shape *c)
{
    t->n_nodes = c->n_nodes;
    t->n_leaves = c->n_leaves;
    t->n_levels = c->n_levels;
    t->n_groups = c->n_groups;
    memcpy(t->level_start, c->level_start, sizeof t->level_start);
}

namespace {
/* The build's cube and count, where its tree fitted and became current;
 * else no count (its keys, the caller's, are not the current tree's). */
__global__ void keep_build_kernel(double *box, int *kept, int n, const bn_gpu_frame *f)
{
    const int i = threadIdx.x;
    if (i < 3 && f->fits) box[i] = f->box_lo[i];
    if (i == 3 && f->fits) box[3] = f->box_size;
    if (i == 4) *kept = f->fits ? n : 0;
}
} // namespace

extern "C" bn_status bn_gpu_keep_build(double *box, int *kept, int n, const bn_gpu_frame *f, cudaStream_t s)
{
    keep_build_kernel<<<1, 32, 0, s>>>(box, kept, n, f);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}
