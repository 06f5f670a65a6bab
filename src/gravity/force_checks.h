/* Internal: forces that cannot be finite are refused before they are
 * computed, and forces that came out non-finite anyway are refused before
 * anyone writes them (bn_gravity_compute, bn_simulation). */
#ifndef BN_FORCE_CHECKS_H
#define BN_FORCE_CHECKS_H
#include "banyan.h"
#include "core/input_summary.h"

/* Every coordinate and mass finite, masses >= 0 and their total > 0
 * (velocities are not read: forces do not need them), coordinates
 * spanning less than BN_MAX_SPAN on each axis (squared distances finite),
 * and G M, G M / eps^2 (the largest softened acceleration) and eps^2
 * finite, M the total mass: fails naming the particle, the axis, or G,
 * the softening and M, otherwise. _judge takes the summary that the
 * backend's upload gathered; _check gathers it. */
bn_status bn_force_inputs_judge(const bn_gravity_params *g, const bn_particles *p, const bn_input_summary *sum);
bn_status bn_force_inputs_check(const bn_gravity_params *g, const bn_particles *p);
/* first_bad (from the backend's download_forces; p->n if none) names the
 * first particle whose acceleration or potential is not finite: the
 * message names it and the likely cause (no softening and near-coincident
 * particles, or G and the masses too large). */
bn_status bn_force_outputs_check(const bn_gravity_params *g, const bn_particles *p, size_t first_bad);
#endif
