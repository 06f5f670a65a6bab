/* bn_gravity: a reusable force solver over one backend. */
#include <stdlib.h>
#include <string.h>
#include "core/backend.h"
#include "core/error.h"

struct bn_gravity {
    bn_gravity_params params;
    const bn_backend_ops *ops;
    void *state;
    bn_force_stats stats;
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
    g->params = *params;
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

bn_backend bn_gravity_backend(const bn_gravity *g)
{
    return g->ops == &bn_cpu_backend_ops ? BN_BACKEND_CPU : BN_BACKEND_GPU;
}

const bn_force_stats *bn_gravity_stats(const bn_gravity *g) { return &g->stats; }

bn_status bn_gravity_compute(bn_gravity *g, bn_particles *p)
{
    if (!g) return bn_fail(BN_ERR_ARGUMENT, "bn_gravity_compute: solver is NULL");
    BN_TRY(bn_particles_validate(p, "bn_gravity_compute"));
    BN_TRY(g->ops->upload(g->state, p));
    /* The acceleration criterion needs old accelerations: the first pass
     * uses the bonsai criterion, the second the accel criterion. */
    if (g->params.method == BN_METHOD_TREE && g->params.mac == BN_MAC_ACCEL)
        BN_TRY(g->ops->forces(g->state, &g->stats));
    memset(&g->stats, 0, sizeof g->stats);
    BN_TRY(g->ops->forces(g->state, &g->stats));
    return g->ops->download(g->state, p);
}
