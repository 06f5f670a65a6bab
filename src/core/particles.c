#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"

static void particles_release_arrays(bn_particles *p)
{
    for (int k = 0; k < 3; k++) {
        free(p->pos[k]);
        free(p->vel[k]);
        free(p->acc[k]);
        p->pos[k] = p->vel[k] = p->acc[k] = NULL;
    }
    free(p->mass);
    free(p->id);
    free(p->pot);
    p->mass = NULL;
    p->id = NULL;
    p->pot = NULL;
}

/* Grow one array to `cap` elements of `size` bytes, zeroing the new tail. */
static bn_status grow(void **arr, size_t old_n, size_t cap, size_t size, const char *what)
{
    void *q = realloc(*arr, (cap ? cap : 1) * size);
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

bn_status bn_particles_resize(bn_particles *p, size_t n)
{
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "bn_particles_resize: particle set is NULL");
    if (n > p->capacity) {
        size_t cap = n, old = p->capacity;
        for (int k = 0; k < 3; k++) {
            BN_TRY(grow((void **)&p->pos[k], old, cap, sizeof(double), "positions"));
            BN_TRY(grow((void **)&p->vel[k], old, cap, sizeof(double), "velocities"));
            if (p->acc[k]) BN_TRY(grow((void **)&p->acc[k], old, cap, sizeof(double), "accelerations"));
        }
        BN_TRY(grow((void **)&p->mass, old, cap, sizeof(double), "masses"));
        BN_TRY(grow((void **)&p->id, old, cap, sizeof(uint64_t), "ids"));
        if (p->pot) BN_TRY(grow((void **)&p->pot, old, cap, sizeof(double), "potentials"));
        p->capacity = cap;
    }
    p->n = n;
    return BN_OK;
}

bn_status bn_particles_ensure_forces(bn_particles *p)
{
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "bn_particles_ensure_forces: particle set is NULL");
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
    if (src->acc[0] && src->pot) {
        bn_status s = bn_particles_ensure_forces(p);
        if (s != BN_OK) {
            bn_particles_free(p);
            *out = NULL;
            return s;
        }
        for (int k = 0; k < 3; k++)
            if (nb) memcpy(p->acc[k], src->acc[k], nb);
        if (nb) memcpy(p->pot, src->pot, nb);
    }
    return BN_OK;
}

double bn_particles_total_mass(const bn_particles *p)
{
    double m = 0.0;
    for (size_t i = 0; i < p->n; i++) m += p->mass[i];
    return m;
}

bn_status bn_particles_validate(const bn_particles *p, const char *what)
{
    static const char *axis = "xyz";
    if (!what) what = "particles";
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "%s: particle set is NULL", what);
    if (p->n == 0) return bn_fail(BN_ERR_ARGUMENT, "%s: no particles", what);
    for (size_t i = 0; i < p->n; i++) {
        for (int k = 0; k < 3; k++) {
            if (!isfinite(p->pos[k][i]))
                return bn_fail(BN_ERR_ARGUMENT, "%s: particle %zu (id %llu) has a non-finite %c coordinate (%g)",
                               what, i, (unsigned long long)p->id[i], axis[k], p->pos[k][i]);
            if (!isfinite(p->vel[k][i]))
                return bn_fail(BN_ERR_ARGUMENT, "%s: particle %zu (id %llu) has a non-finite %c velocity (%g)",
                               what, i, (unsigned long long)p->id[i], axis[k], p->vel[k][i]);
        }
        if (!isfinite(p->mass[i]) || p->mass[i] < 0.0)
            return bn_fail(BN_ERR_ARGUMENT, "%s: particle %zu (id %llu) has mass %g (must be finite and >= 0)",
                           what, i, (unsigned long long)p->id[i], p->mass[i]);
    }
    double m = bn_particles_total_mass(p);
    if (!(m > 0.0 && isfinite(m)))
        return bn_fail(BN_ERR_ARGUMENT, "%s: total mass is %g (must be finite and > 0)", what, m);
    return BN_OK;
}

bn_units bn_units_nbody(void)
{
    bn_units u = {1.0, 1.0, 1.0, 1.0};
    return u;
}
