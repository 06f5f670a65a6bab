/* Write a snapshot in the GADGET-4 HDF5 layout (all particles PartType1).
 *
 * The header carries both GADGET-4's fields (64-bit NumPart_*) and the
 * GADGET-2/3 ones that older readers and pynbody look for (HighWord,
 * Flag_*, cosmology); Header/Code is "banyan", never "SWIFT", so yt opens
 * the file as GADGET HDF5. */
#include <math.h>
#include <string.h>
#include "io/atomic_file.h"
#include "io/snapshot_h5.h"
#include "io/snapshot_params.h"

#define GADGET_TYPES 6
#define OUR_TYPE 1 /* GADGET's halo/dark-matter type: collisionless */

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
    uint64_t n_total;
} file_place;

static bn_status write_counts(hid_t h, size_t n, uint64_t n_total)
{
    uint64_t this_file[GADGET_TYPES] = {0}, total_low[GADGET_TYPES] = {0};
    uint32_t high[GADGET_TYPES] = {0};
    this_file[OUR_TYPE] = (uint64_t)n;
    /* GADGET-2 convention: NumPart_Total holds the low 32 bits and
     * NumPart_Total_HighWord the high ones (readers add them up). */
    total_low[OUR_TYPE] = n_total & 0xffffffffu;
    high[OUR_TYPE] = (uint32_t)(n_total >> 32);
    BN_TRY(bn_h5_attr_write(h, "NumPart_ThisFile", H5T_NATIVE_UINT64, H5T_STD_U64LE, GADGET_TYPES, this_file));
    BN_TRY(bn_h5_attr_write(h, "NumPart_Total", H5T_NATIVE_UINT64, H5T_STD_U64LE, GADGET_TYPES, total_low));
    return bn_h5_attr_write(h, "NumPart_Total_HighWord", H5T_NATIVE_UINT32, H5T_STD_U32LE, GADGET_TYPES, high);
}

static bn_status write_header_attrs(hid_t h, size_t n, const file_place *at, const bn_snapshot_meta *meta)
{
    double mass_table[GADGET_TYPES] = {0}; /* 0: masses are per particle */
    BN_TRY(write_counts(h, n, at->n_total));
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

static bn_status write_file(const char *tmp, const bn_particles *p, const file_place *at, const bn_snapshot_meta *meta)
{
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return bn_h5_fail(BN_ERR_IO, "cannot create HDF5 file %s", tmp);
    hid_t g = -1;
    bn_status s = bn_h5_group_create(f, "Header", &g);
    if (s == BN_OK) s = write_header_attrs(g, p->n, at, meta);
    if (g >= 0) H5Gclose(g);
    if (s == BN_OK) s = bn_snapshot_write_parameters(f, meta);
    g = -1;
    if (s == BN_OK) s = bn_h5_group_create(f, "PartType1", &g);
    if (s == BN_OK) s = write_particles(g, p);
    if (g >= 0) H5Gclose(g);
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
    const file_place one = {0, 1, p ? (uint64_t)p->n : 0};
    return write_checked(path, p, &one, meta);
}

bn_status bn_snapshot_write_part(const char *path, const bn_particles *p, const bn_snapshot_meta *meta, int index,
                                 int n_files, uint64_t n_total)
{
    if (n_files < 1 || n_files > BN_SNAPSHOT_MAX_FILES || index < 0 || index >= n_files)
        return bn_fail(BN_ERR_ARGUMENT, "%s: file %d of %d (files: 1 to %d, index below their number)",
                       path ? path : "(null)", index, n_files, BN_SNAPSHOT_MAX_FILES);
    if (p && (uint64_t)p->n > n_total)
        return bn_fail(BN_ERR_ARGUMENT, "%s: %zu particles in this file but %llu in the whole snapshot",
                       path ? path : "(null)", p->n, (unsigned long long)n_total);
    const file_place at = {index, n_files, n_total};
    return write_checked(path, p, &at, meta);
}
