/* The restart file (state_h5.h): particles, bins and named blobs, with a
 * checksum over all of them. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/mesh_h5.h"
#include "io/snapshot_h5.h"
#include "io/state_h5.h"

/* One array of the file: name, element type and bytes. */
typedef struct {
    const char *name;
    void *data;
    size_t n, elem;
    hid_t mtype, ftype;
} state_array;

#define STATE_ARRAYS_MAX 16

/* The particle arrays in their fixed order (the checksum's too). */
static int particle_arrays(bn_particles *p, uint8_t *bin, state_array *a)
{
    static const char *const pn[3] = {"PosX", "PosY", "PosZ"}, *const vn[3] = {"VelX", "VelY", "VelZ"},
                             *const an[3] = {"AccX", "AccY", "AccZ"};
    int k = 0;
    for (int d = 0; d < 3; d++) a[k++] = (state_array){pn[d], p->pos[d], p->n, 8, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE};
    for (int d = 0; d < 3; d++) a[k++] = (state_array){vn[d], p->vel[d], p->n, 8, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE};
    for (int d = 0; d < 3; d++) a[k++] = (state_array){an[d], p->acc[d], p->n, 8, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE};
    a[k++] = (state_array){"Potential", p->pot, p->n, 8, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE};
    a[k++] = (state_array){"Masses", p->mass, p->n, 8, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE};
    a[k++] = (state_array){"ParticleIDs", p->id, p->n, 8, H5T_NATIVE_UINT64, H5T_STD_U64LE};
    a[k++] = (state_array){"PartType", p->type, p->n, 1, H5T_NATIVE_UINT8, H5T_STD_U8LE};
    a[k++] = (state_array){"TimeBin", bin, p->n, 1, H5T_NATIVE_UINT8, H5T_STD_U8LE};
    return k;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < bytes; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t checksum(const state_array *a, int n_arrays, const bn_state_file *f)
{
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < n_arrays; i++)
        if (a[i].data) h = fnv1a(h, a[i].data, a[i].n * a[i].elem);
    for (int i = 0; i < f->n_blobs; i++) h = fnv1a(h, f->blob[i].data, f->blob[i].size);
    return h;
}

static bn_status write_array(hid_t g, const state_array *a)
{
    const hsize_t dims[1] = {a->n};
    return a->data ? bn_mh5_write(g, a->name, 1, dims, a->ftype, a->mtype, a->data) : BN_OK;
}

static bn_status fill_groups(hid_t f, const bn_state_file *sf, const state_array *a, int n_arrays)
{
    hid_t g = -1;
    BN_TRY(bn_h5_group_create(f, "Particles", &g));
    bn_status s = BN_OK;
    for (int i = 0; s == BN_OK && i < n_arrays; i++) s = write_array(g, &a[i]);
    H5Gclose(g);
    BN_TRY(s);
    BN_TRY(bn_h5_group_create(f, "State", &g));
    for (int i = 0; s == BN_OK && i < sf->n_blobs; i++) {
        const state_array b = {sf->blob[i].name, sf->blob[i].data, sf->blob[i].size, 1, H5T_NATIVE_UINT8,
                               H5T_STD_U8LE};
        s = write_array(g, &b);
    }
    H5Gclose(g);
    return s;
}

static bn_status fill(const char *tmp, void *ctx)
{
    const bn_state_file *sf = ctx;
    state_array a[STATE_ARRAYS_MAX];
    const int n_arrays = particle_arrays(sf->p, sf->bin, a);
    const uint64_t sum = checksum(a, n_arrays, sf);
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot create %s", tmp);
    const int format = BN_STATE_FORMAT;
    bn_status s = bn_h5_attr_write(f, "BanyanRestartFormat", H5T_NATIVE_INT, H5T_STD_I32LE, 0, &format);
    if (s == BN_OK) s = bn_h5_attr_write(f, "Checksum", H5T_NATIVE_UINT64, H5T_STD_U64LE, 0, &sum);
    if (s == BN_OK) s = fill_groups(f, sf, a, n_arrays);
    if (H5Fclose(f) < 0 && s == BN_OK) s = bn_h5_fail(BN_ERR_IO, "closing %s", tmp);
    return s;
}

