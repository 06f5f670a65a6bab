/*
 * THE table of run parameters: the one place that names every section and
 * key with its type, default, range, documentation and the condition under
 * which it has an effect. Parsing (params.c, params_yaml.c), validation,
 * used/unused_parameters.yml and examples/default.yml (params_write.c) all
 * read it. Defaults of the Gravity and TimeIntegration keys equal those of
 * bn_gravity_params_default() / bn_integrator_params_default() (a test
 * checks it), except Gravity:softening, which suits a run rather than a
 * force-accuracy test.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>
#include "core/error.h"
#include "core/limits.h"
#include "integrate/timebins.h"
#include "io/params.h"

/* --- enumerations as int-valued choices --------------------------------- */
#define BN_CHOICE_WRAPPERS(tag, type, namefn, parsefn)                                 \
    static const char *tag##_name(int v) { return namefn((type)v); }                  \
    static bn_status tag##_parse(const char *s, int *v)                              \
    {                                                                                  \
        type t;                                                                        \
        BN_TRY(parsefn(s, &t));                                                        \
        *v = (int)t;                                                                   \
        return BN_OK;                                                                  \
    }
BN_CHOICE_WRAPPERS(model, bn_ic_model, bn_ic_model_name, bn_ic_model_parse)
BN_CHOICE_WRAPPERS(method, bn_method, bn_method_name, bn_method_parse)
BN_CHOICE_WRAPPERS(mac, bn_mac, bn_mac_name, bn_mac_parse)
BN_CHOICE_WRAPPERS(curve, bn_curve, bn_curve_name, bn_curve_parse)
BN_CHOICE_WRAPPERS(backend, bn_backend, bn_backend_name, bn_backend_parse)
BN_CHOICE_WRAPPERS(cost, bn_tune_cost, bn_tune_cost_name, bn_tune_cost_parse)
BN_CHOICE_WRAPPERS(criterion, bn_step_criterion, bn_step_criterion_name, bn_step_criterion_parse)

static const bn_param_choices model_choices = {BN_IC_UNIFORM_CUBE + 1, model_name, model_parse};
static const bn_param_choices method_choices = {BN_METHOD_DIRECT + 1, method_name, method_parse};
static const bn_param_choices mac_choices = {BN_MAC_BONSAI_BOX + 1, mac_name, mac_parse};
static const bn_param_choices curve_choices = {BN_CURVE_MORTON + 1, curve_name, curve_parse};
static const bn_param_choices backend_choices = {BN_BACKEND_GPU + 1, backend_name, backend_parse};
static const bn_param_choices cost_choices = {BN_TUNE_WORK + 1, cost_name, cost_parse};
static const bn_param_choices criterion_choices = {BN_STEP_DYNAMICAL + 1, criterion_name, criterion_parse};

