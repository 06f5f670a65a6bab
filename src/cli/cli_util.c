#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "core/error.h"

int cli_fail(const char *cmd, bn_status s)
{
    fprintf(stderr, "banyan %s: error (%s): %s\n", cmd, bn_status_name(s), bn_last_error());
    return 1;
}

/* Under mpirun every rank parses the same command line: rank 0 speaks. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    if (bn_comm_rank(cli_comm()) != 0) return 2;
    va_list ap;
    fprintf(stderr, "banyan %s: error: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'banyan %s --help')\n", cmd);
    return 2;
}

/* strtod's ERANGE covers three cases: overflow (+-HUGE_VAL: refused),
 * a denormal result (a number like any other: kept) and underflow of a
 * nonzero literal to 0 (refused: the user asked for something else than 0). */
int cli_parse_double(const char *cmd, const char *opt, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    const int range_error = errno == ERANGE;
    if (!s || end == s || *end != '\0' || isnan(v) || (isinf(v) && !range_error)) {
        cli_usage_error(cmd, "%s expects a finite number, got '%s'", opt, s ? s : "");
        return 0;
    }
    if (isinf(v)) {
        cli_usage_error(cmd, "%s expects a finite number, got '%s' (beyond the largest double, %.17g)", opt, s,
                        DBL_MAX);
        return 0;
    }
    if (range_error && v == 0) {
        cli_usage_error(cmd, "%s: '%s' is below the smallest positive double (%g) and would be 0; write 0 for zero",
                        opt, s, DBL_TRUE_MIN);
        return 0;
    }
    *out = v;
    return 1;
}

/* "in [0, 2]", "in [0, 1)", "> 0", ">= 0" */
static void describe_range(cli_range r, char *buf, size_t size)
{
    /* %.15g: 0.01 and 1000000 as written, not 0.01000000000000000021 or 1e+06 */
    if (isinf(r.hi)) snprintf(buf, size, "a finite number %s %.15g", r.lo_open ? ">" : ">=", r.lo);
    else snprintf(buf, size, "a number in %c%.15g, %.15g%c", r.lo_open ? '(' : '[', r.lo, r.hi, r.hi_open ? ')' : ']');
}

static int in_range(double v, cli_range r)
{
    return (r.lo_open ? v > r.lo : v >= r.lo) && (r.hi_open ? v < r.hi : v <= r.hi);
}

int cli_parse_double_in(const char *cmd, const char *opt, const char *s, cli_range r, double *out)
{
    double v;
    if (!cli_parse_double(cmd, opt, s, &v)) return 0;
    if (!in_range(v, r)) {
        char what[96];
        describe_range(r, what, sizeof what);
        cli_usage_error(cmd, "%s must be %s, got '%s'", opt, what, s);
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

int cli_parse_device(const char *cmd, const char *s, int *out)
{
    if (s && strcmp(s, "auto") == 0) {
        *out = BN_DEVICE_AUTO;
        return 1;
    }
    return cli_parse_int(cmd, "--device", s, 0, BN_DEVICE_MAX, out);
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

/* Counts up to 2^62, in either form: larger ones cannot be a number of
 * particles of 8-byte fields whose byte size still fits in 64 bits; those
 * the memory cannot hold are refused by the library, naming them. On a
 * 32-bit size_t the bound is the width of size_t less 2, for the same reason. */
#define CLI_SIZE_EXP_MAX ((long)(sizeof(size_t) * CHAR_BIT) - 2 < 62 ? (long)(sizeof(size_t) * CHAR_BIT) - 2 : 62)

/* Digits only: strtol would also take " 5", "+5" and "-0". */
static int all_digits(const char *s)
{
    if (!s || !*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

int cli_parse_size(const char *cmd, const char *opt, const char *s, size_t *out)
{
    const long exp_max = CLI_SIZE_EXP_MAX;
    if (s && strncmp(s, "2^", 2) == 0) {
        errno = 0;
        long v = all_digits(s + 2) ? strtol(s + 2, NULL, 10) : -1;
        if (errno != 0 || v < 0 || v > exp_max) {
            cli_usage_error(cmd, "%s: exponent in '%s' must be in [0, %ld]", opt, s, exp_max);
            return 0;
        }
        *out = (size_t)1 << v;
        return 1;
    }
    if (!all_digits(s)) {
        cli_usage_error(cmd, "%s expects an integer, got '%s'", opt, s ? s : "");
        return 0;
    }
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    /* in unsigned long long, before any narrowing: ERANGE is out of range too */
    if (errno != 0 || v < 1 || v > (1ULL << exp_max)) {
        cli_usage_error(cmd, "%s must be a count in [1, 2^%ld] (2^k accepted), got '%s'", opt, exp_max, s);
        return 0;
    }
    *out = (size_t)v;
    return 1;
}

/* The writers replace OUT by renaming a temporary file onto it, so an
 * existing FIFO or device would be replaced by a regular file (as root,
 * -o /dev/null once did just that), and a directory fails only after the
 * whole computation. The same rules as run's outputs (run_paths.c). */
bn_status cli_check_output(const char *what, const char *path)
{
    BN_TRY(cli_check_output_kind(what, path));
    return cli_check_output_dir(what, path, 0);
}

bn_status cli_check_output_kind(const char *what, const char *path)
{
    const size_t len = path ? strlen(path) : 0;
    struct stat ls, st;
    if (len == 0) return bn_fail(BN_ERR_ARGUMENT, "%s: empty file name", what);
    if (path[len - 1] == '/') return bn_fail(BN_ERR_ARGUMENT, "%s '%s' names a directory, not a file", what, path);
    if (lstat(path, &ls) != 0) return BN_OK; /* a new name */
    if (stat(path, &st) != 0)
        return bn_fail(BN_ERR_ARGUMENT, "%s '%s' is a dangling symbolic link: refusing to write through it", what,
                       path);
    if (S_ISREG(st.st_mode)) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "%s '%s' exists and is not a regular file (%s)", what, path,
                   S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket");
}

int cli_is_tty(int fd) { return isatty(fd); }

void cli_print_accuracy(FILE *f, const char *indent, const bn_gravity_params *g, const bn_accuracy *a)
{
    fprintf(f, "%serror target %g: %s theta %.3f, leaf %d, group %d, expansion %g; p50 %.2e p99 %.2e on %zu "
               "sampled targets%s (%ld evaluations, %.2f s)\n",
            indent, a->target, bn_mac_name(g->mac), g->theta, g->leaf_size, g->group_size, g->group_expansion, a->p50,
            a->p99, a->sample, a->met ? "" : ", TARGET NOT MET", a->evaluations, a->t_tuning);
}

/* A JSON string literal of s (quotes, backslashes and control characters
 * escaped) to stdout. */
void cli_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}
