/* Placeholder: PNG rendering lands with the foundation issue. */
#include "core/error.h"

bn_render_params bn_render_params_default(void)
{
    bn_render_params r = {800, 800, 2, 0.0};
    return r;
}
bn_status bn_render_png(const char *path, const bn_particles *p, const bn_render_params *params)
{
    (void)p; (void)params;
    return bn_fail(BN_ERR_UNSUPPORTED, "%s: rendering not implemented yet", path);
}
