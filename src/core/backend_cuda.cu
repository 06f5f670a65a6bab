/*
 * The CUDA backend: particles live on the device between steps, in key
 * order (reordered every evaluation, with their uploaded index kept in
 * `orig`), positions and velocities in double, accelerations and
 * potentials as float4. A time step (kick, drift, forces, kick; shared,
 * adaptive or block) copies nothing to the host and never waits for the
 * device: the tree's shape (tree_cuda.h) and the integrator's clock
 * (integrate/clock.h) stay on the device, and the host reads them, and
 * stats, only where it waits anyway (the end of a batch of steps).
 * Download scatters the arrays back into the uploaded order.
 *
 * Memory per particle (bytes), persistent: pos 24 + vel 24 + mass 4 +
 * orig 4 + acc 16 + body 16 = 88; during the sort and build +24 (keys,
 * alternate keys, two index arrays; the build's plan lives in the
 * spares), and +16 while the particles are reordered (two more spares,
 * where they fit: reorder_particles); the tree keeps 80 bytes per node of capacity (an eighth more
 * than the last tree's nodes: about 0.13 nodes per particle with leaves
 * of 32, 0.25 with 16); while it is built the node list takes 20 per node
 * of capacity, and the moments add 104 per node while they are made
 * (nothing per particle is alive then but the persistent arrays); from
 * the bodies to the end of the walk +16 (body_lo, the lo parts of the
 * bodies' positions: tree_gpu.h). Every buffer is tallied (cuda_check.h);
 * the peak is device_bytes_peak (BENCHMARKS.md).
 *
 * A failure inside an evaluation (out of memory) leaves the particles
 * valid: the arrays are reordered together, after every allocation of
 * the sort and the build has succeeded.
 */
#include <limits.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "core/backend.h" /* a C header: C linkage for its declarations */
#include "core/trace.h"
#include "parallel/comm.h"
#include "tree/tree_cpu.h" /* bn_saved_tree: the restart files' tree, both backends */
#include "tree/refresh_guard.h"
}
#include "core/backend_cuda.h"
#include "core/backend_cuda_state.h"
#include "gravity/sample_gpu.h"
#include "integrate/integrate_cuda.h"

namespace {

/* Swap two equally sized buffers (a gathered copy becomes the array). */
template <typename A, typename B>
void swap_ptr(A *&a, B *&b)
{
    A *t = a;
    a = (A *)b;
    b = (B *)t;
}

void cuda_destroy(void *p)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    if (!st) return;
    bn_cuda_particles_free(st);
    bn_cuda_free(st->active, st->s);
    bn_cuda_free(st->block_ints, st->s);
    if (st->block_host) cudaFreeHost(st->block_host);
    bn_cuda_free(st->clock, st->s);
    bn_cuda_free(st->tree_box, st->s);
    bn_cuda_free(st->tree_kept, st->s);
    bn_cuda_free(st->tree_growth, st->s);
    if (st->clock_host) cudaFreeHost(st->clock_host);
    bn_gpu_tree_store_free(&st->tree, st->s);
    bn_gpu_walk_scratch_free(st->walk);
    for (int e = 0; e < BN_EV_COUNT; e++)
        if (st->ev[e]) cudaEventDestroy(st->ev[e]);
    if (st->s) {
        cudaStreamSynchronize(st->s);
        cudaStreamDestroy(st->s);
    }
    bn_cuda_ranks_free(st);
    bn_staging_free(&st->stage); /* after the stream's last transfer */
    free(st);
}

bn_status cuda_create(void **out, const bn_gravity_params *g)
{
    bn_cuda_state *st = (bn_cuda_state *)bn_calloc(1, sizeof *st, "CUDA backend state");
    if (!st) return BN_ERR_NOMEM;
    st->g = *g;
    bn_status r = BN_OK;
#define TRY_CREATE(expr)                   \
    do {                                   \
        if (r == BN_OK) r = (expr);        \
    } while (0)
    st->g.device = bn_gpu_device_pick(g->device); /* BN_DEVICE_AUTO: this rank's GPU */
    cudaError_t err = cudaSetDevice(st->g.device);
    if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&st->s, cudaStreamNonBlocking);
    for (int e = 0; e < BN_EV_COUNT && err == cudaSuccess; e++) err = cudaEventCreate(&st->ev[e]);
    if (err != cudaSuccess) r = bn_cuda_fail(err, "creating the CUDA stream and events", __FILE__, __LINE__);
    TRY_CREATE(bn_gpu_tree_store_init(&st->tree, st->s));
    TRY_CREATE(bn_gpu_walk_scratch_create(&st->walk));
    TRY_CREATE(bn_cuda_dev_alloc(&st->clock, 1, "integrator clock", st->s));
    if (r == BN_OK) {
        err = cudaMallocHost((void **)&st->clock_host, sizeof *st->clock_host);
        if (err != cudaSuccess) r = bn_cuda_fail(err, "pinned host copy of the clock", __FILE__, __LINE__);
    }
    if (r == BN_OK) {
        memset(st->clock_host, 0, sizeof *st->clock_host);
        r = bn_gpu_clock_set(st->clock, st->clock_host, st->s);
    }
#undef TRY_CREATE
    if (r != BN_OK) {
        cuda_destroy(st);
        return r;
    }
    *out = st;
    return BN_OK;
}

/* ---- the force evaluation, stage by stage ---- */

/* The sort's buffers: the sorted keys and permutation, and their spare
 * partners (scratch of the build, then of the reordering; after it
 * vals may hold the particles' old order, freed with the rest). */
struct sort_buffers {
    uint64_t *keys, *keys_alt;
    int *vals, *vals_alt;
};

void free_sort_buffers(sort_buffers *b, cudaStream_t s)
{
    bn_cuda_free(b->keys, s);
    bn_cuda_free(b->keys_alt, s);
    bn_cuda_free(b->vals, s);
    bn_cuda_free(b->vals_alt, s);
    memset(b, 0, sizeof *b);
}

/* The sort's buffers for the particles, with the particle arrays'
 * margin: reorder_particles swaps them in as positions, velocities,
 * masses and order, which a migration then extends in place. */
bn_status alloc_sort_buffers(const bn_cuda_state *st, sort_buffers *b)
{
    const size_t room = bn_cuda_particle_room((size_t)st->n);
    BN_TRY(bn_cuda_dev_alloc(&b->keys, room, "sort keys", st->s));
    BN_TRY(bn_cuda_dev_alloc(&b->keys_alt, room, "sort keys (alternate)", st->s));
    BN_TRY(bn_cuda_dev_alloc(&b->vals, room, "sort permutation", st->s));
    return bn_cuda_dev_alloc(&b->vals_alt, room, "sort permutation (alternate)", st->s);
}

/* Keys of the particles (in the frame's cube) and their stable sort. */
bn_status sort_keys(bn_cuda_state *st, sort_buffers *b)
{
    const int n = st->n;
    cudaStream_t s = st->s;
    BN_TRY(alloc_sort_buffers(st, b));
    BN_TRY(bn_gpu_keys(st->pos, st->vel, st->ahead_now, n, st->tree.frame, st->g.curve == BN_CURVE_HILBERT, b->keys,
                       b->vals, s));
    cudaEventRecord(st->ev[BN_EV_KEYS], s);
    return bn_gpu_sort_pairs(&b->keys, &b->keys_alt, &b->vals, &b->vals_alt, n, 3 * BN_KEY_MAX_LEVEL, s);
}

/* Three double arrays (an axis each) put in the order of perm in one
 * pass, into the spare buffers, which then hold the old arrays. */
bn_status reorder_triple(double *arr[3], double *spare[3], const int *perm, int n, cudaStream_t s)
{
    BN_TRY(bn_gpu_gather3(perm, arr, spare, n, s));
    for (int k = 0; k < 3; k++) swap_ptr(arr[k], spare[k]);
    return BN_OK;
}

