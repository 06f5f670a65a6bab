/* Placeholder: HDF5 snapshots land with the foundation issue. */
#include <string.h>
#include "core/error.h"

bn_snapshot_meta bn_snapshot_meta_default(void)
{
    bn_snapshot_meta m;
    memset(&m, 0, sizeof m);
    m.units = bn_units_nbody();
    m.gravity = bn_gravity_params_default();
    return m;
}
bn_status bn_snapshot_write(const char *path, const bn_particles *p, const bn_snapshot_meta *meta)
{
    (void)p; (void)meta;
    return bn_fail(BN_ERR_UNSUPPORTED, "%s: snapshot writing not implemented yet", path);
}
bn_status bn_snapshot_read(const char *path, bn_particles **out, bn_snapshot_meta *meta)
{
    (void)out; (void)meta;
    return bn_fail(BN_ERR_UNSUPPORTED, "%s: snapshot reading not implemented yet", path);
}
