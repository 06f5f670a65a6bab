/* Locally essential trees from the device tree: see let_gpu.h. */
#include <cub/cub.cuh>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/cuda_check.h"
#include "gravity/interact.h"
#include "parallel/let_gpu.h"

namespace {
const int kThreads = 256;
const int kCellWords = (int)(sizeof(bn_walk_cell) / 8);

int blocks_for(long n) { return (int)((n + kThreads - 1) / kThreads); }

/* The tree's units back to the user's (tree_gpu.h): the one conversion
 * of every sent cell, and of the cell the opening test judges. */
struct let_frame {
    double ref[3], L, M, G;
};

let_frame frame_of(const bn_gpu_let_tree *lt)
{
    const bn_gpu_tree *t = lt->t;
    return {{t->ref[0], t->ref[1], t->ref[2]}, t->len_scale, t->mass_scale, lt->G};
}

__device__ bn_walk_cell cell_of(const bn_gpu_tree &t, const let_frame &f, int v)
{
    const float4 c = t.node_com[v], lo = t.node_com_lo[v], q1 = t.node_quad1[v];
    const int2 ch = t.node_child[v], b = t.node_body[v];
    bn_walk_cell w;
    w.com[0] = ((double)c.x + lo.x) / f.L + f.ref[0];
    w.com[1] = ((double)c.y + lo.y) / f.L + f.ref[1];
    w.com[2] = ((double)c.z + lo.z) / f.L + f.ref[2];
    w.r2 = (double)q1.z / (f.L * f.L);
    w.mass = (double)c.w / f.M;
    w.gml2 = f.G * (double)q1.w / (f.M * f.L * f.L);
    w.first_child = ch.y > 0 ? ch.x : -1;
    w.n_children = ch.y;
    w.first_body = b.x;
    w.n_bodies = b.y;
    return w;
}

/* let.c's test: the union of all boxes, then the runs' unions, then the
 * boxes of a run that opens (the test is monotonic in the box). */
struct let_boxes {
    const double *all, *runs, *box; /* BN_LET_BOX doubles each */
    int n, n_runs;
    bn_mac mac;
};

__device__ bool box_opens(const bn_walk_cell &c, const double *x, bn_mac mac)
{
    const double d2 = bn_box_dist2_d(c.com[0], c.com[1], c.com[2], x[0], x[1], x[2], x[3], x[4], x[5]);
    if (mac != BN_MAC_ACCEL) return bn_mac_geometric_open_d(d2, c.r2);
    return bn_mac_accel_open_d(d2, c.r2, c.gml2, x[6]);
}

__device__ bool any_opens(const bn_walk_cell &c, const let_boxes &b)
{
    if (!box_opens(c, b.all, b.mac)) return false;
    for (int r = 0; r < b.n_runs; r++) {
        if (!box_opens(c, b.runs + BN_LET_BOX * r, b.mac)) continue;
        const int e = min((r + 1) * BN_LET_BOX_RUN, b.n);
        for (int i = r * BN_LET_BOX_RUN; i < e; i++)
            if (box_opens(c, b.box + BN_LET_BOX * i, b.mac)) return true;
    }
    return false;
}

/* Node states: not sent, to be judged (its parent opened), closed, an
 * opened leaf (its bodies go), opened with children. */
enum : unsigned char { kUnsent = 0, kSent, kClosed, kLeaf, kOpened };

/* One level: each sent node judged; an opened one's children sent. */
__global__ void judge_level(bn_gpu_tree t, let_frame f, let_boxes b, int first, int end, unsigned char *state)
{
    const int v = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= end || state[v] != kSent) return;
    const bn_walk_cell c = cell_of(t, f, v);
    if (!any_opens(c, b)) {
        state[v] = kClosed;
    } else if (c.n_children == 0) {
        state[v] = kLeaf;
    } else {
        state[v] = kOpened;
        for (int k = 0; k < c.n_children; k++) state[c.first_child + k] = kSent;
    }
}

