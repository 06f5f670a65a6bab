#include <stdio.h>
#include "cli/cli.h"
#include "cli/gravity_options.h"
#include "core/limits.h"

enum {
    OPT_METHOD = 1000, OPT_EPS, OPT_THETA, OPT_MAC, OPT_BACKEND, OPT_LEAF, OPT_GROUP,
    OPT_G, OPT_CURVE, OPT_ALPHA, OPT_MONOPOLE, OPT_DEVICE, OPT_EXPANSION, OPT_TARGET, OPT_COST, OPT_SAMPLE,
    OPT_BALANCE
};

int cli_gravity_options(struct option *o)
{
    int n = 0;
    o[n++] = (struct option){"method", required_argument, 0, OPT_METHOD};
    o[n++] = (struct option){"eps", required_argument, 0, OPT_EPS};
    o[n++] = (struct option){"theta", required_argument, 0, OPT_THETA};
    o[n++] = (struct option){"mac", required_argument, 0, OPT_MAC};
    o[n++] = (struct option){"backend", required_argument, 0, OPT_BACKEND};
    o[n++] = (struct option){"leaf-size", required_argument, 0, OPT_LEAF};
    o[n++] = (struct option){"group-size", required_argument, 0, OPT_GROUP};
    o[n++] = (struct option){"G", required_argument, 0, OPT_G};
    o[n++] = (struct option){"curve", required_argument, 0, OPT_CURVE};
    o[n++] = (struct option){"alpha", required_argument, 0, OPT_ALPHA};
    o[n++] = (struct option){"monopole", no_argument, 0, OPT_MONOPOLE};
    o[n++] = (struct option){"device", required_argument, 0, OPT_DEVICE};
    o[n++] = (struct option){"group-expansion", required_argument, 0, OPT_EXPANSION};
    o[n++] = (struct option){"error-target", required_argument, 0, OPT_TARGET};
    o[n++] = (struct option){"error-cost", required_argument, 0, OPT_COST};
    o[n++] = (struct option){"error-sample", required_argument, 0, OPT_SAMPLE};
    o[n++] = (struct option){"balance-cost", required_argument, 0, OPT_BALANCE};
    return n;
}

void cli_gravity_options_help(void)
{
    printf("gravity options:\n"
           "  --method tree|direct     Barnes-Hut tree (default) or direct summation\n"
           "  --eps E                  Plummer softening length (default 1e-3)\n"
           "  --theta T                opening angle (default 0.5)\n"
           "  --mac M                  opening criterion: bonsai (default: d > l/theta + delta),\n"
           "                           bonsai-box (the same with l, delta from the bodies' box),\n"
           "                           bh (l/d < theta) or accel (relative acceleration)\n"
           "  --alpha A                tolerance of the accel criterion (default 1e-3)\n"
           "  --backend auto|cpu|gpu   where to compute (default auto: the GPU if present)\n"
           "  --leaf-size N            most particles per leaf (default 16)\n"
           "  --group-size N           most particles per walk group (default 64)\n"
           "  --curve hilbert|morton   space-filling curve (default hilbert)\n"
           "  --monopole               drop the quadrupole moments\n"
           "  --group-expansion K      far cells (beyond r_group/(K theta)) act on a group through\n"
           "                           one Taylor expansion about its centre; 0: off (default 0.2)\n"
           "  --G G                    gravitational constant (default 1)\n"
           "  --device K|auto          CUDA device ordinal; auto (the default): each\n"
           "                           rank its node's GPU (node-local rank modulo\n"
           "                           the GPUs seen), 0 in one process\n"
           "  --error-target E         ask for an error instead: banyan picks theta, mac (bonsai or\n"
           "                           bonsai-box), leaf, group size and expansion, the fastest it\n"
           "                           measures with p99 |a - a_ref| / |a_ref| <= E on a sample of\n"
           "                           targets (double direct summation); --theta, --mac, --leaf-size,\n"
           "                           --group-size, --group-expansion given as well keep their values\n"
           "  --error-cost time|work   what the search minimises: measured time (default) or the\n"
           "                           interactions counted (the same choice every run)\n"
           "  --error-sample N         targets of the sample (default 512)\n"
           "  --balance-cost work|time several ranks: the domains' cut weighs the counted walk\n"
           "                           flops (default: the same cut every run) or those flops\n"
           "                           scaled by each rank's measured walk time per flop\n");
}

