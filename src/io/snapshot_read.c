/* Read GADGET-2/3/4, SWIFT, AREPO-style HDF5 snapshots: every PartTypeN
 * group present (concatenated in type order), float32 or float64 data,
 * 8- to 64-bit signed or unsigned ids, masses per particle or from
 * Header/MassTable. Every failure names the file and the dataset. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/files.h"
#include "io/snapshot_foreign.h"
#include "io/snapshot_h5.h"
#include "io/snapshot_params.h"

/* What /Header tells about the particles. */
typedef struct {
    double mass_table[BN_H5_MAX_TYPES];
    double count[BN_H5_MAX_TYPES]; /* NumPart_ThisFile, when present */
    size_t n_count;                /* how many entries count has      */
    double total[BN_H5_MAX_TYPES]; /* NumPart_Total (+ HighWord << 32) */
    size_t n_total;
    int n_files;                   /* NumFilesPerSnapshot              */
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
        return bn_fail(BN_ERR_FORMAT, "%s is not an HDF5 file (nor a GADGET-2 or tipsy one)", path);
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
    if (nfiles > BN_SNAPSHOT_MAX_FILES)
        return bn_fail(BN_ERR_FORMAT, "/Header: NumFilesPerSnapshot = %g (at most %d)", nfiles, BN_SNAPSHOT_MAX_FILES);
    hi->n_files = (int)nfiles;
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

/* Rows of g's Coordinates, checked against /Header NumPart_ThisFile and,
 * when one file holds the whole snapshot, NumPart_Total. */
static bn_status count_rows(part_group *g, const header_info *hi)
{
    hid_t d;
    BN_TRY(bn_h5_open_dataset(g->group, g->where, "Coordinates", 3, &d, &g->n));
    H5Dclose(d);
    BN_TRY(check_header_count("NumPart_ThisFile", g->type, header_entry(hi->count, hi->n_count, g->type), g->where,
                              g->n));
    if (hi->n_files > 1) return BN_OK; /* the set's sum is checked */
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
        else if (header_entry(hi->count, hi->n_count, t) > 0 ||
                 (hi->n_files == 1 && header_entry(hi->total, hi->n_total, t) > 0))
            return bn_fail(BN_ERR_FORMAT, "length mismatch: /Header counts %.0f particles of type %d but there is no "
                           "group /%s", fmax(header_entry(hi->count, hi->n_count, t),
                                              header_entry(hi->total, hi->n_total, t)), t, name);
    }
    /* a file of a split snapshot may hold none (a rank without particles) */
    if (pg->total == 0 && hi->n_files == 1)
        return bn_fail(BN_ERR_FORMAT, "no particles: no PartTypeN group with Coordinates");
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
    /* types recorded unless every particle is PartType1 (NULL then) */
    for (int i = 0; i < pg->n_groups; i++)
        if (pg->g[i].type != 1) BN_TRY(bn_particles_ensure_types(p));
    size_t off = 0;
    for (int i = 0; i < pg->n_groups; i++) {
        BN_TRY(read_group(&pg->g[i], hi, pg, p, off));
        if (p->type) memset(p->type + off, pg->g[i].type, pg->g[i].n);
        off += pg->g[i].n;
    }
    double m = bn_particles_total_mass(p);
    if (p->n > 0 && (!(m > 0) || !isfinite(m)))
        return bn_fail(BN_ERR_FORMAT, "total mass is %g (must be finite and > 0)", m);
    return bn_particles_check_ids(p, "ParticleIDs");
}

static bn_status read_file(hid_t f, header_info *hi_out, bn_particles **out, bn_snapshot_meta *meta)
{
    header_info hi;
    part_groups pg;
    BN_TRY(read_header(f, &hi, meta));
    *hi_out = hi;
    bn_status s = find_groups(f, &hi, &pg);
    if (s == BN_OK) s = read_particles(&hi, &pg, out);
    if (s == BN_OK) s = bn_snapshot_read_parameters(f, meta);
    meta->has_acceleration = pg.all_acc;
    meta->has_potential = pg.all_acc && pg.all_pot;
    close_groups(&pg);
    return s;
}

