/* Read GADGET-2/3/4, SWIFT, AREPO-style HDF5 snapshots: every PartTypeN
 * group present (concatenated in type order), float32 or float64 data,
 * 8- to 64-bit signed or unsigned ids, masses per particle or from
 * Header/MassTable. Every failure names the file and the dataset. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/files.h"
#include "io/snapshot_h5.h"
#include "io/snapshot_params.h"

/* What /Header tells about the particles. */
typedef struct {
    double mass_table[BN_H5_MAX_TYPES];
    double count[BN_H5_MAX_TYPES]; /* NumPart_ThisFile, when present */
    size_t n_count;                /* how many entries count has      */
    double total[BN_H5_MAX_TYPES]; /* NumPart_Total (+ HighWord << 32) */
    size_t n_total;
} header_info;

/* One PartTypeN group with particles. */
typedef struct {
    int type;
    hid_t group;
    size_t n;
    char where[32]; /* "/PartType1" */
} part_group;

typedef struct {
    part_group g[BN_H5_MAX_TYPES];
    int n_groups;
    size_t total;
    int all_acc, all_pot; /* every group has Acceleration / Potential */
} part_groups;

static bn_status check_readable(const char *path)
{
    BN_TRY(bn_check_regular_file(path, path, NULL));
    FILE *fp = fopen(path, "rb");
    if (!fp) return bn_fail(BN_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    fclose(fp);
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return bn_fail(BN_ERR_FORMAT, "%s is not an HDF5 file", path);
    }
    return BN_OK;
}

/* An optional attribute that may be a scalar or a vector (SWIFT writes
 * BoxSize as 3 values): take the first value. */
static bn_status header_first(hid_t h, const char *name, double *out)
{
    double v[3];
    size_t n = 0;
    int present;
    BN_TRY(bn_h5_attr_present(h, "/Header", name, &present));
    if (!present) return BN_OK;
    BN_TRY(bn_h5_attr_read_doubles(h, "/Header", name, v, 3, &n));
    *out = v[0];
    return BN_OK;
}

/* A per-type particle count array (NumPart_ThisFile, NumPart_Total):
 * whole numbers >= 0. */
static bn_status header_counts(hid_t h, const char *name, double *out, size_t *n)
{
    *n = 0;
    int present;
    BN_TRY(bn_h5_attr_present(h, "/Header", name, &present));
    if (!present) return BN_OK;
    BN_TRY(bn_h5_attr_read_doubles(h, "/Header", name, out, BN_H5_MAX_TYPES, n));
    if (*n > BN_H5_MAX_TYPES) *n = BN_H5_MAX_TYPES;
    for (size_t t = 0; t < *n; t++)
        if (!(out[t] >= 0 && out[t] == floor(out[t]) && out[t] < 1.8446744073709552e19))
            return bn_fail(BN_ERR_FORMAT, "/Header: %s[%zu] = %g (must be a whole number >= 0)", name, t, out[t]);
    return BN_OK;
}

/* NumPart_Total with GADGET's NumPart_Total_HighWord (the upper 32 bits). */
static bn_status header_totals(hid_t h, header_info *hi)
{
    double high[BN_H5_MAX_TYPES] = {0};
    size_t nh = 0;
    BN_TRY(header_counts(h, "NumPart_Total", hi->total, &hi->n_total));
    BN_TRY(header_counts(h, "NumPart_Total_HighWord", high, &nh));
    for (size_t t = 0; t < hi->n_total && t < nh; t++) hi->total[t] += high[t] * 4294967296.0;
    return BN_OK;
}

/* Time, Redshift, BoxSize: finite (a NaN time would only fail later,
 * far from the file that holds it). */
static bn_status header_finite(hid_t h, const char *name, double *out)
{
    BN_TRY(header_first(h, name, out));
    if (!isfinite(*out)) return bn_fail(BN_ERR_FORMAT, "/Header: %s = %g (must be finite)", name, *out);
    return BN_OK;
}

