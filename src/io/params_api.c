/* Parameters by name for bindings (Python's ctypes) and tools: the
 * structs' sizes and defaults, and any of their fields set or read as
 * the text of a parameter file, through the parameter table (the same
 * names, types, ranges and messages as YAML and -P). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include "core/error.h"
#include "io/params.h"

/* A struct the table covers: the section naming its fields, and where it
 * sits in bn_run_params. */
typedef struct {
    const char *type, *section;
    size_t offset, size;
} param_struct;

static const param_struct structs[] = {
    {"bn_gravity_params", "Gravity", offsetof(bn_run_params, gravity), sizeof(bn_gravity_params)},
    {"bn_integrator_params", "TimeIntegration", offsetof(bn_run_params, integ), sizeof(bn_integrator_params)},
    {"bn_ic_params", "InitialConditions", offsetof(bn_run_params, ic), sizeof(bn_ic_params)},
};
#define N_STRUCTS (sizeof structs / sizeof structs[0])

static const param_struct *struct_of_section(const char *section)
{
    for (size_t i = 0; section && i < N_STRUCTS; i++)
        if (!strcmp(structs[i].section, section)) return structs + i;
    return NULL;
}

size_t bn_sizeof(const char *type)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {{"bn_particles", sizeof(bn_particles)},   {"bn_gravity_params", sizeof(bn_gravity_params)},
                 {"bn_integrator_params", sizeof(bn_integrator_params)}, {"bn_ic_params", sizeof(bn_ic_params)},
                 {"bn_energies", sizeof(bn_energies)},     {"bn_snapshot_meta", sizeof(bn_snapshot_meta)},
                 {"bn_force_stats", sizeof(bn_force_stats)}, {"bn_units", sizeof(bn_units)},
                 {"bn_mesh", sizeof(bn_mesh)},             {"bn_mesh_ic_params", sizeof(bn_mesh_ic_params)},
                 {"bn_field_params", sizeof(bn_field_params)}, {"bn_field_stats", sizeof(bn_field_stats)},
                 {"bn_galaxy_model", sizeof(bn_galaxy_model)}};
    for (size_t i = 0; type && i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(sizes[i].name, type)) return sizes[i].size;
    return 0;
}

bn_status bn_struct_default(void *out, const char *type)
{
    if (!out || !type) return bn_fail(BN_ERR_ARGUMENT, "bn_struct_default: NULL argument");
    if (!strcmp(type, "bn_gravity_params")) *(bn_gravity_params *)out = bn_gravity_params_default();
    else if (!strcmp(type, "bn_integrator_params")) *(bn_integrator_params *)out = bn_integrator_params_default();
    else if (!strcmp(type, "bn_ic_params")) *(bn_ic_params *)out = bn_ic_params_default();
    else if (!strcmp(type, "bn_snapshot_meta")) *(bn_snapshot_meta *)out = bn_snapshot_meta_default();
    else if (!strcmp(type, "bn_galaxy_model")) *(bn_galaxy_model *)out = bn_galaxy_model_m31();
    else return bn_fail(BN_ERR_ARGUMENT, "bn_struct_default: no defaults for '%s'", type);
    return BN_OK;
}

/* The table's entry for section:key, which must be a field of the
 * section's struct (InitialConditions:file, say, is not bn_ic_params'). */
static bn_status find_field(const char *section, const char *key, const param_struct **ps, const bn_param_desc **d)
{
    if (!section || !key) return bn_fail(BN_ERR_ARGUMENT, "parameter by name: NULL section or key");
    *ps = struct_of_section(section);
    if (!*ps)
        return bn_fail(BN_ERR_PARAMETER, "parameter by name: section '%s' is none of Gravity, TimeIntegration, "
                       "InitialConditions", section);
    *d = bn_param_find(section, key);
    if (!*d) return bn_param_unknown("parameter by name", section, key);
    if ((*d)->offset < (*ps)->offset || (*d)->offset >= (*ps)->offset + (*ps)->size)
        return bn_fail(BN_ERR_PARAMETER, "parameter by name: %s:%s is not a field of %s", section, key,
                       (*ps)->type);
    return BN_OK;
}

bn_status bn_params_set_text(void *params, const char *section, const char *key, const char *value)
{
    const param_struct *ps = NULL;
    const bn_param_desc *d = NULL;
    BN_TRY(find_field(section, key, &ps, &d));
    if (!params || !value) return bn_fail(BN_ERR_ARGUMENT, "bn_params_set_text: NULL parameters or value");
    bn_run_params *rp = bn_calloc(1, sizeof *rp, "parameters by name");
    if (!rp) return BN_ERR_NOMEM;
    memcpy((char *)rp + ps->offset, params, ps->size);
    char where[160];
    snprintf(where, sizeof where, "%s:%s", section, key);
    const bn_status s = bn_param_set(rp, d, value, where, BN_ORIGIN_COMMAND_LINE); /* explicit, as -P */
    if (s == BN_OK) memcpy(params, (char *)rp + ps->offset, ps->size);
    free(rp);
    return s;
}

bn_status bn_params_get_text(const void *params, const char *section, const char *key, char *buf, size_t size)
{
    const param_struct *ps = NULL;
    const bn_param_desc *d = NULL;
    BN_TRY(find_field(section, key, &ps, &d));
    if (!params || !buf || size == 0) return bn_fail(BN_ERR_ARGUMENT, "bn_params_get_text: NULL argument");
    bn_run_params *rp = bn_calloc(1, sizeof *rp, "parameters by name");
    if (!rp) return BN_ERR_NOMEM;
    memcpy((char *)rp + ps->offset, params, ps->size);
    bn_param_format(rp, d, buf, size);
    free(rp);
    return BN_OK;
}

bn_status bn_snapshot_meta_number(bn_snapshot_meta *m, const char *key, const double *set, double *get)
{
    if (!m || !key) return bn_fail(BN_ERR_ARGUMENT, "bn_snapshot_meta_number: NULL argument");
    double *f = !strcmp(key, "time")       ? &m->time
              : !strcmp(key, "redshift")   ? &m->redshift
              : !strcmp(key, "box_size")   ? &m->box_size
              : !strcmp(key, "G")          ? &m->units.G
              : !strcmp(key, "length_in_cm") ? &m->units.length_in_cm
              : !strcmp(key, "mass_in_g")  ? &m->units.mass_in_g
              : !strcmp(key, "velocity_in_cm_per_s") ? &m->units.velocity_in_cm_per_s
                                           : NULL;
    if (!f)
        return bn_fail(BN_ERR_PARAMETER, "snapshot header: no number '%s' (time, redshift, box_size, G, "
                       "length_in_cm, mass_in_g, velocity_in_cm_per_s)", key);
    if (set) *f = *set;
    if (set && f == &m->units.G) m->gravity.G = *set; /* written as GravitationalConstant, read back into both */
    if (get) *get = *f;
    return BN_OK;
}

double bn_galaxy_model_G(const bn_galaxy_model *m) { return m ? m->units.G : NAN; }
