/*
 * banyan's C API in one page: sample a Plummer sphere, integrate it with
 * the tree code and the shared-step leapfrog to t = 1/8, print the energy
 * error, and write the last state as a snapshot when a path is given.
 *
 * Built with the project (build/examples_api_plummer); by hand, against
 * the shared library:
 *   cc -O2 examples/api_plummer.c -Iinclude -Lbuild -lbanyan -lm -Wl,-rpath,$PWD/build -o api_plummer
 *   ./api_plummer [final.hdf5]
 */
#include <math.h>
#include <stdio.h>
#include "banyan.h"

/* Every fallible call returns a bn_status; bn_last_error() says what and
 * where. The library itself never prints and never exits. */
#define CHECK(call)                                                                      \
    do {                                                                                 \
        bn_status s_ = (call);                                                           \
        if (s_ != BN_OK) {                                                               \
            fprintf(stderr, "%s failed (%s): %s\n", #call, bn_status_name(s_), bn_last_error()); \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

int main(int argc, char **argv)
{
    int rc = 1;
    bn_particles *p = NULL;
    bn_simulation *sim = NULL;

    bn_ic_params ic = bn_ic_params_default(); /* Henon units: M = 1, G = 1, E = -1/4 */
    ic.model = BN_IC_PLUMMER;
    ic.n = 4096;
    ic.seed = 1;
    CHECK(bn_ic_generate(&ic, &p));

    bn_gravity_params g = bn_gravity_params_default(); /* tree, bonsai MAC, quadrupole */
    g.softening = 0.01;
    g.theta = 0.5;
    g.backend = BN_BACKEND_AUTO; /* the GPU when one is usable, else the CPU */
    bn_integrator_params ip = bn_integrator_params_default();
    ip.dt = 1.0 / 128;

    CHECK(bn_simulation_create(&sim));
    CHECK(bn_simulation_set_gravity(sim, &g));
    CHECK(bn_simulation_set_integrator(sim, &ip));
    CHECK(bn_simulation_set_particles(sim, p)); /* copies p */

    bn_energies e0, e1;
    CHECK(bn_simulation_energies(sim, &e0)); /* computes the first forces */
    CHECK(bn_simulation_integrate(sim, 0.125));
    CHECK(bn_simulation_energies(sim, &e1));
    printf("%zu particles, backend %s: %ld steps to t = %g, E = %.6f -> %.6f, |dE/E0| = %.2e\n", p->n,
           bn_backend_name(bn_simulation_backend(sim)), bn_simulation_steps(sim), bn_simulation_time(sim),
           e0.total, e1.total, fabs((e1.total - e0.total) / e0.total));

    if (argc > 1) {
        const bn_particles *now = NULL;
        CHECK(bn_simulation_particles(sim, &now)); /* copied back from the GPU if needed */
        bn_snapshot_meta meta = bn_snapshot_meta_default();
        meta.time = bn_simulation_time(sim);
        meta.gravity = g;
        CHECK(bn_snapshot_write(argv[1], now, &meta)); /* GADGET-4 layout, temporary file + rename */
        printf("wrote %s\n", argv[1]);
    }
    rc = 0;
done:
    bn_simulation_free(sim);
    bn_particles_free(p);
    return rc;
}
