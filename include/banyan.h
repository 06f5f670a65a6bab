/*
 * banyan: a gravitational N-body tree code for GPUs.
 *
 * The one public header. Every exported symbol starts with bn_ (the test
 * suite checks the shared library for it). Names read object, then verb:
 * bn_simulation_create, bn_particles_resize, bn_snapshot_read.
 *
 * Errors: every fallible call returns a bn_status. On failure the library
 * keeps a message (per thread) that names the file, dataset, parameter or
 * value at fault: bn_last_error(). The library never prints to stdout and
 * never exits the process.
 *
 * Units: the gravitational constant G is a parameter (default 1, N-body
 * units). Snapshots record G and the unit system (bn_units).
 */
#ifndef BANYAN_H
#define BANYAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BN_API __attribute__((visibility("default")))
#else
#define BN_API
#endif

#define BN_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ */
/* Status codes                                                         */
/* ------------------------------------------------------------------ */
typedef enum bn_status {
    BN_OK = 0,
    BN_ERR_ARGUMENT,      /* a parameter or value is out of range          */
    BN_ERR_NOMEM,         /* host allocation failed                        */
    BN_ERR_IO,            /* file missing, unreadable or unwritable        */
    BN_ERR_FORMAT,        /* file readable but content wrong               */
    BN_ERR_PARAMETER,     /* parameter file: unknown key, bad value        */
    BN_ERR_UNSUPPORTED,   /* feature not built in or not available         */
    BN_ERR_DEVICE,        /* CUDA runtime error, no device                 */
    BN_ERR_DEVICE_NOMEM,  /* device memory exhausted (message says how
                             many particles would fit)                     */
    BN_ERR_INTERNAL       /* an invariant broke: a bug, please report      */
} bn_status;

/* Short name of a status ("argument", "io", ...). */
BN_API const char *bn_status_name(bn_status s);
/* Message of the last failure in this thread ("" if none). */
BN_API const char *bn_last_error(void);
/* Clear the message of this thread. */
BN_API void bn_clear_error(void);

/* ------------------------------------------------------------------ */
/* Particle sets                                                        */
/* ------------------------------------------------------------------ */
/*
 * A set of particles, structure-of-arrays, double precision on the host.
 * The struct is public so that readers, generators and bindings fill it
 * directly; allocate and resize it only through the functions below.
 * acc/pot are NULL until forces were computed (bn_particles_ensure_forces).
 */
typedef struct bn_particles {
    size_t n;          /* number of particles                           */
    size_t capacity;   /* allocated length of each array                */
    double *pos[3];    /* positions x, y, z                             */
    double *vel[3];    /* velocities                                    */
    double *mass;      /* masses (> 0)                                  */
    uint64_t *id;      /* particle ids (unique within a run)            */
    double *acc[3];    /* accelerations, or NULL                        */
    double *pot;       /* potential per unit mass, or NULL              */
    uint8_t *type;     /* component per particle: its GADGET part type
                          0..BN_PART_TYPES-1 (snapshots' /PartTypeN;
                          galaxies: 1 halo, 2 disk, 3 bulge), or NULL:
                          every particle PartType1. Travels with the
                          particle through copies, files and ranks.    */
} bn_particles;
#define BN_PART_TYPES 6 /* GADGET's PartType0..5 */

/* Create an empty set (n = 0). Free with bn_particles_free. */
BN_API bn_status bn_particles_create(bn_particles **out, size_t n);
BN_API void bn_particles_free(bn_particles *p);
/* Change n, keeping the first min(old, new) particles. */
BN_API bn_status bn_particles_resize(bn_particles *p, size_t n);
/* Allocate acc and pot (zeroed) if missing. */
BN_API bn_status bn_particles_ensure_forces(bn_particles *p);
/* Deep copy. */
BN_API bn_status bn_particles_copy(bn_particles **out, const bn_particles *src);
/* Allocate type (every particle PartType1) if missing. Particles added by
 * bn_particles_resize to a set with types are PartType1. */
BN_API bn_status bn_particles_ensure_types(bn_particles *p);
/* The part type of particle i (1 when p->type is NULL). */
BN_API int bn_particles_part_type(const bn_particles *p, size_t i);
/* A part type's component name, as logs and options spell it: halo (1),
 * disk (2), bulge (3), typeN for the others (N in 0..BN_PART_TYPES-1);
 * NULL out of range. */
BN_API const char *bn_part_type_name(int type);
/* The part type of such a name, or -1. */
BN_API int bn_part_type_from_name(const char *name);
/* Check positions, velocities and masses: finite, masses >= 0, total mass
 * > 0. The message names the first offending particle and field. (Force
 * computations also refuse coordinates that span BN_MAX_SPAN or more:
 * beyond it squared distances overflow.) */
#define BN_MAX_SPAN 1e150
BN_API bn_status bn_particles_validate(const bn_particles *p, const char *what);
/* Fail naming the id (and two particles holding it) when an id repeats. */
BN_API bn_status bn_particles_check_ids(const bn_particles *p, const char *what);
/* Accelerations and potentials (when present) finite: fails naming the
 * first particle whose force is not (outputs are as valid as inputs). */
BN_API bn_status bn_particles_check_forces(const bn_particles *p, const char *what);
BN_API double bn_particles_total_mass(const bn_particles *p);
/* Mass-weighted mean position (zeros when the total mass is not > 0);
 * finite for any valid set (no sum of m x that could overflow). */
BN_API void bn_particles_centre_of_mass(const bn_particles *p, double com[3]);

/* ------------------------------------------------------------------ */
/* Units                                                                */
/* ------------------------------------------------------------------ */
/* The unit system a run uses, written into every snapshot (GADGET-4 names
 * UnitLength_in_cm, UnitMass_in_g, UnitVelocity_in_cm_per_s). N-body
 * units by default: all three 1 and G = 1. */
typedef struct bn_units {
    double length_in_cm;
    double mass_in_g;
    double velocity_in_cm_per_s;
    double G;                  /* gravitational constant in these units */
} bn_units;
BN_API bn_units bn_units_nbody(void);

/* ------------------------------------------------------------------ */
/* Gravity                                                              */
/* ------------------------------------------------------------------ */
typedef enum bn_method { BN_METHOD_TREE = 0, BN_METHOD_DIRECT = 1 } bn_method;

/* Multipole acceptance criteria. */
typedef enum bn_mac {
    BN_MAC_BONSAI = 0, /* accept when d > l/theta + delta (Bonsai eq. 4.1) */
    BN_MAC_BH = 1,     /* classic l/d < theta                              */
    BN_MAC_ACCEL = 2,  /* G M l^2 / d^4 <= alpha |a_old| (GADGET, GOTHIC)  */
    BN_MAC_BONSAI_BOX = 3 /* bonsai with l the largest side of the bounding
                             box of the cell's bodies and delta the distance
                             from that box's centre to the centre of mass:
                             the cell's real extent, not its octant (fewer
                             cells opened where bodies are sparse, at the
                             same accuracy)                                */
} bn_mac;

typedef enum bn_backend {
    BN_BACKEND_AUTO = 0, /* the GPU if one is present, else the CPU */
    BN_BACKEND_CPU = 1,
    BN_BACKEND_GPU = 2
} bn_backend;

typedef enum bn_curve { BN_CURVE_HILBERT = 0, BN_CURVE_MORTON = 1 } bn_curve;

/* What an error target measures its candidates by (bn_gravity_params
 * error_cost), and what the self-tuned tree rebuild of block steps weighs
 * (bn_integrator_params rebuild_cost). */
typedef enum bn_tune_cost {
    BN_TUNE_TIME = 0, /* the measured time of each force evaluation (the
                         default): the fastest settings on this machine,
                         which may differ from run to run where two are
                         close in time                                   */
    BN_TUNE_WORK = 1  /* the interactions counted (walk flops, plus a
                         rebuild's worth per particle): the same choice at
                         every run, for bit-reproducible runs            */
} bn_tune_cost;

/* The settings an error target may choose (bn_gravity_params.error_fixed:
 * those given explicitly, which it must keep). */
enum {
    BN_TUNE_THETA = 1u,
    BN_TUNE_MAC = 2u,
    BN_TUNE_LEAF = 4u,
    BN_TUNE_GROUP = 8u,
    BN_TUNE_EXPANSION = 16u
};

/* Valid ranges of the integer settings (bn_gravity_params_validate, the
 * parameter file and the command line check the same bounds). */
#define BN_LEAF_SIZE_MAX 1024
#define BN_GROUP_SIZE_MAX 4096
#define BN_DEVICE_MAX 1023
/* device = BN_DEVICE_AUTO: the process's index among its node's ranks (as
 * the MPI launcher or Slurm names it) modulo the GPUs it sees, so that
 * `mpirun -np 4` on a node of 4 GPUs puts one rank on each; 0 outside a
 * launcher. */
#define BN_DEVICE_AUTO (-1)
#define BN_ERROR_SAMPLE_MIN 16
#define BN_ERROR_SAMPLE_MAX 1000000

