/* banyan bench --mesh PROBLEM: the field solver on a generated AMR mesh,
 * timed stage by stage (best of --repeat calls from host memory), with
 * --check the errors against double direct summation on 1000 cells. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/error.h"
#include "core/timer.h"
#include "gravity/error_stats.h"

typedef struct mesh_bench {
    bn_mesh_ic_params ic;
    bn_field_params fp;
    long repeat;
    int check, json, exact;
} mesh_bench;

static void mesh_bench_help(void)
{
    printf("usage: banyan bench --mesh maclaurin|sphere|vortex-rings [options]\n\n"
           "Time the field solver on a test problem made in memory (banyan mesh-ic's):\n"
           "  --levels L, --min-level L, --block N, --radius R   the mesh (mesh-ic's options)\n"
           "  --method tree|fft, --theta T, --near N, --leaf-size N, --smoothing S, --no-velocity\n"
           "  --backend B, --device D                 the solver (potential's options)\n"
           "  --repeat R    calls timed (best of R; default 3)\n"
           "  --check       errors against double direct summation on 1000 cells\n"
           "  --exact       the largest errors against the exact solution at every cell\n"
           "                (the discretisation: the spheroid's, the sphere's, the rings')\n"
           "  --json        one JSON object\n");
}

enum { OPT_MESH = 1000, OPT_REPEAT, OPT_CHECK, OPT_EXACT, OPT_JSON };

/* --mesh P: the problem's defaults, but the mesh options given before it
 * stay; the field's kind and source variables follow the problem. */
static int mesh_option(const char *cmd, const char *arg, mesh_bench *o)
{
    bn_mesh_problem pr;
    if (bn_mesh_problem_parse(arg, &pr) != BN_OK) return cli_usage_error(cmd, "%s", bn_last_error());
    const bn_mesh_ic_params keep = o->ic;
    o->ic = bn_mesh_ic_params_default(pr);
    o->ic.max_level = keep.max_level;
    o->ic.min_level = keep.min_level;
    o->ic.block = keep.block;
    if (keep.radius != bn_mesh_ic_params_default(BN_MESH_MACLAURIN).radius) o->ic.radius = keep.radius;
    const bn_field_params d = bn_field_params_default(pr == BN_MESH_VORTEX_RINGS ? BN_FIELD_VORTICITY
                                                                                : BN_FIELD_GRAVITY);
    o->fp.kind = d.kind;
    memcpy(o->fp.source_vars, d.source_vars, sizeof d.source_vars);
    return 0;
}

/* Options of bench itself, else the mesh's (mesh-ic's), else the
 * solver's (potential's). */
static int bench_option(const char *cmd, int c, const char *arg, mesh_bench *o)
{
    switch (c) {
    case OPT_MESH: return mesh_option(cmd, arg, o);
    case OPT_REPEAT: return cli_parse_long_in(cmd, "--repeat", arg, 1, 1000, &o->repeat) ? 0 : 2;
    case OPT_CHECK: o->check = 1; return 0;
    case OPT_EXACT: o->exact = 1; return 0;
    case OPT_JSON: o->json = 1; return 0;
    default: break;
    }
    int r = cli_mesh_ic_option(cmd, c, arg, &o->ic);
    if (r < 0) r = cli_field_option(cmd, c, arg, &o->fp);
    return r < 0 ? cli_usage_error(cmd, "unknown option for --mesh") : r;
}

