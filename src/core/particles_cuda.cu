/*
 * The CUDA backend's particle transfers: upload into device arrays (the
 * uploaded order, with orig = identity), download scattered back into the
 * uploaded order through orig (the evaluations keep the arrays in key
 * order). Masses and ids never change, so the host keeps them.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/backend_cuda_state.h"
extern "C" {
#include "core/input_summary.h"
#include "tree/keys.h"
#include "tree/tree_cpu.h" /* bn_tree_bbox: a C header */
}

void bn_cuda_particles_free(bn_cuda_state *st)
{
    for (int k = 0; k < 3; k++) {
        bn_cuda_free(st->pos[k], st->s);
        bn_cuda_free(st->vel[k], st->s);
        st->pos[k] = st->vel[k] = NULL;
    }
    bn_cuda_free(st->mass, st->s);
    bn_cuda_free(st->orig, st->s);
    bn_cuda_free(st->acc, st->s);
    bn_cuda_free(st->body, st->s);
    bn_cuda_free(st->body_lo, st->s);
    st->body_lo = NULL;
    bn_cuda_free(st->bin, st->s); /* new particles start in bin 0 */
    st->bin = NULL;
    bn_cuda_free(st->cost, st->s); /* and have cost nothing yet */
    st->cost = NULL;
    st->walk_seconds = 0;
    st->walk_pending = 0;
    bn_cuda_free(st->type, st->s);
    st->type = NULL;
    memset(st->type_count, 0, sizeof st->type_count);
    st->tree_valid = 0;
    bn_cuda_free(st->tree_keys, st->s); /* of the particles that were: none saved until the next keep */
    st->tree_keys = NULL;
    st->mass = NULL;
    st->orig = NULL;
    st->acc = st->body = NULL;
    free(st->host_mass);
    free(st->host_id);
    st->host_mass = NULL;
    st->host_capacity = 0;
    st->host_id = NULL;
    bn_cuda_free(st->dev_id, st->s);
    bn_cuda_free(st->dev_mass, st->s);
    st->dev_id = NULL;
    st->dev_mass = NULL;
    st->host_stale = 0;
    st->n = 0;
    st->have_forces = st->have_old_accel = 0;
}

namespace {
bn_status alloc_particles(bn_cuda_state *st, int n)
{
    for (int k = 0; k < 3; k++) {
        BN_TRY(bn_cuda_dev_alloc(&st->pos[k], bn_cuda_particle_room((size_t)n), "positions", st->s));
        BN_TRY(bn_cuda_dev_alloc(&st->vel[k], bn_cuda_particle_room((size_t)n), "velocities", st->s));
    }
    BN_TRY(bn_cuda_dev_alloc(&st->mass, bn_cuda_particle_room((size_t)n), "masses", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->orig, bn_cuda_particle_room((size_t)n), "particle order", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->acc, bn_cuda_particle_room((size_t)n), "accelerations", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->body, bn_cuda_particle_room((size_t)n), "tree bodies", st->s));
    st->host_mass = (double *)bn_alloc((size_t)n * sizeof(double), "host copy of masses");
    st->host_id = (uint64_t *)bn_alloc((size_t)n * sizeof(uint64_t), "host copy of ids");
    st->host_capacity = (size_t)n;
    return st->host_mass && st->host_id ? BN_OK : BN_ERR_NOMEM;
}

/* The float units of the device tree (tree_gpu.h): powers of two near
 * the particles' extent (the CPU tree's bounding cube, OpenMP; at most
 * 2^16 softening lengths: bn_gpu_length_scale) and total mass, fixed for this upload so that a run's results depend on nothing
 * the device decides between polls (a restart must upload from the same
 * state to get the same bits). A span too wide for keys keeps unit 1: the
 * GPU build reports it. */
void set_scales(bn_cuda_state *st, double side, double mass)
{
    st->tree.t.len_scale = bn_gpu_length_scale(side, st->g.softening);
    st->tree.t.mass_scale = bn_gpu_unit_scale(mass);
}

void set_unit_scales(bn_cuda_state *st, const bn_particles *in)
{
    double lo[3], side = 0;
    if (bn_tree_bbox(in->pos, in->n, lo, &side) != BN_OK) {
        bn_clear_error();
        side = 0;
    }
    set_scales(st, side, bn_particles_total_mass(in));
}

__global__ void iota_kernel(int *a, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = i;
}

} // namespace

