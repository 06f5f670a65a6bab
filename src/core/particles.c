#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "core/input_summary.h"
#include "core/particles_remake.h"

/* One array of a set: its element size, whether every set has it (else
 * it is made on demand, NULL until then) and its name. */
typedef struct {
    void **arr;
    size_t size;
    int always;
    const char *what;
} particle_array;

enum { PARTICLE_ARRAYS = 13 };

/* The set's arrays: the one list that growing, remaking and releasing
 * go through. */
static void particle_arrays(bn_particles *p, particle_array a[PARTICLE_ARRAYS])
{
    int n = 0;
    for (int k = 0; k < 3; k++) {
        a[n++] = (particle_array){(void **)&p->pos[k], sizeof(double), 1, "positions"};
        a[n++] = (particle_array){(void **)&p->vel[k], sizeof(double), 1, "velocities"};
        a[n++] = (particle_array){(void **)&p->acc[k], sizeof(double), 0, "accelerations"};
    }
    a[n++] = (particle_array){(void **)&p->mass, sizeof(double), 1, "masses"};
    a[n++] = (particle_array){(void **)&p->id, sizeof(uint64_t), 1, "ids"};
    a[n++] = (particle_array){(void **)&p->pot, sizeof(double), 0, "potentials"};
    a[n++] = (particle_array){(void **)&p->type, 1, 0, "part types"};
    assert(n == PARTICLE_ARRAYS);
}

static void particles_release_arrays(bn_particles *p)
{
    particle_array a[PARTICLE_ARRAYS];
    particle_arrays(p, a);
    for (int i = 0; i < PARTICLE_ARRAYS; i++) {
        free(*a[i].arr);
        *a[i].arr = NULL;
    }
}

/* Grow one array to `cap` elements of `size` bytes, zeroing the new tail. */
static bn_status grow(void **arr, size_t old_n, size_t cap, size_t size, const char *what)
{
    size_t bytes;
    if (__builtin_mul_overflow(cap ? cap : 1, size, &bytes))
        return bn_fail(BN_ERR_NOMEM, "cannot allocate %zu particles (%s): the size overflows", cap, what);
    void *q = realloc(*arr, bytes);
    if (!q) return bn_fail(BN_ERR_NOMEM, "cannot allocate %zu particles (%s)", cap, what);
    if (cap > old_n) memset((char *)q + old_n * size, 0, (cap - old_n) * size);
    *arr = q;
    return BN_OK;
}

bn_status bn_particles_create(bn_particles **out, size_t n)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_particles_create: out is NULL");
    *out = NULL;
    bn_particles *p = bn_calloc(1, sizeof *p, "particle set");
    if (!p) return BN_ERR_NOMEM;
    bn_status s = bn_particles_resize(p, n);
    if (s != BN_OK) {
        bn_particles_free(p);
        return s;
    }
    *out = p;
    return BN_OK;
}

void bn_particles_free(bn_particles *p)
{
    if (!p) return;
    particles_release_arrays(p);
    free(p);
}

/* Bytes of one particle: position, velocity, mass, id, and acceleration
 * and potential when the set holds forces. */
static size_t particle_bytes(const bn_particles *p)
{
    return 7 * sizeof(double) + sizeof(uint64_t) + (p->acc[0] ? 4 * sizeof(double) : 0) + (p->type ? 1 : 0);
}

bn_status bn_particles_resize(bn_particles *p, size_t n)
{
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "bn_particles_resize: particle set is NULL");
    if (n > p->capacity) {
        /* a count from a file or an option: never attempted when it cannot fit */
        BN_TRY(bn_check_count(n, particle_bytes(p), "particles"));
        particle_array a[PARTICLE_ARRAYS];
        particle_arrays(p, a);
        for (int i = 0; i < PARTICLE_ARRAYS; i++)
            if (a[i].always || *a[i].arr) BN_TRY(grow(a[i].arr, p->capacity, n, a[i].size, a[i].what));
        p->capacity = n;
    }
    /* added particles are PartType1, as in a set without types */
    if (p->type && n > p->n) memset(p->type + p->n, 1, n - p->n);
    p->n = n;
    return BN_OK;
}

