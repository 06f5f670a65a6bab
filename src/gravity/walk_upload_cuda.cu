/*
 * Test and benchmark support (walk_upload.h): a host-built octree in the
 * device layout of tree_gpu.h. Plain loops in double; O(N depth).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/cuda_check.h"
#include "gravity/interact.h"
#include "gravity/walk_upload.h"

typedef struct hb_key {
    uint64_t key;
    int idx;
} hb_key;

static int hb_key_cmp(const void *a, const void *b)
{
    const hb_key *x = (const hb_key *)a, *y = (const hb_key *)b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->idx - y->idx; /* stable */
}

/* Nodes under construction (host). */
typedef struct hb_nodes {
    int n, cap;
    int2 *body, *child;
    int *level;
} hb_nodes;

static int hb_push(hb_nodes *h, int first, int count, int level)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 1024;
        h->body = (int2 *)realloc(h->body, h->cap * sizeof(int2));
        h->child = (int2 *)realloc(h->child, h->cap * sizeof(int2));
        h->level = (int *)realloc(h->level, h->cap * sizeof(int));
        if (!h->body || !h->child || !h->level) return -1;
    }
    h->body[h->n] = make_int2(first, count);
    h->child[h->n] = make_int2(-1, 0);
    h->level[h->n] = level;
    return h->n++;
}

/* Level by level: a node with more than leaf_size bodies splits by the
 * next 3 key bits into its non-empty octants (contiguous runs of keys). */
static int hb_build(hb_nodes *h, const hb_key *k, int n, int leaf_size, int level_start[], int *n_levels)
{
    if (hb_push(h, 0, n, 0) < 0) return -1;
    level_start[0] = 0;
    level_start[1] = 1;
    int L = 0;
    while (L <= BN_KEY_MAX_LEVEL && level_start[L] < level_start[L + 1]) {
        for (int nd = level_start[L]; nd < level_start[L + 1]; nd++) {
            const int2 b = h->body[nd];
            if (b.y <= leaf_size || L == BN_KEY_MAX_LEVEL) continue;
            const int shift = 3 * (BN_KEY_MAX_LEVEL - 1 - L);
            int first = h->n, count = 0;
            for (int j = b.x; j < b.x + b.y;) {
                const uint64_t d = (k[j].key >> shift) & 7u;
                int e = j;
                while (e < b.x + b.y && ((k[e].key >> shift) & 7u) == d) e++;
                if (hb_push(h, j, e - j, L + 1) < 0) return -1;
                count++;
                j = e;
            }
            h->child[nd] = make_int2(first, count);
        }
        level_start[L + 2] = h->n;
        L++;
    }
    *n_levels = L;
    return 0;
}

/* Everything the device tree holds, on the host. */
typedef struct hb_host {
    float4 *body, *body_lo, *com, *com_lo, *q0, *q1, *gbox, *ghalf;
    int2 *gbody;
    int *order;
    int n_groups;
} hb_host;