typedef struct bn_gravity_params {
    double G;           /* gravitational constant. Default 1.            */
    double softening;   /* Plummer softening length eps. Default 1e-3.   */
    bn_method method;   /* Default BN_METHOD_TREE.                       */
    bn_mac mac;         /* Default BN_MAC_BONSAI.                        */
    double theta;       /* opening angle. Default 0.5.                   */
    double accel_alpha; /* tolerance of BN_MAC_ACCEL. Default 1e-3.      */
    int quadrupole;     /* 1: monopole + quadrupole, 0: monopole only.
                           Default 1.                                    */
    double group_expansion; /* kappa: an accepted cell whose centre of mass
                           lies farther than r_g / (kappa theta) from the
                           centre of a group (r_g: half the diagonal of the
                           group's box) acts on the whole group through one
                           second-order Taylor expansion about that centre
                           instead of on each body (the far field costs per
                           group, not per body). 0: off. Default 0.2.    */
    int leaf_size;      /* most particles in a leaf. Default 16.         */
    int group_size;     /* most particles in a walk group. Default 64.   */
    bn_curve curve;     /* space-filling curve. Default BN_CURVE_HILBERT. */
    bn_backend backend; /* Default BN_BACKEND_AUTO.                      */
    int device;         /* CUDA device ordinal, or BN_DEVICE_AUTO (one
                           rank per GPU of its node). Default AUTO.      */
    /* Accuracy asked for instead of the tree's settings (issue 14): */
    double error_target;  /* E > 0: banyan chooses theta, mac (bonsai or
                           bonsai-box), leaf_size, group_size and
                           group_expansion, the fastest it measures whose
                           99th percentile of |a - a_ref| / |a_ref| on a
                           sample of targets (double direct summation,
                           on the backend) is at most E, and checks it
                           again as a simulation runs. The settings named
                           in error_fixed keep their values (explicit
                           values win over the target). 0: off (the
                           default): the settings above are used.        */
    unsigned error_fixed; /* BN_TUNE_* bits. Default 0.                  */
    int error_check_interval; /* steps between checks of a simulation's
                           error against the sample; a check outside
                           [E/4, E] re-tunes. 0: only at the start.
                           Default 64.                                   */
    int error_sample;   /* targets of a check. Default 512.              */
    bn_tune_cost error_cost; /* Default BN_TUNE_TIME.                    */
    bn_tune_cost balance_cost; /* several ranks: what the domains' cut
                           weighs. BN_TUNE_WORK (the default): each
                           particle's counted walk flops, the same cut
                           and bits every run. BN_TUNE_TIME: those flops
                           scaled per rank by the square root of its
                           measured walk time per flop (Bonsai's rule,
                           damped: the cut follows the time, which the
                           count misses on the received trees' walk);
                           cuts differ from run to run.                  */
} bn_gravity_params;

BN_API bn_gravity_params bn_gravity_params_default(void);
/* Check ranges; the message names the parameter and value at fault. */
BN_API bn_status bn_gravity_params_validate(const bn_gravity_params *g);
BN_API const char *bn_method_name(bn_method m);
BN_API const char *bn_mac_name(bn_mac m);
BN_API const char *bn_backend_name(bn_backend b);
BN_API const char *bn_curve_name(bn_curve c);
BN_API const char *bn_tune_cost_name(bn_tune_cost c);
/* Parse names ("tree", "bonsai", "gpu", "hilbert", ...). */
BN_API bn_status bn_method_parse(const char *s, bn_method *out);
BN_API bn_status bn_mac_parse(const char *s, bn_mac *out);
BN_API bn_status bn_backend_parse(const char *s, bn_backend *out);
BN_API bn_status bn_curve_parse(const char *s, bn_curve *out);
BN_API bn_status bn_tune_cost_parse(const char *s, bn_tune_cost *out); /* "time", "work" */

/* Is a CUDA device usable? (0 in a CPU-only build or without a GPU.) */
BN_API int bn_gpu_available(void);
/* The ordinal that `requested` (an ordinal or BN_DEVICE_AUTO) means for
 * this process: requested itself, or for AUTO the node-local rank modulo
 * the devices visible (0 without a launcher or a GPU). */
BN_API int bn_gpu_device_pick(int requested);
/* The node-local rank the launcher gave this process (Open MPI, MPICH,
 * MVAPICH, Slurm, PMI), or -1 when none names it. */
BN_API int bn_local_rank_hint(void);
/* Name of device `ordinal`, or "" when none. */
BN_API const char *bn_gpu_name(int ordinal);

/* Per-stage times (seconds) and work counts of the last force evaluation. */
typedef struct bn_force_stats {
    double t_bbox, t_keys, t_sort, t_build, t_moments, t_groups, t_walk;
    double t_total;           /* keys to walk, including reordering      */
    double n_pp;              /* particle-particle interactions          */
    double n_pc;              /* particle-cell interactions              */
    double n_far;             /* cell-group interactions (far cells
                                 through the group expansion), once per
                                 group on both backends                  */
    double n_visit;           /* cells the walk's traversal took (each
                                 backend counts its own way: the GPU per
                                 warp pass, the CPU per group and cell);
                                 the self-tuned rebuild weighs them      */
    int refresh_refused;      /* block steps: the tree was to be
                                 refreshed, but its groups had grown too
                                 much since the build (refresh_guard.h):
                                 it was rebuilt                          */
    int lead_refused;         /* block steps: a build ahead of its
                                 refreshes (the positions x + tau v,
                                 tree/refresh_lag.h) whose groups at x
                                 had grown as much from those cells:
                                 built again from x                      */
    double refresh_growth;    /* a refresh's groups' growth, the mean
                                 that refresh_guard.h judges (1: none;
                                 0: no refresh)                          */
    long n_nodes, n_leaves, n_groups, depth;
    size_t device_bytes_peak; /* GPU backend: peak device memory         */
    const char *backend;      /* "cpu" or "gpu"                          */
    /* several ranks (bn_gravity_set_comm), this rank: the locally
     * essential trees sent and received, and the time to select, pack
     * and exchange them (0 in one process) */
    size_t let_cells_sent, let_bodies_sent, let_cells_received, let_bodies_received;
    double t_exchange;
} bn_force_stats;

/* A reusable force solver: it keeps its scratch (and, on the GPU, device
 * buffers) between calls. */
typedef struct bn_gravity bn_gravity;

BN_API bn_status bn_gravity_create(bn_gravity **out, const bn_gravity_params *params);
BN_API void bn_gravity_free(bn_gravity *g);
BN_API const bn_gravity_params *bn_gravity_get_params(const bn_gravity *g);
/* Which backend a solver resolved BN_BACKEND_AUTO to. */
BN_API bn_backend bn_gravity_backend(const bn_gravity *g);
/* Self-gravity of p: fill p->acc and p->pot (allocated if missing). The
 * order of p is not changed. */
BN_API bn_status bn_gravity_compute(bn_gravity *g, bn_particles *p);
BN_API const bn_force_stats *bn_gravity_stats(const bn_gravity *g);
/* Several ranks (bn_comm_world under mpirun; see "Many processes"):
 * bn_gravity_compute becomes collective: every rank passes its own
 * particles (any number, none included) and gets their forces from
 * every rank's particles. Tree forces exchange locally essential trees;
 * bn_domain_decompose first keeps them small. An error target works
 * with the CPU backend: the sample is drawn over every rank's particles
 * and every rank chooses the same settings (the GPU's refuses it). c must
 * outlive g. NULL or one rank: this process alone. */
typedef struct bn_comm bn_comm;
BN_API bn_status bn_gravity_set_comm(bn_gravity *g, const bn_comm *c);

/* Where an error target stands (bn_gravity_params.error_target): the
 * settings chosen and the error last measured on the sample. */
typedef struct bn_accuracy {
    double target;        /* E; 0: no target                           */
    double p50, p99, max; /* relative acceleration error of the last
                             check on the sample (0: none yet)         */
    double pot_p99;       /* the potential's                           */
    size_t sample;        /* targets of that check                     */
    int met;              /* the last tuning found settings with p99 <= E
                             (0: the most accurate tried is used)      */
    long tunings, checks; /* so far                                    */
    long evaluations;     /* force evaluations the tunings made        */
    double t_tuning;      /* wall seconds spent tuning and checking    */
    double t_checks;      /* of which the periodic checks (a sample's
                             reference each: the cost of a check)      */
    double t_eval;        /* the chosen settings' measured evaluation
                             time (seconds; BN_TUNE_WORK: their work in
                             walk flops)                               */
} bn_accuracy;
/* The solver's parameters as last used (with an error target: the
 * chosen ones) and its accuracy record. */
BN_API const bn_gravity_params *bn_gravity_params_used(const bn_gravity *g);
BN_API const bn_accuracy *bn_gravity_accuracy(const bn_gravity *g);

