/* Run parameters: setting a value from text with type and range checks,
 * formatting it back, defaults, -P overrides and checks across keys. The
 * parameters themselves are described in params_table.c. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/error.h"
#include "io/params.h"

#define FIELD(p, d, type) ((type *)((char *)(p) + (d)->offset))
#define CFIELD(p, d, type) ((const type *)((const char *)(p) + (d)->offset))

/* "Gravity:theta = 'abc'" prefix of every value error. */
static bn_status bad_value(const char *where, const bn_param_desc *d, const char *text, const char *why)
{
    /* a long value (a list of 1024 times) shortened: the reason must fit */
    const int cut = strlen(text) > 120;
    return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s = '%.120s%s': %s", where, d->section, d->key, text, cut ? "..." : "",
                   why);
}

void bn_param_range_text(const bn_param_desc *d, char *buf, size_t size)
{
    const int lo_open = (d->flags & BN_PF_LO_OPEN) != 0, hi_open = (d->flags & BN_PF_HI_OPEN) != 0;
    if (isinf(d->lo) && isinf(d->hi)) snprintf(buf, size, "%s", "");
    else if (isinf(d->hi)) snprintf(buf, size, "%s %g", lo_open ? ">" : ">=", d->lo);
    else if (d->type == BN_PT_U64 && d->hi >= 0x1p64) /* the seed: any 64-bit unsigned integer */
        snprintf(buf, size, "in [%.15g, 18446744073709551615]", d->lo);
    else snprintf(buf, size, "in %c%.15g, %.15g%c", lo_open ? '(' : '[', d->lo, d->hi, hi_open ? ')' : ']');
}

static bn_status check_range(const char *where, const bn_param_desc *d, const char *text, double v)
{
    const int lo_ok = (d->flags & BN_PF_LO_OPEN) ? v > d->lo : v >= d->lo;
    const int hi_ok = (d->flags & BN_PF_HI_OPEN) ? v < d->hi : v <= d->hi;
    if (lo_ok && hi_ok) return BN_OK;
    char range[96], why[128];
    bn_param_range_text(d, range, sizeof range);
    snprintf(why, sizeof why, "must be %s", range);
    return bad_value(where, d, text, why);
}

static int parse_double_text(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    /* ERANGE also flags denormals (kept) and underflow to 0 (refused) */
    if (end == s || !isfinite(v) || (errno == ERANGE && v == 0)) return 0;
    while (isspace((unsigned char)*end)) end++;
    if (*end) return 0;
    *out = v;
    return 1;
}

/* Whole-string unsigned integer; also 2^k, and 1e6-style numbers when
 * they are exact integers (up to 2^53, where doubles are exact). */
static int parse_u64_text(const char *s, uint64_t *out)
{
    while (isspace((unsigned char)*s)) s++;
    if (!strncmp(s, "2^", 2)) {
        uint64_t e;
        if (!parse_u64_text(s + 2, &e) || e > 63) return 0;
        *out = (uint64_t)1 << e;
        return 1;
    }
    if (!isdigit((unsigned char)*s)) return 0; /* no sign, no blank value */
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE) return 0;
    while (isspace((unsigned char)*end)) end++;
    if (*end) {
        double d;
        if (!parse_double_text(s, &d) || d != floor(d) || d > 9007199254740992.0) return 0;
        v = (unsigned long long)d;
    }
    *out = (uint64_t)v;
    return 1;
}

static int parse_bool_text(const char *s, int *out)
{
    static const char *yes[] = {"yes", "true", "on", "1"}, *no[] = {"no", "false", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) return *out = 1, 1;
        if (!strcasecmp(s, no[i])) return *out = 0, 1;
    }
    return 0;
}

static int qsort_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* "[0.5, 1, 2]" or "0.5,1,2" or "" -> sorted list without repeats. */
static bn_status parse_list(const char *where, const bn_param_desc *d, const char *text, char *buf,
                            bn_param_list *out);

static bn_status set_list(const char *where, const bn_param_desc *d, const char *text, bn_param_list *out)
{
    /* a copy to cut into entries: as long as the text (1024 entries of
     * 17 digits and more are fine) */
    char *buf = bn_alloc(strlen(text) + 1, "parameter list");
    if (!buf) return BN_ERR_NOMEM;
    strcpy(buf, text);
    bn_status s = parse_list(where, d, text, buf, out);
    free(buf);
    return s;
}