/* One file: its particles, header and meta; failures name the file. */
static bn_status read_one(const char *path, bn_particles **out, header_info *hi, bn_snapshot_meta *meta)
{
    *out = NULL;
    BN_TRY(check_readable(path));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot open %s", path);
    *meta = bn_snapshot_meta_default();
    bn_status s = read_file(f, hi, out, meta);
    H5Fclose(f);
    if (s == BN_OK) return BN_OK;
    bn_particles_free(*out);
    *out = NULL;
    return bn_fail_context(s, "%s", path);
}

static double header_sum(const double *v, size_t n)
{
    double t = 0;
    for (size_t i = 0; i < n; i++) t += v[i];
    return t;
}

/* Every file of a split snapshot agrees with the first on the set: the
 * number of files and the total counts. */
static bn_status same_set(const char *path, const header_info *first, const header_info *hi)
{
    if (hi->n_files != first->n_files)
        return bn_fail(BN_ERR_FORMAT, "%s: NumFilesPerSnapshot = %d, but %d in the set's first file", path,
                       hi->n_files, first->n_files);
    const double a = header_sum(first->total, first->n_total), b = header_sum(hi->total, hi->n_total);
    if (a != b)
        return bn_fail(BN_ERR_FORMAT, "%s: NumPart_Total adds up to %.0f, but %.0f in the set's first file", path, b,
                       a);
    return BN_OK;
}

bn_status bn_snapshot_append(bn_particles **all, const bn_particles *p)
{
    if (!*all) {
        BN_TRY(bn_particles_create(all, 0));
        if (p->acc[0]) BN_TRY(bn_particles_ensure_forces(*all));
    }
    if (p->n == 0) return BN_OK; /* an empty file of the set (its arrays may be NULL) */
    bn_particles *a = *all;
    const size_t at = a->n;
    if (p->type) BN_TRY(bn_particles_ensure_types(a)); /* the files before: PartType1 */
    BN_TRY(bn_particles_resize(a, at + p->n)); /* with types: the new rows PartType1 */
    if (p->type) memcpy(a->type + at, p->type, p->n);
    const int forces = a->acc[0] && p->acc[0] && p->pot;
    for (int k = 0; k < 3; k++) {
        memcpy(a->pos[k] + at, p->pos[k], p->n * sizeof(double));
        memcpy(a->vel[k] + at, p->vel[k], p->n * sizeof(double));
        if (forces) memcpy(a->acc[k] + at, p->acc[k], p->n * sizeof(double));
    }
    memcpy(a->mass + at, p->mass, p->n * sizeof(double));
    memcpy(a->id + at, p->id, p->n * sizeof(uint64_t));
    if (forces) memcpy(a->pot + at, p->pot, p->n * sizeof(double));
    return BN_OK;
}

/* Files [first, end) of the split snapshot that `path` is one of, in
 * order, appended into *out; hi0 is any file's header (the set's). */
static bn_status read_files(const char *path, const header_info *hi0, int first, int end, bn_particles **out,
                            bn_snapshot_meta *meta)
{
    char part[4096];
    int forces = end > first; /* no file read: no forces */
    bn_status s = BN_OK;
    for (int k = first; s == BN_OK && k < end; k++) {
        s = bn_snapshot_part_path(path, k, part, sizeof part);
        bn_particles *p = NULL;
        header_info hi;
        bn_snapshot_meta m;
        if (s == BN_OK) s = read_one(part, &p, &hi, &m);
        if (s != BN_OK)
            s = bn_fail_context(s, "%s has NumFilesPerSnapshot = %d (a split snapshot): its file %d", path,
                                hi0->n_files, k);
        if (s == BN_OK) s = same_set(part, hi0, &hi);
        if (s == BN_OK && k == first && meta) *meta = m;
        if (s == BN_OK) forces &= m.has_acceleration && m.has_potential;
        if (s == BN_OK) s = bn_snapshot_append(out, p);
        bn_particles_free(p);
    }
    if (s == BN_OK && meta) meta->has_acceleration = meta->has_potential = forces;
    return s;
}