/* Scan inputs: a cell for every sent node, the bodies of opened leaves. */
__global__ void let_counts(bn_gpu_tree t, const unsigned char *state, int n, int *cell_at, int *body_at)
{
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    cell_at[v] = state[v] >= kClosed;
    body_at[v] = state[v] == kLeaf ? t.node_body[v].y : 0;
}

/* The message's cells and quadrupoles (cell_at, body_at: exclusive scans). */
__global__ void write_cells(bn_gpu_tree t, let_frame f, const unsigned char *state, int n, const int *cell_at,
                            const int *body_at, uint64_t *msg, long nc)
{
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n || state[v] < kClosed) return;
    bn_walk_cell c = cell_of(t, f, v);
    if (state[v] == kClosed) {
        c.r2 = -1.0; /* closed: its moments act on every group */
        c.gml2 = 0.0;
    }
    c.first_child = state[v] == kOpened ? cell_at[c.first_child] : -1;
    c.n_children = state[v] == kOpened ? c.n_children : 0;
    c.first_body = state[v] == kLeaf ? body_at[v] : 0;
    c.n_bodies = state[v] == kLeaf ? c.n_bodies : 0;
    const long at = cell_at[v];
    bn_walk_cell *cells = (bn_walk_cell *)(msg + 2);
    cells[at] = c;
    const float4 q0 = t.node_quad0[v], q1 = t.node_quad1[v];
    const double ML2 = f.M * f.L * f.L;
    double *q = (double *)(msg + 2 + nc * kCellWords) + 6 * at;
    q[0] = q0.x / ML2, q[1] = q0.y / ML2, q[2] = q0.z / ML2, q[3] = q0.w / ML2, q[4] = q1.x / ML2, q[5] = q1.y / ML2;
}

/* The opened leaves' bodies: x, y, z and masses (nb of each). */
__global__ void write_bodies(bn_gpu_tree t, const unsigned char *state, int n, const int *body_at, const double *x,
                             const double *y, const double *z, const float *m, double *out, long nb)
{
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n || state[v] != kLeaf) return;
    const int2 b = t.node_body[v];
    const long at = body_at[v];
    for (int j = 0; j < b.y; j++) {
        out[at + j] = x[b.x + j];
        out[nb + at + j] = y[b.x + j];
        out[2 * nb + at + j] = z[b.x + j];
        out[3 * nb + at + j] = m[b.x + j];
    }
}

/* The scratch of one pack, freed together. */
struct pack_scratch {
    unsigned char *state;
    int *cell_at, *body_at;
    double *boxes;
    uint64_t *msg;
    void *tmp;
};

void scratch_free(pack_scratch *p, cudaStream_t s)
{
    bn_cuda_free(p->state, s);
    bn_cuda_free(p->cell_at, s);
    bn_cuda_free(p->body_at, s);
    bn_cuda_free(p->boxes, s);
    bn_cuda_free(p->msg, s);
    bn_cuda_free(p->tmp, s);
}

/* In place: a[0..n] becomes its exclusive sum (a[n] the total). */
bn_status exclusive_sum(int *a, int n, void **tmp, size_t *tmp_bytes, cudaStream_t s)
{
    size_t bytes = 0;
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, bytes, a, a, n + 1, s));
    if (bytes > *tmp_bytes) {
        bn_cuda_free(*tmp, s);
        *tmp = NULL;
        BN_TRY(bn_cuda_alloc(tmp, bytes, "locally essential tree (scan)", s));
        *tmp_bytes = bytes;
    }
    BN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(*tmp, bytes, a, a, n + 1, s));
    return BN_OK;
}