/* The particles in the order of perm in three passes (the permutation
 * read once a pass): the positions, the velocities, then the rest. The
 * doubles' spares are the sort's 8-byte one (spare[0]) and two more of
 * its room; the rest's are the sort's 4-byte one (masses), the
 * permutation itself (order: each thread reads its own entry before it
 * writes it, and the permutation is not needed after this pass), spare[2]
 * (bins, copied back) and the bodies' buffer (old accelerations, for the
 * accel MAC). Every array keeps a buffer of its own width. On return
 * spare[1] and spare[2] hold old arrays, b->vals the old order. */
bn_status reorder_in_passes(bn_cuda_state *st, sort_buffers *b, double *spare[3])
{
    const int n = st->n;
    cudaStream_t s = st->s;
    const int *perm = b->vals;
    BN_TRY(reorder_triple(st->pos, spare, perm, n, s));
    if (st->vel[0]) BN_TRY(reorder_triple(st->vel, spare, perm, n, s)); /* NULL: positions only */
    const bn_gpu_particle_rest from = {st->mass, st->orig, st->acc, st->bin};
    const bn_gpu_particle_rest to = {(float *)b->vals_alt, b->vals, st->body, (uint8_t *)spare[2]};
    BN_TRY(bn_gpu_gather_rest(perm, from, to, n, s));
    swap_ptr(st->mass, b->vals_alt);
    swap_ptr(st->orig, b->vals);
    swap_ptr(st->acc, st->body);
    if (st->bin) BN_CUDA_CHECK(cudaMemcpyAsync(st->bin, spare[2], (size_t)n, cudaMemcpyDeviceToDevice, s));
    return BN_OK;
}

/* The same an array a pass, with the sort's spares only: where the
 * device has no room for two more (the largest runs). */
bn_status reorder_by_array(bn_cuda_state *st, sort_buffers *b)
{
    const int n = st->n;
    cudaStream_t s = st->s;
    const int *perm = b->vals;
    for (int k = 0; k < 3; k++) { /* b->keys_alt always the spare: a failure leaves no live array there */
        BN_TRY(bn_gpu_gather8(st->pos[k], perm, b->keys_alt, n, s));
        swap_ptr(st->pos[k], b->keys_alt);
        if (!st->vel[k]) continue;
        BN_TRY(bn_gpu_gather8(st->vel[k], perm, b->keys_alt, n, s));
        swap_ptr(st->vel[k], b->keys_alt);
    }
    BN_TRY(bn_gpu_gather4(st->mass, perm, b->vals_alt, n, s));
    swap_ptr(st->mass, b->vals_alt);
    BN_TRY(bn_gpu_gather4(st->orig, perm, b->vals_alt, n, s));
    swap_ptr(st->orig, b->vals_alt);
    BN_TRY(bn_gpu_gather16(st->acc, perm, st->body, n, s));
    swap_ptr(st->acc, st->body);
    if (!st->bin) return BN_OK;
    BN_TRY(bn_gpu_gather1(st->bin, perm, b->keys_alt, n, s));
    BN_CUDA_CHECK(cudaMemcpyAsync(st->bin, b->keys_alt, (size_t)n, cudaMemcpyDeviceToDevice, s));
    return BN_OK;
}

/* Every particle array put in the order of perm, gathered into spare
 * buffers and swapped in: in three passes where two more spares fit (an
 * array a pass read the permutation ten times: 0.2 ms more a build at
 * 2^24 on an H100), else an array a pass, so that they never decide how
 * many particles fit. Once they have not fitted, later builds do not try
 * again (a failed allocation waits for the device and trims the pool).
 * Nothing fails after the first gather but a launch error. */
bn_status reorder_particles(bn_cuda_state *st, sort_buffers *b)
{
    cudaStream_t s = st->s;
    if (st->reorder_narrow) return reorder_by_array(st, b);
    const size_t room = bn_cuda_particle_room((size_t)st->n);
    double *spare[3] = {(double *)b->keys_alt, NULL, NULL};
    bn_status r = bn_cuda_dev_alloc(&spare[1], room, "reorder spare", s);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&spare[2], room, "reorder spare", s);
    if (r == BN_OK) {
        b->keys_alt = NULL;
        r = reorder_in_passes(st, b, spare);
        b->keys_alt = (uint64_t *)spare[0];
    } else if (r == BN_ERR_DEVICE_NOMEM) {
        bn_clear_error();
        bn_cuda_free(spare[1], s); /* the one spare that fitted, before the gathers */
        spare[1] = NULL;
        st->reorder_narrow = 1;
        r = reorder_by_array(st, b);
    }
    bn_cuda_free(spare[1], s);
    bn_cuda_free(spare[2], s);
    return r;
}

/* The cube around the particles; ref = its centre (until the moments
 * move it to the centre of mass). On the device: nothing comes back. */
bn_status bounding_cube(bn_cuda_state *st)
{
    return bn_gpu_bounding_box(st->pos, st->vel, st->ahead_now, st->n, &st->tree, st->s);
}

/* The parameters this evaluation runs with: the accel criterion needs old
 * accelerations and falls back to bonsai without them. */
bn_gravity_params effective_params(const bn_cuda_state *st)
{
    bn_gravity_params g = st->g;
    if (g.mac == BN_MAC_ACCEL && !st->have_old_accel) g.mac = BN_MAC_BONSAI;
    return g;
}

/* The lo parts of the bodies' positions (tree_gpu.h): allocated for an
 * evaluation, after the moments' scratch is gone, and released after
 * its walk, so that they never add to the peak of the sort or the
 * moments. */
bn_status ensure_body_lo(bn_cuda_state *st)
{
    if (!st->body_lo) BN_TRY(bn_cuda_dev_alloc(&st->body_lo, (size_t)st->n, "tree bodies (lo parts)", st->s));
    st->tree.t.body_lo = st->body_lo;
    return BN_OK;
}

void release_body_lo(bn_cuda_state *st)
{
    bn_cuda_free(st->body_lo, st->s);
    st->body_lo = st->tree.t.body_lo = NULL;
}

/* The build's last stages (octants 1), or a refresh's (0: moved bodies;
 * growth: its groups' growth summed there, NULL: not). */
bn_status moments_and_groups(bn_cuda_state *st, const bn_gravity_params *g, int octants, unsigned long long *growth)
{
    bn_gpu_tree_store *ts = &st->tree;
    cudaStream_t s = st->s;
    BN_TRY(bn_gpu_moments(ts, st->pos, st->mass, octants, g, s)); /* sets ref */
    cudaEventRecord(st->ev[BN_EV_MOMENTS], s);
    BN_TRY(ensure_body_lo(st));
    const bn_gpu_tree *t = &ts->t;
    const int accel = g->mac == BN_MAC_ACCEL;
    const double alpha = bn_gpu_accel_alpha(g->accel_alpha, g->G, t->len_scale, t->mass_scale);
    BN_TRY(bn_gpu_groups(ts, st->pos, st->mass, accel ? st->acc : NULL, alpha, growth, s)); /* and the bodies */
    cudaEventRecord(st->ev[BN_EV_GROUPS], s);
    return BN_OK;
}

/* Room for the kept build's cube and count. The count is 0 until the
 * keep kernel writes it. */
bn_status reserve_kept_build(bn_cuda_state *st)
{
    if (!st->tree_box) BN_TRY(bn_cuda_dev_alloc(&st->tree_box, 4, "the kept tree's cube", st->s));
    if (st->tree_kept) return BN_OK;
    BN_TRY(bn_cuda_dev_alloc(&st->tree_kept, 1, "the kept tree's count", st->s));
    BN_CUDA_CHECK(cudaMemsetAsync(st->tree_kept, 0, sizeof *st->tree_kept, st->s));
    return BN_OK;
}

