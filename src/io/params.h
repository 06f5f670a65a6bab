/*
 * Internal: the parameter file of `banyan run` (YAML, SWIFT style).
 *
 * Every parameter is described ONCE, in the table of params_table.c
 * (section, key, type, default, range, documentation, when it applies).
 * Parsing, validation, used_parameters.yml / unused_parameters.yml and the
 * documented examples/default.yml are all driven by that table, so they
 * cannot drift apart.
 *
 * Typical use (cmd_run.c):
 *   bn_run_params p;
 *   bn_run_params_init(&p);                      defaults from the table
 *   bn_run_params_read_file(&p, "params.yml");   unknown key -> error
 *   bn_run_params_override(&p, "Gravity:theta:0.7");   -P, same checks
 *   bn_run_params_validate(&p);                  checks across keys
 *   bn_run_params_write(&p, "out/used_parameters.yml", BN_PARAMS_USED);
 */
#ifndef BN_IO_PARAMS_H
#define BN_IO_PARAMS_H
#include <stdio.h>
#include "banyan.h"

#define BN_PARAM_STRLEN 1024 /* longest string value, NUL included      */
#define BN_PARAM_LIST_MAX 1024 /* most entries of a list (Snapshots:times) */
#define BN_PARAM_MAX 64      /* room for this many parameters           */
/* Longest value as text: a full list, 1024 numbers of up to 24
 * characters and their separators. */
#define BN_PARAM_TEXT_MAX (BN_PARAM_LIST_MAX * 28 + 64)
#define BN_PARAM_FILE_MAX (1 << 20)  /* largest parameter file, bytes (the
                                        default file with 1024 snapshot
                                        times is 40 KB)                   */
#define BN_PARAM_YAML_DEPTH 8         /* deepest nesting of YAML collections */

typedef struct bn_param_list {
    int n;
    double v[BN_PARAM_LIST_MAX];
} bn_param_list;

/* Where a value came from. */
typedef enum bn_param_origin {
    BN_ORIGIN_DEFAULT = 0,
    BN_ORIGIN_FILE = 1,
    BN_ORIGIN_COMMAND_LINE = 2,
    BN_ORIGIN_INITIAL_CONDITIONS = 3 /* Gravity:G from the initial conditions' file */
} bn_param_origin;

typedef struct bn_run_params {
    /* InitialConditions (ic.G is taken from Gravity:G) */
    bn_ic_params ic;
    char ic_file[BN_PARAM_STRLEN];      /* "" = generate ic.model         */
    /* Gravity */
    bn_gravity_params gravity;
    /* TimeIntegration */
    bn_integrator_params integ;
    double t_end;
    /* Snapshots */
    char snap_dir[BN_PARAM_STRLEN];
    char snap_basename[BN_PARAM_STRLEN];
    bn_param_list snap_times;
    double snap_interval;               /* 0 = none                       */
    int snap_final;                     /* snapshot at t_end              */
    int snap_per_rank;                  /* mpirun: one file per rank      */
    int render;                         /* picture of the last state      */
    char render_file[BN_PARAM_STRLEN];
    /* Statistics */
    char energy_file[BN_PARAM_STRLEN];
    double energy_interval;             /* 0 = every step                 */
    /* Restart */
    double restart_interval;            /* minutes of wall time; 0 = only at the end */
    int restart_keep;                   /* restart files kept             */
    char restart_dir[BN_PARAM_STRLEN];
    /* where each value came from, indexed like the table */
    unsigned char origin[BN_PARAM_MAX];
} bn_run_params;

typedef enum bn_param_type {
    BN_PT_DOUBLE,
    BN_PT_INT,
    BN_PT_SIZE,   /* size_t, accepts 2^k                                 */
    BN_PT_U64,    /* uint64_t                                            */
    BN_PT_BOOL,   /* yes/no, true/false, on/off, 1/0                     */
    BN_PT_STRING,
    BN_PT_CHOICE, /* one name of an enumeration, stored as its int value */
    BN_PT_LIST    /* list of numbers: [a, b, c] or "a,b,c"               */
} bn_param_type;