/* The receiver's boxes on the device after their unions: all, runs, boxes. */
bn_status upload_boxes(const double *boxes, int n, double **dev, cudaStream_t s)
{
    const int runs = (n + BN_LET_BOX_RUN - 1) / BN_LET_BOX_RUN;
    const size_t count = (size_t)BN_LET_BOX * (1 + (size_t)runs + (size_t)n);
    double *h = (double *)bn_alloc_array(count, sizeof(double), "locally essential tree (boxes)");
    if (!h) return BN_ERR_NOMEM;
    bn_let_box_unions(boxes, n, h, h + BN_LET_BOX);
    memcpy(h + BN_LET_BOX * (1 + (size_t)runs), boxes, (size_t)BN_LET_BOX * n * sizeof(double));
    bn_status r = bn_cuda_dev_alloc(dev, count, "locally essential tree (boxes)", s);
    cudaError_t e = cudaSuccess;
    if (r == BN_OK) e = cudaMemcpyAsync(*dev, h, count * sizeof(double), cudaMemcpyHostToDevice, s);
    if (r == BN_OK && e == cudaSuccess) e = cudaStreamSynchronize(s); /* h is read before it is freed */
    if (r == BN_OK && e != cudaSuccess) r = bn_cuda_fail(e, "locally essential tree: boxes up", __FILE__, __LINE__);
    free(h);
    return r;
}

/* Sets the message's two counts on the device (the words are written
 * there: the device path never holds them on the host). */
__global__ void write_counts(uint64_t *msg, long nc, long nb)
{
    msg[0] = (uint64_t)nc;
    msg[1] = (uint64_t)nb;
}

/* The LET for one receiver's boxes, written to p->msg on the device
 * (*words of it; *nc cells, *nb bodies). */
bn_status pack(const bn_gpu_let_tree *lt, const double *boxes, int nbox, pack_scratch *p, size_t *words, long *nc,
               long *nb)
{
    const bn_gpu_tree *t = lt->t;
    const int N = t->n_nodes;
    cudaStream_t s = lt->s;
    const let_frame f = frame_of(lt);
    BN_TRY(upload_boxes(boxes, nbox, &p->boxes, s));
    const int runs = (nbox + BN_LET_BOX_RUN - 1) / BN_LET_BOX_RUN;
    const let_boxes b = {p->boxes, p->boxes + BN_LET_BOX, p->boxes + BN_LET_BOX * (1 + runs), nbox, runs, lt->mac};
    BN_TRY(bn_cuda_dev_alloc(&p->state, (size_t)N, "locally essential tree (states)", s));
    BN_TRY(bn_cuda_dev_alloc(&p->cell_at, (size_t)N + 1, "locally essential tree (cells)", s));
    BN_TRY(bn_cuda_dev_alloc(&p->body_at, (size_t)N + 1, "locally essential tree (bodies)", s));
    BN_CUDA_CHECK(cudaMemsetAsync(p->state, kUnsent, (size_t)N, s));
    BN_CUDA_CHECK(cudaMemsetAsync(p->state, kSent, 1, s)); /* the root */
    for (int l = 0; l < t->n_levels; l++) {
        const int first = t->level_start[l], end = t->level_start[l + 1];
        if (end > first) judge_level<<<blocks_for(end - first), kThreads, 0, s>>>(*t, f, b, first, end, p->state);
    }
    let_counts<<<blocks_for(N), kThreads, 0, s>>>(*t, p->state, N, p->cell_at, p->body_at);
    BN_CUDA_LAUNCH_CHECK();
    size_t tmp_bytes = 0;
    BN_TRY(exclusive_sum(p->cell_at, N, &p->tmp, &tmp_bytes, s));
    BN_TRY(exclusive_sum(p->body_at, N, &p->tmp, &tmp_bytes, s));
    int total[2];
    BN_TRY(bn_cuda_read(total, p->cell_at + N, sizeof(int), "locally essential tree (count)", s));
    BN_TRY(bn_cuda_read(total + 1, p->body_at + N, sizeof(int), "locally essential tree (count)", s));
    *nc = total[0];
    *nb = total[1];
    *words = 2 + (size_t)*nc * (kCellWords + 6) + 4 * (size_t)*nb;
    BN_TRY(bn_cuda_dev_alloc(&p->msg, *words, "locally essential tree (message)", s));
    write_counts<<<1, 1, 0, s>>>(p->msg, *nc, *nb);
    write_cells<<<blocks_for(N), kThreads, 0, s>>>(*t, f, p->state, N, p->cell_at, p->body_at, p->msg, *nc);
    write_bodies<<<blocks_for(N), kThreads, 0, s>>>(*t, p->state, N, p->body_at, lt->pos[0], lt->pos[1], lt->pos[2],
                                                    lt->mass, (double *)(p->msg + 2 + *nc * (kCellWords + 6)), *nb);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

/* ---- the target boxes ---- */

/* Nodes whose parent holds more than thr bodies (and has children):
 * flagged, the root too. */
__global__ void flag_children(bn_gpu_tree t, int n, int thr, unsigned char *flag)
{
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    if (v == 0) flag[0] = 1;
    const int2 b = t.node_body[v], c = t.node_child[v];
    if (b.y > thr && c.y > 0)
        for (int k = 0; k < c.y; k++) flag[c.x + k] = 1;
}

/* The shallowest nodes with at most thr bodies (or leaves): a flagged
 * node that is not split itself. Listed by their body ranges (appended
 * in any order; sorted on the host). */
__global__ void list_box_nodes(bn_gpu_tree t, int n, int thr, const unsigned char *flag, int2 *list, int *count)
{
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n || !flag[v]) return;
    const int2 b = t.node_body[v], c = t.node_child[v];
    if (b.y > thr && c.y > 0) return;
    list[atomicAdd(count, 1)] = b;
}

