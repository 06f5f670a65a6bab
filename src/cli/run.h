/* Internal helpers of `banyan run` (cmd_run.c): output schedule, energy
 * log, progress line, output paths. */
#ifndef BN_CLI_RUN_H
#define BN_CLI_RUN_H
#include <stdio.h>
#include "banyan.h"
#include "io/params.h"

/* ---- when to write snapshots (run_schedule.c) ---------------------------- */
typedef struct run_schedule {
    double *times; /* sorted, no repeats, all in [t_start, t_end] */
    size_t n, next;
} run_schedule;
/* Snapshots:times, every Snapshots:interval from t_start, and t_end when
 * Snapshots:final. Times outside [t_start, t_end] fail naming the entry. */
bn_status run_schedule_build(run_schedule *s, const bn_run_params *p, double t_start);
void run_schedule_free(run_schedule *s);
/* The next snapshot time, or +inf when none is left. */
double run_schedule_next(const run_schedule *s);

/* ---- is the planned run sane? (run_plan.c) --------------------------------- */
#define RUN_MAX_STEPS 1e10    /* steps of one run                          */
#define RUN_MAX_LOG_ROWS 1e7  /* rows of the energy log                    */
#define RUN_MIN_ULPS 64       /* shortest step or output interval, in units
                                 in the last place of the run's largest time */
/* TimeIntegration:dt_min, or its default (t_end - start) / RUN_MAX_STEPS
 * (with block steps at most the finest bin). */
double run_plan_dt_min(const bn_run_params *p, double t_start);
/* The first step (dt, or eta sqrt(eps / amax) when shorter; amax 0: not
 * known yet) against dt_min, and the planned steps and energy-log rows
 * against the limits above. */
bn_status run_plan_check(const bn_run_params *p, double t_start, double amax);

/* ---- energy log (run_energy_log.c) ----------------------------------------- */
typedef struct run_energy_log {
    FILE *f;
    double e0;          /* total energy at the start               */
    double last_rel;    /* |E-E0|/|E0| of the last row             */
    double last_time;   /* time of the last row (NAN before any)    */
    int target;         /* an error target: its columns too        */
    unsigned parts;     /* bit t: part type t has columns (none
                           unless the particles have two types or more) */
} run_energy_log;
/* Create the log with its header (build, run settings, columns); g: the
 * gravity settings in use (an error target's choice), acc its record,
 * first: energies of the particles (the part types present). */
bn_status run_energy_log_open(run_energy_log *log, const char *path, const bn_run_params *p, size_t n,
                              bn_backend backend, const bn_gravity_params *g, const bn_accuracy *acc,
                              const bn_energies *first);
/* One row: time, kinetic, potential, total, |E-E0|/|E0|, |P|, |L|, wall;
 * with an error target also the settings in use and the last check's
 * p99; then, with several part types, K, W, Lx, Ly, Lz of each. The
 * first row sets E0. */
bn_status run_energy_log_row(run_energy_log *log, double time, const bn_energies *e, double wall,
                             const bn_gravity_params *g, const bn_accuracy *acc);
bn_status run_energy_log_close(run_energy_log *log);
/* A restarted run: the log cut to the first offset bytes (where it stood
 * at the restart file) and continued; the other fields come from the
 * restart file. */
bn_status run_energy_log_reopen(run_energy_log *log, const char *path, long offset);
/* Relative energy error with E0 = 0 handled (then absolute). */
double run_relative_error(double e, double e0);

/* ---- progress line (run_progress.c) ---------------------------------------- */
typedef struct run_progress {
    int tty, quiet;
    double t_start, t_end;
    double wall_start, last_print;
    int printed_tty; /* a \r line is on screen: end it with \n */
} run_progress;
void run_progress_start(run_progress *pr, double t_start, double t_end, int quiet);
/* On a terminal: a \r-updated line a few times per second; elsewhere a
 * plain line every 30 s of wall time (none for short runs). */
void run_progress_update(run_progress *pr, double t, long steps, double rel_error);
void run_progress_end(run_progress *pr);

