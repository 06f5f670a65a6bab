/* banyan run [PARAMS.yml] [-P Section:key:value ...] [--output-dir DIR]:
 * initial conditions -> shared-step KDK leapfrog (bn_simulation) ->
 * snapshots at the set times, energy log, picture of the last state.
 * Everything that can be wrong with the input (parameters, initial
 * particles, output times, backend) is checked before the first output
 * file is created. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/run.h"
#include "core/error.h"
#include "core/timer.h"
#include "gravity/force_checks.h"
#include "integrate/timebins.h"
#include "io/params.h"
#include "parallel/comm.h"

typedef struct run_ctx {
    bn_run_params *prm;
    const char *param_file; /* NULL: defaults and -P only */
    const char *outdir;
    int quiet;
    char snapdir[RUN_PATH_MAX];
    double t_start;
    bn_units units;     /* of the initial conditions' file, G the run's */
    bn_simulation *sim;
    size_t n;
    run_schedule sched;
    run_energy_log log;
    run_progress progress;
    double wall0;
    double t_steps;     /* wall seconds in the steps alone (integrate) */
    long steps0;        /* the steps made before this process's (a restart's) */
    double next_energy; /* next logged time when Statistics:interval > 0 */
    long energy_rows;
    /* several ranks (mpirun): rank 0 writes every output */
    const bn_comm *comm;
    int root;
    run_ranks ranks;
    long balanced_at;   /* the step of the last re-balance            */
    long rebalances;
    double t_rebalance, moved; /* the cuts after the first: wall seconds, particles sent */
    double imbalance;   /* the last measured (largest rank over mean) */
    bn_energies first;  /* at the start: the log's part types       */
    /* restart files (run_restart.c) */
    const char *restart_from; /* --restart DIR, or NULL            */
    long stop_after;    /* --stop-after-steps (0 = never): at a batch end, restart_due */
    char restart_dir[RUN_PATH_MAX];
    run_saved saved;    /* index: the next file's number            */
    double last_restart; /* wall seconds of the last restart file    */
    int stopped;        /* stopped before t_end, with a restart file */
    char restart_off[512]; /* why this run writes no restart files ("": it does) */
    char **overrides;
    int n_overrides;
} run_ctx;

/* Re-balance (several ranks) at a synchronised time, at least every
 * RUN_REBALANCE_STEPS steps, sooner when the largest rank's walk cost
 * passes the mean by RUN_REBALANCE_IMBALANCE; never within
 * RUN_REBALANCE_MIN_STEPS steps of the last (the counts would still be
 * those of the old domains). The first RUN_REBALANCE_FIRST cuts after
 * the one by count come as soon as that allows: each weighs the costs
 * its particles had in the domains before it, which its own move of the
 * surfaces changes, so one cut by cost left the ranks' counted work 2.7%
 * apart on 4 GPUs (session 36) and a second brings it within ~0.3%. */
#define RUN_REBALANCE_STEPS 64
#define RUN_REBALANCE_IMBALANCE 1.1
#define RUN_REBALANCE_MIN_STEPS 4
#define RUN_REBALANCE_FIRST 2

static int several(const run_ctx *c) { return bn_comm_size(c->comm) > 1; }

static void run_help(void)
{
    printf("usage: banyan run [PARAMS.yml] [-P Section:key:value ...] [--output-dir DIR]\n\n"
           "Integrate an N-body system with a shared-step kick-drift-kick leapfrog. PARAMS.yml\n"
           "(YAML, sections InitialConditions, Gravity, TimeIntegration, Snapshots, Statistics)\n"
           "sets the run; every parameter has a default, listed with its meaning in\n"
           "examples/default.yml. Without a file: a Plummer sphere of 16384 particles with\n"
           "the tree code to t = 1, and a picture of the last state (that is `make run`).\n\n"
           "Writes into DIR: used_parameters.yml (every value used), unused_parameters.yml\n"
           "(values set without effect), energy.txt, snapshots (HDF5, GADGET-4 layout) and\n"
           "final.png.\n\n"
           "options:\n"
           "  -P, --param S:key:value  override one parameter (repeatable), e.g. -P Gravity:theta:0.7\n"
           "  -o, --output-dir DIR     where outputs go (default: the current directory)\n"
           "  -q, --quiet              no progress line and no summary\n"
           "      --restart DIR        continue the run of the newest restart file in DIR that loads\n"
           "                           (no PARAMS.yml; -P only TimeIntegration:t_end, Gravity:backend);\n"
           "                           says so when the result is not bit-identical to an unstopped run\n"
           "                           (another backend or rank count, Gravity:mac accel, tree_rebuild != 1)\n"
           "      --stop-after-steps N write a restart file and stop at the end of the batch of steps\n"
           "                           in which the step count (from the run's start, restarts\n"
           "                           included) reaches N: at step N to N + 63 (steps run in\n"
           "                           batches of up to 64, cut at outputs; exactly N with\n"
           "                           -P Statistics:interval:0, one step a batch) (tests, job limits)\n"
           "      --print-defaults     print every parameter with its meaning and default (with\n"
           "                           PARAMS.yml or -P: their values, checked), and exit\n"
           "  -h, --help               this help\n");
}

