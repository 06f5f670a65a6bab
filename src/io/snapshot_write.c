/* Write a snapshot in the GADGET-4 HDF5 layout: one /PartTypeN group per
 * part type present (every particle PartType1 when the set has no types),
 * the rows of each group in the set's order.
 *
 * The header carries both GADGET-4's fields (64-bit NumPart_*) and the
 * GADGET-2/3 ones that older readers and pynbody look for (HighWord,
 * Flag_*, cosmology); Header/Code is "banyan", never "SWIFT", so yt opens
 * the file as GADGET HDF5. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "io/atomic_file.h"
#include "io/snapshot_h5.h"
#include "io/snapshot_params.h"

#define GADGET_TYPES BN_PART_TYPES

bn_snapshot_meta bn_snapshot_meta_default(void)
{
    bn_snapshot_meta m;
    memset(&m, 0, sizeof m);
    m.units = bn_units_nbody();
    m.gravity = bn_gravity_params_default();
    return m;
}

/* Where a file stands in its snapshot: file `index` of `n_files`, which
 * hold n_total particles together (1 file: n_total is this file's). */
typedef struct {
    int index, n_files;
    uint64_t n_total[GADGET_TYPES]; /* per part type */
} file_place;

static void count_types(const bn_particles *p, uint64_t counts[GADGET_TYPES])
{
    for (int t = 0; t < GADGET_TYPES; t++) counts[t] = 0;
    if (!p->type) counts[1] = p->n;
    else
        for (size_t i = 0; i < p->n; i++)
            if (p->type[i] < GADGET_TYPES) counts[p->type[i]]++; /* others: refused by the validation */
}

static bn_status write_counts(hid_t h, const uint64_t this_file[GADGET_TYPES], const uint64_t n_total[GADGET_TYPES])
{
    uint64_t total_low[GADGET_TYPES] = {0};
    uint32_t high[GADGET_TYPES] = {0};
    /* GADGET-2 convention: NumPart_Total holds the low 32 bits and
     * NumPart_Total_HighWord the high ones (readers add them up). */
    for (int t = 0; t < GADGET_TYPES; t++) {
        total_low[t] = n_total[t] & 0xffffffffu;
        high[t] = (uint32_t)(n_total[t] >> 32);
    }
    BN_TRY(bn_h5_attr_write(h, "NumPart_ThisFile", H5T_NATIVE_UINT64, H5T_STD_U64LE, GADGET_TYPES, this_file));
    BN_TRY(bn_h5_attr_write(h, "NumPart_Total", H5T_NATIVE_UINT64, H5T_STD_U64LE, GADGET_TYPES, total_low));
    return bn_h5_attr_write(h, "NumPart_Total_HighWord", H5T_NATIVE_UINT32, H5T_STD_U32LE, GADGET_TYPES, high);
}

/* counts: this file's per type; totals: the snapshot's (one file: the same) */
static bn_status write_header_attrs(hid_t h, const uint64_t counts[GADGET_TYPES], const uint64_t totals[GADGET_TYPES],
                                    const file_place *at, const bn_snapshot_meta *meta)
{
    double mass_table[GADGET_TYPES] = {0}; /* 0: masses are per particle */
    BN_TRY(write_counts(h, counts, totals));
    BN_TRY(bn_h5_attr_write(h, "MassTable", H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, GADGET_TYPES, mass_table));
    BN_TRY(bn_h5_attr_write_double(h, "Time", meta->time));
    BN_TRY(bn_h5_attr_write_double(h, "Redshift", meta->redshift));
    BN_TRY(bn_h5_attr_write_double(h, "BoxSize", meta->box_size));
    BN_TRY(bn_h5_attr_write_int(h, "NumFilesPerSnapshot", at->n_files));
    BN_TRY(bn_h5_attr_write_double(h, "Omega0", 0.0));
    BN_TRY(bn_h5_attr_write_double(h, "OmegaLambda", 0.0));
    BN_TRY(bn_h5_attr_write_double(h, "HubbleParam", 1.0));
    static const char *flags[] = {"Flag_Sfr", "Flag_Cooling", "Flag_StellarAge", "Flag_Metals", "Flag_Feedback"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) BN_TRY(bn_h5_attr_write_int(h, flags[i], 0));
    BN_TRY(bn_h5_attr_write_int(h, "Flag_DoublePrecision", 1));
    BN_TRY(bn_h5_attr_write_string(h, "Code", "banyan " BN_VERSION_STRING));
    return bn_h5_attr_write_string(h, "Git_commit", BANYAN_GIT_REVISION);
}

static bn_status write_particles(hid_t g, const bn_particles *p)
{
    const double *pos[3] = {p->pos[0], p->pos[1], p->pos[2]};
    const double *vel[3] = {p->vel[0], p->vel[1], p->vel[2]};
    const double *mass[1] = {p->mass};
    BN_TRY(bn_h5_write_columns(g, "Coordinates", p->n, 3, pos));
    BN_TRY(bn_h5_write_columns(g, "Velocities", p->n, 3, vel));
    BN_TRY(bn_h5_write_ids(g, "ParticleIDs", p->n, p->id));
    BN_TRY(bn_h5_write_columns(g, "Masses", p->n, 1, mass));
    if (!p->acc[0] || !p->pot) return BN_OK;
    const double *acc[3] = {p->acc[0], p->acc[1], p->acc[2]};
    const double *pot[1] = {p->pot};
    BN_TRY(bn_h5_write_columns(g, "Acceleration", p->n, 3, acc));
    return bn_h5_write_columns(g, "Potential", p->n, 1, pot);
}