/* Block steps that refresh: the build's keys, cube and particle count
 * kept for a restart file. The sort's key buffer becomes the kept keys
 * (b->keys taken: a copy cost 0.1 ms a build at 2^24 on an H100, 0.7%
 * of an M31 block step); the last kept ones go, so the device marks
 * them this tree's only where the build's tree became current (after a
 * build that did not fit, none are). No room for the cube drops the
 * saved tree, not the step: a restart file then holds no tree, and the
 * continued run builds anew. */
bn_status keep_build(bn_cuda_state *st, sort_buffers *b)
{
    if (!st->keep_tree_keys) { /* the current tree's build is not kept */
        if (st->tree_kept) BN_CUDA_CHECK(cudaMemsetAsync(st->tree_kept, 0, sizeof *st->tree_kept, st->s));
        return BN_OK;
    }
    bn_cuda_free(st->tree_keys, st->s);
    st->tree_keys = NULL;
    const bn_status r = reserve_kept_build(st);
    if (r == BN_ERR_DEVICE_NOMEM || r == BN_ERR_NOMEM) { /* none: cuda_tree_save saves nothing */
        bn_clear_error();
        return BN_OK;
    }
    BN_TRY(r);
    st->tree_keys = b->keys;
    b->keys = NULL;
    return bn_gpu_keep_build(st->tree_box, st->tree_kept, st->n, st->tree.frame, st->s);
}

/* Sorted keys and their permutation (b) to the tree the walk reads: the
 * nodes, the particles in key order, moments and groups. */
bn_status build_sorted(bn_cuda_state *st, const bn_gravity_params *g, sort_buffers *b, int can_fall_back)
{
    bn_gpu_tree_store *ts = &st->tree;
    cudaStream_t s = st->s;
    ts->t.n = st->n;
    bn_status r = bn_gpu_build(ts, b->keys, b->vals, st->n, g->leaf_size, g->group_size, can_fall_back,
                               (int2 *)b->keys_alt, (unsigned *)b->vals_alt, s);
    /* from here the particles move: the old tree holds only if they
     * kept its order, which the device alone knows */
    st->tree_valid = 0;
    if (r == BN_OK) r = bn_gpu_group_levels(ts, b->keys, s); /* where it fits: the refresh guard's sizes */
    if (r == BN_OK) r = reorder_particles(st, b);
    if (r == BN_OK) r = keep_build(st, b);
    ts->t.body = st->body;
    ts->t.order = st->orig;
    cudaEventRecord(st->ev[BN_EV_BUILD], s);
    free_sort_buffers(b, s); /* before the moments' scratch (the peak) */
    /* a build ahead of its refreshes: its cells are of the positions
     * x + tau v, its moments and boxes of x, as a refresh's, whose
     * groups' growth it sums (lead_refused below) */
    const int ahead = st->ahead_now != 0.0;
    if (r == BN_OK) r = moments_and_groups(st, g, !ahead, ahead ? st->tree_growth : NULL);
    st->tree_valid = r == BN_OK;
    return r;
}

/* The groups' growth summed by moments_and_groups (the host waits for
 * it), judged by tree/refresh_guard.h: whether the tree is refused. */
static bn_status growth_refused(bn_cuda_state *st, const char *what, const char *trace_name,
                                double *growth, int *refused)
{
    unsigned long long sum = 0;
    BN_TRY(bn_cuda_read(&sum, st->tree_growth, sizeof sum, what, st->s));
    *refused = bn_refresh_judge(sum, (double)st->n, trace_name, growth);
    return BN_OK;
}

/* Keys to groups: the device tree the walk reads. The build decides on
 * the device whether its tree fits the buffers; if not, the particles
 * keep their order and the last tree is refreshed (tree_cuda.h). Only a
 * build with no tree to fall back on waits for the device. */
bn_status build_tree(bn_cuda_state *st, const bn_gravity_params *g)
{
    if (st->ahead_now != 0.0 && !st->tree_growth) /* before the sort's buffers */
        BN_TRY(bn_cuda_dev_alloc(&st->tree_growth, 1, "the lead build's growth", st->s));
    BN_TRY(bounding_cube(st));
    cudaEventRecord(st->ev[BN_EV_BBOX], st->s);
    sort_buffers b = {NULL, NULL, NULL, NULL};
    const bn_status r = sort_keys(st, &b);
    cudaEventRecord(st->ev[BN_EV_SORT], st->s);
    if (r != BN_OK) {
        free_sort_buffers(&b, st->s);
        st->tree_valid = 0;
        return r;
    }
    BN_TRY(build_sorted(st, g, &b, st->tree_valid));
    if (st->ahead_now == 0.0) return BN_OK;
    /* a build ahead (tree/refresh_lag.h) is refused as a refresh is: its
     * groups' boxes at x against the cells of the lead positions x + tau v.
     * Where particles cross each other within tau (the core of a cold
     * collapse) those cells put far apart bodies together: a walk of 130
     * times a fresh tree's (BENCHMARKS.md session 32) */
    int refused = 0;
    double growth = 0;
    BN_TRY(growth_refused(st, "the lead build's growth", "build: lead groups' growth x1000", &growth, &refused));
    if (!refused) return BN_OK;
    st->lead_refused = 1; /* built again from x */
    st->ahead_now = 0.0;
    release_body_lo(st); /* never alive during the sort (the peak) */
    /* no falling back on the refused tree: a build of x that outgrew the
     * buffers would refresh it and walk it (the host has waited anyway) */
    st->tree_valid = 0;
    return build_tree(st, g);
}

/* Block steps between rebuilds: the last tree's structure and body order
 * with moments, bodies and group boxes made from the moved particles;
 * built anew instead where its groups have grown too much since the
 * build (tree/refresh_guard.h: the host waits for their sum). */
bn_status refresh_tree(bn_cuda_state *st, const bn_gravity_params *g)
{
    for (int e = BN_EV_BBOX; e <= BN_EV_BUILD; e++) cudaEventRecord(st->ev[e], st->s); /* no such stages */
    if (!st->tree_growth) BN_TRY(bn_cuda_dev_alloc(&st->tree_growth, 1, "the refresh's growth", st->s));
    BN_TRY(moments_and_groups(st, g, 0, st->tree_growth));
    int refused = 0;
    BN_TRY(growth_refused(st, "the refresh's growth", "refresh: groups' growth x1000", &st->refresh_growth,
                          &refused));
    if (!refused) return BN_OK;
    st->refresh_refused = 1;
    release_body_lo(st); /* never alive during the sort (the peak) */
    st->tree_valid = 0; /* the build never falls back on the refused tree */
    return build_tree(st, g);
}

double elapsed(const bn_cuda_state *st, int a, int b)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, st->ev[a], st->ev[b]) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return 1e-3 * ms;
}

void fill_stats(bn_cuda_state *st, bn_force_stats *stats, int tree)
{
    stats->backend = "gpu";
    stats->t_total = elapsed(st, BN_EV_START, BN_EV_WALK);
    stats->device_bytes_peak = bn_cuda_bytes_peak();
    if (st->n >= 65536) bn_cuda_set_bytes_per_particle((double)stats->device_bytes_peak / st->n);
    if (!tree) {
        stats->t_walk = stats->t_total;
        return;
    }
    const bn_gpu_tree *t = &st->tree.t;
    stats->t_bbox = elapsed(st, BN_EV_START, BN_EV_BBOX);
    stats->t_keys = elapsed(st, BN_EV_BBOX, BN_EV_KEYS);
    stats->t_sort = elapsed(st, BN_EV_KEYS, BN_EV_SORT);
    stats->t_build = elapsed(st, BN_EV_SORT, BN_EV_BUILD);
    stats->t_moments = elapsed(st, BN_EV_BUILD, BN_EV_MOMENTS);
    stats->t_groups = elapsed(st, BN_EV_MOMENTS, BN_EV_GROUPS);
    stats->t_walk = elapsed(st, BN_EV_GROUPS, BN_EV_WALK);
    stats->n_nodes = t->n_nodes;
    stats->n_leaves = t->n_leaves;
    stats->n_groups = t->n_groups;
    stats->depth = t->n_levels - 1;
}

