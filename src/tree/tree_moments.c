/* Stage 5: multipole moments, bottom-up and level by level (Bonsai, paper
 * 003 sec. 4.3.2): the deepest level first; a leaf sums its bodies, an
 * internal node combines its children (one level down, already done).
 * Everything in double. The quadrupole is the traceless
 *     Q_ij = sum m (3 x_i x_j - |x|^2 d_ij),  x about the centre of mass,
 * and since making it traceless is linear, a parent's Q is the sum of its
 * children's Q shifted by the parallel-axis term M_c (3 s s^T - |s|^2 I),
 * s = com_c - com: no untraced second moments need to be kept. */
#include <math.h>
#include "core/error.h"
#include "gravity/interact.h"
#include "tree/tree_cpu.h"

/* Add m (3 s s^T - |s|^2 I) to q (xx, yy, zz, xy, xz, yz). */
static inline void add_point_quad(double q[6], double m, double sx, double sy, double sz)
{
    const double r2 = sx * sx + sy * sy + sz * sz;
    q[BN_QXX] += m * (3 * sx * sx - r2);
    q[BN_QYY] += m * (3 * sy * sy - r2);
    q[BN_QZZ] += m * (3 * sz * sz - r2);
    q[BN_QXY] += m * 3 * sx * sy;
    q[BN_QXZ] += m * 3 * sx * sz;
    q[BN_QYZ] += m * 3 * sy * sz;
}

/* Mass and centre of mass of a leaf; massless bodies (allowed) give the
 * mean position, so that the com stays inside the cell. */
static void leaf_moments(bn_tree *t, int i)
{
    const int f = t->first_body[i], e = f + t->n_bodies[i];
    double m = 0, c[3] = {0, 0, 0}, q[6] = {0, 0, 0, 0, 0, 0};
    for (int b = f; b < e; b++) {
        m += t->mass[b];
        for (int k = 0; k < 3; k++) c[k] += t->mass[b] * t->pos[k][b];
    }
    if (m > 0) {
        for (int k = 0; k < 3; k++) c[k] /= m;
    } else {
        for (int k = 0; k < 3; k++) {
            c[k] = 0;
            for (int b = f; b < e; b++) c[k] += t->pos[k][b];
            c[k] /= (double)(e - f);
        }
    }
    for (int b = f; b < e; b++)
        add_point_quad(q, t->mass[b], t->pos[0][b] - c[0], t->pos[1][b] - c[1], t->pos[2][b] - c[2]);
    for (int k = 0; k < 3; k++) {
        double lo = t->pos[k][f], hi = lo;
        for (int b = f + 1; b < e; b++) {
            lo = fmin(lo, t->pos[k][b]);
            hi = fmax(hi, t->pos[k][b]);
        }
        t->body_lo[3 * i + k] = lo;
        t->body_hi[3 * i + k] = hi;
    }
    t->mass_node[i] = m;
    for (int k = 0; k < 3; k++) t->com[3 * i + k] = c[k];
    for (int k = 0; k < 6; k++) t->quad[6 * i + k] = q[k];
}

static void node_moments(bn_tree *t, int i)
{
    const int f = t->first_child[i], e = f + t->n_children[i];
    double m = 0, c[3] = {0, 0, 0}, q[6] = {0, 0, 0, 0, 0, 0};
    for (int j = f; j < e; j++) {
        m += t->mass_node[j];
        for (int k = 0; k < 3; k++) c[k] += t->mass_node[j] * t->com[3 * j + k];
    }
    if (m > 0) {
        for (int k = 0; k < 3; k++) c[k] /= m;
    } else { /* massless node: mean of the children's centres */
        for (int k = 0; k < 3; k++) {
            c[k] = 0;
            for (int j = f; j < e; j++) c[k] += t->com[3 * j + k];
            c[k] /= (double)(e - f);
        }
    }
    for (int j = f; j < e; j++) {
        for (int k = 0; k < 6; k++) q[k] += t->quad[6 * j + k];
        add_point_quad(q, t->mass_node[j], t->com[3 * j] - c[0], t->com[3 * j + 1] - c[1],
                       t->com[3 * j + 2] - c[2]);
    }
    for (int k = 0; k < 3; k++) {
        double lo = t->body_lo[3 * f + k], hi = t->body_hi[3 * f + k];
        for (int j = f + 1; j < e; j++) {
            lo = fmin(lo, t->body_lo[3 * j + k]);
            hi = fmax(hi, t->body_hi[3 * j + k]);
        }
        t->body_lo[3 * i + k] = lo;
        t->body_hi[3 * i + k] = hi;
    }
    t->mass_node[i] = m;
    for (int k = 0; k < 3; k++) t->com[3 * i + k] = c[k];
    for (int k = 0; k < 6; k++) t->quad[6 * i + k] = q[k];
}

