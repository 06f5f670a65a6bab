/* The parameter file of `banyan run`: defaults, unknown keys, -P,
 * bad values, and used_parameters.yml read back to the same parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "io/params.h"
#include "testutil.h"

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    (void)state;
    strcpy(tmpdir, "/tmp/banyan_params_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Write text to tmpdir/name; returns the path (static buffer). */
static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* The whole text of a file written by a test (NUL-terminated). */
static void read_text(const char *path, char *text, size_t size)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    const size_t len = fread(text, 1, size - 1, f);
    text[len] = '\0';
    fclose(f);
}

/* Every default in the table parses and is what the library defaults are. */
static void test_defaults(void **state)
{
    (void)state;
    bn_run_params *p = malloc(sizeof *p);
    bn_run_params_init(p);
    for (int i = 0; i < bn_param_count; i++) {
        const bn_param_desc *d = &bn_param_table[i];
        TU_OK(bn_param_set(p, d, d->def, "default", BN_ORIGIN_DEFAULT));
        assert_true(bn_param_section_index(d->section) >= 0);
        assert_true(strlen(d->doc) > 10);
        assert_int_equal(p->origin[i], BN_ORIGIN_DEFAULT);
    }
    bn_gravity_params g = bn_gravity_params_default();
    /* the one deliberate difference: a run's softening (see the table) */
    assert_true(p->gravity.softening == 0.01 && g.softening == 1e-3);
    g.softening = p->gravity.softening;
    assert_memory_equal(&p->gravity, &g, sizeof g);
    bn_integrator_params ip = bn_integrator_params_default();
    assert_true(p->integ.dt == ip.dt && p->integ.eta == ip.eta);
    bn_ic_params ic = bn_ic_params_default();
    assert_true(p->ic.seed == ic.seed && p->ic.cube_half_size == ic.cube_half_size && p->ic.model == ic.model);
    assert_int_equal(p->gravity.method, BN_METHOD_TREE);
    TU_OK(bn_run_params_validate(p));
    free(p);
}

static void test_unknown_key_and_section(void **state)
{
    (void)state;
    bn_run_params *p = malloc(sizeof *p);
    bn_run_params_init(p);
    const char *path = write_file("unknown.yml", "Gravity:\n  theta: 0.7\n  thetaa: 1\n");
    TU_FAILS(bn_run_params_read_file(p, path), BN_ERR_PARAMETER, "thetaa");
    const char *msg = bn_last_error();
    assert_non_null(strstr(msg, path));
    assert_non_null(strstr(msg, ":3:")); /* line of the bad key */
    assert_non_null(strstr(msg, "valid keys of Gravity: G, softening, method, theta"));
    /* a failed read leaves the parameters unchanged */
    assert_true(p->gravity.theta == 0.5);

    path = write_file("section.yml", "Gravity:\n  theta: 0.7\nTimeIntegraton:\n  dt: 0.1\n");
    TU_FAILS(bn_run_params_read_file(p, path), BN_ERR_PARAMETER, "TimeIntegraton");
    assert_non_null(strstr(bn_last_error(), ":3:"));
    assert_non_null(strstr(bn_last_error(), "InitialConditions, Gravity, TimeIntegration, Snapshots, Statistics"));

    TU_FAILS(bn_run_params_override(p, "Gravity:opening:0.3"), BN_ERR_PARAMETER, "unknown key 'opening'");
    assert_non_null(strstr(bn_last_error(), "accel_alpha"));
    TU_FAILS(bn_run_params_override(p, "Gravty:theta:0.3"), BN_ERR_PARAMETER, "unknown section 'Gravty'");
    free(p);
}

