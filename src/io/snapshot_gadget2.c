/* Read GADGET-2 binary snapshots and initial conditions: format 1 (the
 * blocks HEAD, POS, VEL, ID, MASS in that order, each a Fortran record
 * between two byte counts) and format 2 (each block after a record of
 * its 4-character label), either byte order (the first marker must be 256
 * or 8), float or double values, 32- or 64-bit ids, a MASS block for the
 * types whose header mass is 0, and sets of files "<stem>.0", "<stem>.1"...
 * Every failure names the file and the block or header field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/binary_file.h"
#include "io/snapshot_foreign.h"

#define G2_TYPES 6

typedef struct {
    uint64_t npart[G2_TYPES], total[G2_TYPES];
    double mass[G2_TYPES], time, redshift, box;
    int num_files;
} g2_header;

/* The blocks a reader needs, found in the file. */
typedef struct {
    const unsigned char *pos, *vel, *id, *mass;
    size_t pos_len, vel_len, id_len, mass_len;
    int format2;
} g2_blocks;

/* One Fortran record: start marker, payload, the same end marker. */
static bn_status record(bn_binfile *b, const char *field, const unsigned char **data, size_t *len)
{
    const unsigned char *m;
    const size_t at = b->pos;
    BN_TRY(bn_binfile_take(b, 4, field, &m));
    *len = bn_bin_u32(m, b->big);
    BN_TRY(bn_binfile_take(b, *len, field, data));
    BN_TRY(bn_binfile_take(b, 4, field, &m));
    if (bn_bin_u32(m, b->big) != *len)
        return bn_fail(BN_ERR_FORMAT, "%s: block %s: record marker %u at its end differs from %zu at its start (byte %zu)",
                       b->path, field, bn_bin_u32(m, b->big), *len, at);
    return BN_OK;
}

/* Format 2: the 8-byte record before a block: its label. */
static bn_status label(bn_binfile *b, char name[5])
{
    const unsigned char *d;
    size_t len;
    BN_TRY(record(b, "label", &d, &len));
    if (len != 8) return bn_fail(BN_ERR_FORMAT, "%s: a block label record has %zu bytes (8 expected)", b->path, len);
    for (int i = 0; i < 4; i++) name[i] = d[i] >= 32 && d[i] < 127 ? (char)d[i] : '?';
    name[4] = 0;
    return BN_OK;
}

static bn_status header_count(const char *path, const char *field, int t, uint64_t v)
{
    if (v <= INT32_MAX) return BN_OK;
    return bn_fail(BN_ERR_FORMAT, "%s: header %s[%d] = %d (must be >= 0)", path, field, t, (int32_t)(uint32_t)v);
}

static bn_status header_real(const char *path, const char *field, double v, double lo)
{
    if (isfinite(v) && v >= lo) return BN_OK;
    return bn_fail(BN_ERR_FORMAT, "%s: header %s = %g (must be finite%s)", path, field, v, lo == 0 ? " and >= 0" : "");
}

/* The 256-byte header (offsets as GADGET-2's io_header). */
static bn_status parse_header(const bn_binfile *b, const unsigned char *h, g2_header *g)
{
    const int big = b->big;
    char field[32];
    for (int t = 0; t < G2_TYPES; t++) {
        g->npart[t] = bn_bin_u32(h + 4 * t, big);
        g->mass[t] = bn_bin_f64(h + 24 + 8 * t, big);
        g->total[t] = bn_bin_u32(h + 96 + 4 * t, big) + ((uint64_t)bn_bin_u32(h + 168 + 4 * t, big) << 32);
        BN_TRY(header_count(b->path, "npart", t, g->npart[t]));
        snprintf(field, sizeof field, "mass[%d]", t);
        BN_TRY(header_real(b->path, field, g->mass[t], 0));
    }
    g->time = bn_bin_f64(h + 72, big);
    g->redshift = bn_bin_f64(h + 80, big);
    g->box = bn_bin_f64(h + 128, big);
    BN_TRY(header_real(b->path, "time", g->time, -INFINITY));
    BN_TRY(header_real(b->path, "redshift", g->redshift, -INFINITY));
    BN_TRY(header_real(b->path, "BoxSize", g->box, 0));
    const int32_t nf = (int32_t)bn_bin_u32(h + 124, big);
    if (nf < 0 || nf > BN_SNAPSHOT_MAX_FILES)
        return bn_fail(BN_ERR_FORMAT, "%s: header num_files = %d (must be 0 to %d)", b->path, nf, BN_SNAPSHOT_MAX_FILES);
    g->num_files = nf ? nf : 1;
    return BN_OK;
}

