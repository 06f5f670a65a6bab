/* A galaxy model from YAML (banyan ic galaxy --model-file): sections
 * units, halo, bulge, disk, each a mapping of keys to numbers or names
 * (examples/galaxies/m31.yml shows every key). Absent sections are absent
 * components (units: kpc, Msun, km/s). Every error names the file, the
 * line and the section:key at fault. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "io/snapshot_params.h"
#include "io/yaml_doc.h"

typedef enum { K_DOUBLE, K_SIZE, K_PROFILE, K_VERTICAL } key_type;

typedef struct {
    const char *key;
    key_type type;
    size_t offset; /* in bn_galaxy_component, or bn_units for "units" */
    int required;
} key_desc;

#define C(field) offsetof(bn_galaxy_component, field)
static const key_desc spheroid_keys[] = {
    {"profile", K_PROFILE, C(profile), 1},  {"mass", K_DOUBLE, C(mass), 1},
    {"scale_radius", K_DOUBLE, C(scale), 1}, {"cutoff", K_DOUBLE, C(cutoff), 1},
    {"cutoff_width", K_DOUBLE, C(cutoff_width), 1}, {"particles", K_SIZE, C(n), 0},
    {"particle_mass", K_DOUBLE, C(particle_mass), 0}, {NULL, K_DOUBLE, 0, 0}};
static const key_desc disk_keys[] = {
    {"mass", K_DOUBLE, C(mass), 1},          {"scale_length", K_DOUBLE, C(scale), 1},
    {"scale_height", K_DOUBLE, C(scale_height), 1}, {"vertical", K_VERTICAL, C(vertical), 0},
    {"toomre_q", K_DOUBLE, C(toomre_q), 1},  {"q_radius", K_DOUBLE, C(q_radius), 0},
    {"cutoff", K_DOUBLE, C(cutoff), 1},      {"cutoff_width", K_DOUBLE, C(cutoff_width), 1},
    {"particles", K_SIZE, C(n), 0},          {"particle_mass", K_DOUBLE, C(particle_mass), 0},
    {NULL, K_DOUBLE, 0, 0}};
#undef C
#define U(field) offsetof(bn_units, field)
static const key_desc unit_keys[] = {
    {"length_in_cm", K_DOUBLE, U(length_in_cm), 0}, {"mass_in_g", K_DOUBLE, U(mass_in_g), 0},
    {"velocity_in_cm_per_s", K_DOUBLE, U(velocity_in_cm_per_s), 0}, {"G", K_DOUBLE, U(G), 0},
    {NULL, K_DOUBLE, 0, 0}};
#undef U

static const char *const sections[] = {"units", "halo", "bulge", "disk"};

static bn_status parse_value(const char *where, const char *section, const key_desc *k, const char *text,
                             void *dst)
{
    char *end = NULL;
    if (k->type == K_PROFILE) {
        int prof = !strcmp(text, "nfw") ? BN_GALAXY_NFW : !strcmp(text, "hernquist") ? BN_GALAXY_HERNQUIST : -1;
        if (prof < 0) return bn_fail(BN_ERR_PARAMETER, "%s: %s:profile: '%s' (nfw or hernquist)", where, section, text);
        *(bn_galaxy_profile *)dst = (bn_galaxy_profile)prof;
    } else if (k->type == K_VERTICAL) {
        int v = !strcmp(text, "sech2") ? BN_GALAXY_SECH2 : !strcmp(text, "exponential") ? BN_GALAXY_EXP : -1;
        if (v < 0) return bn_fail(BN_ERR_PARAMETER, "%s: disk:vertical: '%s' (sech2 or exponential)", where, text);
        *(bn_galaxy_vertical *)dst = (bn_galaxy_vertical)v;
    } else if (k->type == K_SIZE) {
        const double v = strtod(text, &end);
        if (!*text || *end || !(v >= 0 && v < 1e15) || v != floor(v))
            return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s: '%s' (a whole number >= 0)", where, section, k->key, text);
        *(size_t *)dst = (size_t)v;
    } else {
        const double v = strtod(text, &end);
        if (!*text || *end || !(v > 0 && isfinite(v)))
            return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s: '%s' (a finite number > 0)", where, section, k->key, text);
        *(double *)dst = v;
    }
    return BN_OK;
}

typedef struct {
    const char *path;
    yaml_document_t *doc;
} reader;

