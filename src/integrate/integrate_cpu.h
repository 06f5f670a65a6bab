/* Internal: CPU kick and drift, and host diagnostics. */
#ifndef BN_INTEGRATE_CPU_H
#define BN_INTEGRATE_CPU_H
#include "banyan.h"
void bn_kick_cpu(bn_particles *p, double dt);
void bn_drift_cpu(bn_particles *p, double dt);
double bn_max_accel_cpu(const bn_particles *p);
#endif
