/* Domains along the space-filling curve (banyan.h: bn_domain). Every rank
 * keys its particles in a cube common to all, sorts them, and offers
 * samples at equal steps of its weight; all ranks gather the samples and
 * cut the curve where the cumulative weight passes r W / P (the same cut
 * on every rank: the same samples in the same order); then each particle
 * goes to the rank whose key range holds it (one all-to-all), and every
 * rank sorts what it received by key. A rank with no particles takes
 * part as any other. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/input_summary.h"
#include "core/timer.h"
#include "core/trace.h"
#include "parallel/comm.h"
#include "parallel/domain_owner.h"
#include "parallel/domain_parts.h"
#include "tree/keys.h"
#include "tree/tree_cpu.h"

/* Samples per rank: enough that the cut is within a few 1/S of the ideal
 * share, few enough that the gather stays small at a thousand ranks. */
#define DOMAIN_SAMPLES_MAX 4096
#define DOMAIN_KEY_END (UINT64_C(1) << 63)

typedef struct {
    uint64_t key;
    double w;
} domain_sample;

/* A particle on its way to its rank: every field of bn_particles. */
typedef struct {
    double pos[3], vel[3], mass, acc[3], pot, w;
    uint64_t id, key;
    uint8_t type; /* part type (1 when the sender's set has none) */
    uint8_t tag;  /* bn_domain_update_tagged: a byte that travels along */
} domain_record;

static int samples_per_rank(int P)
{
    int s = 65536 / (P > 0 ? P : 1);
    return s < 64 ? 64 : s > DOMAIN_SAMPLES_MAX ? DOMAIN_SAMPLES_MAX : s;
}

/* The key cube of every rank's particles (the same lo and side on all):
 * each rank's range and first bad particle from one pass over its own
 * (input_summary.h), the ranges combined. */
static bn_status global_cube(const bn_comm *c, const bn_particles *p, double lo[3], double *side)
{
    bn_input_summary sum;
    bn_status s = bn_summarize_particles(p, &sum);
    if (s == BN_OK && sum.first_bad < p->n) s = bn_particles_fault(p, sum.first_bad, "domains");
    BN_TRY(bn_comm_agree(c, s));
    return bn_domain_cube(c, sum.lo, sum.hi, lo, side);
}

/* Keys of the local particles, sorted, with the permutation. */
static bn_status sorted_keys(const bn_particles *p, const bn_domain *d, uint64_t **keys, uint32_t **order)
{
    const size_t n = p->n;
    if (n > UINT32_MAX) return bn_fail(BN_ERR_ARGUMENT, "domains: %zu particles on one rank (at most %u)", n, UINT32_MAX);
    uint64_t *k = bn_alloc((2 * n + 1) * sizeof *k, "domain keys");
    uint32_t *o = bn_alloc((2 * n + 1) * sizeof *o, "domain keys");
    if (!k || !o) {
        free(k);
        free(o);
        return BN_ERR_NOMEM;
    }
    bn_tree_keys((const double *const *)p->pos, n, d->lo, d->side, d->curve, k);
    for (size_t i = 0; i < n; i++) o[i] = (uint32_t)i;
    const bn_status s = bn_tree_sort(n, k, o, k + n, o + n);
    *keys = k;
    *order = o;
    return s;
}

/* This rank's samples: every particle when it has few, else one at each
 * step W / S of the cumulative weight in key order, each carrying W / S.
 * order NULL: the keys' own order (w by sorted index). */
static domain_sample *local_samples(const uint64_t *key, const uint32_t *order, const double *w, size_t n, int S,
                                    size_t *ns)
{
    domain_sample *out = bn_alloc(((size_t)S < n ? (size_t)S : n) * sizeof *out + 1, "domain samples");
    *ns = 0;
    if (!out) return NULL;
    if (n <= (size_t)S) {
        for (size_t i = 0; i < n; i++) out[i] = (domain_sample){key[i], w ? w[order ? order[i] : i] : 1.0};
        *ns = n;
        return out;
    }
    double W = 0.0;
    for (size_t i = 0; i < n; i++) W += w ? w[order ? order[i] : i] : 1.0;
    const double step = W / S;
    double cum = 0.0;
    size_t j = 0;
    for (size_t i = 0; i < n && j < (size_t)S; i++) {
        cum += w ? w[order ? order[i] : i] : 1.0;
        while (j < (size_t)S && cum >= (j + 0.5) * step) out[j++] = (domain_sample){key[i], step};
    }
    *ns = j;
    return out;
}