/* Range flags: the bounds lo/hi are excluded (open) when set. */
#define BN_PF_LO_OPEN 1u
#define BN_PF_HI_OPEN 2u
#define BN_PF_NONEMPTY 4u /* string must not be empty                   */

typedef struct bn_param_choices {
    int count;                      /* valid values are 0 .. count-1    */
    const char *(*name)(int value); /* its name                         */
    bn_status (*parse)(const char *s, int *value);
} bn_param_choices;

typedef struct bn_param_desc {
    const char *section, *key;
    bn_param_type type;
    size_t offset;     /* of the value in bn_run_params                 */
    const char *def;   /* default, as text (parsed like any value)      */
    double lo, hi;     /* range of numbers and list entries             */
    unsigned flags;
    const bn_param_choices *choices; /* BN_PT_CHOICE only               */
    /* NULL when the parameter has an effect in this run, else why not
     * (unused_parameters.yml). NULL function: always used. */
    const char *(*unused_because)(const bn_run_params *p);
    const char *doc;
} bn_param_desc;

typedef struct bn_param_section {
    const char *name, *doc;
} bn_param_section;

/* The table (params_table.c). */
extern const bn_param_desc bn_param_table[];
extern const int bn_param_count;
extern const bn_param_section bn_param_sections[];
extern const int bn_param_section_count;

/* Lookup; NULL / -1 when unknown. */
const bn_param_desc *bn_param_find(const char *section, const char *key);
int bn_param_section_index(const char *section);
/* "G, softening, method, ..." (the keys of a section) into buf. */
void bn_param_section_keys(const char *section, char *buf, size_t size);

/* The BN_TUNE_* bit of a setting an error target chooses (0 for the
 * others): set in a file or by -P, it keeps its value (explicit wins:
 * bn_param_set records it in gravity.error_fixed). */
unsigned bn_param_tuned_bit(const bn_param_desc *d);

/* Fail for an unknown section (listing the valid sections) or an unknown
 * key (listing the valid keys of its section). */
bn_status bn_param_unknown(const char *where, const char *section, const char *key);

/* Defaults from the table (cannot fail: the table is checked by a test). */
void bn_run_params_init(bn_run_params *p);
/* Set one value from text, with type and range checks. `where` prefixes
 * the error message ("params.yml:12" or "-P Gravity:theta:x"). */
bn_status bn_param_set(bn_run_params *p, const bn_param_desc *d, const char *text, const char *where,
                       bn_param_origin origin);
/* The range of numbers as text: ">= 0", "> 0", "in [0, 2]", or "". */
void bn_param_range_text(const bn_param_desc *d, char *buf, size_t size);
/* The value as YAML text (round-trips through bn_param_set). */
void bn_param_format(const bn_run_params *p, const bn_param_desc *d, char *buf, size_t size);

/* Read a YAML parameter file over p. Unknown sections and keys, repeated
 * keys and bad values fail naming the file, line and key. */
bn_status bn_run_params_read_file(bn_run_params *p, const char *path);
/* -P Section:key:value (the value may itself contain ':'). */
bn_status bn_run_params_override(bn_run_params *p, const char *spec);
/* Checks that involve several parameters. */
bn_status bn_run_params_validate(const bn_run_params *p);

typedef enum bn_params_mode {
    BN_PARAMS_USED,    /* every parameter with its value               */
    BN_PARAMS_UNUSED,  /* parameters set but without effect in this run */
    BN_PARAMS_DOC      /* every parameter, documented (default.yml)    */
} bn_params_mode;
/* Write to a stream, or to a file through a temporary name + rename. */
bn_status bn_run_params_print(const bn_run_params *p, FILE *f, bn_params_mode mode);
bn_status bn_run_params_write(const bn_run_params *p, const char *path, bn_params_mode mode);
#endif