/* Defaults, then the file, then every -P in order. */
static bn_status load_params(bn_run_params *prm, const char *file, char **overrides, int n_overrides)
{
    bn_run_params_init(prm);
    if (file) BN_TRY(bn_run_params_read_file(prm, file));
    for (int i = 0; i < n_overrides; i++) BN_TRY(bn_run_params_override(prm, overrides[i]));
    return bn_run_params_validate(prm);
}

/* Read InitialConditions:file or generate the model; fixes the start time. */
/* Snapshots per rank under mpirun: each rank reads and writes its own
 * share, and no rank holds every particle. */
static int per_rank(const run_ctx *c) { return bn_comm_size(c->comm) > 1 && c->prm->snap_per_rank; }

/* The initial conditions' file: whole, or this rank's share of it
 * (*share set; a rank may get none). */
static bn_status read_initial(run_ctx *c, bn_particles **out, int *share)
{
    const bn_run_params *prm = c->prm;
    bn_snapshot_meta meta = bn_snapshot_meta_default();
    *share = per_rank(c);
    bn_status s = *share ? bn_snapshot_read_share(prm->ic_file, bn_comm_rank(c->comm), bn_comm_size(c->comm), out,
                                                  &meta, NULL)
                         : bn_snapshot_read(prm->ic_file, out, &meta);
    if (s == BN_OK && (*out)->n > 0) s = bn_particles_validate(*out, prm->ic_file);
    if (s == BN_OK && (*out)->n > 0 && (s = bn_force_inputs_check(&prm->gravity, *out)) != BN_OK)
        s = bn_fail_context(s, "%s", prm->ic_file);
    if (s != BN_OK) {
        bn_particles_free(*out);
        *out = NULL;
        return bn_fail_context(s, "InitialConditions:file");
    }
    c->t_start = meta.time;
    /* the file's G unless the parameters set Gravity:G: a galaxy in kpc,
     * Msun and km/s runs with its G, and its snapshots keep its units */
    const bn_param_desc *g = bn_param_find("Gravity", "G");
    if (c->prm->origin[g - bn_param_table] == BN_ORIGIN_DEFAULT) {
        c->prm->gravity.G = meta.gravity.G;
        c->prm->origin[g - bn_param_table] = BN_ORIGIN_INITIAL_CONDITIONS; /* used_parameters.yml says so */
    }
    c->units = meta.units;
    c->units.G = c->prm->gravity.G;
    return BN_OK;
}

static bn_status load_particles(run_ctx *c, bn_particles **out, int *share)
{
    const bn_run_params *prm = c->prm;
    *share = 0;
    if (prm->ic_file[0]) {
        BN_TRY(read_initial(c, out, share));
    } else {
        bn_ic_params ic = prm->ic;
        ic.G = prm->gravity.G;
        BN_TRY(bn_ic_generate(&ic, out));
        c->t_start = 0;
    }
    bn_status s = BN_OK;
    if (!(prm->t_end > c->t_start))
        s = bn_fail(BN_ERR_PARAMETER, "TimeIntegration:t_end = %g must be after the start time %g", prm->t_end,
                    c->t_start);
    if (s == BN_OK) s = run_plan_check(prm, c->t_start, 0);
    if (s != BN_OK) {
        bn_particles_free(*out);
        *out = NULL;
    }
    return s;
}

/* The first forces, energies and step, checked before any output: forces
 * that overflow (no softening and near-coincident particles), or a first
 * step below dt_min, fail here rather than after the first files. */
static bn_status check_start(run_ctx *c)
{
    const bn_particles *p = NULL;
    bn_status s = bn_simulation_particles(c->sim, &p);
    if (s == BN_OK && bn_particles_check_forces(p, "the initial forces") != BN_OK)
        s = bn_fail_context(BN_ERR_ARGUMENT, "the forces overflow (G = %g, softening %g)", c->prm->gravity.G,
                            c->prm->gravity.softening);
    BN_TRY(bn_comm_agree(c->comm, s));
    bn_energies *e = &c->first;
    BN_TRY(bn_simulation_energies(c->sim, e));
    if (!isfinite(e->total))
        return bn_fail(BN_ERR_ARGUMENT, "the initial energy is not finite (kinetic %g, potential %g): the velocities "
                       "or masses are too large", e->kinetic, e->potential);
    double amax = 0;
    for (size_t i = 0; p->acc[0] && i < p->n; i++) /* hypot: |a| of 1e200 does not overflow */
        amax = fmax(amax, hypot(hypot(p->acc[0][i], p->acc[1][i]), p->acc[2][i]));
    BN_TRY(bn_comm_allreduce(c->comm, &amax, 1, BN_REDUCE_MAX)); /* every rank plans the same */
    return run_plan_check(c->prm, c->t_start, amax);
}

/* The simulation with its first forces: a backend that cannot work (no
 * GPU, not enough memory) fails here, before any output exists. */
