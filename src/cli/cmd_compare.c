/* banyan compare OUT.hdf5 REF.hdf5: relative force errors of OUT against
 * REF, particles matched by ParticleIDs (so the order in the files does
 * not matter). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli/cli.h"

static void compare_help(void)
{
    printf("usage: banyan compare OUT.hdf5 REF.hdf5 [--json]\n\n"
           "Relative errors of OUT's forces against REF's (e.g. a tree run against\n"
           "direct summation), particles matched by ParticleIDs:\n"
           "  acceleration |a - a_ref| / |a_ref|: percentiles 50, 90, 99, 99.9, max, mean\n"
           "  potential |phi - phi_ref| / |phi_ref|: percentiles 50, 99, max\n"
           "Both files need Acceleration (banyan forces writes it) and the same ids.\n\n"
           "  --json   print one JSON object instead of a table\n");
}

typedef struct {
    uint64_t id;
    size_t index;
} id_index;

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = ((const id_index *)a)->id, y = ((const id_index *)b)->id;
    return (x > y) - (x < y);
}

/* Indices of p sorted by id; fails on a repeated id. */
static id_index *sorted_ids(const bn_particles *p, const char *path)
{
    id_index *v = malloc(p->n * sizeof *v);
    if (!v) {
        fprintf(stderr, "banyan compare: error: out of memory sorting %zu ids of %s\n", p->n, path);
        return NULL;
    }
    for (size_t i = 0; i < p->n; i++) v[i] = (id_index){p->id[i], i};
    qsort(v, p->n, sizeof *v, cmp_id);
    for (size_t i = 1; i < p->n; i++)
        if (v[i].id == v[i - 1].id) {
            fprintf(stderr, "banyan compare: error: %s: ParticleIDs %llu appears more than once\n", path,
                    (unsigned long long)v[i].id);
            free(v);
            return NULL;
        }
    return v;
}

/* Same id sets? Print the first difference. */
static int same_ids(const id_index *a, const id_index *b, size_t n, const char *pa, const char *pb)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].id != b[i].id) {
            int in_a = a[i].id < b[i].id;
            fprintf(stderr, "banyan compare: error: the id sets differ: ParticleIDs %llu is in %s but not in %s\n",
                    (unsigned long long)(in_a ? a[i].id : b[i].id), in_a ? pa : pb, in_a ? pb : pa);
            return 0;
        }
    return 1;
}

/* Forces of p in id order: acc as xyz triples, pot (when pot != NULL). */
static void gather(const bn_particles *p, const id_index *order, double *acc, double *pot)
{
    for (size_t i = 0; i < p->n; i++) {
        size_t j = order[i].index;
        for (int k = 0; k < 3; k++) acc[3 * i + (size_t)k] = p->acc[k][j];
        if (pot) pot[i] = p->pot[j];
    }
}

static void print_json(const char *out, const char *ref, const bn_error_stats *e, int with_pot)
{
    printf("{\"out\": ");
    cli_json_string(out);
    printf(", \"ref\": ");
    cli_json_string(ref);
    printf(", \"n\": %zu,\n \"acc_rel_error\": {\"p50\": %.17g, \"p90\": %.17g, \"p99\": %.17g, \"p99.9\": %.17g, "
           "\"max\": %.17g, \"mean\": %.17g},\n \"pot_rel_error\": ",
           e->n, e->acc_p50, e->acc_p90, e->acc_p99, e->acc_p999, e->acc_max, e->acc_mean);
    if (with_pot) printf("{\"p50\": %.17g, \"p99\": %.17g, \"max\": %.17g}}\n", e->pot_p50, e->pot_p99, e->pot_max);
    else printf("null}\n");
}

static void print_table(const char *out, const char *ref, const bn_error_stats *e, int with_pot)
{
    printf("%s against %s: %zu particles matched by ParticleIDs\n\n", out, ref, e->n);
    printf("%-28s %10s %10s %10s %10s %10s %10s\n", "relative error", "p50", "p90", "p99", "p99.9", "max", "mean");
    printf("%-28s %10.3e %10.3e %10.3e %10.3e %10.3e %10.3e\n", "|a - a_ref| / |a_ref|", e->acc_p50, e->acc_p90,
           e->acc_p99, e->acc_p999, e->acc_max, e->acc_mean);
    if (with_pot)
        printf("%-28s %10.3e %10s %10.3e %10s %10.3e\n", "|phi - phi_ref| / |phi_ref|", e->pot_p50, "", e->pot_p99,
               "", e->pot_max);
    else printf("(no potential error: Potential is missing from one of the files)\n");
}

/* Relative errors need a reference that is not zero: a zero |a_ref| or
 * phi_ref would turn the table's relative errors into absolute ones under
 * the same heading; and each ratio must be a number (a reference of 1e-310
 * or a difference of 1e308 would print inf, which is not even JSON).
 * 0 when every ratio is finite, else the exit code. */
static int finite_ratio(double diff, double ref) { return ref > 0 && isfinite(diff / ref); }

