/* Kick-drift-kick leapfrog on host arrays (OpenMP). */
#include <math.h>
#include "integrate/integrate_cpu.h"

/* Below this many particles a parallel region costs more than the loop
 * (and, on a busy machine, much more: a barrier per region). */
#define BN_KICK_PARALLEL_MIN 4096

void bn_kick_cpu(bn_particles *p, double dt)
{
    const long n = (long)p->n;
    for (int k = 0; k < 3; k++) {
        double *v = p->vel[k];
        const double *a = p->acc[k];
#pragma omp parallel for schedule(static) if (n >= BN_KICK_PARALLEL_MIN)
        for (long i = 0; i < n; i++) v[i] += dt * a[i];
    }
}

void bn_drift_cpu(bn_particles *p, double dt)
{
    const long n = (long)p->n;
    for (int k = 0; k < 3; k++) {
        double *x = p->pos[k];
        const double *v = p->vel[k];
#pragma omp parallel for schedule(static) if (n >= BN_KICK_PARALLEL_MIN)
        for (long i = 0; i < n; i++) x[i] += dt * v[i];
    }
}

double bn_max_accel_cpu(const bn_particles *p)
{
    double amax2 = 0.0;
    const long n = (long)p->n;
#pragma omp parallel for schedule(static) reduction(max : amax2) if (n >= BN_KICK_PARALLEL_MIN)
    for (long i = 0; i < n; i++) {
        double a2 = p->acc[0][i] * p->acc[0][i] + p->acc[1][i] * p->acc[1][i] + p->acc[2][i] * p->acc[2][i];
        if (a2 > amax2) amax2 = a2;
    }
    return sqrt(amax2);
}
