/* energy.txt of `banyan run`: a header naming the build and the run, then
 * one row per logged time (SWIFT's energy.txt habit). Rows are flushed as
 * they are written so that a running log can be followed (tail -f). */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli/run.h"
#include "core/error.h"

#if defined(__clang__)
#define RUN_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define RUN_COMPILER "gcc " __VERSION__
#else
#define RUN_COMPILER "unknown compiler"
#endif
#ifndef BANYAN_C_FLAGS
#define BANYAN_C_FLAGS "?"
#endif

static double norm3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

double run_relative_error(double e, double e0)
{
    return e0 != 0 ? fabs(e - e0) / fabs(e0) : fabs(e - e0);
}

/* Per part type present, when there are several (a galaxy's halo, disk
 * and bulge): K, W, Lx, Ly, Lz of its particles. */
#define PART_COLUMNS 5
static const char *const part_column[PART_COLUMNS] = {"K", "W", "Lx", "Ly", "Lz"};

static unsigned parts_present(const bn_energies *e)
{
    unsigned mask = 0;
    for (int t = 0; t < BN_PART_TYPES; t++)
        if (e->part[t].count > 0) mask |= 1u << t;
    return mask & (mask - 1) ? mask : 0; /* two types or more */
}

static void write_parts_legend(FILE *f, unsigned parts, int col)
{
    fprintf(f, "#   per component (PartType1 halo, 2 disk, 3 bulge, N typeN), from column %d: K_c kinetic energy,\n"
               "#   W_c = 1/2 sum m phi over its particles, phi from all particles (its share of W: the W_c add up\n"
               "#   to column 3; not its self-energy), Lx_c Ly_c Lz_c its angular momentum about the origin\n"
               "#   components:",
            col);
    for (int t = 0; t < BN_PART_TYPES; t++)
        if (parts >> t & 1) fprintf(f, " %s (PartType%d)", bn_part_type_name(t), t);
    fputc('\n', f);
}

static void write_header(FILE *f, const bn_run_params *p, size_t n, bn_backend backend, const bn_gravity_params *g,
                         const bn_accuracy *acc, unsigned parts)
{
    fprintf(f, "# banyan %s energy log\n", BN_VERSION_STRING);
    fprintf(f, "# build: git %s, compiler %s, flags %s (%s), OpenMP threads %d\n", BANYAN_GIT_REVISION,
            RUN_COMPILER, BANYAN_C_FLAGS, BANYAN_BUILD_FLAGS, omp_get_max_threads());
    fprintf(f, "# run: N %zu, method %s", n, bn_method_name(g->method));
    if (g->method == BN_METHOD_TREE) fprintf(f, ", mac %s, theta %g", bn_mac_name(g->mac), g->theta);
    fprintf(f, ", softening %g, G %g, backend %s, dt %g, eta %g", g->softening, g->G, bn_backend_name(backend),
            p->integ.dt, p->integ.eta);
    if (p->integ.time_bins > 0 && g->method == BN_METHOD_TREE) {
        fprintf(f, ", time_bins %d, tree_rebuild %d", p->integ.time_bins, p->integ.tree_rebuild);
        if (p->integ.tree_rebuild == 0) fprintf(f, " (%s cost)", bn_tune_cost_name(p->integ.rebuild_cost));
    }
    fputc('\n', f);
    const int target = g->method == BN_METHOD_TREE && g->error_target > 0;
    if (target)
        fprintf(f, "# error target %g (p99 of |a - a_ref|/|a_ref|, %s cost): chosen %s, theta %g, leaf %d, group %d, "
                   "expansion %g; p50 %.3e p99 %.3e on %zu sampled targets%s; checked every %d steps\n",
                g->error_target, bn_tune_cost_name(g->error_cost), bn_mac_name(g->mac), g->theta, g->leaf_size,
                g->group_size, g->group_expansion, acc->p50, acc->p99, acc->sample, acc->met ? "" : " (NOT MET)",
                g->error_check_interval);
    fprintf(f, "# columns: 1 time, 2 kinetic energy K, 3 potential energy W = 1/2 sum m phi, 4 total E = K + W,\n"
               "#   5 relative energy error |E - E0| / |E0| (E0: first row), 6 |total momentum|,\n"
               "#   7 |total angular momentum| (about the origin), 8 wall-clock seconds since the start%s\n",
            target ? "," : "");
    if (target)
        fprintf(f, "#   9-13 the settings in use (theta, leaf, group, expansion, mac), 14 p99 of the last check\n");
    if (parts) write_parts_legend(f, parts, target ? 15 : 9);
    fprintf(f, "# %-14s %24s %24s %24s %11s %11s %11s %10s", "time", "kinetic", "potential", "total", "rel_error",
            "momentum", "ang_mom", "wall_time");
    if (target) fprintf(f, " %7s %5s %5s %6s %10s %10s", "theta", "leaf", "group", "kappa", "mac", "err_p99");
    for (int t = 0; t < BN_PART_TYPES; t++)
        for (int q = 0; parts >> t & 1 && q < PART_COLUMNS; q++) {
            char name[32];
            snprintf(name, sizeof name, "%s_%s", part_column[q], bn_part_type_name(t));
            fprintf(f, " %24s", name);
        }
    fputc('\n', f);
}

