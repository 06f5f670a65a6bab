/* Internal: run parameters and the unit system in snapshot files.
 *
 * GADGET-4 keeps its parameters as attributes of /Parameters, units
 * included (UnitLength_in_cm, UnitMass_in_g, UnitVelocity_in_cm_per_s);
 * SWIFT and EAGLE keep units in /Units. We write both, and read whichever
 * a file has. */
#ifndef BN_SNAPSHOT_PARAMS_H
#define BN_SNAPSHOT_PARAMS_H
#include <hdf5.h>
#include "banyan.h"

/* G in cm^3 g^-1 s^-2 (CODATA 2018): G of a file that states its units
 * but not G. */
#define BN_G_CGS 6.67430e-8

/* /Parameters (G, units, cosmology off, the gravity parameters) and
 * /Units. */
bn_status bn_snapshot_write_parameters(hid_t file, const bn_snapshot_meta *meta);
/* Fill meta->units, meta->gravity and meta->has_gravity from /Parameters
 * and /Units; absent keys keep their defaults. Messages name the group
 * and attribute; the caller adds the file name. */
bn_status bn_snapshot_read_parameters(hid_t file, bn_snapshot_meta *meta);
#endif