bn_status direct_forces(bn_cuda_state *st)
{
    BN_TRY(bounding_cube(st));
    BN_TRY(ensure_body_lo(st));
    const bn_gpu_tree *t = &st->tree.t;
    BN_TRY(bn_gpu_make_bodies(st->pos, st->mass, st->tree.frame, t->len_scale, t->mass_scale, st->n, st->body,
                              st->body_lo, st->s));
    BN_TRY(bn_gpu_direct(st->body, st->body_lo, st->n, st->g.G, st->g.softening, t->len_scale, t->mass_scale, st->acc,
                         st->s));
    return BN_OK;
}

/* Where the host waits anyway: the tree's shape as the device has it,
 * and more room if a build did not fit (tree_store_cuda.cu). */
bn_status poll_tree(bn_cuda_state *st)
{
    if (st->g.method != BN_METHOD_TREE) return BN_OK;
    const bn_status r = bn_gpu_tree_poll(&st->tree, st->s);
    if (r != BN_OK) st->tree_valid = 0;
    return r;
}

/* Waits for the last evaluation and reads its times and counts. */
bn_status cuda_stats(void *p, bn_force_stats *stats)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    memset(stats, 0, sizeof *stats);
    BN_CUDA_CHECK(cudaEventSynchronize(st->ev[BN_EV_WALK]));
    BN_CUDA_LAUNCH_CHECK();
    const int tree = st->g.method == BN_METHOD_TREE;
    if (tree && st->n > 0) {
        BN_TRY(poll_tree(st));
        BN_TRY(bn_gpu_walk_counts(st->walk, stats, st->s));
    } else if (!tree) {
        stats->n_pp = (double)st->n * (double)(st->n - 1);
    }
    fill_stats(st, stats, tree);
    stats->refresh_refused = st->refresh_refused;
    stats->lead_refused = st->lead_refused;
    stats->refresh_growth = st->refresh_growth;
    if (bn_comm_size(st->comm) > 1) { /* the received trees' walks and the exchange */
        stats->n_pp += st->remote.n_pp;
        stats->n_pc += st->remote.n_pc;
        stats->n_far += st->remote.n_far;
        stats->n_visit += st->remote.n_visit;
        stats->let_cells_sent = st->remote.let_cells_sent;
        stats->let_bodies_sent = st->remote.let_bodies_sent;
        stats->let_cells_received = st->remote.let_cells_received;
        stats->let_bodies_received = st->remote.let_bodies_received;
        stats->t_exchange = st->remote.t_exchange;
    }
    return BN_OK;
}

/* Queues an evaluation of every particle: nothing waits for the device
 * unless stats are asked for (or no tree exists to fall back on:
 * bn_gpu_build). With live (a clock's), the walk does nothing when *live
 * is 0: an idle step's tree is built from the positions the last one was,
 * and so is that tree again. */
/* Several ranks, BANYAN_GRAVITY_TRACE=1: the device's own time of the
 * local walk (from the groups' end, or the refresh's) and of the
 * received trees' walk after it, then the idle time until every rank's
 * walk is done (session 21: the received walk's time held it before,
 * so every rank showed the slowest one's); waits for the walk: tracing
 * only. */
void trace_walks(bn_cuda_state *st)
{
    if (!bn_trace_on() || cudaEventSynchronize(st->ev[BN_EV_WALK]) != cudaSuccess) return;
    /* elapsed() is in seconds; the wait is the exchange's part not hidden
     * behind the local walk */
    /* the received walk may run beside the local one (bn_cuda_add_remote):
     * then it starts before the local walk ends (a negative wait for the
     * trees), and the wait for the others counts from the later end */
    const double local = elapsed(st, BN_EV_GROUPS, BN_EV_LOCAL);
    const double ends = fmax(local, elapsed(st, BN_EV_GROUPS, BN_EV_REMOTE_END));
    bn_trace_ms("local walk (device)", 1e3 * local);
    bn_trace_ms("wait for the received trees (device)", 1e3 * elapsed(st, BN_EV_LOCAL, BN_EV_REMOTE));
    bn_trace_ms("received walk (device)", 1e3 * elapsed(st, BN_EV_REMOTE, BN_EV_REMOTE_END));
    bn_trace_ms("wait for the other ranks (device)", 1e3 * (elapsed(st, BN_EV_GROUPS, BN_EV_WALK) - ends));
    bn_trace_ms("both walks (device)", 1e3 * ends);
    bn_trace_ms("both walks, busy (device)", 1e3 * bn_cuda_walks_busy(st));
    bn_trace_count("local tree: levels", (double)st->tree.t.n_levels);
    bn_trace_count("local tree: nodes", (double)st->tree.t.n_nodes);
    bn_trace_count("local tree: groups", (double)st->tree.t.n_groups);
    bn_trace_count("local tree: 1e6 / len_scale", 1e6 / st->tree.t.len_scale);
}

/* Several ranks: the particles' costs (zero), made at the first
 * evaluation after an upload; the walks add to them through act. */
bn_status measure_costs(bn_cuda_state *st, bn_gpu_active *act)
{
    const char *want = getenv("BANYAN_RANK_COSTS"); /* 0: the walk without the costs' writes (a tuning aid:
                                                       the domains are then cut by count) */
    if (want && !strcmp(want, "0")) return BN_OK;
    if (!st->cost && st->n > 0) {
        BN_TRY(bn_cuda_dev_alloc(&st->cost, bn_cuda_particle_room((size_t)st->n), "particle costs", st->s));
        BN_CUDA_CHECK(cudaMemsetAsync(st->cost, 0, (size_t)st->n * sizeof(float), st->s));
    }
    act->cost = st->cost;
    act->orig = st->orig;
    act->cost_visit = BN_COST_VISIT;
    const char *visit = getenv("BANYAN_COST_VISIT"); /* a tuning aid: another weight of the traversal */
    const double w = visit && *visit ? atof(visit) : -1.0;
    if (isfinite(w) && w >= 0 && w < 1e9) act->cost_visit = (float)w; /* else the default: no negative or
                                                                          overflowing costs */
    return BN_OK;
}

/* Several ranks: the local tree built and its walk queued, then the
 * exchange and the received trees' walks (bn_cuda_add_remote), which the
 * host's packing and the messages overlap with the local walk; direct
 * summation: bn_cuda_direct_ranks. A rank without particles only takes
 * part in the exchange. */
