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
    st->tree_valid = 0;
    st->mass = NULL;
    st->orig = NULL;
    st->acc = st->body = NULL;
    free(st->host_mass);
    free(st->host_id);
    st->host_mass = NULL;
    st->host_id = NULL;
    st->n = 0;
    st->have_forces = 0;
    st->positions_only = 0;
}

namespace {
bn_status alloc_particles(bn_cuda_state *st, int n)
{
    for (int k = 0; k < 3; k++) {
        BN_TRY(bn_cuda_dev_alloc(&st->pos[k], n, "positions", st->s));
        BN_TRY(bn_cuda_dev_alloc(&st->vel[k], n, "velocities", st->s));
    }
    BN_TRY(bn_cuda_dev_alloc(&st->mass, n, "masses", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->orig, n, "particle order", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->acc, n, "accelerations", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->body, n, "tree bodies", st->s));
    st->host_mass = (double *)bn_alloc((size_t)n * sizeof(double), "host copy of masses");
    st->host_id = (uint64_t *)bn_alloc((size_t)n * sizeof(uint64_t), "host copy of ids");
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

bn_status bn_cuda_particles_upload(void *p, const bn_particles *in)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    bn_cuda_particles_free(st);
    if (in->n > (size_t)INT_MAX / 2)
        return bn_fail(BN_ERR_ARGUMENT, "GPU backend: %zu particles is more than the %d it indexes", in->n,
                       INT_MAX / 2);
    const int n = (int)in->n;
    bn_status r = alloc_particles(st, n);
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
    if (err == cudaSuccess && n > 0) {
        iota_kernel<<<(n + 255) / 256, 256, 0, st->s>>>(st->orig, n);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) err = cudaStreamSynchronize(st->s); /* m is freed next */
    free(m);
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

/* dst[orig[i]] = component c of acc[i] (0-2 acceleration, 3 potential). */
__global__ void unsort_acc(const float4 *acc, const int *orig, int n, int c, double *dst)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float4 a = acc[i];
    dst[orig[i]] = c == 0 ? a.x : c == 1 ? a.y : c == 2 ? a.z : a.w;
}

/* One array to the host through the device scratch `tmp`: src doubles
 * (acc == NULL) or component c of acc. */
bn_status download_array(bn_cuda_state *st, const double *src, int c, double *tmp, double *dst)
{
    const int n = st->n, blocks = (n + kThreads - 1) / kThreads;
    if (src)
        unsort_f64<<<blocks, kThreads, 0, st->s>>>(src, st->orig, n, tmp);
    else
        unsort_acc<<<blocks, kThreads, 0, st->s>>>(st->acc, st->orig, n, c, tmp);
    BN_CUDA_LAUNCH_CHECK();
    /* waited for: dst may be pageable, and tmp is reused next */
    return bn_cuda_read(dst, tmp, (size_t)n * sizeof(double), "particle download", st->s);
    return BN_OK;
}

bn_status download_into(bn_cuda_state *st, bn_particles *out, double *tmp)
{
    for (int k = 0; k < 3; k++) {
        BN_TRY(download_array(st, st->pos[k], 0, tmp, out->pos[k]));
        BN_TRY(download_array(st, st->vel[k], 0, tmp, out->vel[k]));
    }
    memcpy(out->mass, st->host_mass, (size_t)st->n * sizeof(double));
    memcpy(out->id, st->host_id, (size_t)st->n * sizeof(uint64_t));
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

bn_status bn_cuda_particles_download(void *p, bn_particles *out)
{
    bn_cuda_state *st = (bn_cuda_state *)p;
    if (st->positions_only)
        return bn_fail(BN_ERR_INTERNAL, "download: the particles were uploaded without velocities (upload_positions)");
    BN_TRY(bn_particles_resize(out, (size_t)st->n));
    double *tmp = NULL;
    BN_TRY(bn_cuda_dev_alloc(&tmp, (size_t)st->n, "download scratch", st->s));
    const bn_status r = download_into(st, out, tmp);
    bn_cuda_free(tmp, st->s);
    return r;
}

/* ---- a force call's transfers: only what it needs, staged -------------------- */
namespace {
const size_t kPinned = 32u << 20; /* bytes of each staging buffer */

bn_status ensure_pinned(bn_cuda_state *st)
{
    for (int k = 0; k < 2; k++)
        if (!st->pinned[k]) BN_CUDA_CHECK(cudaMallocHost(&st->pinned[k], kPinned));
    return BN_OK;
}

/* Staging chunks are whole mass blocks (input_summary.h): the same total
 * mass bits as bn_particles_total_mass. */
static_assert((kPinned / sizeof(double)) % BN_MASS_BLOCK == 0, "staging chunks of whole mass blocks");
enum { STAGE_MASS = 3 }; /* kind of stage_up: 0-2 an axis, or the masses */

/* n coordinates of axis `kind` (doubles) or masses (made floats) from
 * host src to device dst through the two staging buffers, inspected into
 * sum while copied: the parallel copy into one buffer overlaps the
 * other's transfer (a buffer is reused after its transfer: the events). */
bn_status stage_up(bn_cuda_state *st, void *dst, const double *src, size_t n, int kind, bn_input_summary *sum,
                   cudaEvent_t ev[2])
{
    const size_t chunk = kPinned / sizeof(double), size = kind == STAGE_MASS ? sizeof(float) : sizeof(double);
    for (size_t off = 0, c = 0; off < n; off += chunk, c++) {
        const size_t len = n - off < chunk ? n - off : chunk;
        BN_CUDA_CHECK(cudaEventSynchronize(ev[c & 1]));
        void *pin = st->pinned[c & 1];
        if (kind == STAGE_MASS) bn_stage_masses((float *)pin, src + off, len, off, sum);
        else bn_stage_coords((double *)pin, src + off, len, off, kind, sum);
        BN_CUDA_CHECK(cudaMemcpyAsync((char *)dst + off * size, pin, len * size, cudaMemcpyHostToDevice, st->s));
        BN_CUDA_CHECK(cudaEventRecord(ev[c & 1], st->s));
    }
    return BN_OK;
}

/* n floats from device src to host doubles dst, pipelined (the next
 * chunk's transfer under this chunk's copy out of its buffer), the first
 * non-finite value lowering *first_bad. Floats cross, not doubles: half
 * the bytes over the bus. */
bn_status stage_down(bn_cuda_state *st, double *dst, const float *src, size_t n, size_t *first_bad,
                     cudaEvent_t ev[2])
{
    const size_t chunk = kPinned / sizeof(float), chunks = (n + chunk - 1) / chunk;
    for (size_t c = 0; c <= chunks; c++) {
        if (c < chunks) {
            const size_t off = c * chunk, len = n - off < chunk ? n - off : chunk;
            BN_TRY(bn_cuda_read_queued(st->pinned[c & 1], src + off, len * sizeof(float), "forces (staged)", st->s));
            BN_CUDA_CHECK(cudaEventRecord(ev[c & 1], st->s));
        }
        if (c == 0) continue;
        const size_t p = c - 1, off = p * chunk, len = n - off < chunk ? n - off : chunk;
        BN_CUDA_CHECK(cudaEventSynchronize(ev[p & 1]));
        bn_unstage_floats(dst + off, (const float *)st->pinned[p & 1], len, off, first_bad);
    }
    return BN_OK;
}

/* dst[orig[i]] = component c of acc[i] as a float (download_forces). */
__global__ void unsort_acc_f32(const float4 *acc, const int *orig, int n, int c, float *dst)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float4 a = acc[i];
    dst[orig[i]] = c == 0 ? a.x : c == 1 ? a.y : c == 2 ? a.z : a.w;
}

bn_status upload_positions(bn_cuda_state *st, const bn_particles *in, bn_input_summary *sum, cudaEvent_t ev[2])
{
    const int n = st->n;
    for (int k = 0; k < 3; k++) {
        BN_TRY(bn_cuda_dev_alloc(&st->pos[k], (size_t)n, "positions", st->s));
        BN_TRY(stage_up(st, st->pos[k], in->pos[k], (size_t)n, k, sum, ev));
    }
    BN_TRY(bn_cuda_dev_alloc(&st->mass, (size_t)n, "masses", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->orig, (size_t)n, "particle order", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->acc, (size_t)n, "accelerations", st->s));
    BN_TRY(bn_cuda_dev_alloc(&st->body, (size_t)n, "tree bodies", st->s));
    BN_TRY(stage_up(st, st->mass, in->mass, (size_t)n, STAGE_MASS, sum, ev));
    BN_CUDA_CHECK(cudaMemsetAsync(st->acc, 0, (size_t)n * sizeof(float4), st->s));
    iota_kernel<<<(n + 255) / 256, 256, 0, st->s>>>(st->orig, n);
    BN_CUDA_LAUNCH_CHECK();
    return BN_OK;
}

/* The two events of a staged transfer (free staging buffers). */
bn_status make_events(cudaEvent_t ev[2])
{
    ev[0] = ev[1] = NULL;
    for (int k = 0; k < 2; k++)
        if (cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming) != cudaSuccess) {
            ev[k] = NULL;
            return bn_fail(BN_ERR_DEVICE, "cudaEventCreate for the staging buffers");
        }
    return BN_OK;
}

/* After a staged transfer, failed or not: the stream drained, so the
 * staging buffers are free again, and the events released. */
void end_staging(bn_cuda_state *st, cudaEvent_t ev[2])
{
    cudaStreamSynchronize(st->s);
    for (int k = 0; k < 2; k++)
        if (ev[k]) cudaEventDestroy(ev[k]);
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
    BN_TRY(ensure_pinned(st));
    BN_TRY(bn_summary_init(sum, in->n));
    st->n = (int)in->n;
    st->positions_only = 1;
    cudaEvent_t ev[2] = {NULL, NULL};
    bn_status r = make_events(ev);
    if (r == BN_OK) r = upload_positions(st, in, sum, ev);
    end_staging(st, ev);
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
    *first_bad = out->n;
    const int n = st->n, blocks = (n + kThreads - 1) / kThreads;
    float *tmp = NULL;
    BN_TRY(bn_cuda_dev_alloc(&tmp, 4 * (size_t)n, "download scratch", st->s));
    for (int c = 0; c < 4; c++)
        unsort_acc_f32<<<blocks, kThreads, 0, st->s>>>(st->acc, st->orig, n, c, tmp + (size_t)c * n);
    bn_status r = cudaGetLastError() == cudaSuccess ? BN_OK : bn_fail(BN_ERR_DEVICE, "the forces' unsort kernel");
    cudaEvent_t ev[2] = {NULL, NULL};
    if (r == BN_OK) r = make_events(ev);
    for (int c = 0; r == BN_OK && c < 4; c++)
        r = stage_down(st, c < 3 ? out->acc[c] : out->pot, tmp + (size_t)c * n, (size_t)n, first_bad, ev);
    end_staging(st, ev);
    bn_cuda_free(tmp, st->s);
    return r;
}