/* The ranges bn_gravity_params_validate accepts (src/core/names.c), so
 * that a bad value is refused naming the option rather than the parameter;
 * the integer options' bounds are those of include/banyan.h, which
 * Gravity:leaf_size etc. in src/io/params_table.c use as well. */
#define THETA_RANGE ((cli_range){0, BN_THETA_MAX, 0, 0})
#define TARGET_RANGE ((cli_range){0, BN_ERROR_TARGET_MAX, 0, 1})
#define EXPANSION_RANGE ((cli_range){0, BN_GROUP_EXPANSION_MAX, 0, 0})

int cli_gravity_option(const char *cmd, int c, const char *arg, bn_gravity_params *g)
{
    bn_status s = BN_OK;
    switch (c) {
    case OPT_METHOD: s = bn_method_parse(arg, &g->method); break;
    case OPT_MAC: g->error_fixed |= BN_TUNE_MAC; s = bn_mac_parse(arg, &g->mac); break;
    case OPT_BACKEND: s = bn_backend_parse(arg, &g->backend); break;
    case OPT_CURVE: s = bn_curve_parse(arg, &g->curve); break;
    case OPT_EPS: return cli_parse_double_in(cmd, "--eps", arg, CLI_NONNEGATIVE, &g->softening) ? 0 : 2;
    case OPT_THETA:
        g->error_fixed |= BN_TUNE_THETA;
        return cli_parse_double_in(cmd, "--theta", arg, THETA_RANGE, &g->theta) ? 0 : 2;
    case OPT_TARGET: return cli_parse_double_in(cmd, "--error-target", arg, TARGET_RANGE, &g->error_target) ? 0 : 2;
    case OPT_COST: s = bn_tune_cost_parse(arg, &g->error_cost); break;
    case OPT_BALANCE:
        if (bn_tune_cost_parse(arg, &g->balance_cost) != BN_OK)
            return cli_usage_error(cmd, "--balance-cost: %s", bn_last_error());
        return 0;
    case OPT_ALPHA: return cli_parse_double_in(cmd, "--alpha", arg, CLI_POSITIVE, &g->accel_alpha) ? 0 : 2;
    case OPT_G: return cli_parse_double_in(cmd, "--G", arg, CLI_POSITIVE, &g->G) ? 0 : 2;
    case OPT_EXPANSION:
        g->error_fixed |= BN_TUNE_EXPANSION;
        return cli_parse_double_in(cmd, "--group-expansion", arg, EXPANSION_RANGE, &g->group_expansion) ? 0 : 2;
    case OPT_MONOPOLE: g->quadrupole = 0; return 0;
    case OPT_LEAF:
        if (!cli_parse_int(cmd, "--leaf-size", arg, 1, BN_LEAF_SIZE_MAX, &g->leaf_size)) return 2;
        g->error_fixed |= BN_TUNE_LEAF;
        return 0;
    case OPT_GROUP:
        if (!cli_parse_int(cmd, "--group-size", arg, 1, BN_GROUP_SIZE_MAX, &g->group_size)) return 2;
        g->error_fixed |= BN_TUNE_GROUP;
        return 0;
    case OPT_SAMPLE:
        return cli_parse_int(cmd, "--error-sample", arg, BN_ERROR_SAMPLE_MIN, BN_ERROR_SAMPLE_MAX, &g->error_sample)
                   ? 0 : 2;
    case OPT_DEVICE: return cli_parse_device(cmd, arg, &g->device) ? 0 : 2;
    default: return cli_usage_error(cmd, "unknown option");
    }
    if (s != BN_OK) return cli_usage_error(cmd, "%s", bn_last_error());
    return 0;
}