/* The n rows of type t of p gathered into *sub, in p's order. */
static bn_status gather_type(const bn_particles *p, int t, size_t n, bn_particles **sub)
{
    BN_TRY(bn_particles_create(sub, n));
    bn_particles *q = *sub;
    const int forces = p->acc[0] && p->pot;
    if (forces) BN_TRY(bn_particles_ensure_forces(q));
    size_t j = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->type[i] != t) continue;
        for (int k = 0; k < 3; k++) {
            q->pos[k][j] = p->pos[k][i];
            q->vel[k][j] = p->vel[k][i];
            if (forces) q->acc[k][j] = p->acc[k][i];
        }
        q->mass[j] = p->mass[i];
        q->id[j] = p->id[i];
        if (forces) q->pot[j] = p->pot[i];
        j++;
    }
    return BN_OK;
}

/* Group /PartType<t> with its n particles (all of p when p has one type). */
static bn_status write_type(hid_t f, const bn_particles *p, int t, size_t n)
{
    char name[16];
    snprintf(name, sizeof name, "PartType%d", t);
    bn_particles *sub = NULL;
    hid_t g = -1;
    bn_status s = n == p->n ? BN_OK : gather_type(p, t, n, &sub);
    if (s == BN_OK) s = bn_h5_group_create(f, name, &g);
    if (s == BN_OK) s = write_particles(g, sub ? sub : p);
    if (g >= 0) H5Gclose(g);
    bn_particles_free(sub);
    return s;
}

static bn_status write_file(const char *tmp, const bn_particles *p, const file_place *at, const bn_snapshot_meta *meta)
{
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot create HDF5 file %s", tmp);
    uint64_t counts[GADGET_TYPES];
    count_types(p, counts);
    hid_t g = -1;
    bn_status s = bn_h5_group_create(f, "Header", &g);
    if (s == BN_OK) s = write_header_attrs(g, counts, at->n_files == 1 ? counts : at->n_total, at, meta);
    if (g >= 0) H5Gclose(g);
    if (s == BN_OK) s = bn_snapshot_write_parameters(f, meta);
    /* an empty file of a split set keeps its (empty) PartType1 group */
    for (int t = 0; s == BN_OK && t < GADGET_TYPES; t++)
        if (counts[t] > 0 || (t == 1 && p->n == 0)) s = write_type(f, p, t, (size_t)counts[t]);
    if (H5Fclose(f) < 0 && s == BN_OK) s = bn_h5_fail(BN_ERR_IO, "cannot close %s", tmp);
    return s;
}

/* Checks, then the file through a temporary name. A part may be empty
 * (a rank that holds no particles); a whole snapshot may not. */
static bn_status write_checked(const char *path, const bn_particles *p, const file_place *at,
                               const bn_snapshot_meta *meta)
{
    if (!path) return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_write: path is NULL");
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "%s: particle set is NULL", path);
    /* never write what bn_snapshot_read would refuse */
    if (at->n_files == 1 || p->n > 0) BN_TRY(bn_particles_validate(p, path));
    BN_TRY(bn_particles_check_forces(p, path));
    BN_TRY(bn_particles_check_ids(p, path));
    if (meta && !isfinite(meta->time))
        return bn_fail(BN_ERR_ARGUMENT, "%s: the time %g is not finite", path, meta->time);
    bn_snapshot_meta def = bn_snapshot_meta_default();
    if (!meta) meta = &def;
    bn_h5_quiet();
    char *tmp = NULL;
    BN_TRY(bn_atomic_begin(path, &tmp));
    bn_status s = write_file(tmp, p, at, meta);
    if (s != BN_OK) {
        bn_atomic_abort(tmp);
        return bn_fail_context(s, "writing %s", path);
    }
    return bn_atomic_commit(tmp, path);
}

bn_status bn_snapshot_write(const char *path, const bn_particles *p, const bn_snapshot_meta *meta)
{
    const file_place one = {0, 1, {0}}; /* totals: the file's counts */
    return write_checked(path, p, &one, meta);
}

bn_status bn_snapshot_write_part_types(const char *path, const bn_particles *p, const bn_snapshot_meta *meta,
                                       int index, int n_files, const uint64_t n_total[BN_PART_TYPES])
{
    const char *name = path ? path : "(null)";
    if (n_files < 1 || n_files > BN_SNAPSHOT_MAX_FILES || index < 0 || index >= n_files)
        return bn_fail(BN_ERR_ARGUMENT, "%s: file %d of %d (files: 1 to %d, index below their number)", name, index,
                       n_files, BN_SNAPSHOT_MAX_FILES);
    if (!n_total) return bn_fail(BN_ERR_ARGUMENT, "%s: the totals per part type are NULL", name);
    file_place at = {index, n_files, {0}};
    uint64_t counts[GADGET_TYPES] = {0};
    if (p) count_types(p, counts);
    for (int t = 0; t < GADGET_TYPES; t++) {
        if (counts[t] > n_total[t])
            return bn_fail(BN_ERR_ARGUMENT, "%s: %llu particles of PartType%d in this file but %llu in the whole "
                           "snapshot", name, (unsigned long long)counts[t], t, (unsigned long long)n_total[t]);
        at.n_total[t] = n_total[t];
    }
    return write_checked(path, p, &at, meta);
}

bn_status bn_snapshot_write_part(const char *path, const bn_particles *p, const bn_snapshot_meta *meta, int index,
                                 int n_files, uint64_t n_total)
{
    uint64_t totals[GADGET_TYPES] = {0, n_total, 0, 0, 0, 0};
    return bn_snapshot_write_part_types(path, p, meta, index, n_files, totals);
}
