#include <errno.h>
#include <math.h>
#include <stdarg.h>
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
    if (!s || end == s || *end != '\0' || errno != 0 || !isfinite(v)) {
        cli_usage_error(cmd, "%s expects a finite number, got '%s'", opt, s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_long(const char *cmd, const char *opt, const char *s, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end != '\0' || errno != 0) {
        cli_usage_error(cmd, "%s expects an integer, got '%s'", opt, s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_size(const char *cmd, const char *opt, const char *s, size_t *out)
{
    if (s && strncmp(s, "2^", 2) == 0) {
        long e;
        if (!cli_parse_long(cmd, opt, s + 2, &e)) return 0;
        if (e < 0 || e > 40) {
            cli_usage_error(cmd, "%s: exponent in '%s' must be in [0, 40]", opt, s);
            return 0;
        }
        *out = (size_t)1 << e;
        return 1;
    }
    long v;
    if (!cli_parse_long(cmd, opt, s, &v)) return 0;
    if (v < 1) {
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