static int by_key(const void *a, const void *b)
{
    const domain_sample *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* The cut: split[r] is the first sample key whose middle lies at or
 * beyond the cumulative weight r W / P (the cut nearest the ideal share).
 * Samples of one key are one unit: a key never straddles two ranks. */
static void cut_curve(domain_sample *s, size_t ns, bn_domain *d)
{
    const int P = d->nranks;
    /* qsort is not stable, but samples of one key are taken together */
    qsort(s, ns, sizeof *s, by_key);
    double W = 0.0;
    for (size_t i = 0; i < ns; i++) W += s[i].w;
    d->split[0] = 0;
    int r = 1;
    double cum = 0.0;
    for (size_t i = 0; i < ns && r < P;) {
        size_t e = i;
        double gw = 0.0;
        for (; e < ns && s[e].key == s[i].key; e++) gw += s[e].w;
        while (r < P && cum + 0.5 * gw >= W * r / P) d->split[r++] = s[i].key;
        cum += gw;
        i = e;
    }
    while (r <= P) d->split[r++] = DOMAIN_KEY_END;
}

/* The rank whose range holds key (split ascending, split[0] = 0). */
static int owner(const bn_domain *d, uint64_t key) { return bn_domain_owner(d->split, d->nranks, key); }

/* Record x into particle slot i (forces and types where the set keeps
 * them): fill_record's inverse. */
static void read_record(const domain_record *x, int forces, int types, bn_particles *p, size_t i)
{
    for (int k = 0; k < 3; k++) {
        p->pos[k][i] = x->pos[k];
        p->vel[k][i] = x->vel[k];
        if (forces) p->acc[k][i] = x->acc[k];
    }
    p->mass[i] = x->mass;
    if (forces) p->pot[i] = x->pot;
    p->id[i] = x->id;
    if (types) p->type[i] = x->type;
}

/* Record i of the particles. */
static void fill_record(const bn_particles *p, const double *w, size_t i, uint64_t key, domain_record *x)
{
    memset(x, 0, sizeof *x);
    for (int k = 0; k < 3; k++) {
        x->pos[k] = p->pos[k][i];
        x->vel[k] = p->vel[k][i];
        x->acc[k] = p->acc[k] ? p->acc[k][i] : 0.0;
    }
    x->mass = p->mass[i];
    x->pot = p->pot ? p->pot[i] : 0.0;
    x->w = w ? w[i] : 1.0;
    x->id = p->id[i];
    x->type = (uint8_t)bn_particles_part_type(p, i);
    x->key = key;
}

/* Records to their ranks' groups, each group in the particles' own order:
 * every thread counts its contiguous chunk, the chunks' places follow in
 * thread order within each group (a stable counting sort: the same
 * records in the same places at any thread count). tc: counts[P] for
 * each of the threads there may be. */
static void scatter_records(const bn_particles *p, const double *w, const int *own, const uint64_t *key_of, int P,
                            size_t *tc, domain_record *r)
{
    const size_t n = p->n;
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), me = omp_get_thread_num();
        const size_t i0 = n * (size_t)me / (size_t)nt, i1 = n * (size_t)(me + 1) / (size_t)nt;
        size_t *mine = tc + (size_t)me * (size_t)P;
        for (int q = 0; q < P; q++) mine[q] = 0;
        for (size_t i = i0; i < i1; i++) mine[own[i]]++;
#pragma omp barrier
#pragma omp single
        {
            size_t sum = 0;
            for (int q = 0; q < P; q++)
                for (int t = 0; t < nt; t++) {
                    const size_t c = tc[(size_t)t * (size_t)P + (size_t)q];
                    tc[(size_t)t * (size_t)P + (size_t)q] = sum;
                    sum += c;
                }
        }
        for (size_t i = i0; i < i1; i++) fill_record(p, w, i, key_of[i], r + mine[own[i]]++);
    }
}

