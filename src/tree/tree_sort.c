/* Stage 3: stable least-significant-digit radix sort of (key, index)
 * pairs, 11-bit digits, 6 passes for 63-bit keys (what CUB does on the
 * GPU). Each pass: every thread histograms its contiguous chunk, an
 * exclusive scan over (digit, thread) gives every thread its write
 * positions, every thread scatters its chunk in order. Chunks in thread
 * order and digits in order make it stable, hence the result is the
 * unique stable order whatever the thread count. A pass whose digit is
 * the same for every key moves nothing and is skipped. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "tree/tree_cpu.h"

#define DIGIT_BITS 11
#define BUCKETS (1 << DIGIT_BITS)
#define PASSES 6 /* 6 x 11 = 66 >= 63 bits */

/* One pass over src -> dst by digit `shift`; hist is BUCKETS per thread.
 * Returns 0 (in *moved) when every key had the same digit. */
static void radix_pass(size_t n, const uint64_t *sk, const uint32_t *so, uint64_t *dk, uint32_t *dv, int shift,
                       size_t *hist, int *moved)
{
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), me = omp_get_thread_num();
        const size_t lo = n * (size_t)me / (size_t)nt, hi = n * (size_t)(me + 1) / (size_t)nt;
        size_t *h = hist + (size_t)me * BUCKETS;
        memset(h, 0, BUCKETS * sizeof *h);
        for (size_t i = lo; i < hi; i++) h[(sk[i] >> shift) & (BUCKETS - 1)]++;
#pragma omp barrier
#pragma omp single
        {
            /* exclusive scan, digit-major then thread: stable positions */
            size_t sum = 0;
            *moved = 0;
            for (int d = 0; d < BUCKETS; d++) {
                size_t digit_total = 0;
                for (int t = 0; t < nt; t++) {
                    size_t c = hist[(size_t)t * BUCKETS + d];
                    hist[(size_t)t * BUCKETS + d] = sum;
                    sum += c;
                    digit_total += c;
                }
                if (digit_total != 0 && digit_total != n) *moved = 1;
            }
        }
        if (*moved)
            for (size_t i = lo; i < hi; i++) {
                size_t at = h[(sk[i] >> shift) & (BUCKETS - 1)]++;
                dk[at] = sk[i];
                dv[at] = so[i];
            }
    }
}

bn_status bn_tree_sort(size_t n, uint64_t *keys, uint32_t *order, uint64_t *tmp_keys, uint32_t *tmp_order)
{
    size_t *hist = malloc((size_t)omp_get_max_threads() * BUCKETS * sizeof *hist);
    if (!hist) return bn_fail(BN_ERR_NOMEM, "tree sort: no memory for the histograms");
    uint64_t *sk = keys, *dk = tmp_keys;
    uint32_t *so = order, *dv = tmp_order;
    for (int p = 0; p < PASSES; p++) {
        int moved = 0;
        radix_pass(n, sk, so, dk, dv, p * DIGIT_BITS, hist, &moved);
        if (!moved) continue;
        uint64_t *tk = sk; sk = dk; dk = tk;
        uint32_t *tv = so; so = dv; dv = tv;
    }
    if (sk != keys) {
        memcpy(keys, sk, n * sizeof *keys);
        memcpy(order, so, n * sizeof *order);
    }
    free(hist);
    return BN_OK;
}