static bn_status setup_simulation(run_ctx *c)
{
    bn_particles *p = NULL;
    /* every rank reads or generates the whole set (the same on each), or
     * reads its share of a file (snapshots per rank) */
    int share = 0;
    BN_TRY(bn_comm_agree(c->comm, load_particles(c, &p, &share)));
    double n = (double)p->n;
    bn_status s = share ? bn_comm_allreduce(c->comm, &n, 1, BN_REDUCE_SUM) : BN_OK;
    c->n = (size_t)n;
    if (s == BN_OK && several(c) && !share) s = run_ranks_split(c->comm, &c->ranks, &p, !per_rank(c)); /* agreed */
    if (s != BN_OK) {
        bn_particles_free(p);
        return s;
    }
    bn_integrator_params integ = c->prm->integ;
    integ.dt_min = run_plan_dt_min(c->prm, c->t_start);
    s = bn_simulation_create(&c->sim);
    if (s == BN_OK) s = bn_simulation_set_comm(c->sim, c->comm);
    if (s == BN_OK) s = bn_simulation_set_gravity(c->sim, &c->prm->gravity);
    if (s == BN_OK) s = bn_simulation_set_integrator(c->sim, &integ);
    if (s == BN_OK) s = bn_simulation_set_particles(c->sim, p);
    bn_particles_free(p);
    if (s == BN_OK) s = bn_simulation_set_time(c->sim, c->t_start);
    if (s == BN_OK) s = run_schedule_build(&c->sched, c->prm, c->t_start);
    BN_TRY(bn_comm_agree(c->comm, s));
    BN_TRY(bn_simulation_rebalance(c->sim, NULL)); /* the first domains, by count */
    BN_TRY(bn_simulation_compute_forces(c->sim));
    return check_start(c);
}

/* Every file the run will write, checked before the first: names that
 * fit, and none that is an input (the parameter file, the initial
 * snapshot) or another output, compared as resolved paths. */
static bn_status check_output_names(run_ctx *c)
{
    const bn_run_params *p = c->prm;
    run_named_path f[9] = {{"the parameter file", 0, ""},     {"InitialConditions:file", 0, ""},
                           {"used_parameters.yml", 1, ""},    {"unused_parameters.yml", 1, ""},
                           {"Statistics:energy_file", 1, ""}, {"Snapshots:render_file", 1, ""},
                           {"InitialConditions:file (file 0 of its split snapshot)", 0, ""},
                           {"restart file 0 (Restart:dir)", 1, ""}, {"restart file 0 of rank 0 (Restart:dir)", 1, ""}};
    if (c->param_file) BN_TRY(run_path_join(f[0].path, sizeof f[0].path, ".", c->param_file));
    if (p->ic_file[0]) BN_TRY(run_path_join(f[1].path, sizeof f[1].path, ".", p->ic_file));
    /* a split input's files share its stem: an output file of that stem
     * is caught against its file 0 */
    if (p->ic_file[0]) BN_TRY(bn_snapshot_part_path(f[1].path, 0, f[6].path, sizeof f[6].path));
    BN_TRY(run_path_join(f[2].path, sizeof f[2].path, c->outdir, "used_parameters.yml"));
    BN_TRY(run_path_join(f[3].path, sizeof f[3].path, c->outdir, "unused_parameters.yml"));
    BN_TRY(run_path_join(f[4].path, sizeof f[4].path, c->outdir, p->energy_file));
    if (p->render) BN_TRY(run_path_join(f[5].path, sizeof f[5].path, c->outdir, p->render_file));
    BN_TRY(run_check_name("--output-dir", c->outdir));
    BN_TRY(run_check_name("Snapshots:directory", c->snapdir));
    for (int i = 2; i < 6; i++)
        if (f[i].path[0]) BN_TRY(run_check_name(f[i].what, f[i].path));
    /* the restart files, in both of their forms (one rank's, and a rank's
     * of several: the rank-0 clean-up of other rank counts' files would
     * take snapshots of that name for them): none may be a snapshot or
     * another output, nor lie below a file */
    char rdir[RUN_PATH_MAX];
    if (c->restart_from) snprintf(rdir, sizeof rdir, "%s", c->restart_from);
    else BN_TRY(run_path_join(rdir, sizeof rdir, c->outdir, p->restart_dir));
    BN_TRY(run_check_name("Restart:dir", rdir));
    BN_TRY(run_path_join(f[7].path, sizeof f[7].path, rdir, "restart_0000.hdf5"));
    BN_TRY(run_path_join(f[8].path, sizeof f[8].path, rdir, "restart_0000.0.hdf5"));
    if (strchr(p->snap_basename, '/'))
        return bn_fail(BN_ERR_PARAMETER, "Snapshots:basename = '%s' must be a file name without '/' (the directory "
                       "is Snapshots:directory)", p->snap_basename);
    char name[BN_PARAM_STRLEN + 32], path[RUN_PATH_MAX];
    snprintf(name, sizeof name, "%s_%04zu.hdf5", p->snap_basename, c->sched.n);
    BN_TRY(run_path_join(path, sizeof path, c->snapdir, name));
    BN_TRY(run_check_name("Snapshots:basename", path));
    return run_check_distinct(f, 9, c->snapdir, p->snap_basename, c->sched.n,
                              per_rank(c) ? bn_comm_size(c->comm) : 0);
}

/* Every directory an output goes into can be made and written (probed
 * before any is made: a refusal leaves nothing behind, not even an empty
 * directory). */
static bn_status check_output_dirs(run_ctx *c)
{
    char path[RUN_PATH_MAX];
    char what[RUN_PATH_MAX + 32];
    snprintf(what, sizeof what, "--output-dir '%s'", c->outdir);
    BN_TRY(cli_check_dir_writable(what, c->outdir, 1));
    snprintf(what, sizeof what, "Snapshots:directory '%s'", c->snapdir);
    if (c->sched.n > 0) BN_TRY(cli_check_dir_writable(what, c->snapdir, 1));
    BN_TRY(run_path_join(path, sizeof path, c->outdir, c->prm->energy_file));
    BN_TRY(cli_check_output_dir("Statistics:energy_file", path, 1));
    if (c->prm->render) {
        BN_TRY(run_path_join(path, sizeof path, c->outdir, c->prm->render_file));
        BN_TRY(cli_check_output_dir("Snapshots:render_file", path, 1));
    }
    return BN_OK;
}