/* The local particles as records grouped by destination rank, each
 * group in the particles' own order, with counts per rank. The receiver
 * sorts by key, stably (senders in rank order, each in its order): ties
 * of equal keys come out by original index as when the groups were in
 * key order (the radix sort is stable too), so the same particles in the
 * same order. Reading the particles in their own order, not in key
 * order, keeps the reads sequential: in key order every read missed the
 * cache (2^25 particles per rank took 15-30 s on the GPU machines,
 * BENCHMARKS.md session 19). */
static domain_record *pack(const bn_particles *p, const double *w, const uint64_t *key, const uint32_t *order,
                           const bn_domain *d, size_t *counts)
{
    const size_t n = p->n;
    const int P = d->nranks;
    domain_record *r = bn_alloc(n * sizeof *r + 1, "particles to send");
    int *own = bn_alloc(n * sizeof *own + 1, "particles to send");
    uint64_t *key_of = bn_alloc(n * sizeof *key_of + 1, "particles to send");
    size_t *tc = bn_alloc((size_t)omp_get_max_threads() * (size_t)P * sizeof *tc, "particles to send");
    if (!r || !own || !key_of || !tc) {
        free(r);
        r = NULL;
    } else {
        memset(counts, 0, (size_t)P * sizeof *counts);
        for (size_t j = 0; j < n; j++) { /* keys in order: the owners ascend */
            const int o = owner(d, key[j]);
            own[order[j]] = o;
            key_of[order[j]] = key[j];
            counts[o]++;
        }
        scatter_records(p, w, own, key_of, P, tc, r);
    }
    free(own);
    free(key_of);
    free(tc);
    return r;
}

/* The received records into p, sorted by key (stable: senders in rank
 * order, each in key order). *weight gets their weight, summed in order. */
static bn_status unpack(bn_particles *p, const domain_record *r, size_t n, int forces, int types, double *weight)
{
    uint64_t *k = bn_alloc((2 * n + 1) * sizeof *k, "received keys");
    uint32_t *o = bn_alloc((2 * n + 1) * sizeof *o, "received keys");
    double *w = bn_alloc((n + 1) * sizeof *w, "received weights");
    bn_status s = k && o && w ? BN_OK : BN_ERR_NOMEM;
    for (size_t i = 0; s == BN_OK && i < n; i++) {
        k[i] = r[i].key;
        o[i] = (uint32_t)i;
    }
    if (s == BN_OK) s = bn_tree_sort(n, k, o, k + n, o + n);
    if (s == BN_OK) s = bn_particles_resize(p, n);
    if (s == BN_OK && forces) s = bn_particles_ensure_forces(p);
    if (s == BN_OK && types) s = bn_particles_ensure_types(p);
    /* records read in key order (random): threads overlap the misses */
    const long todo = s == BN_OK ? (long)n : 0;
#pragma omp parallel for schedule(static)
    for (long jj = 0; jj < todo; jj++) {
        const size_t j = (size_t)jj;
        const domain_record *x = r + o[j];
        read_record(x, forces, types, p, j);
        w[j] = x->w;
    }
    double W = 0.0; /* in key order, one thread: the same sum at any thread count */
    for (size_t j = 0; s == BN_OK && j < n; j++) W += w[j];
    *weight = W;
    free(k);
    free(o);
    free(w);
    return s;
}