/* Double-precision direct summation on the CPU (OpenMP): the reference
 * every other force is compared with. Fills acc and pot of the targets
 * listed in `targets` (indices into p; NULL and n_targets = p->n for all).
 * phi_i = -G sum_{j != i} m_j / sqrt(r_ij^2 + eps^2). */
BN_API bn_status bn_direct_reference(const bn_particles *p, double G, double eps,
                                     const size_t *targets, size_t n_targets,
                                     double *acc_out /* 3*n_targets, xyz per target */,
                                     double *pot_out /* n_targets */);

/* ------------------------------------------------------------------ */
/* Accuracy of one force field against another                          */
/* ------------------------------------------------------------------ */
typedef struct bn_error_stats {
    size_t n;                 /* particles compared                      */
    double acc_p50, acc_p90, acc_p99, acc_p999, acc_max, acc_mean;
    double pot_p50, pot_p99, pot_max; /* |phi-phi_ref|/|phi_ref|          */
} bn_error_stats;

/* Relative errors |a - a_ref| / |a_ref| of n entries (xyz triples). */
BN_API bn_status bn_error_stats_compute(size_t n, const double *acc, const double *acc_ref,
                                        const double *pot, const double *pot_ref,
                                        bn_error_stats *out);

/* ------------------------------------------------------------------ */
/* Initial conditions                                                   */
/* ------------------------------------------------------------------ */
typedef enum bn_ic_model {
    BN_IC_PLUMMER = 0,     /* Henon units: M = 1, G = 1, E = -1/4
                              (a = 3 pi/16), cut at 99.9% of the mass   */
    BN_IC_HERNQUIST = 1,   /* M = 1, a = 1, truncated, Eddington DF        */
    BN_IC_NFW = 2,         /* M(r_trunc) = 1, r_s = 1, truncated, Eddington */
    BN_IC_UNIFORM_SPHERE = 3, /* radius 1, virial ratio Q (0: cold)        */
    BN_IC_UNIFORM_CUBE = 4    /* [-half, half]^3, at rest                  */
} bn_ic_model;
/* Truncated halos have density rho(r) - rho(r_trunc) inside r_trunc (and
 * none beyond), so that the density reaches zero at the edge and the
 * isotropic Eddington DF, computed numerically in the truncated model's own
 * potential, is an exact equilibrium. Every model has total mass 1 (the
 * uniform cube with mass_spread: about 1/2). */

typedef struct bn_ic_params {
    bn_ic_model model;
    size_t n;              /* particles                                  */
    uint64_t seed;         /* Default 1.                                 */
    double G;              /* Default 1. Velocities scale as sqrt(G);
                              positions and masses do not depend on it.  */
    double virial_ratio;   /* uniform-sphere: 2T/|W|. Default 0 (cold).   */
    double truncation;     /* hernquist/nfw: truncation radius in units of
                              the scale radius. Default 0: the model's
                              default (hernquist 100, nfw 10).           */
    double cube_half_size; /* uniform-cube: half side. Default 3.        */
    int mass_spread;       /* uniform-cube: 1 = masses uniform in [0, 1/N)
                              (the GPU tree benchmark); 0 = equal masses
                              1/N. Default 0.                            */
} bn_ic_params;

BN_API bn_ic_params bn_ic_params_default(void);
BN_API const char *bn_ic_model_name(bn_ic_model m);
BN_API bn_status bn_ic_model_parse(const char *s, bn_ic_model *out);
/* Sample a model. Deterministic: same params give bit-identical particles
 * whatever the thread count. Ids are 1..n. Centre of mass at rest at the
 * origin. */
BN_API bn_status bn_ic_generate(const bn_ic_params *params, bn_particles **out);

/* ---- Parameters by name (for bindings: Python's ctypes, and tools) ---- */
/* sizeof of a public struct by its name ("bn_particles",
 * "bn_gravity_params", "bn_integrator_params", "bn_ic_params",
 * "bn_energies", "bn_snapshot_meta", "bn_force_stats", "bn_units",
 * "bn_mesh", "bn_mesh_ic_params", "bn_field_params", "bn_field_stats",
 * "bn_galaxy_model"), 0 for
 * another name: a binding checks its own layout, or allocates an opaque
 * buffer of this size. */
BN_API size_t bn_sizeof(const char *type);
/* The defaults of bn_gravity_params, bn_integrator_params, bn_ic_params,
 * bn_snapshot_meta or bn_galaxy_model (GOTHIC's M31) (by name) written to
 * out. */
BN_API bn_status bn_struct_default(void *out, const char *type);
/* One field of a bn_gravity_params (section "Gravity"),
 * bn_integrator_params ("TimeIntegration") or bn_ic_params
 * ("InitialConditions") set from text, as a parameter file's key of that
 * section is (the same names, types, ranges and messages; a setting an
 * error target would choose counts as given), or read back as text. */
BN_API bn_status bn_params_set_text(void *params, const char *section, const char *key, const char *value);
BN_API bn_status bn_params_get_text(const void *params, const char *section, const char *key, char *buf,
                                    size_t size);

/* ---- Galaxies: halo, bulge and disk in equilibrium (banyan ic galaxy) ---- */
/*
 * Every component has a total mass (after its truncation), a scale and a
 * truncation as in MAGI (Miki & Umemura 2018): its density times
 * 0.5 erfc((r - cutoff) / cutoff_width) (the disk's in cylindrical R).
 * Spheroids (halo, bulge) get isotropic velocities from their Eddington
 * distribution functions in the total potential (the disk through its
 * enclosed mass M_d(<R = r)); the disk gets epicyclic velocities: sigma_R
 * = sigma_0 exp(-R / 2 R_d) with Q(q_radius) = toomre_q (Q = sigma_R
 * kappa / 3.36 G Sigma), sigma_phi^2 = sigma_R^2 kappa^2 / 4 Omega^2,
 * sigma_z(R, z) from the vertical Jeans equation in the total potential
 * (the disk's slab pull 2 pi G Sigma(<|z|) and the spheroids' G M(<r) z /
 * r^3; the slab alone gives pi G Sigma z_d for sech^2), and a
 * mean rotation v_phi^2 = v_c^2 + sigma_R^2 (1 - kappa^2/4 Omega^2 + d ln
 * (Sigma sigma_R^2) / d ln R) (Hernquist 1993, eq. 2.27: -2 R/R_d without
 * the taper), 0 where that is negative. Particles: halo (PartType1), disk
 * (PartType2), bulge (PartType3), in that order, ids 1..N.
 */
typedef enum bn_galaxy_profile {
    BN_GALAXY_NONE = 0,      /* component absent                          */
    BN_GALAXY_NFW = 1,       /* rho_0 / (x (1 + x)^2), x = r / scale       */
    BN_GALAXY_HERNQUIST = 2, /* rho_0 / (x (1 + x)^3)                      */
    BN_GALAXY_EXPONENTIAL = 3 /* disk: Sigma_0 exp(-R / scale) times the
                                vertical profile                          */
} bn_galaxy_profile;

typedef enum bn_galaxy_vertical {
    BN_GALAXY_SECH2 = 0,     /* rho ~ sech^2(z / z_d) (isothermal sheet)   */
    BN_GALAXY_EXP = 1        /* rho ~ exp(-|z| / z_d)                      */
} bn_galaxy_vertical;

typedef struct bn_galaxy_component {
    bn_galaxy_profile profile;
    double mass;          /* total mass, after the truncation (> 0)      */
    double scale;         /* r_s, a or R_d (> 0)                         */
    double cutoff;        /* truncation radius (> 0)                     */
    double cutoff_width;  /* width of the erfc taper (>= 0.02 cutoff)    */
    size_t n;             /* particles; 0: from particle_mass, else the
                             share of bn_ic_galaxy's n by mass (equal
                             particle masses)                            */
    double particle_mass; /* used when n = 0 and > 0                     */
    /* disk only */
    double scale_height;  /* z_d (> 0)                                   */
    bn_galaxy_vertical vertical;
    double toomre_q;      /* Q at q_radius (> 0)                         */
    double q_radius;      /* (> 0)                                       */
} bn_galaxy_component;

typedef struct bn_galaxy_model {
    bn_galaxy_component halo, bulge, disk;
    bn_units units;       /* the unit system; units.G is the G used      */
} bn_galaxy_model;

/* Units kpc, Msun, km/s: G = 4.30091727e-6 kpc (km/s)^2 / Msun, time unit
 * kpc / (km/s) = 0.9778 Gyr. */
BN_API bn_units bn_units_kpc_msun_kms(void);
/* GOTHIC's M31 (Miki & Umemura 2017, after Geehan et al. 2006 and Fardal
 * et al. 2007): NFW halo 8.11e11 Msun, r_s 7.63 kpc; Hernquist bulge
 * 3.24e10 Msun, a 0.61 kpc; exponential disk 3.66e10 Msun, R_d 5.4 kpc,
 * z_d 0.6 kpc (sech^2), Q = 2 at R_d. Truncations (ours, MAGI's taper):
 * halo at 25 r_s = 190.75 kpc (about r_200 of 8.11e11 Msun), width 19.1
 * kpc; bulge at 20 a = 12.2 kpc, width 1.22 kpc; disk at 6 R_d = 32.4
 * kpc, width 2.7 kpc. Equal particle masses (n = 0 everywhere). */
