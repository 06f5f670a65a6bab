/* Reading a YAML parameter file (libyaml document API): a mapping of
 * sections, each a mapping of keys to scalars (or a list of numbers).
 * Every error names the file, the line and the section:key at fault. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>
#include "core/error.h"
#include "core/files.h"
#include "io/params.h"

typedef struct reader {
    const char *path;
    yaml_document_t *doc;
    bn_run_params *p;
    int seen_line[BN_PARAM_MAX]; /* line a key was set on (0: not yet) */
} reader;

static int line_of(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

/* A plain ~ / null / empty scalar is YAML's null: an empty value. */
static const char *scalar_text(const yaml_node_t *n)
{
    const char *s = scalar(n);
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL")))
        return "";
    return s;
}

/* A sequence of scalars as "a,b,c" (for list parameters), in *out
 * (malloc'ed: as long as the entries need). */
static bn_status join_sequence(reader *r, const yaml_node_t *seq, const char *where, const bn_param_desc *d,
                               char **out)
{
    size_t size = 1;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
        const yaml_node_t *item = yaml_document_get_node(r->doc, *it);
        if (!item || item->type != YAML_SCALAR_NODE)
            return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s: list entries must be numbers", where, d->section, d->key);
        size += strlen(scalar(item)) + 1;
    }
    char *buf = *out = bn_alloc(size, "parameter list");
    if (!buf) return BN_ERR_NOMEM;
    size_t len = 0;
    buf[0] = '\0';
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", scalar(yaml_document_get_node(r->doc, *it)));
    return BN_OK;
}

/* A scalar with a NUL inside ("e\0x.txt") would be cut at it. */
static int has_nul(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && strlen(scalar(n)) != n->data.scalar.length;
}

static bn_status read_key(reader *r, const char *section, const yaml_node_t *k, const yaml_node_t *v)
{
    char where[BN_PARAM_STRLEN + 32];
    snprintf(where, sizeof where, "%s:%d", r->path, line_of(k));
    if (k->type != YAML_SCALAR_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s: keys of section %s must be names", where, section);
    if (has_nul(k) || has_nul(v))
        return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s holds a NUL character", where, section, scalar(k));
    const bn_param_desc *d = bn_param_find(section, scalar(k));
    if (!d) return bn_param_unknown(where, section, scalar(k));
    int idx = (int)(d - bn_param_table);
    if (r->seen_line[idx])
        return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s is given twice (first on line %d)", where, section, d->key,
                       r->seen_line[idx]);
    r->seen_line[idx] = line_of(k);
    if (v->type == YAML_MAPPING_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s expects a value, not a mapping", where, section, d->key);
    if (v->type == YAML_SEQUENCE_NODE) {
        if (d->type != BN_PT_LIST)
            return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s expects a single value, not a list", where, section, d->key);
        char *joined = NULL;
        BN_TRY(join_sequence(r, v, where, d, &joined));
        bn_status s = bn_param_set(r->p, d, joined, where, BN_ORIGIN_FILE);
        free(joined);
        return s;
    }
    return bn_param_set(r->p, d, scalar_text(v), where, BN_ORIGIN_FILE);
}

static bn_status read_section(reader *r, const yaml_node_t *k, const yaml_node_t *v, int *seen_section)
{
    char where[BN_PARAM_STRLEN + 32];
    snprintf(where, sizeof where, "%s:%d", r->path, line_of(k));
    if (k->type != YAML_SCALAR_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s: section names must be plain names", where);
    const char *section = scalar(k);
    int s = bn_param_section_index(section);
    if (s < 0) return bn_param_unknown(where, section, "");
    if (seen_section[s])
        return bn_fail(BN_ERR_PARAMETER, "%s: section %s is given twice (first on line %d)", where, section,
                       seen_section[s]);
    seen_section[s] = line_of(k);
    if (v->type == YAML_SCALAR_NODE && scalar_text(v)[0] == '\0') return BN_OK; /* empty section */
    if (v->type != YAML_MAPPING_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s: section %s must be a mapping of 'key: value' lines", where, section);
    for (yaml_node_pair_t *pr = v->data.mapping.pairs.start; pr < v->data.mapping.pairs.top; pr++)
        BN_TRY(read_key(r, section, yaml_document_get_node(r->doc, pr->key),
                        yaml_document_get_node(r->doc, pr->value)));
    return BN_OK;
}

static bn_status read_document(reader *r)
{
    const yaml_node_t *root = yaml_document_get_root_node(r->doc);
    if (!root) return BN_OK; /* empty file: all defaults */
    if (root->type == YAML_SCALAR_NODE && scalar_text(root)[0] == '\0') return BN_OK;
    if (root->type != YAML_MAPPING_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s:%d: expected sections (InitialConditions:, Gravity:, ...) at the top",
                       r->path, line_of(root));
    int seen_section[16] = {0};
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++)
        BN_TRY(read_section(r, yaml_document_get_node(r->doc, pr->key), yaml_document_get_node(r->doc, pr->value),
                            seen_section));
    return BN_OK;
}

static bn_status syntax_error(const char *path, const yaml_parser_t *ps)
{
    return bn_fail(BN_ERR_PARAMETER, "%s:%d: YAML syntax error: %s%s%s", path, (int)ps->problem_mark.line + 1,
                   ps->problem ? ps->problem : "unknown problem", ps->context ? " " : "",
                   ps->context ? ps->context : "");
}

/* libyaml's scanner is quadratic in the nesting depth of flow
 * collections ([[[[...]]]]: 90 s for 200000 levels in a 400 KB file), so
 * a first pass over the events stops at BN_PARAM_YAML_DEPTH levels, long
 * before that cost (a parameter file needs three: sections, keys, a
 * list). Syntax errors are left to the second pass, which names them. */
static bn_status check_depth(const char *path, FILE *f)
{
    yaml_parser_t ps;
    if (!yaml_parser_initialize(&ps)) return bn_fail(BN_ERR_NOMEM, "cannot initialise the YAML parser for '%s'", path);
    yaml_parser_set_input_file(&ps, f);
    bn_status s = BN_OK;
    int depth = 0, done = 0;
    while (!done && s == BN_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&ps, &ev)) break;
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) depth++;
        if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) depth--;
        if (depth > BN_PARAM_YAML_DEPTH)
            s = bn_fail(BN_ERR_PARAMETER, "%s:%d: nested more than %d levels deep (a parameter file has sections, "
                        "keys and lists of numbers)", path, (int)ev.start_mark.line + 1, BN_PARAM_YAML_DEPTH);
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&ps);
    rewind(f);
    return s;
}

