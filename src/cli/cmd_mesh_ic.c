/* banyan mesh-ic PROBLEM -o FILE: an AMR mesh test problem in FLASH's
 * layout (or banyan's), refined where the field varies. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static void mesh_ic_help(void)
{
    printf("usage: banyan mesh-ic maclaurin|sphere|vortex-rings -o FILE [options]\n\n"
           "A test problem on a block-structured AMR mesh over the unit cube, refined\n"
           "to the finest level where the body's surface or the rings' vorticity is,\n"
           "2:1 balanced, written as a FLASH file (PARAMESH layout; yt opens it).\n"
           "maclaurin and sphere: variable dens (a cell cut by the surface holds the\n"
           "density times the fraction inside); vortex-rings: vorx, vory, vorz\n"
           "(paper 002's two rings, R = 0.125, c1 = 227, c2 = 20).\n\n"
           "options:\n"
           "  --levels L        finest refinement level (1..12, default 4)\n"
           "  --min-level L     every block at least this level (default 1; = levels:\n"
           "                    a uniform grid)\n"
           "  --block N         cells per block edge (even, 2..64; default 16)\n"
           "  --radius R        sphere radius, spheroid semi-major axis, ring radius\n"
           "                    (default 0.25; rings 0.125)\n"
           "  --eccentricity E  maclaurin (default 0.9)\n"
           "  --density D       sphere, maclaurin (default 1)\n"
           "  --samples S       sub-cells per axis measuring a cut cell (default 8)\n"
           "  --format F        flash (default) or banyan\n");
}

enum { OPT_FORMAT = 1000 };

static int parse_option(const char *cmd, int c, const char *arg, bn_mesh_ic_params *p, int *flash)
{
    if (c != OPT_FORMAT) {
        const int r = cli_mesh_ic_option(cmd, c, arg, p);
        return r < 0 ? cli_usage_error(cmd, "unknown option") : r;
    }
    if (strcmp(arg, "flash") && strcmp(arg, "banyan"))
        return cli_usage_error(cmd, "--format '%s': expected flash or banyan", arg);
    *flash = !strcmp(arg, "flash");
    return 0;
}

int bn_cmd_mesh_ic(int argc, char **argv)
{
    const char *cmd = "mesh-ic", *out = NULL;
    static const struct option opts[] = {
        {"levels", required_argument, 0, CLI_OPT_LEVELS},   {"min-level", required_argument, 0, CLI_OPT_MIN_LEVEL},
        {"block", required_argument, 0, CLI_OPT_BLOCK},     {"radius", required_argument, 0, CLI_OPT_RADIUS},
        {"eccentricity", required_argument, 0, CLI_OPT_ECC}, {"density", required_argument, 0, CLI_OPT_DENSITY},
        {"samples", required_argument, 0, CLI_OPT_SAMPLES}, {"format", required_argument, 0, OPT_FORMAT},
        {"output", required_argument, 0, 'o'},              {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        mesh_ic_help();
        return 0;
    }
    if (argc < 2 || argv[1][0] == '-') return cli_usage_error(cmd, "expected a problem: maclaurin, sphere or vortex-rings");
    bn_mesh_problem problem;
    if (bn_mesh_problem_parse(argv[1], &problem) != BN_OK) return cli_usage_error(cmd, "%s", bn_last_error());
    bn_mesh_ic_params p = bn_mesh_ic_params_default(problem);
    int flash = 1, c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'o') out = optarg;
        else if (c == 'h') {
            mesh_ic_help();
            return 0;
        } else {
            const int r = parse_option(cmd, c, optarg, &p, &flash);
            if (r != 0) return r;
        }
    }
    if (optind != argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!out) return cli_usage_error(cmd, "missing -o FILE");
    if (p.min_level > p.max_level)
        return cli_usage_error(cmd, "--min-level %d is above --levels %d", p.min_level, p.max_level);
    bn_mesh *m = NULL;
    bn_status s = cli_check_output("the output", out);
    if (s == BN_OK) s = bn_mesh_ic_generate(&p, &m);
    if (s == BN_OK) s = flash ? bn_mesh_write_flash(out, m) : bn_mesh_write(out, m);
    if (s == BN_OK)
        fprintf(stderr, "banyan mesh-ic: wrote %s: %zu leaf blocks of %d^3 cells (%zu cells), levels %d to %d\n", out,
                m->n_blocks, p.block, bn_mesh_cells(m), p.min_level, p.max_level);
    const int rc = s == BN_OK ? 0 : cli_fail(cmd, s);
    bn_mesh_free(m);
    return rc;
}