BN_API bn_galaxy_model bn_galaxy_model_m31(void);
/* The message names the component and field at fault. */
BN_API bn_status bn_galaxy_model_validate(const bn_galaxy_model *m);
/* Read a model from a YAML file (sections units, halo, bulge, disk; see
 * examples/galaxies/m31.yml): unknown or repeated keys, missing required ones and
 * bad values fail naming the file, line and section:key. */
BN_API bn_status bn_galaxy_model_read(const char *path, bn_galaxy_model *out);
/* The gravitational constant of the model's unit system (for bindings,
 * which see the model as an opaque buffer). */
BN_API double bn_galaxy_model_G(const bn_galaxy_model *m);
/* Sample the model: n particles shared by the components without their
 * own count (may be 0 when all have one), seed as bn_ic_params. Centre of
 * mass at rest at the origin; the same bits at any thread count. */
BN_API bn_status bn_ic_galaxy(const bn_galaxy_model *m, size_t n, uint64_t seed, bn_particles **out);
/* The model's disk at radius R (in the midplane): what the sampler uses. */
typedef struct bn_galaxy_disk_point {
    double R;
    double v_circ;          /* circular speed of the total potential    */
    double kappa, omega;    /* epicyclic and angular frequencies        */
    double surface_density; /* Sigma(R), taper included                 */
    double sigma_R, sigma_phi, sigma_z; /* sigma_z in the midplane      */
    double v_phi;           /* mean rotation (asymmetric drift)         */
    double toomre_q;        /* sigma_R kappa / (3.36 G Sigma)           */
} bn_galaxy_disk_point;
BN_API bn_status bn_galaxy_disk_curve(const bn_galaxy_model *m, size_t n, const double *R, bn_galaxy_disk_point *out);
/* A disk measured from its particles (PartType2 of p, about their centre
 * of mass and mean velocity), in n_rings rings of equal width out to
 * R_max: what the model's curves are compared with, after sampling or
 * after a run. */
typedef struct bn_galaxy_ring {
    double R_lo, R_hi;      /* the ring                                  */
    double R;               /* mean R of its disk particles              */
    size_t n;               /* disk particles in it                      */
    double v_circ;          /* sqrt(mean -a.R_hat R) of those within half
                               a scale height of the midplane: p's forces
                               (NaN without forces or particles there)   */
    double sigma_R;         /* radial velocity dispersion                */
    double surface_density; /* their mass over the ring's area           */
    double toomre_q;        /* sigma_R kappa / (3.36 G Sigma), kappa the
                               model's at R                              */
} bn_galaxy_ring;
BN_API bn_status bn_galaxy_disk_rings(const bn_galaxy_model *m, const bn_particles *p, size_t n_rings, double R_max,
                                      bn_galaxy_ring *out);
/* The shape of a galaxy from its particles, to follow it through a run:
 * per part type the radii about its own centre of mass holding 10, 50 and
 * 90% of its mass (0: absent); the disk's (PartType2, about its centre of
 * mass) scale height from the median |z| (sech^2: z_d = median /
 * atanh(1/2); exponential: median / ln 2), and its Toomre Q in the ring
 * [0.8, 1.2] x the model's q_radius (bn_galaxy_disk_rings), NaN without
 * a disk. */
typedef struct bn_galaxy_shape {
    double lagrangian[BN_PART_TYPES][3];
    double scale_height;
    double toomre_q;
    size_t q_ring_n; /* disk particles in Q's ring                  */
} bn_galaxy_shape;
#define BN_GALAXY_LAGRANGIAN_FRACTIONS {0.1, 0.5, 0.9}
BN_API bn_status bn_galaxy_shape_measure(const bn_galaxy_model *m, const bn_particles *p, bn_galaxy_shape *out);

/* ------------------------------------------------------------------ */
/* Snapshots (HDF5, GADGET-4 layout)                                    */
/* ------------------------------------------------------------------ */
typedef struct bn_snapshot_meta {
    double time;
    double redshift;
    double box_size;
    bn_units units;
    bn_gravity_params gravity; /* written to /Parameters                 */
    bn_accuracy accuracy;      /* writer: with gravity.error_target > 0,
                                  the measured error goes to /Parameters
                                  (ErrorMeasuredP50, ErrorMeasuredP99)   */
    int has_gravity;           /* reader: /Parameters had gravity solver
                                  keys (banyan's files always do; the
                                  writer ignores this field)             */
    int has_acceleration;      /* reader: the file had Acceleration      */
    int has_potential;         /* reader: ... and Potential              */
} bn_snapshot_meta;

BN_API bn_snapshot_meta bn_snapshot_meta_default(void);
/* A header's number by name (time, redshift, box_size, G, length_in_cm,
 * mass_in_g, velocity_in_cm_per_s): *set written to it when set is not
 * NULL (G: the units' and the gravity parameters', which the writer
 * stores), then its value to *get when get is not NULL. For bindings. */
BN_API bn_status bn_snapshot_meta_number(bn_snapshot_meta *m, const char *key, const double *set, double *get);
/* Write p (with Acceleration and Potential when p->acc is set) to path,
 * through a temporary file renamed at the end: one /PartTypeN group per
 * part type present (p->type; NULL: all /PartType1), each in p's order. */
BN_API bn_status bn_snapshot_write(const char *path, const bn_particles *p,
                                   const bn_snapshot_meta *meta);
/* Read a GADGET-4/SWIFT-style file: float or double coordinates, 32- or
 * 64-bit ids, per-particle Masses or Header/MassTable. Reads every
 * PartTypeN present, concatenated in type order; p->type records each
 * particle's (NULL when every particle is PartType1). meta may be NULL. A file of
 * a snapshot split over several (NumFilesPerSnapshot > 1, GADGET-4's
 * "<stem>.<k>.hdf5") reads every file of it, in file order: the counts
 * must add up to NumPart_Total and the ids must be unique over all. */
BN_API bn_status bn_snapshot_read(const char *path, bn_particles **out, bn_snapshot_meta *meta);

/* Snapshots split over files (GADGET-4's NumFilesPerSnapshot), e.g. one
 * per MPI rank: file k of a snapshot named "<stem>.hdf5" is
 * "<stem>.<k>.hdf5". */
#define BN_SNAPSHOT_MAX_FILES 65536
/* The name of file k of the split snapshot `path` ("snap.hdf5" ->
 * "snap.3.hdf5"; a path without ".hdf5" gets ".<k>.hdf5" appended). */
BN_API bn_status bn_snapshot_part_path(const char *path, int k, char *out, size_t cap);
/* Write file `index` of `n_files` holding p (which may be empty), with
 * NumPart_Total n_total: every file of the set must be written for a
 * reader to accept it. Atomic per file (a temporary name renamed). */
BN_API bn_status bn_snapshot_write_part(const char *path, const bn_particles *p, const bn_snapshot_meta *meta,
                                        int index, int n_files, uint64_t n_total);
/* The same for a set with part types (p->type): n_total[t] particles of
 * PartType t in the whole snapshot (GADGET-4's NumPart_Total per type);
 * bn_snapshot_write_part counts every particle as PartType1. */
BN_API bn_status bn_snapshot_write_part_types(const char *path, const bn_particles *p, const bn_snapshot_meta *meta,
                                              int index, int n_files, const uint64_t n_total[BN_PART_TYPES]);
/* Rank `rank` of `ranks` readers' share of a snapshot: the files [F rank
 * / ranks, F (rank + 1) / ranks) of a split snapshot of F files (none
 * when F < ranks leaves this rank without one: *out has 0 particles), or
 * for a single file its rows [N rank / ranks, N (rank + 1) / ranks).
 * Checks as bn_snapshot_read over what it reads; *n_total: the particles
 * of the whole snapshot (may be NULL). */
BN_API bn_status bn_snapshot_read_share(const char *path, int rank, int ranks, bn_particles **out,
                                        bn_snapshot_meta *meta, uint64_t *n_total);

/* Other codes' files (issue 20). bn_snapshot_read and bn_snapshot_read_share
 * tell the format from the content: HDF5; GADGET-2 binary format 1 or 2
 * (first record marker 256, or 8 before the "HEAD" label, in either byte
 * order; float or double values; 32- or 64-bit ids; the set "<stem>.0",
 * "<stem>.1"... when the header's num_files > 1, also found from "<stem>");
 * tipsy, standard (big-endian) or native (ndim reads 3). GADGET-2 keeps
 * its part types; tipsy's gas is PartType0, dark matter PartType1, stars
 * PartType4, ids 1, 2, ... in file order. */
