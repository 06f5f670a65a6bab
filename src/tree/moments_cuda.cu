/*
 * Multipole moments on the GPU, bottom-up like the CPU stage: every leaf
 * sums its bodies (all leaves in one launch), then the inner nodes level
 * by level combine their children by the parallel-axis theorem.
 * Everything is accumulated in double (central second moments, a leaf's
 * about its first body and an inner node's by the parallel-axis theorem,
 * never raw moments about a far origin, so deep small cells keep their
 * precision), one thread per node in a fixed order: deterministic, no
 * atomics. Stored in float, with the opening radius from
 * bn_mac_cell_radius (the CPU's function). The centres of mass are
 * stored last, relative to the root's centre of mass, which becomes the
 * tree's ref, as two floats each (hi + lo, tree_gpu.h): the walk then
 * sees them to 2^-48 of their distance from ref, so a cell of a small
 * system far from ref keeps its precision. The octant of a node is found
 * from its first body's position with the keys' quantizer, so the keys
 * need not live through this stage (device memory at its peak).
 */
#include "gravity/interact.h"
#include "tree/tree_cuda.h"

namespace {
const int kThreads = 128;

struct moments {
    double m, c[3];  /* mass, centre of mass (relative to ref)          */
    double s[6];     /* sum m (x-c)_i (x-c)_j: xx, yy, zz, xy, xz, yz    */
    float lo[3], hi[3]; /* bounding box of the bodies relative to c,
                           rounded outwards: bonsai-box; float keeps the
                           scratch small, relative to c keeps it exact
                           far from ref                               */
};

struct level_args {
    const int2 *node_body, *node_child;
    const double *x, *y, *z;
    const float *mass;
    int octants;               /* 0: a refresh (no octants)               */
    const bn_gpu_frame *frame; /* key cube, ref (the cube's centre here),
                                  the tree's shape and octant scale      */
    double theta;
    double len_scale, mass_scale; /* the floats' units (tree_gpu.h)      */
    int hilbert, mac, quadrupole, level;
    moments *mom;
    float4 *quad0, *quad1;
};

__device__ void add_second(double *s, double m, double dx, double dy, double dz)
{
    s[0] += m * dx * dx;
    s[1] += m * dy * dy;
    s[2] += m * dz * dz;
    s[3] += m * dx * dy;
    s[4] += m * dx * dz;
    s[5] += m * dy * dz;
}

/* Geometric centre (relative to ref) of the level-L cell holding the
 * point p (a body's position): its integer coordinates are those the
 * body's key was made of (keys_cuda.cu quantizes the same positions in
 * the same cube). */
__device__ void cell_centre(const level_args &a, const double p[3], int level, double l, double centre[3])
{
    const double inv_size = 1.0 / a.frame->box_size;
    for (int k = 0; k < 3; k++) {
        const uint32_t ix = bn_key_quantize(p[k], a.frame->box_lo[k], inv_size);
        const uint32_t cell = ix >> (BN_KEY_MAX_LEVEL - level);
        centre[k] = a.frame->box_lo[k] + ((double)cell + 0.5) * l - a.frame->ref[k];
    }
}

/* The box [lo, hi] (relative to ref) as floats relative to c, rounded
 * outwards. */
__device__ void set_box(moments *r, const double lo[3], const double hi[3])
{
    for (int k = 0; k < 3; k++) {
        r->lo[k] = __double2float_rd(lo[k] - r->c[k]);
        r->hi[k] = __double2float_ru(hi[k] - r->c[k]);
    }
}

/* Massless bodies are allowed: a massless node's centre is the mean of
 * its bodies' positions (children's centres), as on the CPU. One pass
 * over the bodies (a second only for a massless leaf): sums about the
 * first body, made central at the end: sum m (d-c)(d-c) = sum m d d -
 * M c c, as sum m d = M c. A leaf is small, so d is small and the
 * difference loses only a few bits of a double where the first body lies
 * far from the centre of mass (a diagonal may come out a rounding below
 * 0; nothing takes its root, and the quadrupole is stored in float).
 * Few live doubles: this loop's registers decide how many warps hide its
 * loads. */
__device__ moments leaf_moments(const level_args &a, int2 b, double o[3])
{
    moments r = {};
    o[0] = a.x[b.x];
    o[1] = a.y[b.x];
    o[2] = a.z[b.x];
    double first[3] = {0, 0, 0}, lo[3] = {o[0], o[1], o[2]}, hi[3] = {o[0], o[1], o[2]};
    for (int i = b.x; i < b.x + b.y; i++) {
        const double m = a.mass[i];
        const double p[3] = {a.x[i], a.y[i], a.z[i]};
        const double d[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]};
        r.m += m;
        for (int k = 0; k < 3; k++) {
            first[k] += m * d[k];
            lo[k] = fmin(lo[k], p[k]); /* the box from the positions themselves: exact */
            hi[k] = fmax(hi[k], p[k]);
        }
        add_second(r.s, m, d[0], d[1], d[2]);
    }
    double c[3];
    for (int k = 0; k < 3; k++) c[k] = r.m > 0 ? first[k] / r.m : 0.0;
    if (r.m > 0)
        add_second(r.s, -r.m, c[0], c[1], c[2]);
    else /* no mass: the mean position */
        for (int i = b.x; i < b.x + b.y; i++) {
            c[0] += (a.x[i] - o[0]) / b.y;
            c[1] += (a.y[i] - o[1]) / b.y;
            c[2] += (a.z[i] - o[2]) / b.y;
        }
    const double *ref = a.frame->ref;
    for (int k = 0; k < 3; k++) {
        r.c[k] = (o[k] - ref[k]) + c[k];
        lo[k] -= ref[k];
        hi[k] -= ref[k];
    }
    set_box(&r, lo, hi);
    return r;
}

