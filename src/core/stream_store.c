/* Streaming stores: see stream_store.h. */
#include "core/stream_store.h"
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#define BN_HAVE_STREAM 1
#endif

void bn_stream_scaled_floats(double *dst, const float *src, size_t n, double scale)
{
    size_t i = 0;
#ifdef BN_HAVE_STREAM
    for (; i < n && ((uintptr_t)(dst + i) & 15); i++) dst[i] = scale * (double)src[i];
    const __m128d s = _mm_set1_pd(scale);
    for (; i + 2 <= n; i += 2) {
        const __m128d v = _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(const void *)(src + i))));
        _mm_stream_pd(dst + i, _mm_mul_pd(v, s));
    }
    _mm_sfence(); /* the streamed lines ordered before what follows */
#endif
    for (; i < n; i++) dst[i] = scale * (double)src[i];
}