static bn_status parse_list(const char *where, const bn_param_desc *d, const char *text, char *buf,
                            bn_param_list *out)
{
    char *s = buf, *e = buf + strlen(buf);
    while (isspace((unsigned char)*s)) s++;
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    if (*s == '[') {
        if (e == s || e[-1] != ']') return bad_value(where, d, text, "unbalanced '['");
        s++;
        *--e = '\0';
    }
    bn_param_list l;
    memset(&l, 0, sizeof l); /* whole struct: parameter sets compare with memcmp */
    for (char *tok = s; tok && *tok;) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        double v;
        if (l.n == 0 && !comma && strspn(tok, " \t") == strlen(tok)) break; /* empty list */
        if (!parse_double_text(tok, &v)) return bad_value(where, d, text, "expected a list of finite numbers");
        BN_TRY(check_range(where, d, text, v));
        if (l.n == BN_PARAM_LIST_MAX) return bad_value(where, d, "...", "more than 1024 entries");
        l.v[l.n++] = v;
        tok = comma ? comma + 1 : NULL;
    }
    qsort(l.v, (size_t)l.n, sizeof l.v[0], qsort_double);
    int m = 0;
    for (int i = 0; i < l.n; i++)
        if (m == 0 || l.v[i] != l.v[m - 1]) l.v[m++] = l.v[i];
    l.n = m;
    *out = l;
    return BN_OK;
}

static bn_status set_choice(const char *where, const bn_param_desc *d, const char *text, int *out)
{
    if (d->choices->parse(text, out) == BN_OK) return BN_OK;
    char valid[256] = "";
    for (int v = 0; v < d->choices->count; v++) {
        size_t len = strlen(valid);
        snprintf(valid + len, sizeof valid - len, "%s%s", v ? ", " : "", d->choices->name(v));
    }
    char why[300];
    snprintf(why, sizeof why, "unknown name (valid: %s)", valid);
    return bad_value(where, d, text, why);
}

unsigned bn_param_tuned_bit(const bn_param_desc *d)
{
    static const struct { size_t offset; unsigned bit; } tuned[] = {
        {offsetof(bn_run_params, gravity.theta), BN_TUNE_THETA},
        {offsetof(bn_run_params, gravity.mac), BN_TUNE_MAC},
        {offsetof(bn_run_params, gravity.leaf_size), BN_TUNE_LEAF},
        {offsetof(bn_run_params, gravity.group_size), BN_TUNE_GROUP},
        {offsetof(bn_run_params, gravity.group_expansion), BN_TUNE_EXPANSION}};
    for (size_t i = 0; i < sizeof tuned / sizeof tuned[0]; i++)
        if (tuned[i].offset == d->offset) return tuned[i].bit;
    return 0;
}

bn_status bn_param_set(bn_run_params *p, const bn_param_desc *d, const char *text, const char *where,
                       bn_param_origin origin)
{
    double v = 0;
    uint64_t u = 0;
    int b = 0;
    switch (d->type) {
    case BN_PT_DOUBLE:
        if (!parse_double_text(text, &v)) return bad_value(where, d, text, "expected a finite number");
        BN_TRY(check_range(where, d, text, v));
        *FIELD(p, d, double) = v;
        break;
    case BN_PT_INT:
        if (!parse_double_text(text, &v) || v != floor(v)) return bad_value(where, d, text, "expected an integer");
        /* the range in double, before the value is narrowed to int */
        BN_TRY(check_range(where, d, text, v));
        if (fabs(v) > INT_MAX) return bad_value(where, d, text, "beyond the range of int");
        *FIELD(p, d, int) = (int)v;
        break;
    case BN_PT_SIZE:
    case BN_PT_U64:
        if (!parse_u64_text(text, &u)) {
            char range[96], why[160];
            bn_param_range_text(d, range, sizeof range);
            snprintf(why, sizeof why, "expected a non-negative integer %s", range);
            return bad_value(where, d, text, why);
        }
        BN_TRY(check_range(where, d, text, (double)u));
        if (d->type == BN_PT_SIZE) *FIELD(p, d, size_t) = (size_t)u;
        else *FIELD(p, d, uint64_t) = u;
        break;
    case BN_PT_BOOL:
        if (!parse_bool_text(text, &b)) return bad_value(where, d, text, "expected yes or no");
        *FIELD(p, d, int) = b;
        break;
    case BN_PT_STRING:
        if (strlen(text) >= BN_PARAM_STRLEN) return bad_value(where, d, "...", "longer than 1023 characters");
        if ((d->flags & BN_PF_NONEMPTY) && !text[0]) return bad_value(where, d, text, "must not be empty");
        strcpy(FIELD(p, d, char), text);
        break;
    case BN_PT_CHOICE:
        BN_TRY(set_choice(where, d, text, FIELD(p, d, int)));
        break;
    case BN_PT_LIST:
        BN_TRY(set_list(where, d, text, FIELD(p, d, bn_param_list)));
        break;
    }
    p->origin[d - bn_param_table] = (unsigned char)origin;
    if (origin != BN_ORIGIN_DEFAULT) p->gravity.error_fixed |= bn_param_tuned_bit(d);
    return BN_OK;
}