/* Every directory first (the picture's too: a missing one would only show
 * after the whole run), then the files. */
static bn_status make_outputs(run_ctx *c)
{
    char path[RUN_PATH_MAX];
    BN_TRY(check_output_names(c));
    BN_TRY(check_output_dirs(c));
    BN_TRY(run_make_dirs(c->outdir));
    if (c->sched.n > 0) BN_TRY(run_make_dirs(c->snapdir));
    BN_TRY(run_path_join(path, sizeof path, c->outdir, c->prm->energy_file));
    BN_TRY(run_make_parent_dirs(path));
    if (c->prm->render) {
        BN_TRY(run_path_join(path, sizeof path, c->outdir, c->prm->render_file));
        BN_TRY(run_make_parent_dirs(path));
    }
    BN_TRY(run_path_join(path, sizeof path, c->outdir, "used_parameters.yml"));
    BN_TRY(bn_run_params_write(c->prm, path, BN_PARAMS_USED));
    BN_TRY(run_path_join(path, sizeof path, c->outdir, "unused_parameters.yml"));
    BN_TRY(bn_run_params_write(c->prm, path, BN_PARAMS_UNUSED));
    BN_TRY(run_path_join(path, sizeof path, c->outdir, c->prm->energy_file));
    return run_energy_log_open(&c->log, path, c->prm, c->n, bn_simulation_backend(c->sim),
                               bn_simulation_gravity(c->sim), bn_simulation_accuracy(c->sim), &c->first);
}

/* --restart: only -P TimeIntegration:t_end and Gravity:backend/device
 * may change (the rest would change the run the file belongs to). */
static bn_status apply_restart_overrides(run_ctx *c)
{
    static const char *const allowed[] = {"TimeIntegration:t_end:", "Gravity:backend:", "Gravity:device:"};
    for (int i = 0; i < c->n_overrides; i++) {
        int ok = 0;
        for (int k = 0; k < 3; k++) ok |= !strncmp(c->overrides[i], allowed[k], strlen(allowed[k]));
        if (!ok)
            return bn_fail(BN_ERR_PARAMETER, "-P %s: with --restart only TimeIntegration:t_end, Gravity:backend and "
                           "Gravity:device may change", c->overrides[i]);
        BN_TRY(bn_run_params_override(c->prm, c->overrides[i]));
    }
    return bn_run_params_validate(c->prm);
}

/* A restart file of another rank count: the particles lie where they
 * were read; at a synchronised time the domains are cut anew now, inside
 * a block-step cycle at its end (a cut moves particles with their
 * forces, which a cycle's kicks need: only at tick 0). */
static bn_status setup_moved(run_ctx *c)
{
    if (bn_simulation_block_info(c->sim).tick != 0) {
        c->balanced_at = bn_simulation_steps(c->sim) - RUN_REBALANCE_STEPS; /* due at the cycle's end */
        return BN_OK;
    }
    BN_TRY(bn_simulation_rebalance(c->sim, NULL));
    c->balanced_at = bn_simulation_steps(c->sim);
    return BN_OK;
}

/* Why the continued run will not give an unstopped run's bits (rank 0,
 * with -q too: a user comparing bits must know). */
static void print_not_bitwise(const run_ctx *c, const run_restart_found *f)
{
    if (!c->root) return;
    const int ranks = bn_comm_size(c->comm);
    const bn_backend now = bn_simulation_backend(c->sim);
    const bn_gravity_params *g = bn_simulation_gravity(c->sim);
    if (f->ranks != ranks)
        printf("banyan run: continuing from %d rank%s restart on %d rank%s: not bitwise (every rank's particles read "
               "and shared out, the domains cut anew%s)\n", f->ranks, f->ranks == 1 ? "'s" : "s'", ranks,
               ranks == 1 ? "" : "s", bn_simulation_block_info(c->sim).tick != 0 ? " at the block-step cycle's end" : "");
    if (now != f->info.backend)
        printf("banyan run: continuing from the %s backend's restart on the %s backend: not bitwise\n",
               bn_backend_name(f->info.backend), bn_backend_name(now));
    const bn_integrator_params *in = &c->prm->integ;
    const int refreshes = bn_block_steps_refresh(g->method, in->time_bins, in->tree_rebuild);
    if (refreshes && in->tree_rebuild == 0 && in->rebuild_cost == BN_TUNE_TIME)
        printf("banyan run: continuing with TimeIntegration:tree_rebuild = 0 and rebuild_cost time: not bitwise "
               "(the tuner's rebuilds follow this run's measured times)\n");
    fflush(stdout);
}

/* The simulation and the CLI's state from the newest restart file that
 * loads; the energy log continues where that file left it. */