static void hb_moments(const hb_nodes *h, const bn_particles *p, const hb_key *k, const uint32_t (*ic)[3],
                       const double lo[3], double size, const bn_gpu_tree *t, const bn_gravity_params *g, hb_host *o)
{
    for (int nd = 0; nd < h->n; nd++) {
        const int2 b = h->body[nd];
        double M = 0, c[3] = {0, 0, 0}, Q[6] = {0, 0, 0, 0, 0, 0};
        for (int j = b.x; j < b.x + b.y; j++) {
            const int i = k[j].idx;
            M += p->mass[i];
            for (int d = 0; d < 3; d++) c[d] += p->mass[i] * p->pos[d][i];
        }
        for (int d = 0; d < 3; d++) c[d] = M > 0 ? c[d] / M : p->pos[d][k[b.x].idx];
        for (int j = b.x; j < b.x + b.y; j++) {
            const int i = k[j].idx;
            const double x = p->pos[0][i] - c[0], y = p->pos[1][i] - c[1], z = p->pos[2][i] - c[2];
            const double m = p->mass[i], r2 = x * x + y * y + z * z;
            Q[BN_QXX] += m * (3 * x * x - r2);
            Q[BN_QYY] += m * (3 * y * y - r2);
            Q[BN_QZZ] += m * (3 * z * z - r2);
            Q[BN_QXY] += m * 3 * x * y;
            Q[BN_QXZ] += m * 3 * x * z;
            Q[BN_QYZ] += m * 3 * y * z;
        }
        /* geometric centre of the cell from the first body's integer coordinates */
        const int L = h->level[nd];
        const uint32_t cell = 1u << (BN_KEY_BITS - L);
        const double unit = size / (double)(1u << BN_KEY_BITS), l = size / (double)(1u << L);
        double delta2 = 0;
        for (int d = 0; d < 3; d++) {
            const double centre = lo[d] + ((double)(ic[b.x][d] & ~(cell - 1u)) + 0.5 * cell) * unit;
            delta2 += (c[d] - centre) * (c[d] - centre);
        }
        const double r = bn_mac_open_radius((int)g->mac, l, sqrt(delta2), g->theta);
        float hi[3], lo[3];
        const double Ls = t->len_scale, ML2 = t->mass_scale * Ls * Ls; /* the tree's units */
        for (int d = 0; d < 3; d++) bn_gpu_split(Ls * (c[d] - t->ref[d]), &hi[d], &lo[d]);
        o->com[nd] = make_float4(hi[0], hi[1], hi[2], (float)(t->mass_scale * M));
        o->com_lo[nd] = make_float4(lo[0], lo[1], lo[2], 0.f);
        o->q0[nd] = make_float4((float)(ML2 * Q[BN_QXX]), (float)(ML2 * Q[BN_QYY]), (float)(ML2 * Q[BN_QZZ]),
                                (float)(ML2 * Q[BN_QXY]));
        o->q1[nd] = make_float4((float)(ML2 * Q[BN_QXZ]), (float)(ML2 * Q[BN_QYZ]), (float)(Ls * Ls * r * r),
                                (float)(ML2 * M * l * l));
    }
}

/* Groups: depth first in child order (= key order), the first node on a
 * path with at most group_size bodies, or a leaf. */
static int hb_groups(const hb_nodes *h, const bn_particles *p, const hb_key *k, const bn_gpu_tree *t,
                     const bn_gravity_params *g, const double *amag, hb_host *o)
{
    int *stack = (int *)malloc((size_t)h->n * sizeof(int)), top = 0;
    if (!stack) return -1;
    stack[top++] = 0;
    o->n_groups = 0;
    while (top > 0) {
        const int nd = stack[--top];
        const int2 b = h->body[nd], c = h->child[nd];
        if (b.y > g->group_size && c.y > 0) {
            for (int j = c.y - 1; j >= 0; j--) stack[top++] = c.x + j;
            continue;
        }
        double blo[3] = {1e300, 1e300, 1e300}, bhi[3] = {-1e300, -1e300, -1e300}, amin = 1e300;
        for (int j = b.x; j < b.x + b.y; j++) {
            const int i = k[j].idx;
            for (int d = 0; d < 3; d++) {
                blo[d] = fmin(blo[d], t->len_scale * (p->pos[d][i] - t->ref[d]));
                bhi[d] = fmax(bhi[d], t->len_scale * (p->pos[d][i] - t->ref[d]));
            }
            if (amag) amin = fmin(amin, amag[i]);
        }
        const int G = o->n_groups++;
        o->gbody[G] = make_int2(b.x, b.y);
        /* the centre a float (the group's frame), the half sizes from it
         * rounded up so that the float box still holds every body */
        float gc[3], hh[3];
        for (int d = 0; d < 3; d++) {
            gc[d] = (float)(0.5 * (blo[d] + bhi[d]));
            hh[d] = (float)(fmax(bhi[d] - gc[d], gc[d] - blo[d]) * (1 + 1e-6));
        }
        o->gbox[G] = make_float4(gc[0], gc[1], gc[2], 0.f);
        const double alpha = bn_gpu_accel_alpha(g->accel_alpha, g->G, t->len_scale, t->mass_scale);
        o->ghalf[G] = make_float4(hh[0], hh[1], hh[2], g->mac == BN_MAC_ACCEL && amag ? (float)(alpha * amin) : 0.f);
    }
    free(stack);
    return 0;
}

