/* Placeholder: initial conditions land with the foundation issue. */
#include <string.h>
#include "core/error.h"

bn_ic_params bn_ic_params_default(void)
{
    bn_ic_params p;
    memset(&p, 0, sizeof p);
    p.model = BN_IC_PLUMMER;
    p.seed = 1;
    p.G = 1.0;
    p.cube_half_size = 3.0;
    return p;
}
const char *bn_ic_model_name(bn_ic_model m) { (void)m; return "plummer"; }
bn_status bn_ic_model_parse(const char *s, bn_ic_model *out) { (void)s; *out = BN_IC_PLUMMER; return BN_OK; }
bn_status bn_ic_generate(const bn_ic_params *params, bn_particles **out)
{
    (void)params; (void)out;
    return bn_fail(BN_ERR_UNSUPPORTED, "initial conditions not implemented yet");
}