static int parse(int argc, char **argv, mesh_bench *o)
{
    const char *cmd = "bench";
    static const struct option opts[] = {
        {"mesh", required_argument, 0, OPT_MESH},           {"levels", required_argument, 0, CLI_OPT_LEVELS},
        {"min-level", required_argument, 0, CLI_OPT_MIN_LEVEL}, {"block", required_argument, 0, CLI_OPT_BLOCK},
        {"theta", required_argument, 0, CLI_OPT_THETA},     {"near", required_argument, 0, CLI_OPT_NEAR},
        {"leaf-size", required_argument, 0, CLI_OPT_LEAF},  {"smoothing", required_argument, 0, CLI_OPT_SMOOTH},
        {"no-velocity", no_argument, 0, CLI_OPT_NOVEL},     {"backend", required_argument, 0, CLI_OPT_BACKEND},
        {"device", required_argument, 0, CLI_OPT_DEVICE},   {"repeat", required_argument, 0, OPT_REPEAT},
        {"check", no_argument, 0, OPT_CHECK},               {"json", no_argument, 0, OPT_JSON},
        {"method", required_argument, 0, CLI_OPT_METHOD},   {"radius", required_argument, 0, CLI_OPT_RADIUS},
        {"exact", no_argument, 0, OPT_EXACT},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            mesh_bench_help();
            return -1;
        }
        const int r = bench_option(cmd, c, optarg, o);
        if (r != 0) return r;
    }
    if (optind != argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (o->ic.min_level > o->ic.max_level)
        return cli_usage_error(cmd, "--min-level %d is above --levels %d", o->ic.min_level, o->ic.max_level);
    return 0;
}

typedef struct mesh_check {
    double pot_p50, pot_p99, pot_max, vec_p50, vec_p99, vec_max;
    double exact_pot, exact_vec; /* --exact: the largest errors at every cell */
} mesh_check;

/* Errors on 1000 cells spread over the mesh: gravity relative per cell,
 * vorticity relative to the sample's largest value. */
static bn_status check(const mesh_bench *o, const bn_mesh *m, mesh_check *c)
{
    const size_t cells = bn_mesh_cells(m), n = cells < 1000 ? cells : 1000, bc = bn_mesh_block_cells(m);
    const int nv = bn_field_point_values(&o->fp), np = nv == 4 ? 1 : 3;
    const int nc = np == 3 && !o->fp.velocity ? 3 : nv; /* values the mesh holds */
    static const char *const names[2][6] = {{"gpot", "gacx", "gacy", "gacz", "", ""},
                                            {"psix", "psiy", "psiz", "velx", "vely", "velz"}};
    double *pos = malloc(3 * n * sizeof *pos), *ref = malloc((size_t)nv * n * sizeof *ref);
    double *ep = malloc(n * sizeof *ep), *ev = malloc(n * sizeof *ev);
    size_t *at = malloc(n * sizeof *at);
    bn_status s = pos && ref && ep && ev && at ? BN_OK : bn_fail(BN_ERR_NOMEM, "out of memory for the check");
    for (size_t i = 0; s == BN_OK && i < n; i++) {
        at[i] = i * cells / n;
        const size_t b = at[i] / bc, k = at[i] % bc;
        bn_mesh_cell(m, b, (int)(k % (size_t)m->nb[0]), (int)(k / (size_t)m->nb[0] % (size_t)m->nb[1]),
                     (int)(k / ((size_t)m->nb[0] * (size_t)m->nb[1])), pos + 3 * i, NULL);
    }
    bn_field_params p = o->fp;
    if (s == BN_OK) s = bn_field_direct(&p, m, NULL, n, pos, ref);
    double pmax = 0, vmax = 0;
    for (size_t i = 0; s == BN_OK && i < n; i++) {
        double p2 = 0, v2 = 0;
        for (int k = 0; k < nv; k++) *(k < np ? &p2 : &v2) += ref[(size_t)nv * i + k] * ref[(size_t)nv * i + k];
        pmax = fmax(pmax, sqrt(p2));
        vmax = fmax(vmax, sqrt(v2));
    }
    for (size_t i = 0; s == BN_OK && i < n; i++) {
        double dp = 0, p2 = 0, dv = 0, v2 = 0;
        for (int k = 0; k < nc; k++) {
            const double r = ref[(size_t)nv * i + k], g = m->var[bn_mesh_var_index(m, names[np == 3][k])][at[i]];
            *(k < np ? &dp : &dv) += (g - r) * (g - r);
            *(k < np ? &p2 : &v2) += r * r;
        }
        ep[i] = np == 1 ? sqrt(dp / p2) : sqrt(dp) / pmax;
        ev[i] = nc == 3 ? 0.0 : np == 1 ? sqrt(dv / v2) : sqrt(dv) / vmax;
    }
    if (s == BN_OK) {
        qsort(ep, n, sizeof *ep, bn_cmp_double);
        qsort(ev, n, sizeof *ev, bn_cmp_double);
        c->pot_p50 = bn_percentile(ep, n, 0.5);
        c->pot_p99 = bn_percentile(ep, n, 0.99);
        c->pot_max = ep[n - 1];
        c->vec_p50 = bn_percentile(ev, n, 0.5);
        c->vec_p99 = bn_percentile(ev, n, 0.99);
        c->vec_max = ev[n - 1];
    }
    free(pos);
    free(ref);
    free(ep);
    free(ev);
    free(at);
    return s;
}

