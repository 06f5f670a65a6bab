/* Write GADGET-2 binary snapshots (format 1, or format 2 with block
 * labels), in either byte order, over one file or a set "<stem>.0",
 * "<stem>.1"...: float32 positions and velocities (GADGET-2's default),
 * 32-bit ids (64-bit when an id needs them), a type's mass in the header
 * when all its particles share it, else in the MASS block. Particles go
 * in part-type order (GADGET-2's layout), each type in p's order. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/atomic_file.h"
#include "io/binary_file.h"
#include "io/snapshot_foreign.h"

#define G2_TYPES BN_PART_TYPES

typedef struct {
    const bn_particles *p;
    const bn_snapshot_meta *meta;
    const size_t *order;          /* p's particles in type order    */
    size_t total[G2_TYPES];       /* per type over the set          */
    double mass[G2_TYPES];        /* header masses (0: MASS block)  */
    int format2, n_files, wide_ids;
    bn_binout o;
    size_t first, end;            /* this file's range of order     */
    size_t npart[G2_TYPES];
} g2_writer;

/* A record's start marker, with its label record first in format 2. */
static void begin(g2_writer *w, const char *name, size_t bytes)
{
    if (w->format2) {
        bn_put_u32(&w->o, 8);
        bn_put_bytes(&w->o, name, 4);
        bn_put_u32(&w->o, (uint32_t)(bytes + 8));
        bn_put_u32(&w->o, 8);
    }
    bn_put_u32(&w->o, (uint32_t)bytes);
}

static void header(g2_writer *w)
{
    bn_binout *o = &w->o;
    begin(w, "HEAD", 256);
    for (int t = 0; t < G2_TYPES; t++) bn_put_u32(o, (uint32_t)w->npart[t]);
    for (int t = 0; t < G2_TYPES; t++) bn_put_f64(o, w->mass[t]);
    bn_put_f64(o, w->meta->time);
    bn_put_f64(o, w->meta->redshift);
    bn_put_u32(o, 0); /* flag_sfr */
    bn_put_u32(o, 0); /* flag_feedback */
    for (int t = 0; t < G2_TYPES; t++) bn_put_u32(o, (uint32_t)w->total[t]);
    bn_put_u32(o, 0); /* flag_cooling */
    bn_put_u32(o, (uint32_t)w->n_files);
    bn_put_f64(o, w->meta->box_size);
    for (int k = 0; k < 3; k++) bn_put_f64(o, 0); /* Omega0, OmegaLambda, HubbleParam */
    bn_put_u32(o, 0); /* flag_stellarage */
    bn_put_u32(o, 0); /* flag_metals */
    for (int t = 0; t < G2_TYPES; t++) bn_put_u32(o, (uint32_t)((uint64_t)w->total[t] >> 32));
    bn_put_u32(o, 0); /* flag_entropy_instead_u */
    static const char fill[60];
    bn_put_bytes(o, fill, sizeof fill);
    bn_put_u32(o, 256);
}

static void vectors(g2_writer *w, const char *name, double *const *v)
{
    const size_t n = w->end - w->first;
    begin(w, name, 12 * n);
    for (size_t i = w->first; i < w->end; i++)
        for (int c = 0; c < 3; c++) bn_put_f32(&w->o, (float)v[c][w->order[i]]);
    bn_put_u32(&w->o, (uint32_t)(12 * n));
}

static void ids_and_masses(g2_writer *w)
{
    const size_t n = w->end - w->first, wid = w->wide_ids ? 8 : 4;
    begin(w, "ID  ", wid * n);
    for (size_t i = w->first; i < w->end; i++)
        if (w->wide_ids) bn_put_u64(&w->o, w->p->id[w->order[i]]);
        else bn_put_u32(&w->o, (uint32_t)w->p->id[w->order[i]]);
    bn_put_u32(&w->o, (uint32_t)(wid * n));
    size_t n_mass = 0;
    for (int t = 0; t < G2_TYPES; t++)
        if (w->mass[t] == 0) n_mass += w->npart[t];
    if (n_mass == 0) return;
    begin(w, "MASS", 4 * n_mass);
    for (size_t i = w->first; i < w->end; i++)
        if (w->mass[bn_particles_part_type(w->p, w->order[i])] == 0) bn_put_f32(&w->o, (float)w->p->mass[w->order[i]]);
    bn_put_u32(&w->o, (uint32_t)(4 * n_mass));
}