static int is_label(const char got[5], const char *want) { return !memcmp(got, want, 4); }

/* Format 2: the labelled blocks in any order; others (U, RHO...) skipped. */
static bn_status find_blocks_f2(bn_binfile *b, g2_blocks *k)
{
    while (b->pos < b->size) {
        char name[5];
        const unsigned char *d;
        size_t len;
        BN_TRY(label(b, name));
        BN_TRY(record(b, name, &d, &len));
        if (is_label(name, "POS ")) k->pos = d, k->pos_len = len;
        else if (is_label(name, "VEL ")) k->vel = d, k->vel_len = len;
        else if (is_label(name, "ID  ")) k->id = d, k->id_len = len;
        else if (is_label(name, "MASS")) k->mass = d, k->mass_len = len;
    }
    const char *missing = !k->pos ? "POS " : !k->vel ? "VEL " : !k->id ? "ID  " : NULL;
    if (missing) return bn_fail(BN_ERR_FORMAT, "%s: no block '%s'", b->path, missing);
    return BN_OK;
}

/* Format 1: POS, VEL, ID, then MASS when some type with particles has
 * header mass 0; what follows (gas blocks) is not read. */
static bn_status find_blocks_f1(bn_binfile *b, const g2_header *g, g2_blocks *k)
{
    BN_TRY(record(b, "POS", &k->pos, &k->pos_len));
    BN_TRY(record(b, "VEL", &k->vel, &k->vel_len));
    BN_TRY(record(b, "ID", &k->id, &k->id_len));
    for (int t = 0; t < G2_TYPES; t++)
        if (g->npart[t] > 0 && g->mass[t] == 0) return record(b, "MASS", &k->mass, &k->mass_len);
    return BN_OK;
}

/* Bytes per value of a block of `len` bytes holding n x ncol values. */
static bn_status value_width(const char *path, const char *block, size_t len, uint64_t n, int ncol, int *width)
{
    const uint64_t v = n * (uint64_t)ncol; /* n < 6 * 2^31: no overflow */
    if (v > 0 && len == 4 * v) *width = 4;
    else if (v > 0 && len == 8 * v) *width = 8;
    else if (v == 0 && len == 0) *width = 4;
    else
        return bn_fail(BN_ERR_FORMAT, "%s: block %s has %zu bytes, but the header's npart add up to %llu values "
                       "(%llu or %llu bytes)", path, block, len, (unsigned long long)v, (unsigned long long)(4 * v),
                       (unsigned long long)(8 * v));
    return BN_OK;
}

static bn_status fill_vectors(const char *path, const char *block, const unsigned char *d, int w, int big,
                              double *const *dst, size_t n)
{
    static const char *xyz[3] = {"x", "y", "z"};
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            dst[c][i] = bn_bin_real(d + (3 * i + (size_t)c) * (size_t)w, w, big);
            BN_TRY(bn_bin_check_finite(path, block, i, xyz[c], dst[c][i]));
        }
    return BN_OK;
}

static bn_status fill_masses(const char *path, const g2_header *g, const g2_blocks *k, int big, bn_particles *p)
{
    uint64_t n_mass = 0;
    for (int t = 0; t < G2_TYPES; t++)
        if (g->mass[t] == 0) n_mass += g->npart[t];
    int w = 4;
    if (n_mass > 0 && !k->mass)
        return bn_fail(BN_ERR_FORMAT, "%s: no block MASS, but %llu particles have header mass 0", path,
                       (unsigned long long)n_mass);
    if (k->mass) BN_TRY(value_width(path, "MASS", k->mass_len, n_mass, 1, &w));
    size_t i = 0, j = 0;
    for (int t = 0; t < G2_TYPES; t++)
        for (uint64_t q = 0; q < g->npart[t]; q++, i++) {
            p->mass[i] = g->mass[t] > 0 ? g->mass[t] : bn_bin_real(k->mass + w * j++, w, big);
            if (!(p->mass[i] >= 0) || !isfinite(p->mass[i]))
                return bn_fail(BN_ERR_FORMAT, "%s: block MASS: particle %zu has mass %g (must be finite and >= 0)",
                               path, i, p->mass[i]);
        }
    return BN_OK;
}