static bn_status setup_restart(run_ctx *c)
{
    snprintf(c->restart_dir, sizeof c->restart_dir, "%s", c->restart_from);
    BN_TRY(bn_comm_agree(c->comm, apply_restart_overrides(c))); /* the backend to load on */
    bn_gravity_params g = bn_gravity_params_default();
    g.backend = c->prm->gravity.backend;
    g.device = c->prm->gravity.device;
    BN_TRY(bn_simulation_create(&c->sim));
    BN_TRY(bn_simulation_set_comm(c->sim, c->comm));
    BN_TRY(bn_simulation_set_gravity(c->sim, &g));
    run_restart_found found;
    BN_TRY(run_restart_load(c->sim, c->restart_dir, &c->saved, &found, c->comm));
    const run_saved *v = &c->saved;
    *c->prm = v->prm;
    bn_status s = bn_comm_agree(c->comm, apply_restart_overrides(c));
    c->t_start = v->t_start;
    c->next_energy = v->next_energy;
    c->units = v->units;
    c->n = v->n;
    c->energy_rows = v->energy_rows;
    c->balanced_at = v->balanced_at;
    c->rebalances = v->rebalances;
    c->log = v->log;
    if (s == BN_OK && found.ranks != bn_comm_size(c->comm)) s = setup_moved(c);
    BN_TRY(s);
    BN_TRY(bn_comm_agree(c->comm, run_schedule_build(&c->sched, c->prm, c->t_start)));
    c->sched.next = v->sched_next;
    BN_TRY(run_path_join(c->snapdir, sizeof c->snapdir, c->outdir, c->prm->snap_dir));
    if (c->root && !c->quiet)
        printf("banyan run: continuing from restart file %d (t = %.9g, step %ld)\n", v->index - 1, found.info.time,
               found.info.steps);
    print_not_bitwise(c, &found);
    char path[RUN_PATH_MAX];
    BN_TRY(run_path_join(path, sizeof path, c->outdir, c->prm->energy_file));
    return bn_comm_agree(c->comm, c->root ? run_energy_log_reopen(&c->log, path, v->log_offset) : BN_OK);
}

/* Rank 0 makes and writes the outputs; every rank knows where snapshots
 * go. */
static bn_status prepare_outputs(run_ctx *c)
{
    BN_TRY(run_path_join(c->snapdir, sizeof c->snapdir, c->outdir, c->prm->snap_dir));
    return bn_comm_agree(c->comm, c->root ? make_outputs(c) : BN_OK);
}

/* Every particle, on the writer: this process's, or every rank's gathered
 * on rank 0 in the initial order (*owned, to be freed; *p NULL on the
 * other ranks). */
static bn_status all_particles(run_ctx *c, const bn_particles **p, bn_particles **owned)
{
    *owned = NULL;
    bn_status s = bn_simulation_particles(c->sim, p);
    if (!several(c)) return s;
    BN_TRY(bn_comm_agree(c->comm, s));
    BN_TRY(run_ranks_gather(c->comm, &c->ranks, *p, owned));
    *p = *owned;
    return BN_OK;
}

static bn_status write_snapshot(run_ctx *c)
{
    char name[BN_PARAM_STRLEN + 32], path[RUN_PATH_MAX];
    snprintf(name, sizeof name, "%s_%04zu.hdf5", c->prm->snap_basename, c->sched.next);
    BN_TRY(run_path_join(path, sizeof path, c->snapdir, name));
    const bn_particles *p = NULL;
    bn_particles *owned = NULL;
    if (per_rank(c)) BN_TRY(bn_comm_agree(c->comm, bn_simulation_particles(c->sim, &p)));
    else BN_TRY(all_particles(c, &p, &owned));
    bn_snapshot_meta meta = bn_snapshot_meta_default();
    meta.time = bn_simulation_time(c->sim);
    meta.units = c->units;
    meta.units.G = c->prm->gravity.G;
    meta.gravity = *bn_simulation_gravity(c->sim); /* an error target's choice */
    meta.gravity.backend = bn_simulation_backend(c->sim);
    meta.accuracy = *bn_simulation_accuracy(c->sim);
    bn_status s;
    if (per_rank(c)) s = run_ranks_write_part(c->comm, path, p, &meta); /* agreed */
    else s = bn_comm_agree(c->comm, c->root ? bn_snapshot_write(path, p, &meta) : BN_OK);
    bn_particles_free(owned);
    BN_TRY(s);
    c->sched.next++;
    return BN_OK;
}

static bn_status log_energy(run_ctx *c)
{
    bn_energies e;
    BN_TRY(bn_simulation_energies(c->sim, &e));
    if (!isfinite(e.total))
        return bn_fail(BN_ERR_ARGUMENT, "at t = %.9g the energy is not finite (kinetic %g, potential %g): the forces "
                       "or velocities overflowed", bn_simulation_time(c->sim), e.kinetic, e.potential);
    c->energy_rows++;
    /* every rank keeps the time of the last row (outputs_due asks) */
    if (!c->root) c->log.last_time = bn_simulation_time(c->sim);
    return bn_comm_agree(c->comm, c->root ? run_energy_log_row(&c->log, bn_simulation_time(c->sim), &e,
                                                                bn_wall_seconds() - c->wall0,
                                                                bn_simulation_gravity(c->sim),
                                                                bn_simulation_accuracy(c->sim))
                                          : BN_OK);
}

/* Outputs due at the current time (steps land exactly on them). With
 * block time steps only at a cycle's end: inside a cycle velocities are
 * half-kicked at different times, and cycles end on output times. */