bn_status bn_run_params_read_file(bn_run_params *p, const char *path)
{
    /* stat first: opening a FIFO would block for ever */
    struct stat st;
    char name[BN_PARAM_STRLEN + 32];
    snprintf(name, sizeof name, "parameter file '%s'", path);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return bn_fail(BN_ERR_IO, "%s is a directory", name);
    BN_TRY(bn_check_regular_file(path, name, &st));
    if (st.st_size > BN_PARAM_FILE_MAX)
        return bn_fail(BN_ERR_IO, "parameter file '%s' is %lld bytes long (at most %d)", path, (long long)st.st_size,
                       BN_PARAM_FILE_MAX);
    FILE *f = fopen(path, "rb");
    if (!f) return bn_fail(BN_ERR_IO, "cannot open parameter file '%s': %s", path, strerror(errno));
    const bn_status depth = check_depth(path, f);
    if (depth != BN_OK) {
        fclose(f);
        return depth;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return bn_fail(BN_ERR_NOMEM, "cannot initialise the YAML parser for '%s'", path);
    }
    yaml_parser_set_input_file(&parser, f);
    bn_status s = BN_OK;
    if (!yaml_parser_load(&parser, &doc)) {
        s = syntax_error(path, &parser);
    } else {
        /* work on a copy: a failure leaves p as it was */
        bn_run_params *tmp = bn_alloc(sizeof *tmp, "parameters");
        if (!tmp) s = BN_ERR_NOMEM;
        else {
            *tmp = *p;
            reader r = {path, &doc, tmp, {0}};
            s = read_document(&r);
            yaml_document_delete(&doc);
            if (s == BN_OK) {
                /* a second document would be silently ignored: refuse it */
                if (!yaml_parser_load(&parser, &doc)) s = syntax_error(path, &parser);
                else {
                    if (yaml_document_get_root_node(&doc))
                        s = bn_fail(BN_ERR_PARAMETER, "%s: more than one YAML document ('---'); expected one",
                                    path);
                    yaml_document_delete(&doc);
                }
            }
            if (s == BN_OK) *p = *tmp;
            free(tmp);
        }
    }
    yaml_parser_delete(&parser);
    fclose(f);
    return s;
}
