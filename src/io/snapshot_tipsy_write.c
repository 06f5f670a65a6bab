/* Write tipsy binary files, standard (big-endian, XDR) or native: PartType0
 * as gas, PartType4 as stars, every other type as dark matter (tipsy has
 * no more kinds: the halo, disk and bulge of a galaxy all become dark).
 * Softening eps is the run's (meta->gravity.softening), phi the potential
 * when p has one; the fields banyan does not know (rho, temp, metals,
 * tform) are 0. Ids are not written (tipsy has none). */
#include <limits.h>
#include <stdlib.h>
#include "io/binary_file.h"
#include "io/snapshot_foreign.h"
#include "io/snapshot_tipsy.h"

typedef struct {
    const bn_particles *p;
    const bn_snapshot_meta *meta;
    const size_t *order;
    size_t count[3]; /* gas, dark, star */
    int big;
} tipsy_writer;

static int kind_of(int type) { return type == 0 ? 0 : type == 4 ? 2 : 1; }

static void record(bn_binout *o, const tipsy_writer *w, size_t i, int kind)
{
    const bn_particles *p = w->p;
    const float eps = (float)w->meta->gravity.softening, phi = p->pot ? (float)p->pot[i] : 0.0f;
    bn_put_f32(o, (float)p->mass[i]);
    for (int c = 0; c < 3; c++) bn_put_f32(o, (float)p->pos[c][i]);
    for (int c = 0; c < 3; c++) bn_put_f32(o, (float)p->vel[c][i]);
    /* gas: rho, temp, hsmooth, metals; dark: eps; star: metals, tform, eps */
    const float tail[3][4] = {{0, 0, eps, 0}, {eps}, {0, 0, eps}};
    for (int c = 0; c < bn_tipsy_record_floats[kind] - 8; c++) bn_put_f32(o, tail[kind][c]);
    bn_put_f32(o, phi);
}

static bn_status fill(FILE *fp, void *ctx)
{
    const tipsy_writer *w = ctx;
    bn_binout o = {fp, w->big};
    bn_put_f64(&o, w->meta->time);
    bn_put_u32(&o, (uint32_t)w->p->n);
    bn_put_u32(&o, 3);
    for (int k = 0; k < 3; k++) bn_put_u32(&o, (uint32_t)w->count[k]);
    bn_put_u32(&o, 0); /* pad */
    for (int k = 0; k < 3; k++)
        for (size_t j = 0; j < w->p->n; j++) {
            const size_t i = w->order[j];
            if (kind_of(bn_particles_part_type(w->p, i)) == k) record(&o, w, i, k);
        }
    return BN_OK;
}

static bn_status check_fits(const char *path, const bn_particles *p)
{
    if (p->n > INT_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "writing %s: %zu particles do not fit tipsy's 32-bit nbodies", path, p->n);
    BN_TRY(bn_check_float32(path, p));
    return BN_OK;
}

bn_status bn_tipsy_write(const char *path, const bn_particles *p, const bn_snapshot_meta *meta,
                         const bn_snapshot_write_options *o)
{
    tipsy_writer w = {.p = p, .meta = meta,
                      .big = o->format == BN_FORMAT_TIPSY_NATIVE ? bn_host_big_endian() : 1};
    BN_TRY(check_fits(path, p));
    size_t *order = NULL, types[BN_PART_TYPES];
    BN_TRY(bn_snapshot_type_order(p, &order, types));
    for (int t = 0; t < BN_PART_TYPES; t++) w.count[kind_of(t)] += types[t];
    w.order = order;
    bn_status s = bn_binfile_write_atomic(path, fill, &w);
    free(order);
    return s;
}
