/* banyan ic galaxy (--model m31 | --model-file F.yml) [--n N] -o FILE.hdf5:
 * a halo, bulge and disk in equilibrium (bn_ic_galaxy). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

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
           "                          examples/m31.yml lists every key)\n"
           "  -n, --n N               particles shared by the components without their own\n"
           "                          count, by mass (2^k accepted)\n"
           "  -o, --output FILE       output snapshot (temporary file + rename)\n"
           "  -s, --seed S            random seed, an integer >= 0 (default 1)\n"
           "  -h, --help              this help\n");
}

static int galaxy_parse(int argc, char **argv, bn_galaxy_model *m, size_t *n, uint64_t *seed, const char **out,
                        const char **name)
{
    const char *cmd = "ic galaxy", *model = NULL, *file = NULL;
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"model-file", required_argument, 0, 'f'},
                                         {"n", required_argument, 0, 'n'},     {"output", required_argument, 0, 'o'},
                                         {"seed", required_argument, 0, 's'},  {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "n:o:s:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'f': file = optarg; break;
        case 'n': if (!cli_parse_size(cmd, "--n", optarg, n)) return 2; break;
        case 'o': *out = optarg; break;
        case 's': if (!cli_parse_u64(cmd, "--seed", optarg, seed)) return 2; break;
        case 'h': galaxy_help(); return -1;
        default: return cli_usage_error(cmd, "unknown option");
        }
    }
    if (optind != argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!model == !file) return cli_usage_error(cmd, "give one of --model m31 and --model-file MODEL.yml");
    if (model && strcmp(model, "m31")) return cli_usage_error(cmd, "unknown model '%s' (m31)", model);
    if (!*out) return cli_usage_error(cmd, "missing -o FILE.hdf5");
    *name = model ? model : file;
    if (model) *m = bn_galaxy_model_m31();
    else if (bn_galaxy_model_read(file, m) != BN_OK) return cli_usage_error(cmd, "%s", bn_last_error());
    return 0;
}

/* argv[0] is "galaxy". */
int cli_ic_galaxy(int argc, char **argv)
{
    bn_galaxy_model m;
    size_t n = 0;
    uint64_t seed = 1;
    const char *out = NULL, *name = NULL;
    const int r = galaxy_parse(argc, argv, &m, &n, &seed, &out, &name);
    if (r) return r < 0 ? 0 : r;
    bn_particles *p = NULL;
    bn_status s = cli_check_output("the output", out);
    if (s == BN_OK) s = bn_ic_galaxy(&m, n, seed, &p);
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
                "G = %.9g) to %s\n", p->n, name, count[1], count[2], count[3], (unsigned long long)seed, m.units.G,
                out);
    }
    bn_particles_free(p);
    return s == BN_OK ? 0 : cli_fail("ic", s);
}