static bn_status hb_upload(void **dst, const void *src, size_t bytes, const char *what)
{
    BN_TRY(bn_cuda_alloc(dst, bytes, what, 0));
    if (bytes) BN_CUDA_CHECK(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
    return BN_OK;
}

static bn_status hb_upload_all(bn_gpu_tree *t, const hb_nodes *h, const hb_host *o)
{
    const size_t nn = (size_t)h->n, ng = (size_t)o->n_groups, n = (size_t)t->n;
    BN_TRY(hb_upload((void **)&t->body, o->body, n * sizeof(float4), "test tree bodies"));
    BN_TRY(hb_upload((void **)&t->body_lo, o->body_lo, n * sizeof(float4), "test tree bodies (lo)"));
    BN_TRY(hb_upload((void **)&t->order, o->order, n * sizeof(int), "test tree order"));
    BN_TRY(hb_upload((void **)&t->node_body, h->body, nn * sizeof(int2), "test tree node_body"));
    BN_TRY(hb_upload((void **)&t->node_child, h->child, nn * sizeof(int2), "test tree node_child"));
    BN_TRY(hb_upload((void **)&t->node_com, o->com, nn * sizeof(float4), "test tree node_com"));
    BN_TRY(hb_upload((void **)&t->node_com_lo, o->com_lo, nn * sizeof(float4), "test tree node_com_lo"));
    BN_TRY(hb_upload((void **)&t->node_quad0, o->q0, nn * sizeof(float4), "test tree node_quad0"));
    BN_TRY(hb_upload((void **)&t->node_quad1, o->q1, nn * sizeof(float4), "test tree node_quad1"));
    BN_TRY(hb_upload((void **)&t->group_body, o->gbody, ng * sizeof(int2), "test tree group_body"));
    BN_TRY(hb_upload((void **)&t->group_box, o->gbox, ng * sizeof(float4), "test tree group_box"));
    BN_TRY(hb_upload((void **)&t->group_half, o->ghalf, ng * sizeof(float4), "test tree group_half"));
    return BN_OK;
}

extern "C" bn_status bn_gpu_tree_from_host(const bn_particles *p, const bn_gravity_params *g,
                                           const double *acc_old_mag, bn_gpu_tree *t, int **order_host)
{
    memset(t, 0, sizeof *t);
    if (order_host) *order_host = NULL;
    if (!p || p->n == 0 || p->n > 0x7fffffff) return bn_fail(BN_ERR_ARGUMENT, "test tree: need 1..2^31-1 particles");
    const int n = (int)p->n;
    double lo[3], hi[3], size = 0;
    for (int d = 0; d < 3; d++) {
        lo[d] = hi[d] = p->pos[d][0];
        for (int i = 1; i < n; i++) {
            lo[d] = fmin(lo[d], p->pos[d][i]);
            hi[d] = fmax(hi[d], p->pos[d][i]);
        }
        size = fmax(size, hi[d] - lo[d]);
    }
    size = size > 0 ? size * (1 + 1e-9) : 1.0;
    for (int d = 0; d < 3; d++) t->ref[d] = lo[d] + 0.5 * size;
    double mass = 0;
    for (int i = 0; i < n; i++) mass += p->mass[i];
    t->len_scale = bn_gpu_length_scale(size, g->softening);
    t->mass_scale = bn_gpu_unit_scale(mass);

    hb_key *k = (hb_key *)malloc((size_t)n * sizeof *k);
    uint32_t(*ic)[3] = (uint32_t(*)[3])malloc((size_t)n * sizeof *ic);
    hb_nodes h = {0, 0, NULL, NULL, NULL};
    hb_host o;
    memset(&o, 0, sizeof o);
    bn_status st = BN_ERR_NOMEM;
    if (!k || !ic) goto done;
    for (int i = 0; i < n; i++) {
        uint32_t c[3];
        for (int d = 0; d < 3; d++) c[d] = bn_key_quantize(p->pos[d][i], lo[d], 1.0 / size);
        k[i].key = bn_key_encode(g->curve == BN_CURVE_HILBERT, c[0], c[1], c[2]);
        k[i].idx = i;
    }
    qsort(k, (size_t)n, sizeof *k, hb_key_cmp);
    for (int j = 0; j < n; j++)
        for (int d = 0; d < 3; d++) ic[j][d] = bn_key_quantize(p->pos[d][k[j].idx], lo[d], 1.0 / size);
    t->n = n;
    if (hb_build(&h, k, n, g->leaf_size, t->level_start, &t->n_levels) < 0) goto done;
    t->n_nodes = h.n;
    for (int nd = 0; nd < h.n; nd++) t->n_leaves += h.child[nd].y == 0;

    o.body = (float4 *)malloc((size_t)n * sizeof(float4));
    o.body_lo = (float4 *)malloc((size_t)n * sizeof(float4));
    o.order = (int *)malloc((size_t)n * sizeof(int));
    o.com = (float4 *)malloc((size_t)h.n * sizeof(float4));
    o.com_lo = (float4 *)malloc((size_t)h.n * sizeof(float4));
    o.q0 = (float4 *)malloc((size_t)h.n * sizeof(float4));
    o.q1 = (float4 *)malloc((size_t)h.n * sizeof(float4));
    o.gbody = (int2 *)malloc((size_t)h.n * sizeof(int2));
    o.gbox = (float4 *)malloc((size_t)h.n * sizeof(float4));
    o.ghalf = (float4 *)malloc((size_t)h.n * sizeof(float4));
    if (!o.body || !o.body_lo || !o.order || !o.com || !o.com_lo || !o.q0 || !o.q1 || !o.gbody || !o.gbox || !o.ghalf) goto done;
    for (int j = 0; j < n; j++) {
        const int i = k[j].idx;
        o.order[j] = i;
        float hi[3], lo[3];
        for (int d = 0; d < 3; d++) bn_gpu_split(t->len_scale * (p->pos[d][i] - t->ref[d]), &hi[d], &lo[d]);
        o.body[j] = make_float4(hi[0], hi[1], hi[2], (float)(t->mass_scale * p->mass[i]));
        o.body_lo[j] = make_float4(lo[0], lo[1], lo[2], 0.f);
    }
    hb_moments(&h, p, k, ic, lo, size, t, g, &o);
    if (hb_groups(&h, p, k, t, g, acc_old_mag, &o) < 0) goto done;
    t->n_groups = o.n_groups;
    t->shape = NULL; /* the host's counts are exact */
    t->node_bound = t->n_nodes;
    t->group_bound = t->n_groups;
    st = hb_upload_all(t, &h, &o);
    if (st == BN_OK && order_host) {
        *order_host = o.order;
        o.order = NULL;
    }
done:
    if (st == BN_ERR_NOMEM) bn_fail(st, "test tree: out of host memory for %d particles", n);
    free(k);
    free(ic);
    free(h.body);
    free(h.child);
    free(h.level);
    free(o.body);
    free(o.body_lo);
    free(o.order);
    free(o.com);
    free(o.com_lo);
    free(o.q0);
    free(o.q1);
    free(o.gbody);
    free(o.gbox);
    free(o.ghalf);
    if (st != BN_OK) bn_gpu_tree_free_host_built(t);
    return st;
}

extern "C" void bn_gpu_tree_free_host_built(bn_gpu_tree *t)
{
    if (!t) return;
    bn_cuda_free(t->body, 0);
    bn_cuda_free(t->body_lo, 0);
    bn_cuda_free(t->order, 0);
    bn_cuda_free(t->node_body, 0);
    bn_cuda_free(t->node_child, 0);
    bn_cuda_free(t->node_com, 0);
    bn_cuda_free(t->node_com_lo, 0);
    bn_cuda_free(t->node_quad0, 0);
    bn_cuda_free(t->node_quad1, 0);
    bn_cuda_free(t->group_body, 0);
    bn_cuda_free(t->group_box, 0);
    bn_cuda_free(t->group_half, 0);
    memset(t, 0, sizeof *t);
}