/* Shortest %g form that reads back to the same double. */
static void format_double(double v, char *buf, size_t size)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* A string as a YAML scalar: plain when that is unambiguous, else quoted. */
static void format_string(const char *s, char *buf, size_t size)
{
    int plain = s[0] != '\0' && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-") ==
                                    strlen(s);
    int b;
    double v;
    if (plain && (parse_bool_text(s, &b) || parse_double_text(s, &v) || !strcasecmp(s, "null") || s[0] == '-'))
        plain = 0;
    if (plain) {
        snprintf(buf, size, "%s", s);
        return;
    }
    size_t k = 0;
    if (size < 3) return;
    buf[k++] = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c && k + 6 < size; c++) {
        if (*c == '"' || *c == '\\') k += (size_t)snprintf(buf + k, size - k, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f) k += (size_t)snprintf(buf + k, size - k, "\\x%02x", *c);
        else buf[k++] = (char)*c;
    }
    buf[k++] = '"';
    buf[k] = '\0';
}

void bn_param_format(const bn_run_params *p, const bn_param_desc *d, char *buf, size_t size)
{
    switch (d->type) {
    case BN_PT_DOUBLE: format_double(*CFIELD(p, d, double), buf, size); break;
    case BN_PT_INT: snprintf(buf, size, "%d", *CFIELD(p, d, int)); break;
    case BN_PT_SIZE: snprintf(buf, size, "%zu", *CFIELD(p, d, size_t)); break;
    case BN_PT_U64: snprintf(buf, size, "%llu", (unsigned long long)*CFIELD(p, d, uint64_t)); break;
    case BN_PT_BOOL: snprintf(buf, size, "%s", *CFIELD(p, d, int) ? "yes" : "no"); break;
    case BN_PT_STRING: format_string(CFIELD(p, d, char), buf, size); break;
    case BN_PT_CHOICE: snprintf(buf, size, "%s", d->choices->name(*CFIELD(p, d, int))); break;
    case BN_PT_LIST: {
        const bn_param_list *l = CFIELD(p, d, bn_param_list);
        size_t k = (size_t)snprintf(buf, size, "[");
        for (int i = 0; i < l->n && k + 32 < size; i++) {
            char num[40];
            format_double(l->v[i], num, sizeof num);
            k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "", num);
        }
        snprintf(buf + k, size - k, "]");
        break;
    }
    }
}

void bn_run_params_init(bn_run_params *p)
{
    memset(p, 0, sizeof *p);
    p->ic = bn_ic_params_default();
    p->gravity = bn_gravity_params_default();
    p->integ = bn_integrator_params_default();
    for (int i = 0; i < bn_param_count; i++) {
        /* cannot fail: test_params checks every default */
        (void)bn_param_set(p, &bn_param_table[i], bn_param_table[i].def, "default", BN_ORIGIN_DEFAULT);
    }
    bn_clear_error();
}

/* Unknown section or key: name it and list the valid ones. */
bn_status bn_param_unknown(const char *where, const char *section, const char *key)
{
    char valid[1024] = "";
    if (bn_param_section_index(section) < 0) {
        for (int i = 0; i < bn_param_section_count; i++) {
            size_t len = strlen(valid);
            snprintf(valid + len, sizeof valid - len, "%s%s", i ? ", " : "", bn_param_sections[i].name);
        }
        return bn_fail(BN_ERR_PARAMETER, "%s: unknown section '%s' (valid sections: %s)", where, section, valid);
    }
    bn_param_section_keys(section, valid, sizeof valid);
    return bn_fail(BN_ERR_PARAMETER, "%s: unknown key '%s' in section %s (valid keys of %s: %s)", where, key,
                   section, section, valid);
}

bn_status bn_run_params_override(bn_run_params *p, const char *spec)
{
    char where[BN_PARAM_STRLEN + 32];
    snprintf(where, sizeof where, "-P %.120s%s", spec ? spec : "(null)", spec && strlen(spec) > 120 ? "..." : "");
    const char *c1 = spec ? strchr(spec, ':') : NULL;
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c1 == spec || c2 == c1 + 1)
        return bn_fail(BN_ERR_PARAMETER, "%s: expected Section:key:value, e.g. -P Gravity:theta:0.7", where);
    char section[128], key[128];
    if ((size_t)(c1 - spec) >= sizeof section || (size_t)(c2 - c1 - 1) >= sizeof key)
        return bn_fail(BN_ERR_PARAMETER, "%s: section or key too long", where);
    memcpy(section, spec, (size_t)(c1 - spec));
    section[c1 - spec] = '\0';
    memcpy(key, c1 + 1, (size_t)(c2 - c1 - 1));
    key[c2 - c1 - 1] = '\0';
    const bn_param_desc *d = bn_param_find(section, key);
    if (!d) return bn_param_unknown(where, section, key);
    return bn_param_set(p, d, c2 + 1, where, BN_ORIGIN_COMMAND_LINE);
}

bn_status bn_run_params_validate(const bn_run_params *p)
{
    if (bn_gravity_params_validate(&p->gravity) != BN_OK)
        return bn_fail_context(BN_ERR_PARAMETER, "Gravity");
    if (!isfinite(p->t_end)) return bn_fail(BN_ERR_PARAMETER, "TimeIntegration:t_end must be finite");
    if (!p->ic_file[0] && p->ic.n < 1)
        return bn_fail(BN_ERR_PARAMETER, "InitialConditions:n must be >= 1 when no file is given");
    return BN_OK;
}