/* One warp per box: its bodies' exact box, and for the accel criterion
 * the smallest alpha |a_old| / G of the groups inside (group_half.w),
 * back in the user's units with G. */
__global__ void box_of_nodes(bn_gpu_tree t, let_frame f, const int2 *range, int n, const double *x, const double *y,
                             const double *z, int accel, double *out)
{
    const int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (i >= n) return;
    const int2 r = range[i];
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int j = r.x + lane; j < r.x + r.y; j += 32) {
        const double p[3] = {x[j], y[j], z[j]};
        for (int k = 0; k < 3; k++) lo[k] = fmin(lo[k], p[k]), hi[k] = fmax(hi[k], p[k]);
    }
    float amin = INFINITY;
    if (accel) { /* the groups are contiguous in body order: the first at or after r.x, found by halving */
        int a = 0, e = bn_gpu_tree_groups(&t);
        while (a < e) {
            const int m = (a + e) / 2;
            if (t.group_body[m].x < r.x) a = m + 1;
            else e = m;
        }
        for (int g = a + lane; g < bn_gpu_tree_groups(&t) && t.group_body[g].x < r.x + r.y; g += 32)
            amin = fminf(amin, t.group_half[g].w);
    }
    for (int off = 16; off > 0; off /= 2) {
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], __shfl_xor_sync(0xffffffffu, lo[k], off));
            hi[k] = fmax(hi[k], __shfl_xor_sync(0xffffffffu, hi[k], off));
        }
        amin = fminf(amin, __shfl_xor_sync(0xffffffffu, amin, off));
    }
    if (lane) return;
    double *o = out + BN_LET_BOX * (size_t)i;
    for (int k = 0; k < 3; k++) o[k] = lo[k], o[3 + k] = hi[k];
    o[6] = accel ? (double)amin * f.G * f.L * f.L / f.M : 0.0;
}

int by_first_body(const void *a, const void *b)
{
    const int x = ((const int2 *)a)->x, y = ((const int2 *)b)->x;
    return (x > y) - (x < y);
}

struct box_scratch {
    unsigned char *flag;
    int2 *list;
    int *count;
    double *box;
};

