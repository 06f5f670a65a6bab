/* /Parameters and /Units of snapshots: see snapshot_params.h. */
#include "io/snapshot_params.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "io/snapshot_h5.h"

/* SWIFT's names for its unit system in /Units. */
#define SWIFT_UL "Unit length in cgs (U_L)"
#define SWIFT_UM "Unit mass in cgs (U_M)"
#define SWIFT_UT "Unit time in cgs (U_t)"
#define SWIFT_UI "Unit current in cgs (U_I)"
#define SWIFT_UTEMP "Unit temperature in cgs (U_T)"

static bn_status write_units(hid_t g, const bn_units *u, int swift_names)
{
    double time_in_s = u->length_in_cm / u->velocity_in_cm_per_s;
    BN_TRY(bn_h5_attr_write_double(g, "UnitLength_in_cm", u->length_in_cm));
    BN_TRY(bn_h5_attr_write_double(g, "UnitMass_in_g", u->mass_in_g));
    BN_TRY(bn_h5_attr_write_double(g, "UnitVelocity_in_cm_per_s", u->velocity_in_cm_per_s));
    BN_TRY(bn_h5_attr_write_double(g, "UnitTime_in_s", time_in_s));
    if (!swift_names) return BN_OK;
    BN_TRY(bn_h5_attr_write_double(g, SWIFT_UL, u->length_in_cm));
    BN_TRY(bn_h5_attr_write_double(g, SWIFT_UM, u->mass_in_g));
    BN_TRY(bn_h5_attr_write_double(g, SWIFT_UT, time_in_s));
    BN_TRY(bn_h5_attr_write_double(g, SWIFT_UI, 1.0));
    return bn_h5_attr_write_double(g, SWIFT_UTEMP, 1.0);
}

static bn_status write_gravity(hid_t g, const bn_gravity_params *gp)
{
    BN_TRY(bn_h5_attr_write_double(g, "Softening", gp->softening));
    BN_TRY(bn_h5_attr_write_double(g, "OpeningAngle", gp->theta));
    BN_TRY(bn_h5_attr_write_string(g, "OpeningCriterion", bn_mac_name(gp->mac)));
    BN_TRY(bn_h5_attr_write_double(g, "AccelAlpha", gp->accel_alpha));
    BN_TRY(bn_h5_attr_write_string(g, "Method", bn_method_name(gp->method)));
    BN_TRY(bn_h5_attr_write_string(g, "Backend", bn_backend_name(gp->backend)));
    BN_TRY(bn_h5_attr_write_int(g, "LeafSize", gp->leaf_size));
    BN_TRY(bn_h5_attr_write_int(g, "GroupSize", gp->group_size));
    BN_TRY(bn_h5_attr_write_string(g, "Curve", bn_curve_name(gp->curve)));
    BN_TRY(bn_h5_attr_write_double(g, "GroupExpansion", gp->group_expansion));
    BN_TRY(bn_h5_attr_write_double(g, "ErrorTarget", gp->error_target));
    return bn_h5_attr_write_int(g, "Quadrupole", gp->quadrupole);
}

/* An error target's measurement: the settings above are its choice. */
static bn_status write_accuracy(hid_t g, const bn_snapshot_meta *meta)
{
    if (!(meta->gravity.error_target > 0) || meta->accuracy.sample == 0) return BN_OK;
    BN_TRY(bn_h5_attr_write_double(g, "ErrorMeasuredP50", meta->accuracy.p50));
    BN_TRY(bn_h5_attr_write_double(g, "ErrorMeasuredP99", meta->accuracy.p99));
    return bn_h5_attr_write_int(g, "ErrorSample", (int)meta->accuracy.sample);
}

static bn_status fill_parameters(hid_t g, const bn_snapshot_meta *meta)
{
    BN_TRY(write_accuracy(g, meta));
    BN_TRY(bn_h5_attr_write_double(g, "GravitationalConstant", meta->gravity.G));
    BN_TRY(write_units(g, &meta->units, 0));
    /* GADGET-4 keeps the cosmology here; 0/0/1 and no comoving
     * integration tell yt and others that this run is not cosmological */
    BN_TRY(bn_h5_attr_write_int(g, "ComovingIntegrationOn", 0));
    BN_TRY(bn_h5_attr_write_double(g, "Omega0", 0.0));
    BN_TRY(bn_h5_attr_write_double(g, "OmegaLambda", 0.0));
    BN_TRY(bn_h5_attr_write_double(g, "HubbleParam", 1.0));
    /* the time in Gyr of Julian years (3.15576e16 s): pynbody takes a
     * file's time from Time_GYR here (GADGET-4's place), else from the
     * cosmology above (9.78 Gyr, whatever /Header's Time) */
    double time_in_s = meta->units.length_in_cm / meta->units.velocity_in_cm_per_s;
    BN_TRY(bn_h5_attr_write_double(g, "Time_GYR", meta->time * time_in_s / 3.15576e16));
    return write_gravity(g, &meta->gravity);
}

