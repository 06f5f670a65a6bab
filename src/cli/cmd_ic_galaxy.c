/* banyan ic galaxy (--model m31 | --model-file F.yml) [--n N] -o FILE.hdf5:
 * a halo, bulge and disk in equilibrium (bn_ic_galaxy). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/run.h"
#include "core/error.h"
#include "io/plot_png.h"

#define PLOT_RINGS 16   /* measured points, out to 4 R_d */
#define PLOT_MODEL 256  /* model curve points            */

static void galaxy_help(void)
{
    printf("usage: banyan ic galaxy (--model m31 | --model-file MODEL.yml) [--n N] -o FILE.hdf5 [options]\n\n"
           "Sample a galaxy: an NFW or Hernquist halo and a Hernquist bulge with isotropic\n"
           "velocities from their Eddington distribution functions in the total potential,\n"
           "and an exponential disk with epicyclic velocities (Toomre Q at a radius,\n"
           "asymmetric drift); each truncated by MAGI's taper 0.5 erfc((r - cutoff)/width).\n"
           "Particles: halo /PartType1, disk /PartType2, bulge /PartType3, ids 1..N, centre\n"
           "of mass at rest at the origin; the model's units and G go into the file (banyan\n"
           "run takes G from it unless Gravity:G is set). The same seed gives the same\n"
           "particles bit for bit, whatever the number of threads.\n\n"
           "models:\n"
           "  m31     GOTHIC's Andromeda (kpc, Msun, km/s): NFW halo 8.11e11 Msun, r_s 7.63;\n"
           "          Hernquist bulge 3.24e10 Msun, a 0.61; exponential disk 3.66e10 Msun,\n"
           "          R_d 5.4, z_d 0.6 (sech^2), Q = 2 at R_d; equal particle masses\n\n"
           "options:\n"
           "      --model NAME        a built-in model (m31)\n"
           "      --model-file FILE   a YAML model (sections units, halo, bulge, disk;\n"
           "                          examples/galaxies/m31.yml lists every key)\n"
           "  -n, --n N               particles shared by the components without their own\n"
           "                          count, by mass (2^k accepted)\n"
           "  -o, --output FILE       output snapshot (temporary file + rename)\n"
           "  -s, --seed S            random seed, an integer >= 0 (default 1)\n"
           "      --plots DIR         also DIR/rotation_curve.png (v_c against R: the model's\n"
           "                          curve in black, red points from banyan's tree forces on\n"
           "                          the disk's midplane particles) and DIR/toomre_q.png (Q\n"
           "                          against R: the model's and, red, the disk particles'),\n"
           "                          16 rings out to 4 R_d, axes from 0 (Q's to 3 Q)\n"
           "  -h, --help              this help\n");
}

typedef struct galaxy_opts {
    size_t n;
    uint64_t seed;
    const char *out, *name, *plots;
} galaxy_opts;

int cli_galaxy_model(const char *cmd, const char *model, const char *file, bn_galaxy_model *m)
{
    if (!model == !file) return cli_usage_error(cmd, "give one of --model m31 and --model-file MODEL.yml");
    if (model && strcmp(model, "m31")) return cli_usage_error(cmd, "unknown model '%s' (m31)", model);
    if (model) *m = bn_galaxy_model_m31();
    else if (bn_galaxy_model_read(file, m) != BN_OK) return cli_usage_error(cmd, "%s", bn_last_error());
    return 0;
}

static int galaxy_parse(int argc, char **argv, bn_galaxy_model *m, galaxy_opts *o)
{
    const char *cmd = "ic galaxy", *model = NULL, *file = NULL;
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"model-file", required_argument, 0, 'f'},
                                         {"n", required_argument, 0, 'n'},     {"output", required_argument, 0, 'o'},
                                         {"seed", required_argument, 0, 's'},  {"plots", required_argument, 0, 'p'},
                                         {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "n:o:s:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'f': file = optarg; break;
        case 'n': if (!cli_parse_size(cmd, "--n", optarg, &o->n)) return 2; break;
        case 'o': o->out = optarg; break;
        case 's': if (!cli_parse_u64(cmd, "--seed", optarg, &o->seed)) return 2; break;
        case 'p': o->plots = optarg; break;
        case 'h': galaxy_help(); return -1;
        default: return cli_usage_error(cmd, "unknown option");
        }
    }
    if (optind != argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    int rc = cli_galaxy_model(cmd, model, file, m);
    if (rc) return rc;
    if (!o->out) return cli_usage_error(cmd, "missing -o FILE.hdf5");
    o->name = model ? model : file;
    if (o->plots && m->disk.profile == BN_GALAXY_NONE) return cli_usage_error(cmd, "--plots needs a model with a disk");
    return 0;
}