/* The cut from the samples of every rank. */
static bn_status cut_from_samples(const bn_comm *c, const uint64_t *key, const uint32_t *order, const double *w,
                                  size_t n, bn_domain *d)
{
    size_t ns = 0, total = 0;
    domain_sample *mine = local_samples(key, order, w, n, samples_per_rank(d->nranks), &ns);
    void *all = NULL;
    bn_status s = bn_comm_agree(c, mine ? BN_OK : BN_ERR_NOMEM);
    if (s == BN_OK) s = bn_comm_gather(c, -1, mine, ns, sizeof *mine, &all, &total, NULL);
    if (s == BN_OK) cut_curve(all, total, d);
    free(mine);
    free(all);
    return s;
}

/* Every rank's weight W after the exchange: the largest and the mean
 * (summed in rank order). */
static bn_status weight_shares(const bn_comm *c, double W, bn_domain_stats *st)
{
    void *all = NULL;
    size_t n = 0;
    BN_TRY(bn_comm_gather(c, -1, &W, 1, sizeof W, &all, &n, NULL));
    const double *v = all;
    double sum = 0.0;
    st->weight_max = 0.0;
    for (size_t r = 0; r < n; r++) {
        st->weight_max = fmax(st->weight_max, v[r]);
        sum += v[r];
    }
    st->weight_mean = sum / (double)n;
    st->imbalance = st->weight_mean > 0 ? st->weight_max / st->weight_mean : 1.0;
    free(all);
    return BN_OK;
}

static bn_status exchange(const bn_comm *c, bn_particles *p, const double *w, const uint64_t *key,
                          const uint32_t *order, const bn_domain *d, bn_domain_stats *st)
{
    const int P = d->nranks;
    double t = bn_wall_seconds();
    size_t *cnt = bn_alloc(2 * (size_t)P * sizeof *cnt, "exchange counts");
    domain_record *out = cnt ? pack(p, w, key, order, d, cnt) : NULL;
    bn_trace_stage("domains: packed", &t);
    bn_status s = bn_comm_agree(c, out ? BN_OK : BN_ERR_NOMEM);
    /* forces travel only when every rank has them */
    double forces = p->acc[0] && p->pot ? 1.0 : 0.0;
    if (s == BN_OK) s = bn_comm_allreduce(c, &forces, 1, BN_REDUCE_MIN);
    /* types on every rank when some rank has them (a rank's PartType1
     * particles may go to one that holds other types) */
    double types = p->type ? 1.0 : 0.0;
    if (s == BN_OK) s = bn_comm_allreduce(c, &types, 1, BN_REDUCE_MAX);
    void *in = NULL;
    size_t n_in = 0;
    if (s == BN_OK) s = bn_comm_alltoallv(c, out, cnt, sizeof *out, &in, cnt + P, &n_in);
    free(out);
    bn_trace_stage("domains: all-to-all", &t);
    double W = 0.0;
    if (s == BN_OK) s = bn_comm_agree(c, unpack(p, in, n_in, forces > 0, types > 0, &W));
    free(in);
    bn_trace_stage("domains: unpacked", &t);
    if (s == BN_OK) {
        const int me = bn_comm_rank(c);
        st->sent = st->received = 0;
        for (int r = 0; r < P; r++) {
            if (r == me) continue;
            st->sent += cnt[r];
            st->received += cnt[P + r];
        }
        st->weight_local = W;
        s = weight_shares(c, W, st);
    }
    free(cnt);
    return s;
}

static bn_status check_weights(const bn_particles *p, const double *w, double *sum)
{
    *sum = 0.0;
    for (size_t i = 0; w && i < p->n; i++) {
        if (!(w[i] >= 0 && isfinite(w[i])))
            return bn_fail(BN_ERR_ARGUMENT, "domains: particle %zu (id %llu) has weight %g (must be finite and >= 0)", i,
                           (unsigned long long)p->id[i], w[i]);
        *sum += w[i];
    }
    return BN_OK;
}

/* The weights to cut by: w, or 1 each where every rank's add up to 0
 * (no cost measured yet: the cut would otherwise put every particle on
 * the last rank). */