bn_status bn_snapshot_part_path(const char *path, int k, char *out, size_t cap)
{
    if (!path || !out || k < 0) return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_part_path: bad argument");
    size_t n = strlen(path);
    const char *ext = n >= 5 && !strcmp(path + n - 5, ".hdf5") ? ".hdf5" : "";
    n -= strlen(ext);
    /* "<stem>.<j>.hdf5": the stem without its ".<j>" */
    size_t d = n;
    while (d > 0 && path[d - 1] >= '0' && path[d - 1] <= '9') d--;
    if (*ext && d < n && d > 0 && path[d - 1] == '.') n = d - 1;
    const int w = snprintf(out, cap, "%.*s.%d.hdf5", (int)n, path, k);
    if (w < 0 || (size_t)w >= cap) return bn_fail(BN_ERR_ARGUMENT, "%s: the name of file %d is too long", path, k);
    return BN_OK;
}

/* A split snapshot read whole: the counts add up and the ids are unique
 * over the set. */
static bn_status read_split(const char *path, const header_info *hi, bn_particles **out, bn_snapshot_meta *meta)
{
    BN_TRY(read_files(path, hi, 0, hi->n_files, out, meta));
    const double total = header_sum(hi->total, hi->n_total);
    if ((double)(*out)->n != total)
        return bn_fail(BN_ERR_FORMAT, "%s: the %d files hold %zu particles, but NumPart_Total says %.0f", path,
                       hi->n_files, (*out)->n, total);
    BN_TRY(bn_particles_validate(*out, path));
    return bn_particles_check_ids(*out, path);
}

/* The header of the file at path (the set's, for a split snapshot). */
static bn_status peek_header(const char *path, header_info *hi, bn_snapshot_meta *meta)
{
    BN_TRY(check_readable(path));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot open %s", path);
    bn_snapshot_meta m = bn_snapshot_meta_default();
    bn_status s = read_header(f, hi, &m);
    if (s == BN_OK && meta) s = bn_snapshot_read_parameters(f, &m);
    H5Fclose(f);
    if (meta) {
        m.has_acceleration = m.has_potential = 0; /* no particles read */
        *meta = m;
    }
    return s == BN_OK ? BN_OK : bn_fail_context(s, "%s", path);
}

/* A GADGET-2 or tipsy file read whole (*foreign 1), or nothing done for
 * an HDF5 one (*foreign 0). A GADGET-2 set may be named by its stem. */
static bn_status read_foreign(const char *path, bn_particles **out, bn_snapshot_meta *meta, int *foreign)
{
    char first[4096];
    bn_snapshot_format f;
    *foreign = 0;
    if (access(path, F_OK) != 0 && snprintf(first, sizeof first, "%s.0", path) < (int)sizeof first &&
        access(first, F_OK) == 0)
        path = first;
    BN_TRY(bn_snapshot_detect(path, &f, NULL));
    if (f == BN_FORMAT_HDF5) return BN_OK;
    *foreign = 1;
    bn_snapshot_meta m;
    BN_TRY(f == BN_FORMAT_TIPSY || f == BN_FORMAT_TIPSY_NATIVE ? bn_tipsy_read(path, out, &m)
                                                                : bn_gadget2_read(path, out, &m));
    if (meta) *meta = m;
    return BN_OK;
}

bn_status bn_snapshot_read(const char *path, bn_particles **out, bn_snapshot_meta *meta)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_read: out is NULL");
    *out = NULL;
    if (!path) return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_read: path is NULL");
    int foreign;
    BN_TRY(read_foreign(path, out, meta, &foreign));
    if (foreign) return BN_OK;
    bn_h5_quiet();
    header_info hi;
    BN_TRY(peek_header(path, &hi, NULL));
    bn_snapshot_meta m;
    bn_particles *p = NULL;
    const bn_status s = hi.n_files > 1 ? read_split(path, &hi, &p, &m) : read_one(path, &p, &hi, &m);
    if (s != BN_OK) {
        bn_particles_free(p);
        return s;
    }
    *out = p;
    if (meta) *meta = m;
    return BN_OK;
}

