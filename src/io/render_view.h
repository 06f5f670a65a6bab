/* Internal: where bn_render_png looks from (render_view.c). */
#ifndef BN_RENDER_VIEW_H
#define BN_RENDER_VIEW_H
#include "banyan.h"

/* The image plane: a particle at x lands at ((x - centre).right,
 * (x - centre).up) in length units, the view's half-size along the
 * shorter image side being `half`. */
typedef struct bn_render_frame {
    double centre[3], right[3], up[3], half;
} bn_render_frame;

/* The particle is drawn (r->component < 0 or its part type). */
int bn_render_drawn(const bn_particles *p, size_t i, int component);
/* The frame of r over p: along an axis, centred on the drawn particles'
 * centre of mass; face-on or edge-on, on the disk's (the PartType2
 * particles, or every particle when there are none), rotated by its
 * angular momentum (about its centre of mass and mean velocity). half:
 * r->extent, or the radius about the centre holding 98% of the mass of
 * the same particles. Fails naming the view when nothing is drawn or the
 * disk does not rotate. */
bn_status bn_render_frame_make(const bn_particles *p, const bn_render_params *r, bn_render_frame *f);
#endif
