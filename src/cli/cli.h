/* The banyan command-line program: one file per command. */
#ifndef BN_CLI_H
#define BN_CLI_H
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include "banyan.h"

int bn_cmd_ic(int argc, char **argv);
/* banyan ic galaxy (cmd_ic_galaxy.c); argv[0] is "galaxy". */
int cli_ic_galaxy(int argc, char **argv);
/* The galaxy model of --model NAME or --model-file FILE (one of them):
 * 0, or the exit code of a usage error naming the option or the file's
 * field. */
int cli_galaxy_model(const char *cmd, const char *model, const char *file, bn_galaxy_model *m);
int bn_cmd_galaxy_shape(int argc, char **argv);
int bn_cmd_forces(int argc, char **argv);
int bn_cmd_compare(int argc, char **argv);
int bn_cmd_run(int argc, char **argv);
int bn_cmd_render(int argc, char **argv);
int bn_cmd_info(int argc, char **argv);
int bn_cmd_convert(int argc, char **argv);
int bn_cmd_plot(int argc, char **argv);
int bn_cmd_bench(int argc, char **argv);
int bn_cmd_potential(int argc, char **argv);
int bn_cmd_mesh_ic(int argc, char **argv);
/* compare for two mesh files (cmd_compare_mesh.c); the exit code. */
int cli_compare_meshes(const char *pa, const char *pb, int json);
/* bench --mesh (cmd_bench_mesh.c); the exit code. */
int cli_bench_mesh(int argc, char **argv);
/* The options the mesh commands share (potential, mesh-ic, bench --mesh;
 * cli_mesh_options.c): their getopt codes, and a parser for each group
 * that returns 0 when it took option c, 2 after a usage message, -1 when
 * c is not one of its options. */
enum {
    CLI_OPT_SOURCE = 2000, CLI_OPT_METHOD, CLI_OPT_VEL, CLI_OPT_NOVEL, CLI_OPT_SMOOTH, CLI_OPT_THETA, CLI_OPT_TARGET,
    CLI_OPT_NEAR, CLI_OPT_LEAF, CLI_OPT_G, CLI_OPT_BACKEND, CLI_OPT_DEVICE, /* the field solver's */
    CLI_OPT_LEVELS, CLI_OPT_MIN_LEVEL, CLI_OPT_BLOCK, CLI_OPT_RADIUS, CLI_OPT_ECC, CLI_OPT_DENSITY,
    CLI_OPT_SAMPLES /* the test problem's */
};
int cli_field_option(const char *cmd, int c, const char *arg, bn_field_params *p);
int cli_mesh_ic_option(const char *cmd, int c, const char *arg, bn_mesh_ic_params *p);
/* A JSON string literal of s to stdout (quotes and controls escaped). */
void cli_json_string(const char *s);

/* Print "banyan CMD: error: <library message>" to stderr; return 1. */
int cli_fail(const char *cmd, bn_status s);
/* The run's ranks (bn_comm_world, made by main). */
const bn_comm *cli_comm(void);
/* banyan forces over several ranks (cmd_forces_ranks.c): all read on
 * every rank; its forces filled on rank 0; *grav created. */
/* Particles [n r / P, n (r + 1) / P) of all, this rank r's of P: a copy
 * (positions, velocities, masses, ids; with ids_as_index each id
 * replaced by the particle's index in all, to put results back in place). */
bn_status cli_take_slice(const bn_comm *c, const bn_particles *all, int ids_as_index, bn_particles **out);
bn_status cli_forces_ranks(const bn_comm *c, const bn_gravity_params *g, bn_particles *all, bn_gravity **grav,
                           double *t_call, bn_domain_stats *dst);
/* Print "banyan CMD: error: <formatted>" and a hint to use --help; return 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse a whole string as a number; on failure print which option was bad. */
int cli_parse_double(const char *cmd, const char *opt, const char *s, double *out);
/* The valid range of a double option: lo..hi, each end open or closed;
 * hi = INFINITY for none. The message names the option, value and range. */
typedef struct cli_range {
    double lo, hi;
    int lo_open, hi_open;
} cli_range;
#define CLI_POSITIVE ((cli_range){0, INFINITY, 1, 0})
#define CLI_NONNEGATIVE ((cli_range){0, INFINITY, 0, 0})
int cli_parse_double_in(const char *cmd, const char *opt, const char *s, cli_range r, double *out);
int cli_parse_size(const char *cmd, const char *opt, const char *s, size_t *out); /* accepts 2^20 too */
/* An integer in [lo, hi], checked in long before it is narrowed; the
 * message gives the range. */
int cli_parse_long_in(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int cli_parse_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out);
/* --device: an ordinal in [0, BN_DEVICE_MAX] or "auto" (BN_DEVICE_AUTO). */
int cli_parse_device(const char *cmd, const char *s, int *out);
/* A seed: any 64-bit unsigned integer, no sign. */
int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out);
/* Is stdout or stderr a terminal (for progress lines)? */
int cli_is_tty(int fd);
/* Output paths: the same file as another (resolved paths; device and
 * inode for files that exist)? cli_check_distinct fails naming both. */
int cli_path_resolve(const char *path, char *out, size_t size);
int cli_same_file(const char *a, const char *b);
/* A file's identity: its resolved path, and its device and inode when it
 * exists (hard links). */
typedef struct cli_file_id {
    char real[4096];
    int exists;
    struct stat st;
} cli_file_id;
void cli_file_identify(const char *path, cli_file_id *id);
int cli_file_same(const cli_file_id *a, const cli_file_id *b);
/* a lies above b: writing b would need a directory of a's name. */
int cli_file_holds(const cli_file_id *a, const cli_file_id *b);
bn_status cli_check_distinct(const char *what, const char *path, const char *other_what, const char *other);
/* An output name must be new or a regular file (a symbolic link to one
 * included): never a directory, a FIFO, a device or a dangling link;
 * cli_check_output also wants its directory to exist and take files
 * (cli_check_output_dir). */
bn_status cli_check_output(const char *what, const char *path);
bn_status cli_check_output_kind(const char *what, const char *path);
/* A directory that outputs go into: every existing component of the
 * path a directory, and a file can be created in the deepest one that
 * exists (may_create: the rest will be made; else dir must exist). Checked
 * before anything is computed or written: /proc, a read-only place or a
 * file where a directory must be fail naming `what`. */
bn_status cli_check_dir_writable(const char *what, const char *dir, int may_create);
/* The same for the directory of output file `path`. */
bn_status cli_check_output_dir(const char *what, const char *path, int may_create);
/* An error target's outcome in one line: the settings chosen and the
 * error measured on the sample. */
void cli_print_accuracy(FILE *f, const char *indent, const bn_gravity_params *g, const bn_accuracy *a);
#endif