typedef struct {
    int pos, vel, id;
} g2_widths;

/* The blocks' sizes agree with the header's counts (before anything is
 * allocated for them: a header cannot ask for more than the file holds). */
static bn_status block_widths(const bn_binfile *b, const g2_blocks *k, uint64_t n, g2_widths *w)
{
    BN_TRY(value_width(b->path, "POS", k->pos_len, n, 3, &w->pos));
    BN_TRY(value_width(b->path, "VEL", k->vel_len, n, 3, &w->vel));
    return value_width(b->path, "ID", k->id_len, n, 1, &w->id);
}

static bn_status fill_particles(const bn_binfile *b, const g2_header *g, const g2_blocks *k, uint64_t n,
                                bn_particles *p)
{
    g2_widths w = {4, 4, 4};
    BN_TRY(block_widths(b, k, n, &w));
    const int wp = w.pos, wv = w.vel, wi = w.id;
    BN_TRY(fill_vectors(b->path, "POS", k->pos, wp, b->big, p->pos, n));
    BN_TRY(fill_vectors(b->path, "VEL", k->vel, wv, b->big, p->vel, n));
    for (size_t i = 0; i < n; i++)
        p->id[i] = wi == 8 ? bn_bin_u64(k->id + 8 * i, b->big) : bn_bin_u32(k->id + 4 * i, b->big);
    BN_TRY(fill_masses(b->path, g, k, b->big, p));
    size_t i = 0;
    for (int t = 0; t < G2_TYPES; t++)
        for (uint64_t q = 0; q < g->npart[t]; q++) p->type[i++] = (uint8_t)t;
    return BN_OK;
}

/* The byte order from the first marker: 256 (format 1) or 8 (format 2). */
static bn_status detect_order(bn_binfile *b, int *format2)
{
    if (b->size < 4) return bn_fail(BN_ERR_FORMAT, "%s: truncated: %zu bytes (no header)", b->path, b->size);
    for (int big = 0; big < 2; big++) {
        const uint32_t m = bn_bin_u32(b->data, big);
        if (m == 256 || m == 8) {
            b->big = big;
            *format2 = m == 8;
            return BN_OK;
        }
    }
    return bn_fail(BN_ERR_FORMAT, "%s: the first record marker is %u (GADGET-2 writes 256, or 8 in format 2)",
                   b->path, bn_bin_u32(b->data, 0));
}

static bn_status read_header(bn_binfile *b, g2_header *g, g2_blocks *k)
{
    memset(k, 0, sizeof *k);
    BN_TRY(detect_order(b, &k->format2));
    char name[5];
    if (k->format2) BN_TRY(label(b, name));
    if (k->format2 && !is_label(name, "HEAD"))
        return bn_fail(BN_ERR_FORMAT, "%s: the first block is '%s' (HEAD expected)", b->path, name);
    const unsigned char *h;
    size_t len;
    BN_TRY(record(b, "HEAD", &h, &len));
    if (len != 256) return bn_fail(BN_ERR_FORMAT, "%s: block HEAD has %zu bytes (256 expected)", b->path, len);
    return parse_header(b, h, g);
}

/* One file: particles in type order, types always recorded. */
static bn_status read_file(const char *path, g2_header *g, bn_particles **out)
{
    bn_binfile b;
    g2_blocks k;
    BN_TRY(bn_binfile_load(path, &b));
    bn_status s = read_header(&b, g, &k);
    uint64_t n = 0;
    for (int t = 0; t < G2_TYPES; t++) n += g->npart[t];
    g2_widths w = {4, 4, 4};
    if (s == BN_OK) s = k.format2 ? find_blocks_f2(&b, &k) : find_blocks_f1(&b, g, &k);
    if (s == BN_OK) s = block_widths(&b, &k, n, &w);
    if (s == BN_OK) s = bn_particles_create(out, (size_t)n);
    if (s == BN_OK) s = bn_particles_ensure_types(*out);
    if (s == BN_OK) s = fill_particles(&b, g, &k, n, *out);
    bn_binfile_free(&b);
    return s;
}

