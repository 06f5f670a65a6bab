/* Placeholder until the CPU tree code lands (issue: Barnes-Hut tree code
 * on the CPU). It says so clearly instead of computing anything. */
#include <stdlib.h>
#include "core/error.h"
#include "gravity/gravity_cpu.h"

struct bn_tree_workspace { int unused; };

bn_status bn_tree_workspace_create(bn_tree_workspace **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? BN_OK : bn_fail(BN_ERR_NOMEM, "tree workspace");
}

void bn_tree_workspace_free(bn_tree_workspace *ws) { free(ws); }

bn_status bn_tree_forces_cpu(bn_tree_workspace *ws, const bn_gravity_params *g, const bn_particles *p,
                             const double *acc_old, double *acc[3], double *pot, bn_force_stats *stats)
{
    (void)ws; (void)g; (void)p; (void)acc_old; (void)acc; (void)pot; (void)stats;
    return bn_fail(BN_ERR_UNSUPPORTED, "--method tree: the tree code is not implemented yet; use --method direct");
}
