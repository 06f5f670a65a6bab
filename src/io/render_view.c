/* Where a picture looks from: the centre, the image plane's two axes and
 * the half-size of the view. Face-on and edge-on views turn the disk's
 * angular momentum towards the viewer or up, so that a galaxy's disk is
 * seen as galaxy people draw it whatever its orientation in the file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "io/render_view.h"

#define RENDER_MASS_FRACTION 0.98

int bn_render_drawn(const bn_particles *p, size_t i, int component)
{
    return component < 0 || bn_particles_part_type(p, i) == component;
}

/* Centre of mass and mean velocity of the selected particles; their mass. */
static double moments(const bn_particles *p, int only, double c[3], double v[3])
{
    double m = 0;
    for (int k = 0; k < 3; k++) c[k] = v[k] = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (!bn_render_drawn(p, i, only)) continue;
        m += p->mass[i];
        for (int k = 0; k < 3; k++) {
            c[k] += p->mass[i] * p->pos[k][i];
            v[k] += p->mass[i] * p->vel[k][i];
        }
    }
    for (int k = 0; k < 3 && m > 0; k++) c[k] /= m, v[k] /= m;
    return m;
}

static double mass_within(const bn_particles *p, int only, const double *d2, double r2)
{
    double m = 0;
    for (size_t i = 0; i < p->n; i++)
        if (bn_render_drawn(p, i, only) && d2[i] <= r2) m += p->mass[i];
    return m;
}

/* Radius around c holding `fraction` of the selected mass: bisection on
 * the squared distances (computed once), to far below a pixel. */
static bn_status radius_holding(const bn_particles *p, int only, const double c[3], double mass, double *radius)
{
    double *d2 = bn_alloc(p->n * sizeof *d2 + 1, "render: particle distances");
    if (!d2) return BN_ERR_NOMEM;
    double hi = 0, lo = 0, target = RENDER_MASS_FRACTION * mass;
    for (size_t i = 0; i < p->n; i++) {
        d2[i] = 0;
        for (int k = 0; k < 3; k++) d2[i] += (p->pos[k][i] - c[k]) * (p->pos[k][i] - c[k]);
        if (bn_render_drawn(p, i, only)) hi = d2[i] > hi ? d2[i] : hi;
    }
    for (int it = 0; it < 48 && hi > 0; it++) {
        double mid = 0.5 * (lo + hi);
        if (mass_within(p, only, d2, mid) >= target) hi = mid;
        else lo = mid;
    }
    free(d2);
    *radius = sqrt(hi);
    return BN_OK;
}

static double norm(const double a[3]) { return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

static void cross(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* Unit n and two unit vectors completing a right-handed basis: e1 from
 * the coordinate axis least aligned with n (so that a disk in the xy
 * plane is seen with x to the right), e2 = n x e1. */
static void basis(const double n[3], double e1[3], double e2[3])
{
    int a = 0;
    for (int k = 1; k < 3; k++)
        if (fabs(n[k]) < fabs(n[a])) a = k;
    for (int k = 0; k < 3; k++) e1[k] = (k == a) - n[a] * n[k];
    const double l = norm(e1);
    for (int k = 0; k < 3; k++) e1[k] /= l;
    cross(n, e1, e2);
}

/* The disk's spin axis: its angular momentum about its centre of mass
 * and mean velocity, normalised. */
static bn_status spin_axis(const bn_particles *p, int disk, const double c[3], const double v[3], double n[3])
{
    double L[3] = {0, 0, 0};
    for (size_t i = 0; i < p->n; i++) {
        if (!bn_render_drawn(p, i, disk)) continue;
        double r[3], u[3], l[3];
        for (int k = 0; k < 3; k++) r[k] = p->pos[k][i] - c[k], u[k] = p->vel[k][i] - v[k];
        cross(r, u, l);
        for (int k = 0; k < 3; k++) L[k] += p->mass[i] * l[k];
    }
    const double l = norm(L);
    if (!(l > 0) || !isfinite(l))
        return bn_fail(BN_ERR_ARGUMENT, "%s view: the disk (%s) has no angular momentum to turn to",
                       "face-on or edge-on", disk < 0 ? "every particle" : "PartType2");
    for (int k = 0; k < 3; k++) n[k] = L[k] / l;
    return BN_OK;
}

static int has_type(const bn_particles *p, int t)
{
    for (size_t i = 0; i < p->n; i++)
        if (bn_particles_part_type(p, i) == t) return 1;
    return 0;
}

bn_status bn_render_frame_make(const bn_particles *p, const bn_render_params *r, bn_render_frame *f)
{
    memset(f, 0, sizeof *f);
    const int turned = r->view != BN_VIEW_AXIS;
    const int only = turned ? (has_type(p, 2) ? 2 : -1) : r->component;
    double v[3];
    const double mass = moments(p, only, f->centre, v);
    if (!(mass > 0))
        return bn_fail(BN_ERR_ARGUMENT, "no %s particle with mass to frame the view on",
                       only < 0 ? "" : bn_part_type_name(only));
    if (!turned) {
        f->right[(r->axis + 1) % 3] = 1; /* right-handed: x->(y,z), y->(z,x), z->(x,y) */
        f->up[(r->axis + 2) % 3] = 1;
    } else {
        double n[3] = {0, 0, 1}, e2[3];
        BN_TRY(spin_axis(p, only, f->centre, v, n));
        basis(n, f->right, e2);
        memcpy(f->up, r->view == BN_VIEW_FACE_ON ? e2 : n, sizeof f->up); /* edge-on: looking along -e2 */
    }
    f->half = r->extent;
    if (f->half == 0) BN_TRY(radius_holding(p, only, f->centre, mass, &f->half));
    if (!(f->half > 0)) f->half = 1.0; /* every particle on the centre of mass */
    return BN_OK;
}