bn_status run_energy_log_open(run_energy_log *log, const char *path, const bn_run_params *p, size_t n,
                              bn_backend backend, const bn_gravity_params *g, const bn_accuracy *acc,
                              const bn_energies *first)
{
    log->target = g->method == BN_METHOD_TREE && g->error_target > 0;
    log->parts = parts_present(first);
    log->f = fopen(path, "w");
    log->e0 = 0;
    log->last_rel = 0;
    log->last_time = NAN;
    if (!log->f) return bn_fail(BN_ERR_IO, "cannot create energy log '%s': %s", path, strerror(errno));
    write_header(log->f, p, n, backend, g, acc, log->parts);
    if (fflush(log->f) != 0) return bn_fail(BN_ERR_IO, "cannot write energy log '%s': %s", path, strerror(errno));
    return BN_OK;
}

bn_status run_energy_log_row(run_energy_log *log, double time, const bn_energies *e, double wall,
                             const bn_gravity_params *g, const bn_accuracy *acc)
{
    if (isnan(log->last_time)) log->e0 = e->total;
    log->last_rel = run_relative_error(e->total, log->e0);
    log->last_time = time;
    fprintf(log->f, "  %-14.9g %24.16e %24.16e %24.16e %11.4e %11.4e %11.4e %10.3f", time, e->kinetic,
            e->potential, e->total, log->last_rel, norm3(e->momentum), norm3(e->angular_momentum), wall);
    if (log->target)
        fprintf(log->f, " %7.4f %5d %5d %6.3f %10s %10.3e", g->theta, g->leaf_size, g->group_size,
                g->group_expansion, bn_mac_name(g->mac), acc->p99);
    for (int t = 0; t < BN_PART_TYPES; t++) {
        const bn_component_energies *c = &e->part[t];
        if (log->parts >> t & 1)
            fprintf(log->f, " %24.16e %24.16e %24.16e %24.16e %24.16e", c->kinetic, c->potential,
                    c->angular_momentum[0], c->angular_momentum[1], c->angular_momentum[2]);
    }
    fputc('\n', log->f);
    if (fflush(log->f) != 0) return bn_fail(BN_ERR_IO, "cannot write the energy log: %s", strerror(errno));
    return BN_OK;
}

bn_status run_energy_log_close(run_energy_log *log)
{
    if (!log->f) return BN_OK;
    int rc = fclose(log->f);
    log->f = NULL;
    return rc == 0 ? BN_OK : bn_fail(BN_ERR_IO, "cannot close the energy log: %s", strerror(errno));
}

bn_status run_energy_log_reopen(run_energy_log *log, const char *path, long offset)
{
    FILE *f = fopen(path, "r+");
    if (!f) return bn_fail(BN_ERR_IO, "cannot reopen energy log '%s' to continue it: %s", path, strerror(errno));
    /* rows written after the restart file are written again by this run */
    if (fflush(f) != 0 || ftruncate(fileno(f), (off_t)offset) != 0 || fseek(f, 0, SEEK_END) != 0) {
        const int e = errno;
        fclose(f);
        return bn_fail(BN_ERR_IO, "cannot cut energy log '%s' to %ld bytes: %s", path, offset, strerror(e));
    }
    log->f = f;
    return BN_OK;
}