__device__ moments inner_moments(const level_args &a, int2 ch)
{
    moments r = {};
    double mean[3] = {0, 0, 0};
    for (int c = ch.x; c < ch.x + ch.y; c++) {
        const double m = a.mom[c].m;
        for (int k = 0; k < 3; k++) {
            r.c[k] += m * a.mom[c].c[k];
            mean[k] += a.mom[c].c[k];
        }
        r.m += m;
    }
    for (int k = 0; k < 3; k++) r.c[k] = r.m > 0 ? r.c[k] / r.m : mean[k] / ch.y;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int c = ch.x; c < ch.x + ch.y; c++) {
        const moments &q = a.mom[c];
        for (int j = 0; j < 6; j++) r.s[j] += q.s[j];
        add_second(r.s, q.m, q.c[0] - r.c[0], q.c[1] - r.c[1], q.c[2] - r.c[2]);
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], q.c[k] + q.lo[k]);
            hi[k] = fmax(hi[k], q.c[k] + q.hi[k]);
        }
    }
    set_box(&r, lo, hi);
    return r;
}

/* A node's quadrupole, opening radius and the accel criterion's M l^2
 * (quad0, quad1: what the walk reads besides the centre of mass); first:
 * the position of its first body, whose key cell is the node's octant. */
__device__ void store_node(const level_args &a, int node, int level, bool octants, const moments &r,
                           const double first[3])
{
    const double l = a.frame->tree_box_size / (double)(1u << level);
    double centre[3];
    if (octants) cell_centre(a, first, level, l, centre);
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = r.c[k] + r.lo[k];
        hi[k] = r.c[k] + r.hi[k];
    }
    const double rad = bn_mac_cell_radius(a.mac, a.theta, l, octants ? centre : NULL, r.c, lo, hi);
    const double side = bn_mac_cell_side(a.mac, l, lo, hi); /* the accel criterion's l */
    const double L = a.len_scale, ML2 = a.mass_scale * L * L; /* powers of two */
    const double tr = a.quadrupole ? r.s[0] + r.s[1] + r.s[2] : 0.0;
    const double q = a.quadrupole ? 3.0 : 0.0; /* Q = 3 S - tr(S) I, traceless */
    a.quad0[node] = make_float4((float)(ML2 * (q * r.s[0] - tr)), (float)(ML2 * (q * r.s[1] - tr)),
                                (float)(ML2 * (q * r.s[2] - tr)), (float)(ML2 * q * r.s[3]));
    a.quad1[node] = make_float4((float)(ML2 * q * r.s[4]), (float)(ML2 * q * r.s[5]), (float)(L * L * rad * rad),
                                (float)(ML2 * r.m * side * side));
}

/* Every leaf, whatever its level, in one launch: leaves need nothing
 * but their bodies, and most of the work is theirs. (Leaves and inner
 * nodes in one pass per level left the inner nodes' threads idle while
 * a leaf's thread read its bodies, in 22 short launches.) */
__global__ void leaf_kernel(level_args a)
{
    const bn_gpu_shape *sh = &a.frame->shape;
    const bool octants = a.octants && a.frame->fits;
    for (int node = blockIdx.x * blockDim.x + threadIdx.x; node < sh->n_nodes; node += gridDim.x * blockDim.x) {
        if (a.node_child[node].y > 0) continue;
        int level = 0;
        while (node >= sh->level_start[level + 1]) level++;
        double first[3];
        const moments r = leaf_moments(a, a.node_body[node], first);
        a.mom[node] = r;
        store_node(a, node, level, octants, r, first);
    }
}

