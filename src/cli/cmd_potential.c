/* banyan potential MESH -o OUT: the potential (and acceleration) of a
 * density, or the streamfunction (and velocity) of a vorticity, at every
 * leaf cell of a FLASH or banyan mesh file. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "core/error.h"
#include "core/timer.h"
#include "parallel/field_dist.h"

static void potential_help(void)
{
    printf("usage: banyan potential MESH -o OUT [options]\n\n"
           "The field of the mesh's sources at every leaf cell centre, by the tree\n"
           "(isolated boundaries; the nearest cells as exact uniform cubes). MESH is a\n"
           "FLASH checkpoint or plot file or a banyan mesh; OUT is a copy of it with\n"
           "the results as new variables: gpot, gacx, gacy, gacz (gravity) or psix,\n"
           "psiy, psiz and velx, vely, velz (vorticity). FLASH restarts from it and\n"
           "yt opens it.\n\n"
           "options:\n"
           "  --source V        dens (gravity; the default) or vorx,vory,vorz\n"
           "                    (three components: vorticity)\n"
           "  --velocity        vorticity: also u = curl psi (the default)\n"
           "  --no-velocity     vorticity: psi only\n"
           "  --smoothing S     vorticity: paper 002's smoothed kernel, e = S x the\n"
           "                    finest cell side (0: exact cubes; the default)\n"
           "  --method M        tree (the default; any mesh) or fft (uniform meshes: the\n"
           "                    same kernel convolved by FFTs, zero padded, in double)\n"
           "  --theta T         opening angle (default 0.5)\n"
           "  --error-target E  choose theta: p99 of the error on a sample <= E\n"
           "  --near N          cells within N of their sides act as exact cubes\n"
           "                    (0..4, default 1)\n"
           "  --leaf-size N     sources per leaf of the tree (default 16)\n"
           "  --particles SNAP  the particles of a snapshot as extra sources (gravity)\n"
           "  --G G             gravitational constant (default 1)\n"
           "  --backend B       auto, cpu or gpu (default auto)\n"
           "  --device D|auto   CUDA device (default auto: each rank its node's GPU,\n"
           "                    0 in one process)\n\n"
           "Under mpirun every rank reads the mesh, the leaf blocks are cut along the\n"
           "curve into one range per rank, each rank computes the field at its\n"
           "blocks' cells (every rank builds the tree over all source cells), and\n"
           "rank 0 gathers and writes OUT: the same values as one process on the\n"
           "same backend, bit for bit. The tree only (--method fft is refused); auto\n"
           "takes the CPU, --backend gpu each rank's GPU (--device, ranks may share\n"
           "one).\n");
}

enum { OPT_PART = 1000 };

static int parse(int argc, char **argv, bn_field_params *p, const char **out, const char **particles, int *help)
{
    const char *cmd = "potential";
    static const struct option opts[] = {
        {"source", required_argument, 0, CLI_OPT_SOURCE},   {"velocity", no_argument, 0, CLI_OPT_VEL},
        {"no-velocity", no_argument, 0, CLI_OPT_NOVEL},     {"smoothing", required_argument, 0, CLI_OPT_SMOOTH},
        {"theta", required_argument, 0, CLI_OPT_THETA},     {"error-target", required_argument, 0, CLI_OPT_TARGET},
        {"near", required_argument, 0, CLI_OPT_NEAR},       {"leaf-size", required_argument, 0, CLI_OPT_LEAF},
        {"particles", required_argument, 0, OPT_PART},      {"G", required_argument, 0, CLI_OPT_G},
        {"backend", required_argument, 0, CLI_OPT_BACKEND}, {"device", required_argument, 0, CLI_OPT_DEVICE},
        {"method", required_argument, 0, CLI_OPT_METHOD},   {"output", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'o') *out = optarg;
        else if (c == 'h') {
            *help = 1;
            return 0;
        } else if (c == OPT_PART) *particles = optarg;
        else {
            const int r = cli_field_option(cmd, c, optarg, p);
            if (r != 0) return r < 0 ? cli_usage_error(cmd, "unknown option") : r;
        }
    }
    if (optind != argc - 1) return cli_usage_error(cmd, "expected one mesh file");
    if (!*out) return cli_usage_error(cmd, "missing -o OUT");
    return 0;
}

/* The output: a copy of a FLASH input with the new variables, or the
 * banyan layout for a banyan input. */
