/* bn_gravity: a reusable force solver over one backend. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/backend.h"
#include "core/error.h"
#include "core/timer.h"
#include "core/trace.h"
#include "gravity/force_checks.h"
#include "gravity/tune.h"
#include "parallel/comm.h"
#include "tree/keys.h"

struct bn_gravity {
    bn_gravity_params params;
    bn_gravity_params used;   /* with an error target: the chosen ones */
    const bn_backend_ops *ops;
    void *state;
    bn_force_stats stats;
    bn_accuracy acc;
    size_t tuned_n;           /* particles of the last search (0: none) */
    long calls;
    const bn_comm *comm;      /* several ranks: a collective computation */
};

bn_status bn_gravity_create(bn_gravity **out, const bn_gravity_params *params)
{
    if (!out) return bn_fail(BN_ERR_ARGUMENT, "bn_gravity_create: out is NULL");
    *out = NULL;
    bn_gravity_params def = bn_gravity_params_default();
    if (!params) params = &def;
    BN_TRY(bn_gravity_params_validate(params));
    bn_gravity *g = bn_calloc(1, sizeof *g, "gravity solver");
    if (!g) return BN_ERR_NOMEM;
    g->params = g->used = *params;
    bn_status s = bn_backend_select(params->backend, params->device, &g->ops);
    if (s == BN_OK) s = g->ops->create(&g->state, &g->params);
    if (s != BN_OK) {
        free(g);
        return s;
    }
    *out = g;
    return BN_OK;
}

void bn_gravity_free(bn_gravity *g)
{
    if (!g) return;
    if (g->ops && g->state) g->ops->destroy(g->state);
    free(g);
}

const bn_gravity_params *bn_gravity_get_params(const bn_gravity *g) { return &g->params; }
const bn_gravity_params *bn_gravity_params_used(const bn_gravity *g) { return &g->used; }
const bn_accuracy *bn_gravity_accuracy(const bn_gravity *g) { return &g->acc; }

bn_backend bn_gravity_backend(const bn_gravity *g)
{
    return g->ops == &bn_cpu_backend_ops ? BN_BACKEND_CPU : BN_BACKEND_GPU;
}

const bn_force_stats *bn_gravity_stats(const bn_gravity *g) { return &g->stats; }

/* With an error target: a search for the first particle set (and for one
 * of another size); later calls evaluate the chosen settings, check them
 * on a fresh sample and search theta again where the check asks for it.
 * Over several ranks the size is every rank's (the same choice on all). */
static bn_status targeted_forces(bn_gravity *g, size_t n_local)
{
    const bn_tune_env env = {g->ops, g->state, n_local, g->ops != &bn_cpu_backend_ops, g->comm};
    size_t n = n_local;
    BN_TRY(bn_tune_total(&env, &n));
    g->calls++;
    if (g->tuned_n == 0 || n > 2 * g->tuned_n || 2 * n < g->tuned_n) {
        g->used = g->params;
        BN_TRY(bn_tune_search(&env, &g->used, 0, &g->acc));
        g->tuned_n = n;
    } else {
        BN_TRY(g->ops->set_params(g->state, &g->used));
        BN_TRY(g->ops->forces(g->state, NULL));
        int retune = 0;
        BN_TRY(bn_tune_check_record(&env, &g->used, (uint64_t)g->calls, &g->acc, &retune));
        if (retune) BN_TRY(bn_tune_search(&env, &g->used, 1, &g->acc));
    }
    return g->ops->stats(g->state, &g->stats);
}


/* Forces, then down to p with their check (first_bad from the copy). */
static bn_status download_checked(bn_gravity *g, bn_particles *p, double *t)
{
    size_t first_bad = p->n;
    bn_status s = g->ops->download_forces(g->state, p, &first_bad);
    bn_trace_stage("forces and download", t);
    if (s == BN_OK) s = bn_force_outputs_check(&g->params, p, first_bad);
    return bn_comm_agree(g->comm, s);
}

bn_status bn_gravity_set_comm(bn_gravity *g, const bn_comm *c)
{
    if (!g) return bn_fail(BN_ERR_ARGUMENT, "bn_gravity_set_comm: solver is NULL");
    BN_TRY(g->ops->set_comm(g->state, c));
    g->comm = c;
    return BN_OK;
}

/* Several ranks: each judged its own particles (a bad one stops every
 * rank with that rank's message); the range and the total mass that the
 * remaining checks need are every rank's. */
static bn_status judge_inputs(const bn_gravity *g, const bn_particles *p, bn_input_summary *sum)
{
    if (bn_comm_size(g->comm) <= 1) return bn_force_inputs_judge(&g->params, p, sum);
    const char *what = "force computation";
    BN_TRY(bn_comm_agree(g->comm, sum->first_bad < p->n ? bn_particles_fault(p, sum->first_bad, what) : BN_OK));
    BN_TRY(bn_comm_reduce_box(g->comm, sum->lo, sum->hi));
    BN_TRY(bn_comm_allreduce(g->comm, &sum->mass, 1, BN_REDUCE_SUM));
    return bn_force_inputs_judge(&g->params, p, sum); /* the same on every rank */
}

/* Several ranks: their trees take their octants from the key cube of
 * every rank's particles (backend.h's set_key_cube()), the cube
 * bn_domain_decompose cuts these particles in (sum: judge_inputs' range
 * of every rank's, the same on all). */
static void share_key_cube(bn_gravity *g, const bn_input_summary *sum)
{
    if (bn_comm_size(g->comm) <= 1 || !g->ops->set_key_cube) return;
    double lo[3];
    const double side = sum->lo[0] <= sum->hi[0] ? bn_key_cube(sum->lo, sum->hi, lo) : 0.0;
    g->ops->set_key_cube(g->state, lo, isfinite(side) ? side : 0.0);
}

bn_status bn_gravity_compute(bn_gravity *g, bn_particles *p)
{
    if (!g) return bn_fail(BN_ERR_ARGUMENT, "bn_gravity_compute: solver is NULL");
    if (!p) return bn_fail(BN_ERR_ARGUMENT, "force computation: particle set is NULL");
    const int ranks = bn_comm_size(g->comm);
    if (p->n == 0 && ranks <= 1) return bn_fail(BN_ERR_ARGUMENT, "force computation: no particles");
    double t = bn_wall_seconds();
    /* only what the call needs crosses, positions and masses up (judged
     * from the summary of the same pass), forces down */
    bn_input_summary sum;
    BN_TRY(bn_comm_agree(g->comm, g->ops->upload_positions(g->state, p, &sum)));
    bn_trace_stage("upload and inspect", &t);
    BN_TRY(judge_inputs(g, p, &sum));
    share_key_cube(g, &sum);
    memset(&g->stats, 0, sizeof g->stats);
    if (g->params.method == BN_METHOD_TREE && g->params.error_target > 0) {
        BN_TRY(targeted_forces(g, p->n));
        return download_checked(g, p, &t);
    }
    /* The acceleration criterion needs old accelerations: the first pass
     * uses the bonsai criterion, the second the accel criterion. */
    if (g->params.method == BN_METHOD_TREE && g->params.mac == BN_MAC_ACCEL)
        BN_TRY(g->ops->forces(g->state, &g->stats));
    memset(&g->stats, 0, sizeof g->stats);
    BN_TRY(g->ops->forces(g->state, &g->stats));
    bn_trace_stage("forces (queued)", &t);
    return download_checked(g, p, &t);
}