static bn_status read_header_attrs(hid_t h, header_info *hi, bn_snapshot_meta *meta)
{
    size_t n = 0;
    double nfiles = 1;
    BN_TRY(header_first(h, "NumFilesPerSnapshot", &nfiles));
    if (!(nfiles >= 1) || nfiles != floor(nfiles))
        return bn_fail(BN_ERR_FORMAT, "/Header: NumFilesPerSnapshot = %g (must be a whole number >= 1)", nfiles);
    if (nfiles > 1)
        return bn_fail(BN_ERR_UNSUPPORTED,
                       "/Header: NumFilesPerSnapshot = %g: this is one part of a split snapshot; "
                       "only single-file snapshots are read",
                       nfiles);
    int has_table;
    BN_TRY(bn_h5_attr_present(h, "/Header", "MassTable", &has_table));
    if (has_table)
        BN_TRY(bn_h5_attr_read_doubles(h, "/Header", "MassTable", hi->mass_table, BN_H5_MAX_TYPES, &n));
    for (size_t t = 0; t < BN_H5_MAX_TYPES && t < n; t++)
        if (!(hi->mass_table[t] >= 0 && hi->mass_table[t] < 1e300))
            return bn_fail(BN_ERR_FORMAT, "/Header: MassTable[%zu] = %g (must be finite and >= 0)", t,
                           hi->mass_table[t]);
    BN_TRY(header_counts(h, "NumPart_ThisFile", hi->count, &hi->n_count));
    BN_TRY(header_totals(h, hi));
    BN_TRY(header_finite(h, "Time", &meta->time));
    BN_TRY(header_finite(h, "Redshift", &meta->redshift));
    BN_TRY(header_finite(h, "BoxSize", &meta->box_size));
    if (meta->box_size < 0) return bn_fail(BN_ERR_FORMAT, "/Header: BoxSize = %g (must be >= 0)", meta->box_size);
    return BN_OK;
}

static bn_status read_header(hid_t f, header_info *hi, bn_snapshot_meta *meta)
{
    memset(hi, 0, sizeof *hi);
    int present;
    BN_TRY(bn_h5_link_present(f, "", "Header", &present));
    if (!present)
        return bn_fail(BN_ERR_FORMAT, "missing group /Header (not a GADGET- or SWIFT-style snapshot)");
    BN_TRY(bn_h5_check_local(f, "", "Header"));
    hid_t h = H5Gopen2(f, "Header", H5P_DEFAULT);
    if (h < 0) return bn_h5_fail(BN_ERR_FORMAT, "cannot open group /Header");
    bn_status s = read_header_attrs(h, hi, meta);
    H5Gclose(h);
    return s;
}

/* Open dataset `name` of g, check its shape and that it has g->n rows. */
static bn_status open_matching(const part_group *g, const char *name, int ncol, hid_t *d)
{
    size_t rows = 0;
    BN_TRY(bn_h5_open_dataset(g->group, g->where, name, ncol, d, &rows));
    if (rows != g->n) {
        H5Dclose(*d);
        *d = -1;
        return bn_fail(BN_ERR_FORMAT, "length mismatch: %s/%s has %zu rows but %s/Coordinates has %zu", g->where,
                       name, rows, g->where, g->n);
    }
    return BN_OK;
}

/* A /Header count of type t (-1: not given) against the rows found. */
static bn_status check_header_count(const char *name, int t, double header_n, const char *where, size_t rows)
{
    if (header_n < 0 || header_n == (double)rows) return BN_OK;
    return bn_fail(BN_ERR_FORMAT, "length mismatch: /Header %s[%d] = %.0f but %s/Coordinates has %zu rows", name, t,
                   header_n, where, rows);
}

static double header_entry(const double *v, size_t n, int t) { return (size_t)t < n ? v[t] : -1; }

/* Rows of g's Coordinates, checked against /Header NumPart_ThisFile and
 * NumPart_Total (one file holds the whole snapshot). */