static bn_status usable_weights(const bn_comm *c, const bn_particles *p, const double **w)
{
    double W = 0.0;
    BN_TRY(bn_comm_agree(c, check_weights(p, *w, &W)));
    if (!*w) return BN_OK;
    BN_TRY(bn_comm_allreduce(c, &W, 1, BN_REDUCE_SUM));
    if (!(W > 0)) *w = NULL;
    return BN_OK;
}

bn_status bn_domain_decompose(const bn_comm *c, bn_particles *p, const double *w, bn_curve curve, bn_domain *d,
                              bn_domain_stats *st)
{
    if (!c || !p || !d) return bn_fail(BN_ERR_ARGUMENT, "bn_domain_decompose: NULL argument");
    const double t0 = bn_wall_seconds();
    bn_domain_stats local_st;
    if (!st) st = &local_st;
    memset(st, 0, sizeof *st);
    memset(d, 0, sizeof *d);
    d->nranks = bn_comm_size(c);
    d->curve = curve;
    d->split = bn_alloc(((size_t)d->nranks + 1) * sizeof *d->split, "domain bounds");
    /* each step ends agreed (the same s on every rank), so that every
     * rank takes the same collectives */
    bn_status s = bn_comm_agree(c, d->split ? BN_OK : BN_ERR_NOMEM);
    double t = t0; /* BANYAN_GRAVITY_TRACE=1: each part's time */
    if (s == BN_OK) s = usable_weights(c, p, &w);
    if (s == BN_OK) s = global_cube(c, p, d->lo, &d->side);
    bn_trace_stage("domains: weights and cube", &t);
    uint64_t *key = NULL;
    uint32_t *order = NULL;
    if (s == BN_OK) s = bn_comm_agree(c, sorted_keys(p, d, &key, &order));
    bn_trace_stage("domains: keys sorted", &t);
    if (s == BN_OK) s = cut_from_samples(c, key, order, w, p->n, d);
    bn_trace_stage("domains: cut", &t);
    if (s == BN_OK) s = exchange(c, p, w, key, order, d, st);
    bn_trace_stage("domains: particles exchanged", &t);
    free(key);
    free(order);
    if (s != BN_OK) bn_domain_release(d);
    st->t_total = bn_wall_seconds() - t0;
    return s;
}

/* Particle i's fields into slot m (a compaction). */
static void move_particle(bn_particles *p, size_t m, size_t i)
{
    for (int k = 0; k < 3; k++) {
        p->pos[k][m] = p->pos[k][i];
        p->vel[k][m] = p->vel[k][i];
        if (p->acc[k]) p->acc[k][m] = p->acc[k][i];
    }
    p->mass[m] = p->mass[i];
    p->id[m] = p->id[i];
    if (p->pot) p->pot[m] = p->pot[i];
    if (p->type) p->type[m] = p->type[i];
}

/* The particles whose keys (own, in d's cube) left this rank's part of
 * the cut, as records grouped by destination (each group in the
 * particles' order, counts[P]); the others compacted in place, in their
 * order. *kept: the weight that stays. */
static domain_record *take_leavers(bn_particles *p, double *w, uint8_t *tag, const bn_domain *d, int me,
                                   size_t *counts, size_t *k, double *kept)
{
    const size_t n = p->n;
    const int P = d->nranks;
    uint64_t *key = bn_alloc((n + 1) * sizeof *key, "domain keys");
    int *own = bn_alloc((n + 1) * sizeof *own, "domain keys");
    size_t *at = bn_alloc(((size_t)P + 1) * sizeof *at, "domain keys");
    domain_record *r = NULL;
    *k = 0;
    *kept = 0.0;
    memset(counts, 0, (size_t)P * sizeof *counts);
    if (key && own && at) {
        bn_tree_keys((const double *const *)p->pos, n, d->lo, d->side, d->curve, key);
        for (size_t i = 0; i < n; i++) {
            own[i] = owner(d, key[i]);
            if (own[i] != me) counts[own[i]]++, (*k)++;
        }
        r = bn_alloc((*k + 1) * sizeof *r, "particles to send");
    }
    if (r) {
        at[0] = 0;
        for (int q = 0; q < P; q++) at[q + 1] = at[q] + (q == me ? 0 : counts[q]);
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (own[i] != me) {
                domain_record *x = r + at[own[i]]++;
                fill_record(p, w, i, key[i], x);
                x->tag = tag ? tag[i] : 0;
                continue;
            }
            *kept += w ? w[i] : 1.0;
            if (m != i) move_particle(p, m, i); /* stable: m < i */
            if (tag) tag[m] = tag[i];
            if (w) w[m] = w[i]; /* the weights travel too (bn_domain_update_tagged's carry) */
            m++;
        }
        p->n = m;
    }
    free(key);
    free(own);
    free(at);
    return r;
}

