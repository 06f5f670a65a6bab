/* Which format a snapshot file is in (from its first bytes, never its
 * name), format names, and writing in a chosen format. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/files.h"
#include "io/binary_file.h"
#include "io/snapshot_foreign.h"
#include "io/snapshot_tipsy.h"

/* GADGET-2's first record: marker, 256-byte header, marker */
#define G2_FIRST_RECORD 264

static const char *const format_names[] = {"hdf5", "gadget2", "gadget2-format2", "tipsy", "tipsy-native"};
#define N_FORMATS (sizeof format_names / sizeof format_names[0])

const char *bn_snapshot_format_name(bn_snapshot_format f)
{
    return (unsigned)f < N_FORMATS ? format_names[f] : "unknown";
}

bn_status bn_snapshot_format_parse(const char *name, bn_snapshot_format *out)
{
    for (size_t i = 0; name && i < N_FORMATS; i++)
        if (!strcmp(name, format_names[i])) {
            *out = (bn_snapshot_format)i;
            return BN_OK;
        }
    return bn_fail(BN_ERR_ARGUMENT, "unknown snapshot format '%s' (hdf5, gadget2, gadget2-format2, tipsy, "
                   "tipsy-native)", name ? name : "(null)");
}

/* GADGET-2: marker 256 (format 1) or 8 then "HEAD" (format 2). */
static int gadget2_order(const unsigned char *h, size_t n, int *big, int *format2)
{
    for (int b = 0; b < 2 && n >= 8; b++) {
        const uint32_t m = bn_bin_u32(h, b);
        /* format 1: the header's end marker too, when the file holds it */
        const int end_ok = n < G2_FIRST_RECORD || bn_bin_u32(h + 260, b) == 256;
        if ((m == 256 && end_ok) || (m == 8 && !memcmp(h + 4, "HEAD", 4))) {
            *big = b;
            *format2 = m == 8;
            return 1;
        }
    }
    return 0;
}

bn_status bn_snapshot_detect(const char *path, bn_snapshot_format *out, int *big_endian)
{
    BN_TRY(bn_check_regular_file(path, path, NULL));
    FILE *fp = fopen(path, "rb");
    if (!fp) return bn_fail(BN_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    unsigned char h[G2_FIRST_RECORD] = {0};
    const size_t n = fread(h, 1, sizeof h, fp);
    fclose(fp);
    int big = 0, format2 = 0;
    if (n >= 8 && !memcmp(h, "\211HDF\r\n\032\n", 8)) *out = BN_FORMAT_HDF5;
    else if (gadget2_order(h, n, &big, &format2)) *out = format2 ? BN_FORMAT_GADGET2_F2 : BN_FORMAT_GADGET2;
    else if (n >= BN_TIPSY_HEADER_BYTES && (bn_bin_u32(h + 12, 1) == 3 || bn_bin_u32(h + 12, 0) == 3)) {
        big = bn_bin_u32(h + 12, 1) == 3;
        *out = big == bn_host_big_endian() ? BN_FORMAT_TIPSY_NATIVE : BN_FORMAT_TIPSY;
    } else
        *out = BN_FORMAT_HDF5; /* HDF5 with a user block; the HDF5 reader says if not */
    if (big_endian) *big_endian = big;
    return BN_OK;
}

bn_status bn_snapshot_write_as(const char *path, const bn_particles *p, const bn_snapshot_meta *meta,
                               const bn_snapshot_write_options *o)
{
    if (!path || !p || !meta) return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_write_as: NULL argument");
    const bn_snapshot_format f = o ? o->format : BN_FORMAT_HDF5;
    if (f != BN_FORMAT_HDF5 || (o && o->n_files > 1)) {
        if (f == BN_FORMAT_HDF5 || (o->n_files > 1 && f != BN_FORMAT_GADGET2 && f != BN_FORMAT_GADGET2_F2))
            return bn_fail(BN_ERR_UNSUPPORTED, "writing %s: n_files > 1 is for GADGET-2 sets only", path);
        /* never write what the readers would refuse */
        BN_TRY(bn_particles_validate(p, path));
        BN_TRY(bn_particles_check_ids(p, path));
    }
    switch (f) {
    case BN_FORMAT_HDF5: return bn_snapshot_write(path, p, meta);
    case BN_FORMAT_GADGET2:
    case BN_FORMAT_GADGET2_F2: return bn_gadget2_write(path, p, meta, o);
    case BN_FORMAT_TIPSY:
    case BN_FORMAT_TIPSY_NATIVE: return bn_tipsy_write(path, p, meta, o);
    }
    return bn_fail(BN_ERR_ARGUMENT, "writing %s: unknown format %d", path, (int)f);
}

bn_status bn_snapshot_type_order(const bn_particles *p, size_t **order, size_t counts[BN_PART_TYPES])
{
    size_t start[BN_PART_TYPES];
    for (int t = 0; t < BN_PART_TYPES; t++) counts[t] = 0;
    for (size_t i = 0; i < p->n; i++) counts[bn_particles_part_type(p, i)]++;
    *order = bn_alloc_array(p->n ? p->n : 1, sizeof(size_t), "the particles' type order");
    if (!*order) return BN_ERR_NOMEM;
    size_t at = 0;
    for (int t = 0; t < BN_PART_TYPES; t++) {
        start[t] = at;
        at += counts[t];
    }
    for (size_t i = 0; i < p->n; i++) (*order)[start[bn_particles_part_type(p, i)]++] = i;
    return BN_OK;
}

static bn_status fits(const char *path, size_t i, const char *what, double v)
{
    if (fabs(v) <= FLT_MAX && (v == 0 || (float)v != 0)) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "writing %s: particle %zu: %s = %g does not fit a float32 (the format's type)",
                   path, i, what, v);
}

bn_status bn_check_float32(const char *path, const bn_particles *p)
{
    static const char *const what[6] = {"x", "y", "z", "vx", "vy", "vz"};
    for (size_t i = 0; i < p->n; i++) {
        for (int c = 0; c < 3; c++) {
            BN_TRY(fits(path, i, what[c], p->pos[c][i]));
            BN_TRY(fits(path, i, what[3 + c], p->vel[c][i]));
        }
        BN_TRY(fits(path, i, "mass", p->mass[i]));
    }
    return BN_OK;
}
