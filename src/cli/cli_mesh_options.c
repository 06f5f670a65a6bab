/* The options that potential, mesh-ic and bench --mesh share (cli.h):
 * one parser each for the solver's and the test problem's settings, so
 * that a range or a message cannot drift between the commands. */
#include <string.h>
#include "cli/cli.h"
#include "io/mesh_h5.h"
#include "mesh/mesh_internal.h"

/* --source sets what it decides, the kind and its variables: the options
 * given before it (theta, --no-velocity, the backend) stay. A name given
 * twice is refused here: vorx,vorx,vorz would be a field of the wrong
 * vorticity. Other faults of the list are the library's to name. */
static int source_option(const char *cmd, const char *arg, bn_field_params *p)
{
    if (strlen(arg) >= sizeof p->source_vars) return cli_usage_error(cmd, "--source '%.40s...' is too long", arg);
    char names[4][BN_MESH_NAME_LEN];
    const int n = bn_mesh_split_names(arg, names, 4, "source variables");
    const int twice = n > 0 ? bn_mesh_names_repeated(names, n) : -1;
    bn_clear_error();
    if (twice >= 0) return cli_usage_error(cmd, "--source '%s' names %s twice", arg, names[twice]);
    p->kind = strchr(arg, ',') ? BN_FIELD_VORTICITY : BN_FIELD_GRAVITY;
    memcpy(p->source_vars, arg, strlen(arg) + 1);
    return 0;
}

int cli_field_option(const char *cmd, int c, const char *arg, bn_field_params *p)
{
    switch (c) {
    case CLI_OPT_SOURCE: return source_option(cmd, arg, p);
    case CLI_OPT_METHOD:
        if (strcmp(arg, "tree") && strcmp(arg, "fft"))
            return cli_usage_error(cmd, "--method '%s': expected tree or fft", arg);
        p->method = strcmp(arg, "tree") ? BN_FIELD_FFT : BN_FIELD_TREE;
        return 0;
    case CLI_OPT_VEL: p->velocity = 1; return 0;
    case CLI_OPT_NOVEL: p->velocity = 0; return 0;
    case CLI_OPT_SMOOTH:
        return cli_parse_double_in(cmd, "--smoothing", arg, (cli_range){0, 100, 0, 0}, &p->smoothing) ? 0 : 2;
    case CLI_OPT_THETA: return cli_parse_double_in(cmd, "--theta", arg, (cli_range){0, 2, 0, 0}, &p->theta) ? 0 : 2;
    case CLI_OPT_TARGET:
        return cli_parse_double_in(cmd, "--error-target", arg, (cli_range){0, 1, 1, 1}, &p->error_target) ? 0 : 2;
    case CLI_OPT_NEAR: return cli_parse_int(cmd, "--near", arg, 0, 4, &p->near_cells) ? 0 : 2;
    case CLI_OPT_LEAF: return cli_parse_int(cmd, "--leaf-size", arg, 1, BN_LEAF_SIZE_MAX, &p->leaf_size) ? 0 : 2;
    case CLI_OPT_G: return cli_parse_double_in(cmd, "--G", arg, (cli_range){0, 1e300, 1, 0}, &p->G) ? 0 : 2;
    case CLI_OPT_BACKEND:
        return bn_backend_parse(arg, &p->backend) == BN_OK ? 0 : cli_usage_error(cmd, "%s", bn_last_error());
    case CLI_OPT_DEVICE: return cli_parse_device(cmd, arg, &p->device) ? 0 : 2;
    default: return -1;
    }
}

int cli_mesh_ic_option(const char *cmd, int c, const char *arg, bn_mesh_ic_params *p)
{
    switch (c) {
    case CLI_OPT_LEVELS: return cli_parse_int(cmd, "--levels", arg, 1, 12, &p->max_level) ? 0 : 2;
    case CLI_OPT_MIN_LEVEL: return cli_parse_int(cmd, "--min-level", arg, 1, 12, &p->min_level) ? 0 : 2;
    case CLI_OPT_BLOCK: return cli_parse_int(cmd, "--block", arg, 2, BN_MESH_MAX_BLOCK_CELLS, &p->block) ? 0 : 2;
    case CLI_OPT_RADIUS:
        return cli_parse_double_in(cmd, "--radius", arg, (cli_range){0, 0.5, 1, 0}, &p->radius) ? 0 : 2;
    case CLI_OPT_ECC:
        return cli_parse_double_in(cmd, "--eccentricity", arg, (cli_range){0, 1, 0, 1}, &p->eccentricity) ? 0 : 2;
    case CLI_OPT_DENSITY:
        return cli_parse_double_in(cmd, "--density", arg, (cli_range){0, 1e300, 1, 0}, &p->density) ? 0 : 2;
    case CLI_OPT_SAMPLES: return cli_parse_int(cmd, "--samples", arg, 1, 64, &p->samples) ? 0 : 2;
    default: return -1;
    }
}