/* The received records after the particles (forces and types as agreed:
 * every rank keeps them, or none). *W: their weight. */
static bn_status append_records(bn_particles *p, uint8_t **tag, double **carry, const domain_record *r, size_t n,
                                int forces, int types, double *W)
{
    const size_t first = p->n;
    if (carry) {
        double *c = realloc(*carry, (first + n + 1) * sizeof *c);
        if (!c) return bn_fail(BN_ERR_NOMEM, "domains: room for %zu weights", first + n);
        *carry = c;
        for (size_t j = 0; j < n; j++) c[first + j] = r[j].w;
    }
    if (tag) {
        uint8_t *t = realloc(*tag, first + n + 1);
        if (!t) return bn_fail(BN_ERR_NOMEM, "domains: room for %zu tags", first + n);
        *tag = t;
        for (size_t j = 0; j < n; j++) t[first + j] = r[j].tag;
    }
    BN_TRY(bn_particles_resize(p, first + n));
    if (forces) BN_TRY(bn_particles_ensure_forces(p));
    if (types) BN_TRY(bn_particles_ensure_types(p));
    *W = 0.0;
    for (size_t j = 0; j < n; j++) {
        read_record(r + j, forces, types, p, first + j);
        *W += r[j].w;
    }
    return BN_OK;
}

bn_status bn_domain_update(const bn_comm *c, bn_particles *p, const double *w, const bn_domain *d,
                           bn_domain_stats *st)
{
    double *copy = NULL; /* the weights move with their particles: a copy (w is the caller's) */
    if (w) {
        copy = bn_alloc((p->n + 1) * sizeof *copy, "domain weights");
        if (copy) memcpy(copy, w, p->n * sizeof *copy);
    }
    bn_status s = bn_comm_agree(c, !w || copy ? BN_OK : BN_ERR_NOMEM);
    if (s == BN_OK) s = bn_domain_update_tagged(c, p, w ? &copy : NULL, NULL, d, st);
    free(copy);
    return s;
}

bn_status bn_domain_update_tagged(const bn_comm *c, bn_particles *p, double **carry, uint8_t **tag,
                                  const bn_domain *d, bn_domain_stats *st)
{
    if (!c || !p || !d) return bn_fail(BN_ERR_ARGUMENT, "bn_domain_update: NULL argument");
    if (!d->split || d->nranks != bn_comm_size(c))
        return bn_fail(BN_ERR_ARGUMENT, "bn_domain_update: the cut is for %d ranks, there are %d", d->split ? d->nranks : 0,
                       bn_comm_size(c));
    const double t0 = bn_wall_seconds();
    bn_domain_stats local_st;
    if (!st) st = &local_st;
    memset(st, 0, sizeof *st);
    const int P = d->nranks;
    double *w = carry ? *carry : NULL; /* compacted in place, the received appended */
    const double *checked = w;
    bn_status s = usable_weights(c, p, &checked); /* finite and >= 0 (agreed) */
    /* forces travel only when every rank has them, types to every rank
     * when some rank has them (as exchange()) */
    double flags[2] = {p->acc[0] && p->pot ? 1.0 : 0.0, p->type ? 1.0 : 0.0};
    if (s == BN_OK) s = bn_comm_allreduce(c, flags, 1, BN_REDUCE_MIN);
    if (s == BN_OK) s = bn_comm_allreduce(c, flags + 1, 1, BN_REDUCE_MAX);
    size_t *cnt = bn_alloc(2 * (size_t)P * sizeof *cnt, "exchange counts"), k = 0;
    double kept = 0.0, got = 0.0;
    domain_record *out = NULL;
    if (s == BN_OK) {
        out = cnt ? take_leavers(p, w, tag ? *tag : NULL, d, bn_comm_rank(c), cnt, &k, &kept) : NULL;
        s = bn_comm_agree(c, out ? BN_OK : BN_ERR_NOMEM);
    }
    void *in = NULL;
    size_t n_in = 0;
    if (s == BN_OK) s = bn_comm_alltoallv(c, out, cnt, sizeof *out, &in, cnt + P, &n_in);
    if (s == BN_OK) s = bn_comm_agree(c, append_records(p, tag, carry, in, n_in, flags[0] > 0, flags[1] > 0, &got));
    if (s == BN_OK) {
        st->sent = k;
        st->received = n_in;
        s = weight_shares(c, kept + got, st);
        st->weight_local = kept + got;
    }
    free(out);
    free(in);
    free(cnt);
    st->t_total = bn_wall_seconds() - t0;
    return s;
}

