/* CPU-only build: the GPU entry points say that there is no GPU (the
 * backend's, and the field solver's GPU stages: bn_field_create asks for
 * them only when a GPU is available or asked for). CUDA builds have the
 * .cu sources instead; CMakeLists.txt compiles this file only without
 * them. */
#include "core/backend.h"
#include "core/error.h"
#include "mesh/fft_internal.h"
#include "mesh/field_internal.h"

const bn_backend_ops *bn_cuda_backend_ops(void) { return NULL; }
int bn_gpu_available(void) { return 0; }
int bn_gpu_device_pick(int requested) { return requested >= 0 ? requested : 0; }
const char *bn_gpu_name(int ordinal)
{
    (void)ordinal;
    return "";
}

bn_status bn_field_gpu_create(bn_field_gpu **out, int device)
{
    (void)device;
    *out = NULL;
    return bn_fail(BN_ERR_DEVICE, "backend 'gpu' requested but this build has no CUDA (the field solver)");
}

void bn_field_gpu_free(bn_field_gpu *g) { (void)g; }

bn_status bn_field_gpu_solve(bn_field_gpu *g, const bn_field_params *prm, const bn_mesh *m, const bn_field_sources *s,
                             const bn_field_targets *t, double *raw, bn_field_stats *st)
{
    (void)g, (void)prm, (void)m, (void)s, (void)t, (void)raw, (void)st;
    return bn_fail(BN_ERR_DEVICE, "this build has no CUDA");
}

bn_status bn_field_gpu_mesh(bn_field_gpu *g, const bn_field_params *prm, const bn_mesh *m, const int *var,
                            const bn_particles *extra, const bn_mesh_part *part, double *const *out,
                            bn_field_stats *st)
{
    (void)g, (void)prm, (void)m, (void)var, (void)extra, (void)part, (void)out, (void)st;
    return bn_fail(BN_ERR_DEVICE, "this build has no CUDA");
}

bn_status bn_fft_gpu_mesh(struct bn_field_gpu *fg, const bn_field_params *prm, const bn_mesh *m, const bn_fft_grid *g,
                          const int *var, double *const *out, bn_field_stats *st)
{
    (void)fg, (void)prm, (void)m, (void)g, (void)var, (void)out, (void)st;
    return bn_fail(BN_ERR_DEVICE, "this build has no CUDA");
}