typedef enum bn_snapshot_format {
    BN_FORMAT_HDF5 = 0,     /* GADGET-4 layout (bn_snapshot_write)        */
    BN_FORMAT_GADGET2,      /* GADGET-2 binary, format 1                  */
    BN_FORMAT_GADGET2_F2,   /* GADGET-2 binary, format 2 (block labels)   */
    BN_FORMAT_TIPSY,        /* tipsy, standard (big-endian XDR)           */
    BN_FORMAT_TIPSY_NATIVE  /* tipsy, this machine's byte order           */
} bn_snapshot_format;
/* "hdf5", "gadget2", "gadget2-format2", "tipsy", "tipsy-native". */
BN_API const char *bn_snapshot_format_name(bn_snapshot_format f);
BN_API bn_status bn_snapshot_format_parse(const char *name, bn_snapshot_format *out);
/* The format of the file at path, from its first bytes; *big_endian (may
 * be NULL): the file's byte order (binary formats). */
BN_API bn_status bn_snapshot_detect(const char *path, bn_snapshot_format *out, int *big_endian);
typedef struct bn_snapshot_write_options {
    bn_snapshot_format format;
    int big_endian; /* GADGET-2: the byte order written (0: little-endian) */
    int n_files;    /* GADGET-2: a set "<path>.0" ... of n_files > 1 files */
} bn_snapshot_write_options;
/* Write p in the format of o (NULL: HDF5): GADGET-2 and tipsy hold float32
 * values (a value beyond float's range is refused, naming the particle);
 * tipsy keeps gas (PartType0) and stars (PartType4), every other type
 * becomes dark matter, and drops ids. Atomic per file. */
BN_API bn_status bn_snapshot_write_as(const char *path, const bn_particles *p, const bn_snapshot_meta *meta,
                                      const bn_snapshot_write_options *o);

/* ------------------------------------------------------------------ */
/* Images                                                               */
/* ------------------------------------------------------------------ */
typedef enum bn_render_view {
    BN_VIEW_AXIS = 0,    /* along `axis`                                 */
    BN_VIEW_FACE_ON = 1, /* along the disk's angular momentum (towards
                            the viewer); the disk: the PartType2
                            particles, or every particle without any    */
    BN_VIEW_EDGE_ON = 2  /* the disk's angular momentum points up        */
} bn_render_view;

typedef struct bn_render_params {
    int width, height;   /* pixels. Default 800 x 800.                  */
    int axis;            /* projection along 0 = x, 1 = y, 2 = z. Default 2. */
    double extent;       /* half-width of the view; 0: from the data (the
                            radius holding 98% of the mass; face-on and
                            edge-on, of the disk's). Default 0.          */
    bn_render_view view; /* Default BN_VIEW_AXIS.                        */
    int component;       /* draw only this part type; -1: every particle
                            (default)                                   */
} bn_render_params;
BN_API bn_render_params bn_render_params_default(void);
/* Projected log surface density to a PNG (temporary file + rename),
 * centred on the centre of mass (face-on and edge-on, the disk's). One
 * part type drawn: inferno colours. Several: each its own colour
 * (bn_render_part_colour), scaled by its log surface density over four
 * decades below its own brightest pixel, the colours added. */
BN_API bn_status bn_render_png(const char *path, const bn_particles *p,
                               const bn_render_params *params);
/* The colour of a part type in a picture of several (8-bit RGB): halo
 * dim blue, disk warm white, bulge orange, the others green, magenta and
 * grey (PartType0, 4, 5). */
BN_API void bn_render_part_colour(int type, unsigned char rgb[3]);

/* ------------------------------------------------------------------ */
/* Simulation                                                           */
/* ------------------------------------------------------------------ */
/* One component's share of the energies: the particles of one GADGET
 * part type (bn_particles.type; a set without types is all PartType1). */
typedef struct bn_component_energies {
    double count;      /* its particles (0: none); exact below 2^53     */
    double mass;
    double kinetic;
    double potential;  /* 1/2 sum m phi over its particles, phi from
                          every particle: its share of W (the shares add
                          up to W; not its self-energy)               */
    double angular_momentum[3]; /* about the origin                   */
} bn_component_energies;

typedef struct bn_energies {
    double kinetic, potential, total;
    double momentum[3];
    double angular_momentum[3];
    double com[3];
    bn_component_energies part[BN_PART_TYPES]; /* per part type         */
} bn_energies;

/* What chooses a particle's block step (bn_integrator_params.criterion). */
typedef enum bn_step_criterion {
    BN_STEP_ACCEL = 0,    /* eta sqrt(eps / |a|) (GADGET, GOTHIC)           */
    BN_STEP_DYNAMICAL = 1 /* eta sqrt(|phi|) / |a|: the local dynamical time
                             (phi ~ a r gives sqrt(r / |a|)), independent of
                             eps; phi: the potential, 0 at infinity        */
} bn_step_criterion;
BN_API const char *bn_step_criterion_name(bn_step_criterion c);
BN_API bn_status bn_step_criterion_parse(const char *s, bn_step_criterion *out);

typedef struct bn_integrator_params {
    double dt;        /* fixed step when eta = 0; with block steps the
                         longest step (a cycle). Default 1/128.          */
    double eta;       /* adaptive step criterion eta sqrt(eps/|a|): the
                         shared step uses max|a| and is capped at dt;
                         0 = fixed. Default 0.                           */
    int time_bins;    /* block (hierarchical) time steps, K: 0 = one
                         shared step (default). K >= 1: particle i steps
                         dt / 2^b_i, b_i in 0..K-1 the coarsest with
                         dt / 2^b_i <= eta sqrt(eps / |a_i|) (K >= 2 needs
                         eta > 0); a step of the simulation then goes to
                         the next tick where some particle ends its step
                         and computes the forces of those particles only.
                         K = 1 is the fixed shared step.                 */
    int tree_rebuild; /* block steps: rebuild the tree every this many
                         steps (and always at a cycle's end, when every
                         particle is active); in between, its structure
                         is kept and its moments and boxes are refreshed
                         from the moved particles (a refresh whose groups
                         have scattered is refused and the tree rebuilt).
                         0 (default): self-tuned from measured costs
                         (GOTHIC's idea; integrate/rebuild_tuner.h):
                         rebuild every 2^m steps, at the steps whose
                         first active bin is at most the finest occupied
                         bin - m (the most active particles), m chosen by
                         measuring whole cycles at the best m and a
                         neighbour, weighed as rebuild_cost says;
                         refreshes that turn dear give way to rebuilding
                         at every step at once. Faster than rebuilding
                         at every step on M31, Plummer, Hernquist, NFW and
                         a cold collapse at 2^22 (1.6-12.5%, BENCHMARKS.md
                         session 31). Each build whose tree is refreshed
                         takes its cells from the positions half its
                         refreshes ahead (tree/refresh_lag.h). 1: every
                         step. The values other than 1 choose on the
                         host, which then reads the clock back at every
                         step (batches of one step) but while the tuner
                         holds rebuilding at every step.                */
    double dt_min;    /* the shortest step allowed: a step that the
                         criterion would make shorter (a close encounter,
                         a collapse) stops the run with an error instead
                         of creeping on forever; with block steps the
                         finest bin dt / 2^(K-1) must not be shorter.
                         0: no floor (default; banyan run sets one).     */
    bn_step_criterion criterion; /* block steps (time_bins >= 2): what
                         chooses each particle's step. Default
                         BN_STEP_ACCEL.                                  */
    bn_tune_cost rebuild_cost; /* tree_rebuild 0: what the self-tuned
                         rebuild weighs. BN_TUNE_WORK (the default): the
                         walk's counted work, its flops from the
                         interaction counts and the cells it visited, a
                         rebuild BN_REBUILD_WORK_PER_PARTICLE per particle:
                         the same rebuilds, and bits, at every run.
                         BN_TUNE_TIME: the measured times of the walk and
                         of the tree's build and refresh (the device's on
                         the GPU, the slowest rank's): rebuilds fall at
                         steps that differ from run to run, so runs are
                         not bit-reproducible and a restart continues
                         with the tuner's state but not the same bits.  */
} bn_integrator_params;
BN_API bn_integrator_params bn_integrator_params_default(void);

typedef struct bn_simulation bn_simulation;

/* Create with defaults: no particles, default gravity and integrator. */
BN_API bn_status bn_simulation_create(bn_simulation **out);
BN_API void bn_simulation_free(bn_simulation *sim);
BN_API bn_status bn_simulation_set_gravity(bn_simulation *sim, const bn_gravity_params *g);
BN_API bn_status bn_simulation_set_integrator(bn_simulation *sim, const bn_integrator_params *ip);
/* Replace the particles by a copy of p (validated). */
BN_API bn_status bn_simulation_set_particles(bn_simulation *sim, const bn_particles *p);
BN_API bn_status bn_simulation_add_particle(bn_simulation *sim, const double pos[3],
                                            const double vel[3], double mass, uint64_t id);
/* The current particles, copied back from the device if needed. The
 * pointer stays owned by sim and valid until the next call that changes
 * the simulation. */
