/*
 * The GPU tree brought to the host as a bn_tree, the CPU tree's layout:
 * for the tests, which compare the two builders field by field, and for
 * the backend across ranks, which packs its locally essential trees from
 * it (bn_gpu_tree_to_host).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "core/backend.h"
}
#include "core/backend_cuda.h"
#include "tree/tree_cuda.h"

namespace {
template <typename T>
bn_status copy_down(T *dst, const T *src, size_t n)
{
    if (n == 0) return BN_OK;
    return bn_cuda_read(dst, src, n * sizeof(T), "tree download", 0);
}

template <typename T>
T *host_array(size_t n, bool *ok)
{
    T *p = (T *)calloc(n ? n : 1, sizeof(T));
    if (!p) *ok = false;
    return p;
}

bn_status alloc_host_tree(bn_tree *t, size_t n, int nodes, int groups)
{
    bool ok = true;
    t->keys = host_array<uint64_t>(n, &ok);
    t->order = host_array<uint32_t>(n, &ok);
    for (int k = 0; k < 3; k++) t->pos[k] = host_array<double>(n, &ok);
    t->mass = host_array<double>(n, &ok);
    t->first_child = host_array<int32_t>(nodes, &ok);
    t->n_children = host_array<int32_t>(nodes, &ok);
    t->first_body = host_array<int32_t>(nodes, &ok);
    t->n_bodies = host_array<int32_t>(nodes, &ok);
    t->level = host_array<uint8_t>(nodes, &ok);
    t->center = host_array<double>(3 * (size_t)nodes, &ok);
    t->size = host_array<double>(nodes, &ok);
    t->mass_node = host_array<double>(nodes, &ok);
    t->com = host_array<double>(3 * (size_t)nodes, &ok);
    t->quad = host_array<double>(6 * (size_t)nodes, &ok);
    t->delta = host_array<double>(nodes, &ok);
    t->open_radius = host_array<double>(nodes, &ok);
    t->group_first = host_array<int32_t>(groups, &ok);
    t->group_count = host_array<int32_t>(groups, &ok);
    t->group_lo = host_array<double>(3 * (size_t)groups, &ok);
    t->group_hi = host_array<double>(3 * (size_t)groups, &ok);
    t->body_lo = host_array<double>(3 * (size_t)nodes, &ok);
    t->body_hi = host_array<double>(3 * (size_t)nodes, &ok);
    return ok ? BN_OK : bn_fail(BN_ERR_NOMEM, "host copy of the GPU tree (%zu bodies, %d nodes)", n, nodes);
}

/* Bodies: positions, masses, uploaded index; keys recomputed from the
 * positions with the device's cube and encoder (the same functions). */
bn_status download_bodies(const bn_gpu_tree_store *ts, double *pos[3], const float *mass, const int *orig, int hilbert,
                          int lean, bn_tree *t)
{
    const size_t n = t->n;
    float *m = (float *)malloc(n * sizeof(float) + 1);
    if (!m) return bn_fail(BN_ERR_NOMEM, "host copy of the GPU tree");
    bn_status r = BN_OK;
    for (int k = 0; k < 3 && r == BN_OK; k++) r = copy_down(t->pos[k], pos[k], n);
    if (r == BN_OK) r = copy_down(m, mass, n);
    if (r == BN_OK) r = copy_down((int *)t->order, orig, n);
    for (size_t i = 0; r == BN_OK && i < n; i++) {
        t->mass[i] = m[i];
        if (lean) continue;
        uint32_t c[3];
        for (int k = 0; k < 3; k++) c[k] = bn_key_quantize(t->pos[k][i], ts->frame_host->box_lo[k], 1.0 / ts->frame_host->box_size);
        t->keys[i] = bn_key_encode(hilbert, c[0], c[1], c[2]);
    }
    free(m);
    return r;
}

void node_geometry(const bn_gpu_tree_store *ts, int hilbert, bn_tree *t, int node, int level)
{
    const double l = ts->frame_host->box_size / (double)(1u << level);
    uint32_t c[3];
    bn_key_decode(hilbert, t->keys[t->first_body[node]], &c[0], &c[1], &c[2]);
    t->level[node] = (uint8_t)level;
    t->size[node] = l;
    double d2 = 0;
    for (int k = 0; k < 3; k++) {
        t->center[3 * node + k] = ts->frame_host->box_lo[k] + ((double)(c[k] >> (BN_KEY_MAX_LEVEL - level)) + 0.5) * l;
        const double d = t->com[3 * node + k] - t->center[3 * node + k];
        d2 += d * d;
    }
    t->delta[node] = sqrt(d2);
}