bn_status bn_particles_remake(bn_particles *p, size_t n)
{
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "bn_particles_remake: particle set is NULL");
    if (n > p->capacity) {
        BN_TRY(bn_check_count(n, particle_bytes(p), "particles"));
        p->capacity = 0; /* until every array is remade */
        p->n = 0;
        particle_array a[PARTICLE_ARRAYS];
        particle_arrays(p, a);
        for (int i = 0; i < PARTICLE_ARRAYS; i++) {
            if (!a[i].always && !*a[i].arr) continue; /* an optional array the set has not made */
            free(*a[i].arr); /* remade, not grown: nothing copied; calloc's large blocks are the
                                kernel's zero pages, made as they are first written */
            *a[i].arr = calloc(n, a[i].size);
            if (!*a[i].arr) { /* an empty set without arrays, not one with some of its forces */
                particles_release_arrays(p);
                return bn_fail(BN_ERR_NOMEM, "cannot allocate %zu particles (%s)", n, a[i].what);
            }
        }
        p->capacity = n;
    }
    if (p->type && n > p->n) memset(p->type + p->n, 1, n - p->n); /* PartType1, as bn_particles_resize */
    p->n = n;
    return BN_OK;
}

bn_status bn_particles_ensure_types(bn_particles *p)
{
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "bn_particles_ensure_types: particle set is NULL");
    if (p->type) return BN_OK;
    BN_TRY(grow((void **)&p->type, 0, p->capacity, 1, "part types"));
    memset(p->type, 1, p->capacity);
    return BN_OK;
}

int bn_particles_part_type(const bn_particles *p, size_t i) { return p->type ? p->type[i] : 1; }

/* GADGET's convention for galaxies (and the order banyan ic galaxy
 * writes): dark matter halo PartType1, disk 2, bulge 3. */
static const char *const part_type_names[BN_PART_TYPES] = {"type0", "halo", "disk", "bulge", "type4", "type5"};

const char *bn_part_type_name(int type)
{
    return type >= 0 && type < BN_PART_TYPES ? part_type_names[type] : NULL;
}

int bn_part_type_from_name(const char *name)
{
    for (int t = 0; name && t < BN_PART_TYPES; t++)
        if (strcmp(name, part_type_names[t]) == 0) return t;
    return -1;
}

bn_status bn_particles_ensure_forces(bn_particles *p)
{
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "bn_particles_ensure_forces: particle set is NULL");
    if (!p->acc[0]) BN_TRY(bn_check_count(p->capacity, particle_bytes(p) + 4 * sizeof(double), "particles with forces"));
    for (int k = 0; k < 3; k++)
        if (!p->acc[k]) BN_TRY(grow((void **)&p->acc[k], 0, p->capacity, sizeof(double), "accelerations"));
    if (!p->pot) BN_TRY(grow((void **)&p->pot, 0, p->capacity, sizeof(double), "potentials"));
    return BN_OK;
}

bn_status bn_particles_copy(bn_particles **out, const bn_particles *src)
{
    if (!src) return bn_fail(BN_ERR_ARGUMENT, "bn_particles_copy: source is NULL");
    BN_TRY(bn_particles_create(out, src->n));
    bn_particles *p = *out;
    size_t nb = src->n * sizeof(double);
    for (int k = 0; k < 3; k++) {
        if (nb) memcpy(p->pos[k], src->pos[k], nb);
        if (nb) memcpy(p->vel[k], src->vel[k], nb);
    }
    if (nb) memcpy(p->mass, src->mass, nb);
    if (src->n) memcpy(p->id, src->id, src->n * sizeof(uint64_t));
    bn_status s = src->type ? bn_particles_ensure_types(p) : BN_OK;
    if (s == BN_OK && src->type && src->n) memcpy(p->type, src->type, src->n);
    if (s == BN_OK && src->acc[0] && src->pot) s = bn_particles_ensure_forces(p);
    if (s != BN_OK) {
        bn_particles_free(p);
        *out = NULL;
        return s;
    }
    if (src->acc[0] && src->pot) {
        for (int k = 0; k < 3; k++)
            if (nb) memcpy(p->acc[k], src->acc[k], nb);
        if (nb) memcpy(p->pot, src->pot, nb);
    }
    return BN_OK;
}