static int valid_reference(const double *acc, const double *pot, size_t n, const id_index *ob, const char *pb)
{
    const double *acc_ref = acc + 3 * n, *pot_ref = pot ? pot + n : NULL;
    for (size_t i = 0; i < n; i++) {
        const double *a = acc + 3 * i, *r = acc_ref + 3 * i;
        const double ref = hypot(hypot(r[0], r[1]), r[2]);
        const double diff = hypot(hypot(a[0] - r[0], a[1] - r[1]), a[2] - r[2]);
        const int bad_a = !finite_ratio(diff, ref);
        const int bad_p = pot_ref && !finite_ratio(fabs(pot[i] - pot_ref[i]), fabs(pot_ref[i]));
        if (!bad_a && !bad_p) continue;
        const double rv = bad_a ? ref : fabs(pot_ref[i]), dv = bad_a ? diff : fabs(pot[i] - pot_ref[i]);
        fprintf(stderr, "banyan compare: error: ParticleIDs %llu: the %s of the reference %s is %g and the "
                        "difference %g: the relative error is %s\n", (unsigned long long)ob[i].id,
                bad_a ? "acceleration" : "potential", pb, rv, dv,
                rv == 0 ? "undefined (a zero reference)" : "not a finite number");
        return 1;
    }
    return 0;
}

/* Match, gather and compute; 0 on success, else the exit code. */
static int compare_sets(const bn_particles *a, const bn_particles *b, const char *pa, const char *pb, int with_pot,
                        bn_error_stats *e)
{
    if (a->n != b->n) {
        fprintf(stderr, "banyan compare: error: the id sets differ: %s has %zu particles, %s has %zu\n", pa, a->n,
                pb, b->n);
        return 1;
    }
    id_index *oa = sorted_ids(a, pa), *ob = oa ? sorted_ids(b, pb) : NULL;
    /* n is bounded by the memory check of the reader: 6 n doubles do not overflow */
    double *acc = malloc(6 * a->n * sizeof *acc), *pot = malloc(2 * a->n * sizeof *pot);
    int rc = 1;
    if (oa && ob && acc && pot && same_ids(oa, ob, a->n, pa, pb)) {
        gather(a, oa, acc, with_pot ? pot : NULL);
        gather(b, ob, acc + 3 * a->n, with_pot ? pot + a->n : NULL);
        if (valid_reference(acc, with_pot ? pot : NULL, a->n, ob, pb) != 0) goto done;
        bn_status s = bn_error_stats_compute(a->n, acc, acc + 3 * a->n, with_pot ? pot : NULL,
                                             with_pot ? pot + a->n : NULL, e);
        rc = s == BN_OK ? 0 : cli_fail("compare", s);
    } else if (oa && ob && (!acc || !pot)) {
        fprintf(stderr, "banyan compare: error: out of memory for %zu particles\n", a->n);
    }
done:
    free(oa);
    free(ob);
    free(acc);
    free(pot);
    return rc;
}

static int read_with_forces(const char *path, bn_particles **p, bn_snapshot_meta *m)
{
    bn_status s = bn_snapshot_read(path, p, m);
    if (s != BN_OK) return cli_fail("compare", s);
    if (!m->has_acceleration) {
        fprintf(stderr,
                "banyan compare: error: %s has no /PartType*/Acceleration dataset "
                "(compute forces first: banyan forces IN -o OUT)\n",
                path);
        return 1;
    }
    return 0;
}

int bn_cmd_compare(int argc, char **argv)
{
    const char *cmd = "compare";
    int json = 0, c;
    static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'j') json = 1;
        else if (c == 'h') {
            compare_help();
            return 0;
        } else return cli_usage_error(cmd, "unknown option");
    }
    if (optind != argc - 2) return cli_usage_error(cmd, "expected two snapshots: OUT.hdf5 REF.hdf5");
    const char *pa = argv[optind], *pb = argv[optind + 1];
    const int ma_mesh = bn_mesh_file_detect(pa), mb_mesh = bn_mesh_file_detect(pb);
    if (ma_mesh && mb_mesh) return cli_compare_meshes(pa, pb, json);
    if (ma_mesh != mb_mesh)
        return cli_usage_error(cmd, "%s is a mesh and %s is not: compare two snapshots or two meshes",
                               ma_mesh ? pa : pb, ma_mesh ? pb : pa);
    bn_particles *a = NULL, *b = NULL;
    bn_snapshot_meta ma, mb;
    bn_error_stats e;
    int rc = read_with_forces(pa, &a, &ma);
    if (rc == 0) rc = read_with_forces(pb, &b, &mb);
    int with_pot = rc == 0 && ma.has_potential && mb.has_potential;
    if (rc == 0) rc = compare_sets(a, b, pa, pb, with_pot, &e);
    if (rc == 0 && json) print_json(pa, pb, &e, with_pot);
    else if (rc == 0) print_table(pa, pb, &e, with_pot);
    bn_particles_free(a);
    bn_particles_free(b);
    return rc;
}