/* The largest errors against the exact solution over every cell:
 * gravity max |phi - phi_ex| / |phi_ex| and max |g - g_ex| / max |g_ex|;
 * vorticity both relative to the largest exact value. */
static void exact_errors(const mesh_bench *o, const bn_mesh *m, double *pot, double *vec)
{
    const int rings = o->ic.problem == BN_MESH_VORTEX_RINGS, np = rings ? 3 : 1;
    static const char *const names[2][6] = {{"gpot", "gacx", "gacy", "gacz", "", ""},
                                            {"psix", "psiy", "psiz", "velx", "vely", "velz"}};
    const int nv = rings && !o->fp.velocity ? 3 : (rings ? 6 : 4);
    int v[6];
    for (int k = 0; k < nv; k++) v[k] = bn_mesh_var_index(m, names[rings][k]);
    const size_t n = bn_mesh_cells(m), bc = bn_mesh_block_cells(m);
    double ep = 0, ev = 0, pmax = 0, vmax = 0;
#pragma omp parallel for reduction(max : ep, ev, pmax, vmax) schedule(static)
    for (long c = 0; c < (long)n; c++) {
        const size_t b = (size_t)c / bc, k = (size_t)c % bc;
        double x[3], ex[6];
        bn_mesh_cell(m, b, (int)(k % (size_t)m->nb[0]), (int)(k / (size_t)m->nb[0] % (size_t)m->nb[1]),
                     (int)(k / ((size_t)m->nb[0] * (size_t)m->nb[1])), x, NULL);
        bn_mesh_ic_exact(&o->ic, x, ex, NULL);
        double dp = 0, p2 = 0, dv = 0, v2 = 0;
        for (int j = 0; j < nv; j++) {
            const double d = m->var[v[j]][c] - ex[j];
            *(j < np ? &dp : &dv) += d * d;
            *(j < np ? &p2 : &v2) += ex[j] * ex[j];
        }
        ep = fmax(ep, rings ? sqrt(dp) : sqrt(dp / p2));
        pmax = fmax(pmax, sqrt(p2));
        ev = fmax(ev, sqrt(dv));
        vmax = fmax(vmax, sqrt(v2));
    }
    *pot = rings ? ep / pmax : ep;
    *vec = vmax > 0 ? ev / vmax : 0.0;
}

