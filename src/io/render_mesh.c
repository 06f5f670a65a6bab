/* A slice through a mesh variable, as a PNG: each pixel takes the value
 * of the leaf cell under its centre (found through the block octree),
 * coloured linearly between the slice's extremes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "io/png_image.h"
#include "mesh/mesh_internal.h"

#define SLICE_MAX_SIDE 16384

/* The value of variable v at point x (NAN outside every leaf). */
static double value_at(const bn_mesh *m, const bn_mesh_octree *o, const bn_block_map *leaves, int v, const double x[3])
{
    for (int L = o->max_level; L >= 1; L--) {
        int64_t c[3];
        double f[3];
        for (int k = 0; k < 3; k++) {
            const double side = ldexp(o->root_side[k], 1 - L);
            f[k] = (x[k] - o->domain_lo[k]) / side;
            c[k] = (int64_t)floor(f[k]);
        }
        const bn_block_slot *sl = bn_block_map_find(leaves, L, c);
        if (!sl) continue;
        int ijk[3];
        for (int k = 0; k < 3; k++) {
            ijk[k] = (int)floor((f[k] - (double)c[k]) * m->nb[k]);
            ijk[k] = ijk[k] < 0 ? 0 : ijk[k] >= m->nb[k] ? m->nb[k] - 1 : ijk[k];
        }
        return m->var[v][(size_t)sl->v[0] * bn_mesh_block_cells(m) +
                         ((size_t)ijk[2] * (size_t)m->nb[1] + (size_t)ijk[1]) * (size_t)m->nb[0] + (size_t)ijk[0]];
    }
    return NAN;
}

static bn_status sample(const bn_mesh *m, const bn_mesh_octree *o, int v, int axis, double coord, int w, int h,
                        double *val)
{
    bn_block_map leaves;
    BN_TRY(bn_block_map_init(&leaves, m->n_blocks));
    bn_status st = BN_OK;
    for (size_t b = 0; st == BN_OK && b < m->n_blocks; b++)
        st = bn_block_map_put(&leaves, m->level[b], o->ijk + 3 * b, (int64_t)b, 0, NULL);
    const int u = (axis + 1) % 3, vv = (axis + 2) % 3;
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = o->domain_lo[k];
        hi[k] = lo[k] + o->root_side[k] * o->nroot[k];
    }
    if (isnan(coord)) coord = 0.5 * (lo[axis] + hi[axis]);
    for (int j = 0; st == BN_OK && j < h; j++)
        for (int i = 0; i < w; i++) {
            double x[3];
            x[axis] = coord;
            x[u] = lo[u] + (i + 0.5) * (hi[u] - lo[u]) / w;
            x[vv] = hi[vv] - (j + 0.5) * (hi[vv] - lo[vv]) / h; /* rows top to bottom */
            val[(size_t)j * (size_t)w + (size_t)i] = value_at(m, o, &leaves, v, x);
        }
    bn_block_map_free(&leaves);
    return st;
}

bn_status bn_mesh_render_slice(const char *path, const bn_mesh *m, const char *var, double coord,
                               const bn_render_params *params)
{
    if (!path || !m || !var) return bn_fail(BN_ERR_ARGUMENT, "bn_mesh_render_slice: NULL argument");
    const bn_render_params r = params ? *params : bn_render_params_default();
    if (r.width < 1 || r.height < 1 || r.width > SLICE_MAX_SIDE || r.height > SLICE_MAX_SIDE)
        return bn_fail(BN_ERR_ARGUMENT, "image size %d x %d: each side must be in [1, %d]", r.width, r.height,
                       SLICE_MAX_SIDE);
    if (r.axis < 0 || r.axis > 2) return bn_fail(BN_ERR_ARGUMENT, "slice axis %d: must be 0, 1 or 2", r.axis);
    const int v = bn_mesh_var_index(m, var);
    if (v < 0) return bn_fail(BN_ERR_ARGUMENT, "the mesh has no variable '%s'", var);
    bn_mesh_octree o;
    BN_TRY(bn_mesh_octree_make(m, &o));
    const double lo = o.domain_lo[r.axis], hi = lo + o.root_side[r.axis] * o.nroot[r.axis];
    bn_status s = isnan(coord) || (coord >= lo && coord < hi)
                      ? BN_OK
                      : bn_fail(BN_ERR_ARGUMENT, "slice at %c = %g: outside the domain [%g, %g)", "xyz"[r.axis], coord, lo, hi);
    const size_t npix = (size_t)r.width * (size_t)r.height;
    double *val = s == BN_OK ? bn_alloc_array(npix, sizeof *val, "slice values") : NULL;
    unsigned char *rgb = val ? bn_alloc_array(npix, 3, "slice pixels") : NULL;
    if (s == BN_OK && !rgb) s = BN_ERR_NOMEM;
    if (s == BN_OK) s = sample(m, &o, v, r.axis, coord, r.width, r.height, val);
    if (s == BN_OK) {
        double vmin = INFINITY, vmax = -INFINITY;
        for (size_t i = 0; i < npix; i++)
            if (isfinite(val[i])) {
                vmin = fmin(vmin, val[i]);
                vmax = fmax(vmax, val[i]);
            }
        const double span = vmax > vmin ? vmax - vmin : 1.0;
        for (size_t i = 0; i < npix; i++) bn_colour_inferno(isfinite(val[i]) ? (val[i] - vmin) / span : 0, rgb + 3 * i);
        s = bn_png_write_atomic(path, r.width, r.height, rgb);
    }
    bn_mesh_octree_free(&o);
    free(val);
    free(rgb);
    return s == BN_OK ? BN_OK : bn_fail_context(s, "rendering %s", path);
}
