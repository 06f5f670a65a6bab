/* Helpers shared by the C tests (cmocka). */
#ifndef BN_TESTUTIL_H
#define BN_TESTUTIL_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <cmocka.h>
#include "banyan.h"

/* Assert a status is BN_OK, printing the library message if not. */
#define TU_OK(expr)                                                              \
    do {                                                                         \
        bn_status tu_s_ = (expr);                                                \
        if (tu_s_ != BN_OK) fail_msg("%s -> %s: %s", #expr, bn_status_name(tu_s_), bn_last_error()); \
    } while (0)

/* Assert |a - b| <= tol * max(|b|, tiny) (relative), printing both. */
#define TU_NEAR(a, b, tol)                                                                 \
    do {                                                                                   \
        double tu_a_ = (a), tu_b_ = (b), tu_t_ = (tol);                                    \
        double tu_s_ = fabs(tu_b_) > 1e-300 ? fabs(tu_b_) : 1e-300;                        \
        if (!(fabs(tu_a_ - tu_b_) <= tu_t_ * tu_s_))                                       \
            fail_msg("%s = %.17g, expected %s = %.17g (rel. tol %g)", #a, tu_a_, #b, tu_b_, tu_t_); \
    } while (0)

/* Assert a failure with status `want` whose message contains `needle`. */
#define TU_FAILS(expr, want, needle) tu_assert_fails((expr), (want), (needle), #expr)
void tu_assert_fails(bn_status got, bn_status want, const char *needle, const char *expr);

/* Independent random particles (not from the IC module): shape 0 =
 * uniform cube [-1,1]^3, 1 = Gaussian blob, 2 = Plummer-like r^-5 tail.
 * Masses uniform in [0.5, 1.5] / n. Ids 1..n. */
bn_particles *tu_random_particles(size_t n, uint64_t seed, int shape);

/* A mesh test problem with `levels` levels and blocks of block^3 cells. */
bn_mesh *tu_mesh(bn_mesh_problem problem, int levels, int block);

/* A model from the IC module (n particles, seed). */
bn_particles *tu_model(bn_ic_model model, size_t n, uint64_t seed);

/* Each velocity carries its particle to another (random, fixed seed)
 * particle's position within tau, as in the core of a cold collapse,
 * where particles cross: a lead x + tau v that scrambles the cells. */
void tu_scramble_velocities(bn_particles *p, double tau);

/* Relative acceleration errors of `p` against double direct summation on
 * a sample of up to `nsample` particles. */
bn_error_stats tu_errors_vs_direct(const bn_particles *p, double G, double eps, size_t nsample, uint64_t seed);

/* A simulation's stats after two steps on `backend` are those of its last
 * evaluation: equal to a fresh evaluation of the particles it holds. */
void tu_check_step_stats(bn_backend backend);

/* A simulation of a copy of p with these settings. */
bn_simulation *tu_make_sim(const bn_particles *p, bn_gravity_params g, bn_integrator_params ip);
/* Two simulations' particles: the same positions and velocities, bit for bit. */
void tu_assert_same_particles(bn_simulation *a, bn_simulation *b);
/* Default gravity on `backend` with `method`, softening eps, bonsai-box. */
bn_gravity_params tu_block_gravity(bn_backend backend, bn_method method, double eps);
/* Block steps with one bin are the shared fixed step, bit for bit. */
void tu_check_one_bin_is_shared(bn_backend backend);
/* A Plummer sphere with block steps: energy kept, a fraction of the
 * shared steps' forces computed. */
void tu_check_block_energy(bn_backend backend);

/* Steps queued in batches (bn_simulation_advance, integrate) are the
 * steps one at a time, bit for bit: adaptive shared steps, block steps
 * rebuilt every step and block steps decided on the host. */
void tu_check_batches(bn_backend backend);
/* Steps queued after the clock reached its limit change nothing: a
 * shared and a block step leave every particle array bit for bit as it
 * was, and count as idle, not as steps. */
void tu_check_idle_steps(bn_backend backend);

/* Per-component energies (bn_energies.part) through a simulation on
 * `backend`: a rotating set of three part types, each component's count,
 * mass, K, W and L against a long-double host sum over the particles read
 * back (relative tol; L relative to sum m |r||v|, the scale of its
 * rounding), the W_c adding up to W and the K_c to K (1e-12), and a set
 * without types all PartType1 (the totals). */
void tu_check_part_energies(bn_backend backend, double tol);
/* The three-type set of that check: n particles, types 1, 2, 3 in
 * proportions 4:2:1, rotating about z. */
bn_particles *tu_part_type_set(size_t n, uint64_t seed);

/* A PNG read back as 8-bit RGB rows, top to bottom (libpng); fails the
 * test when it cannot be read. Free rgb. */
typedef struct tu_image {
    int w, h;
    unsigned char *rgb;
} tu_image;
tu_image tu_read_png(const char *path);

/* Exit with 77 (CTest: skipped) when no GPU is usable. */
void tu_require_gpu(void);
/* Several ranks: 1 on every rank when ok on every rank. Tests over ranks
 * agree on a check before asserting it, so that a failure on one rank
 * cannot leave the others waiting in a collective. */
int tu_everywhere(const bn_comm *c, int ok);
/* Rank me of P's share of all when particle i goes to rank
 * (i * mul + add) % P (mul = add = 0: every particle on rank 0): a copy of
 * positions, velocities, masses, ids and part types (a rank dealt no
 * particle gets no type array). */
bn_particles *tu_deal(const bn_particles *all, int P, int me, size_t mul, size_t add);
/* p's rows [a, e) as a new set (ids, forces and part types kept). */
bn_particles *tu_rows(const bn_particles *p, size_t a, size_t e);

/* main() of a GPU test, from its list of cmocka_unit_test(...): runs
 * them where a GPU is usable and skips (77) otherwise; in a CPU-only
 * build the tests are not compiled (the list is never expanded) and it
 * only skips. */
#ifdef BANYAN_HAVE_CUDA
#define TU_GPU_TEST_MAIN(...)                                                    \
    int main(void)                                                               \
    {                                                                            \
        tu_require_gpu();                                                        \
        /* TU_TEST_FILTER=name: one test (e.g. under compute-sanitizer) */      \
        if (getenv("TU_TEST_FILTER")) cmocka_set_test_filter(getenv("TU_TEST_FILTER")); \
        const struct CMUnitTest tu_tests_[] = {__VA_ARGS__};                     \
        return cmocka_run_group_tests(tu_tests_, NULL, NULL);                    \
    }
#else
#define TU_GPU_TEST_MAIN(...)                                                    \
    int main(void)                                                               \
    {                                                                            \
        printf("CPU-only build: test skipped\n");                               \
        return 77;                                                               \
    }
#endif
#endif
