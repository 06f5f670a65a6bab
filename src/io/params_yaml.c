/* Reading a YAML parameter file (libyaml document API): a mapping of
 * sections, each a mapping of keys to scalars (or a list of numbers).
 * Every error names the file, the line and the section:key at fault. */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "core/error.h"
#include "io/params.h"
#include "io/yaml_doc.h"

typedef struct reader {
    const char *path;
    yaml_document_t *doc;
    bn_run_params *p;
    int seen_line[BN_PARAM_MAX]; /* line a key was set on (0: not yet) */
} reader;

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
        size += strlen(bn_yaml_scalar(item)) + 1;
    }
    char *buf = *out = bn_alloc(size, "parameter list");
    if (!buf) return BN_ERR_NOMEM;
    size_t len = 0;
    buf[0] = '\0';
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", bn_yaml_scalar(yaml_document_get_node(r->doc, *it)));
    return BN_OK;
}

static bn_status read_key(reader *r, const char *section, const yaml_node_t *k, const yaml_node_t *v)
{
    char where[BN_PARAM_STRLEN + 32];
    snprintf(where, sizeof where, "%s:%d", r->path, bn_yaml_line(k));
    if (k->type != YAML_SCALAR_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s: keys of section %s must be names", where, section);
    if (bn_yaml_has_nul(k) || bn_yaml_has_nul(v))
        return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s holds a NUL character", where, section, bn_yaml_scalar(k));
    const bn_param_desc *d = bn_param_find(section, bn_yaml_scalar(k));
    if (!d) return bn_param_unknown(where, section, bn_yaml_scalar(k));
    int idx = (int)(d - bn_param_table);
    if (r->seen_line[idx])
        return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s is given twice (first on line %d)", where, section, d->key,
                       r->seen_line[idx]);
    r->seen_line[idx] = bn_yaml_line(k);
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
    return bn_param_set(r->p, d, bn_yaml_scalar_text(v), where, BN_ORIGIN_FILE);
}

static bn_status read_section(reader *r, const yaml_node_t *k, const yaml_node_t *v, int *seen_section)
{
    char where[BN_PARAM_STRLEN + 32];
    snprintf(where, sizeof where, "%s:%d", r->path, bn_yaml_line(k));
    if (k->type != YAML_SCALAR_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s: section names must be plain names", where);
    const char *section = bn_yaml_scalar(k);
    int s = bn_param_section_index(section);
    if (s < 0) return bn_param_unknown(where, section, "");
    if (seen_section[s])
        return bn_fail(BN_ERR_PARAMETER, "%s: section %s is given twice (first on line %d)", where, section,
                       seen_section[s]);
    seen_section[s] = bn_yaml_line(k);
    if (v->type == YAML_SCALAR_NODE && bn_yaml_scalar_text(v)[0] == '\0') return BN_OK; /* empty section */
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
    if (root->type == YAML_SCALAR_NODE && bn_yaml_scalar_text(root)[0] == '\0') return BN_OK;
    if (root->type != YAML_MAPPING_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s:%d: expected sections (InitialConditions:, Gravity:, ...) at the top",
                       r->path, bn_yaml_line(root));
    int seen_section[16] = {0};
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++)
        BN_TRY(read_section(r, yaml_document_get_node(r->doc, pr->key), yaml_document_get_node(r->doc, pr->value),
                            seen_section));
    return BN_OK;
}

bn_status bn_run_params_read_file(bn_run_params *p, const char *path)
{
    yaml_document_t doc;
    BN_TRY(bn_yaml_load(path, "parameter file", &doc));
    /* work on a copy: a failure leaves p as it was */
    bn_run_params *tmp = bn_alloc(sizeof *tmp, "parameters");
    bn_status s = tmp ? BN_OK : BN_ERR_NOMEM;
    if (tmp) {
        *tmp = *p;
        reader r = {path, &doc, tmp, {0}};
        s = read_document(&r);
        if (s == BN_OK) *p = *tmp;
        free(tmp);
    }
    yaml_document_delete(&doc);
    return s;
}
