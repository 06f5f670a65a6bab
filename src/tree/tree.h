/*
 * The sparse octree, as built by the CPU backend (and downloaded from the
 * GPU backend for comparison). Independent of what the particles are: it
 * sees positions and masses only, in key order.
 *
 * Layout (Bonsai, paper 003 sec. 4.2): nodes are stored level by level,
 * root first; the nodes of level L are [level_start[L], level_start[L+1]).
 * Children of a node are contiguous (first_child, n_children); particles
 * of every node are contiguous in key order (first_body, n_bodies). A
 * node with n_children == 0 is a leaf.
 */
#ifndef BN_TREE_H
#define BN_TREE_H
#include <stddef.h>
#include <stdint.h>
#include "banyan.h"
#include "tree/keys.h"

typedef struct bn_tree {
    /* ---- particles in key order ---- */
    size_t n;              /* particles                                  */
    uint64_t *keys;        /* sorted keys                                */
    uint32_t *order;       /* order[i] = original index of sorted i      */
    double *pos[3];        /* sorted positions                           */
    double *mass;          /* sorted masses                              */
    double box_lo[3];      /* the key cube: [box_lo, box_lo + box_size)^3 */
    double box_size;
    double align_lo[3], align_side; /* the cube whose octree cells the key
                              cube is one of (bn_key_cube_in: the domains'
                              cube on several ranks); side 0: none    */
    bn_curve curve;        /* the curve of the keys                      */

    /* ---- nodes ---- */
    int n_nodes, n_leaves, n_levels;
    int level_start[BN_KEY_MAX_LEVEL + 2];
    int capacity;          /* allocated nodes                            */
    int32_t *first_child;  /* -1 for leaves                              */
    int32_t *n_children;   /* 0 for leaves                               */
    int32_t *first_body, *n_bodies;
    uint8_t *level;
    double *center;        /* geometric centre, 3 per node               */
    double *size;          /* geometric side l                           */
    double *mass_node;     /* total mass                                 */
    double *com;           /* centre of mass, 3 per node                 */
    double *quad;          /* traceless quadrupole about com, 6 per node  */
    double *delta;         /* |com - centre|                             */
    double *body_lo, *body_hi; /* bounding box of the node's bodies, 3 each */
    double *open_radius;   /* bn_mac_open_radius for the chosen MAC      */

    /* ---- groups: the deepest nodes with at most group_size particles ---- */
    int n_groups;
    int32_t *group_first, *group_count;
    double *group_lo, *group_hi; /* particle bounding box, 3 per group   */

    /* ---- CPU scratch and capacities (not part of the layout) ---- */
    size_t body_capacity;
    uint64_t *tmp_keys;    /* radix-sort ping-pong buffers               */
    uint32_t *tmp_order;
    int group_capacity;
    int scan_capacity;
    int32_t *scan;         /* per-node counts / exclusive scan of a pass */
} bn_tree;
#endif