/* Blocks of a fixed size summed in parallel, then the block sums in
 * order: the same bits at any thread count, and fast at 2^24 (a serial
 * sum took 15 ms, three times per force call); the same blocks as a
 * force call's staging pass (input_summary.h), so the same bits too. */
double bn_particles_total_mass(const bn_particles *p)
{
    const size_t nb = (p->n + BN_MASS_BLOCK - 1) / BN_MASS_BLOCK;
    if (nb <= 1) return bn_mass_block_sum(p->mass, p->n);
    double *part = malloc(nb * sizeof *part);
    if (!part) { /* no memory for the parts: the same order serially */
        double m = 0.0;
        for (size_t b = 0; b < nb; b++) {
            const size_t a = b * BN_MASS_BLOCK;
            m += bn_mass_block_sum(p->mass + a, p->n - a < BN_MASS_BLOCK ? p->n - a : BN_MASS_BLOCK);
        }
        return m;
    }
#pragma omp parallel for schedule(static)
    for (long b = 0; b < (long)nb; b++) {
        const size_t a = (size_t)b * BN_MASS_BLOCK;
        part[b] = bn_mass_block_sum(p->mass + a, p->n - a < BN_MASS_BLOCK ? p->n - a : BN_MASS_BLOCK);
    }
    double m = 0.0;
    for (size_t b = 0; b < nb; b++) m += part[b];
    free(part);
    return m;
}

void bn_particles_centre_of_mass(const bn_particles *p, double com[3])
{
    const double m = bn_particles_total_mass(p);
    for (int k = 0; k < 3; k++) com[k] = 0.0;
    if (!(m > 0.0)) return;
    /* sum (m_i / M) x_i: partial sums of a convex combination never
     * exceed max |x| (sum m_i x_i overflows for masses of 1e300) */
    for (size_t i = 0; i < p->n; i++) {
        const double w = p->mass[i] / m;
        for (int k = 0; k < 3; k++) com[k] += w * p->pos[k][i];
    }
}

bn_status bn_particles_fault(const bn_particles *p, size_t i, const char *what)
{
    static const char *axis = "xyz";
    for (int k = 0; k < 3; k++)
        if (!isfinite(p->pos[k][i]))
            return bn_fail(BN_ERR_ARGUMENT, "%s: particle %zu (id %llu) has a non-finite %c coordinate (%g)", what, i,
                           (unsigned long long)p->id[i], axis[k], p->pos[k][i]);
    if (!isfinite(p->mass[i]) || p->mass[i] < 0.0)
        return bn_fail(BN_ERR_ARGUMENT, "%s: particle %zu (id %llu) has mass %g (must be finite and >= 0)", what, i,
                       (unsigned long long)p->id[i], p->mass[i]);
    for (int k = 0; k < 3; k++)
        if (p->vel[k] && !isfinite(p->vel[k][i]))
            return bn_fail(BN_ERR_ARGUMENT, "%s: particle %zu (id %llu) has a non-finite %c velocity (%g)", what, i,
                           (unsigned long long)p->id[i], axis[k], p->vel[k][i]);
    if (p->type && p->type[i] >= BN_PART_TYPES)
        return bn_fail(BN_ERR_ARGUMENT, "%s: particle %zu (id %llu) has part type %d (GADGET's are 0 to %d)", what, i,
                       (unsigned long long)p->id[i], p->type[i], BN_PART_TYPES - 1);
    return BN_OK;
}

bn_status bn_particles_validate(const bn_particles *p, const char *what)
{
    if (!what) what = "particles";
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "%s: particle set is NULL", what);
    if (p->n == 0) return bn_fail(BN_ERR_ARGUMENT, "%s: no particles", what);
    /* the first bad particle, found in parallel; its message made below */
    size_t first = p->n;
#pragma omp parallel for reduction(min : first) schedule(static)
    for (long j = 0; j < (long)p->n; j++) {
        const size_t i = (size_t)j;
        int bad = !isfinite(p->mass[i]) || p->mass[i] < 0.0 || (p->type && p->type[i] >= BN_PART_TYPES);
        for (int k = 0; k < 3; k++) bad |= !isfinite(p->pos[k][i]) || !isfinite(p->vel[k][i]);
        if (bad && i < first) first = i;
    }
    if (first < p->n) return bn_particles_fault(p, first, what);
    double m = bn_particles_total_mass(p);
    if (!(m > 0.0 && isfinite(m)))
        return bn_fail(BN_ERR_ARGUMENT, "%s: total mass is %g (must be finite and > 0)", what, m);
    return BN_OK;
}