/* File k of the set that path ("<stem>.<j>") is one of. */
static bn_status part_name(const char *path, int k, char *out, size_t cap)
{
    size_t n = strlen(path), d = n;
    while (d > 0 && path[d - 1] >= '0' && path[d - 1] <= '9') d--;
    if (d == n || d == 0 || path[d - 1] != '.')
        return bn_fail(BN_ERR_FORMAT, "%s: header num_files > 1, but the name does not end in .<k> "
                       "(GADGET-2 names a set's files <stem>.0, <stem>.1, ...)", path);
    if (snprintf(out, cap, "%.*s%d", (int)d, path, k) >= (int)cap)
        return bn_fail(BN_ERR_ARGUMENT, "%s: the name of file %d is too long", path, k);
    return BN_OK;
}

static bn_status same_set(const char *path, const g2_header *first, const g2_header *g)
{
    if (g->num_files != first->num_files)
        return bn_fail(BN_ERR_FORMAT, "%s: header num_files = %d, but %d in the set's first file", path,
                       g->num_files, first->num_files);
    for (int t = 0; t < G2_TYPES; t++)
        if (g->total[t] != first->total[t] || g->mass[t] != first->mass[t])
            return bn_fail(BN_ERR_FORMAT, "%s: header npartTotal[%d] or mass[%d] differs from the set's first file",
                           path, t, t);
    return BN_OK;
}

/* Every file's particles in the set's file order; the types' counts must
 * add up to the header's npartTotal. */
static bn_status read_set(const char *path, const g2_header *first, bn_particles **all)
{
    uint64_t seen[G2_TYPES] = {0};
    char name[4096];
    bn_status s = BN_OK;
    for (int k = 0; s == BN_OK && k < first->num_files; k++) {
        g2_header g;
        bn_particles *p = NULL;
        s = part_name(path, k, name, sizeof name);
        if (s == BN_OK) s = read_file(name, &g, &p);
        if (s == BN_OK) s = same_set(name, first, &g);
        for (int t = 0; s == BN_OK && t < G2_TYPES; t++) seen[t] += g.npart[t];
        if (s == BN_OK) s = bn_snapshot_append(all, p);
        bn_particles_free(p);
    }
    for (int t = 0; s == BN_OK && t < G2_TYPES; t++)
        if (seen[t] != first->total[t])
            s = bn_fail(BN_ERR_FORMAT, "%s: the %d files hold %llu particles of type %d, but header npartTotal[%d] "
                        "= %llu", path, first->num_files, (unsigned long long)seen[t], t, t,
                        (unsigned long long)first->total[t]);
    return s;
}

/* A single file's npartTotal: all zero (some IC makers leave it) or npart. */
static bn_status check_single(const char *path, const g2_header *g)
{
    uint64_t any = 0;
    for (int t = 0; t < G2_TYPES; t++) any |= g->total[t];
    for (int t = 0; any && t < G2_TYPES; t++)
        if (g->total[t] != g->npart[t])
            return bn_fail(BN_ERR_FORMAT, "%s: header npartTotal[%d] = %llu but npart[%d] = %llu (num_files = 1)",
                           path, t, (unsigned long long)g->total[t], t, (unsigned long long)g->npart[t]);
    return BN_OK;
}

/* The set is in type order only per file: types kept; none when every
 * particle is PartType1, as the HDF5 reader does. */
static bn_status finish(const char *path, bn_particles *p)
{
    if (p->n == 0) return bn_fail(BN_ERR_FORMAT, "%s: no particles (header npart all 0)", path);
    int only_dm = 1;
    for (size_t i = 0; i < p->n && only_dm; i++) only_dm = p->type[i] == 1;
    if (only_dm) {
        free(p->type);
        p->type = NULL;
    }
    const double m = bn_particles_total_mass(p);
    if (!(m > 0) || !isfinite(m))
        return bn_fail(BN_ERR_FORMAT, "%s: total mass is %g (must be finite and > 0)", path, m);
    return bn_particles_check_ids(p, path);
}

bn_status bn_gadget2_read(const char *path, bn_particles **out, bn_snapshot_meta *meta)
{
    *out = NULL;
    g2_header g;
    bn_status s = read_file(path, &g, out);
    if (s == BN_OK && g.num_files > 1) {
        bn_particles_free(*out);
        *out = NULL;
        s = read_set(path, &g, out);
    } else if (s == BN_OK) s = check_single(path, &g);
    if (s == BN_OK) s = finish(path, *out);
    if (s != BN_OK) {
        bn_particles_free(*out);
        *out = NULL;
        return s;
    }
    if (meta) {
        *meta = bn_snapshot_meta_default();
        meta->time = g.time;
        meta->redshift = g.redshift;
        meta->box_size = g.box;
    }
    return BN_OK;
}
