/* Internal: the readers and writers of other codes' binary snapshots
 * (snapshot_gadget2*.c, snapshot_tipsy*.c), reached through
 * bn_snapshot_read and bn_snapshot_write_as. */
#ifndef BN_SNAPSHOT_FOREIGN_H
#define BN_SNAPSHOT_FOREIGN_H
#include "banyan.h"
#include "core/error.h"

/* Particles and meta of a GADGET-2 file (format 1 or 2, either order);
 * a file "<stem>.<k>" of a set of num_files > 1 reads the whole set. */
bn_status bn_gadget2_read(const char *path, bn_particles **out, bn_snapshot_meta *meta);
bn_status bn_tipsy_read(const char *path, bn_particles **out, bn_snapshot_meta *meta);
bn_status bn_gadget2_write(const char *path, const bn_particles *p, const bn_snapshot_meta *meta,
                           const bn_snapshot_write_options *o);
bn_status bn_tipsy_write(const char *path, const bn_particles *p, const bn_snapshot_meta *meta,
                         const bn_snapshot_write_options *o);
/* p's particles appended to *all (made on the first call). */
bn_status bn_snapshot_append(bn_particles **all, const bn_particles *p);
/* The order of p's particles sorted by part type (stable), in *order
 * (free it), and the count of each type. */
bn_status bn_snapshot_type_order(const bn_particles *p, size_t **order, size_t counts[BN_PART_TYPES]);
/* p's positions, velocities and masses fit float32, or the failure names
 * the file, the particle and the field. */
bn_status bn_check_float32(const char *path, const bn_particles *p);
#endif