bn_status evaluate_ranks(bn_cuda_state *st)
{
    bn_cuda_note_walk_time(st); /* before its events are recorded again */
    bn_cuda_reset_peak();
    cudaEventRecord(st->ev[BN_EV_START], st->s);
    const bn_gravity_params g = effective_params(st);
    bn_status s = BN_OK;
    if (g.method == BN_METHOD_DIRECT) {
        s = bn_cuda_direct_ranks(st);
        cudaEventRecord(st->ev[BN_EV_WALK], st->s);
        st->have_forces = st->have_old_accel = s == BN_OK;
        return s;
    }
    double *acc_old = NULL; /* the accel criterion's target boxes */
    bn_gpu_active all; /* every group and body, their costs measured */
    memset(&all, 0, sizeof all);
    if (st->n > 0) {
        s = build_tree(st, &g);
        if (s == BN_OK) s = poll_tree(st); /* the host copy needs the shape and ref */
        if (s == BN_OK) s = bn_cuda_tree_ready(st);
        if (s == BN_OK && g.mac == BN_MAC_ACCEL && bn_cuda_let_on_host()) s = bn_cuda_old_accel(st, &acc_old);
        if (s == BN_OK) s = measure_costs(st, &all);
        if (s == BN_OK) s = bn_cuda_walk_inputs_ready(st);
        if (s == BN_OK) s = bn_gpu_walk_active(&st->tree.t, &g, &all, st->acc, st->walk, NULL, st->s);
        cudaEventRecord(st->ev[BN_EV_LOCAL], st->s);
    }
    s = bn_comm_agree(st->comm, s);
    if (s == BN_OK) s = bn_cuda_add_remote(st, &g, st->n > 0 ? &all : NULL, acc_old);
    free(acc_old);
    if (st->n > 0) release_body_lo(st);
    cudaEventRecord(st->ev[BN_EV_WALK], st->s);
    BN_CUDA_LAUNCH_CHECK();
    if (s == BN_OK && st->n > 0) trace_walks(st);
    /* its costs were counted; timed only where the cut weighs time (the
     * read waits for the walk at the next evaluation's start) */
    st->walk_pending = s == BN_OK && st->n > 0 && st->cost && st->g.balance_cost == BN_TUNE_TIME;
    st->have_forces = st->have_old_accel = s == BN_OK;
    return s;
}

bn_status evaluate_all(bn_cuda_state *st, const int *live)
{
    st->refresh_refused = st->lead_refused = 0; /* every particle's forces: always a build */
    st->refresh_growth = 0;
    if (bn_comm_size(st->comm) > 1) return evaluate_ranks(st);
    if (st->n == 0) return bn_fail(BN_ERR_ARGUMENT, "GPU backend: forces of an empty particle set");
    bn_cuda_reset_peak();
    cudaEventRecord(st->ev[BN_EV_START], st->s);
    if (st->g.method == BN_METHOD_TREE) {
        const bn_gravity_params g = effective_params(st);
        BN_TRY(build_tree(st, &g));
        bn_gpu_active gate;
        memset(&gate, 0, sizeof gate);
        gate.live = live;
        BN_TRY(bn_gpu_walk_active(&st->tree.t, &g, &gate, st->acc, st->walk, NULL, st->s));
    } else {
        BN_TRY(direct_forces(st));
    }
    release_body_lo(st);
    cudaEventRecord(st->ev[BN_EV_WALK], st->s);
    BN_CUDA_LAUNCH_CHECK();
    st->have_forces = st->have_old_accel = 1;
    return BN_OK;
}

bn_status cuda_forces(void *p, bn_force_stats *stats)
{
    BN_TRY(evaluate_all((bn_cuda_state *)p, NULL));
    return stats ? cuda_stats(p, stats) : BN_OK;
}

/* Block steps: the bins (all 0), the kick's results and their pinned
 * copy, made at the first block kick. */
bn_status ensure_block_buffers(bn_cuda_state *st)
{
    if (!st->bin) {
        BN_TRY(bn_cuda_dev_alloc(&st->bin, bn_cuda_particle_room((size_t)st->n), "time bins", st->s));
        BN_CUDA_CHECK(cudaMemsetAsync(st->bin, 0, (size_t)st->n, st->s));
    }
    if (!st->block_ints) BN_TRY(bn_cuda_dev_alloc(&st->block_ints, 4, "block-step counters", st->s));
    if (!st->block_host) BN_CUDA_CHECK(cudaMallocHost((void **)&st->block_host, 2 * sizeof(int)));
    return BN_OK;
}

/* The active groups of this walk (bins >= *bin_min, a device int),
 * listed on the device. */
bn_status select_active(bn_cuda_state *st, const int *bin_min, bn_gpu_active *act)
{
    const bn_gpu_tree *t = &st->tree.t;
    if (st->active_capacity < t->group_bound) {
        bn_cuda_free(st->active, st->s);
        st->active = NULL;
        st->active_capacity = 0;
        BN_TRY(bn_cuda_dev_alloc(&st->active, (size_t)t->group_bound, "active groups", st->s));
        st->active_capacity = t->group_bound;
    }
    BN_TRY(bn_gpu_active_groups(t, st->bin, bin_min, st->active, st->block_ints + 2, st->s));
    memset(act, 0, sizeof *act);
    act->groups = st->active;
    act->count = st->block_ints + 2;
    act->bin = st->bin;
    act->bin_min = bin_min;
    return BN_OK;
}

/* Forces of the particles in bins >= *bin_min (a device int): a rebuilt
 * or refreshed tree, walked by the active groups only. */
bn_status evaluate_active(bn_cuda_state *st, const int *bin_min, int rebuild)
{
    BN_TRY(bn_comm_agree(st->comm, ensure_block_buffers(st)));
    bn_cuda_note_walk_time(st); /* before its events are recorded again */
    bn_cuda_reset_peak();
    cudaEventRecord(st->ev[BN_EV_START], st->s);
    const bn_gravity_params g = effective_params(st);
    const int ranks = bn_comm_size(st->comm) > 1;
    bn_status s = BN_OK;
    st->refresh_refused = st->lead_refused = 0;
    st->refresh_growth = 0;
    st->ahead_now = st->build_ahead; /* this evaluation's builds (a refused refresh's too) */
    if (st->n > 0) {
        s = rebuild || !st->tree_valid ? build_tree(st, &g) : refresh_tree(st, &g);
        if (s == BN_OK && ranks) s = poll_tree(st); /* the host copy needs the shape and ref */
        if (s == BN_OK && ranks) s = bn_cuda_tree_ready(st);
    }
    st->ahead_now = 0.0;
    bn_gpu_active act;
    memset(&act, 0, sizeof act);
    double *acc_old = NULL; /* several ranks, the accel criterion's target boxes */
    if (s == BN_OK && ranks && st->n > 0 && g.mac == BN_MAC_ACCEL && bn_cuda_let_on_host())
        s = bn_cuda_old_accel(st, &acc_old);
    if (s == BN_OK && st->n > 0) s = select_active(st, bin_min, &act);
    if (s == BN_OK && st->n > 0 && ranks) s = measure_costs(st, &act);
    if (s == BN_OK && st->n > 0 && ranks) s = bn_cuda_walk_inputs_ready(st);
    if (s == BN_OK && st->n > 0) s = bn_gpu_walk_active(&st->tree.t, &g, &act, st->acc, st->walk, NULL, st->s);
    if (st->n > 0 && ranks) cudaEventRecord(st->ev[BN_EV_LOCAL], st->s);
    /* several ranks: the exchange (every node's box: a superset of what
     * the active groups open) and the received trees for the active ones */
    if (ranks) s = bn_comm_agree(st->comm, s);
    if (s == BN_OK && ranks) s = bn_cuda_add_remote(st, &g, st->n > 0 ? &act : NULL, acc_old);
    free(acc_old);
    BN_TRY(s);
    if (st->n > 0) release_body_lo(st);
    cudaEventRecord(st->ev[BN_EV_WALK], st->s);
    BN_CUDA_LAUNCH_CHECK();
    if (ranks && st->n > 0) trace_walks(st);
    st->walk_pending = ranks && st->n > 0 && st->cost && st->g.balance_cost == BN_TUNE_TIME; /* as above */
    st->have_forces = st->have_old_accel = 1;
    return BN_OK;
}

void cuda_build_ahead(void *p, double tau) { ((bn_cuda_state *)p)->build_ahead = tau; }

void cuda_set_key_cube(void *p, const double lo[3], double side)
{
    bn_gpu_tree_store *t = &((bn_cuda_state *)p)->tree;
    for (int k = 0; k < 3; k++) t->align_lo[k] = side > 0 ? lo[k] : 0.0;
    t->align_side = side > 0 ? side : 0.0;
}

