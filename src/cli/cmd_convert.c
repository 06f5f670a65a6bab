/* banyan convert IN OUT: a snapshot in another format (HDF5, GADGET-2
 * format 1 or 2, tipsy standard or native). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "core/error.h"

static void convert_help(void)
{
    printf("usage: banyan convert IN OUT [--format F] [--big-endian] [--files N]\n\n"
           "Write the particles of IN (any format banyan reads: HDF5, GADGET-2 format 1\n"
           "or 2, tipsy) to OUT in format F: hdf5, gadget2, gadget2-format2, tipsy\n"
           "(standard, big-endian) or tipsy-native. Without --format, OUT's name tells:\n"
           ".hdf5 or .h5, .gadget or .g2, .tipsy or .std.\n\n"
           "  --big-endian  GADGET-2: write big-endian (default: little-endian)\n"
           "  --files N     GADGET-2: a set of N files OUT.0 ... OUT.N-1\n\n"
           "GADGET-2 and tipsy hold float32 values; tipsy keeps gas (PartType0) and\n"
           "stars (PartType4), makes every other type dark matter and has no ids.\n");
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n > m && !strcmp(s + n - m, tail);
}

/* OUT's format from its name; -1 when the name does not tell. */
static int format_from_name(const char *path)
{
    if (ends_with(path, ".hdf5") || ends_with(path, ".h5")) return BN_FORMAT_HDF5;
    if (ends_with(path, ".gadget") || ends_with(path, ".g2")) return BN_FORMAT_GADGET2;
    if (ends_with(path, ".tipsy") || ends_with(path, ".std")) return BN_FORMAT_TIPSY;
    return -1;
}

/* The stem of the GADGET-2 set that IN may be one of ("<stem>.<k>", or
 * the stem itself when "<stem>.0" exists); 0 when there is none. */
static int set_stem(const char *in, char *stem, size_t cap)
{
    struct stat st;
    if (snprintf(stem, cap, "%s.0", in) < (int)cap && stat(stem, &st) == 0) {
        snprintf(stem, cap, "%s", in);
        return 1;
    }
    size_t n = strlen(in), d = n;
    while (d > 0 && in[d - 1] >= '0' && in[d - 1] <= '9') d--;
    if (d == n || d < 2 || in[d - 1] != '.' || d - 1 >= cap) return 0;
    snprintf(stem, cap, "%.*s", (int)(d - 1), in);
    return 1;
}

/* An output o is none of the input's files: IN, and every file of the
 * set IN belongs to (a set is read whole). */
static bn_status check_not_input(const char *in, const char *o)
{
    BN_TRY(cli_check_distinct("the output", o, "the input", in));
    char stem[4096], part[4200];
    struct stat st;
    if (!set_stem(in, stem, sizeof stem)) return BN_OK;
    for (int k = 0; k < BN_SNAPSHOT_MAX_FILES; k++) {
        snprintf(part, sizeof part, "%s.%d", stem, k);
        if (stat(part, &st) != 0) break;
        BN_TRY(cli_check_distinct("the output", o, "a file of the input's set", part));
    }
    return BN_OK;
}

/* Every file the conversion writes: new or a regular file, never an input. */
static bn_status check_outputs(const char *in, const char *out, int n_files)
{
    char name[4096];
    for (int k = 0; k < n_files; k++) {
        const char *o = out;
        if (n_files > 1) {
            snprintf(name, sizeof name, "%s.%d", out, k);
            o = name;
        }
        BN_TRY(cli_check_output("the output", o));
        BN_TRY(check_not_input(in, o));
    }
    return BN_OK;
}

static void report(size_t n, const char *in, const char *out, const bn_snapshot_write_options *o)
{
    fprintf(stderr, "banyan convert: %zu particles, %s -> %s", n, in, out);
    if (o->n_files > 1) fprintf(stderr, ".0 ... %s.%d", out, o->n_files - 1);
    const int gadget = o->format == BN_FORMAT_GADGET2 || o->format == BN_FORMAT_GADGET2_F2;
    fprintf(stderr, " (%s%s)\n", bn_snapshot_format_name(o->format), gadget && o->big_endian ? ", big-endian" : "");
}

int bn_cmd_convert(int argc, char **argv)
{
    const char *cmd = "convert";
    bn_snapshot_write_options o = {.format = BN_FORMAT_HDF5, .n_files = 1};
    int fmt = -1;
    static const struct option opts[] = {{"format", required_argument, 0, 'f'}, {"big-endian", no_argument, 0, 'b'},
                                         {"files", required_argument, 0, 'n'}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        bn_snapshot_format f;
        if (c == 'h') {
            convert_help();
            return 0;
        } else if (c == 'f') {
            if (bn_snapshot_format_parse(optarg, &f) != BN_OK) return cli_usage_error(cmd, "%s", bn_last_error());
            fmt = (int)f;
        } else if (c == 'b') o.big_endian = 1;
        else if (c == 'n') {
            if (!cli_parse_int(cmd, "--files", optarg, 1, BN_SNAPSHOT_MAX_FILES, &o.n_files)) return 2;
        } else return 2;
    }
    if (optind != argc - 2) return cli_usage_error(cmd, "expected IN and OUT");
    const char *in = argv[optind], *out = argv[optind + 1];
    if (fmt < 0) fmt = format_from_name(out);
    if (fmt < 0) return cli_usage_error(cmd, "cannot tell the format of '%s' from its name: give --format", out);
    o.format = (bn_snapshot_format)fmt;

    bn_particles *p = NULL;
    bn_snapshot_meta meta;
    bn_status s = check_outputs(in, out, o.n_files);
    if (s == BN_OK) s = bn_snapshot_read(in, &p, &meta);
    if (s == BN_OK) s = bn_snapshot_write_as(out, p, &meta, &o);
    if (s == BN_OK) report(p->n, in, out, &o);
    bn_particles_free(p);
    return s == BN_OK ? 0 : cli_fail(cmd, s);
}
