/* Internal: the tipsy layout the reader and the writer share. */
#ifndef BN_SNAPSHOT_TIPSY_H
#define BN_SNAPSHOT_TIPSY_H
#define BN_TIPSY_HEADER_BYTES 32
/* floats per record: gas (mass, pos, vel, rho, temp, hsmooth, metals,
 * phi), dark (mass, pos, vel, eps, phi), star (mass, pos, vel, metals,
 * tform, eps, phi) */
static const int bn_tipsy_record_floats[3] = {12, 9, 11};
/* the GADGET part type of each kind */
static const int bn_tipsy_part_type[3] = {0, 1, 4};
#endif
