/* Writing parameters as YAML: used_parameters.yml (every value used),
 * unused_parameters.yml (set but without effect) and the documented list
 * of defaults (examples/default.yml), all from the one table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/params.h"

#define WRAP_COLUMNS 92

/* Comment text wrapped at word boundaries, each line "<indent># ...". */
static void print_wrapped(FILE *f, const char *indent, const char *text)
{
    const size_t width = WRAP_COLUMNS - strlen(indent) - 2;
    while (*text) {
        size_t len = strlen(text), cut = len;
        if (len > width) {
            cut = width;
            while (cut > 0 && text[cut] != ' ') cut--;
            if (cut == 0) cut = width;
        }
        fprintf(f, "%s# %.*s\n", indent, (int)cut, text);
        text += cut;
        while (*text == ' ') text++;
    }
}

/* "(number in [0, 2])", "(one of: tree, direct)", ... */
static void describe_type(const bn_param_desc *d, char *buf, size_t size)
{
    char range[96] = " ";
    bn_param_range_text(d, range + 1, sizeof range - 1);
    if (range[1] == '\0') range[0] = '\0';
    switch (d->type) {
    case BN_PT_DOUBLE: snprintf(buf, size, "number%s", range); break;
    case BN_PT_INT:
    case BN_PT_SIZE: snprintf(buf, size, "integer%s", range); break;
    case BN_PT_U64: snprintf(buf, size, "integer >= 0"); break;
    case BN_PT_BOOL: snprintf(buf, size, "yes or no"); break;
    case BN_PT_STRING: snprintf(buf, size, "%s", (d->flags & BN_PF_NONEMPTY) ? "text, not empty" : "text"); break;
    case BN_PT_LIST: snprintf(buf, size, "list of numbers"); break;
    case BN_PT_CHOICE: {
        size_t k = (size_t)snprintf(buf, size, "one of:");
        for (int v = 0; v < d->choices->count && k < size; v++)
            k += (size_t)snprintf(buf + k, size - k, "%s %s", v ? "," : "", d->choices->name(v));
        break;
    }
    }
}

static void print_header(FILE *f, bn_params_mode mode)
{
    switch (mode) {
    case BN_PARAMS_USED:
        fprintf(f, "# banyan %s (%s): the parameters of this run, every one with the value used\n"
                   "# (defaults included). `banyan run used_parameters.yml` repeats the run.\n",
                BN_VERSION_STRING, BANYAN_GIT_REVISION);
        break;
    case BN_PARAMS_UNUSED:
        fprintf(f, "# banyan %s (%s): parameters that were set but have no effect in this run.\n",
                BN_VERSION_STRING, BANYAN_GIT_REVISION);
        break;
    case BN_PARAMS_DOC:
        fprintf(f, "# banyan run: every parameter with its default value and meaning.\n"
                   "# `banyan run` without a file runs exactly these defaults. Change a value here or\n"
                   "# on the command line: banyan run examples/default.yml -P Gravity:theta:0.7\n"
                   "# Generated from src/io/params_table.c by `banyan run --print-defaults`; a test\n"
                   "# checks that this file matches it.\n");
        break;
    }
}

/* One key; returns whether anything was printed. */
static int print_key(FILE *f, const bn_run_params *p, const bn_param_desc *d, bn_params_mode mode)
{
    char value[BN_PARAM_TEXT_MAX];
    int idx = (int)(d - bn_param_table);
    const char *unused = d->unused_because ? d->unused_because(p) : NULL;
    if (mode == BN_PARAMS_UNUSED && (p->origin[idx] == BN_ORIGIN_DEFAULT || !unused)) return 0;
    bn_param_format(p, d, value, sizeof value);
    if (mode == BN_PARAMS_DOC) {
        char type[256], line[300];
        describe_type(d, type, sizeof type);
        print_wrapped(f, "  ", d->doc);
        snprintf(line, sizeof line, "(%s)", type);
        print_wrapped(f, "  ", line);
        fprintf(f, "  %s: %s\n", d->key, value);
        return 1;
    }
    /* a setting the error target chooses stays a comment, so that the
     * file repeats the run (read back, it would be fixed: explicit) */
    const int chosen = mode == BN_PARAMS_USED && p->gravity.error_target > 0 &&
                       (bn_param_tuned_bit(d) & ~p->gravity.error_fixed);
    const char *note = chosen ? "chosen by error_target (energy log, snapshots)"
                       : mode == BN_PARAMS_UNUSED ? unused
                       : p->origin[idx] == BN_ORIGIN_DEFAULT ? "default"
                       : p->origin[idx] == BN_ORIGIN_COMMAND_LINE ? "set by -P"
                       : p->origin[idx] == BN_ORIGIN_INITIAL_CONDITIONS ? "from the initial conditions' file" : NULL;
    int width = (int)strlen(d->key) + 2 + (int)strlen(value) + 2 * chosen;
    fprintf(f, "  %s%s: %s", chosen ? "# " : "", d->key, value);
    if (note) fprintf(f, "%*s# %s", width < 34 ? 34 - width : 1, "", note);
    fputc('\n', f);
    return 1;
}

bn_status bn_run_params_print(const bn_run_params *p, FILE *f, bn_params_mode mode)
{
    print_header(f, mode);
    int printed = 0;
    for (int s = 0; s < bn_param_section_count; s++) {
        const char *name = bn_param_sections[s].name;
        int started = 0;
        for (int i = 0; i < bn_param_count; i++) {
            const bn_param_desc *d = &bn_param_table[i];
            if (strcmp(d->section, name)) continue;
            if (mode == BN_PARAMS_UNUSED) {
                const char *why = d->unused_because ? d->unused_because(p) : NULL;
                if (p->origin[i] == BN_ORIGIN_DEFAULT || !why) continue;
            }
            if (!started) {
                fputc('\n', f);
                if (mode == BN_PARAMS_DOC) print_wrapped(f, "", bn_param_sections[s].doc);
                fprintf(f, "%s:\n", name);
                started = 1;
            }
            printed += print_key(f, p, d, mode);
        }
    }
    if (mode == BN_PARAMS_UNUSED && !printed) fprintf(f, "# (none)\n");
    return ferror(f) ? bn_fail(BN_ERR_IO, "writing parameters failed: %s", strerror(errno)) : BN_OK;
}

bn_status bn_run_params_write(const bn_run_params *p, const char *path, bn_params_mode mode)
{
    char *tmp = NULL;
    BN_TRY(bn_atomic_begin(path, &tmp));
    FILE *f = fopen(tmp, "w");
    bn_status s = f ? bn_run_params_print(p, f, mode)
                    : bn_fail(BN_ERR_IO, "cannot open '%s': %s", tmp, strerror(errno));
    if (f && fclose(f) != 0 && s == BN_OK) s = bn_fail(BN_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
    if (s != BN_OK) {
        bn_atomic_abort(tmp);
        return bn_fail_context(s, "writing %s", path);
    }
    return bn_atomic_commit(tmp, path);
}