/* --- when a parameter has no effect (for unused_parameters.yml) --------- */
static const char *if_generated(const bn_run_params *p)
{
    return p->ic_file[0] ? "InitialConditions:file is set: the particles are read, not generated" : NULL;
}
static const char *if_model(const bn_run_params *p, bn_ic_model m)
{
    static _Thread_local char why[96];
    const char *g = if_generated(p);
    if (g) return g;
    if (p->ic.model == m) return NULL;
    snprintf(why, sizeof why, "only used by model %s", bn_ic_model_name(m));
    return why;
}
static const char *if_uniform_sphere(const bn_run_params *p) { return if_model(p, BN_IC_UNIFORM_SPHERE); }
static const char *if_uniform_cube(const bn_run_params *p) { return if_model(p, BN_IC_UNIFORM_CUBE); }
static const char *if_halo(const bn_run_params *p)
{
    const char *g = if_generated(p);
    if (g) return g;
    return (p->ic.model == BN_IC_HERNQUIST || p->ic.model == BN_IC_NFW) ? NULL : "only used by models hernquist and nfw";
}
static const char *if_tree(const bn_run_params *p)
{
    return p->gravity.method == BN_METHOD_TREE ? NULL : "only used by method tree";
}
static const char *if_accel_mac(const bn_run_params *p)
{
    const char *t = if_tree(p);
    if (t) return t;
    return p->gravity.mac == BN_MAC_ACCEL ? NULL : "only used by mac accel";
}
static const char *if_target(const bn_run_params *p)
{
    const char *t = if_tree(p);
    if (t) return t;
    return p->gravity.error_target > 0 ? NULL : "only used with an error target (error_target > 0)";
}
static const char *if_not_cpu(const bn_run_params *p)
{
    return p->gravity.backend == BN_BACKEND_CPU ? "backend is cpu" : NULL;
}
static const char *if_block_tree(const bn_run_params *p)
{
    const char *t = if_tree(p);
    if (t) return t;
    return p->integ.time_bins > 0 ? NULL : "only used with block time steps (time_bins > 0)";
}
static const char *if_self_tuned(const bn_run_params *p)
{
    const char *t = if_block_tree(p);
    if (t) return t;
    return p->integ.tree_rebuild == 0 ? NULL : "only used with tree_rebuild 0 (self-tuned)";
}
static const char *if_block(const bn_run_params *p)
{
    return p->integ.time_bins >= 2 ? NULL : "only used with block time steps (time_bins >= 2)";
}
static const char *if_render(const bn_run_params *p) { return p->render ? NULL : "Snapshots:render is no"; }

/* --- the table ------------------------------------------------------------ */
#define OFF(field) offsetof(bn_run_params, field)
#define ANY -INFINITY, INFINITY
#define POSITIVE 0, INFINITY, BN_PF_LO_OPEN
#define NONNEGATIVE 0, INFINITY, 0

const bn_param_section bn_param_sections[] = {
    {"InitialConditions", "The particles at the start: a generated model, or a snapshot file."},
    {"Gravity", "Force computation: constant, softening, method and tree settings, backend."},
    {"TimeIntegration", "Kick-drift-kick leapfrog, with one shared time step or block (hierarchical) steps."},
    {"Snapshots", "HDF5 snapshots (GADGET-4 layout) and the picture of the last state."},
    {"Statistics", "Energy log: energies, momenta and the relative energy error."},
    {"Restart", "Restart files: the whole state of a run, to continue it with `banyan run --restart DIR`."},
};
const int bn_param_section_count = (int)(sizeof bn_param_sections / sizeof bn_param_sections[0]);