/* The meta (header and parameters) of file 0 of the split snapshot that
 * path is one of, without its particles and without forces. */
static bn_status set_meta(const char *path, bn_snapshot_meta *meta)
{
    char part[4096];
    header_info hi;
    BN_TRY(bn_snapshot_part_path(path, 0, part, sizeof part));
    return peek_header(part, &hi, meta);
}

/* Rows [a, e) of p kept, the others dropped. */
static bn_status keep_rows(bn_particles *p, size_t a, size_t e)
{
    if (e == a) return bn_particles_resize(p, 0);
    const int forces = p->acc[0] && p->pot;
    for (int k = 0; k < 3; k++) {
        memmove(p->pos[k], p->pos[k] + a, (e - a) * sizeof(double));
        memmove(p->vel[k], p->vel[k] + a, (e - a) * sizeof(double));
        if (forces) memmove(p->acc[k], p->acc[k] + a, (e - a) * sizeof(double));
    }
    memmove(p->mass, p->mass + a, (e - a) * sizeof(double));
    memmove(p->id, p->id + a, (e - a) * sizeof(uint64_t));
    if (p->type) memmove(p->type, p->type + a, e - a);
    if (forces) memmove(p->pot, p->pot + a, (e - a) * sizeof(double));
    return bn_particles_resize(p, e - a);
}

bn_status bn_snapshot_read_share(const char *path, int rank, int ranks, bn_particles **out, bn_snapshot_meta *meta,
                                 uint64_t *n_total)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_read_share: out is NULL");
    *out = NULL;
    if (!path || ranks < 1 || rank < 0 || rank >= ranks)
        return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_read_share: rank %d of %d", rank, ranks);
    int foreign;
    BN_TRY(read_foreign(path, out, meta, &foreign));
    if (foreign) { /* read whole: this rank keeps its rows */
        const size_t n = (*out)->n;
        if (n_total) *n_total = n;
        const bn_status s = keep_rows(*out, n * (size_t)rank / (size_t)ranks, n * (size_t)(rank + 1) / (size_t)ranks);
        if (s != BN_OK) {
            bn_particles_free(*out);
            *out = NULL;
        }
        return s;
    }
    bn_h5_quiet();
    header_info hi;
    BN_TRY(peek_header(path, &hi, NULL));
    bn_snapshot_meta m = bn_snapshot_meta_default();
    bn_particles *p = NULL;
    bn_status s;
    uint64_t total = (uint64_t)header_sum(hi.total, hi.n_total);
    if (hi.n_files > 1) { /* whole files: [F r / P, F (r + 1) / P) */
        const int64_t F = hi.n_files;
        const int first = (int)(F * rank / ranks), end = (int)(F * (rank + 1) / ranks);
        s = read_files(path, &hi, first, end, &p, &m);
        /* a reader without a file takes the set's time and parameters from
         * its first file, as the others do from theirs */
        if (s == BN_OK && first == end) s = set_meta(path, &m);
        if (s == BN_OK && !p) s = bn_particles_create(&p, 0);
    } else { /* one file: every reader reads it and keeps its rows */
        s = read_one(path, &p, &hi, &m);
        const size_t n = p ? p->n : 0;
        total = n;
        if (s == BN_OK) s = keep_rows(p, n * (size_t)rank / (size_t)ranks, n * (size_t)(rank + 1) / (size_t)ranks);
    }
    if (s != BN_OK) {
        bn_particles_free(p);
        return s;
    }
    *out = p;
    if (meta) *meta = m;
    if (n_total) *n_total = total;
    return BN_OK;
}