static bn_status outputs_due(run_ctx *c)
{
    if (bn_simulation_block_info(c->sim).tick != 0) return BN_OK;
    const double t = bn_simulation_time(c->sim), interval = c->prm->energy_interval;
    int log_now = !(interval > 0) || t >= c->next_energy || t >= c->prm->t_end;
    if (log_now && c->log.last_time != t) BN_TRY(log_energy(c));
    if (interval > 0)
        while (c->next_energy <= t) {
            /* t_start + k interval, not a running sum */
            long k = (long)floor((c->next_energy - c->t_start) / interval + 0.5) + 1;
            const double next = c->t_start + (double)k * interval;
            /* run_plan_check keeps the interval above the clock's
             * resolution; never loop on a time that does not advance */
            c->next_energy = next > c->next_energy ? next : nextafter(c->next_energy, INFINITY);
        }
    while (run_schedule_next(&c->sched) <= t) BN_TRY(write_snapshot(c));
    return BN_OK;
}

/* Most steps between two looks at the clock when no output is due: the
 * progress line's pace (a look costs one wait for the device). */
#define RUN_BATCH_STEPS 64

/* Several ranks, at a synchronised time: the domains cut again when due
 * (RUN_REBALANCE_*); the decision comes from counts that every rank
 * shares, so every rank takes it. */
static bn_status maybe_rebalance(run_ctx *c)
{
    if (!several(c) || bn_simulation_block_info(c->sim).tick != 0) return BN_OK;
    const long steps = bn_simulation_steps(c->sim), since = steps - c->balanced_at;
    if (since < RUN_REBALANCE_MIN_STEPS || bn_simulation_time(c->sim) >= c->prm->t_end) return BN_OK;
    BN_TRY(bn_simulation_imbalance(c->sim, &c->imbalance));
    const int converging = c->rebalances < RUN_REBALANCE_FIRST;
    if (!converging && c->imbalance < RUN_REBALANCE_IMBALANCE && since < RUN_REBALANCE_STEPS) return BN_OK;
    bn_domain_stats ds;
    BN_TRY(bn_simulation_rebalance(c->sim, &ds));
    c->balanced_at = steps;
    c->rebalances++;
    c->t_rebalance += ds.t_total;
    c->moved += (double)ds.sent;
    return BN_OK;
}

/* The CLI's state into the restart file (rank 0's log offset: every
 * rank saves the same). */
static bn_status write_restart(run_ctx *c)
{
    run_saved *v = &c->saved;
    v->prm = *c->prm;
    v->t_start = c->t_start;
    v->next_energy = c->next_energy;
    v->units = c->units;
    v->n = c->n;
    v->sched_next = c->sched.next;
    v->energy_rows = c->energy_rows;
    v->balanced_at = c->balanced_at;
    v->rebalances = c->rebalances;
    v->log = c->log;
    v->log.f = NULL;
    double offset = c->log.f ? (double)ftell(c->log.f) : 0;
    BN_TRY(bn_comm_allreduce(c->comm, &offset, 1, BN_REDUCE_MAX));
    v->log_offset = (long)offset;
    c->last_restart = bn_wall_seconds();
    if (c->restart_off[0]) return BN_OK;
    const bn_status s = run_restart_write(c->sim, c->restart_dir, v, c->prm->restart_keep, c->comm); /* agreed */
    if (s != BN_ERR_UNSUPPORTED) return s;
    /* what this backend cannot save yet: the run goes on without them */
    snprintf(c->restart_off, sizeof c->restart_off, "%s", bn_last_error());
    bn_clear_error();
    return BN_OK;
}

/* A restart file when the interval has passed, a signal came (every
 * rank's counts) or --stop-after-steps is reached; the last two stop.
 * Looked at only between batches (integrate), so --stop-after-steps N
 * stops at the end of the batch in which step N falls: N to N + 63
 * steps (RUN_BATCH_STEPS), exactly N when batches are of one step
 * (Statistics:interval 0). The batches are not cut at N, so the
 * continued run's batches begin where an unstopped run's do (what
 * happens at batch starts and ends -- block steps' error checks,
 * rebalancing -- stays the same, and the restart bit-identical). */
static bn_status restart_due(run_ctx *c)
{
    const double minutes = c->prm->restart_interval;
    double flags[2] = {run_restart_signalled() || (c->stop_after > 0 && bn_simulation_steps(c->sim) >= c->stop_after),
                       minutes > 0 && bn_wall_seconds() - c->last_restart >= 60 * minutes};
    BN_TRY(bn_comm_allreduce(c->comm, flags, 2, BN_REDUCE_MAX));
    if (!(flags[0] > 0) && !(flags[1] > 0)) return BN_OK;
    BN_TRY(write_restart(c));
    c->stopped = flags[0] > 0 && bn_simulation_time(c->sim) < c->prm->t_end;
    return BN_OK;
}

/* The steps between outputs run as batches (bn_simulation_advance): on
 * the GPU the host waits for the device only where an output, the
 * progress line or a batch's end needs the time. */
