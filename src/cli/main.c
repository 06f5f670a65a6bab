/* banyan: the command-line program. Dispatches to one file per command. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

#ifdef BANYAN_HAVE_CUDA
#define BANYAN_BUILT_WITH_CUDA 1
#else
#define BANYAN_BUILT_WITH_CUDA 0
#endif

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
    int ranks; /* spreads its work over the ranks of mpirun */
} command;

static const command commands[] = {
    {"ic", bn_cmd_ic, "make initial conditions (plummer, hernquist, nfw, uniform-sphere, uniform-cube, galaxy)", 0},
    {"forces", bn_cmd_forces, "compute accelerations and potentials of a snapshot (also under mpirun)", 1},
    {"compare", bn_cmd_compare, "relative force errors of one snapshot against another", 0},
    {"run", bn_cmd_run, "run a simulation from a YAML parameter file (also under mpirun)", 1},
    {"render", bn_cmd_render, "render the projected log density of a snapshot to PNG", 0},
    {"convert", bn_cmd_convert, "write a snapshot in another format (HDF5, GADGET-2, tipsy)", 0},
    {"info", bn_cmd_info, "describe a snapshot", 0},
    {"plot", bn_cmd_plot, "an energy log or a benchmark's errors as PNG (Python's matplotlib)", 0},
    {"galaxy-shape", bn_cmd_galaxy_shape, "a galaxy snapshot's Lagrangian radii, disk scale height and Q", 0},
    {"bench", bn_cmd_bench, "time the force computation stage by stage (also under mpirun)", 1},
    {"potential", bn_cmd_potential, "potential (or streamfunction) of a field on an AMR mesh file (also under mpirun)", 1},
    {"mesh-ic", bn_cmd_mesh_ic, "make an AMR mesh test problem (maclaurin, sphere, vortex-rings)", 0},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "banyan %s: a gravitational N-body tree code for GPUs\n\n", BN_VERSION_STRING);
    fprintf(f, "usage: banyan COMMAND [options]   (banyan COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

static bn_comm *world;
const bn_comm *cli_comm(void) { return world; }

/* Under mpirun with several ranks only the commands that spread their
 * work over the ranks run; the others would run P times side by side
 * (and write the same files). */
static int run_command(const command *cmd, int argc, char **argv)
{
    if (bn_comm_world(&world) != BN_OK) return cli_fail(cmd->name, BN_ERR_UNSUPPORTED);
    int rc;
    if (bn_comm_size(world) > 1 && !cmd->ranks) {
        if (bn_comm_rank(world) == 0)
            fprintf(stderr, "banyan %s: error: runs in one process; under mpirun (%d ranks) only 'banyan forces', "
                    "'banyan run' and 'banyan potential' spread their work over the ranks\n", cmd->name,
                    bn_comm_size(world));
        rc = 2;
    } else {
        /* every rank parses the same command line: rank 0 alone reports
         * getopt's complaints (cli_usage_error does the same) */
        opterr = bn_comm_rank(world) == 0;
        rc = cmd->fn(argc, argv);
    }
    bn_comm_free(world);
    return rc;
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
        printf("built with:%s%s\n", BANYAN_BUILT_WITH_CUDA ? " cuda" : "", bn_comm_have_mpi() ? " mpi" : "");
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) return run_command(commands + i, argc - 1, argv + 1);
    fprintf(stderr, "banyan: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
