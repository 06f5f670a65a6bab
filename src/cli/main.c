/* banyan: the command-line program. Dispatches to one file per command. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} command;

static const command commands[] = {
    {"ic", bn_cmd_ic, "make initial conditions (plummer, hernquist, nfw, uniform-sphere, uniform-cube)"},
    {"forces", bn_cmd_forces, "compute accelerations and potentials of a snapshot"},
    {"compare", bn_cmd_compare, "relative force errors of one snapshot against another"},
    {"run", bn_cmd_run, "run a simulation from a YAML parameter file"},
    {"render", bn_cmd_render, "render the projected log density of a snapshot to PNG"},
    {"info", bn_cmd_info, "describe a snapshot"},
    {"bench", bn_cmd_bench, "time the force computation stage by stage"},
    {"potential", bn_cmd_potential, "potential (or streamfunction) of a field on an AMR mesh file"},
    {"mesh-ic", bn_cmd_mesh_ic, "make an AMR mesh test problem (maclaurin, sphere, vortex-rings)"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "banyan %s: a gravitational N-body tree code for GPUs\n\n", BN_VERSION_STRING);
    fprintf(f, "usage: banyan COMMAND [options]   (banyan COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("banyan %s (%s)\n", BN_VERSION_STRING, BANYAN_GIT_REVISION);
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "banyan: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