bn_status download_nodes(const bn_gpu_tree_store *ts, int hilbert, int lean, bn_tree *t)
{
    const bn_gpu_tree *g = &ts->t;
    const int nn = g->n_nodes;
    int2 *body = (int2 *)malloc(nn * sizeof(int2)), *child = (int2 *)malloc(nn * sizeof(int2));
    float4 *com = (float4 *)malloc(nn * sizeof(float4)), *q0 = (float4 *)malloc(nn * sizeof(float4));
    float4 *q1 = (float4 *)malloc(nn * sizeof(float4)), *lo = (float4 *)malloc(nn * sizeof(float4));
    bn_status r = body && child && com && q0 && q1 && lo ? BN_OK : bn_fail(BN_ERR_NOMEM, "host copy of GPU nodes");
    if (r == BN_OK) r = copy_down(body, g->node_body, nn);
    if (r == BN_OK) r = copy_down(child, g->node_child, nn);
    if (r == BN_OK) r = copy_down(com, g->node_com, nn);
    if (r == BN_OK) r = copy_down(lo, g->node_com_lo, nn);
    if (r == BN_OK) r = copy_down(q0, g->node_quad0, nn);
    if (r == BN_OK) r = copy_down(q1, g->node_quad1, nn);
    for (int level = 0; r == BN_OK && level < g->n_levels; level++)
        for (int i = g->level_start[level]; i < g->level_start[level + 1]; i++) {
            t->first_body[i] = body[i].x;
            t->n_bodies[i] = body[i].y;
            t->first_child[i] = child[i].y > 0 ? child[i].x : -1;
            t->n_children[i] = child[i].y;
            const double L = g->len_scale, ML2 = g->mass_scale * L * L; /* the tree's units back */
            t->mass_node[i] = com[i].w / g->mass_scale;
            const double c[3] = {(double)com[i].x + lo[i].x, (double)com[i].y + lo[i].y,
                                 (double)com[i].z + lo[i].z};
            const float q[6] = {q0[i].x, q0[i].y, q0[i].z, q0[i].w, q1[i].x, q1[i].y};
            for (int k = 0; k < 3; k++) t->com[3 * i + k] = c[k] / L + g->ref[k];
            for (int k = 0; k < 6; k++) t->quad[6 * i + k] = q[k] / ML2;
            t->open_radius[i] = sqrt((double)q1[i].z) / L;
            if (!lean) node_geometry(ts, hilbert, t, i, level);
        }
    free(body);
    free(child);
    free(com);
    free(q0);
    free(q1);
    free(lo);
    return r;
}

bn_status download_groups(const bn_gpu_tree_store *ts, bn_tree *t)
{
    const bn_gpu_tree *g = &ts->t;
    const int ng = g->n_groups;
    int2 *gb = (int2 *)malloc(ng * sizeof(int2) + 1);
    float4 *box = (float4 *)malloc(ng * sizeof(float4) + 1), *half = (float4 *)malloc(ng * sizeof(float4) + 1);
    bn_status r = gb && box && half ? BN_OK : bn_fail(BN_ERR_NOMEM, "host copy of GPU groups");
    if (r == BN_OK) r = copy_down(gb, g->group_body, ng);
    if (r == BN_OK) r = copy_down(box, g->group_box, ng);
    if (r == BN_OK) r = copy_down(half, g->group_half, ng);
    for (int i = 0; r == BN_OK && i < ng; i++) {
        t->group_first[i] = gb[i].x;
        t->group_count[i] = gb[i].y;
        const float c[3] = {box[i].x, box[i].y, box[i].z}, h[3] = {half[i].x, half[i].y, half[i].z};
        for (int k = 0; k < 3; k++) {
            t->group_lo[3 * i + k] = ((double)c[k] - h[k]) / g->len_scale + g->ref[k];
            t->group_hi[3 * i + k] = ((double)c[k] + h[k]) / g->len_scale + g->ref[k];
        }
    }
    free(gb);
    free(box);
    free(half);
    return r;
}

/* Each node's bodies' bounding box (what the CPU builder keeps and the
 * LET's target boxes are made of): leaves from their bodies, then every
 * level's parents from their children, deepest level first. */