bn_status bn_cuda_particles_alloc(bn_cuda_state *st, int n) { return alloc_particles(st, n); }
void bn_cuda_set_scales(bn_cuda_state *st, double side, double mass) { set_scales(st, side, mass); }

/* Room for the part types as uploaded, for the per-component energies
 * (none when the set has none: all PartType1), and their counts. */
static bn_status alloc_types(bn_cuda_state *st, const bn_particles *in)
{
    for (size_t i = 0; i < in->n; i++) st->type_count[bn_particles_part_type(in, i)] += 1;
    if (!in->type || in->n == 0) return BN_OK;
    return bn_cuda_dev_alloc(&st->type, bn_cuda_particle_room(in->n), "part types", st->s);
}

bn_status bn_cuda_particles_set_types(bn_cuda_state *st, const bn_particles *in)
{
    bn_cuda_free(st->type, st->s);
    st->type = NULL;
    memset(st->type_count, 0, sizeof st->type_count);
    BN_TRY(alloc_types(st, in));
    if (!st->type) return BN_OK;
    BN_CUDA_CHECK(cudaMemcpyAsync(st->type, in->type, in->n, cudaMemcpyHostToDevice, st->s));
    BN_CUDA_CHECK(cudaStreamSynchronize(st->s)); /* in->type may change next */
    return BN_OK;
}

bn_status bn_cuda_particles_upload(void *p, const bn_particles *in)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    bn_cuda_particles_free(st);
    if (in->n > (size_t)INT_MAX / 2)
        return bn_fail(BN_ERR_ARGUMENT, "GPU backend: %zu particles is more than the %d it indexes", in->n,
                       INT_MAX / 2);
    const int n = (int)in->n;
    bn_status r = alloc_particles(st, n);
    if (r == BN_OK) r = alloc_types(st, in);
    float *m = r == BN_OK ? (float *)bn_alloc((size_t)n * sizeof(float) + 1, "float masses") : NULL;
    if (r != BN_OK || !m) {
        free(m);
        bn_cuda_particles_free(st);
        return r != BN_OK ? r : BN_ERR_NOMEM;
    }
    st->n = n;
    set_unit_scales(st, in);
    for (int i = 0; i < n; i++) m[i] = (float)in->mass[i];
    memcpy(st->host_mass, in->mass, (size_t)n * sizeof(double));
    memcpy(st->host_id, in->id, (size_t)n * sizeof(uint64_t));
    cudaError_t err = cudaSuccess;
    for (int k = 0; k < 3 && err == cudaSuccess; k++) {
        err = cudaMemcpyAsync(st->pos[k], in->pos[k], (size_t)n * sizeof(double), cudaMemcpyHostToDevice, st->s);
        if (err == cudaSuccess)
            err = cudaMemcpyAsync(st->vel[k], in->vel[k], (size_t)n * sizeof(double), cudaMemcpyHostToDevice,
                                  st->s);
    }
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(st->mass, m, (size_t)n * sizeof(float), cudaMemcpyHostToDevice, st->s);
    if (err == cudaSuccess) err = cudaMemsetAsync(st->acc, 0, (size_t)n * sizeof(float4), st->s);
    /* forces that come with the particles are theirs (a re-balance across
     * ranks moves them along: bn_simulation_rebalance), as on the CPU */
    float4 *f = NULL;
    const int with_forces = in->acc[0] && in->acc[1] && in->acc[2] && in->pot && n > 0;
    if (err == cudaSuccess && with_forces) {
        f = (float4 *)bn_alloc((size_t)n * sizeof(float4), "forces to upload");
        if (!f) err = cudaErrorMemoryAllocation;
        for (int i = 0; f && i < n; i++)
            f[i] = make_float4((float)in->acc[0][i], (float)in->acc[1][i], (float)in->acc[2][i], (float)in->pot[i]);
        if (f) err = cudaMemcpyAsync(st->acc, f, (size_t)n * sizeof(float4), cudaMemcpyHostToDevice, st->s);
    }
    if (err == cudaSuccess && st->type)
        err = cudaMemcpyAsync(st->type, in->type, (size_t)n, cudaMemcpyHostToDevice, st->s);
    if (err == cudaSuccess && n > 0) {
        iota_kernel<<<(n + 255) / 256, 256, 0, st->s>>>(st->orig, n);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) err = cudaStreamSynchronize(st->s); /* m and f are freed next */
    free(m);
    free(f);
    /* the accel criterion's old |a| is the forces' that came along (a
     * restart file's): the first walk is the unstopped run's, as on the CPU */
    st->have_forces = st->have_old_accel = err == cudaSuccess && with_forces;
    if (err != cudaSuccess) {
        bn_cuda_particles_free(st);
        return bn_cuda_fail(err, "uploading particles", __FILE__, __LINE__);
    }
    return BN_OK;
}

