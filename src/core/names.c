/* Defaults, names and parsing of the enumerations and gravity parameters. */
#include <math.h>
#include <string.h>
#include "core/error.h"

bn_gravity_params bn_gravity_params_default(void)
{
    bn_gravity_params g;
    memset(&g, 0, sizeof g);
    g.G = 1.0;
    g.softening = 1e-3;
    g.method = BN_METHOD_TREE;
    g.mac = BN_MAC_BONSAI;
    g.theta = 0.5;
    g.accel_alpha = 1e-3;
    g.quadrupole = 1;
    g.group_expansion = 0.2;
    g.leaf_size = 16;
    g.group_size = 64;
    g.curve = BN_CURVE_HILBERT;
    g.backend = BN_BACKEND_AUTO;
    g.device = BN_DEVICE_AUTO;
    g.error_target = 0;
    g.error_fixed = 0;
    g.error_check_interval = 64;
    g.error_sample = 512;
    g.error_cost = BN_TUNE_TIME;
    g.balance_cost = BN_TUNE_WORK;
    return g;
}

bn_status bn_gravity_params_validate(const bn_gravity_params *g)
{
    if (!g) return bn_fail(BN_ERR_ARGUMENT, "gravity parameters are NULL");
    if (!(isfinite(g->G) && g->G > 0))
        return bn_fail(BN_ERR_ARGUMENT, "GravitationalConstant must be finite and > 0, got %g", g->G);
    if (!(isfinite(g->softening) && g->softening >= 0))
        return bn_fail(BN_ERR_ARGUMENT, "Softening must be finite and >= 0, got %g", g->softening);
    if (!(isfinite(g->theta) && g->theta >= 0 && g->theta <= 2))
        return bn_fail(BN_ERR_ARGUMENT, "OpeningAngle (theta) must be in [0, 2], got %g", g->theta);
    if (!(isfinite(g->accel_alpha) && g->accel_alpha > 0))
        return bn_fail(BN_ERR_ARGUMENT, "accel_alpha must be > 0, got %g", g->accel_alpha);
    if (!(isfinite(g->group_expansion) && g->group_expansion >= 0 && g->group_expansion <= 1))
        return bn_fail(BN_ERR_ARGUMENT, "group_expansion must be in [0, 1], got %g", g->group_expansion);
    if (g->leaf_size < 1 || g->leaf_size > BN_LEAF_SIZE_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "leaf_size must be in [1, %d], got %d", BN_LEAF_SIZE_MAX, g->leaf_size);
    if (g->group_size < 1 || g->group_size > BN_GROUP_SIZE_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "group_size must be in [1, %d], got %d", BN_GROUP_SIZE_MAX, g->group_size);
    if (g->device < BN_DEVICE_AUTO || g->device > BN_DEVICE_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "device must be in [0, %d] or BN_DEVICE_AUTO (-1), got %d", BN_DEVICE_MAX,
                       g->device);
    if ((int)g->method < 0 || g->method > BN_METHOD_DIRECT)
        return bn_fail(BN_ERR_ARGUMENT, "unknown method %d", (int)g->method);
    if ((int)g->mac < 0 || g->mac > BN_MAC_BONSAI_BOX) return bn_fail(BN_ERR_ARGUMENT, "unknown MAC %d", (int)g->mac);
    if ((int)g->backend < 0 || g->backend > BN_BACKEND_GPU)
        return bn_fail(BN_ERR_ARGUMENT, "unknown backend %d", (int)g->backend);
    if ((int)g->curve < 0 || g->curve > BN_CURVE_MORTON)
        return bn_fail(BN_ERR_ARGUMENT, "unknown curve %d", (int)g->curve);
    if (!(isfinite(g->error_target) && g->error_target >= 0 && g->error_target < 1))
        return bn_fail(BN_ERR_ARGUMENT, "error_target must be in [0, 1) (0: off), got %g", g->error_target);
    if (g->error_fixed & ~(unsigned)(BN_TUNE_THETA | BN_TUNE_MAC | BN_TUNE_LEAF | BN_TUNE_GROUP | BN_TUNE_EXPANSION))
        return bn_fail(BN_ERR_ARGUMENT, "error_fixed has unknown bits 0x%x", g->error_fixed);
    if (g->error_check_interval < 0)
        return bn_fail(BN_ERR_ARGUMENT, "error_check_interval must be >= 0, got %d", g->error_check_interval);
    if (g->error_sample < BN_ERROR_SAMPLE_MIN || g->error_sample > BN_ERROR_SAMPLE_MAX)
        return bn_fail(BN_ERR_ARGUMENT, "error_sample must be in [%d, %d], got %d", BN_ERROR_SAMPLE_MIN,
                       BN_ERROR_SAMPLE_MAX, g->error_sample);
    if ((int)g->error_cost < 0 || g->error_cost > BN_TUNE_WORK)
        return bn_fail(BN_ERR_ARGUMENT, "unknown error_cost %d", (int)g->error_cost);
    if ((int)g->balance_cost < 0 || g->balance_cost > BN_TUNE_WORK)
        return bn_fail(BN_ERR_ARGUMENT, "unknown balance_cost %d", (int)g->balance_cost);
    if (g->error_target > 0 && g->error_target < 1e-6)
        return bn_fail(BN_ERR_ARGUMENT, "error_target %g is below what the sample can tell (1e-6: the GPU's float "
                       "arithmetic, the double reference's rounding)", g->error_target);
    return BN_OK;
}