/* Direct summation computes them all, as does a rebuild for every bin. */
bn_status cuda_forces_active(void *p, int bin_min, int rebuild)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    const int all = bin_min <= 0 || !st->bin;
    if (st->g.method != BN_METHOD_TREE || (all && (rebuild || !st->tree_valid))) return cuda_forces(p, NULL);
    /* the walk reads the first active bin from the device, where the
     * clock's stages keep theirs: a copy of this one. From pageable memory
     * the call stages the value before it returns (it may wait for the
     * stream to do so); only this stage-by-stage operation copies it, the
     * clock's stages never do. */
    BN_TRY(ensure_block_buffers(st));
    BN_CUDA_CHECK(cudaMemcpyAsync(st->block_ints + 3, &bin_min, sizeof bin_min, cudaMemcpyHostToDevice, st->s));
    return evaluate_active(st, st->block_ints + 3, rebuild);
}

bn_status cuda_block_kick(void *p, const bn_block_kick *k, int *max_bin, long *n_kicked)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    BN_TRY(bn_cuda_need_velocities(st, "block kick"));
    BN_TRY(ensure_block_buffers(st));
    BN_CUDA_CHECK(cudaMemsetAsync(st->block_ints, 0, 2 * sizeof(int), st->s));
    BN_TRY(bn_gpu_block_kick(st->vel, st->acc, st->bin, st->n, k, st->block_ints, NULL, st->s));
    if (!max_bin) return BN_OK;
    BN_TRY(bn_cuda_read(st->block_host, st->block_ints, 2 * sizeof(int), "block kick counts", st->s));
    *max_bin = st->block_host[0];
    if (n_kicked) *n_kicked = st->block_host[1];
    return BN_OK;
}

bn_status cuda_finish(void *p)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    BN_CUDA_CHECK(cudaStreamSynchronize(st->s));
    return poll_tree(st);
}

bn_status cuda_kick(void *p, double dt)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    BN_TRY(bn_cuda_need_velocities(st, "kick"));
    return bn_gpu_kick(st->vel, st->acc, st->n, dt, NULL, st->s);
}

bn_status cuda_drift(void *p, double dt)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    BN_TRY(bn_cuda_need_velocities(st, "drift"));
    return bn_gpu_drift(st->pos, st->vel, st->n, dt, NULL, st->s);
}

bn_status cuda_max_accel(void *p, double *amax)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    return bn_gpu_max_accel(st->acc, st->n, amax, st->s);
}

bn_status cuda_energies(void *p, bn_energies *e)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    BN_TRY(bn_cuda_need_velocities(st, "energies"));
    memset(e, 0, sizeof *e);
    bn_status s = BN_OK;
    const bn_gpu_types types = {st->type, st->orig, st->type_count};
    if (st->n > 0)
        s = bn_gpu_energies(st->pos, st->vel, st->mass, st->acc, st->have_forces, st->n, &types, e, st->s);
    if (s == BN_OK) s = poll_tree(st); /* the energies waited for the device */
    if (bn_comm_size(st->comm) <= 1) return s;
    BN_TRY(bn_comm_agree(st->comm, s)); /* before the sum every rank takes part in */
    BN_TRY(bn_comm_agree(st->comm, bn_cuda_host_masses(st))); /* behind after the crossers' moves */
    double mass = 0;
    for (int i = 0; i < st->n; i++) mass += st->host_mass[i];
    return bn_comm_reduce_energies(st->comm, mass, e);
}

/* The forces of the clock's step. Shared: every particle's, the walk
 * skipped when the step is idle. Block: those of the active bins the
 * clock planned (none on an idle step); direct summation computes all. */
bn_status step_forces(bn_cuda_state *st, const bn_step_rule *r)
{
    st->keep_tree_keys = r->n_bins > 0 && r->refreshes;
    if (r->n_bins == 0 || st->g.method != BN_METHOD_TREE) return evaluate_all(st, &st->clock->live);
    return evaluate_active(st, &st->clock->bin_min, r->rebuild);
}

/* Every stage is queued: none waits for the device or reads from it. */
bn_status cuda_clock_read(void *p, bn_clock *c);
bn_status cuda_clock_write(void *p, const bn_clock *c);

/* Several ranks: the clock's own stages on the host, from numbers every
 * rank shares, so that every rank plans the same step: the largest |a|
 * over the ranks for a shared step's plan. Across ranks only the host
 * writes the device's clock (cuda_clock_write keeps its copy), except the
 * block kick's counts, read back by ranks_block_kick: no read per stage. */
bn_status ranks_clock_stage(bn_cuda_state *st, const bn_step_rule *r, bn_clock_stage stage)
{
    bn_clock c = st->ranks_clock; /* the device's: only the host writes it across ranks */
    double amax = 0;
    bn_status s = BN_OK;
    if (stage == BN_STAGE_SHARED_PLAN && r->eta > 0 && st->n > 0) s = cuda_max_accel(st, &amax);
    BN_TRY(bn_comm_agree(st->comm, s)); /* a rank failing alone would leave the others in the reduction */
    if (stage == BN_STAGE_SHARED_PLAN) {
        BN_TRY(bn_comm_allreduce(st->comm, &amax, 1, BN_REDUCE_MAX));
        c.amax = amax;
    }
    bn_clock_apply(&c, r, stage);
    return bn_comm_agree(st->comm, cuda_clock_write(st, &c));
}

/* Several ranks, a block step's kick: each rank's kick on its device,
 * then the finest bin (MAX) and the particles kicked (SUM) over the
 * ranks, so that the next tick and its active bins are the same on
 * every rank. */
bn_status ranks_block_kick(bn_cuda_state *st)
{
    bn_status s = BN_OK;
    if (st->n > 0) {
        s = ensure_block_buffers(st);
        if (s == BN_OK) s = bn_gpu_block_kick(st->vel, st->acc, st->bin, st->n, NULL, NULL, st->clock, st->s);
    }
    bn_clock c;
    if (s == BN_OK) s = cuda_clock_read(st, &c);
    BN_TRY(bn_comm_agree(st->comm, s)); /* before the reductions every rank takes part in */
    if (!c.kick_on) return BN_OK;
    double bmax = c.max_bin, count = c.n_active;
    BN_TRY(bn_comm_allreduce(st->comm, &bmax, 1, BN_REDUCE_MAX));
    BN_TRY(bn_comm_allreduce(st->comm, &count, 1, BN_REDUCE_SUM));
    c.max_bin = (int)bmax;
    c.n_active = (int)count;
    return bn_comm_agree(st->comm, cuda_clock_write(st, &c));
}

bn_status cuda_clock_stage(void *p, const bn_step_rule *r, bn_clock_stage stage)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    const int ranks = bn_comm_size(st->comm) > 1;
    switch (stage) {
    case BN_STAGE_HALF_KICK:
        BN_TRY(bn_cuda_need_velocities(st, "the clock's half kick"));
        return bn_gpu_kick(st->vel, st->acc, st->n, 0, st->clock, st->s);
    case BN_STAGE_DRIFT:
        BN_TRY(bn_cuda_need_velocities(st, "the clock's drift"));
        return bn_gpu_drift(st->pos, st->vel, st->n, 0, st->clock, st->s);
    case BN_STAGE_BLOCK_KICK:
        BN_TRY(bn_cuda_need_velocities(st, "the clock's block kick"));
        if (ranks) return ranks_block_kick(st);
        BN_TRY(ensure_block_buffers(st));
        return bn_gpu_block_kick(st->vel, st->acc, st->bin, st->n, NULL, NULL, st->clock, st->s);
    case BN_STAGE_FORCES:
        if (ranks) { /* the same clock on every rank: an idle step idles everywhere */
            return st->ranks_clock.live ? step_forces(st, r) : BN_OK;
        }
        return step_forces(st, r);
    case BN_STAGE_SHARED_PLAN:
    case BN_STAGE_SHARED_END:
    case BN_STAGE_BLOCK_BEGIN:
    case BN_STAGE_BLOCK_PLAN:
    case BN_STAGE_BLOCK_END:
        if (ranks) return ranks_clock_stage(st, r, stage);
        return bn_gpu_clock_update(st->clock, r, stage, st->acc, st->n, st->s);
    }
    return bn_fail(BN_ERR_ARGUMENT, "clock stage %d unknown", (int)stage);
}