namespace {
const int kThreads = 256;

/* dst[orig[i]] = src[i]: back to the uploaded order, on the device (a
 * host loop of random writes took seconds at 2^24). */
__global__ void unsort_f64(const double *src, const int *orig, int n, double *dst)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[orig[i]] = src[i];
}

/* dst[c][orig[i]] = component c of acc[i] (0-2 acceleration, 3
 * potential) for each dst[c] given (not NULL): one read of acc[i] for
 * all of them. T: double (download) or float (download_forces). */
template <typename T>
__global__ void unsort_acc(const float4 *acc, const int *orig, int n, T *x, T *y, T *z, T *w)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float4 a = acc[i];
    const int o = orig[i];
    if (x) x[o] = a.x;
    if (y) y[o] = a.y;
    if (z) z[o] = a.z;
    if (w) w[o] = a.w;
}

/* One array to the host through the device scratch `tmp` (n doubles):
 * src doubles (src == NULL: component c of acc). */
bn_status download_array(bn_cuda_state *st, const double *src, int c, double *tmp, double *dst)
{
    const int n = st->n, blocks = (n + kThreads - 1) / kThreads;
    if (n == 0) return BN_OK; /* no grid of 0 blocks */
    double *one[4] = {NULL, NULL, NULL, NULL};
    one[c] = tmp;
    if (src)
        unsort_f64<<<blocks, kThreads, 0, st->s>>>(src, st->orig, n, tmp);
    else
        unsort_acc<double><<<blocks, kThreads, 0, st->s>>>(st->acc, st->orig, n, one[0], one[1], one[2], one[3]);
    BN_CUDA_LAUNCH_CHECK();
    /* waited for: dst may be pageable, and tmp is reused next */
    return bn_cuda_read(dst, tmp, (size_t)n * sizeof(double), "particle download", st->s);
}

bn_status download_into(bn_cuda_state *st, bn_particles *out, double *tmp)
{
    for (int k = 0; k < 3; k++) {
        BN_TRY(download_array(st, st->pos[k], 0, tmp, out->pos[k]));
        BN_TRY(download_array(st, st->vel[k], 0, tmp, out->vel[k]));
    }
    BN_TRY(bn_cuda_mirror_ids(st, out));
    if (!st->have_forces) {
        for (int k = 0; k < 3; k++) {
            free(out->acc[k]);
            out->acc[k] = NULL;
        }
        free(out->pot);
        out->pot = NULL;
        return BN_OK;
    }
    BN_TRY(bn_particles_ensure_forces(out));
    for (int c = 0; c < 4; c++) BN_TRY(download_array(st, NULL, c, tmp, c < 3 ? out->acc[c] : out->pot));
    return BN_OK;
}
} // namespace

/* The host copies of ids and masses (what: BN_STALE_IDS, BN_STALE_MASSES)
 * from the device's, where a migration moved them there (several ranks):
 * read only when asked for (a download, a re-balance; the total mass
 * needs only the masses), not at every step. */
static bn_status host_copies_of(bn_cuda_state *st, int what)
{
    what &= st->host_stale;
    if (!what) return BN_OK;
    const size_t n = (size_t)st->n;
    if (n + 1 > st->host_capacity) {
        const size_t room = n + n / 16 + 1; /* the migrations' margin */
        uint64_t *id = (uint64_t *)realloc(st->host_id, room * sizeof *id);
        if (id) st->host_id = id;
        double *mass = (double *)realloc(st->host_mass, room * sizeof *mass);
        if (mass) st->host_mass = mass;
        if (!id || !mass) return bn_fail(BN_ERR_NOMEM, "host copies of %zu particles' ids and masses", n);
        st->host_capacity = room;
    }
    if (n > 0 && (what & BN_STALE_IDS))
        BN_TRY(bn_cuda_read(st->host_id, st->dev_id, n * sizeof *st->host_id, "ids to the host", st->s));
    if (n > 0 && (what & BN_STALE_MASSES))
        BN_TRY(bn_cuda_read(st->host_mass, st->dev_mass, n * sizeof *st->host_mass, "masses to the host", st->s));
    st->host_stale &= ~what;
    return BN_OK;
}

