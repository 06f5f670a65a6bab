/* Inputs inspected while they are staged: see input_summary.h. */
#include "core/input_summary.h"
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/stream_store.h"

/* Work of one thread at a time: large enough that a parallel loop's
 * overhead vanishes, small enough to stay in L1 while inspected. */
#define STAGE_RUN 1024

bn_status bn_summary_init(bn_input_summary *s, size_t n)
{
    memset(s, 0, sizeof *s);
    s->n = s->first_bad = n;
    for (int k = 0; k < 3; k++) {
        s->lo[k] = INFINITY;
        s->hi[k] = -INFINITY;
    }
    const size_t nb = (n + BN_MASS_BLOCK - 1) / BN_MASS_BLOCK;
    s->part = bn_calloc(nb ? nb : 1, sizeof *s->part, "mass block sums");
    return s->part ? BN_OK : BN_ERR_NOMEM;
}

void bn_summary_finish(bn_input_summary *s)
{
    const size_t nb = (s->n + BN_MASS_BLOCK - 1) / BN_MASS_BLOCK;
    double m = 0.0;
    for (size_t b = 0; b < nb; b++) m += s->part[b];
    s->mass = m;
    bn_summary_free(s);
}

void bn_summary_free(bn_input_summary *s)
{
    free(s->part);
    s->part = NULL;
}

double bn_mass_block_sum(const double *m, size_t len)
{
    double s = 0.0;
    for (size_t i = 0; i < len; i++) s += m[i];
    return s;
}

void bn_stage_coords(double *dst, const double *src, size_t len, size_t off, int k, bn_input_summary *s)
{
    double lo = s->lo[k], hi = s->hi[k];
    size_t bad = s->first_bad;
    const long runs = (long)((len + STAGE_RUN - 1) / STAGE_RUN);
#pragma omp parallel for reduction(min : lo, bad) reduction(max : hi) schedule(static)
    for (long r = 0; r < runs; r++) {
        const size_t a = (size_t)r * STAGE_RUN, e = a + STAGE_RUN < len ? a + STAGE_RUN : len;
        if (dst) memcpy(dst + a, src + a, (e - a) * sizeof *src);
        double l = lo, h = hi;
        int finite = 1;
        for (size_t i = a; i < e; i++) {
            const double x = src[i];
            l = x < l ? x : l;
            h = x > h ? x : h;
            finite &= isfinite(x);
        }
        if (finite) {
            lo = l < lo ? l : lo;
            hi = h > hi ? h : hi;
            continue;
        }
        for (size_t i = a; i < e; i++)
            if (!isfinite(src[i]) && off + i < bad) {
                bad = off + i;
                break;
            }
    }
    s->lo[k] = lo;
    s->hi[k] = hi;
    s->first_bad = bad;
}

void bn_stage_masses(float *dst, const double *src, size_t len, size_t off, bn_input_summary *s)
{
    size_t bad = s->first_bad;
    const long blocks = (long)((len + BN_MASS_BLOCK - 1) / BN_MASS_BLOCK);
    double *part = s->part + off / BN_MASS_BLOCK;
#pragma omp parallel for reduction(min : bad) schedule(static)
    for (long b = 0; b < blocks; b++) {
        const size_t a = (size_t)b * BN_MASS_BLOCK, e = a + BN_MASS_BLOCK < len ? a + BN_MASS_BLOCK : len;
        part[b] = bn_mass_block_sum(src + a, e - a);
        for (size_t i = a; i < e; i++) {
            const double m = src[i];
            if (dst) dst[i] = (float)m;
            if (!(m >= 0.0 && m <= DBL_MAX) && off + i < bad) bad = off + i;
        }
    }
    s->first_bad = bad;
}

bn_status bn_summarize_particles(const bn_particles *p, bn_input_summary *s)
{
    BN_TRY(bn_summary_init(s, p->n));
    for (int k = 0; k < 3; k++) bn_stage_coords(NULL, p->pos[k], p->n, 0, k, s);
    bn_stage_masses(NULL, p->mass, p->n, 0, s);
    bn_summary_finish(s);
    return BN_OK;
}

void bn_unstage_floats(double *dst, const float *src, size_t len, size_t off, size_t *first_bad)
{
    size_t bad = *first_bad;
    const long runs = (long)((len + STAGE_RUN - 1) / STAGE_RUN);
#pragma omp parallel for reduction(min : bad) schedule(static)
    for (long r = 0; r < runs; r++) {
        const size_t a = (size_t)r * STAGE_RUN, e = a + STAGE_RUN < len ? a + STAGE_RUN : len;
        bn_stream_scaled_floats(dst + a, src + a, e - a, 1.0);
        for (size_t i = a; i < e; i++)
            if (!isfinite(src[i]) && off + i < bad) bad = off + i;
    }
    *first_bad = bad;
}
