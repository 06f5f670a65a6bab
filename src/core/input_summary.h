/* Internal: what a force call must know of its inputs (the first bad
 * particle, the coordinate range, the total mass), gathered in the same
 * pass that stages them for the device, so that each input array is read
 * once per call: at 2^24 particles separate passes for validation, span,
 * total mass and staging cost 150 ms around a 40 ms solve (host memory
 * bandwidth, not arithmetic, is the limit). Host C, shared by both
 * backends (the CPU's inspects without copying). */
#ifndef BN_INPUT_SUMMARY_H
#define BN_INPUT_SUMMARY_H
#include <stddef.h>
#include "banyan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Masses are summed in blocks of this many, then the block sums in
 * order: the same bits at any thread count and any staging chunk (chunks
 * are whole blocks). */
#define BN_MASS_BLOCK 65536

typedef struct {
    size_t n;
    size_t first_bad;    /* first particle with a non-finite coordinate or a
                            mass not finite and >= 0; n if none */
    double lo[3], hi[3]; /* coordinate range (meaningful when first_bad == n) */
    double mass;         /* total mass, after bn_summary_finish */
    double *part;        /* the block sums of the masses */
} bn_input_summary;

bn_status bn_summary_init(bn_input_summary *s, size_t n);
/* Sums the blocks into s->mass and releases them. */
void bn_summary_finish(bn_input_summary *s);
void bn_summary_free(bn_input_summary *s);

/* Coordinates src[0..len) of axis k, particles off.., folded into s and
 * copied to dst (NULL: inspected only). */
void bn_stage_coords(double *dst, const double *src, size_t len, size_t off, int k, bn_input_summary *s);
/* Masses src[0..len), particles off.. (off a multiple of BN_MASS_BLOCK),
 * folded into s and copied to dst as floats (NULL: inspected only). */
void bn_stage_masses(float *dst, const double *src, size_t len, size_t off, bn_input_summary *s);
/* The whole set inspected (no copies): bn_summary_init, every array,
 * bn_summary_finish. */
bn_status bn_summarize_particles(const bn_particles *p, bn_input_summary *s);

/* The sum of m[0..len) in index order (one mass block). */
double bn_mass_block_sum(const double *m, size_t len);

/* Floats src[0..len) to doubles dst, particles off..: the first
 * non-finite one (off + i) lowers *first_bad. */
void bn_unstage_floats(double *dst, const float *src, size_t len, size_t off, size_t *first_bad);

/* The message for particle i, the first bad one: its non-finite
 * coordinate or velocity (where present), or its mass. BN_OK if none. */
bn_status bn_particles_fault(const bn_particles *p, size_t i, const char *what);
/* The first particle whose acceleration or potential (where present)
 * is not finite; p->n if none. */
size_t bn_particles_forces_first_bad(const bn_particles *p);
/* The message for particle i's acceleration or potential. */
bn_status bn_particles_forces_fault(const bn_particles *p, size_t i, const char *what);
#ifdef __cplusplus
}
#endif
#endif