static bn_status count_rows(part_group *g, const header_info *hi)
{
    hid_t d;
    BN_TRY(bn_h5_open_dataset(g->group, g->where, "Coordinates", 3, &d, &g->n));
    H5Dclose(d);
    BN_TRY(check_header_count("NumPart_ThisFile", g->type, header_entry(hi->count, hi->n_count, g->type), g->where,
                              g->n));
    return check_header_count("NumPart_Total", g->type, header_entry(hi->total, hi->n_total, g->type), g->where, g->n);
}

/* Register group PartType<t> if it holds particles (some codes write
 * empty groups, with or without empty datasets). */
static bn_status add_group(hid_t f, int t, const header_info *hi, part_groups *pg)
{
    part_group *g = &pg->g[pg->n_groups];
    g->type = t;
    g->n = 0;
    snprintf(g->where, sizeof g->where, "/PartType%d", t);
    double header_n = header_entry(hi->count, hi->n_count, t);
    BN_TRY(bn_h5_check_local(f, "", g->where + 1));
    g->group = H5Gopen2(f, g->where + 1, H5P_DEFAULT);
    if (g->group < 0) return bn_h5_fail(BN_ERR_FORMAT, "cannot open group %s", g->where);
    int has_coords = 0, has_acc = 0, has_pot = 0;
    bn_status s = bn_h5_link_present(g->group, g->where, "Coordinates", &has_coords);
    if (s == BN_OK) s = bn_h5_link_present(g->group, g->where, "Acceleration", &has_acc);
    if (s == BN_OK) s = bn_h5_link_present(g->group, g->where, "Potential", &has_pot);
    const int empty = header_n == 0 && !has_coords;
    if (s == BN_OK && !empty) s = count_rows(g, hi);
    if (s != BN_OK || g->n == 0) {
        H5Gclose(g->group);
        return s;
    }
    if (__builtin_add_overflow(pg->total, g->n, &pg->total)) {
        H5Gclose(g->group);
        return bn_fail(BN_ERR_FORMAT, "%s: the particle count overflows", g->where);
    }
    pg->n_groups++;
    pg->all_acc &= has_acc;
    pg->all_pot &= has_pot;
    return BN_OK;
}

static bn_status find_groups(hid_t f, const header_info *hi, part_groups *pg)
{
    memset(pg, 0, sizeof *pg);
    pg->all_acc = pg->all_pot = 1;
    for (int t = 0; t < BN_H5_MAX_TYPES; t++) {
        char name[32];
        snprintf(name, sizeof name, "PartType%d", t);
        int present;
        BN_TRY(bn_h5_link_present(f, "", name, &present));
        if (present) BN_TRY(add_group(f, t, hi, pg));
        else if (header_entry(hi->count, hi->n_count, t) > 0 || header_entry(hi->total, hi->n_total, t) > 0)
            return bn_fail(BN_ERR_FORMAT, "length mismatch: /Header counts %.0f particles of type %d but there is no "
                           "group /%s", fmax(header_entry(hi->count, hi->n_count, t),
                                              header_entry(hi->total, hi->n_total, t)), t, name);
    }
    if (pg->total == 0) return bn_fail(BN_ERR_FORMAT, "no particles: no PartTypeN group with Coordinates");
    return BN_OK;
}

static void close_groups(part_groups *pg)
{
    for (int i = 0; i < pg->n_groups; i++)
        if (pg->g[i].group >= 0) H5Gclose(pg->g[i].group);
}

/* Read dataset `name` (n x ncol) of g into cols, offset by `off`. */
static bn_status read_doubles(const part_group *g, const char *name, int ncol, double *const *arrays, size_t off)
{
    double *cols[3];
    for (int k = 0; k < ncol; k++) cols[k] = arrays[k] + off;
    char path[96];
    snprintf(path, sizeof path, "%s/%s", g->where, name);
    hid_t d;
    BN_TRY(open_matching(g, name, ncol, &d));
    bn_status s = bn_h5_read_columns(d, path, g->n, ncol, cols);
    H5Dclose(d);
    return s;
}

