/* The field solver on the GPU: placeholder until the kernels land. */
#include "core/cuda_check.h"
#include "mesh/field_internal.h"

extern "C" bn_status bn_field_gpu_create(bn_field_gpu **out, int device)
{
    (void)device;
    *out = NULL;
    return bn_fail(BN_ERR_UNSUPPORTED, "the field solver's GPU backend is not built yet");
}

extern "C" void bn_field_gpu_free(bn_field_gpu *g) { (void)g; }

extern "C" bn_status bn_field_gpu_solve(bn_field_gpu *g, const bn_field_params *prm, const bn_mesh *m,
                                        const bn_field_sources *s, const bn_field_targets *t, double *raw,
                                        bn_field_stats *st)
{
    (void)g, (void)prm, (void)m, (void)s, (void)t, (void)raw, (void)st;
    return bn_fail(BN_ERR_UNSUPPORTED, "the field solver's GPU backend is not built yet");
}
