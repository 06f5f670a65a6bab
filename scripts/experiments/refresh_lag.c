/*
 * Issue 19: why does refreshing the tree between rebuilds make block
 * steps drift in energy at large N (BENCHMARKS.md, session 28)? The
 * hypothesis: a refreshed tree's cells are the build's, so its force
 * error depends on where the particles were at the build, x - v lag,
 * not only on where they are: a velocity-dependent error, which does
 * work on the particles steadily (as a friction would), where a fresh
 * tree's error is a function of position only.
 *
 * Test on one state x (a model, every particle): forces from a tree built
 * at x - v L and refreshed at x ("past" tree, as a refresh is) and from
 * one built at x + v L, refreshed at x ("future"), against the fresh
 * tree at x. Their power on the particles, P = sum m v . (a - a_fresh),
 * relative to |E|, is the rate at which they change the energy. If the
 * error is velocity-dependent, P(past) is of one sign, grows with L,
 * and P(future) is about -P(past). The fresh tree's own power against
 * direct summation (a sample of targets, double precision) is the
 * baseline.
 *
 * Build (from the repository root, after the CPU build):
 *   cc -O2 -std=c11 -fopenmp -Iinclude -Isrc scripts/experiments/refresh_lag.c \
 *      build-cpu/libbanyan_static.a $(pkg-config --libs hdf5 yaml-0.1 libpng fftw3) -lfftw3_omp -lm \
 *      -o build-cpu/refresh_lag
 *   build-cpu/refresh_lag MODEL N EPS DT LAGS...   (LAGS in units of DT)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "banyan.h"
#include "gravity/gravity_cpu.h"

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        bn_status s_ = (x);                                                                                            \
        if (s_ != BN_OK) {                                                                                             \
            fprintf(stderr, "%s: %s\n", #x, bn_last_error());                                                          \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static void shift(bn_particles *p, const bn_particles *x, double t)
{
    for (size_t i = 0; i < p->n; i++)
        for (int k = 0; k < 3; k++) p->pos[k][i] = x->pos[k][i] + t * x->vel[k][i];
}

/* P = sum m v . (a - ref) and the rms of |a - ref| / |ref|. */
static void power(const bn_particles *p, double *a[3], double *ref[3], double *P, double *rms)
{
    double sp = 0, se = 0;
    for (size_t i = 0; i < p->n; i++) {
        double d2 = 0, r2 = 0;
        for (int k = 0; k < 3; k++) {
            const double d = a[k][i] - ref[k][i];
            sp += p->mass[i] * p->vel[k][i] * d;
            d2 += d * d;
            r2 += ref[k][i] * ref[k][i];
        }
        se += d2 / r2;
    }
    *P = sp;
    *rms = sqrt(se / (double)p->n);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s MODEL N EPS DT LAGS...\n", argv[0]);
        return 2;
    }
    bn_ic_params ip = bn_ic_params_default();
    CHECK(bn_ic_model_parse(argv[1], &ip.model));
    ip.n = (size_t)atol(argv[2]);
    bn_gravity_params g = bn_gravity_params_default();
    g.softening = atof(argv[3]);
    const double dt = atof(argv[4]);
    bn_particles *x = NULL, *p = NULL;
    CHECK(bn_ic_generate(&ip, &x));
    CHECK(bn_particles_copy(&p, x));
    CHECK(bn_particles_ensure_forces(p));
    const size_t n = x->n;
    double *fresh[3], *acc[3], *pot = malloc(n * sizeof *pot), *pot0 = malloc(n * sizeof *pot0);
    for (int k = 0; k < 3; k++) fresh[k] = malloc(n * sizeof(double)), acc[k] = malloc(n * sizeof(double));
    bn_tree_workspace *ws = NULL;
    CHECK(bn_tree_workspace_create(&ws));
    CHECK(bn_tree_forces_active_cpu(ws, &g, x, NULL, NULL, 0, 1, fresh, pot0, NULL));
    double K = 0, W = 0;
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) K += 0.5 * x->mass[i] * x->vel[k][i] * x->vel[k][i];
        W += 0.5 * x->mass[i] * pot0[i];
    }
    const double E = fabs(K + W);
    /* the fresh tree's own error power, against double direct summation
     * (bn_direct_at_points) at 4096 targets, each without itself */
    {
        const size_t m = n < 4096 ? n : 4096, step = n / m;
        double *pts = malloc(3 * m * sizeof *pts), *ref = malloc(3 * m * sizeof *ref), *rpot = malloc(m * sizeof *rpot);
        size_t *self = malloc(m * sizeof *self);
        for (size_t j = 0; j < m; j++) {
            self[j] = j * step;
            for (int k = 0; k < 3; k++) pts[3 * j + k] = x->pos[k][self[j]];
        }
        CHECK(bn_direct_at_points(x, 1.0, g.softening, pts, self, m, ref, rpot));
        double sp = 0, se = 0, scale = (double)n / (double)m;
        for (size_t j = 0; j < m; j++) {
            const size_t i = self[j];
            double d2 = 0, a2 = 0;
            for (int k = 0; k < 3; k++) {
                const double d = fresh[k][i] - ref[3 * j + k];
                sp += x->mass[i] * x->vel[k][i] * d;
                d2 += d * d;
                a2 += ref[3 * j + k] * ref[3 * j + k];
            }
            se += d2 / a2;
        }
        printf("%s N %zu eps %g: |E| %.6f; fresh tree against direct (%zu targets): power/|E| %+.3e, rms %.3e\n",
               argv[1], n, g.softening, E, m, sp * scale / E, sqrt(se / (double)m));
        free(pts);
        free(ref);
        free(rpot);
        free(self);
    }
    printf("%8s %8s %14s %14s %10s %10s\n", "lag/dt", "lag", "P_past/|E|", "P_future/|E|", "rms past", "rms fut");
    for (int a = 5; a < argc; a++) {
        const double L = atof(argv[a]) * dt;
        double P[2], rms[2];
        for (int side = 0; side < 2; side++) {
            shift(p, x, side == 0 ? -L : L); /* the build's positions */
            CHECK(bn_tree_forces_active_cpu(ws, &g, p, NULL, NULL, 0, 1, acc, pot, NULL));
            CHECK(bn_tree_forces_active_cpu(ws, &g, x, NULL, NULL, 0, 0, acc, pot, NULL)); /* refreshed at x */
            power(x, acc, fresh, &P[side], &rms[side]);
        }
        printf("%8s %8.2e %+14.3e %+14.3e %10.3e %10.3e\n", argv[a], L, P[0] / E, P[1] / E, rms[0], rms[1]);
        fflush(stdout);
    }
    bn_tree_workspace_free(ws);
    bn_particles_free(x);
    bn_particles_free(p);
    return 0;
}