const bn_param_desc bn_param_table[] = {
    /* InitialConditions */
    {"InitialConditions", "file", BN_PT_STRING, OFF(ic_file), "", ANY, 0, NULL, NULL,
     "HDF5 snapshot to start from (GADGET-4/SWIFT layout); its Time is the start time. "
     "Empty: generate `model` and start at time 0."},
    {"InitialConditions", "model", BN_PT_CHOICE, OFF(ic.model), "plummer", ANY, 0, &model_choices, if_generated,
     "Model to generate (Henon units for plummer: M = 1, G = 1, E = -1/4)."},
    {"InitialConditions", "n", BN_PT_SIZE, OFF(ic.n), "16384", 1, 1099511627776.0, 0, NULL, if_generated,
     "Number of particles to generate (2^k accepted)."},
    {"InitialConditions", "seed", BN_PT_U64, OFF(ic.seed), "1", 0, 1.8446744073709552e19, 0, NULL, if_generated,
     "Random seed: the same seed gives bit-identical particles whatever the thread count."},
    {"InitialConditions", "virial_ratio", BN_PT_DOUBLE, OFF(ic.virial_ratio), "0", NONNEGATIVE, NULL,
     if_uniform_sphere, "uniform-sphere: virial ratio 2T/|W| (0: cold collapse)."},
    {"InitialConditions", "truncation", BN_PT_DOUBLE, OFF(ic.truncation), "0", NONNEGATIVE, NULL, if_halo,
     "hernquist, nfw: truncation radius in scale radii (0: the model's default, hernquist 100, nfw 10)."},
    {"InitialConditions", "half_size", BN_PT_DOUBLE, OFF(ic.cube_half_size), "3", POSITIVE, NULL,
     if_uniform_cube, "uniform-cube: half side of the cube [-half_size, half_size]^3."},
    {"InitialConditions", "mass_spread", BN_PT_BOOL, OFF(ic.mass_spread), "no", ANY, 0, NULL, if_uniform_cube,
     "uniform-cube: masses uniform in [0, 1/N) instead of equal masses 1/N."},
    /* Gravity */
    {"Gravity", "G", BN_PT_DOUBLE, OFF(gravity.G), "1", POSITIVE, NULL, NULL,
     "Gravitational constant (1 in N-body units)."},
    {"Gravity", "softening", BN_PT_DOUBLE, OFF(gravity.softening), "0.01", NONNEGATIVE, NULL, NULL,
     "Plummer softening length eps: phi = -G m / sqrt(r^2 + eps^2). The run default 0.01 suits a "
     "few 10^4 particles with dt = 1/128 (eps = 0.001, the library's and `banyan forces`' default for "
     "force-accuracy tests, makes close encounters too fast for that step)."},
    {"Gravity", "method", BN_PT_CHOICE, OFF(gravity.method), "tree", ANY, 0, &method_choices, NULL,
     "Force method: Barnes-Hut tree, or direct summation (exact, O(N^2))."},
    {"Gravity", "theta", BN_PT_DOUBLE, OFF(gravity.theta), "0.5", 0, 2, 0, NULL, if_tree,
     "Opening angle of the bonsai and bh criteria (smaller: more accurate, slower)."},
    {"Gravity", "mac", BN_PT_CHOICE, OFF(gravity.mac), "bonsai", ANY, 0, &mac_choices, if_tree,
     "Opening criterion: bonsai (d > l/theta + delta), bh (l/d < theta), accel (relative "
     "acceleration, tolerance accel_alpha; the first evaluation uses bonsai), bonsai-box (bonsai with "
     "l and delta from the bounding box of the cell's bodies instead of its octant)."},
    {"Gravity", "accel_alpha", BN_PT_DOUBLE, OFF(gravity.accel_alpha), "0.001", POSITIVE, NULL, if_accel_mac,
     "Tolerance alpha of the accel criterion: G M l^2 / d^4 <= alpha |a_old|."},
    {"Gravity", "quadrupole", BN_PT_BOOL, OFF(gravity.quadrupole), "yes", ANY, 0, NULL, if_tree,
     "Cells act with monopole + quadrupole (yes) or monopole only (no)."},
    {"Gravity", "group_expansion", BN_PT_DOUBLE, OFF(gravity.group_expansion), "0.2", 0, 1, 0, NULL, if_tree,
     "kappa: an accepted cell farther than r_g / (kappa theta) from the centre of a group (r_g: half "
     "the diagonal of its box) acts on the whole group through one second-order Taylor expansion "
     "about that centre instead of on each particle. 0: off. 0.2 moves the median error by a few percent "
     "(p99 by up to 15% at theta 0.5) and takes 60-75% of the particle-cell work off the walk; larger "
     "values err more where groups are wide (sparse regions, small N): check with banyan bench --check."},
    {"Gravity", "leaf_size", BN_PT_INT, OFF(gravity.leaf_size), "16", 1, BN_LEAF_SIZE_MAX, 0, NULL, if_tree,
     "Most particles in a tree leaf."},
    {"Gravity", "group_size", BN_PT_INT, OFF(gravity.group_size), "64", 1, BN_GROUP_SIZE_MAX, 0, NULL, if_tree,
     "Most particles in a group that walks the tree together."},
    {"Gravity", "curve", BN_PT_CHOICE, OFF(gravity.curve), "hilbert", ANY, 0, &curve_choices, if_tree,
     "Space-filling curve that orders the particles."},
    {"Gravity", "error_target", BN_PT_DOUBLE, OFF(gravity.error_target), "0", 0, 1, BN_PF_HI_OPEN, NULL, if_tree,
     "Ask for an error instead of theta and friends: the 99th percentile of |a - a_ref| / |a_ref| to hold "
     "(a_ref: double direct summation). banyan chooses theta, mac (bonsai or bonsai-box), leaf_size, group_size "
     "and group_expansion, the fastest it measures that meet it on a sample of targets, before the first step, "
     "and checks it every error_check_interval steps (re-tuning when the sample's p99 leaves [E/4, E]). Those "
     "of the five set in this file or by -P keep their values (explicit settings win). The choice and the "
     "measured error go to the energy log and the snapshots' /Parameters. 0: off, the settings are used as "
     "given."},
    {"Gravity", "error_check_interval", BN_PT_INT, OFF(gravity.error_check_interval), "64", 0, 1e9, 0, NULL,
     if_target, "Steps between checks of the error against a fresh sample (0: only at the start)."},
    {"Gravity", "error_sample", BN_PT_INT, OFF(gravity.error_sample), "512", BN_ERROR_SAMPLE_MIN, BN_ERROR_SAMPLE_MAX, 0, NULL, if_target,
     "Targets of the sample (double direct summation over every particle, on the backend)."},
    {"Gravity", "error_cost", BN_PT_CHOICE, OFF(gravity.error_cost), "time", ANY, 0, &cost_choices, if_target,
     "What the search minimises: time (the measured evaluation time: the fastest settings, which can differ "
     "from run to run where two are close) or work (the interactions counted: the same choice, and so the "
     "same bits, every run)."},
    {"Gravity", "balance_cost", BN_PT_CHOICE, OFF(gravity.balance_cost), "work", ANY, 0, &cost_choices, NULL,
     "Several ranks: what the domains' cut weighs. work: each particle's counted walk flops (the same cut, and "
     "bits, every run). time: those flops scaled per rank by the square root of its measured walk time per "
     "flop, as Bonsai balances by measured time, damped (the cut follows the time where the count misses it, "
     "as on the received trees' walk; cuts, and so bits, differ from run to run; a continued run's first cut "
     "takes its rate from the walks since the restart). On 4 H100s: weak Plummer's steps 76% efficient against 73% by work, strong the same "
     "(BENCHMARKS.md, session 29)."},
    {"Gravity", "backend", BN_PT_CHOICE, OFF(gravity.backend), "auto", ANY, 0, &backend_choices, NULL,
     "Where forces are computed: auto (the GPU when one is usable, else the CPU), cpu or gpu."},
    {"Gravity", "device", BN_PT_INT, OFF(gravity.device), "-1", BN_DEVICE_AUTO, BN_DEVICE_MAX, 0, NULL, if_not_cpu,
     "CUDA device ordinal; -1: each rank its node's GPU (its node-local rank modulo the GPUs it sees: one rank per "
     "GPU under mpirun), 0 in one process."},
    /* TimeIntegration */
    {"TimeIntegration", "t_end", BN_PT_DOUBLE, OFF(t_end), "1", ANY, 0, NULL, NULL,
     "Time at which the run stops (after the start time)."},
    {"TimeIntegration", "dt", BN_PT_DOUBLE, OFF(integ.dt), "0.0078125", POSITIVE, NULL, NULL,
     "Shared time step (the largest one when eta > 0). Steps are shortened to land on output times."},
    {"TimeIntegration", "eta", BN_PT_DOUBLE, OFF(integ.eta), "0", NONNEGATIVE, NULL, NULL,
     "Adaptive shared step dt = min(dt, eta sqrt(eps / max|a|)), eps = Gravity:softening (0.001 when "
     "that is 0); 0: fixed step dt. With time_bins >= 2 the criterion is per particle, eta sqrt(eps / |a_i|)."},
    {"TimeIntegration", "dt_min", BN_PT_DOUBLE, OFF(integ.dt_min), "0", NONNEGATIVE, NULL, NULL,
     "Shortest time step allowed (SWIFT's dt_min, GADGET's MinSizeTimestep): a step the criterion makes shorter "
     "stops the run with an error, as does dt (or the finest block step dt / 2^(time_bins - 1)) below it. "
     "0: (t_end - start) / 1e10, so that no run plans more than 1e10 steps."},
    {"TimeIntegration", "time_bins", BN_PT_INT, OFF(integ.time_bins), "0", 0, BN_TIME_BINS_MAX, 0, NULL, NULL,
     "Block (hierarchical) time steps with this many bins: particle i steps dt / 2^b, b in 0..time_bins-1 the "
     "coarsest with dt / 2^b <= eta sqrt(eps / |a_i|) (needs eta > 0); a step computes the forces of the "
     "particles that end their step then. dt is the longest step (a cycle, shortened to land on output times; "
     "outputs happen at cycle ends). 0: one shared step."},
    {"TimeIntegration", "criterion", BN_PT_CHOICE, OFF(integ.criterion), "acceleration", ANY, 0, &criterion_choices,
     if_block,
     "Block steps: what chooses a particle's step: acceleration, eta sqrt(eps / |a_i|) (GADGET, GOTHIC), or "
     "dynamical, eta sqrt(|phi_i|) / |a_i| (the local dynamical time, independent of the softening; phi the "
     "potential, 0 at infinity: isolated systems). The same eta means other steps under each: dynamical 0.005-0.01 "
     "is about acceleration 0.15-0.3. On disk galaxies (M31) dynamical reaches each energy error with fewer "
     "forces; on spheres (Plummer, Hernquist, NFW) acceleration does as well or better."},
    {"TimeIntegration", "tree_rebuild", BN_PT_INT, OFF(integ.tree_rebuild), "0", 0, BN_TREE_REBUILD_MAX, 0, NULL, if_block_tree,
     "Block steps: rebuild the tree every this many steps (and at the end of each cycle); in between it is "
     "refreshed (moments and boxes of the moved particles, same structure; a refresh whose groups have "
     "scattered is refused and the tree rebuilt). 0 (the default): self-tuned from measured costs, as GOTHIC "
     "does: rebuild every 2^m steps, at the steps whose first active bin is at most the finest occupied bin - m "
     "(those with the most active particles), m chosen by measuring whole block-step cycles at the best m so "
     "far and at a neighbour (weighed as rebuild_cost says); refreshes that turn dear (a collapse) give way to "
     "rebuilding at every step at once. On Plummer, Hernquist, NFW, a cold collapse and M31 at 2^22 it was "
     "1.6-12.5% faster than rebuilding at every step (BENCHMARKS.md session 31). 1: every step. A build whose "
     "tree is refreshed takes its cells from the positions half its refreshes ahead (x + tau v), so that its "
     "refreshes' force errors cancel in energy (before, the energy drifted 2.1x as fast on M31 at 2^22 over "
     "1 Gyr; BENCHMARKS.md, sessions 28-29)."},
    {"TimeIntegration", "rebuild_cost", BN_PT_CHOICE, OFF(integ.rebuild_cost), "work", ANY, 0, &cost_choices,
     if_self_tuned,
     "What the self-tuned rebuild (tree_rebuild 0) weighs: work (the walk's counted work: its flops from the "
     "interaction counts and the cells it visited, 430 flops each, and a rebuild's 6100 a particle; the same "
     "rebuilds, and bits, every run; on M31 at 2^22 it chose the same rebuilds as the timed rule, BENCHMARKS.md "
     "session 31) or time (the measured times of the walk and of the build or refresh: rebuilds may fall at "
     "other steps from run to run, so runs are not bit-reproducible)."},
    /* Snapshots */
    {"Snapshots", "directory", BN_PT_STRING, OFF(snap_dir), ".", ANY, BN_PF_NONEMPTY, NULL, NULL,
     "Directory of the snapshots, relative to --output-dir unless absolute (created if missing)."},
    {"Snapshots", "basename", BN_PT_STRING, OFF(snap_basename), "snapshot", ANY, BN_PF_NONEMPTY, NULL, NULL,
     "Snapshot files are BASENAME_NNNN.hdf5, numbered from 0000 in time order."},
    {"Snapshots", "times", BN_PT_LIST, OFF(snap_times), "[]", ANY, 0, NULL, NULL,
     "Times of snapshots, e.g. [0.5, 1, 2] (between the start time and t_end)."},
    {"Snapshots", "interval", BN_PT_DOUBLE, OFF(snap_interval), "0", NONNEGATIVE, NULL, NULL,
     "Also a snapshot every `interval` from the start time; 0: none."},
    {"Snapshots", "final", BN_PT_BOOL, OFF(snap_final), "yes", ANY, 0, NULL, NULL,
     "Also a snapshot at t_end."},
    {"Snapshots", "per_rank", BN_PT_BOOL, OFF(snap_per_rank), "no", ANY, 0, NULL, NULL,
     "Under mpirun: every rank writes its own particles to its own file of each snapshot (BASENAME_NNNN.R.hdf5, "
     "GADGET-4's NumFilesPerSnapshot = ranks; any file of the set reads the whole snapshot) and reads its share "
     "of a split InitialConditions:file, so that no rank holds every particle. no: rank 0 gathers every particle "
     "into one file. One process always writes one file."},
    {"Snapshots", "render", BN_PT_BOOL, OFF(render), "yes", ANY, 0, NULL, NULL,
     "Render the projected log density of the last state to a PNG picture."},
    {"Snapshots", "render_file", BN_PT_STRING, OFF(render_file), "final.png", ANY, BN_PF_NONEMPTY, NULL,
     if_render, "Name of the picture, relative to --output-dir unless absolute (its directory is created if "
     "missing)."},
    /* Statistics */
    {"Statistics", "energy_file", BN_PT_STRING, OFF(energy_file), "energy.txt", ANY, BN_PF_NONEMPTY, NULL, NULL,
     "Energy log (time, kinetic, potential, total, |E-E0|/|E0|, |P|, |L|, wall time), relative to "
     "--output-dir unless absolute (its directory is created if missing)."},
    {"Statistics", "interval", BN_PT_DOUBLE, OFF(energy_interval), "0.0625", NONNEGATIVE, NULL, NULL,
     "Time between rows of the energy log; 0: every step. Between rows (and snapshots) the steps run "
     "in batches that wait for nothing: with 0 the host waits for the device at every step."},
    /* Restart */
    {"Restart", "interval", BN_PT_DOUBLE, OFF(restart_interval), "60", NONNEGATIVE, NULL, NULL,
     "Minutes of wall time between restart files; 0: none during the run. One is written at the end "
     "and on SIGTERM or SIGUSR1 (then the run stops cleanly, exit code 0)."},
    {"Restart", "keep", BN_PT_INT, OFF(restart_keep), "2", 1, 1000, 0, NULL, NULL,
     "How many restart files to keep (the newest; an older one is the fallback when the newest is "
     "damaged)."},
    {"Restart", "dir", BN_PT_STRING, OFF(restart_dir), "restart", ANY, BN_PF_NONEMPTY, NULL, NULL,
     "Directory of the restart files, relative to --output-dir unless absolute."},
};
const int bn_param_count = (int)(sizeof bn_param_table / sizeof bn_param_table[0]);
_Static_assert(sizeof bn_param_table / sizeof bn_param_table[0] <= BN_PARAM_MAX, "raise BN_PARAM_MAX");

const bn_param_desc *bn_param_find(const char *section, const char *key)
{
    for (int i = 0; i < bn_param_count; i++)
        if (!strcmp(bn_param_table[i].section, section) && !strcmp(bn_param_table[i].key, key))
            return &bn_param_table[i];
    return NULL;
}

int bn_param_section_index(const char *section)
{
    for (int i = 0; i < bn_param_section_count; i++)
        if (!strcmp(bn_param_sections[i].name, section)) return i;
    return -1;
}

void bn_param_section_keys(const char *section, char *buf, size_t size)
{
    if (size) buf[0] = '\0';
    for (int i = 0; i < bn_param_count; i++) {
        if (strcmp(bn_param_table[i].section, section)) continue;
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", len ? ", " : "", bn_param_table[i].key);
    }
}
