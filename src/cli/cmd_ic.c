/* banyan ic MODEL --n N -o FILE.hdf5: sample initial conditions. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "core/limits.h"

static void ic_help(void)
{
    printf("usage: banyan ic MODEL --n N -o FILE.hdf5 [options]\n\n"
           "Sample N particles of MODEL (total mass 1, centre of mass at rest at the origin,\n"
           "ids 1..N) and write them as a GADGET-4 HDF5 snapshot. The same seed gives the\n"
           "same particles bit for bit, whatever the number of threads.\n\n"
           "models:\n"
           "  plummer         Aarseth-Henon-Wielen (1974) sampling in Henon units\n"
           "                  (G = 1, E = -1/4, a = 3 pi/16), cut at 99.9%% of the mass\n"
           "  hernquist       Hernquist (1990), scale radius 1, truncated at --truncation\n"
           "                  (default 100) scale radii, isotropic Eddington velocities\n"
           "  nfw             Navarro-Frenk-White (1997), scale radius 1, truncated at\n"
           "                  --truncation (default 10), isotropic Eddington velocities\n"
           "  uniform-sphere  radius 1, cold or with --virial-ratio Q = 2T/|W|\n"
           "  uniform-cube    [-H, H]^3 at rest (H = --half-size, default 3)\n"
           "  galaxy          halo, bulge and disk in equilibrium, e.g. GOTHIC's M31:\n"
           "                  banyan ic galaxy --model m31 --n N -o FILE (see ic galaxy --help)\n\n"
           "options:\n"
           "  -n, --n N            number of particles (2^k accepted), required\n"
           "  -o, --output FILE    output snapshot, required (written to a temporary\n"
           "                       file and renamed, so no partial file on error)\n"
           "  -s, --seed S         random seed, an integer >= 0 (default 1)\n"
           "      --G G            gravitational constant (default 1); velocities scale\n"
           "                       as sqrt(G), positions do not\n"
           "      --virial-ratio Q uniform-sphere: 2T/|W| (default 0: cold)\n"
           "      --truncation R   hernquist, nfw: truncation radius in scale radii, 0.01\n"
           "                       to 1e6; the density is rho(r) - rho(R) inside R so that\n"
           "                       an isotropic equilibrium exists\n"
           "      --half-size H    uniform-cube: half side (default 3)\n"
           "      --mass-spread    uniform-cube: masses uniform in [0, 1/N) instead of 1/N\n"
           "  -h, --help           this help\n");
}

/* The library's range (src/ic/ic.c); 0, its "model default", is what
 * leaving the option out means. */
#define TRUNCATION_RANGE ((cli_range){BN_IC_TRUNCATION_MIN, BN_IC_TRUNCATION_MAX, 0, 0})

enum { OPT_G = 256, OPT_VIRIAL, OPT_TRUNC, OPT_HALF, OPT_SPREAD };

/* An option that only some models use, named in the error when misused. */
static int check_applies(const char *cmd, const char *opt, int given, bn_ic_model m, bn_ic_model a, bn_ic_model b)
{
    if (given && m != a && m != b)
        return cli_usage_error(cmd, "%s does not apply to model '%s'", opt, bn_ic_model_name(m));
    return 0;
}

/* Parse the options into prm; returns 0 or the exit code of a usage error. */
static int ic_parse(int argc, char **argv, bn_ic_params *prm, const char **out_path, int *help)
{
    const char *cmd = "ic";
    static const struct option opts[] = {
        {"n", required_argument, 0, 'n'},           {"output", required_argument, 0, 'o'},
        {"seed", required_argument, 0, 's'},        {"G", required_argument, 0, OPT_G},
        {"virial-ratio", required_argument, 0, OPT_VIRIAL}, {"truncation", required_argument, 0, OPT_TRUNC},
        {"half-size", required_argument, 0, OPT_HALF}, {"mass-spread", no_argument, 0, OPT_SPREAD},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    int c, given_virial = 0, given_trunc = 0, given_cube = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "n:o:s:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n': if (!cli_parse_size(cmd, "--n", optarg, &prm->n)) return 2; break;
        case 'o': *out_path = optarg; break;
        case 's':
            if (!cli_parse_u64(cmd, "--seed", optarg, &prm->seed)) return 2;
            break;
        case OPT_G: if (!cli_parse_double_in(cmd, "--G", optarg, CLI_POSITIVE, &prm->G)) return 2; break;
        case OPT_VIRIAL:
            if (!cli_parse_double_in(cmd, "--virial-ratio", optarg, CLI_NONNEGATIVE, &prm->virial_ratio)) return 2;
            given_virial = 1;
            break;
        case OPT_TRUNC:
            if (!cli_parse_double_in(cmd, "--truncation", optarg, TRUNCATION_RANGE, &prm->truncation)) return 2;
            given_trunc = 1;
            break;
        case OPT_HALF:
            if (!cli_parse_double_in(cmd, "--half-size", optarg, CLI_POSITIVE, &prm->cube_half_size)) return 2;
            given_cube = 1;
            break;
        case OPT_SPREAD: prm->mass_spread = 1, given_cube = 1; break;
        case 'h': *help = 1; return 0;
        default: return cli_usage_error(cmd, "unknown option");
        }
    }
    if (optind != argc - 1) return cli_usage_error(cmd, "expected one MODEL (plummer, hernquist, nfw, uniform-sphere, uniform-cube)");
    if (bn_ic_model_parse(argv[optind], &prm->model) != BN_OK) return cli_usage_error(cmd, "%s", bn_last_error());
    if (prm->n == 0) return cli_usage_error(cmd, "missing --n N");
    if (!*out_path) return cli_usage_error(cmd, "missing -o FILE.hdf5");
    int r = check_applies(cmd, "--virial-ratio", given_virial, prm->model, BN_IC_UNIFORM_SPHERE, BN_IC_UNIFORM_SPHERE);
    if (!r) r = check_applies(cmd, "--truncation", given_trunc, prm->model, BN_IC_HERNQUIST, BN_IC_NFW);
    if (!r) r = check_applies(cmd, "--half-size/--mass-spread", given_cube, prm->model, BN_IC_UNIFORM_CUBE,
                              BN_IC_UNIFORM_CUBE);
    return r;
}

int bn_cmd_ic(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "galaxy")) return cli_ic_galaxy(argc - 1, argv + 1);
    bn_ic_params prm = bn_ic_params_default();
    const char *out_path = NULL;
    int help = 0;
    int r = ic_parse(argc, argv, &prm, &out_path, &help);
    if (help) {
        ic_help();
        return 0;
    }
    if (r) return r;

    bn_particles *p = NULL;
    bn_status s = cli_check_output("the output", out_path);
    if (s == BN_OK) s = bn_ic_generate(&prm, &p);
    if (s == BN_OK) {
        bn_snapshot_meta meta = bn_snapshot_meta_default();
        meta.units.G = prm.G;
        meta.gravity.G = prm.G;
        s = bn_snapshot_write(out_path, p, &meta);
    }
    if (s == BN_OK)
        fprintf(stderr, "banyan ic: wrote %zu particles of %s (seed %llu, G = %g) to %s\n", p->n,
                bn_ic_model_name(prm.model), (unsigned long long)prm.seed, prm.G, out_path);
    bn_particles_free(p);
    return s == BN_OK ? 0 : cli_fail("ic", s);
}
