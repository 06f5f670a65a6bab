/* CPU-only build: the GPU entry points say that there is no GPU. */
#include "core/backend.h"

const bn_backend_ops *bn_cuda_backend_ops(void) { return NULL; }
int bn_gpu_available(void) { return 0; }
const char *bn_gpu_name(int ordinal)
{
    (void)ordinal;
    return "";
}