bn_status boxes(const bn_gpu_let_tree *lt, double **out, size_t *nout, box_scratch *p, int2 **host_list)
{
    const bn_gpu_tree *t = lt->t;
    const int N = t->n_nodes;
    cudaStream_t s = lt->s;
    const int thr = bn_let_box_bodies((size_t)t->n, lt->group_size);
    BN_TRY(bn_cuda_dev_alloc(&p->flag, (size_t)N, "target boxes", s));
    BN_TRY(bn_cuda_dev_alloc(&p->list, (size_t)N, "target boxes", s));
    BN_TRY(bn_cuda_dev_alloc(&p->count, 1, "target boxes", s));
    BN_CUDA_CHECK(cudaMemsetAsync(p->flag, 0, (size_t)N, s));
    BN_CUDA_CHECK(cudaMemsetAsync(p->count, 0, sizeof(int), s));
    flag_children<<<blocks_for(N), kThreads, 0, s>>>(*t, N, thr, p->flag);
    list_box_nodes<<<blocks_for(N), kThreads, 0, s>>>(*t, N, thr, p->flag, p->list, p->count);
    BN_CUDA_LAUNCH_CHECK();
    int n = 0;
    BN_TRY(bn_cuda_read(&n, p->count, sizeof n, "target boxes", s));
    *host_list = (int2 *)bn_alloc_array((size_t)n + 1, sizeof(int2), "target boxes");
    *out = (double *)bn_alloc_array((size_t)n + 1, BN_LET_BOX * sizeof(double), "target boxes");
    if (!*host_list || !*out) return BN_ERR_NOMEM;
    BN_TRY(bn_cuda_read(*host_list, p->list, (size_t)n * sizeof(int2), "target boxes", s));
    qsort(*host_list, (size_t)n, sizeof(int2), by_first_body); /* key order, whatever the appends' */
    BN_CUDA_CHECK(cudaMemcpyAsync(p->list, *host_list, (size_t)n * sizeof(int2), cudaMemcpyHostToDevice, s));
    BN_TRY(bn_cuda_dev_alloc(&p->box, (size_t)BN_LET_BOX * n, "target boxes", s));
    if (n > 0)
        box_of_nodes<<<blocks_for(32L * n), kThreads, 0, s>>>(*t, frame_of(lt), p->list, n, lt->pos[0], lt->pos[1],
                                                              lt->pos[2], lt->mac == BN_MAC_ACCEL, p->box);
    BN_CUDA_LAUNCH_CHECK();
    BN_TRY(bn_cuda_read(*out, p->box, (size_t)BN_LET_BOX * n * sizeof(double), "target boxes", s));
    *nout = (size_t)n;
    return BN_OK;
}
} // namespace

bn_status bn_gpu_let_boxes(const bn_gpu_let_tree *lt, double **box, size_t *n)
{
    *box = NULL;
    *n = 0;
    if (lt->t->n_nodes == 0) return BN_OK;
    box_scratch p;
    memset(&p, 0, sizeof p);
    int2 *list = NULL;
    const bn_status r = boxes(lt, box, n, &p, &list);
    bn_cuda_free(p.flag, lt->s);
    bn_cuda_free(p.list, lt->s);
    bn_cuda_free(p.count, lt->s);
    bn_cuda_free(p.box, lt->s);
    free(list);
    if (r != BN_OK) {
        free(*box);
        *box = NULL;
        *n = 0;
    }
    return r;
}

bn_status bn_gpu_let_pack_device(const bn_gpu_let_tree *lt, const double *boxes, int n, bn_gpu_let_msg *out)
{
    memset(out, 0, sizeof *out);
    if (lt->t->n_nodes == 0 || n <= 0) return BN_OK;
    pack_scratch p;
    memset(&p, 0, sizeof p);
    const bn_status r = pack(lt, boxes, n, &p, &out->words, &out->n_cells, &out->n_bodies);
    if (r == BN_OK) {
        out->w = p.msg; /* the caller's now */
        p.msg = NULL;
    } else {
        memset(out, 0, sizeof *out);
    }
    scratch_free(&p, lt->s);
    return r;
}