/* Geometric centre and side of node i's key cell: the cell of its first
 * body's key at the node's level. */
static void node_geometry(bn_tree *t, int i, int hilbert)
{
    uint32_t ix[3];
    bn_key_decode(hilbert, t->keys[t->first_body[i]], &ix[0], &ix[1], &ix[2]);
    const int level = t->level[i];
    const uint32_t cell = 1u << (BN_KEY_MAX_LEVEL - level); /* side in key units */
    const double unit = t->box_size / (double)(1u << BN_KEY_BITS);
    for (int k = 0; k < 3; k++) {
        const uint32_t corner = ix[k] & ~(cell - 1u);
        t->center[3 * i + k] = t->box_lo[k] + ((double)corner + 0.5 * (double)cell) * unit;
    }
    t->size[i] = (double)cell * unit;
}

/* Stage 5 for a fresh build (moved = 0) or a refresh (moved = 1): then
 * the keys, hence the octants' centres and sides, are still the build's,
 * but the bodies may have left their octants, so the opening radius is
 * taken about their box instead (bn_mac_cell_radius, centre NULL). */
static void moments(bn_tree *t, bn_mac mac, double theta, int quadrupole, int moved)
{
    const int hilbert = t->curve == BN_CURVE_HILBERT;
    for (int level = t->n_levels - 1; level >= 0; level--) {
        const int s = t->level_start[level], e = t->level_start[level + 1];
#pragma omp parallel for schedule(static)
        for (int i = s; i < e; i++) {
            if (t->n_children[i] == 0) leaf_moments(t, i);
            else node_moments(t, i);
        }
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < t->n_nodes; i++) {
        if (!moved) node_geometry(t, i, hilbert);
        double d2 = 0;
        for (int k = 0; k < 3; k++) {
            const double d = t->com[3 * i + k] - t->center[3 * i + k];
            d2 += d * d;
        }
        t->delta[i] = sqrt(d2);
        t->open_radius[i] = bn_mac_cell_radius((int)mac, theta, t->size[i], moved ? NULL : t->center + 3 * i,
                                               t->com + 3 * i, t->body_lo + 3 * i, t->body_hi + 3 * i);
    }
    /* monopole only: the walk always evaluates Q, so zero it (after the
     * bottom-up pass, which needs the children's moments either way) */
    if (!quadrupole)
        for (int i = 0; i < 6 * t->n_nodes; i++) t->quad[i] = 0;
}

void bn_tree_moments(bn_tree *t, bn_mac mac, double theta, int quadrupole)
{
    moments(t, mac, theta, quadrupole, 0);
}

bn_status bn_tree_refresh(bn_tree *t, const double *const pos[3], bn_mac mac, double theta, int quadrupole)
{
    if (t->n_nodes == 0) return bn_fail(BN_ERR_INTERNAL, "tree refresh: no tree has been built");
    const long n = (long)t->n;
    int bad = 0;
    /* the new positions into the build's key order */
#pragma omp parallel for schedule(static) reduction(| : bad)
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const double x = pos[k][t->order[i]];
            t->pos[k][i] = x;
            bad |= !isfinite(x);
        }
    if (bad) return bn_fail(BN_ERR_ARGUMENT, "tree refresh: a particle has a non-finite coordinate");
    moments(t, mac, theta, quadrupole, 1);
    bn_tree_group_boxes(t);
    return BN_OK;
}
