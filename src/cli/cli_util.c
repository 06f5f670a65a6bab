#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"

int cli_fail(const char *cmd, bn_status s)
{
    fprintf(stderr, "banyan %s: error (%s): %s\n", cmd, bn_status_name(s), bn_last_error());
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "banyan %s: error: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'banyan %s --help')\n", cmd);
    return 2;
}

int cli_parse_double(const char *cmd, const char *opt, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    /* ERANGE also flags denormals (numbers, kept) and underflow to 0 */
    if (!s || end == s || *end != '\0' || !isfinite(v) || (errno == ERANGE && v == 0)) {
        cli_usage_error(cmd, "%s expects a finite number, got '%s'", opt, s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_long_in(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end != '\0') {
        cli_usage_error(cmd, "%s expects an integer, got '%s'", opt, s ? s : "");
        return 0;
    }
    /* the range is checked in long, before any narrowing: 4294967297 is not 1 */
    if (errno != 0 || v < lo || v > hi) {
        cli_usage_error(cmd, "%s must be an integer in [%ld, %ld], got '%s'", opt, lo, hi, s);
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out)
{
    long v;
    if (!cli_parse_long_in(cmd, opt, s, lo, hi, &v)) return 0;
    *out = (int)v;
    return 1;
}

int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    /* strtoull accepts "-1" as 2^64 - 1: digits only */
    unsigned long long v = s && *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
    if (!s || !end || end == s || *end != '\0' || errno != 0) {
        cli_usage_error(cmd, "%s must be an integer in [0, 18446744073709551615], got '%s'", opt, s ? s : "");
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

int cli_parse_size(const char *cmd, const char *opt, const char *s, size_t *out)
{
    long v;
    if (s && strncmp(s, "2^", 2) == 0) {
        char *end = NULL;
        errno = 0;
        v = strtol(s + 2, &end, 10);
        if (end == s + 2 || *end != '\0' || errno != 0 || v < 0 || v > 62) {
            cli_usage_error(cmd, "%s: exponent in '%s' must be in [0, 62]", opt, s);
            return 0;
        }
        *out = (size_t)1 << v;
        return 1;
    }
    char *end = NULL;
    errno = 0;
    v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end != '\0') {
        cli_usage_error(cmd, "%s expects an integer, got '%s'", opt, s ? s : "");
        return 0;
    }
    /* counts the memory cannot hold are refused by the library, naming them */
    if (errno != 0 || v < 1) {
        cli_usage_error(cmd, "%s must be a positive count, got '%s'", opt, s);
        return 0;
    }
    *out = (size_t)v;
    return 1;
}

int cli_is_tty(int fd) { return isatty(fd); }

void cli_print_accuracy(FILE *f, const char *indent, const bn_gravity_params *g, const bn_accuracy *a)
{
    fprintf(f, "%serror target %g: %s theta %.3f, leaf %d, group %d, expansion %g; p50 %.2e p99 %.2e on %zu "
               "sampled targets%s (%ld evaluations, %.2f s)\n",
            indent, a->target, bn_mac_name(g->mac), g->theta, g->leaf_size, g->group_size, g->group_expansion, a->p50,
            a->p99, a->sample, a->met ? "" : ", TARGET NOT MET", a->evaluations, a->t_tuning);
}