static void test_override(void **state)
{
    (void)state;
    bn_run_params *p = malloc(sizeof *p);
    bn_run_params_init(p);
    const char *path = write_file("base.yml", "Gravity:\n  theta: 0.7\n  method: direct\n");
    TU_OK(bn_run_params_read_file(p, path));
    assert_true(p->gravity.theta == 0.7 && p->gravity.method == BN_METHOD_DIRECT);
    TU_OK(bn_run_params_override(p, "Gravity:theta:0.25"));
    TU_OK(bn_run_params_override(p, "Snapshots:basename:run:a")); /* ':' in the value */
    TU_OK(bn_run_params_override(p, "Snapshots:times:[2, 0.5,1]"));
    TU_OK(bn_run_params_override(p, "InitialConditions:n:1e5"));
    assert_int_equal(p->ic.n, 100000);
    TU_FAILS(bn_run_params_override(p, "InitialConditions:n:1.5e0"), BN_ERR_PARAMETER, "InitialConditions:n");
    TU_OK(bn_run_params_override(p, "InitialConditions:n:2^10"));
    TU_OK(bn_run_params_override(p, "Gravity:quadrupole:no"));
    assert_true(p->gravity.theta == 0.25);
    assert_string_equal(p->snap_basename, "run:a");
    assert_int_equal(p->snap_times.n, 3);
    assert_true(p->snap_times.v[0] == 0.5 && p->snap_times.v[1] == 1 && p->snap_times.v[2] == 2);
    assert_int_equal(p->ic.n, 1024);
    assert_int_equal(p->gravity.quadrupole, 0);
    const bn_param_desc *d = bn_param_find("Gravity", "theta");
    assert_int_equal(p->origin[d - bn_param_table], BN_ORIGIN_COMMAND_LINE);
    d = bn_param_find("Gravity", "method");
    assert_int_equal(p->origin[d - bn_param_table], BN_ORIGIN_FILE);
    TU_FAILS(bn_run_params_override(p, "Gravity:theta"), BN_ERR_PARAMETER, "Section:key:value");
    TU_FAILS(bn_run_params_override(p, ":theta:1"), BN_ERR_PARAMETER, "Section:key:value");
    free(p);
}

