/* banyan galaxy-shape SNAP.hdf5 (--model m31 | --model-file F.yml): what
 * a galaxy's evolution should keep (bn_galaxy_shape_measure), one line
 * per number, for scripts (scripts/galaxy-evolution.sh) to compare. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include "cli/cli.h"

static void shape_help(void)
{
    printf("usage: banyan galaxy-shape SNAP.hdf5 (--model m31 | --model-file MODEL.yml)\n\n"
           "Measure a galaxy snapshot against what its model sets: per component (halo,\n"
           "disk, bulge: PartType1-3) the radii about its centre of mass holding 10, 50 and\n"
           "90%% of its mass; the disk's scale height (from the median |z| about its centre\n"
           "of mass, by the model's vertical profile) and its Toomre Q in the ring [0.8,\n"
           "1.2] x the model's Q radius. One 'name value' line each, length in the\n"
           "snapshot's units:\n"
           "  lagrangian_10_halo 12.3 ... scale_height 0.6, toomre_q 2.0, q_ring_n 812\n\n"
           "  --model NAME        the built-in model (m31)\n"
           "  --model-file FILE   a YAML model (as banyan ic galaxy)\n");
}

static void print_shape(const bn_galaxy_shape *s)
{
    static const int percent[3] = {10, 50, 90};
    for (int t = 0; t < BN_PART_TYPES; t++)
        for (int f = 0; f < 3 && s->lagrangian[t][2] > 0; f++)
            printf("lagrangian_%d_%s %.6g\n", percent[f], bn_part_type_name(t), s->lagrangian[t][f]);
    printf("scale_height %.6g\ntoomre_q %.6g\nq_ring_n %zu\n", s->scale_height, s->toomre_q, s->q_ring_n);
}

int bn_cmd_galaxy_shape(int argc, char **argv)
{
    const char *cmd = "galaxy-shape", *model = NULL, *file = NULL;
    static const struct option opts[] = {{"model", required_argument, 0, 'm'},
                                         {"model-file", required_argument, 0, 'f'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'm') model = optarg;
        else if (c == 'f') file = optarg;
        else if (c == 'h') {
            shape_help();
            return 0;
        } else return cli_usage_error(cmd, "unknown option");
    }
    if (optind != argc - 1) return cli_usage_error(cmd, "expected one snapshot");
    bn_galaxy_model m;
    int rc = cli_galaxy_model(cmd, model, file, &m);
    if (rc) return rc;
    bn_particles *p = NULL;
    bn_galaxy_shape s;
    bn_status st = bn_snapshot_read(argv[optind], &p, NULL);
    if (st == BN_OK) st = bn_galaxy_shape_measure(&m, p, &s);
    bn_particles_free(p);
    if (st != BN_OK) return cli_fail(cmd, st);
    print_shape(&s);
    return 0;
}
