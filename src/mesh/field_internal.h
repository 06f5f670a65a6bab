/*
 * Internal: the field solver's data between its stages (src/mesh/field*.c
 * and field_cuda.cu). Sources and targets are separate sets:
 *   sources  points with K strength components: mesh cells (centre,
 *            strength = value x volume, their block for the cell's
 *            sides) and particles (block -1)
 *   targets  points in groups: a mesh's cell centres by bricks of a block
 *            (at most BN_FIELD_BRICK cells: 8^3), or arbitrary points in
 *            Morton order cut every BN_FIELD_POINT_GROUP
 * The stages: source tree (keys, sort, build: the particle tree's), its
 * moments (field_interact.h), the walk per target group, and the
 * near-field correction (exact cubes for the nearest cells).
 */
#ifndef BN_FIELD_INTERNAL_H
#define BN_FIELD_INTERNAL_H
#include <stdint.h>
#include "banyan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BN_FIELD_BRICK 512      /* target cells per group (8^3)          */
#define BN_FIELD_POINT_GROUP 64 /* arbitrary targets per group           */

typedef struct bn_field_sources {
    size_t n;
    int K;                /* components: 1 (gravity) or 3 (vorticity) */
    double *x[3];         /* positions (cell centres)                  */
    double *q;            /* K strengths per source                    */
    int32_t *blk;         /* mesh block of a cell, -1 for a particle   */
} bn_field_sources;

typedef struct bn_field_targets {
    size_t n;
    double *x[3];         /* positions, group after group              */
    size_t *dest;         /* where target i's values go (cell index in
                             the mesh, or point index)                 */
    size_t n_groups;
    size_t *first;        /* group g: targets [first[g], first[g] + count[g]) */
    int *count;
    double *lo, *hi;      /* 3 per group: the box of its targets       */
    double *h;            /* per group: the x side of its cells (a
                             brick's block), 0 for points              */
} bn_field_targets;

/* The exact cube minus the point kernel for pairs of cells of one size
 * at integer offsets (i, j, k) in [-near, near]^3, in units of the x
 * side h: with aspect a = (1, hy/h, hz/h) and u = (i, j a_y, k a_z),
 *   phi += q/h   T_phi,  T_phi = -V(u) / (a_y a_z) + 1/|u|  (-V(0) / (a_y a_z) on itself)
 *   g   += q/h^2 T_g,    T_g   = G(u) / (a_y a_z) - u/|u|^3
 * (V, G: the unit-density box of sides a at -u, box_kernel.h). One table
 * serves every level (all cells of a mesh share the aspect). */
typedef struct bn_field_near_table {
    int near;
    double aspect[3];
    double *t;            /* 4 per offset, x fastest                   */
} bn_field_near_table;
bn_status bn_field_near_table_make(const bn_mesh *m, int near, bn_field_near_table *tab);
void bn_field_near_table_free(bn_field_near_table *tab);
/* The correction of source cell (side hs, strengths q) on a target of
 * cell side ht at d = source - target from the table: 1 when the pair is
 * on it (same sides, an integer offset within near), else 0. */
int bn_field_near_from_table(const bn_field_near_table *tab, double hs, double ht, const double d[3], int K,
                             const double *q, double *raw);

/* Raw sums per target: K potentials (phi -= q/r) then 3K gradients (g
 * += q d/r^3), field_interact.h's convention; 4K doubles per target. */
#define BN_FIELD_RAW(K) (4 * (K))

void bn_field_sources_free(bn_field_sources *s);
void bn_field_targets_free(bn_field_targets *t);

/* Sources of mesh m's variables (vars: K indices; zero cells left out)
 * and of particles p (K = 1 only; either may be NULL). */
bn_status bn_field_sources_make(const bn_field_params *prm, const bn_mesh *m, const bn_particles *p,
                                bn_field_sources *s);
/* Targets: every leaf cell of m, by bricks; or n points. */
bn_status bn_field_targets_mesh(const bn_mesh *m, bn_field_targets *t);
bn_status bn_field_targets_points(size_t n, const double *pos, bn_field_targets *t);
/* Targets: the cells of m's leaf blocks blocks[0..nsel) (NULL: every
 * block, nsel = n_blocks), by bricks as bn_field_targets_mesh; dest =
 * the block's place in the list x cells per block + the cell's index in
 * its block. A block's bricks are the same whatever the list. */