/* ---- paths (run_paths.c) ---------------------------------------------------- */
#define RUN_PATH_MAX 4096
/* A file of the run and what it is ("Statistics:energy_file"). */
typedef struct run_named_path {
    const char *what;
    int output; /* written by the run (else an input)          */
    char path[RUN_PATH_MAX];
} run_named_path;
/* The path fits (PATH_MAX) and each of its names fits (NAME_MAX). */
bn_status run_check_name(const char *what, const char *path);
/* No output of files[] (empty paths skipped: inputs not given) nor any
 * snapshot snapdir/basename_NNNN.hdf5 (with parts > 0 each of its files
 * basename_NNNN.R.hdf5, R < parts), NNNN < n_snapshots, is the same
 * file as another file of the list, or lies below one (it would need a
 * directory of that name), or is anything but a new name or a regular
 * file (a directory, a FIFO, a dangling link); the message names both. */
bn_status run_check_distinct(const run_named_path *files, int n, const char *snapdir, const char *basename,
                             size_t n_snapshots, int parts);
/* dir/name, or name itself when it is absolute. */
bn_status run_path_join(char *out, size_t size, const char *dir, const char *name);
/* mkdir -p; the message names the directory. */
bn_status run_make_dirs(const char *path);
/* mkdir -p of the directory part of a file path (nothing for a bare name). */
bn_status run_make_parent_dirs(const char *path);

/* ---- several ranks (run_ranks.c) ---------------------------------------------- */
typedef struct run_id_place {
    uint64_t id;
    size_t index; /* in the initial set */
} run_id_place;
typedef struct run_ranks {
    run_id_place *place; /* rank 0: every particle's id and place, by id
                            (NULL: snapshots per rank, no such map)     */
    size_t n;
} run_ranks;
/* Collective: *p, the whole initial set on every rank, becomes this
 * rank's slice of it; with `places` rank 0 keeps where each id was (ids
 * must be unique: the message names the two particles). */
bn_status run_ranks_split(const bn_comm *c, run_ranks *rr, bn_particles **p, int places);
/* Collective: every rank's particles (with forces when they have them) on
 * rank 0, in the initial set's order (without the places: by id): *all
 * (NULL on the other ranks). */
bn_status run_ranks_gather(const bn_comm *c, const run_ranks *rr, const bn_particles *mine, bn_particles **all);
/* Collective: this rank's particles as its file of the snapshot `path`
 * (file r of P, "<stem>.<r>.hdf5"), written under a temporary name and
 * renamed once every rank has written its own: a failure leaves no
 * partial set and no mix with an older set of the same name. */
bn_status run_ranks_write_part(const bn_comm *c, const char *path, const bn_particles *mine,
                               const bn_snapshot_meta *meta);
void run_ranks_free(run_ranks *rr);

/* ---- restart files (run_restart.c) ------------------------------------------ */
/* What `banyan run` keeps besides the simulation (bn_simulation_save_state's
 * user bytes). */
typedef struct run_saved {
    bn_run_params prm;
    double t_start, next_energy;
    bn_units units;
    size_t n, sched_next;
    long energy_rows, balanced_at, rebalances, log_offset;
    int index;          /* this restart file's number                  */
    run_energy_log log; /* its f is not used                           */
} run_saved;
/* SIGTERM and SIGUSR1 set a flag (run_restart_signalled) and nothing else. */
void run_restart_catch_signals(void);
int run_restart_signalled(void);
/* dir/restart_NNNN.hdf5, or .R.hdf5 with several ranks. */
void run_restart_path(char *out, size_t size, const char *dir, int index, const bn_comm *c);
/* Write restart file `index` (every rank its own; rank 0 first removes
 * any other file of that number, of another rank count) and remove the
 * ones `keep` and more before it, of any rank count. Collective and
 * agreed. */
bn_status run_restart_write(bn_simulation *sim, const char *dir, run_saved *saved, int keep, const bn_comm *c);
/* What run_restart_load found. */
typedef struct run_restart_found {
    int ranks;          /* that wrote it                                 */
    bn_state_info info;
} run_restart_found;
/* The newest restart file of dir that loads into sim, as the rank count
 * recorded in its file 0 says: a damaged one (a file's format, checksum
 * or size, a missing rank's file, a file of another set) is refused,
 * named on stderr by rank 0, and the one before it is tried; any other
 * failure (no such device for the backend) stops here. Written by this
 * run's rank count: bit for bit. By another: every rank's file read and
 * shared out (inside a block-step cycle too), the domains not cut. */
bn_status run_restart_load(bn_simulation *sim, const char *dir, run_saved *saved, run_restart_found *found,
                           const bn_comm *c);
#endif