BN_API bn_status bn_simulation_particles(bn_simulation *sim, const bn_particles **out);
BN_API double bn_simulation_time(const bn_simulation *sim);
/* Fails on a time that is not finite. */
BN_API bn_status bn_simulation_set_time(bn_simulation *sim, double t);
BN_API long bn_simulation_steps(const bn_simulation *sim);
/* Forces at the current positions. */
BN_API bn_status bn_simulation_compute_forces(bn_simulation *sim);
/* Steps toward t_limit, at most max_steps of them, none past it (the last
 * one shortened to land on it, as in bn_simulation_step_to). The steps
 * are queued back to back: the backend's clock chooses each one's length
 * (and, with block steps, the next tick and its active particles) where
 * the accelerations are, so on the GPU nothing comes to the host between
 * them; the clock (time, steps, block state) is read once, at the end.
 * How many to queue is predicted from the last step: if steps grow
 * longer, the ones queued after t_limit is reached are idle (nothing
 * moves; the GPU still builds the tree: bn_simulation_idle_steps counts
 * them); if they grow shorter, the call returns short of t_limit.
 * *steps_taken (may be NULL) receives the steps made. */
BN_API bn_status bn_simulation_advance(bn_simulation *sim, double t_limit, long max_steps, long *steps_taken);
/* Steps queued after their batch had reached its time limit. */
BN_API long bn_simulation_idle_steps(const bn_simulation *sim);
/* One kick-drift-kick step (a batch of one: bn_simulation_advance);
 * returns the step taken in *dt_taken (may be NULL). */
BN_API bn_status bn_simulation_step(bn_simulation *sim, double *dt_taken);
/* One step that does not pass t_limit: shortened (or stretched by at most
 * 1e-6 of itself) to end exactly on t_limit when t_limit is that close.
 * Nothing happens when t_limit <= time (*dt_taken = 0). */
BN_API bn_status bn_simulation_step_to(bn_simulation *sim, double t_limit, double *dt_taken);
/* Steps until time == t_end exactly (the last step is shortened to land on
 * t_end), in batches (bn_simulation_advance); nothing happens when
 * t_end <= time. */
BN_API bn_status bn_simulation_integrate(bn_simulation *sim, double t_end);
/* Energies at the current positions. With block steps velocities are
 * synchronised only at the end of a cycle (tick 0): read them there. */
BN_API bn_status bn_simulation_energies(bn_simulation *sim, bn_energies *out);
/* Where a simulation with block time steps stands. */
typedef struct bn_block_info {
    int n_bins;          /* K; 0: shared steps                           */
    int tick, ticks;     /* tick within the cycle (0: synchronised), ticks
                            per cycle 2^(K-1)                            */
    int max_bin;         /* the finest occupied bin                      */
    long n_active;       /* particles that ended a step at the last tick */
    long tree_builds;    /* block steps so far that rebuilt the tree (the
                            others refreshed it), and the second builds
                            of refused builds ahead (refresh_lag.h)      */
    double cycle_start, cycle_length;
    double forces;       /* particle forces the block steps so far computed
                            (every rank's): their cost, for comparing step
                            criteria at equal energy error               */
} bn_block_info;
BN_API bn_block_info bn_simulation_block_info(const bn_simulation *sim);
/* Restart files: everything the simulation keeps between steps (particles
 * with their last forces, types and block-step bins, the clock inside a
 * block-step cycle too, the error target's settings and record, the
 * rebuild tuner) in one HDF5 file per rank, written under a temporary
 * name and renamed; user (user_size bytes, or NULL) is kept with it.
 * Several ranks: collective, each rank passes its own path. A loaded
 * simulation continues with the same bits as the saved one on the same
 * backend, ranks and threads (a refreshed tree, tree_rebuild != 1, too:
 * the file holds the tree the next refresh starts from; with tree_rebuild 0 and rebuild_cost time not at all:
 * the tuner's state is saved, but its decisions follow measured times). Load keeps the simulation's backend and device (set
 * them with bn_simulation_set_gravity first) and needs the rank count
 * of the save, every rank's file of one save (the same time, step and
 * tick: else every rank fails naming the range); a damaged or truncated
 * file fails naming it and changes nothing. *user (free it) gets the saved bytes; info may be NULL. */
typedef struct bn_state_info {
    double time;
    long steps;
    int ranks;          /* that wrote the file                           */
    bn_backend backend; /* that ran before the save                      */
} bn_state_info;
BN_API bn_status bn_simulation_save_state(bn_simulation *sim, const char *path, const void *user, size_t user_size);
BN_API bn_status bn_simulation_load_state(bn_simulation *sim, const char *path, bn_state_info *info, void **user,
                                          size_t *user_size);
/* A set of restart files written by another rank count (paths[r]: the
 * file of rank r of n_files): collective; rank r reads files r, r + ranks,
 * ... and keeps their particles with their forces and bins (inside a
 * block-step cycle too), every rank takes file 0's settings, clock and
 * user bytes. Correct, not bit for bit: the domains are not cut until
 * bn_simulation_rebalance at a synchronised time, the costs are measured
 * anew. A damaged file, or one of another save, fails naming it before
 * anything changes; a later failure (the backend's upload) leaves the
 * simulation to be loaded again. */
BN_API bn_status bn_simulation_load_state_set(bn_simulation *sim, const char *const *paths, int n_files,
                                              bn_state_info *info, void **user, size_t *user_size);
/* The rank count that wrote a restart file (read from its saved state
 * alone: which set a file belongs to, before reading the set). */
BN_API bn_status bn_simulation_state_ranks(const char *path, int *ranks);
/* Several ranks (bn_comm_world under mpirun; see "Many processes"): every
 * rank passes its own particles (bn_simulation_set_particles; any number,
 * none included) and then calls every function below that computes or
 * steps, in the same order: they become collective. Forces come from every
 * rank's particles, each step's length and block-step bins are decided from
 * numbers the same on every rank (max |a|, the finest bin, the counts), and
 * bn_simulation_energies sums every rank's, in rank order. Either
 * backend, tree or direct summation. c must outlive sim. NULL or one
 * rank: this process alone. */
BN_API bn_status bn_simulation_set_comm(bn_simulation *sim, const bn_comm *c);
/* Collective: the largest rank's load since the domains were last cut (its
 * particles' measured walk flops, from the interaction counts, every
 * evaluation since then; the last one's with direct summation) over the
 * mean; 1 in one process. */
BN_API bn_status bn_simulation_imbalance(bn_simulation *sim, double *imbalance);
/* Collective, at a synchronised time (block steps: a cycle's end): cut the
 * domains again (bn_domain_decompose), each particle weighted by its own
 * measured cost: the flops of the walks that computed its forces since the
 * last cut (its group's interaction counts, shared by the group's
 * particles; a particle in a fine time bin is walked more often and weighs
 * more). By count before any forces, and with direct summation. The
 * particles move with their forces, where they live: the GPU backend keys
 * and sorts them on its device, brings only keys and costs to the host for
 * the cut, and sends only those that change rank (through host memory,
 * or device to device with BANYAN_MPI_DEVICE_BUFFERS=1 where the MPI
 * library is CUDA-aware: untested so far);
 * st (may be NULL) gets the cut's numbers. Nothing in one process. */
typedef struct bn_domain_stats bn_domain_stats;
BN_API bn_status bn_simulation_rebalance(bn_simulation *sim, bn_domain_stats *st);
/* Several ranks: between its drift and its forces every step (block
 * steps: every step that rebuilds the tree, the bins along) moves the
 * particles that crossed the last cut (of
 * bn_simulation_rebalance; none before the first) to the ranks that own
 * their keys, the cut kept: only they move, with their velocities and
 * forces (bn_domain_update; on the GPU only they leave the device), and
 * their measured costs with them (the next cut weighs every step since
 * the last). BANYAN_MIGRATE=0 turns it off (a measuring aid).
 * *st: what the migrations moved on this rank, summed (sent, received,
 * t_total). */
BN_API bn_status bn_simulation_crossers(const bn_simulation *sim, bn_domain_stats *st);
/* Stats of the last force evaluation. On the GPU a step queues its work
 * and returns before the device is done; asking for the stats waits for
 * that evaluation (zeros if it failed). */
BN_API const bn_force_stats *bn_simulation_force_stats(bn_simulation *sim);
/* Wait until the backend has finished the work queued so far (the GPU's
 * steps return early); for timings. */
BN_API bn_status bn_simulation_finish(bn_simulation *sim);
BN_API bn_backend bn_simulation_backend(const bn_simulation *sim);
/* The gravity parameters in use (with an error target: those chosen, once
 * the first forces are computed) and the accuracy record. */
BN_API const bn_gravity_params *bn_simulation_gravity(const bn_simulation *sim);
BN_API const bn_accuracy *bn_simulation_accuracy(const bn_simulation *sim);