/* Model curve (line) and measured rings (points) of one quantity. */
static bn_status plot_pair(const char *dir, const char *file, double ymax, const double *Rm, const double *ym,
                           const double *Rr, const double *yr)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
        return bn_fail(BN_ERR_ARGUMENT, "--plots: directory name too long: '%s'", dir);
    const bn_plot_series s[2] = {{Rm, ym, PLOT_MODEL, 0, {0, 0, 0}}, {Rr, yr, PLOT_RINGS, 1, {220, 30, 30}}};
    return bn_plot_png(path, 800, 600, ymax, s, 2);
}

/* The disk's v_c and Q, the model's and measured (tree forces on p). */
static bn_status write_plots(const char *dir, const bn_galaxy_model *m, bn_particles *p)
{
    const double R_max = 4 * m->disk.scale;
    bn_gravity_params gp = bn_gravity_params_default();
    gp.G = m->units.G;
    gp.softening = 1e-3 * m->disk.scale;
    bn_gravity *g = NULL;
    BN_TRY(run_make_dirs(dir));
    BN_TRY(bn_gravity_create(&g, &gp));
    bn_status s = bn_gravity_compute(g, p);
    bn_gravity_free(g);
    bn_galaxy_ring ring[PLOT_RINGS];
    bn_galaxy_disk_point pt[PLOT_MODEL];
    double Rm[PLOT_MODEL], vm[PLOT_MODEL], qm[PLOT_MODEL], Rr[PLOT_RINGS], vr[PLOT_RINGS], qr[PLOT_RINGS];
    for (int i = 0; i < PLOT_MODEL; i++) Rm[i] = R_max * (i + 1) / PLOT_MODEL;
    if (s == BN_OK) s = bn_galaxy_disk_rings(m, p, PLOT_RINGS, R_max, ring);
    if (s == BN_OK) s = bn_galaxy_disk_curve(m, PLOT_MODEL, Rm, pt);
    if (s != BN_OK) return s;
    for (int i = 0; i < PLOT_MODEL; i++) vm[i] = pt[i].v_circ, qm[i] = pt[i].toomre_q;
    for (int b = 0; b < PLOT_RINGS; b++) Rr[b] = ring[b].R, vr[b] = ring[b].v_circ, qr[b] = ring[b].toomre_q;
    BN_TRY(plot_pair(dir, "rotation_curve.png", 0, Rm, vm, Rr, vr));
    /* Q grows as 1/R at the centre: the axis to 3 Q(q_radius) */
    return plot_pair(dir, "toomre_q.png", 3 * m->disk.toomre_q, Rm, qm, Rr, qr);
}

/* argv[0] is "galaxy". */
int cli_ic_galaxy(int argc, char **argv)
{
    bn_galaxy_model m;
    galaxy_opts o = {0, 1, NULL, NULL, NULL};
    const int r = galaxy_parse(argc, argv, &m, &o);
    if (r) return r < 0 ? 0 : r;
    const char *out = o.out;
    bn_particles *p = NULL;
    bn_status s = cli_check_output("the output", out);
    if (s == BN_OK) s = bn_ic_galaxy(&m, o.n, o.seed, &p);
    if (s == BN_OK) {
        bn_snapshot_meta meta = bn_snapshot_meta_default();
        meta.units = m.units;
        meta.gravity.G = m.units.G;
        s = bn_snapshot_write(out, p, &meta);
    }
    if (s == BN_OK) {
        size_t count[BN_PART_TYPES] = {0};
        for (size_t i = 0; i < p->n; i++) count[p->type[i]]++;
        fprintf(stderr, "banyan ic: wrote %zu particles of galaxy %s (halo %zu, disk %zu, bulge %zu; seed %llu, "
                "G = %.9g) to %s\n", p->n, o.name, count[1], count[2], count[3], (unsigned long long)o.seed,
                m.units.G, out);
    }
    if (s == BN_OK && o.plots) s = write_plots(o.plots, &m, p);
    if (s == BN_OK && o.plots) fprintf(stderr, "banyan ic: plots in %s (rotation_curve.png, toomre_q.png)\n", o.plots);
    bn_particles_free(p);
    return s == BN_OK ? 0 : cli_fail("ic", s);
}