/* A table of names per enumeration; parse accepts exactly these. */
typedef struct { const char *name; int value; } name_entry;

static const name_entry method_names[] = {{"tree", BN_METHOD_TREE}, {"direct", BN_METHOD_DIRECT}, {0, 0}};
static const name_entry mac_names[] = {
    {"bonsai", BN_MAC_BONSAI}, {"bh", BN_MAC_BH}, {"accel", BN_MAC_ACCEL}, {"bonsai-box", BN_MAC_BONSAI_BOX}, {0, 0}};
static const name_entry backend_names[] = {
    {"auto", BN_BACKEND_AUTO}, {"cpu", BN_BACKEND_CPU}, {"gpu", BN_BACKEND_GPU}, {0, 0}};
static const name_entry curve_names[] = {{"hilbert", BN_CURVE_HILBERT}, {"morton", BN_CURVE_MORTON}, {0, 0}};
static const name_entry cost_names[] = {{"time", BN_TUNE_TIME}, {"work", BN_TUNE_WORK}, {0, 0}};
static const name_entry criterion_names[] = {{"acceleration", BN_STEP_ACCEL}, {"dynamical", BN_STEP_DYNAMICAL}, {0, 0}};

static const char *name_of(const name_entry *t, int v)
{
    for (; t->name; t++)
        if (t->value == v) return t->name;
    return "unknown";
}

static bn_status parse_name(const name_entry *t, const char *what, const char *s, int *out)
{
    char valid[256] = "";
    for (const name_entry *e = t; e->name; e++) {
        if (s && strcmp(s, e->name) == 0) {
            *out = e->value;
            return BN_OK;
        }
        strncat(valid, valid[0] ? ", " : "", sizeof valid - strlen(valid) - 1);
        strncat(valid, e->name, sizeof valid - strlen(valid) - 1);
    }
    return bn_fail(BN_ERR_ARGUMENT, "unknown %s '%s' (valid: %s)", what, s ? s : "(null)", valid);
}

const char *bn_method_name(bn_method m) { return name_of(method_names, (int)m); }
const char *bn_mac_name(bn_mac m) { return name_of(mac_names, (int)m); }
const char *bn_backend_name(bn_backend b) { return name_of(backend_names, (int)b); }
const char *bn_curve_name(bn_curve c) { return name_of(curve_names, (int)c); }
const char *bn_tune_cost_name(bn_tune_cost c) { return name_of(cost_names, (int)c); }
const char *bn_step_criterion_name(bn_step_criterion c) { return name_of(criterion_names, (int)c); }

#define BN_PARSER(fn, type, table, what)                  \
    bn_status fn(const char *s, type *out)                \
    {                                                     \
        int v;                                            \
        BN_TRY(parse_name(table, what, s, &v));           \
        *out = (type)v;                                   \
        return BN_OK;                                     \
    }
BN_PARSER(bn_method_parse, bn_method, method_names, "method")
BN_PARSER(bn_mac_parse, bn_mac, mac_names, "opening criterion")
BN_PARSER(bn_backend_parse, bn_backend, backend_names, "backend")
BN_PARSER(bn_curve_parse, bn_curve, curve_names, "curve")
BN_PARSER(bn_tune_cost_parse, bn_tune_cost, cost_names, "cost") /* error_cost, rebuild_cost */
BN_PARSER(bn_step_criterion_parse, bn_step_criterion, criterion_names, "step criterion")

bn_integrator_params bn_integrator_params_default(void)
{
    bn_integrator_params ip;
    memset(&ip, 0, sizeof ip); /* padding too: parameter sets compare whole (tests/test_params.c) */
    ip.dt = 1.0 / 128.0;
    ip.tree_rebuild = 0; /* self-tuned: never slower than every step on the five models of issue 19 (session 31) */
    ip.criterion = BN_STEP_ACCEL;
    ip.rebuild_cost = BN_TUNE_WORK;
    return ip;
}