bn_status bn_particles_forces_fault(const bn_particles *p, size_t i, const char *what)
{
    static const char *axis = "xyz";
    for (int k = 0; k < 3; k++)
        if (!isfinite(p->acc[k][i]))
            return bn_fail(BN_ERR_ARGUMENT, "%s: particle %zu (id %llu) has a non-finite %c acceleration (%g)", what, i,
                           (unsigned long long)p->id[i], axis[k], p->acc[k][i]);
    if (p->pot && !isfinite(p->pot[i]))
        return bn_fail(BN_ERR_ARGUMENT, "%s: particle %zu (id %llu) has a non-finite potential (%g)", what, i,
                       (unsigned long long)p->id[i], p->pot[i]);
    return BN_OK;
}

size_t bn_particles_forces_first_bad(const bn_particles *p)
{
    size_t first = p->n;
#pragma omp parallel for reduction(min : first) schedule(static)
    for (long j = 0; j < (long)p->n; j++) {
        const size_t i = (size_t)j;
        int bad = p->pot && !isfinite(p->pot[i]);
        for (int k = 0; k < 3; k++) bad |= !isfinite(p->acc[k][i]);
        if (bad && i < first) first = i;
    }
    return first;
}

bn_status bn_particles_check_forces(const bn_particles *p, const char *what)
{
    if (!p || !p->acc[0]) return BN_OK;
    const size_t first = bn_particles_forces_first_bad(p);
    return first < p->n ? bn_particles_forces_fault(p, first, what) : BN_OK;
}

/* One pass of an LSD radix sort on 11-bit digits at `shift`. */
static void radix_pass(const uint64_t *in, uint64_t *out, size_t n, int shift)
{
    size_t count[2048] = {0};
    for (size_t i = 0; i < n; i++) count[(in[i] >> shift) & 2047]++;
    size_t sum = 0;
    for (int d = 0; d < 2048; d++) {
        size_t c = count[d];
        count[d] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++) out[count[(in[i] >> shift) & 2047]++] = in[i];
}

/* The first id that appears twice in a sorted copy (radix sort: linear
 * in n, only as many passes as the largest id has digits); 0 with *found
 * = 0 when every id is unique. */
static bn_status first_repeated_id(const bn_particles *p, uint64_t *rep, int *found)
{
    uint64_t *a = bn_alloc_array(p->n, sizeof *a, "id check"), *b = bn_alloc_array(p->n, sizeof *b, "id check");
    if (!a || !b) {
        free(a);
        free(b);
        return BN_ERR_NOMEM;
    }
    uint64_t max = 0;
    for (size_t i = 0; i < p->n; i++) {
        a[i] = p->id[i];
        if (a[i] > max) max = a[i];
    }
    for (int shift = 0; shift < 64 && (shift == 0 || (max >> shift) != 0); shift += 11) {
        radix_pass(a, b, p->n, shift);
        uint64_t *t = a;
        a = b;
        b = t;
    }
    *found = 0;
    for (size_t i = 1; i < p->n && !*found; i++)
        if (a[i] == a[i - 1]) *rep = a[i], *found = 1;
    free(a);
    free(b);
    return BN_OK;
}

bn_status bn_particles_check_ids(const bn_particles *p, const char *what)
{
    if (!p || p->n < 2) return BN_OK;
    uint64_t rep = 0;
    int found = 0;
    BN_TRY(first_repeated_id(p, &rep, &found));
    if (!found) return BN_OK;
    size_t first = p->n, second = p->n;
    for (size_t i = 0; i < p->n && second == p->n; i++)
        if (p->id[i] == rep) {
            if (first == p->n) first = i;
            else second = i;
        }
    return bn_fail(BN_ERR_FORMAT, "%s: id %llu appears more than once (particles %zu and %zu): ids must be unique",
                   what, (unsigned long long)rep, first, second);
}

bn_units bn_units_nbody(void)
{
    bn_units u = {1.0, 1.0, 1.0, 1.0};
    return u;
}
