/* The per-component energies' check, the same for both backends
 * (testutil.h): a host sum in long double over the particles the
 * simulation reads back is the independent reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

bn_particles *tu_part_type_set(size_t n, uint64_t seed)
{
    bn_particles *p = tu_random_particles(n, seed, 2);
    TU_OK(bn_particles_ensure_types(p));
    static const uint8_t deal[7] = {1, 1, 1, 1, 2, 2, 3};
    for (size_t i = 0; i < n; i++) {
        p->type[i] = deal[i % 7];
        /* solid rotation about z on top of the random velocities, so
         * that Lz is not a cancellation of random terms */
        p->vel[0][i] -= 0.3 * p->pos[1][i];
        p->vel[1][i] += 0.3 * p->pos[0][i];
    }
    return p;
}

typedef struct part_ref {
    long double count, mass, k, w, l[3], l_scale;
} part_ref;

static void host_sums(const bn_particles *q, part_ref ref[BN_PART_TYPES])
{
    memset(ref, 0, BN_PART_TYPES * sizeof *ref);
    for (size_t i = 0; i < q->n; i++) {
        part_ref *r = &ref[bn_particles_part_type(q, i)];
        const long double m = q->mass[i], x = q->pos[0][i], y = q->pos[1][i], z = q->pos[2][i];
        const long double u = q->vel[0][i], v = q->vel[1][i], w = q->vel[2][i];
        r->count += 1;
        r->mass += m;
        r->k += 0.5L * m * (u * u + v * v + w * w);
        r->w += 0.5L * m * q->pot[i];
        r->l[0] += m * (y * w - z * v);
        r->l[1] += m * (z * u - x * w);
        r->l[2] += m * (x * v - y * u);
        r->l_scale += m * sqrtl((x * x + y * y + z * z) * (u * u + v * v + w * w));
    }
}

static double rel(double got, long double want) { return fabsl(got - want) / fabsl(want); }

/* e's components against the host sums of the particles sim holds. */
static void check_against_host(bn_simulation *sim, const bn_energies *e, double tol)
{
    const bn_particles *q = NULL;
    TU_OK(bn_simulation_particles(sim, &q));
    part_ref ref[BN_PART_TYPES];
    host_sums(q, ref);
    double k_sum = 0, w_sum = 0;
    for (int t = 0; t < BN_PART_TYPES; t++) {
        const bn_component_energies *c = &e->part[t];
        assert_true(c->count == (double)ref[t].count);
        k_sum += c->kinetic;
        w_sum += c->potential;
        if (ref[t].count == 0) {
            assert_true(c->mass == 0 && c->kinetic == 0 && c->potential == 0);
            continue;
        }
        print_message("%s: %.0f particles, K %.6e (%.1e), W %.6e (%.1e), Lz %.6e\n", bn_part_type_name(t), c->count,
                      c->kinetic, rel(c->kinetic, ref[t].k), c->potential, rel(c->potential, ref[t].w),
                      c->angular_momentum[2]);
        assert_true(rel(c->mass, ref[t].mass) < tol);
        assert_true(rel(c->kinetic, ref[t].k) < tol);
        assert_true(rel(c->potential, ref[t].w) < tol);
        for (int d = 0; d < 3; d++)
            assert_true(fabsl(c->angular_momentum[d] - ref[t].l[d]) < tol * ref[t].l_scale);
    }
    assert_true(fabs(k_sum - e->kinetic) < 1e-12 * fabs(e->kinetic));
    assert_true(fabs(w_sum - e->potential) < 1e-12 * fabs(e->potential));
}

void tu_check_part_energies(bn_backend backend, double tol)
{
    bn_gravity_params g = tu_block_gravity(backend, BN_METHOD_TREE, 0.01);
    bn_integrator_params ip = bn_integrator_params_default();
    bn_particles *p = tu_part_type_set(7000, 5);
    bn_simulation *sim = tu_make_sim(p, g, ip);
    bn_energies e;
    TU_OK(bn_simulation_energies(sim, &e));
    check_against_host(sim, &e, tol);
    assert_true(e.part[1].count == 4000 && e.part[2].count == 2000 && e.part[3].count == 1000);
    TU_OK(bn_simulation_step(sim, NULL)); /* the types follow the particles through a step */
    TU_OK(bn_simulation_energies(sim, &e));
    check_against_host(sim, &e, tol);
    bn_simulation_free(sim);
    /* no types: everything is PartType1, its share the totals */
    free(p->type);
    p->type = NULL;
    sim = tu_make_sim(p, g, ip);
    TU_OK(bn_simulation_energies(sim, &e));
    check_against_host(sim, &e, tol);
    assert_true(e.part[1].count == 7000 && e.part[1].kinetic == e.kinetic && e.part[1].potential == e.potential);
    for (int d = 0; d < 3; d++) assert_true(e.part[1].angular_momentum[d] == e.angular_momentum[d]);
    bn_simulation_free(sim);
    bn_particles_free(p);
}