static bn_status read_ids(const part_group *g, uint64_t *ids)
{
    char path[96];
    snprintf(path, sizeof path, "%s/ParticleIDs", g->where);
    hid_t d;
    BN_TRY(open_matching(g, "ParticleIDs", 1, &d));
    bn_status s = bn_h5_read_ids(d, path, g->n, ids);
    H5Dclose(d);
    return s;
}

/* Masses: the dataset when present, else Header/MassTable[type]. */
static bn_status read_masses(const part_group *g, const header_info *hi, double *mass)
{
    int present;
    BN_TRY(bn_h5_link_present(g->group, g->where, "Masses", &present));
    if (!present) {
        double m = g->type < BN_H5_MAX_TYPES ? hi->mass_table[g->type] : 0;
        if (!(m > 0))
            return bn_fail(BN_ERR_FORMAT, "missing dataset %s/Masses and /Header MassTable[%d] is %g", g->where,
                           g->type, m);
        for (size_t i = 0; i < g->n; i++) mass[i] = m;
        return BN_OK;
    }
    double *cols[1] = {mass};
    BN_TRY(read_doubles(g, "Masses", 1, cols, 0));
    for (size_t i = 0; i < g->n; i++)
        if (mass[i] < 0)
            return bn_fail(BN_ERR_FORMAT, "dataset %s/Masses: particle %zu has a negative mass (%g)", g->where, i,
                           mass[i]);
    return BN_OK;
}

static bn_status read_group(const part_group *g, const header_info *hi, const part_groups *pg, bn_particles *p,
                            size_t off)
{
    BN_TRY(read_doubles(g, "Coordinates", 3, p->pos, off));
    BN_TRY(read_doubles(g, "Velocities", 3, p->vel, off));
    BN_TRY(read_ids(g, p->id + off));
    BN_TRY(read_masses(g, hi, p->mass + off));
    if (pg->all_acc) BN_TRY(read_doubles(g, "Acceleration", 3, p->acc, off));
    if (pg->all_acc && pg->all_pot) BN_TRY(read_doubles(g, "Potential", 1, &p->pot, off));
    return BN_OK;
}

static bn_status read_particles(const header_info *hi, const part_groups *pg, bn_particles **out)
{
    BN_TRY(bn_particles_create(out, pg->total));
    bn_particles *p = *out;
    if (pg->all_acc) BN_TRY(bn_particles_ensure_forces(p));
    size_t off = 0;
    for (int i = 0; i < pg->n_groups; i++) {
        BN_TRY(read_group(&pg->g[i], hi, pg, p, off));
        off += pg->g[i].n;
    }
    double m = bn_particles_total_mass(p);
    if (!(m > 0) || !isfinite(m)) return bn_fail(BN_ERR_FORMAT, "total mass is %g (must be finite and > 0)", m);
    return bn_particles_check_ids(p, "ParticleIDs");
}

static bn_status read_file(hid_t f, bn_particles **out, bn_snapshot_meta *meta)
{
    header_info hi;
    part_groups pg;
    BN_TRY(read_header(f, &hi, meta));
    bn_status s = find_groups(f, &hi, &pg);
    if (s == BN_OK) s = read_particles(&hi, &pg, out);
    if (s == BN_OK) s = bn_snapshot_read_parameters(f, meta);
    meta->has_acceleration = pg.all_acc;
    meta->has_potential = pg.all_acc && pg.all_pot;
    close_groups(&pg);
    return s;
}

bn_status bn_snapshot_read(const char *path, bn_particles **out, bn_snapshot_meta *meta)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_read: out is NULL");
    *out = NULL;
    if (!path) return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_read: path is NULL");
    bn_h5_quiet();
    BN_TRY(check_readable(path));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot open %s", path);
    bn_snapshot_meta m = bn_snapshot_meta_default();
    bn_particles *p = NULL;
    bn_status s = read_file(f, &p, &m);
    H5Fclose(f);
    if (s != BN_OK) {
        bn_particles_free(p);
        return bn_fail_context(s, "%s", path);
    }
    *out = p;
    if (meta) *meta = m;
    return BN_OK;
}
