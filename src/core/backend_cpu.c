/* The CPU backend: particles stay in a host copy; forces by the CPU tree
 * code or direct summation; kick and drift with OpenMP. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/backend.h"
#include "core/error.h"
#include "gravity/gravity_cpu.h"
#include "integrate/integrate_cpu.h"

typedef struct cpu_state {
    bn_gravity_params g;
    bn_particles *p;
    bn_tree_workspace *ws;
    double *acc_old;  /* |a| of the last evaluation, for the accel MAC */
    int have_forces;
    bn_force_stats last_stats;
} cpu_state;

static void cpu_destroy(void *st)
{
    cpu_state *s = st;
    if (!s) return;
    bn_particles_free(s->p);
    bn_tree_workspace_free(s->ws);
    free(s->acc_old);
    free(s);
}

static bn_status cpu_create(void **out, const bn_gravity_params *g)
{
    cpu_state *s = bn_calloc(1, sizeof *s, "CPU backend state");
    if (!s) return BN_ERR_NOMEM;
    s->g = *g;
    bn_status st = bn_tree_workspace_create(&s->ws);
    if (st != BN_OK) {
        cpu_destroy(s);
        return st;
    }
    *out = s;
    return BN_OK;
}

static bn_status cpu_upload(void *st, const bn_particles *p)
{
    cpu_state *s = st;
    bn_particles_free(s->p);
    s->p = NULL;
    free(s->acc_old);
    s->acc_old = NULL;
    s->have_forces = 0;
    BN_TRY(bn_particles_copy(&s->p, p));
    return bn_particles_ensure_forces(s->p);
}

static bn_status cpu_download(void *st, bn_particles *out)
{
    cpu_state *s = st;
    bn_particles *tmp = NULL;
    BN_TRY(bn_particles_copy(&tmp, s->p));
    if (!s->have_forces) {
        for (int k = 0; k < 3; k++) {
            free(tmp->acc[k]);
            tmp->acc[k] = NULL;
        }
        free(tmp->pot);
        tmp->pot = NULL;
    }
    /* swap contents so that `out` keeps its address */
    bn_particles old = *out;
    *out = *tmp;
    *tmp = old;
    bn_particles_free(tmp);
    return BN_OK;
}

static bn_status remember_accel(cpu_state *s)
{
    if (!s->acc_old) {
        s->acc_old = bn_alloc(s->p->n * sizeof(double), "old accelerations");
        if (!s->acc_old) return BN_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->p->n; i++) {
        double a2 = 0;
        for (int k = 0; k < 3; k++) a2 += s->p->acc[k][i] * s->p->acc[k][i];
        s->acc_old[i] = sqrt(a2);
    }
    return BN_OK;
}

static bn_status cpu_forces(void *st, bn_force_stats *stats)
{
    cpu_state *s = st;
    bn_force_stats *last = &s->last_stats;
    memset(last, 0, sizeof *last);
    last->backend = "cpu";
    if (s->g.method == BN_METHOD_DIRECT) {
        BN_TRY(bn_direct_forces_cpu(s->p, s->g.G, s->g.softening, s->p->acc, s->p->pot));
        last->n_pp = (double)s->p->n * (double)(s->p->n - 1);
    } else {
        const double *old = (s->g.mac == BN_MAC_ACCEL && s->have_forces) ? s->acc_old : NULL;
        BN_TRY(bn_tree_forces_cpu(s->ws, &s->g, s->p, old, s->p->acc, s->p->pot, last));
    }
    if (stats) *stats = *last;
    s->have_forces = 1;
    if (s->g.mac == BN_MAC_ACCEL) BN_TRY(remember_accel(s));
    return BN_OK;
}

static bn_status cpu_stats(void *st, bn_force_stats *stats)
{
    *stats = ((cpu_state *)st)->last_stats;
    return BN_OK;
}

static bn_status cpu_finish(void *st)
{
    (void)st;
    return BN_OK;
}

static bn_status cpu_kick(void *st, double dt)
{
    cpu_state *s = st;
    bn_kick_cpu(s->p, dt);
    return BN_OK;
}

static bn_status cpu_drift(void *st, double dt)
{
    cpu_state *s = st;
    bn_drift_cpu(s->p, dt);
    return BN_OK;
}

static bn_status cpu_max_accel(void *st, double *amax)
{
    cpu_state *s = st;
    *amax = bn_max_accel_cpu(s->p);
    return BN_OK;
}

static bn_status cpu_energies(void *st, bn_energies *e)
{
    cpu_state *s = st;
    return bn_energies_compute(s->p, e);
}

const bn_backend_ops bn_cpu_backend_ops = {
    "cpu", cpu_create, cpu_destroy, cpu_upload, cpu_download, cpu_forces, cpu_stats, cpu_finish,
    cpu_kick, cpu_drift, cpu_max_accel, cpu_energies,
};