static bn_status fill_file(FILE *fp, void *ctx)
{
    g2_writer *w = ctx;
    w->o.fp = fp;
    header(w);
    vectors(w, "POS ", w->p->pos);
    vectors(w, "VEL ", w->p->vel);
    ids_and_masses(w);
    return BN_OK;
}

/* Header masses: a type's common mass, 0 when its masses differ. */
static void mass_table(g2_writer *w)
{
    const bn_particles *p = w->p;
    size_t at = 0;
    for (int t = 0; t < G2_TYPES; t++) {
        w->mass[t] = w->total[t] ? p->mass[w->order[at]] : 0;
        for (size_t i = at; i < at + w->total[t]; i++)
            if (p->mass[w->order[i]] != w->mass[t]) w->mass[t] = 0;
        at += w->total[t];
    }
}

/* Everything GADGET-2 holds in float32 and 32-bit counts fits. */
static bn_status check_fits(const char *path, const g2_writer *w)
{
    const bn_particles *p = w->p;
    BN_TRY(bn_check_float32(path, p));
    /* a file's largest block (POS: 12 bytes a particle, or 64-bit ids'
     * 8) must fit its 32-bit record markers */
    const size_t per_file = p->n / (size_t)w->n_files + 1;
    if (per_file > UINT32_MAX / 12)
        return bn_fail(BN_ERR_ARGUMENT, "writing %s: %zu particles a file do not fit GADGET-2's 32-bit record "
                       "lengths (at most %u a file: write more files)", path, per_file, UINT32_MAX / 12);
    return BN_OK;
}

/* File k's share: rows [N k / F, N (k + 1) / F) of the type order. */
static void place(g2_writer *w, int k)
{
    const size_t n = w->p->n, F = (size_t)w->n_files;
    w->first = n * (size_t)k / F;
    w->end = n * (size_t)(k + 1) / F;
    memset(w->npart, 0, sizeof w->npart);
    for (size_t i = w->first; i < w->end; i++) w->npart[bn_particles_part_type(w->p, w->order[i])]++;
}

static bn_status file_name(const char *path, int k, int n_files, char *name, size_t cap)
{
    if (snprintf(name, cap, n_files > 1 ? "%s.%d" : "%s", path, k) < (int)cap) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "%s: the name of file %d is too long", path, k);
}

/* Every file written under a temporary name first, then all renamed: a
 * failure leaves none of the set (nor a mix of old and new files). */
static bn_status write_files(const char *path, g2_writer *w)
{
    char name[4096];
    char **tmp = bn_calloc((size_t)w->n_files, sizeof *tmp, "temporary file names");
    if (!tmp) return BN_ERR_NOMEM;
    bn_status s = BN_OK;
    for (int k = 0; s == BN_OK && k < w->n_files; k++) {
        place(w, k);
        s = file_name(path, k, w->n_files, name, sizeof name);
        if (s == BN_OK) s = bn_binfile_write_tmp(name, fill_file, w, &tmp[k]);
    }
    for (int k = 0; k < w->n_files; k++) {
        if (s == BN_OK) s = file_name(path, k, w->n_files, name, sizeof name);
        if (s == BN_OK) s = bn_atomic_commit(tmp[k], name);
        else bn_atomic_abort(tmp[k]);
    }
    free(tmp);
    return s;
}

bn_status bn_gadget2_write(const char *path, const bn_particles *p, const bn_snapshot_meta *meta,
                           const bn_snapshot_write_options *o)
{
    g2_writer w = {.p = p, .meta = meta, .format2 = o->format == BN_FORMAT_GADGET2_F2,
                   .n_files = o->n_files > 1 ? o->n_files : 1, .o = {.big = o->big_endian}};
    if (w.n_files > BN_SNAPSHOT_MAX_FILES || (size_t)w.n_files > p->n)
        return bn_fail(BN_ERR_ARGUMENT, "writing %s: %d files for %zu particles (1 to min(n, %d))", path, w.n_files,
                       p->n, BN_SNAPSHOT_MAX_FILES);
    size_t *order = NULL;
    BN_TRY(bn_snapshot_type_order(p, &order, w.total));
    w.order = order;
    for (size_t i = 0; i < p->n; i++) w.wide_ids |= p->id[i] > UINT32_MAX;
    mass_table(&w);
    bn_status s = check_fits(path, &w);
    if (s == BN_OK) s = write_files(path, &w);
    free(order);
    return s;
}
