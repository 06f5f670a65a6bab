/* The one-pass inspection of a force call's inputs (core/input_summary.h):
 * staged in chunks as the GPU's upload stages them, it must agree with
 * separate passes over the arrays (range, first bad particle) and give the
 * total mass to the bit of bn_particles_total_mass; the download's copy
 * must find the first non-finite force. */
#include <string.h>
#include "testutil.h"
#include "core/input_summary.h"
#include "core/stream_store.h"

/* The set staged in chunks of `blocks` mass blocks, copied to host
 * buffers as the device's would be; the copies checked against the source. */
static void stage_in_chunks(const bn_particles *p, size_t blocks, bn_input_summary *s)
{
    const size_t chunk = blocks * BN_MASS_BLOCK;
    double *pin = malloc(chunk * sizeof *pin);
    float *pinf = malloc(chunk * sizeof *pinf);
    TU_OK(bn_summary_init(s, p->n));
    for (size_t off = 0; off < p->n; off += chunk) {
        const size_t len = p->n - off < chunk ? p->n - off : chunk;
        for (int k = 0; k < 3; k++) {
            bn_stage_coords(pin, p->pos[k] + off, len, off, k, s);
            assert_memory_equal(pin, p->pos[k] + off, len * sizeof *pin);
        }
        bn_stage_masses(pinf, p->mass + off, len, off, s);
        for (size_t i = 0; i < len; i++) assert_true(pinf[i] == (float)p->mass[off + i]);
    }
    bn_summary_finish(s);
    free(pin);
    free(pinf);
}

/* The same facts by plain serial loops. */
static void expect_summary(const bn_particles *p, const bn_input_summary *s)
{
    size_t bad = p->n;
    for (size_t i = 0; i < p->n && bad == p->n; i++) {
        int b = !(p->mass[i] >= 0 && isfinite(p->mass[i]));
        for (int k = 0; k < 3; k++) b |= !isfinite(p->pos[k][i]);
        if (b) bad = i;
    }
    assert_int_equal(s->first_bad, bad);
    if (bad < p->n) return;
    for (int k = 0; k < 3; k++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < p->n; i++) {
            lo = fmin(lo, p->pos[k][i]);
            hi = fmax(hi, p->pos[k][i]);
        }
        assert_true(s->lo[k] == lo && s->hi[k] == hi);
    }
    const double m = bn_particles_total_mass(p);
    assert_memory_equal(&s->mass, &m, sizeof m); /* the same bits */
}

static void test_clean_set(void **state)
{
    (void)state;
    /* 3.5 mass blocks, a chunk of 2: a partial chunk and a partial block */
    bn_particles *p = tu_random_particles(7 * BN_MASS_BLOCK / 2 + 17, 41, 1);
    for (size_t i = 0; i < p->n; i++) p->mass[i] *= 1.0 + 1e-3 * (double)(i % 97); /* unequal masses */
    bn_input_summary a, b;
    stage_in_chunks(p, 2, &a);
    expect_summary(p, &a);
    TU_OK(bn_summarize_particles(p, &b));
    expect_summary(p, &b);
    bn_particles_free(p);
}

static void test_first_bad_particle(void **state)
{
    (void)state;
    bn_particles *p = tu_random_particles(3 * BN_MASS_BLOCK + 5, 42, 0);
    bn_input_summary s;
    /* a NaN in z late, a negative mass earlier, infinity in x earlier still,
     * in different chunks: the earliest wins whatever its array */
    p->pos[2][3 * BN_MASS_BLOCK + 1] = NAN;
    stage_in_chunks(p, 1, &s);
    expect_summary(p, &s);
    p->mass[2 * BN_MASS_BLOCK + 7] = -1e-30;
    stage_in_chunks(p, 1, &s);
    expect_summary(p, &s);
    p->pos[0][BN_MASS_BLOCK - 1] = -INFINITY;
    stage_in_chunks(p, 2, &s);
    expect_summary(p, &s);
    assert_int_equal(s.first_bad, BN_MASS_BLOCK - 1);
    p->mass[3] = NAN;
    TU_OK(bn_summarize_particles(p, &s));
    assert_int_equal(s.first_bad, 3);
    bn_particles_free(p);
}

static void test_unstage_floats(void **state)
{
    (void)state;
    const size_t n = 5000;
    float *f = malloc(n * sizeof *f);
    double *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) f[i] = (float)(0.1 * (double)i - 7);
    size_t bad = 2 * n;
    bn_unstage_floats(d, f, n, 100, &bad);
    assert_int_equal(bad, 2 * n);
    for (size_t i = 0; i < n; i++) assert_true(d[i] == (double)f[i]);
    f[4321] = INFINITY;
    f[4000] = NAN;
    bn_unstage_floats(d, f, n, 100, &bad);
    assert_int_equal(bad, 4100); /* offset by the chunk's start */
    f[10] = -INFINITY;
    bn_unstage_floats(d, f, n, 0, &bad);
    assert_int_equal(bad, 10);
    free(f);
    free(d);
}

/* The streaming copy gives the plain loop's bits at every alignment and
 * length (the vector body, the head and the tail), and writes nothing
 * else. */
static void test_stream_store(void **state)
{
    (void)state;
    enum { N = 301 };
    double src[N + 2], dst[N + 2], want;
    float f[N + 2];
    for (int i = 0; i < N + 2; i++) {
        src[i] = 1.0 / (i + 0.37) - 0.5 * i;
        f[i] = (float)(src[i] * 3.1);
    }
    for (int head = 0; head < 2; head++)
        for (size_t n = 0; n <= N; n += n < 6 ? 1 : 59) {
            for (int i = 0; i < N + 2; i++) dst[i] = src[i];
            bn_stream_scaled_floats(dst + head, f + head, n, -0.7071);
            for (size_t i = 0; i < N + 2; i++) {
                want = i >= (size_t)head && i < head + n ? -0.7071 * (double)f[i] : src[i]; /* nothing else written */
                assert_memory_equal(&dst[i], &want, sizeof want);
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_set),
        cmocka_unit_test(test_first_bad_particle),
        cmocka_unit_test(test_unstage_floats),
        cmocka_unit_test(test_stream_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