/* Wrong type or range: the message names section:key and the value. */
static void test_bad_values(void **state)
{
    (void)state;
    bn_run_params *p = malloc(sizeof *p);
    bn_run_params_init(p);
    static const struct {
        const char *spec, *needle;
    } bad[] = {
        {"Gravity:theta:abc", "Gravity:theta = 'abc': expected a finite number"},
        {"Gravity:theta:3", "Gravity:theta = '3': must be in [0, 2]"},
        {"Gravity:theta:nan", "expected a finite number"},
        {"Gravity:softening:-1", "Gravity:softening = '-1': must be >= 0"},
        {"TimeIntegration:dt:0", "TimeIntegration:dt = '0': must be > 0"},
        {"Gravity:leaf_size:2.5", "Gravity:leaf_size = '2.5': expected an integer"},
        {"Gravity:leaf_size:0", "must be in [1, 1024]"},
        {"Gravity:method:fmm", "Gravity:method = 'fmm': unknown name (valid: tree, direct)"},
        {"Gravity:mac:gadget", "valid: bonsai, bh, accel"},
        {"Gravity:quadrupole:maybe", "expected yes or no"},
        {"InitialConditions:n:-5", "InitialConditions:n = '-5': expected a non-negative integer"},
        {"InitialConditions:n:0", "InitialConditions:n = '0': must be in [1, 1099511627776]"},
        {"InitialConditions:n:", "expected a non-negative integer"},
        {"Snapshots:times:[1, x]", "Snapshots:times = '[1, x]': expected a list of finite numbers"},
        {"Snapshots:basename:", "Snapshots:basename = '': must not be empty"},
        {"Statistics:interval:-1", "Statistics:interval = '-1': must be >= 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bn_status s = bn_run_params_override(p, bad[i].spec);
        if (s != BN_ERR_PARAMETER || !strstr(bn_last_error(), bad[i].needle))
            fail_msg("-P %s: status %s, message '%s' lacks '%s'", bad[i].spec, bn_status_name(s), bn_last_error(),
                     bad[i].needle);
    }
    /* the same checks apply in a file, with file and line */
    const char *path = write_file("bad.yml", "TimeIntegration:\n  t_end: 2\n  dt: fast\n");
    TU_FAILS(bn_run_params_read_file(p, path), BN_ERR_PARAMETER, ":3: TimeIntegration:dt = 'fast'");
    path = write_file("dup.yml", "Gravity:\n  theta: 0.7\n  theta: 0.8\n");
    TU_FAILS(bn_run_params_read_file(p, path), BN_ERR_PARAMETER, "Gravity:theta is given twice (first on line 2)");
    path = write_file("list.yml", "Gravity:\n  theta: [0.7, 0.8]\n");
    TU_FAILS(bn_run_params_read_file(p, path), BN_ERR_PARAMETER, "Gravity:theta expects a single value");
    path = write_file("syntax.yml", "Gravity:\n  theta: 0.7\n   method: [direct\n");
    TU_FAILS(bn_run_params_read_file(p, path), BN_ERR_PARAMETER, "YAML syntax error");
    path = write_file("flat.yml", "theta: 0.7\n");
    TU_FAILS(bn_run_params_read_file(p, path), BN_ERR_PARAMETER, "unknown section 'theta'");
    path = write_file("scalar.yml", "just text\n");
    TU_FAILS(bn_run_params_read_file(p, path), BN_ERR_PARAMETER, "expected sections");
    TU_FAILS(bn_run_params_read_file(p, "/nonexistent/params.yml"), BN_ERR_IO, "/nonexistent/params.yml");
    TU_FAILS(bn_run_params_read_file(p, tmpdir), BN_ERR_IO, "is a directory");
    /* nothing above changed a value */
    bn_run_params *fresh = malloc(sizeof *fresh);
    bn_run_params_init(fresh);
    assert_memory_equal(p, fresh, sizeof *p);
    /* empty file and empty sections: all defaults */
    path = write_file("empty.yml", "# nothing\n");
    TU_OK(bn_run_params_read_file(p, path));
    path = write_file("empty_section.yml", "Gravity:\nSnapshots:\n  times: []\n");
    TU_OK(bn_run_params_read_file(p, path));
    assert_int_equal(p->snap_times.n, 0);
    free(fresh);
    free(p);
}

/* Values set in a file and by -P, written to used_parameters.yml, read
 * back: every parameter formats the same, and the structs are equal. */
static void test_used_parameters_round_trip(void **state)
{
    (void)state;
    bn_run_params *p = malloc(sizeof *p), *q = malloc(sizeof *q);
    bn_run_params_init(p);
    const char *path = write_file("run.yml",
                                  "InitialConditions:\n  model: plummer\n  n: 4096\n  seed: 18446744073709551615\n"
                                  "  virial_ratio: 0.5\n"
                                  "Gravity:\n  method: direct\n  softening: 0.1\n  G: 6.674e-8\n"
                                  "TimeIntegration:\n  t_end: 3.3\n  dt: 0.1\n  eta: 0.02\n"
                                  "Snapshots:\n  times: [0.1, 3.3, 1.7]\n  directory: \"out dir/with 'quotes'\"\n"
                                  "  render: no\n");
    TU_OK(bn_run_params_read_file(p, path));
    TU_OK(bn_run_params_override(p, "Snapshots:basename:odd \"name\"\\x: y"));
    TU_OK(bn_run_params_override(p, "Gravity:theta:0.3"));
    TU_OK(bn_run_params_override(p, "Statistics:energy_file:yes")); /* a word YAML reads as a bool */
    char used[256], unused[256];
    snprintf(used, sizeof used, "%s/used_parameters.yml", tmpdir);
    snprintf(unused, sizeof unused, "%s/unused_parameters.yml", tmpdir);
    TU_OK(bn_run_params_write(p, used, BN_PARAMS_USED));
    TU_OK(bn_run_params_write(p, unused, BN_PARAMS_UNUSED));
    bn_run_params_init(q);
    TU_OK(bn_run_params_read_file(q, used));
    for (int i = 0; i < bn_param_count; i++) {
        char a[BN_PARAM_STRLEN * 2], b[BN_PARAM_STRLEN * 2];
        bn_param_format(p, &bn_param_table[i], a, sizeof a);
        bn_param_format(q, &bn_param_table[i], b, sizeof b);
        if (strcmp(a, b)) fail_msg("%s:%s: wrote %s, read back %s", bn_param_table[i].section,
                                   bn_param_table[i].key, a, b);
    }
    /* every key read back is explicit (error_fixed: which settings an
     * error target keeps; without a target they mean nothing) */
    assert_int_equal(q->gravity.error_fixed, BN_TUNE_THETA | BN_TUNE_MAC | BN_TUNE_LEAF | BN_TUNE_GROUP |
                                                 BN_TUNE_EXPANSION);
    q->gravity.error_fixed = p->gravity.error_fixed;
    assert_memory_equal(&p->gravity, &q->gravity, sizeof p->gravity);
    assert_memory_equal(&p->ic, &q->ic, sizeof p->ic);
    assert_true(q->ic.seed == 18446744073709551615ull);
    assert_string_equal(q->snap_basename, "odd \"name\"\\x: y");
    assert_string_equal(q->snap_dir, "out dir/with 'quotes'");
    assert_string_equal(q->energy_file, "yes");
    assert_true(q->t_end == 3.3 && q->gravity.G == 6.674e-8 && q->integ.eta == 0.02);
    assert_int_equal(q->snap_times.n, 3);
    assert_true(q->snap_times.v[1] == 1.7);

    /* unused: set but without effect (virial_ratio with plummer, theta
     * with direct); used ones and defaults are not listed */
    char text[4096];
    read_text(unused, text, sizeof text);
    assert_non_null(strstr(text, "virial_ratio: 0.5"));
    assert_non_null(strstr(text, "only used by model uniform-sphere"));
    assert_non_null(strstr(text, "theta: 0.3"));
    assert_null(strstr(text, "softening"));
    assert_null(strstr(text, "leaf_size"));
    free(p);
    free(q);
}

/* With an error target, used_parameters.yml leaves the settings it
 * chooses as comments (unless given), so that reading it back repeats
 * the run: the same settings fixed, the others searched again. */
static void test_error_target_round_trip(void **state)
{
    (void)state;
    bn_run_params *p = malloc(sizeof *p), *q = malloc(sizeof *q);
    bn_run_params_init(p);
    TU_OK(bn_run_params_override(p, "Gravity:error_target:1e-3"));
    TU_OK(bn_run_params_override(p, "Gravity:leaf_size:32"));
    assert_int_equal(p->gravity.error_fixed, BN_TUNE_LEAF);
    char used[256];
    snprintf(used, sizeof used, "%s/used_target.yml", tmpdir);
    TU_OK(bn_run_params_write(p, used, BN_PARAMS_USED));
    bn_run_params_init(q);
    TU_OK(bn_run_params_read_file(q, used));
    assert_int_equal(q->gravity.error_fixed, BN_TUNE_LEAF);
    assert_true(q->gravity.error_target == 1e-3 && q->gravity.leaf_size == 32);
    char text[16384];
    read_text(used, text, sizeof text);
    assert_non_null(strstr(text, "# theta: 0.5"));
    assert_non_null(strstr(text, "chosen by error_target"));
    assert_non_null(strstr(text, "\n  leaf_size: 32"));
    free(p);
    free(q);
}

/* The documented defaults (examples/default.yml) list every key with its
 * doc and read back as the defaults. */
static void test_documented_defaults(void **state)
{
    (void)state;
    bn_run_params *p = malloc(sizeof *p), *q = malloc(sizeof *q);
    bn_run_params_init(p);
    char path[256];
    snprintf(path, sizeof path, "%s/default.yml", tmpdir);
    TU_OK(bn_run_params_write(p, path, BN_PARAMS_DOC));
    static char text[65536];
    read_text(path, text, sizeof text);
    for (int i = 0; i < bn_param_count; i++) {
        char line[BN_PARAM_STRLEN + 64], value[BN_PARAM_STRLEN];
        bn_param_format(p, &bn_param_table[i], value, sizeof value);
        snprintf(line, sizeof line, "\n  %s: %s\n", bn_param_table[i].key, value);
        if (!strstr(text, line)) fail_msg("default.yml lacks '%s'", line + 1);
    }
    assert_non_null(strstr(text, "(one of: tree, direct)"));
    bn_run_params_init(q);
    TU_OK(bn_run_params_read_file(q, path));
    memset(q->origin, 0, sizeof q->origin);
    q->gravity.error_fixed = 0; /* the file's values are explicit (no target: no effect) */
    assert_memory_equal(p, q, sizeof *p);
    free(p);
    free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_unknown_key_and_section),
        cmocka_unit_test(test_override),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_used_parameters_round_trip),
        cmocka_unit_test(test_error_target_round_trip), cmocka_unit_test(test_documented_defaults),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