/* What a batch of steps copies to the host: the clock, and the tree's
 * frame (a poll, since the host waits here anyway), with one wait. */
bn_status cuda_clock_read(void *p, bn_clock *c)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    BN_TRY(bn_cuda_read_queued(st->clock_host, st->clock, sizeof *c, "integrator clock", st->s));
    BN_TRY(poll_tree(st)); /* its read waits for the stream, the clock's copy included */
    BN_CUDA_CHECK(cudaStreamSynchronize(st->s)); /* at once after a poll; the wait without a tree */
    *c = *st->clock_host;
    return BN_OK;
}

bn_status cuda_clock_write(void *p, const bn_clock *c)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    st->ranks_clock = *c;
    return bn_gpu_clock_set(st->clock, c, st->s);
}

/* New settings (an error target's candidates): the next evaluation
 * builds the tree anew, sizing its buffers for it (no fallback on a tree
 * of other leaf and group sizes). */
bn_status cuda_set_params(void *p, const bn_gravity_params *g)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    st->g = *g;
    st->tree_valid = 0;
    return BN_OK;
}

/* The error sample on the device (gravity/sample_gpu.h): targets in key
 * order, so that the sample's runs cover space. */
bn_status cuda_sample_forces(void *p, size_t n, uint64_t seed, double *acc_ref, double *pot_ref, double *acc,
                             double *pot)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    if (bn_comm_size(st->comm) > 1) return bn_cuda_sample_ranks(st, n, seed, acc_ref, pot_ref, acc, pot);
    if (!st->have_forces || n == 0 || n > (size_t)st->n)
        return bn_fail(BN_ERR_ARGUMENT, "error sample: %zu targets of %d particles%s", n, st->n,
                       st->have_forces ? "" : " without forces");
    int *idx = (int *)bn_alloc(n * sizeof(int), "error sample");
    double *host = (double *)bn_alloc(8 * n * sizeof(double), "error sample");
    int *d_idx = NULL;
    double *d_out = NULL;
    bn_status r = idx && host ? BN_OK : BN_ERR_NOMEM;
    for (size_t j = 0; r == BN_OK && j < n; j++) idx[j] = (int)bn_sample_target(seed, j, n, (size_t)st->n);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&d_idx, n, "error sample targets", st->s);
    if (r == BN_OK) r = bn_cuda_dev_alloc(&d_out, 8 * n, "error sample forces", st->s);
    if (r == BN_OK) {
        const cudaError_t e = cudaMemcpyAsync(d_idx, idx, n * sizeof(int), cudaMemcpyHostToDevice, st->s);
        if (e != cudaSuccess) r = bn_cuda_fail(e, "error sample targets", __FILE__, __LINE__);
    }
    if (r == BN_OK)
        r = bn_gpu_sample_direct(st->pos, st->mass, st->n, d_idx, (int)n, st->g.G, st->g.softening, st->acc, d_out,
                                 st->s);
    if (r == BN_OK) r = bn_cuda_read(host, d_out, 8 * n * sizeof(double), "error sample forces", st->s);
    for (size_t j = 0; r == BN_OK && j < n; j++) {
        for (int k = 0; k < 3; k++) {
            acc_ref[3 * j + k] = host[8 * j + k];
            acc[3 * j + k] = host[8 * j + 4 + k];
        }
        pot_ref[j] = host[8 * j + 3];
        pot[j] = host[8 * j + 7];
    }
    bn_cuda_free(d_idx, st->s);
    bn_cuda_free(d_out, st->s);
    free(idx);
    free(host);
    return r;
}

/* Several ranks: tree forces (backend_cuda_ranks.cu), of every particle
 * or of the active bins, with every criterion. Not yet across ranks on
 * the GPU: direct summation. */
bn_status cuda_set_comm(void *p, const bn_comm *c)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    st->comm = c;
    return BN_OK;
}

/* Restart files: the bins by uploaded index (the device keeps them in key
 * order, orig maps), all 0 before the first block kick. */
bn_status check_bin_count(const bn_cuda_state *st, size_t n)
{
    if (n == (size_t)st->n) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "time bins: %zu given for %d particles", n, st->n);
}

bn_status cuda_bins_read(void *p, uint8_t *out, size_t n)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    BN_TRY(check_bin_count(st, n));
    if (!st->bin || n == 0) {
        memset(out, 0, n);
        return BN_OK;
    }
    uint8_t *bin = (uint8_t *)bn_alloc(n, "time bins");
    int *orig = (int *)bn_alloc(n * sizeof(int), "time bins");
    bn_status r = bin && orig ? BN_OK : BN_ERR_NOMEM;
    if (r == BN_OK) r = bn_cuda_read(bin, st->bin, n, "time bins", st->s);
    if (r == BN_OK) r = bn_cuda_read(orig, st->orig, n * sizeof(int), "time bins", st->s);
    for (size_t i = 0; r == BN_OK && i < n; i++) out[orig[i]] = bin[i];
    free(bin);
    free(orig);
    return r;
}

bn_status cuda_bins_write(void *p, const uint8_t *in, size_t n)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    BN_TRY(check_bin_count(st, n));
    BN_TRY(ensure_block_buffers(st));
    if (n == 0) return BN_OK;
    uint8_t *bin = (uint8_t *)bn_alloc(n, "time bins");
    int *orig = (int *)bn_alloc(n * sizeof(int), "time bins");
    bn_status r = bin && orig ? BN_OK : BN_ERR_NOMEM;
    if (r == BN_OK) r = bn_cuda_read(orig, st->orig, n * sizeof(int), "time bins", st->s);
    for (size_t i = 0; r == BN_OK && i < n; i++) bin[i] = in[orig[i]];
    if (r == BN_OK && cudaMemcpyAsync(st->bin, bin, n, cudaMemcpyHostToDevice, st->s) != cudaSuccess)
        r = bn_cuda_fail(cudaGetLastError(), "time bins up", __FILE__, __LINE__);
    if (r == BN_OK && cudaStreamSynchronize(st->s) != cudaSuccess) /* bin is read before it is freed */
        r = bn_cuda_fail(cudaGetLastError(), "time bins up", __FILE__, __LINE__);
    free(bin);
    free(orig);
    return r;
}

/* The tree the next refresh starts from (restart files): the kept
 * build's cube, keys and the particles' uploaded order, and the frame's
 * float origin now (each refresh moves it from where it was). */
bn_status cuda_tree_save(void *p, void **bytes, size_t *size)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    *bytes = NULL;
    *size = 0;
    if (!st->tree_valid || !st->tree_keys || !st->tree_box || !st->tree_kept || st->n == 0) return BN_OK;
    BN_TRY(poll_tree(st));
    int kept = 0; /* what the keep kernel wrote for the current tree (0: nothing kept) */
    BN_TRY(bn_cuda_read(&kept, st->tree_kept, sizeof kept, "the kept tree's count", st->s));
    if (kept != st->n) return BN_OK;
    const size_t n = (size_t)st->n, total = sizeof(bn_saved_tree) + n * (sizeof(uint64_t) + sizeof(uint32_t));
    unsigned char *b = (unsigned char *)bn_alloc(total, "the saved GPU tree");
    if (!b) return BN_ERR_NOMEM;
    bn_saved_tree h;
    memset(&h, 0, sizeof h);
    double box[4];
    bn_status r = bn_cuda_read(box, st->tree_box, sizeof box, "the kept tree's cube", st->s);
    h.n = (int64_t)n;
    h.curve = st->g.curve;
    for (int k = 0; k < 3; k++) {
        h.box_lo[k] = box[k];
        h.ref[k] = st->tree.frame_host->ref[k];
    }
    h.box_size = box[3];
    memcpy(b, &h, sizeof h);
    if (r == BN_OK) r = bn_cuda_read(b + sizeof h, st->tree_keys, n * sizeof(uint64_t), "the kept tree's keys", st->s);
    if (r == BN_OK)
        r = bn_cuda_read(b + sizeof h + n * sizeof(uint64_t), st->orig, n * sizeof(int), "the tree's order", st->s);
    if (r != BN_OK) {
        free(b);
        return r;
    }
    *bytes = b;
    *size = total;
    return BN_OK;
}