/* Energies of a particle set whose pot is filled (kinetic + 1/2 sum m phi). */
BN_API bn_status bn_energies_compute(const bn_particles *p, bn_energies *out);

/* ------------------------------------------------------------------ */
/* Block-structured AMR meshes                                          */
/* ------------------------------------------------------------------ */
/*
 * A mesh as FLASH (PARAMESH) keeps it: an octree of blocks, every block
 * nb[0] x nb[1] x nb[2] cells, values per cell and variable. bn_mesh holds
 * the LEAF blocks only (the ones that carry the solution), each with its
 * box and refinement level (1 = coarsest, as FLASH counts). Cell (i, j, k)
 * of block b has centre lo + (i + 1/2, j + 1/2, k + 1/2) * (hi - lo) / nb
 * and its value of variable v at var[v][b * cells + (k * nb[1] + j) *
 * nb[0] + i] (x fastest, as FLASH stores a block). The struct is public
 * for readers and bindings; change its size only through the functions.
 */
#define BN_MESH_NAME_LEN 16   /* longest variable name + 1 (FLASH: 4)    */
#define BN_MESH_MAX_VARS 64
#define BN_MESH_MAX_BLOCK_CELLS 64 /* most cells per block along an axis */
#define BN_MESH_MAX_LEVEL 21 /* finest refinement level: a leaf's place
                                below its root is a 21-bit-per-axis key */

typedef struct bn_mesh {
    int nb[3];              /* cells per block along x, y, z            */
    size_t n_blocks;        /* leaf blocks                              */
    size_t capacity;        /* blocks allocated                         */
    double *lo, *hi;        /* 3 per block: the block's corners         */
    int *level;             /* refinement level (1 = coarsest)          */
    int64_t *file_block;    /* the block's index in the file it was read
                               from (FLASH: among all blocks, parents
                               included); -1 for blocks made in memory  */
    int n_vars;
    char var_name[BN_MESH_MAX_VARS][BN_MESH_NAME_LEN];
    double *var[BN_MESH_MAX_VARS]; /* n_blocks * cells per block each   */
    double time;            /* simulation time (FLASH: "time")          */
    int from_flash;         /* reader: 1 when read from a FLASH file    */
} bn_mesh;

/* An empty mesh of blocks of nx x ny x nz cells (each in 1..64). */
BN_API bn_status bn_mesh_create(bn_mesh **out, int nx, int ny, int nz);
BN_API void bn_mesh_free(bn_mesh *m);
/* Append a leaf block (box [lo, hi], level >= 1); its values of every
 * variable are 0. *index (may be NULL) gets its index. */
BN_API bn_status bn_mesh_add_block(bn_mesh *m, const double lo[3], const double hi[3], int level, size_t *index);
/* Add a variable (values 0), or find it: *index gets its index. */
BN_API bn_status bn_mesh_add_var(bn_mesh *m, const char *name, int *index);
/* Index of variable `name`, or -1. */
BN_API int bn_mesh_var_index(const bn_mesh *m, const char *name);
BN_API size_t bn_mesh_block_cells(const bn_mesh *m);
BN_API size_t bn_mesh_cells(const bn_mesh *m);
/* Centre and sides of cell (i, j, k) of block b. */
BN_API void bn_mesh_cell(const bn_mesh *m, size_t b, int i, int j, int k, double centre[3], double side[3]);
/* Boxes finite with lo < hi, levels in [1, BN_MESH_MAX_LEVEL], blocks on
 * their level's grid (fewer than 2^30 of their sides from the domain's
 * corner), leaf blocks that do not overlap and tile each root block they
 * are in (no hole), every value finite: the message names the block (and
 * cell, variable, or the place of a hole) at fault. */
BN_API bn_status bn_mesh_validate(const bn_mesh *m, const char *what);
/* Deep copy. */
BN_API bn_status bn_mesh_copy(bn_mesh **out, const bn_mesh *src);

/* Files: FLASH checkpoint and plot files (HDF5, PARAMESH layout: leaf
 * blocks read) and banyan's own block-mesh layout (docs/ARCHITECTURE.md);
 * the reader tells them apart. vars: the variables to read, comma
 * separated ("dens" or "vorx,vory,vorz"), or NULL for all. */
BN_API bn_status bn_mesh_read(const char *path, const char *vars, bn_mesh **out);
/* 1 when path is a readable mesh file (FLASH or banyan layout), else 0
 * (snapshots, missing files: the caller's reader says why). */
BN_API int bn_mesh_file_detect(const char *path);
/* banyan's layout (temporary file + rename). */
BN_API bn_status bn_mesh_write(const char *path, const bn_mesh *m);
/* A FLASH-layout file (PARAMESH tree with the parent blocks rebuilt from
 * the leaves: bounding box, refine level, node type, gid, coordinates,
 * block size, unknown names, the variables, the scalar and runtime
 * parameter tables yt and FLASH read). The leaves must tile root blocks
 * of equal size. */
BN_API bn_status bn_mesh_write_flash(const char *path, const bn_mesh *m);
/* A copy of FLASH file `src` with the variables `vars` (comma separated)
 * of m (read from src: m->file_block maps its leaves) added or replaced,
 * parent blocks filled by volume averages of their children, and
 * `unknown names` extended: what FLASH restarts from and yt opens. */
BN_API bn_status bn_mesh_write_flash_copy(const char *src, const char *dst, const bn_mesh *m, const char *vars);

/* Test problems on meshes refined where the field varies (banyan mesh-ic),
 * with their exact solutions. The domain is [0, nroot]^3 in root blocks
 * of side 1 (nroot 1: the unit cube); bodies are centred in it. */
typedef enum bn_mesh_problem {
    BN_MESH_SPHERE = 0,       /* uniform sphere: density, radius        */
    BN_MESH_MACLAURIN = 1,    /* MacLaurin spheroid: uniform, semi-axes
                                 a1 = a2 = radius, a3 = a1 sqrt(1 - e^2) */
    BN_MESH_VORTEX_RINGS = 2  /* paper 002's two vortex rings: radius R,
                                 Psi = f(|(r - R, z)| / R) e_theta, f(t) =
                                 c1 exp(-c2 / (1 - t^2)); one at (1/4,
                                 1/4, 1/4) with axis z, one at (3/4, 3/4,
                                 3/4) with axis x (rotated by pi/2)      */
} bn_mesh_problem;

typedef struct bn_mesh_ic_params {
    bn_mesh_problem problem;
    int block;             /* cells per block edge. Default 16.          */
    int max_level;         /* finest level (FLASH's lrefine_max): blocks
                              that the body's surface (or the rings'
                              vorticity) crosses are refined to it.
                              Default 4.                                  */
    int min_level;         /* every block at least this level. Default 1 */
    double radius;         /* sphere radius, spheroid a1, ring radius R.
                              Default 0.25 (rings: 0.125).               */
    double eccentricity;   /* MacLaurin. Default 0.9.                    */
    double density;        /* sphere, spheroid. Default 1.               */
    double G;              /* for the exact potential. Default 1.        */
    double c1, c2;         /* rings. Defaults 227 and 20 (paper 002).   */
    int samples;           /* sub-cells per axis that measure the volume
                              of a cell the surface cuts (its density is
                              density x that fraction). Default 8.       */
} bn_mesh_ic_params;
BN_API bn_mesh_ic_params bn_mesh_ic_params_default(bn_mesh_problem problem);
BN_API const char *bn_mesh_problem_name(bn_mesh_problem p);
BN_API bn_status bn_mesh_problem_parse(const char *s, bn_mesh_problem *out); /* "sphere", "maclaurin",
                                                                                "vortex-rings" */
/* The mesh with variable "dens" (sphere, spheroid) or "vorx", "vory",
 * "vorz" (rings), 2:1 balanced as PARAMESH requires (neighbouring
 * leaves, edges and corners included, differ by at most one level). */
BN_API bn_status bn_mesh_ic_generate(const bn_mesh_ic_params *p, bn_mesh **out);
/* The exact field at x: gravity: phi, g_x, g_y, g_z (4 values; the
 * potential of the exact body, Chandrasekhar 1969 for the spheroid);
 * rings: psi x, y, z, u x, y, z (6 values), and the vorticity into
 * omega (3, may be NULL). */
BN_API bn_status bn_mesh_ic_exact(const bn_mesh_ic_params *p, const double x[3], double *out, double *omega);

/* A slice of variable `var` through the mesh at coordinate `coord` along
 * axis params->axis (NAN: the domain's middle), over the whole domain,
 * coloured linearly from its minimum to its maximum on the slice
 * (inferno), to a PNG (temporary file + rename). */
BN_API bn_status bn_mesh_render_slice(const char *path, const bn_mesh *m, const char *var, double coord,
                                      const bn_render_params *params);