static bn_status write_output(const char *in, const char *out, const bn_mesh *m, const bn_field_params *p)
{
    const char *vars = p->kind == BN_FIELD_VORTICITY ? (p->velocity ? "psix,psiy,psiz,velx,vely,velz" : "psix,psiy,psiz")
                                                     : "gpot,gacx,gacy,gacz";
    if (m->from_flash) return bn_mesh_write_flash_copy(in, out, m, vars);
    return bn_mesh_write(out, m);
}

int bn_cmd_potential(int argc, char **argv)
{
    const char *cmd = "potential", *out = NULL, *particles = NULL;
    bn_field_params p = bn_field_params_default(BN_FIELD_GRAVITY);
    int help = 0;
    const int r = parse(argc, argv, &p, &out, &particles, &help);
    const bn_comm *comm = cli_comm();
    const int ranks = bn_comm_size(comm), root = bn_comm_rank(comm) == 0;
    if (help) {
        if (root) potential_help();
        return 0;
    }
    if (r != 0) return r;
    const char *in = argv[optind];
    bn_mesh *m = NULL;
    bn_particles *extra = NULL;
    bn_field *f = NULL;
    bn_field_dist_stats dst;
    memset(&dst, 0, sizeof dst);
    /* across ranks auto takes the CPU (ranks on one node would share its
     * GPU); --backend gpu gives each rank its device's tree */
    if (ranks > 1 && p.backend == BN_BACKEND_AUTO) p.backend = BN_BACKEND_CPU;
    /* every step that can fail agreed: a failure on any rank stops all of
     * them with its message, and rank 0 prints it */
    bn_status s = bn_field_params_validate(&p);
    if (s == BN_OK && ranks > 1 && p.method == BN_FIELD_FFT)
        s = bn_fail(BN_ERR_UNSUPPORTED, "--method fft runs in one process; under mpirun (%d ranks) use --method tree "
                    "(the default)", ranks);
    if (s == BN_OK) s = cli_check_output("the output", out);
    if (s == BN_OK) s = cli_check_distinct("the output", out, "the mesh", in);
    if (s == BN_OK && particles) s = cli_check_distinct("the output", out, "the particles", particles);
    s = bn_comm_agree(comm, s);
    if (s == BN_OK) s = bn_comm_agree(comm, bn_mesh_read(in, NULL, &m));
    if (s == BN_OK && particles) s = bn_comm_agree(comm, bn_snapshot_read(particles, &extra, NULL));
    if (s == BN_OK) s = bn_comm_agree(comm, bn_field_create(&f, &p));
    const double t0 = bn_wall_seconds();
    if (s == BN_OK) s = ranks > 1 ? bn_field_mesh_dist(f, comm, m, extra, 0, &dst) : bn_field_mesh(f, m, extra);
    const double t_call = bn_wall_seconds() - t0;
    if (s == BN_OK) s = bn_comm_agree(comm, root ? write_output(in, out, m, &p) : BN_OK); /* one writer */
    if (s == BN_OK && root) {
        const bn_field_stats *st = bn_field_stats_get(f);
        if (p.method == BN_FIELD_FFT)
            fprintf(stderr, "banyan potential: %zu cells (%zu blocks), %s, FFT, backend %s, %.3g s\n", bn_mesh_cells(m),
                    m->n_blocks, p.kind == BN_FIELD_VORTICITY ? "vorticity" : "gravity", st->backend, t_call);
        else
            fprintf(stderr, "banyan potential: %zu cells (%zu blocks), %zu sources, %s, theta %g, backend %s, %.3g s\n",
                    bn_mesh_cells(m), m->n_blocks, st->n_sources, p.kind == BN_FIELD_VORTICITY ? "vorticity" : "gravity",
                    st->theta, st->backend, t_call);
        if (p.error_target > 0)
            fprintf(stderr, "  error target %g: theta %g chosen, p99 %.3g on the sample (%.3g s)\n", p.error_target,
                    st->theta, st->sample_p99, st->t_tuning);
        if (ranks > 1)
            fprintf(stderr, "  %d ranks: leaf blocks along the curve, largest share %.4f of the mean cells (rank 0: "
                    "%zu blocks, %zu cells); solve %.3g s on the slowest rank, %.3g s on rank 0, gather %.3g s\n",
                    ranks, dst.cells_mean > 0 ? dst.cells_max / dst.cells_mean : 1.0, dst.blocks, dst.cells,
                    dst.t_solve_max, dst.t_solve, dst.t_gather);
    }
    const int rc = s == BN_OK ? 0 : root ? cli_fail(cmd, s) : 1;
    bn_field_free(f);
    bn_particles_free(extra);
    bn_mesh_free(m);
    return rc;
}