bn_status bn_snapshot_write_parameters(hid_t file, const bn_snapshot_meta *meta)
{
    hid_t g = -1;
    bn_status s = bn_h5_group_create(file, "Parameters", &g);
    if (s == BN_OK) s = fill_parameters(g, meta);
    if (g >= 0) H5Gclose(g);
    g = -1;
    if (s == BN_OK) s = bn_h5_group_create(file, "Units", &g);
    if (s == BN_OK) s = write_units(g, &meta->units, 1);
    if (g >= 0) H5Gclose(g);
    return s;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */
/* An optional numeric attribute: *found stays 0 when absent. */
static bn_status opt_double(hid_t g, const char *where, const char *name, double *out, int *found)
{
    int present;
    BN_TRY(bn_h5_attr_present(g, where, name, &present));
    if (!present) return BN_OK;
    BN_TRY(bn_h5_attr_read_double(g, where, name, out));
    if (found) *found = 1;
    return BN_OK;
}

static bn_status opt_int(hid_t g, const char *where, const char *name, int *out, int *found)
{
    double v = *out;
    int here = 0;
    BN_TRY(opt_double(g, where, name, &v, &here));
    if (!here) return BN_OK;
    if (v != floor(v) || fabs(v) > 1e9)
        return bn_fail(BN_ERR_FORMAT, "%s: attribute %s must be an integer, got %g", where, name, v);
    *out = (int)v;
    *found = 1;
    return BN_OK;
}

/* An optional name attribute parsed by `parse` (bn_mac_parse, ...). */
static bn_status opt_name(hid_t g, const char *where, const char *name, int *found,
                          bn_status (*parse)(const char *, void *), void *out)
{
    int present;
    BN_TRY(bn_h5_attr_present(g, where, name, &present));
    if (!present) return BN_OK;
    char buf[64];
    BN_TRY(bn_h5_attr_read_string(g, where, name, buf, sizeof buf));
    if (parse(buf, out) != BN_OK) return bn_fail_context(BN_ERR_FORMAT, "%s: attribute %s", where, name);
    *found = 1;
    return BN_OK;
}

static bn_status parse_mac(const char *s, void *out) { return bn_mac_parse(s, out); }
static bn_status parse_method(const char *s, void *out) { return bn_method_parse(s, out); }
static bn_status parse_backend(const char *s, void *out) { return bn_backend_parse(s, out); }
static bn_status parse_curve(const char *s, void *out) { return bn_curve_parse(s, out); }

static bn_status read_gravity(hid_t g, const char *where, bn_gravity_params *gp, int *found)
{
    BN_TRY(opt_double(g, where, "Softening", &gp->softening, found));
    BN_TRY(opt_double(g, where, "OpeningAngle", &gp->theta, found));
    BN_TRY(opt_name(g, where, "OpeningCriterion", found, parse_mac, &gp->mac));
    BN_TRY(opt_double(g, where, "AccelAlpha", &gp->accel_alpha, found));
    BN_TRY(opt_name(g, where, "Method", found, parse_method, &gp->method));
    BN_TRY(opt_name(g, where, "Backend", found, parse_backend, &gp->backend));
    BN_TRY(opt_int(g, where, "LeafSize", &gp->leaf_size, found));
    BN_TRY(opt_int(g, where, "GroupSize", &gp->group_size, found));
    BN_TRY(opt_name(g, where, "Curve", found, parse_curve, &gp->curve));
    BN_TRY(opt_double(g, where, "GroupExpansion", &gp->group_expansion, found));
    BN_TRY(opt_double(g, where, "ErrorTarget", &gp->error_target, found));
    return opt_int(g, where, "Quadrupole", &gp->quadrupole, found);
}

/* Units by GADGET's names, else by SWIFT's; *found counts what was read. */
static bn_status read_units(hid_t g, const char *where, bn_units *u, int *found)
{
    int l = 0, m = 0, v = 0, t = 0;
    double time_in_s = 0;
    BN_TRY(opt_double(g, where, "UnitLength_in_cm", &u->length_in_cm, &l));
    BN_TRY(opt_double(g, where, "UnitMass_in_g", &u->mass_in_g, &m));
    BN_TRY(opt_double(g, where, "UnitVelocity_in_cm_per_s", &u->velocity_in_cm_per_s, &v));
    if (!l) BN_TRY(opt_double(g, where, SWIFT_UL, &u->length_in_cm, &l));
    if (!m) BN_TRY(opt_double(g, where, SWIFT_UM, &u->mass_in_g, &m));
    if (!v) BN_TRY(opt_double(g, where, SWIFT_UT, &time_in_s, &t));
    if (!v && t && time_in_s > 0) {
        u->velocity_in_cm_per_s = u->length_in_cm / time_in_s;
        v = 1;
    }
    if (!(u->length_in_cm > 0 && u->mass_in_g > 0 && u->velocity_in_cm_per_s > 0 &&
          isfinite(u->length_in_cm * u->mass_in_g * u->velocity_in_cm_per_s)))
        return bn_fail(BN_ERR_FORMAT, "%s: units must be finite and > 0 (length %g cm, mass %g g, velocity %g cm/s)",
                       where, u->length_in_cm, u->mass_in_g, u->velocity_in_cm_per_s);
    *found += l + m + v;
    return BN_OK;
}

/* G from the file: ours, else GADGET-4's GravityConstantInternal (0 there
 * means "computed from the units"), else from the stated units, else 1. */
static bn_status read_G(hid_t g, const char *where, int units_found, bn_snapshot_meta *meta)
{
    double G = 0;
    int found = 0;
    if (g >= 0) BN_TRY(opt_double(g, where, "GravitationalConstant", &G, &found));
    if (!found && g >= 0) BN_TRY(opt_double(g, where, "GravityConstantInternal", &G, &found));
    if (!found || G == 0) {
        const bn_units *u = &meta->units;
        G = units_found ? BN_G_CGS * u->mass_in_g / (u->length_in_cm * u->velocity_in_cm_per_s * u->velocity_in_cm_per_s)
                        : 1.0;
    }
    if (!(isfinite(G) && G > 0))
        return bn_fail(BN_ERR_FORMAT, "%s: GravitationalConstant must be finite and > 0, got %g", where, G);
    meta->units.G = meta->gravity.G = G;
    return BN_OK;
}

/* An external link here is refused (bn_h5_check_local): *g stays -1. */
static bn_status open_group_if_present(hid_t file, const char *name, hid_t *g)
{
    *g = -1;
    int present;
    BN_TRY(bn_h5_link_present(file, "", name, &present));
    if (!present) return BN_OK;
    BN_TRY(bn_h5_check_local(file, "", name));
    *g = H5Gopen2(file, name, H5P_DEFAULT);
    if (*g < 0) return bn_h5_fail(BN_ERR_FORMAT, "/%s is not a group (a dataset?)", name);
    return BN_OK;
}

bn_status bn_snapshot_read_parameters(hid_t file, bn_snapshot_meta *meta)
{
    const char *wp = "/Parameters", *wu = "/Units";
    hid_t gp = -1, gu = -1;
    int units_found = 0, gravity_found = 0;
    bn_status s = open_group_if_present(file, "Parameters", &gp);
    if (s == BN_OK) s = open_group_if_present(file, "Units", &gu);
    if (s == BN_OK && gp >= 0) s = read_units(gp, wp, &meta->units, &units_found);
    if (s == BN_OK && gu >= 0 && !units_found) s = read_units(gu, wu, &meta->units, &units_found);
    if (s == BN_OK) s = read_G(gp, wp, units_found, meta);
    if (s == BN_OK && gp >= 0) s = read_gravity(gp, wp, &meta->gravity, &gravity_found);
    if (s == BN_OK && gravity_found && bn_gravity_params_validate(&meta->gravity) != BN_OK)
        s = bn_fail_context(BN_ERR_FORMAT, "%s", wp);
    meta->has_gravity = gravity_found;
    if (gp >= 0) H5Gclose(gp);
    if (gu >= 0) H5Gclose(gu);
    return s;
}