bn_status bn_cuda_host_copies(bn_cuda_state *st) { return host_copies_of(st, BN_STALE_IDS | BN_STALE_MASSES); }

bn_status bn_cuda_host_masses(bn_cuda_state *st) { return host_copies_of(st, BN_STALE_MASSES); }

/* The mirror's ids, masses and part types (uploaded order) from the host
 * copies and the device's types; host NULL: the host copies only. */
bn_status bn_cuda_mirror_ids(bn_cuda_state *st, bn_particles *host)
{
    BN_TRY(bn_cuda_host_copies(st));
    if (!host) return BN_OK;
    const size_t n = (size_t)st->n;
    BN_TRY(bn_particles_resize(host, n));
    memcpy(host->mass, st->host_mass, n * sizeof(double));
    memcpy(host->id, st->host_id, n * sizeof(uint64_t));
    if (!st->type) return BN_OK; /* all PartType1, as the mirror's (if any) were at the upload */
    BN_TRY(bn_particles_ensure_types(host));
    return n > 0 ? bn_cuda_read(host->type, st->type, n, "part types to the host", st->s) : BN_OK;
}

bn_status bn_cuda_particles_download(void *p, bn_particles *out)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    BN_TRY(bn_cuda_need_velocities(st, "download"));
    BN_TRY(bn_particles_resize(out, (size_t)st->n));
    double *tmp = NULL;
    BN_TRY(bn_cuda_dev_alloc(&tmp, (size_t)st->n, "download scratch", st->s));
    const bn_status r = download_into(st, out, tmp);
    bn_cuda_free(tmp, st->s);
    return r;
}

/* ---- a force call's transfers: only what it needs, staged -------------------- */
namespace {
/* Staging chunks of masses are whole mass blocks (input_summary.h): the
 * same total mass bits as bn_particles_total_mass. */
static_assert((BN_STAGING_BYTES / sizeof(float)) % BN_MASS_BLOCK == 0, "staging chunks of whole mass blocks");

/* One host array inspected into sum while copied into the staging
 * buffers (plain copies there: streaming stores were slower). */
struct inspect_up {
    const double *src;
    int axis;              /* 0-2 coordinates (doubles); -1 masses (floats) */
    bn_input_summary *sum;
};

void fill_inspected(void *ctx, void *pin, size_t off, size_t len)
{
    const inspect_up *u = (const inspect_up *)ctx;
    if (u->axis < 0) bn_stage_masses((float *)pin, u->src + off, len, off, u->sum);
    else bn_stage_coords((double *)pin, u->src + off, len, off, u->axis, u->sum);
}

/* n coordinates of one axis (doubles) or masses (made floats) to the
 * device, inspected into sum on the way. */
bn_status stage_inspected(bn_cuda_state *st, void *dst, const double *src, size_t n, int axis, bn_input_summary *sum)
{
    inspect_up u = {src, axis, sum};
    return bn_stage_up(&st->stage, st->s, dst, n, axis < 0 ? sizeof(float) : sizeof(double), fill_inspected, &u);
}

/* Floats out of the staging buffers into host doubles, the first
 * non-finite one lowering *first_bad. Floats cross, not doubles: half
 * the bytes over the bus. */
struct floats_down {
    double *dst;
    size_t *first_bad;
};

void drain_floats(void *ctx, const void *pin, size_t off, size_t len)
{
    const floats_down *d = (const floats_down *)ctx;
    bn_unstage_floats(d->dst + off, (const float *)pin, len, off, d->first_bad);
}

bn_status upload_positions(bn_cuda_state *st, const bn_particles *in, bn_input_summary *sum)
{
    const int n = st->n;
    for (int k = 0; k < 3; k++) {
        BN_TRY(bn_cuda_dev_alloc(&st->pos[k], (size_t)n, "positions", st->s));
        BN_TRY(stage_inspected(st, st->pos[k], in->pos[k], (size_t)n, k, sum));
    }
    BN_TRY(bn_cuda_dev_alloc(&st->mass, (size_t)n, "masses", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->orig, (size_t)n, "particle order", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->acc, (size_t)n, "accelerations", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->body, (size_t)n, "tree bodies", st->s));
    BN_TRY(stage_inspected(st, st->mass, in->mass, (size_t)n, -1, sum));
    BN_CUDA_CHECK(cudaMemsetAsync(st->acc, 0, (size_t)n * sizeof(float4), st->s));
    if (n > 0) { /* no grid of 0 blocks */
        iota_kernel<<<(n + 255) / 256, 256, 0, st->s>>>(st->orig, n);
        BN_CUDA_LAUNCH_CHECK();
    }
    return BN_OK;
}

/* After a staged transfer, failed or not: the stream drained (nothing
 * of this call is left in flight), its failure folded into r. */
bn_status end_staging(bn_cuda_state *st, bn_status r)
{
    const cudaError_t e = cudaStreamSynchronize(st->s);
    if (r == BN_OK && e != cudaSuccess) return bn_cuda_fail(e, "the staged transfers", __FILE__, __LINE__);
    return r;
}

/* The float units from the summary: the same cube and total mass as
 * set_unit_scales would compute from the host arrays. */
void set_summary_scales(bn_cuda_state *st, const bn_input_summary *sum)
{
    double lo[3], side = 0;
    if (sum->first_bad == sum->n) side = bn_key_cube(sum->lo, sum->hi, lo);
    set_scales(st, isfinite(side) ? side : 0, sum->mass);
}
} // namespace

