/* Loading a small YAML file as one document (yaml_doc.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include "core/error.h"
#include "core/files.h"
#include "io/params.h"
#include "io/yaml_doc.h"

const char *bn_yaml_scalar_text(const yaml_node_t *n)
{
    const char *s = bn_yaml_scalar(n);
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL")))
        return "";
    return s;
}

int bn_yaml_has_nul(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && strlen(bn_yaml_scalar(n)) != n->data.scalar.length;
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

/* The file checked and opened (stat first: opening a FIFO would block
 * for ever), its nesting depth checked. */
static bn_status open_checked(const char *path, const char *what, FILE **out)
{
    struct stat st;
    char name[1100];
    snprintf(name, sizeof name, "%s '%s'", what, path);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return bn_fail(BN_ERR_IO, "%s is a directory", name);
    BN_TRY(bn_check_regular_file(path, name, &st));
    if (st.st_size > BN_PARAM_FILE_MAX)
        return bn_fail(BN_ERR_IO, "%s is %lld bytes long (at most %d)", name, (long long)st.st_size,
                       BN_PARAM_FILE_MAX);
    FILE *f = fopen(path, "rb");
    if (!f) return bn_fail(BN_ERR_IO, "cannot open %s: %s", name, strerror(errno));
    const bn_status depth = check_depth(path, f);
    if (depth != BN_OK) {
        fclose(f);
        return depth;
    }
    *out = f;
    return BN_OK;
}

bn_status bn_yaml_load(const char *path, const char *what, yaml_document_t *doc)
{
    FILE *f = NULL;
    BN_TRY(open_checked(path, what, &f));
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return bn_fail(BN_ERR_NOMEM, "cannot initialise the YAML parser for '%s'", path);
    }
    yaml_parser_set_input_file(&parser, f);
    bn_status s = yaml_parser_load(&parser, doc) ? BN_OK : syntax_error(path, &parser);
    if (s == BN_OK) {
        /* a second document would be silently ignored: refuse it */
        yaml_document_t next;
        if (!yaml_parser_load(&parser, &next)) s = syntax_error(path, &parser);
        else {
            if (yaml_document_get_root_node(&next))
                s = bn_fail(BN_ERR_PARAMETER, "%s: more than one YAML document ('---'); expected one", path);
            yaml_document_delete(&next);
        }
        if (s != BN_OK) yaml_document_delete(doc);
    }
    yaml_parser_delete(&parser);
    fclose(f);
    return s;
}
