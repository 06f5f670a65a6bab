/*
 * Internal: the geometry of a block-structured mesh (bn_mesh, banyan.h)
 * as an octree of blocks over a grid of root blocks, which every reader,
 * writer and generator of meshes shares.
 */
#ifndef BN_MESH_INTERNAL_H
#define BN_MESH_INTERNAL_H
#include <stdint.h>
#include "banyan.h"

/* Where each leaf block sits in the octree: root blocks of sides
 * root_side tile [domain_lo, domain_lo + nroot * root_side); a block of
 * level L has sides root_side / 2^(L-1) and integer corner coordinates
 * ijk (in units of its sides) from domain_lo. */
typedef struct bn_mesh_octree {
    double domain_lo[3], root_side[3];
    int nroot[3];
    int max_level;
    int64_t *ijk;  /* 3 per block */
} bn_mesh_octree;

/* The octree of m's leaves (boxes finite, levels in range: the caller's
 * check): fails (naming the block) when a block's sides do not match its
 * level, its corner is off the level's grid or 2^30 or more of its sides
 * from the domain's corner, two leaves overlap (one inside another, or
 * the same block twice), or the leaves leave a hole in a root block they
 * are in (naming the place). */
bn_status bn_mesh_octree_make(const bn_mesh *m, bn_mesh_octree *o);
void bn_mesh_octree_free(bn_mesh_octree *o);

/* Integer coordinates of block b's ancestor at level L (<= its level). */
void bn_mesh_octree_ancestor(const bn_mesh_octree *o, const bn_mesh *m, size_t b, int L, int64_t out[3]);

/* A map from blocks of the octree (level, integer corner) to two values
 * each, open-addressed: the leaves of a mesh being made (mesh_ic.c), the
 * blocks of a FLASH tree (io/mesh_write.c), the leaves under the pixels
 * of a slice (io/render_mesh.c). */
typedef struct bn_block_slot {
    int level; /* 0: empty */
    int64_t c[3];
    int64_t v[2];
} bn_block_slot;
typedef struct bn_block_map {
    bn_block_slot *slot;
    size_t cap, n;
} bn_block_map;
/* Room for `expected` blocks (grows as they come). */
bn_status bn_block_map_init(bn_block_map *m, size_t expected);
void bn_block_map_free(bn_block_map *m);
/* The slot of (level, c), or NULL when absent. */
bn_block_slot *bn_block_map_find(const bn_block_map *m, int level, const int64_t c[3]);
/* The slot of (level, c), made (values v0, v1) when absent. */
bn_status bn_block_map_put(bn_block_map *m, int level, const int64_t c[3], int64_t v0, int64_t v1, bn_block_slot **out);

/* bn_mesh_validate without the variables: boxes, levels and the octree
 * (what the field solver needs; it checks its source variables itself). */
bn_status bn_mesh_check_geometry(const bn_mesh *m, const char *what);
/* The message for variable v's value at cell (block * cells + cell) that
 * is not finite, naming the block and the cell (i, j, k). */
bn_status bn_mesh_bad_value(const bn_mesh *m, const char *what, int v, size_t cell);

/* The parameters of the mesh test problems checked (mesh_ic.c): the
 * generator's and the exact solution's. */
bn_status bn_mesh_ic_check(const bn_mesh_ic_params *p);

/* The comma-separated names in `list` (at most max, each shorter than
 * BN_MESH_NAME_LEN): how many, or -1 with the message set. */
int bn_mesh_split_names(const char *list, char names[][BN_MESH_NAME_LEN], int max, const char *what);
#endif