bn_status bn_domain_copy(const bn_domain *from, bn_domain *to)
{
    memset(to, 0, sizeof *to);
    if (!from->split) return BN_OK;
    to->split = bn_alloc(((size_t)from->nranks + 1) * sizeof *to->split, "domain bounds");
    if (!to->split) return BN_ERR_NOMEM;
    memcpy(to->split, from->split, ((size_t)from->nranks + 1) * sizeof *to->split);
    to->nranks = from->nranks;
    memcpy(to->lo, from->lo, sizeof to->lo);
    to->side = from->side;
    to->curve = from->curve;
    return BN_OK;
}

void bn_domain_release(bn_domain *d)
{
    if (!d) return;
    free(d->split);
    d->split = NULL;
}

/* ---- the parts, for a backend whose particles live elsewhere ---- */

bn_status bn_domain_prepare(const bn_comm *c, const double lo[3], const double hi[3], bn_curve curve, bn_domain *d)
{
    memset(d, 0, sizeof *d);
    d->nranks = bn_comm_size(c);
    d->curve = curve;
    d->split = bn_alloc(((size_t)d->nranks + 1) * sizeof *d->split, "domain bounds");
    BN_TRY(bn_comm_agree(c, d->split ? BN_OK : BN_ERR_NOMEM));
    return bn_domain_cube(c, lo, hi, d->lo, &d->side);
}

bn_status bn_domain_cube(const bn_comm *c, const double lo[3], const double hi[3], double cube_lo[3], double *side)
{
    double l[3], h[3];
    memcpy(l, lo, sizeof l);
    memcpy(h, hi, sizeof h);
    BN_TRY(bn_comm_reduce_box(c, l, h));
    if (!(l[0] <= h[0])) return bn_fail(BN_ERR_ARGUMENT, "domains: no rank holds a particle");
    *side = bn_key_cube(l, h, cube_lo);
    if (!isfinite(*side))
        return bn_fail(BN_ERR_ARGUMENT, "domains: the particles span too much for keys (%g to %g in x)", l[0], h[0]);
    return BN_OK;
}

bn_status bn_domain_cut_sorted(const bn_comm *c, const uint64_t *key, const double *w, size_t n, bn_domain *d)
{
    return cut_from_samples(c, key, NULL, w, n, d);
}

void bn_domain_counts(const bn_domain *d, const uint64_t *key, size_t n, size_t *counts)
{
    memset(counts, 0, (size_t)d->nranks * sizeof *counts);
    for (size_t i = 0; i < n; i++) counts[owner(d, key[i])]++;
}

bn_status bn_domain_shares(const bn_comm *c, double W, bn_domain_stats *st)
{
    st->weight_local = W;
    return weight_shares(c, W, st);
}
