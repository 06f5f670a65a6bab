/* Read tipsy binary files: a 32-byte header (double time; int nbodies,
 * ndim, nsph, ndark, nstar, pad) then nsph gas, ndark dark and nstar star
 * records of floats. "Standard" files are big-endian (XDR: Bonsai,
 * ChaNGa), native ones in the writer's order: the order is the one in
 * which ndim reads 3. Gas becomes PartType0, dark matter PartType1, stars
 * PartType4; ids are 1, 2, ... in file order (tipsy has none). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/binary_file.h"
#include "io/snapshot_foreign.h"
#include "io/snapshot_tipsy.h"

typedef struct {
    double time;
    int32_t n[3]; /* gas, dark, star */
} tipsy_header;

static const char *const kind_name[3] = {"gas", "dark", "star"};
static const char *const count_name[3] = {"nsph", "ndark", "nstar"};

static bn_status parse_header(bn_binfile *b, tipsy_header *h)
{
    const unsigned char *d;
    BN_TRY(bn_binfile_take(b, BN_TIPSY_HEADER_BYTES, "the header", &d));
    b->big = bn_bin_u32(d + 12, 1) == 3;
    if (!b->big && bn_bin_u32(d + 12, 0) != 3)
        return bn_fail(BN_ERR_FORMAT, "%s: header ndim = %d (must be 3)", b->path, (int32_t)bn_bin_u32(d + 12, 1));
    h->time = bn_bin_f64(d, b->big);
    if (!isfinite(h->time)) return bn_fail(BN_ERR_FORMAT, "%s: header time = %g (must be finite)", b->path, h->time);
    const int32_t nbodies = (int32_t)bn_bin_u32(d + 8, b->big);
    int64_t sum = 0;
    for (int k = 0; k < 3; k++) {
        h->n[k] = (int32_t)bn_bin_u32(d + 16 + 4 * k, b->big);
        if (h->n[k] < 0) return bn_fail(BN_ERR_FORMAT, "%s: header %s = %d (must be >= 0)", b->path, count_name[k], h->n[k]);
        sum += h->n[k];
    }
    if (sum != nbodies)
        return bn_fail(BN_ERR_FORMAT, "%s: header nbodies = %d but nsph + ndark + nstar = %lld", b->path, nbodies,
                       (long long)sum);
    if (sum == 0) return bn_fail(BN_ERR_FORMAT, "%s: header nbodies = 0 (no particles)", b->path);
    uint64_t want = BN_TIPSY_HEADER_BYTES;
    for (int k = 0; k < 3; k++) want += (uint64_t)h->n[k] * bn_tipsy_record_floats[k] * 4;
    if (want != b->size)
        return bn_fail(BN_ERR_FORMAT, "%s: the header's counts (nsph %d, ndark %d, nstar %d) make %llu bytes, but the "
                       "file has %zu", b->path, h->n[0], h->n[1], h->n[2], (unsigned long long)want, b->size);
    return BN_OK;
}

/* Record i (of kind k) into particle j: mass, pos, vel; the rest unread. */
static bn_status fill_one(const bn_binfile *b, const unsigned char *r, int k, size_t j, bn_particles *p)
{
    static const char *const what[7] = {"mass", "x", "y", "z", "vx", "vy", "vz"};
    double v[7];
    for (int c = 0; c < 7; c++) {
        v[c] = bn_bin_f32(r + 4 * c, b->big);
        BN_TRY(bn_bin_check_finite(b->path, kind_name[k], j, what[c], v[c]));
    }
    if (v[0] < 0)
        return bn_fail(BN_ERR_FORMAT, "%s: block %s: particle %zu has mass %g (must be >= 0)", b->path, kind_name[k], j,
                       v[0]);
    p->mass[j] = v[0];
    for (int c = 0; c < 3; c++) {
        p->pos[c][j] = v[1 + c];
        p->vel[c][j] = v[4 + c];
    }
    p->id[j] = j + 1;
    p->type[j] = (uint8_t)bn_tipsy_part_type[k];
    return BN_OK;
}

static bn_status fill(bn_binfile *b, const tipsy_header *h, bn_particles *p)
{
    size_t j = 0;
    for (int k = 0; k < 3; k++) {
        const size_t bytes = 4 * (size_t)bn_tipsy_record_floats[k];
        for (int32_t i = 0; i < h->n[k]; i++, j++) {
            const unsigned char *r;
            BN_TRY(bn_binfile_take(b, bytes, kind_name[k], &r));
            BN_TRY(fill_one(b, r, k, j, p));
        }
    }
    return BN_OK;
}

bn_status bn_tipsy_read(const char *path, bn_particles **out, bn_snapshot_meta *meta)
{
    *out = NULL;
    bn_binfile b;
    tipsy_header h = {0};
    BN_TRY(bn_binfile_load(path, &b));
    bn_status s = parse_header(&b, &h);
    if (s == BN_OK) s = bn_particles_create(out, (size_t)h.n[0] + (size_t)h.n[1] + (size_t)h.n[2]);
    if (s == BN_OK) s = bn_particles_ensure_types(*out);
    if (s == BN_OK) s = fill(&b, &h, *out);
    const double m = s == BN_OK ? bn_particles_total_mass(*out) : 1;
    if (!(m > 0) || !isfinite(m)) s = bn_fail(BN_ERR_FORMAT, "%s: total mass is %g (must be finite and > 0)", path, m);
    if (s == BN_OK && h.n[0] == 0 && h.n[2] == 0) { /* all dark: PartType1, no types (as the HDF5 reader) */
        free((*out)->type);
        (*out)->type = NULL;
    }
    bn_binfile_free(&b);
    if (s != BN_OK) {
        bn_particles_free(*out);
        *out = NULL;
        return s;
    }
    if (meta) {
        *meta = bn_snapshot_meta_default();
        meta->time = h.time;
    }
    return BN_OK;
}