static void print(const mesh_bench *o, const bn_mesh *m, const bn_field_stats *st, double best, double mean,
                  const mesh_check *c)
{
    const int vort = o->fp.kind == BN_FIELD_VORTICITY;
    if (o->json) {
        printf("{\"mesh\": \"%s\", \"levels\": %d, \"min_level\": %d, \"block\": %d, \"cells\": %zu, \"blocks\": %zu, "
               "\"sources\": %zu, \"method\": \"%s\", \"backend\": \"%s\", \"theta\": %g, \"near\": %d, \"leaf_size\": %d, \"call_best\": "
               "%.6g, \"call_mean\": %.6g, \"t_sources\": %.6g, \"t_tree\": %.6g, \"t_moments\": %.6g, \"t_targets\": %.6g, "
               "\"t_walk\": %.6g, \"t_download\": %.6g, \"pp\": %.6g, "
               "\"pc\": %.6g, \"device_bytes_peak\": %zu", bn_mesh_problem_name(o->ic.problem), o->ic.max_level,
               o->ic.min_level, o->ic.block, bn_mesh_cells(m), m->n_blocks, st->n_sources,
               o->fp.method == BN_FIELD_FFT ? "fft" : "tree", st->backend, st->theta,
               o->fp.near_cells, o->fp.leaf_size, best, mean, st->t_sources, st->t_tree, st->t_moments, st->t_targets,
               st->t_walk, st->t_download,
               st->n_pp / (double)st->n_targets, st->n_pc / (double)st->n_targets, st->device_bytes_peak);
        if (o->check)
            printf(", \"pot_p50\": %.6g, \"pot_p99\": %.6g, \"pot_max\": %.6g, \"vec_p50\": %.6g, \"vec_p99\": %.6g, "
                   "\"vec_max\": %.6g", c->pot_p50, c->pot_p99, c->pot_max, c->vec_p50, c->vec_p99, c->vec_max);
        /* one object, whatever was asked: a reader takes one JSON value */
        if (o->exact) printf(", \"exact_pot_max\": %.6g, \"exact_vec_max\": %.6g", c->exact_pot, c->exact_vec);
        printf("}\n");
        return;
    }
    printf("banyan bench: mesh %s, levels %d..%d, blocks of %d^3: %zu cells in %zu blocks, %zu sources (%s), backend %s, "
           "%s, theta %g, near %d, leaf %d\n", bn_mesh_problem_name(o->ic.problem), o->ic.min_level, o->ic.max_level,
           o->ic.block, bn_mesh_cells(m), m->n_blocks, st->n_sources, vort ? "vorticity" : "gravity", st->backend,
           o->fp.method == BN_FIELD_FFT ? "FFT" : "tree", st->theta, o->fp.near_cells, o->fp.leaf_size);
    printf("call from host memory (best of %ld): %.4f s (mean %.4f); stages of the best: sources %.4f tree %.4f "
           "moments %.4f targets %.4f walk %.4f download %.4f\n", o->repeat, best, mean, st->t_sources, st->t_tree,
           st->t_moments, st->t_targets, st->t_walk, st->t_download);
    printf("interactions per cell: source-cell %.1f, expansion %.1f; device memory peak %.3g GB\n",
           st->n_pp / (double)st->n_targets, st->n_pc / (double)st->n_targets, (double)st->device_bytes_peak / 1e9);
    if (o->check)
        printf("errors on 1000 cells against direct summation: %s p50 %.3e p99 %.3e max %.3e; %s p50 %.3e p99 %.3e "
               "max %.3e\n", vort ? "|dpsi|/max|psi|" : "|dphi/phi|", c->pot_p50, c->pot_p99, c->pot_max,
               vort ? "|du|/max|u|" : "|da|/|a|", c->vec_p50, c->vec_p99, c->vec_max);
    if (o->exact)
        printf("against the exact solution (every cell): %s %.3e, %s %.3e\n",
               vort ? "max |dpsi| / max |psi|" : "max |dphi/phi|", c->exact_pot,
               vort ? "max |du| / max |u|" : "max |da| / max |a|", c->exact_vec);
}

int cli_bench_mesh(int argc, char **argv)
{
    mesh_bench o;
    memset(&o, 0, sizeof o);
    o.ic = bn_mesh_ic_params_default(BN_MESH_MACLAURIN);
    o.fp = bn_field_params_default(BN_FIELD_GRAVITY);
    o.repeat = 3;
    const int rc = parse(argc, argv, &o);
    if (rc != 0) return rc < 0 ? 0 : rc;
    bn_mesh *m = NULL;
    bn_field *f = NULL;
    bn_status s = bn_mesh_ic_generate(&o.ic, &m);
    if (s == BN_OK) s = bn_field_create(&f, &o.fp);
    double best = 0, sum = 0;
    bn_field_stats st;
    memset(&st, 0, sizeof st);
    for (long r = 0; s == BN_OK && r < o.repeat; r++) {
        const double t0 = bn_wall_seconds();
        s = bn_field_mesh(f, m, NULL);
        const double t = bn_wall_seconds() - t0;
        sum += t;
        if (r == 0 || t < best) {
            best = t;
            st = *bn_field_stats_get(f);
        }
    }
    mesh_check c;
    memset(&c, 0, sizeof c);
    if (s == BN_OK && o.check) s = check(&o, m, &c);
    if (s == BN_OK && o.exact) exact_errors(&o, m, &c.exact_pot, &c.exact_vec);
    if (s == BN_OK) print(&o, m, &st, best, sum / (double)o.repeat, &c);
    bn_field_free(f);
    bn_mesh_free(m);
    return s == BN_OK ? 0 : cli_fail("bench", s);
}