/* ------------------------------------------------------------------ */
/* Potentials of fields: mesh cells and particles as sources            */
/* ------------------------------------------------------------------ */
typedef enum bn_field_kind {
    BN_FIELD_GRAVITY = 0,  /* scalar sources: density rho >= 0 (and
                              particle masses); phi = -G sum m / r,
                              g = -grad phi (variables gpot, gacx..z)  */
    BN_FIELD_VORTICITY = 1 /* three signed components omega; psi =
                              1/(4 pi) sum omega dV / r (Laplacian psi
                              = -omega, free space), and with velocity
                              u = curl psi (Biot-Savart): psix..z,
                              velx..z                                 */
} bn_field_kind;

typedef enum bn_field_method {
    BN_FIELD_TREE = 0,     /* Barnes-Hut over the cells (any AMR mesh)   */
    BN_FIELD_FFT = 1       /* uniform meshes: the convolution with the
                              same kernel (exact cubes within near_cells,
                              1/r beyond) by FFTs of the grid zero-padded
                              to twice its size (Hockney and Eastwood:
                              isolated boundaries); FFTW on the CPU,
                              cuFFT on the GPU, in double               */
} bn_field_method;

typedef struct bn_field_params {
    bn_field_kind kind;     /* Default BN_FIELD_GRAVITY.                 */
    bn_field_method method; /* Default BN_FIELD_TREE.                    */
    double G;               /* gravity's constant. Default 1.            */
    double theta;           /* opening angle: a cell of sources whose
                               radius a (about the centre of their box)
                               is below theta d, d the distance from the
                               target group's box, acts through its
                               multipoles (monopole, dipole, quadrupole
                               about that centre). Default 0.5.           */
    int velocity;           /* vorticity: also u = curl psi. Default 1.  */
    double smoothing;       /* vorticity: paper 002's smoothed kernel
                               (r^2 + 3/2 e^2) / (r^2 + e^2)^(3/2), e =
                               smoothing x the finest cell's side; 0: the
                               singular kernel with exact cubes near the
                               target (the default)                      */
    int near_cells;         /* mesh sources within this many of their own
                               cell sides of a target (in each axis) act
                               as the uniform cubes they are, exactly.
                               0..4. Default 1 (the cell and its 26
                               neighbours).                               */
    int leaf_size;          /* most sources in a leaf of the source tree.
                               Default 16.                               */
    bn_backend backend;     /* Default BN_BACKEND_AUTO.                  */
    int device;             /* or BN_DEVICE_AUTO. Default AUTO.          */
    char source_vars[64];   /* mesh variables of the sources: "dens" or
                               "vorx,vory,vorz" (the defaults by kind)   */
    double error_target;    /* E > 0: theta is chosen instead, the largest
                               of 1, 0.8, 0.65, 0.5, 0.4, 0.3, 0.2, 0.15,
                               0.1, 0.05 whose 99th percentile error on a
                               sample of 256 targets (against double
                               direct summation) is at most E: gravity
                               |a - a_ref| / |a_ref|, vorticity |psi -
                               psi_ref| / max |psi_ref|. 0: theta as
                               given (the default)                      */
} bn_field_params;
BN_API bn_field_params bn_field_params_default(bn_field_kind kind);
BN_API bn_status bn_field_params_validate(const bn_field_params *p);

typedef struct bn_field_stats {
    double t_sources, t_tree, t_moments, t_targets, t_walk, t_near, t_total; /* seconds: sources (GPU: with
                               their upload), tree, moments, targets, the
                               walk (lists and evaluation), the near field
                               (CPU: inside the walk), the whole call    */
    double t_download;      /* GPU: the results back to the host         */
    double n_pp, n_pc;      /* source-target and cell-target interactions */
    double n_near;          /* exact-cube pairs                          */
    size_t n_sources, n_targets;
    long n_nodes, n_groups;
    size_t device_bytes_peak;
    const char *backend;
    double theta;           /* used (an error target's choice)           */
    double sample_p99;      /* error target: the chosen theta's p99 on
                               the sample (0: no target)                 */
    double t_tuning;        /* seconds the choice took                   */
} bn_field_stats;

/* A reusable solver (device buffers kept between calls). */
typedef struct bn_field bn_field;
BN_API bn_status bn_field_create(bn_field **out, const bn_field_params *p);
BN_API void bn_field_free(bn_field *f);
BN_API bn_backend bn_field_backend(const bn_field *f);
BN_API const bn_field_stats *bn_field_stats_get(const bn_field *f);
/* The field of the mesh's source variables (and of the particles
 * `extra`, gravity only, may be NULL) at every leaf cell centre of m,
 * into m's variables gpot, gacx, gacy, gacz (gravity) or psix, psiy,
 * psiz and velx, vely, velz (vorticity), added if missing. */
BN_API bn_status bn_field_mesh(bn_field *f, bn_mesh *m, const bn_particles *extra);
/* The same field at n arbitrary points pos (xyz per point): out gets 4
 * values per point (phi, g_x, g_y, g_z; gravity) or 12 (psi xyz, then
 * the velocity xyz, then 6 zeros... see bn_field_point_values). m may be
 * NULL (particles only). */
BN_API bn_status bn_field_points(bn_field *f, const bn_mesh *m, const bn_particles *extra, size_t n,
                                 const double *pos, double *out);
/* Values per point of bn_field_points: 4 for gravity, 6 for vorticity
 * (psi x, y, z, u x, y, z). */
BN_API int bn_field_point_values(const bn_field_params *p);
/* Double-precision direct summation over every source, with the same
 * exact near cubes: the reference the tree is compared with. Same
 * outputs as bn_field_points (CPU). */
BN_API bn_status bn_field_direct(const bn_field_params *p, const bn_mesh *m, const bn_particles *extra, size_t n,
                                 const double *pos, double *out);

/* ------------------------------------------------------------------ */
/* Many processes (MPI)                                                 */
/* ------------------------------------------------------------------ */
/*
 * The processes (ranks) of one run. Built with MPI and started by a
 * launcher (mpirun), bn_comm_world() spans MPI_COMM_WORLD and initialises
 * MPI if the caller has not; otherwise it is this process alone, and
 * every collective below is a copy. No rank may assume it holds every
 * particle. (bn_comm is declared with bn_gravity_set_comm above.)
 */
BN_API bn_status bn_comm_world(bn_comm **out);
/* Finalises MPI when bn_comm_world initialised it and this was the last
 * communicator (collective). */
BN_API void bn_comm_free(bn_comm *c);
BN_API int bn_comm_rank(const bn_comm *c);
BN_API int bn_comm_size(const bn_comm *c);
/* 1 when this build has MPI. */
BN_API int bn_comm_have_mpi(void);
/* Collective: every rank passes its own status; all get BN_OK when every
 * rank succeeded, else the failure of the lowest failing rank with its
 * message ("rank R: ..."), so that a rank at fault stops all of them
 * with its reason, never a hang. */
BN_API bn_status bn_comm_agree(const bn_comm *c, bn_status local);

/*
 * Domains along the space-filling curve: rank r owns the keys in
 * [split[r], split[r+1]) of a cube common to all ranks (lo, side), cut so
 * that each holds an equal share of the particles' weights (their
 * measured cost; NULL: 1 each).
 */
typedef struct bn_domain {
    int nranks;
    uint64_t *split;   /* nranks + 1 key bounds (split[0] = 0, split[nranks] = 2^63) */
    double lo[3], side; /* the key cube, the same on every rank */
    bn_curve curve;
} bn_domain;

struct bn_domain_stats {
    double weight_local;      /* this rank's weight after the exchange      */
    double weight_max, weight_mean; /* over the ranks                       */
    double imbalance;         /* weight_max / weight_mean (1 = perfect)     */
    size_t sent, received;    /* particles to and from other ranks          */
    double t_total;           /* wall seconds                               */
};

/* Collective: cut the domains from every rank's particles p (weights w,
 * one per local particle, or NULL) and move each particle to its rank.
 * On return p holds this rank's particles in key order (acc/pot travel
 * when present); d (released with bn_domain_release) and st (may be NULL)
 * are filled. Fails on every rank when one fails. */
BN_API bn_status bn_domain_decompose(const bn_comm *c, bn_particles *p, const double *w, bn_curve curve, bn_domain *d,
                                     bn_domain_stats *st);
BN_API void bn_domain_release(bn_domain *d);
/* Collective: move each particle to the rank that owns its key under
 * d's cut, the cut kept (d from bn_domain_decompose, for these ranks).
 * After a drift only the particles that crossed the cut move; the rest
 * stay in their order and the received follow (in the senders' rank
 * order); work and messages in the crossers, keys in n. Without
 * it the crossers' tree nodes span the other ranks' regions and the
 * locally essential trees grow step by step (BENCHMARKS.md, session 20). */
BN_API bn_status bn_domain_update(const bn_comm *c, bn_particles *p, const double *w, const bn_domain *d,
                                  bn_domain_stats *st);
/* A copy of a cut (to->split allocated; bn_domain_release frees it). */
BN_API bn_status bn_domain_copy(const bn_domain *from, bn_domain *to);

#ifdef __cplusplus
}
#endif
#endif /* BANYAN_H */