static bn_status integrate(run_ctx *c)
{
    if (!c->restart_from) c->next_energy = c->t_start;
    c->steps0 = bn_simulation_steps(c->sim);
    BN_TRY(outputs_due(c));
    run_progress_start(&c->progress, c->t_start, c->prm->t_end, c->quiet || !c->root);
    while (bn_simulation_time(c->sim) < c->prm->t_end) {
        double stop = fmin(c->prm->t_end, run_schedule_next(&c->sched));
        if (c->prm->energy_interval > 0) stop = fmin(stop, c->next_energy);
        const long batch = c->prm->energy_interval > 0 ? RUN_BATCH_STEPS : 1;
        const double t0 = bn_wall_seconds();
        const bn_status s = bn_simulation_advance(c->sim, stop, batch, NULL);
        c->t_steps += bn_wall_seconds() - t0;
        if (s != BN_OK)
            return bn_fail_context(s, "at t = %.9g (step %ld)", bn_simulation_time(c->sim),
                                   bn_simulation_steps(c->sim));
        BN_TRY(outputs_due(c));
        BN_TRY(maybe_rebalance(c));
        BN_TRY(restart_due(c));
        if (c->stopped) break;
        run_progress_update(&c->progress, bn_simulation_time(c->sim), bn_simulation_steps(c->sim),
                            c->log.last_rel);
    }
    run_progress_end(&c->progress);
    return BN_OK;
}

static bn_status render_final(run_ctx *c)
{
    if (!c->prm->render) return BN_OK;
    char path[RUN_PATH_MAX];
    BN_TRY(run_path_join(path, sizeof path, c->outdir, c->prm->render_file));
    const bn_particles *p = NULL;
    bn_particles *owned = NULL;
    BN_TRY(all_particles(c, &p, &owned));
    bn_render_params rp = bn_render_params_default();
    const bn_status s = c->root ? bn_render_png(path, p, &rp) : BN_OK;
    bn_particles_free(owned);
    return bn_comm_agree(c->comm, s);
}

static void print_summary(const run_ctx *c)
{
    if (c->quiet) return;
    double wall = bn_wall_seconds() - c->wall0;
    /* every step from t_start (a continued run's too), and this process's */
    const long all = bn_simulation_steps(c->sim), steps = all - c->steps0;
    char mine[64] = "";
    if (c->steps0 > 0) snprintf(mine, sizeof mine, ", %ld of them in this run,", steps);
    printf("banyan run: %zu particles, %s, backend %s: %ld steps from t = %g to %g%s in %.2f s (%.1f steps/s)\n",
           c->n, bn_method_name(c->prm->gravity.method), bn_backend_name(bn_simulation_backend(c->sim)), all,
           c->t_start, c->prm->t_end, mine, wall, wall > 0 ? (double)steps / wall : 0.0);
    /* the wall time above also holds reading, setting up and the outputs
     * (the restart file at the end: 1.6 GB at 2^24 particles) */
    if (steps > 0)
        printf("  the steps alone: %.4g s, %.4g ms a step (the rest: reading, setting up, outputs)\n", c->t_steps,
               1e3 * c->t_steps / (double)steps);
    printf("  energy error |E-E0|/|E0| at t_end: %.3e (%ld rows in %s)\n", c->log.last_rel, c->energy_rows,
           c->prm->energy_file);
    const bn_block_info bi = bn_simulation_block_info(c->sim);
    if (bi.n_bins >= 2)
        printf("  block steps (criterion %s, eta %g): %.0f particle forces, %.1f per particle; %ld tree builds\n",
               bn_step_criterion_name(c->prm->integ.criterion), c->prm->integ.eta, bi.forces,
               c->n ? bi.forces / (double)c->n : 0.0, bi.tree_builds);
    const bn_accuracy *a = bn_simulation_accuracy(c->sim);
    if (a->tunings > 0) {
        cli_print_accuracy(stdout, "  ", bn_simulation_gravity(c->sim), a);
        printf("  %ld checks of the error (%.3f s), %ld searches (%.3f s)\n", a->checks, a->t_checks, a->tunings,
               a->t_tuning - a->t_checks);
    }
    bn_domain_stats moved;
    if (several(c) && bn_simulation_crossers(c->sim, &moved) == BN_OK && moved.sent + moved.received > 0)
        printf("  %d ranks: particles that crossed the cut moved to their ranks before each step's forces: "
               "%zu sent, %zu received by rank 0 in %.3f s\n",
               bn_comm_size(c->comm), moved.sent, moved.received, moved.t_total);
    if (several(c) && c->imbalance > 0)
        printf("  %d ranks: domains cut %ld times after the first; last measured imbalance %.3f (largest rank's "
               "measured cost since the last cut over the mean); the cuts took %.3f s on rank 0, which sent %.0f "
               "particles\n", bn_comm_size(c->comm), c->rebalances, c->imbalance, c->t_rebalance, c->moved);
    else if (several(c)) /* no batch ended at a synchronised time with steps enough since the first cut */
        printf("  %d ranks: domains cut %ld times after the first; imbalance not measured\n", bn_comm_size(c->comm),
               c->rebalances);
    if (c->restart_off[0]) printf("  no restart files: %s\n", c->restart_off);
    const long idle = bn_simulation_idle_steps(c->sim);
    if (idle > 0) /* queued in a batch after it had reached its output time */
        printf("  %ld idle step(s): batches of steps that overran an output time (nothing moved)\n", idle);
    const int in_outdir = !strcmp(c->prm->snap_dir, ".");
    printf("  outputs in %s: used_parameters.yml, %zu snapshot(s) %s%s%s_NNNN%s%s%s\n", c->outdir, c->sched.n,
           in_outdir ? "" : c->prm->snap_dir, in_outdir ? "" : "/", c->prm->snap_basename,
           per_rank(c) ? ".R.hdf5 (a file per rank)" : ".hdf5", c->prm->render ? ", " : "",
           c->prm->render ? c->prm->render_file : "");
}