bn_status bn_state_write(const char *path, const bn_state_file *f)
{
    if (!f->p->acc[0] || !f->p->pot) return bn_fail(BN_ERR_ARGUMENT, "restart file %s: particles without forces", path);
    return bn_h5_write_atomic(path, fill, (void *)f);
}

/* ---- reading ---- */

/* Dataset `name` of n elements into a new buffer; optional ones may be
 * absent (*out stays NULL). */
static bn_status read_array(hid_t g, const char *path, const state_array *a, int optional, void **out)
{
    *out = NULL;
    int present = 1;
    if (optional) BN_TRY(bn_mh5_has(g, path, a->name, &present));
    if (!present) return BN_OK;
    const hsize_t want[1] = {a->n};
    hsize_t dims[1];
    return bn_mh5_read(g, path, a->name, 1, a->n ? want : NULL, dims, a->mtype, a->elem, out);
}

static bn_status read_particles(hid_t f, const char *path, bn_state_file *sf, size_t n)
{
    BN_TRY(bn_particles_create(&sf->p, 0));
    BN_TRY(bn_particles_ensure_forces(sf->p));
    bn_particles *p = sf->p;
    state_array a[STATE_ARRAYS_MAX];
    const int n_arrays = particle_arrays(p, NULL, a);
    hid_t g = H5Gopen2(f, "Particles", H5P_DEFAULT);
    if (g < 0) return bn_h5_fail(BN_ERR_FORMAT, "%s: no group /Particles", path);
    bn_status s = BN_OK;
    void *got[STATE_ARRAYS_MAX] = {0};
    for (int i = 0; s == BN_OK && i < n_arrays; i++) {
        a[i].n = n;
        const int optional = !strcmp(a[i].name, "PartType") || !strcmp(a[i].name, "TimeBin");
        s = read_array(g, path, &a[i], optional, &got[i]);
    }
    H5Gclose(g);
    /* install what was read (freed with p on failure) */
    for (int d = 0; d < 3; d++) {
        free(p->pos[d]), free(p->vel[d]), free(p->acc[d]);
        p->pos[d] = got[d], p->vel[d] = got[3 + d], p->acc[d] = got[6 + d];
    }
    free(p->pot), free(p->mass), free(p->id), free(p->type);
    p->pot = got[9], p->mass = got[10], p->id = got[11], p->type = got[12];
    sf->bin = got[13];
    p->n = p->capacity = n;
    return s;
}

static bn_status read_blob(hid_t g, const char *path, bn_state_blob *b)
{
    const state_array a = {b->name, NULL, b->size, 1, H5T_NATIVE_UINT8, H5T_STD_U8LE};
    const hsize_t want[1] = {b->size};
    hsize_t dims[1] = {0};
    void *buf = NULL;
    int present = 1;
    if (b->size == 0) BN_TRY(bn_mh5_has(g, path, a.name, &present)); /* the caller's: may be empty */
    if (!present) return BN_OK;
    BN_TRY(bn_mh5_read(g, path, a.name, 1, b->size ? want : NULL, dims, a.mtype, 1, &buf));
    if (b->size) {
        memcpy(b->data, buf, b->size);
        free(buf);
    } else {
        b->data = buf;
        b->size = (size_t)dims[0];
        b->owned = 1;
    }
    return BN_OK;
}

static bn_status read_blobs(hid_t f, const char *path, bn_state_file *sf)
{
    hid_t g = H5Gopen2(f, "State", H5P_DEFAULT);
    if (g < 0) return bn_h5_fail(BN_ERR_FORMAT, "%s: no group /State", path);
    bn_status s = BN_OK;
    for (int i = 0; s == BN_OK && i < sf->n_blobs; i++) s = read_blob(g, path, &sf->blob[i]);
    H5Gclose(g);
    return s;
}

/* A format this build does not read, said with what to do instead. */
static bn_status format_check(const char *path, double format)
{
    if (format == BN_STATE_FORMAT) return BN_OK;
    if (format >= 1 && format < BN_STATE_FORMAT && format == floor(format))
        return bn_fail(BN_ERR_FORMAT, "%s: restart format %g, older than this build's %d: this build cannot continue "
                       "it; start a new run from one of the run's snapshots (InitialConditions:file), or continue it "
                       "with the banyan that wrote it", path, format, BN_STATE_FORMAT);
    if (format > BN_STATE_FORMAT && format == floor(format))
        return bn_fail(BN_ERR_FORMAT, "%s: restart format %g, newer than this build's %d: continue it with the banyan "
                       "that wrote it", path, format, BN_STATE_FORMAT);
    return bn_fail(BN_ERR_FORMAT, "%s: restart format %g, this build reads %d", path, format, BN_STATE_FORMAT);
}