bn_status bn_cuda_particles_upload_positions(void *p, const bn_particles *in, bn_input_summary *sum)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    bn_cuda_particles_free(st);
    if (in->n > (size_t)INT_MAX / 2)
        return bn_fail(BN_ERR_ARGUMENT, "GPU backend: %zu particles is more than the %d it indexes", in->n,
                       INT_MAX / 2);
    BN_TRY(bn_staging_init(&st->stage));
    BN_TRY(bn_summary_init(sum, in->n));
    st->n = (int)in->n; /* no velocities: bn_cuda_need_velocities refuses what needs them */
    const bn_status r = end_staging(st, upload_positions(st, in, sum));
    if (r != BN_OK) {
        bn_summary_free(sum);
        bn_cuda_particles_free(st);
        return r;
    }
    bn_summary_finish(sum);
    set_summary_scales(st, sum);
    return BN_OK;
}

bn_status bn_cuda_particles_download_forces(void *p, bn_particles *out, size_t *first_bad)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    if (!st->have_forces || out->n != (size_t)st->n)
        return bn_fail(BN_ERR_INTERNAL, "download_forces: no forces for %zu particles", out->n);
    BN_TRY(bn_particles_ensure_forces(out));
    BN_TRY(bn_staging_init(&st->stage));
    *first_bad = out->n;
    const int n = st->n, blocks = (n + kThreads - 1) / kThreads;
    float *tmp = NULL;
    BN_TRY(bn_cuda_dev_alloc(&tmp, 4 * (size_t)n, "download scratch", st->s));
    float *part[4];
    for (int c = 0; c < 4; c++) part[c] = tmp + (size_t)c * n;
    bn_status r = BN_OK;
    if (n > 0) { /* no grid of 0 blocks */
        unsort_acc<float><<<blocks, kThreads, 0, st->s>>>(st->acc, st->orig, n, part[0], part[1], part[2], part[3]);
        if (cudaGetLastError() != cudaSuccess) r = bn_fail(BN_ERR_DEVICE, "the forces' unsort kernel failed to launch");
    }
    for (int c = 0; r == BN_OK && c < 4; c++) {
        floats_down d = {c < 3 ? out->acc[c] : out->pot, first_bad};
        r = bn_stage_down(&st->stage, st->s, part[c], (size_t)n, sizeof(float), drain_floats, &d, "forces (staged)");
    }
    r = end_staging(st, r);
    bn_cuda_free(tmp, st->s);
    return r;
}