static bn_status run(run_ctx *c)
{
    c->wall0 = c->last_restart = bn_wall_seconds();
    run_restart_catch_signals();
    if (c->restart_from) {
        BN_TRY(setup_restart(c));
    } else {
        BN_TRY(setup_simulation(c));
        BN_TRY(prepare_outputs(c));
        BN_TRY(run_path_join(c->restart_dir, sizeof c->restart_dir, c->outdir, c->prm->restart_dir));
    }
    BN_TRY(integrate(c));
    if (c->stopped) return bn_comm_agree(c->comm, run_energy_log_close(&c->log));
    BN_TRY(write_restart(c));
    BN_TRY(render_final(c));
    return bn_comm_agree(c->comm, run_energy_log_close(&c->log));
}

int bn_cmd_run(int argc, char **argv)
{
    const char *cmd = "run", *file = NULL;
    static struct option opts[] = {{"param", required_argument, 0, 'P'},  {"output-dir", required_argument, 0, 'o'},
                                   {"quiet", no_argument, 0, 'q'},        {"print-defaults", no_argument, 0, 'D'},
                                   {"help", no_argument, 0, 'h'},         {"restart", required_argument, 0, 'R'},
                                   {"stop-after-steps", required_argument, 0, 'S'}, {0, 0, 0, 0}};
    char **overrides = calloc((size_t)argc + 1, sizeof *overrides);
    if (!overrides) return cli_fail(cmd, bn_fail(BN_ERR_NOMEM, "out of memory for the -P list"));
    int n_over = 0, print_defaults = 0, c, rc = 0;
    run_ctx ctx = {0};
    ctx.outdir = ".";
    ctx.units = bn_units_nbody(); /* generated initial conditions */
    ctx.log.last_time = NAN; /* no row yet, on every rank (rank 0's log says so again when opened) */
    ctx.comm = cli_comm();
    ctx.root = bn_comm_rank(ctx.comm) == 0;
    optind = 1;
    opterr = ctx.root; /* getopt's own messages: one, not one per rank */
    while ((c = getopt_long(argc, argv, "P:o:qh", opts, NULL)) != -1) {
        if (c == 'P') overrides[n_over++] = optarg;
        else if (c == 'o') ctx.outdir = optarg;
        else if (c == 'q') ctx.quiet = 1;
        else if (c == 'D') print_defaults = 1;
        else if (c == 'R') ctx.restart_from = optarg;
        else if (c == 'S') ctx.stop_after = atol(optarg);
        else if (c == 'h') {
            if (ctx.root) run_help();
            free(overrides);
            return 0;
        } else {
            free(overrides);
            return cli_usage_error(cmd, "unknown option");
        }
    }
    if (optind < argc) file = argv[optind++];
    ctx.param_file = file;
    ctx.overrides = overrides;
    ctx.n_overrides = n_over;
    if (file && ctx.restart_from) {
        free(overrides);
        return cli_usage_error(cmd, "--restart takes the parameters from the restart file, not from '%s'", file);
    }
    if (optind < argc) {
        free(overrides);
        return cli_usage_error(cmd, "expected at most one parameter file, got '%s' and '%s'", file, argv[optind]);
    }
    ctx.prm = bn_alloc(sizeof *ctx.prm, "parameters");
    /* every rank reads the parameters (one that cannot stops them all) */
    bn_status s = bn_comm_agree(ctx.comm, ctx.prm ? load_params(ctx.prm, file, overrides, ctx.restart_from ? 0 : n_over)
                                                  : BN_ERR_NOMEM);
    if (s == BN_OK && print_defaults) s = ctx.root ? bn_run_params_print(ctx.prm, stdout, BN_PARAMS_DOC) : BN_OK;
    else if (s == BN_OK) s = run(&ctx);
    if (s != BN_OK) {
        run_progress_end(&ctx.progress);
        rc = ctx.root ? cli_fail(cmd, s) : 1; /* every rank has the same failure: one message */
    } else if (!print_defaults && ctx.root && ctx.stopped && ctx.restart_off[0]) {
        if (!ctx.quiet) printf("banyan run: stopped at t = %.9g (step %ld) without a restart file: %s\n",
                               bn_simulation_time(ctx.sim), bn_simulation_steps(ctx.sim), ctx.restart_off);
    } else if (!print_defaults && ctx.root && ctx.stopped) {
        if (!ctx.quiet) printf("banyan run: stopped at t = %.9g (step %ld); restart file %d in %s: continue with "
                               "`banyan run --restart %s`\n", bn_simulation_time(ctx.sim), bn_simulation_steps(ctx.sim),
                               ctx.saved.index - 1, ctx.restart_dir, ctx.restart_dir);
    } else if (!print_defaults && ctx.root) {
        print_summary(&ctx);
    }
    run_energy_log_close(&ctx.log);
    run_schedule_free(&ctx.sched);
    run_ranks_free(&ctx.ranks);
    bn_simulation_free(ctx.sim);
    free(ctx.prm);
    free(overrides);
    return rc;
}