/* The frame's key cube (or, after the build, its float origin) as saved. */
bn_status set_frame(bn_cuda_state *st, const bn_saved_tree *h, int origin)
{
    bn_gpu_frame *f = st->tree.frame_host;
    BN_TRY(bn_cuda_read(f, st->tree.frame, sizeof *f, "tree frame", st->s));
    for (int k = 0; k < 3; k++) {
        if (origin) {
            f->ref[k] = h->ref[k];
            continue;
        }
        f->box_lo[k] = h->box_lo[k];
        f->ref[k] = h->box_lo[k] + 0.5 * h->box_size; /* as cube_kernel sets it */
    }
    if (!origin) f->box_size = h->box_size;
    f->bad_box = 0;
    BN_CUDA_CHECK(cudaMemcpyAsync(st->tree.frame, f, sizeof *f, cudaMemcpyHostToDevice, st->s));
    BN_CUDA_CHECK(cudaStreamSynchronize(st->s)); /* f is read before the next poll writes it */
    return poll_tree(st);
}

bn_status upload_bytes(void *dst, const void *src, size_t bytes, const char *what, cudaStream_t s)
{
    const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
    return e == cudaSuccess ? BN_OK : bn_cuda_fail(e, what, __FILE__, __LINE__);
}

/* After upload() (uploaded order = the saved particles'): the saved
 * build made again from its keys and order, the frame's origin put back. */
bn_status cuda_tree_load(void *p, const void *bytes, size_t size)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    bn_saved_tree h;
    const uint64_t *keys = NULL;
    const uint32_t *order = NULL;
    BN_TRY(bn_tree_saved_parse(bytes, size, (size_t)st->n, st->g.curve, &h, &keys, &order));
    if (st->n == 0 || st->g.method != BN_METHOD_TREE) return BN_OK;
    const int n = st->n;
    sort_buffers b = {NULL, NULL, NULL, NULL};
    bn_status r = alloc_sort_buffers(st, &b);
    if (r == BN_OK) r = upload_bytes(b.keys, keys, (size_t)n * sizeof *keys, "saved tree keys", st->s);
    if (r == BN_OK) r = upload_bytes(b.vals, order, (size_t)n * sizeof *order, "saved tree order", st->s);
    if (r == BN_OK) r = set_frame(st, &h, 0);
    if (r != BN_OK) {
        free_sort_buffers(&b, st->s);
        return r;
    }
    st->keep_tree_keys = 1;
    const bn_gravity_params g = effective_params(st);
    BN_TRY(build_sorted(st, &g, &b, 0)); /* the uploaded order is the identity: b.vals is the build's order */
    release_body_lo(st);
    return set_frame(st, &h, 1);
}

const bn_backend_ops cuda_ops = {
    "gpu", cuda_create, cuda_destroy, bn_cuda_particles_upload, bn_cuda_particles_download, cuda_forces,
    cuda_stats, cuda_finish, cuda_kick, cuda_drift, cuda_forces_active, cuda_block_kick, cuda_max_accel,
    cuda_energies, cuda_clock_stage, cuda_clock_read, cuda_clock_write, cuda_set_params, cuda_sample_forces,
    bn_cuda_particles_upload_positions, bn_cuda_particles_download_forces, cuda_set_comm, bn_cuda_costs, bn_cuda_rebalance,
    bn_cuda_migrate, cuda_bins_read, cuda_bins_write, bn_cuda_costs_set, cuda_tree_save, cuda_tree_load,
    bn_cuda_walk_seconds, cuda_build_ahead, cuda_set_key_cube,
};
} // namespace

extern "C" const bn_backend_ops *bn_cuda_backend_ops(void) { return &cuda_ops; }

extern "C" int bn_gpu_available(void)
{
    static int cached = -1;
    if (cached < 0) {
        int count = 0;
        cached = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
        (void)cudaGetLastError();
    }
    return cached;
}

extern "C" int bn_gpu_device_pick(int requested)
{
    if (requested >= 0) return requested;
    const int local = bn_local_rank_hint();
    int count = 0;
    if (local < 0 || !bn_gpu_available() || cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        (void)cudaGetLastError();
        return 0;
    }
    return local % count;
}

extern "C" const char *bn_gpu_name(int ordinal)
{
    static char name[256];
    cudaDeviceProp prop;
    name[0] = '\0';
    if (bn_gpu_available() && cudaGetDeviceProperties(&prop, ordinal) == cudaSuccess)
        snprintf(name, sizeof name, "%s", prop.name);
    (void)cudaGetLastError();
    return name;
}

extern "C" bn_status bn_cuda_state_tree(void *state, bn_gpu_tree_store **tree, double *pos[3], float **mass,
                                        int **orig)
{
    bn_cuda_state *st = (bn_cuda_state *)state;
    const bn_gravity_params g = effective_params(st);
    cudaEventRecord(st->ev[BN_EV_START], st->s);
    BN_TRY(build_tree(st, &g));
    BN_TRY(bn_gpu_tree_poll(&st->tree, st->s)); /* host copies of the shape, cube and ref */
    *tree = &st->tree;
    for (int k = 0; k < 3; k++) pos[k] = st->pos[k];
    *mass = st->mass;
    *orig = st->orig;
    return BN_OK;
}

/* The tree the last evaluation walked, as it is: no build (a refreshed
 * tree stays refreshed, and the active groups listed on it stay its
 * groups); its shape and ref as the caller's poll left them. */
extern "C" bn_status bn_cuda_state_last_tree(void *state, bn_gpu_tree_store **tree, double *pos[3], float **mass,
                                             int **orig)
{
    bn_cuda_state *st = (bn_cuda_state *)state;
    if (!st->tree_valid) return bn_fail(BN_ERR_ARGUMENT, "GPU backend: no tree to bring to the host");
    *tree = &st->tree;
    for (int k = 0; k < 3; k++) pos[k] = st->pos[k];
    *mass = st->mass;
    *orig = st->orig;
    return BN_OK;
}

extern "C" void bn_gpu_test_set_memory_limit(size_t bytes) { bn_cuda_set_alloc_limit(bytes); }
extern "C" size_t bn_gpu_bytes_in_use(void) { return bn_cuda_bytes_in_use(); }
extern "C" long bn_gpu_host_reads(void) { return bn_cuda_reads(); }

extern "C" void bn_gpu_test_shrink_tree_capacity(void *state, int nodes)
{
    bn_cuda_state *st = (bn_cuda_state *)state;
    if (nodes < st->tree.node_capacity) st->tree.node_capacity = nodes; /* the buffers stay as they are */
}

extern "C" int bn_gpu_test_tree_fallbacks(void *state, int *node_capacity)
{
    bn_cuda_state *st = (bn_cuda_state *)state;
    if (poll_tree(st) != BN_OK) return -1;
    if (node_capacity) *node_capacity = st->tree.node_capacity;
    return st->tree.frame_host->fallbacks;
}
