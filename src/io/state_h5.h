/* Internal: the restart file's HDF5 layout (state_h5.c), written by
 * bn_simulation_save_state and read by bn_simulation_load_state
 * (core/simulation_state.c).
 *
 * One file per process: /Particles holds the particles in the order the
 * backend took them (the order decides sums: a different one would not
 * give the same bits), every array as a 1-D float64, uint64 or uint8
 * dataset; /State holds named byte blobs (the clock, the simulation's
 * fields, the caller's own). The root attribute Checksum (FNV-1a over
 * every array in a fixed order) refuses a file whose bytes changed;
 * HDF5 itself refuses a truncated one. */
#ifndef BN_STATE_H5_H
#define BN_STATE_H5_H
#include <stddef.h>
#include <stdint.h>
#include "banyan.h"

#define BN_STATE_FORMAT 10 /* raise when the layout or a saved struct changes (2: the costs; 3: the
                            rebuild tuner, integrator rebuild_cost; 4: the domains' cut; 5: the refreshed tree;
                            6: the tuner's fields mean other things: the counted rule's costs include the
                            walk's visited cells, BN_REBUILD_PROBE_FIRST 2, the hold's growth; 7: the tuner's
                            probe_every: BN_REBUILD_PROBE_PASSED after a passed probe, holds from the probe's
                            share of the steps; 8: the tuner's active counts and growth; 9: the tuner's
                            lead means; 10: the tuner chooses an aligned period) */
#define BN_STATE_BLOBS_MAX 8

typedef struct bn_state_blob {
    const char *name;
    void *data;  /* read: size > 0 fills it and the sizes must agree;
                    size 0 allocates it (free it) and sets size      */
    size_t size;
    int owned;   /* read allocated it: bn_state_file_release frees it,
                    unless the caller took it (set 0)                 */
} bn_state_blob;

typedef struct bn_state_file {
    bn_particles *p;  /* write: with acc and pot; read: made here     */
    uint8_t *bin;     /* time bins, p->n of them; read: made here     */
    int n_blobs;
    bn_state_blob blob[BN_STATE_BLOBS_MAX];
} bn_state_file;

/* Written under a temporary name and renamed (bn_h5_write_atomic). */
bn_status bn_state_write(const char *path, const bn_state_file *f);
/* Fails naming the file and what is wrong: not HDF5, truncated, a
 * dataset missing or of another size, a checksum that differs. On
 * failure nothing is left allocated. */
bn_status bn_state_read(const char *path, bn_state_file *f);
/* Only the blobs (and the format): what a file says of its set before
 * the whole is read; not checked against the checksum. */
bn_status bn_state_read_blobs(const char *path, bn_state_file *f);
/* The file's restart format (BN_STATE_FORMAT when this build wrote it),
 * whatever it is: why a file of an older banyan is refused. */
bn_status bn_state_format(const char *path, int *format);
/* Frees the particles, bins and the blobs read allocated. */
void bn_state_file_release(bn_state_file *f);
#endif