bn_status bn_field_targets_blocks(const bn_mesh *m, const size_t *blocks, size_t nsel, bn_field_targets *t);

/* ---- a part of a mesh's cells (the mesh solver across ranks) ---- */
const bn_field_params *bn_field_params_of(const bn_field *f);
/* Values per cell of a mesh solve: 4 (gpot, gacx..z), 6 or 3 (psix..z,
 * and velx..z with the velocity); variable k's name. */
int bn_field_mesh_values(const bn_field_params *p);
const char *bn_field_mesh_var_name(const bn_field_params *p, int k);
/* The tree (on either backend): the field of every source of m (and of
 * extra) at the cells of the leaf blocks blocks[0..nsel) only, into out:
 * nv values (bn_field_mesh_values) per cell, the list's blocks one after
 * another, cells in a block's order. On the CPU each cell's value has the
 * same bits as bn_field_mesh's over the whole mesh (the same tree over
 * the same sources, the same bricks walked alone; an error target chooses
 * theta on the sample of every cell); on the GPU the targets go through
 * the generic solve (host-made bricks), whose values agree with the
 * device-made whole mesh's to float rounding. m is not changed. */
bn_status bn_field_mesh_blocks(bn_field *f, const bn_mesh *m, const bn_particles *extra, const size_t *blocks,
                               size_t nsel, double *out);

/* The message for the first bad source value (not finite, or a negative
 * density) of variable v at cell `cell`. */
bn_status bn_field_bad_source(const bn_field_params *prm, const bn_mesh *m, int v, size_t cell);

/* The smoothing length^2 of the smoothed kernel (0: singular kernel with
 * exact near cubes). */
double bn_field_eps2(const bn_field_params *prm, const bn_mesh *m);

/* Is target x near source cell s (block b of m), so that it acts as the
 * cube it is? |x - centre| < (near_cells + 1/2) sides, on every axis. */
int bn_field_is_near(const bn_mesh *m, int near_cells, int32_t b, const double d[3]);
/* The exact cube minus the point kernel for a near pair: d = source -
 * target, q (K) the cell's strengths, b its block. Adds to raw (4K). */
void bn_field_near_pair(const bn_mesh *m, int32_t b, int K, const double d[3], const double *q, double *raw);

/* ---- the CPU backend (field_cpu.c) ---- */
bn_status bn_field_cpu_solve(const bn_field_params *prm, const bn_mesh *m, const bn_field_sources *s,
                             const bn_field_targets *t, double *raw, bn_field_stats *st);
/* Direct summation in double (every source on every target). */
bn_status bn_field_cpu_direct(const bn_field_params *prm, const bn_mesh *m, const bn_field_sources *s,
                              size_t n, const double *pos, double *raw);

/* ---- the CUDA backend (field_cuda.cu; cuda_stub.c without CUDA) ---- */
typedef struct bn_field_gpu bn_field_gpu;
bn_status bn_field_gpu_create(bn_field_gpu **out, int device);
void bn_field_gpu_free(bn_field_gpu *g);
bn_status bn_field_gpu_solve(bn_field_gpu *g, const bn_field_params *prm, const bn_mesh *m,
                             const bn_field_sources *s, const bn_field_targets *t, double *raw, bn_field_stats *st);
/* The whole mesh on the device: its source variables var[0..K) uploaded
 * (pinned, staged), the nonzero cells compacted into sources (and the
 * particles `extra` after them), every cell of the targets' blocks a
 * target by bricks, and the finished values (gpot, gacx..z or psix..z,
 * velx..z: out[0..nv)) back in cell order. The targets: every block
 * (part NULL), or the part's blocks in its order (out then holds n
 * blocks' cells: across ranks, field_dist.c). Validation is the
 * caller's. */
typedef struct bn_mesh_part {
    const size_t *blocks;
    size_t n;
} bn_mesh_part;
bn_status bn_field_gpu_mesh(bn_field_gpu *g, const bn_field_params *prm, const bn_mesh *m, const int *var,
                            const bn_particles *extra, const bn_mesh_part *part, double *const *out,
                            bn_field_stats *st);

#ifdef __cplusplus
}
#endif
#endif