/* The inner nodes of a.level, from their children's moments (their
 * range read from the device's shape; the grid is sized for the most the
 * level can hold, so it strides). */
__global__ void level_kernel(level_args a)
{
    const int *ls = a.frame->shape.level_start;
    const int end = ls[a.level + 1];
    const bool octants = a.octants && a.frame->fits;
    for (int node = ls[a.level] + blockIdx.x * blockDim.x + threadIdx.x; node < end;
         node += gridDim.x * blockDim.x) {
        const int2 ch = a.node_child[node];
        if (ch.y == 0) continue;
        const moments r = inner_moments(a, ch);
        a.mom[node] = r;
        double first[3] = {0, 0, 0};
        if (octants) {
            const int i = a.node_body[node].x;
            first[0] = a.x[i];
            first[1] = a.y[i];
            first[2] = a.z[i];
        }
        store_node(a, node, a.level, octants, r, first);
    }
}

/* com relative to the new ref (old ref + the root's com) as hi + lo in
 * the floats' units, once every node's moments are made; the frame's
 * ref moves with it (read next by the group boxes, which make the
 * bodies). */
__global__ void store_com(const moments *mom, bn_gpu_frame *frame, double len_scale, double mass_scale, float4 *com,
                          float4 *com_lo)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= frame->shape.n_nodes) return;
    const double *shift = mom[0].c;
    const moments &r = mom[i];
    float hi[3], lo[3];
    for (int k = 0; k < 3; k++) bn_gpu_split(len_scale * (r.c[k] - shift[k]), &hi[k], &lo[k]);
    com[i] = make_float4(hi[0], hi[1], hi[2], (float)(mass_scale * r.m));
    com_lo[i] = make_float4(lo[0], lo[1], lo[2], 0.f);
    if (i == 0)
        for (int k = 0; k < 3; k++) frame->ref[k] += shift[k];
}

/* Blocks for level l: enough for all the nodes it can hold (8^l, and
 * the capacity), at most kMaxBlocks (the kernel strides). */
int level_blocks(int level, int capacity)
{
    const int kMaxBlocks = 2048;
    long most = capacity;
    if (level < 10) most = most < (1L << (3 * level)) ? most : (1L << (3 * level));
    const long blocks = (most + kThreads - 1) / kThreads;
    return blocks < 1 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : (int)blocks;
}
} // namespace

extern "C" bn_status bn_gpu_moments(bn_gpu_tree_store *st, double *const pos[3], const float *mass, int octants,
                                    const bn_gravity_params *g, cudaStream_t s)
{
    bn_gpu_tree *t = &st->t;
    const int bound = t->node_bound;
    if (bound <= 0) return BN_OK;
    moments *mom = NULL;
    BN_TRY(bn_cuda_alloc((void **)&mom, (size_t)bound * sizeof(moments), "moments scratch (double)", s));
    level_args a = {};
    a.node_body = t->node_body;
    a.node_child = t->node_child;
    a.x = pos[0];
    a.y = pos[1];
    a.z = pos[2];
    a.mass = mass;
    a.octants = octants;
    a.frame = st->frame;
    a.theta = g->theta;
    a.len_scale = t->len_scale;
    a.mass_scale = t->mass_scale;
    a.hilbert = g->curve == BN_CURVE_HILBERT;
    a.mac = (int)g->mac;
    a.quadrupole = g->quadrupole;
    a.mom = mom;
    a.quad0 = t->node_quad0;
    a.quad1 = t->node_quad1;
    bn_status st_out = BN_OK;
    leaf_kernel<<<level_blocks(BN_KEY_MAX_LEVEL, bound), kThreads, 0, s>>>(a);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) st_out = bn_cuda_fail(err, "moments leaf_kernel launch", __FILE__, __LINE__);
    /* every level a tree can have inner nodes on: the host does not know
     * its depth (level 21 holds only leaves) */
    for (int level = BN_KEY_MAX_LEVEL - 1; level >= 0 && st_out == BN_OK; level--) {
        a.level = level;
        level_kernel<<<level_blocks(level, bound), kThreads, 0, s>>>(a);
        err = cudaGetLastError();
        if (err != cudaSuccess) st_out = bn_cuda_fail(err, "moments level_kernel launch", __FILE__, __LINE__);
    }
    if (st_out == BN_OK) {
        store_com<<<(bound + kThreads - 1) / kThreads, kThreads, 0, s>>>(mom, st->frame, t->len_scale,
                                                                         t->mass_scale, t->node_com, t->node_com_lo);
        err = cudaGetLastError();
        if (err != cudaSuccess) st_out = bn_cuda_fail(err, "moments store_com launch", __FILE__, __LINE__);
    }
    bn_cuda_free(mom, s);
    return st_out;
}
