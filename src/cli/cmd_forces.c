/* banyan forces IN.hdf5 -o OUT.hdf5: accelerations and potentials. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "core/error.h"
#include "cli/gravity_options.h"
#include "core/timer.h"

static void forces_help(void)
{
    printf("usage: banyan forces IN.hdf5 -o OUT.hdf5 [options]\n\n"
           "Compute the acceleration and potential of every particle of IN and write\n"
           "IN's particles with Acceleration and Potential to OUT.\n\n");
    cli_gravity_options_help();
}

int bn_cmd_forces(int argc, char **argv)
{
    const char *cmd = "forces", *out_path = NULL;
    bn_gravity_params g = bn_gravity_params_default();
    struct option opts[CLI_GRAVITY_MAX_OPTIONS + 3];
    int n = cli_gravity_options(opts);
    opts[n++] = (struct option){"output", required_argument, 0, 'o'};
    opts[n++] = (struct option){"help", no_argument, 0, 'h'};
    opts[n] = (struct option){0, 0, 0, 0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'o') out_path = optarg;
        else if (c == 'h') {
            forces_help();
            return 0;
        } else {
            int r = cli_gravity_option(cmd, c, optarg, &g);
            if (r != 0) return r;
        }
    }
    if (optind != argc - 1) return cli_usage_error(cmd, "expected one input snapshot");
    if (!out_path) return cli_usage_error(cmd, "missing -o OUT.hdf5");
    const char *in_path = argv[optind];

    bn_particles *p = NULL;
    bn_snapshot_meta meta;
    bn_gravity *grav = NULL;
    const bn_comm *comm = cli_comm();
    const int ranks = bn_comm_size(comm), root = bn_comm_rank(comm) == 0;
    bn_domain_stats dst = {0};
    /* before the forces are computed: OUT may equal IN (rewritten with its
     * forces, atomically), not name a directory, a FIFO or a device */
    bn_status s = bn_comm_agree(comm, cli_check_output("the output", out_path));
    if (s == BN_OK) s = bn_comm_agree(comm, bn_snapshot_read(in_path, &p, &meta));
    /* The call's wall time: direct summation has no stage times (t_total 0). */
    double t_call = 0;
    if (s == BN_OK && ranks > 1) {
        s = cli_forces_ranks(comm, &g, p, &grav, &t_call, &dst);
        if (s != BN_OK) s = bn_fail_context(s, "%s", in_path);
    } else if (s == BN_OK) {
        s = bn_gravity_create(&grav, &g);
        double t0 = bn_wall_seconds();
        if (s == BN_OK) s = bn_gravity_compute(grav, p);
        t_call = bn_wall_seconds() - t0;
        if (s != BN_OK) s = bn_fail_context(s, "%s", in_path); /* whose particles */
    }
    if (s == BN_OK) {
        meta.gravity = *bn_gravity_params_used(grav); /* an error target's choice */
        meta.gravity.backend = bn_gravity_backend(grav);
        meta.accuracy = *bn_gravity_accuracy(grav);
        meta.units.G = g.G;
        s = bn_comm_agree(comm, root ? bn_snapshot_write(out_path, p, &meta) : BN_OK); /* one writer */
    }
    if (s == BN_OK && root) {
        const bn_force_stats *st = bn_gravity_stats(grav);
        fprintf(stderr, "banyan forces: %zu particles, method %s, backend %s, %.3g s\n", p->n,
                bn_method_name(g.method), st->backend ? st->backend : "?", t_call);
        if (ranks > 1) {
            fprintf(stderr, "  %d ranks: domains along the curve in %.3g s, largest share %.4f of the mean (rank 0 "
                    "sent %zu particles, received %zu)\n", ranks, dst.t_total, dst.imbalance, dst.sent, dst.received);
            if (g.method == BN_METHOD_TREE)
                fprintf(stderr, "  rank 0: tree %.3g s, walks %.3g s (exchange of locally essential trees %.3g s: "
                        "sent %zu cells and %zu bodies, received %zu and %zu)\n", st->t_total - st->t_walk,
                        st->t_walk, st->t_exchange, st->let_cells_sent, st->let_bodies_sent, st->let_cells_received,
                        st->let_bodies_received);
        }
        if (g.error_target > 0 && g.method == BN_METHOD_TREE) cli_print_accuracy(stderr, "  ", &meta.gravity,
                                                                                 &meta.accuracy);
    }
    int rc = s == BN_OK ? 0 : root ? cli_fail(cmd, s) : 1;
    bn_gravity_free(grav);
    bn_particles_free(p);
    return rc;
}