void node_body_boxes(bn_tree *t)
{
    for (int level = t->n_levels - 1; level >= 0; level--)
        for (int i = t->level_start[level]; i < t->level_start[level + 1]; i++) {
            double *lo = t->body_lo + 3 * (size_t)i, *hi = t->body_hi + 3 * (size_t)i;
            for (int k = 0; k < 3; k++) {
                lo[k] = INFINITY;
                hi[k] = -INFINITY;
            }
            if (t->n_children[i] > 0) {
                for (int c = t->first_child[i]; c < t->first_child[i] + t->n_children[i]; c++)
                    for (int k = 0; k < 3; k++) {
                        lo[k] = fmin(lo[k], t->body_lo[3 * (size_t)c + k]);
                        hi[k] = fmax(hi[k], t->body_hi[3 * (size_t)c + k]);
                    }
                continue;
            }
            for (int b = t->first_body[i]; b < t->first_body[i] + t->n_bodies[i]; b++)
                for (int k = 0; k < 3; k++) {
                    lo[k] = fmin(lo[k], t->pos[k][b]);
                    hi[k] = fmax(hi[k], t->pos[k][b]);
                }
        }
}

/* lean: without the keys and the nodes' geometric centres and sides (the
 * Hilbert codes of every body and node: most of the host's time), which
 * the locally essential trees of the bonsai, bonsai-box and bh criteria
 * do not use. */
/* build: a tree built here first (the tests' download); else the state's
 * current tree (bn_gpu_tree_to_host: a build here would reorder the
 * particles under a refreshed tree and its active groups). */
bn_status download_tree(void *state, const bn_gravity_params *g, int lean, int build, bn_tree *out,
                        bn_force_stats *stats)
{
    bn_gpu_tree_store *ts = NULL;
    double *pos[3];
    float *mass = NULL;
    int *orig = NULL;
    BN_TRY(build ? bn_cuda_state_tree(state, &ts, pos, &mass, &orig)
                 : bn_cuda_state_last_tree(state, &ts, pos, &mass, &orig));
    const bn_gpu_tree *d = &ts->t;
    const int hilbert = g->curve == BN_CURVE_HILBERT;
    out->n = (size_t)d->n;
    BN_TRY(alloc_host_tree(out, out->n, d->n_nodes, d->n_groups));
    for (int k = 0; k < 3; k++) out->box_lo[k] = ts->frame_host->box_lo[k];
    out->box_size = ts->frame_host->box_size;
    out->curve = g->curve;
    out->n_nodes = out->capacity = d->n_nodes;
    out->n_leaves = d->n_leaves;
    out->n_levels = d->n_levels;
    memcpy(out->level_start, d->level_start, sizeof out->level_start);
    out->n_groups = d->n_groups;
    BN_TRY(download_bodies(ts, pos, mass, orig, hilbert, lean, out));
    BN_TRY(download_nodes(ts, hilbert, lean, out));
    BN_TRY(download_groups(ts, out));
    node_body_boxes(out);
    if (stats) {
        stats->n_nodes = d->n_nodes;
        stats->n_leaves = d->n_leaves;
        stats->n_groups = d->n_groups;
        stats->depth = d->n_levels - 1;
        stats->device_bytes_peak = bn_cuda_bytes_peak();
        stats->backend = "gpu";
    }
    return BN_OK;
}
} // namespace

extern "C" bn_status bn_gpu_tree_download(const bn_particles *p, const bn_gravity_params *g, bn_tree *out,
                                          bn_force_stats *stats)
{
    memset(out, 0, sizeof *out);
    const bn_backend_ops *ops = bn_cuda_backend_ops();
    void *state = NULL;
    BN_TRY(bn_gravity_params_validate(g));
    BN_TRY(bn_particles_validate(p, "bn_gpu_tree_download"));
    BN_TRY(ops->create(&state, g));
    bn_status r = ops->upload(state, p);
    if (r == BN_OK) r = download_tree(state, g, 0, 1, out, stats);
    ops->destroy(state);
    if (r != BN_OK) bn_gpu_tree_host_free(out);
    return r;
}

extern "C" bn_status bn_gpu_tree_to_host(void *state, const bn_gravity_params *g, bn_tree *out)
{
    memset(out, 0, sizeof *out);
    const bn_status r = download_tree(state, g, g->mac != BN_MAC_ACCEL, 0, out, NULL);
    if (r != BN_OK) bn_gpu_tree_host_free(out);
    return r;
}

extern "C" void bn_gpu_tree_host_free(bn_tree *t)
{
    void *arrays[] = {t->keys, t->order, t->pos[0], t->pos[1], t->pos[2], t->mass, t->first_child, t->n_children,
                      t->first_body, t->n_bodies, t->level, t->center, t->size, t->mass_node, t->com, t->quad,
                      t->delta, t->open_radius, t->group_first, t->group_count, t->group_lo, t->group_hi,
                      t->body_lo, t->body_hi};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
    memset(t, 0, sizeof *t);
}