static bn_status read_header(hid_t f, const char *path, uint64_t *sum, size_t *n)
{
    double format = 0;
    BN_TRY(bn_h5_attr_read_double(f, path, "BanyanRestartFormat", &format));
    BN_TRY(format_check(path, format));
    hid_t a = H5Aopen(f, "Checksum", H5P_DEFAULT);
    const herr_t r = a >= 0 ? H5Aread(a, H5T_NATIVE_UINT64, sum) : -1;
    if (a >= 0) H5Aclose(a);
    if (r < 0) return bn_h5_fail(BN_ERR_FORMAT, "%s: no readable Checksum attribute", path);
    hid_t d = H5Dopen2(f, "Particles/Masses", H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[1] = {0};
    const int rank = sp >= 0 ? H5Sget_simple_extent_dims(sp, dims, NULL) : -1;
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    if (rank != 1) return bn_h5_fail(BN_ERR_FORMAT, "%s: no 1-D dataset /Particles/Masses", path);
    *n = (size_t)dims[0];
    return BN_OK;
}

/* The whole file checked against its checksum, or (blobs_only) only
 * the format and the blobs. */
static bn_status read_all(hid_t f, const char *path, bn_state_file *sf, int blobs_only)
{
    uint64_t sum = 0;
    size_t n = 0;
    BN_TRY(read_header(f, path, &sum, &n));
    if (blobs_only) return read_blobs(f, path, sf);
    BN_TRY(read_particles(f, path, sf, n));
    BN_TRY(read_blobs(f, path, sf));
    state_array a[STATE_ARRAYS_MAX];
    const int n_arrays = particle_arrays(sf->p, sf->bin, a);
    if (checksum(a, n_arrays, sf) != sum)
        return bn_fail(BN_ERR_FORMAT, "%s: the checksum differs from the one written: the file is damaged", path);
    return BN_OK;
}

/* A restart file opened to read (*f), or a message that says why not. */
static bn_status open_state(const char *path, hid_t *f)
{
    bn_h5_quiet();
    *f = H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
    if (*f < 0) return bn_h5_fail(BN_ERR_FORMAT, "restart file %s: missing, truncated or not HDF5", path);
    return BN_OK;
}

static bn_status read_file(const char *path, bn_state_file *sf, int blobs_only)
{
    sf->p = NULL;
    sf->bin = NULL;
    hid_t f = -1;
    BN_TRY(open_state(path, &f));
    const bn_status s = read_all(f, path, sf, blobs_only);
    H5Fclose(f);
    if (s != BN_OK) bn_state_file_release(sf);
    return s;
}

bn_status bn_state_read(const char *path, bn_state_file *sf) { return read_file(path, sf, 0); }

bn_status bn_state_format(const char *path, int *format)
{
    hid_t f = -1;
    BN_TRY(open_state(path, &f));
    double v = 0;
    const bn_status s = bn_h5_attr_read_double(f, path, "BanyanRestartFormat", &v);
    H5Fclose(f);
    if (s != BN_OK) return s;
    if (!(v >= 1 && v <= INT_MAX && v == floor(v)))
        return bn_fail(BN_ERR_FORMAT, "%s: restart format %g, not a format number", path, v);
    *format = (int)v;
    return BN_OK;
}

bn_status bn_state_read_blobs(const char *path, bn_state_file *sf) { return read_file(path, sf, 1); }

void bn_state_file_release(bn_state_file *f)
{
    bn_particles_free(f->p);
    f->p = NULL;
    free(f->bin);
    f->bin = NULL;
    for (int i = 0; i < f->n_blobs; i++)
        if (f->blob[i].owned) {
            free(f->blob[i].data);
            f->blob[i] = (bn_state_blob){f->blob[i].name, NULL, 0, 0};
        }
}
