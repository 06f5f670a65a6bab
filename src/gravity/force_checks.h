/* Internal: forces that cannot be finite are refused before they are
 * computed, and forces that came out non-finite anyway are refused before
 * anyone writes them (bn_gravity_compute, bn_simulation). */
#ifndef BN_FORCE_CHECKS_H
#define BN_FORCE_CHECKS_H
#include "banyan.h"

/* Coordinates spanning less than BN_MAX_SPAN on each axis (squared
 * distances finite), and G M, G M / eps^2 (the largest softened
 * acceleration) and eps^2 finite, M the total mass: fails naming the
 * axis, or G, the softening and M, otherwise. */
bn_status bn_force_inputs_check(const bn_gravity_params *g, const bn_particles *p);
/* Every acceleration and potential of p finite; the message names the
 * particle and the likely cause (no softening and near-coincident
 * particles, or G and the masses too large). */
bn_status bn_force_outputs_check(const bn_gravity_params *g, const bn_particles *p);
#endif
