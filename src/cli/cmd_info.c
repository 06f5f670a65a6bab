/* banyan info SNAP.hdf5: what a snapshot holds. */
#include <float.h>
#include <getopt.h>
#include <stdio.h>
#include "cli/cli.h"

static void info_help(void)
{
    printf("usage: banyan info SNAP.hdf5\n\n"
           "Describe a snapshot (GADGET-4/SWIFT-style HDF5, or GADGET-2 or tipsy binary):\n"
           "particle count, total mass, time, units and G, bounding box, centre of mass,\n"
           "whether Acceleration and Potential are present, and the gravity parameters in\n"
           "/Parameters.\n");
}

static void print_extent(const bn_particles *p)
{
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX}, com[3];
    for (size_t i = 0; i < p->n; i++) {
        for (int k = 0; k < 3; k++) {
            double x = p->pos[k][i];
            lo[k] = x < lo[k] ? x : lo[k];
            hi[k] = x > hi[k] ? x : hi[k];
        }
    }
    bn_particles_centre_of_mass(p, com);
    printf("bounding box     x [%.6g, %.6g]  y [%.6g, %.6g]  z [%.6g, %.6g]\n", lo[0], hi[0], lo[1], hi[1], lo[2],
           hi[2]);
    printf("centre of mass   (%.6g, %.6g, %.6g)\n", com[0], com[1], com[2]);
}

static void print_masses_and_ids(const bn_particles *p)
{
    double mmin = p->mass[0], mmax = p->mass[0];
    uint64_t imin = p->id[0], imax = p->id[0];
    for (size_t i = 1; i < p->n; i++) {
        mmin = p->mass[i] < mmin ? p->mass[i] : mmin;
        mmax = p->mass[i] > mmax ? p->mass[i] : mmax;
        imin = p->id[i] < imin ? p->id[i] : imin;
        imax = p->id[i] > imax ? p->id[i] : imax;
    }
    printf("total mass       %.10g (particle masses %.6g to %.6g)\n", bn_particles_total_mass(p), mmin, mmax);
    printf("particle ids     %llu to %llu\n", (unsigned long long)imin, (unsigned long long)imax);
    if (!p->type) return; /* all PartType1 */
    size_t count[BN_PART_TYPES] = {0};
    for (size_t i = 0; i < p->n; i++) count[p->type[i]]++;
    printf("part types      ");
    for (int t = 0; t < BN_PART_TYPES; t++)
        if (count[t]) printf(" PartType%d %zu", t, count[t]);
    printf("\n");
}

static void print_parameters(const bn_snapshot_meta *m)
{
    const bn_units *u = &m->units;
    printf("units            UnitLength_in_cm %.10g, UnitMass_in_g %.10g, UnitVelocity_in_cm_per_s %.10g\n",
           u->length_in_cm, u->mass_in_g, u->velocity_in_cm_per_s);
    printf("G                %.10g\n", u->G);
    printf("forces           Acceleration %s, Potential %s\n", m->has_acceleration ? "yes" : "no",
           m->has_potential ? "yes" : "no");
    if (!m->has_gravity) {
        printf("parameters       no gravity parameters in /Parameters\n");
        return;
    }
    const bn_gravity_params *g = &m->gravity;
    printf("parameters       Method %s, Softening %.6g, OpeningAngle %.6g, OpeningCriterion %s,\n"
           "                 AccelAlpha %.6g, Quadrupole %d, GroupExpansion %.6g, LeafSize %d, GroupSize %d,\n"
           "                 Curve %s, Backend %s\n",
           bn_method_name(g->method), g->softening, g->theta, bn_mac_name(g->mac), g->accel_alpha, g->quadrupole,
           g->group_expansion, g->leaf_size, g->group_size, bn_curve_name(g->curve), bn_backend_name(g->backend));
    if (g->error_target > 0)
        printf("                 ErrorTarget %.6g (the settings above are its choice)\n", g->error_target);
}

int bn_cmd_info(int argc, char **argv)
{
    const char *cmd = "info";
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            info_help();
            return 0;
        }
        return cli_usage_error(cmd, "unknown option");
    }
    if (optind != argc - 1) return cli_usage_error(cmd, "expected one snapshot");
    const char *path = argv[optind];
    bn_particles *p = NULL;
    bn_snapshot_meta m;
    bn_status s = bn_snapshot_read(path, &p, &m);
    if (s != BN_OK) return cli_fail(cmd, s);
    printf("file             %s\n", path);
    printf("particles        %zu\n", p->n);
    print_masses_and_ids(p);
    printf("time             %.10g (redshift %.6g, box size %.6g)\n", m.time, m.redshift, m.box_size);
    print_parameters(&m);
    print_extent(p);
    bn_particles_free(p);
    return 0;
}