/* The keys of one section into base; *given gets a bit per key set. */
static bn_status read_keys(const reader *r, const char *section, const yaml_node_t *map, const key_desc *keys,
                           void *base, unsigned *given)
{
    char where[1100];
    *given = 0;
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        const yaml_node_t *k = yaml_document_get_node(r->doc, pr->key), *v = yaml_document_get_node(r->doc, pr->value);
        snprintf(where, sizeof where, "%s:%d", r->path, bn_yaml_line(k));
        if (k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE || bn_yaml_has_nul(k) || bn_yaml_has_nul(v))
            return bn_fail(BN_ERR_PARAMETER, "%s: %s: expected 'key: value' lines", where, section);
        int i = 0;
        while (keys[i].key && strcmp(keys[i].key, bn_yaml_scalar(k))) i++;
        if (!keys[i].key) {
            char valid[256] = "";
            for (int j = 0; keys[j].key; j++)
                snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s%s", j ? ", " : "", keys[j].key);
            return bn_fail(BN_ERR_PARAMETER, "%s: unknown key %s:%s (valid: %s)", where, section, bn_yaml_scalar(k),
                           valid);
        }
        if (*given & (1u << i))
            return bn_fail(BN_ERR_PARAMETER, "%s: %s:%s is given twice", where, section, keys[i].key);
        *given |= 1u << i;
        BN_TRY(parse_value(where, section, &keys[i], bn_yaml_scalar_text(v), (char *)base + keys[i].offset));
    }
    for (int i = 0; keys[i].key; i++)
        if (keys[i].required && !(*given & (1u << i)))
            return bn_fail(BN_ERR_PARAMETER, "%s:%d: %s:%s is missing", r->path, bn_yaml_line(map), section,
                           keys[i].key);
    return BN_OK;
}

/* Section `name` (index s) into m. */
static bn_status read_section(const reader *r, int s, const yaml_node_t *v, bn_galaxy_model *m)
{
    if (v->type != YAML_MAPPING_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s:%d: %s must be a mapping of 'key: value' lines", r->path,
                       bn_yaml_line(v), sections[s]);
    unsigned given = 0;
    if (s == 0) {
        bn_units u = m->units;
        BN_TRY(read_keys(r, "units", v, unit_keys, &u, &given));
        /* units without G: G from them (G_cgs M / (L V^2)) */
        if ((given & 7u) && !(given & 8u))
            u.G = BN_G_CGS * u.mass_in_g / (u.length_in_cm * u.velocity_in_cm_per_s * u.velocity_in_cm_per_s);
        m->units = u;
        return BN_OK;
    }
    bn_galaxy_component *c = s == 1 ? &m->halo : s == 2 ? &m->bulge : &m->disk;
    memset(c, 0, sizeof *c);
    BN_TRY(read_keys(r, sections[s], v, s == 3 ? disk_keys : spheroid_keys, c, &given));
    if (s == 3) {
        c->profile = BN_GALAXY_EXPONENTIAL;
        if (!(given & (1u << 5))) c->q_radius = c->scale; /* Q at R_d by default */
    }
    return BN_OK;
}

static bn_status read_document(const reader *r, bn_galaxy_model *m)
{
    const yaml_node_t *root = yaml_document_get_root_node(r->doc);
    if (!root || root->type != YAML_MAPPING_NODE)
        return bn_fail(BN_ERR_PARAMETER, "%s: expected sections (units:, halo:, bulge:, disk:) at the top", r->path);
    int seen[4] = {0};
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        const yaml_node_t *k = yaml_document_get_node(r->doc, pr->key);
        int s = 0;
        while (s < 4 && (k->type != YAML_SCALAR_NODE || strcmp(bn_yaml_scalar(k), sections[s]))) s++;
        if (s == 4)
            return bn_fail(BN_ERR_PARAMETER, "%s:%d: unknown section '%s' (valid: units, halo, bulge, disk)", r->path,
                           bn_yaml_line(k), k->type == YAML_SCALAR_NODE ? bn_yaml_scalar(k) : "?");
        if (seen[s])
            return bn_fail(BN_ERR_PARAMETER, "%s:%d: section %s is given twice (first on line %d)", r->path,
                           bn_yaml_line(k), sections[s], seen[s]);
        seen[s] = bn_yaml_line(k);
        BN_TRY(read_section(r, s, yaml_document_get_node(r->doc, pr->value), m));
    }
    return BN_OK;
}

bn_status bn_galaxy_model_read(const char *path, bn_galaxy_model *out)
{
    if (!path || !out) return bn_fail(BN_ERR_ARGUMENT, "bn_galaxy_model_read: NULL argument");
    bn_galaxy_model m;
    memset(&m, 0, sizeof m);
    m.units = bn_units_kpc_msun_kms();
    yaml_document_t doc;
    BN_TRY(bn_yaml_load(path, "galaxy model file", &doc));
    const reader r = {path, &doc};
    bn_status s = read_document(&r, &m);
    yaml_document_delete(&doc);
    if (s == BN_OK && bn_galaxy_model_validate(&m) != BN_OK) s = bn_fail_context(BN_ERR_PARAMETER, "%s", path);
    if (s == BN_OK) *out = m;
    return s;
}
