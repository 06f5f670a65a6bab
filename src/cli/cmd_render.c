/* banyan render SNAP.hdf5 -o image.png: projected log surface density,
 * one colour per component, along an axis or face-on or edge-on to a disk. */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

static void render_help(void)
{
    printf("usage: banyan render SNAP.hdf5 -o IMAGE.png [options]\n\n"
           "Project the particles along an axis, deposit their mass on a grid\n"
           "(cloud-in-cell) and write the log surface density as a PNG (inferno\n"
           "colours, four decades below the brightest pixel), centred on the centre\n"
           "of mass.\n\n"
           "  -o, --output FILE   the PNG to write (required)\n"
           "  --axis x|y|z        line of sight (default z: the image shows x right, y up;\n"
           "                      x shows y, z; y shows z, x)\n"
           "  --size WxH          pixels (default 800x800; 'N' means NxN)\n"
           "  --extent E          half-size of the view along the shorter side, in length\n"
           "                      units (default 0: the radius holding 98%% of the mass)\n"
           "  --face-on           look down the disk's angular momentum (the disk: the\n"
           "                      PartType2 particles, or all without any), centred and\n"
           "                      framed on the disk; --axis is then ignored\n"
           "  --edge-on           the disk's angular momentum points up in the picture\n"
           "  --component NAME    draw one component only: halo, disk, bulge (PartType1-3)\n"
           "                      or typeN\n\n"
           "A snapshot of several components draws each in its own colour, the colours\n"
           "added: halo dim blue, disk warm white, bulge orange (typeN: 0 green, 4\n"
           "magenta, 5 grey), each over four decades below its own brightest pixel.\n\n"
           "A mesh file (FLASH or banyan layout) is drawn as a slice instead:\n"
           "  --var V             the variable (default: the first of gpot, dens, psiz)\n"
           "  --slice C           the slice's coordinate along --axis (default: the\n"
           "                      domain's middle); colours span the slice's values\n");
}

static int parse_axis(const char *cmd, const char *s, int *axis)
{
    if (s && strlen(s) == 1 && s[0] >= 'x' && s[0] <= 'z') {
        *axis = s[0] - 'x';
        return 1;
    }
    cli_usage_error(cmd, "--axis expects x, y or z, got '%s'", s ? s : "");
    return 0;
}

static int parse_size(const char *cmd, const char *s, int *w, int *h)
{
    char *end = NULL;
    errno = 0;
    long a = strtol(s, &end, 10), b = a;
    if (end != s && *end == 'x') {
        const char *t = end + 1;
        b = strtol(t, &end, 10);
        if (end == t) end = (char *)s; /* "800x" */
    }
    /* ERANGE: a side beyond long, clamped by strtol, is out of range too */
    if (end == s || *end != '\0' || errno != 0 || a < 1 || b < 1 || a > 16384 || b > 16384) {
        cli_usage_error(cmd, "--size expects WxH with each side in [1, 16384], got '%s'", s);
        return 0;
    }
    *w = (int)a;
    *h = (int)b;
    return 1;
}

/* A slice of a mesh variable. */
static int render_mesh(const char *in, const char *out, const char *var, double slice, const bn_render_params *r)
{
    bn_mesh *m = NULL;
    bn_status s = bn_mesh_read(in, var, &m);
    static const char *const defaults[] = {"gpot", "dens", "psiz"};
    for (int k = 0; s == BN_OK && !var && k < 3; k++)
        if (bn_mesh_var_index(m, defaults[k]) >= 0) var = defaults[k];
    if (s == BN_OK && !var) var = m->n_vars > 0 ? m->var_name[0] : "";
    if (s == BN_OK) s = bn_mesh_render_slice(out, m, var, slice, r);
    bn_mesh_free(m);
    if (s != BN_OK) return cli_fail("render", s);
    fprintf(stderr, "banyan render: wrote %s (%d x %d pixels, %s on a slice across %c)\n", out, r->width, r->height,
            var, 'x' + r->axis);
    return 0;
}

int bn_cmd_render(int argc, char **argv)
{
    const char *cmd = "render", *out = NULL;
    bn_render_params r = bn_render_params_default();
    static const struct option opts[] = {{"output", required_argument, 0, 'o'}, {"axis", required_argument, 0, 'a'},
                                         {"size", required_argument, 0, 's'},   {"extent", required_argument, 0, 'e'},
                                         {"var", required_argument, 0, 'v'},    {"slice", required_argument, 0, 'c'},
                                         {"face-on", no_argument, 0, 'F'},      {"edge-on", no_argument, 0, 'E'},
                                         {"component", required_argument, 0, 'C'},
                                         {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *var = NULL;
    double slice = NAN;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'o') out = optarg;
        else if (c == 'a' && !parse_axis(cmd, optarg, &r.axis)) return 2;
        else if (c == 's' && !parse_size(cmd, optarg, &r.width, &r.height)) return 2;
        else if (c == 'e' && !cli_parse_double_in(cmd, "--extent", optarg, CLI_NONNEGATIVE, &r.extent)) return 2;
        else if (c == 'v') var = optarg;
        else if (c == 'c' && !cli_parse_double(cmd, "--slice", optarg, &slice)) return 2;
        else if (c == 'F' || c == 'E') {
            const bn_render_view v = c == 'F' ? BN_VIEW_FACE_ON : BN_VIEW_EDGE_ON;
            if (r.view != BN_VIEW_AXIS && r.view != v) return cli_usage_error(cmd, "give one of --face-on and --edge-on");
            r.view = v;
        } else if (c == 'C' && (r.component = bn_part_type_from_name(optarg)) < 0)
            return cli_usage_error(cmd, "--component expects halo, disk, bulge or type0..type5, got '%s'", optarg);
        else if (c == 'h') {
            render_help();
            return 0;
        } else if (c == '?') return cli_usage_error(cmd, "unknown option");
    }
    if (optind != argc - 1) return cli_usage_error(cmd, "expected one snapshot");
    if (!out) return cli_usage_error(cmd, "missing -o IMAGE.png");
    /* a picture written over its snapshot would destroy it */
    bn_status s = cli_check_distinct("the picture", out, "the snapshot", argv[optind]);
    if (s == BN_OK) s = cli_check_output("the picture", out);
    if (s != BN_OK) return cli_fail(cmd, s);
    if (bn_mesh_file_detect(argv[optind])) return render_mesh(argv[optind], out, var, slice, &r);
    bn_particles *p = NULL;
    s = bn_snapshot_read(argv[optind], &p, NULL);
    if (s == BN_OK) s = bn_render_png(out, p, &r);
    bn_particles_free(p);
    if (s != BN_OK) return cli_fail(cmd, s);
    if (r.view == BN_VIEW_AXIS)
        fprintf(stderr, "banyan render: wrote %s (%d x %d pixels, along %c)\n", out, r.width, r.height, 'x' + r.axis);
    else
        fprintf(stderr, "banyan render: wrote %s (%d x %d pixels, %s)\n", out, r.width, r.height,
                r.view == BN_VIEW_FACE_ON ? "face-on" : "edge-on");
    return 0;
}
