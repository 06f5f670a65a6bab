/* The CPU backend: particles stay in a host copy; forces by the CPU tree
 * code or direct summation; kick and drift with OpenMP; block time steps
 * (integrate/timebins.h) with a bin per particle. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/backend.h"
#include "core/error.h"
#include "gravity/gravity_cpu.h"
#include "integrate/integrate_cpu.h"
#include "parallel/comm.h"
#include "parallel/domain_parts.h"
#include "parallel/forces_dist.h"

typedef struct cpu_state {
    bn_gravity_params g;
    bn_particles *p;
    bn_tree_workspace *ws;
    double *acc_old;  /* |a| of the last evaluation, for the accel MAC */
    int have_forces;
    int have_tree;    /* the workspace's tree is of these particles      */
    uint8_t *bin;     /* block steps: each particle's bin; NULL: all 0   */
    bn_clock clock;   /* integrate/clock.h                               */
    bn_force_stats last_stats;
    const bn_comm *comm; /* several ranks: their particles are sources too */
    double *cost;     /* several ranks: each particle's walk flops since
                         the upload or the last costs() (backend.h)      */
    double walk_seconds; /* several ranks: the walks' own time (backend.h's
                         walk_seconds())                                 */
    double build_ahead; /* block steps' builds: backend.h's build_ahead()  */
    double cube_lo[3], cube_side; /* several ranks: backend.h's set_key_cube() */
} cpu_state;

/* Below this many particles a parallel region costs more than the loop
 * (as for bn_kick_cpu). */
#define BLOCK_KICK_PARALLEL_MIN 4096

static void cpu_destroy(void *st)
{
    cpu_state *s = st;
    if (!s) return;
    bn_particles_free(s->p);
    bn_tree_workspace_free(s->ws);
    free(s->acc_old);
    free(s->bin);
    free(s->cost);
    free(s);
}

static bn_status cpu_create(void **out, const bn_gravity_params *g)
{
    cpu_state *s = bn_calloc(1, sizeof *s, "CPU backend state");
    if (!s) return BN_ERR_NOMEM;
    s->g = *g;
    bn_status st = bn_tree_workspace_create(&s->ws);
    if (st != BN_OK) {
        cpu_destroy(s);
        return st;
    }
    *out = s;
    return BN_OK;
}

static bn_status remember_accel(cpu_state *s);

static bn_status cpu_upload(void *st, const bn_particles *p)
{
    cpu_state *s = st;
    bn_particles_free(s->p);
    s->p = NULL;
    free(s->acc_old);
    s->acc_old = NULL;
    free(s->bin);
    s->bin = NULL;
    free(s->cost); /* measured for the particles that were */
    s->cost = NULL;
    s->walk_seconds = 0;
    bn_tree_workspace_measure(s->ws, NULL);
    s->have_forces = 0;
    s->have_tree = 0;
    /* forces that come with the particles are theirs (a re-balance moves
     * them with the particles, bn_simulation_rebalance): the next step
     * starts from them instead of computing them again */
    const int with_forces = p->acc[0] && p->acc[1] && p->acc[2] && p->pot;
    BN_TRY(bn_particles_copy(&s->p, p));
    BN_TRY(bn_particles_ensure_forces(s->p));
    s->have_forces = with_forces;
    /* the accel criterion's old |a| is the forces' that came along (a
     * restart file's, a re-balance's): the first walk is the one an
     * unstopped run makes, bit for bit (without them it would use the
     * bonsai criterion, as after any other upload) */
    if (with_forces && s->g.mac == BN_MAC_ACCEL) BN_TRY(remember_accel(s));
    return BN_OK;
}

static bn_status cpu_download(void *st, bn_particles *out)
{
    cpu_state *s = st;
    bn_particles *tmp = NULL;
    BN_TRY(bn_particles_copy(&tmp, s->p));
    if (!s->have_forces) {
        for (int k = 0; k < 3; k++) {
            free(tmp->acc[k]);
            tmp->acc[k] = NULL;
        }
        free(tmp->pot);
        tmp->pot = NULL;
    }
    /* swap contents so that `out` keeps its address */
    bn_particles old = *out;
    *out = *tmp;
    *tmp = old;
    bn_particles_free(tmp);
    return BN_OK;
}

static bn_status remember_accel(cpu_state *s)
{
    if (!s->acc_old) {
        s->acc_old = bn_alloc((s->p->n + 1) * sizeof(double), "old accelerations"); /* a rank may hold none */
        if (!s->acc_old) return BN_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->p->n; i++) {
        double a2 = 0;
        for (int k = 0; k < 3; k++) a2 += s->p->acc[k][i] * s->p->acc[k][i];
        s->acc_old[i] = sqrt(a2);
    }
    return BN_OK;
}

/* One evaluation: of every particle (bin NULL) or of those in bins >=
 * bin_min; the tree is rebuilt when asked or when there is none, its
 * structure from the positions `lead` ahead (backend.h's build_ahead()). */
static bn_status evaluate(cpu_state *s, const uint8_t *bin, int bin_min, int rebuild, double lead)
{
    bn_tree_workspace_ahead(s->ws, lead); /* this evaluation's builds (tree/refresh_lag.h) */
    bn_tree_workspace_align(s->ws, s->cube_lo, s->cube_side);
    bn_force_stats *last = &s->last_stats;
    memset(last, 0, sizeof *last);
    last->backend = "cpu";
    const int ranks = bn_comm_size(s->comm);
    if (ranks > 1 && !s->cost) { /* the domains' weights (simulation.c) */
        s->cost = bn_calloc(s->p->n ? s->p->n : 1, sizeof *s->cost, "particle costs");
        BN_TRY(bn_comm_agree(s->comm, s->cost ? BN_OK : BN_ERR_NOMEM));
        bn_tree_workspace_measure(s->ws, s->cost);
    }
    if (s->g.method == BN_METHOD_DIRECT && ranks > 1) {
        BN_TRY(bn_direct_forces_dist_cpu(s->comm, s->p, s->g.G, s->g.softening, s->p->acc, s->p->pot, last));
    } else if (s->g.method == BN_METHOD_DIRECT) {
        BN_TRY(bn_direct_forces_cpu(s->p, s->g.G, s->g.softening, s->p->acc, s->p->pot));
        last->n_pp = (double)s->p->n * (double)(s->p->n - 1);
    } else {
        const double *old = (s->g.mac == BN_MAC_ACCEL && s->have_forces) ? s->acc_old : NULL;
        const int build = rebuild || !s->have_tree;
        s->have_tree = 0; /* a failed evaluation may leave half a tree */
        if (ranks > 1) {
            bn_let_stats let;
            BN_TRY(bn_tree_forces_dist_cpu(s->ws, s->comm, &s->g, s->p, old, bin, bin_min, build, s->p->acc,
                                           s->p->pot, last, &let));
            last->let_cells_sent = let.cells_sent;
            last->let_bodies_sent = let.bodies_sent;
            last->let_cells_received = let.cells_received;
            last->let_bodies_received = let.bodies_received;
            last->t_exchange = let.t_exchange;
            s->walk_seconds += fmax(0.0, last->t_walk - let.t_wait); /* t_walk holds the received step whole */
        } else
            BN_TRY(bn_tree_forces_active_cpu(s->ws, &s->g, s->p, old, bin, bin_min, build, s->p->acc, s->p->pot,
                                             last));
        s->have_tree = s->p->n > 0; /* a rank without particles keeps the last build's tree, of others */
    }
    s->have_forces = 1;
    /* agreed: a rank failing here alone would skip the next collective */
    if (s->g.mac == BN_MAC_ACCEL) BN_TRY(bn_comm_agree(s->comm, remember_accel(s)));
    return BN_OK;
}

static bn_status cpu_forces(void *st, bn_force_stats *stats)
{
    cpu_state *s = st;
    BN_TRY(evaluate(s, NULL, 0, 1, 0.0)); /* every particle's forces: built from x */
    if (stats) *stats = s->last_stats;
    return BN_OK;
}

static bn_status ensure_bins(cpu_state *s)
{
    if (!s->bin) s->bin = bn_calloc(s->p->n ? s->p->n : 1, sizeof *s->bin, "time bins");
    return s->bin ? BN_OK : BN_ERR_NOMEM;
}

/* Direct summation has nothing to save by skipping particles: it
 * computes them all. */
static bn_status cpu_forces_active(void *st, int bin_min, int rebuild)
{
    cpu_state *s = st;
    BN_TRY(bn_comm_agree(s->comm, ensure_bins(s))); /* before the collective evaluation */
    return evaluate(s, s->g.method == BN_METHOD_DIRECT ? NULL : s->bin, bin_min, rebuild, s->build_ahead);
}

static bn_status cpu_stats(void *st, bn_force_stats *stats)
{
    *stats = ((cpu_state *)st)->last_stats;
    return BN_OK;
}

static bn_status cpu_finish(void *st)
{
    (void)st;
    return BN_OK;
}

static bn_status cpu_kick(void *st, double dt)
{
    cpu_state *s = st;
    bn_kick_cpu(s->p, dt);
    return BN_OK;
}

static bn_status cpu_drift(void *st, double dt)
{
    cpu_state *s = st;
    bn_drift_cpu(s->p, dt);
    return BN_OK;
}

/* v += h a, written as bn_kick_cpu writes it, so that a block step
 * rounds as the shared step of the same length does. */
static void kick_one(bn_particles *p, long i, double h)
{
    for (int k = 0; k < 3; k++) p->vel[k][i] += h * p->acc[k][i];
}

/* The block kick of one active particle; returns its (new) bin. */
static int block_kick_one(bn_particles *p, uint8_t *bin, long i, const bn_block_kick *k)
{
    int b = bin[i];
    if (k->close) kick_one(p, i, bn_time_bin_half_step(b, k->n_bins, k->tick));
    if (k->open) {
        const double a2 = p->acc[0][i] * p->acc[0][i] + p->acc[1][i] * p->acc[1][i] + p->acc[2][i] * p->acc[2][i];
        b = bn_time_bin(bn_time_step_wanted(k, a2, p->pot[i]), k->tick, k->n_bins, k->bin_min);
        bin[i] = (uint8_t)b;
        kick_one(p, i, bn_time_bin_half_step(b, k->n_bins, k->tick));
    }
    return b;
}

/* max_bin is 0 when no particle is active. */
static bn_status cpu_block_kick(void *st, const bn_block_kick *k, int *max_bin, long *n_kicked)
{
    cpu_state *s = st;
    if (k->n_bins < 1 || k->n_bins > BN_TIME_BINS_MAX || k->bin_min < 0 || k->bin_min >= k->n_bins)
        return bn_fail(BN_ERR_ARGUMENT, "block kick: active bins from %d of %d", k->bin_min, k->n_bins);
    BN_TRY(ensure_bins(s));
    bn_particles *p = s->p;
    uint8_t *bin = s->bin;
    const long n = (long)p->n;
    int bmax = 0;
    long count = 0;
#pragma omp parallel for schedule(static) reduction(max : bmax) reduction(+ : count) \
    if (n >= BLOCK_KICK_PARALLEL_MIN)
    for (long i = 0; i < n; i++) {
        if (bin[i] < k->bin_min) continue;
        const int b = block_kick_one(p, bin, i, k);
        bmax = b > bmax ? b : bmax;
        count++;
    }
    if (max_bin) {
        *max_bin = bmax;
        if (n_kicked) *n_kicked = count;
    }
    return BN_OK;
}

static bn_status cpu_max_accel(void *st, double *amax)
{
    cpu_state *s = st;
    *amax = bn_max_accel_cpu(s->p);
    return BN_OK;
}

/* Several ranks: every rank's sums, added in rank order (the same bits for
 * the same ranks), the centre of mass from the summed first moments. */
static bn_status cpu_energies(void *st, bn_energies *e)
{
    cpu_state *s = st;
    BN_TRY(bn_energies_compute(s->p, e));
    return bn_comm_reduce_energies(s->comm, bn_particles_total_mass(s->p), e);
}

/* The forces of the clock's step: nothing when it is idle; with block
 * steps those of its active bins. */
static bn_status cpu_step_forces(cpu_state *s, const bn_step_rule *r)
{
    if (!s->clock.live) return BN_OK;
    if (r->n_bins == 0) return evaluate(s, NULL, 0, 1, 0.0); /* shared steps build from x */
    return cpu_forces_active(s, s->clock.bin_min, r->rebuild);
}

/* Several ranks step together: every decision of the clock (the shared
 * step's length, the next tick and its active bins, rebuilds) must come
 * from the same numbers on every rank. The shared step's max |a| is the
 * largest over the ranks. */
static bn_status shared_amax(cpu_state *s, const bn_step_rule *r)
{
    s->clock.amax = r->eta > 0 ? bn_max_accel_cpu(s->p) : 0;
    if (r->eta > 0 && bn_comm_size(s->comm) > 1) BN_TRY(bn_comm_allreduce(s->comm, &s->clock.amax, 1, BN_REDUCE_MAX));
    return BN_OK;
}

/* After a block kick: the finest bin over the ranks (the next tick) and
 * the particles kicked on all of them. */
static bn_status agree_kick(cpu_state *s, bn_clock *c)
{
    if (bn_comm_size(s->comm) <= 1) return BN_OK;
    double bin = c->max_bin, count = c->n_active;
    BN_TRY(bn_comm_allreduce(s->comm, &bin, 1, BN_REDUCE_MAX));
    BN_TRY(bn_comm_allreduce(s->comm, &count, 1, BN_REDUCE_SUM));
    c->max_bin = (int)bin;
    c->n_active = (int)count;
    return BN_OK;
}

static bn_status cpu_clock_stage(void *st, const bn_step_rule *r, bn_clock_stage stage)
{
    cpu_state *s = st;
    bn_clock *c = &s->clock;
    if (stage == BN_STAGE_SHARED_PLAN) BN_TRY(shared_amax(s, r));
    if (bn_clock_apply(c, r, stage)) return BN_OK;
    switch (stage) {
    case BN_STAGE_HALF_KICK:
        if (c->live) bn_kick_cpu(s->p, 0.5 * c->dt);
        return BN_OK;
    case BN_STAGE_DRIFT:
        if (c->live) bn_drift_cpu(s->p, c->dt);
        return BN_OK;
    case BN_STAGE_BLOCK_KICK: {
        if (!c->kick_on) return BN_OK;
        long kicked = 0;
        BN_TRY(bn_comm_agree(s->comm, cpu_block_kick(s, &c->kick, &c->max_bin, &kicked)));
        c->n_active = (int)kicked;
        return agree_kick(s, c);
    }
    case BN_STAGE_FORCES: return cpu_step_forces(s, r);
    default: return bn_fail(BN_ERR_ARGUMENT, "clock stage %d unknown", (int)stage);
    }
}

static bn_status cpu_clock_read(void *st, bn_clock *c)
{
    *c = ((cpu_state *)st)->clock;
    return BN_OK;
}

static bn_status cpu_clock_write(void *st, const bn_clock *c)
{
    ((cpu_state *)st)->clock = *c;
    return BN_OK;
}

static bn_status cpu_set_params(void *st, const bn_gravity_params *g)
{
    cpu_state *s = st;
    s->g = *g;
    s->have_tree = 0; /* leaf size, criterion, theta: another tree */
    return BN_OK;
}

/* The sample in the host order, by bn_direct_reference (OpenMP); over
 * several ranks, in the order of every rank's particles in rank order,
 * the reference summed over them all (forces_dist.h). */
static bn_status cpu_sample_forces(void *st, size_t n, uint64_t seed, double *acc_ref, double *pot_ref, double *acc,
                                   double *pot)
{
    cpu_state *s = st;
    if (bn_comm_size(s->comm) > 1) {
        BN_TRY(bn_comm_agree(s->comm, s->have_forces ? BN_OK : bn_fail(BN_ERR_ARGUMENT, "error sample: no forces")));
        return bn_sample_forces_dist_cpu(s->comm, s->p, s->g.G, s->g.softening, n, seed, acc_ref, pot_ref, acc,
                                         pot);
    }
    if (!s->have_forces || n == 0 || n > s->p->n)
        return bn_fail(BN_ERR_ARGUMENT, "error sample: %zu targets of %zu particles%s", n, s->p->n,
                       s->have_forces ? "" : " without forces");
    size_t *idx = bn_alloc(n * sizeof *idx, "error sample");
    if (!idx) return BN_ERR_NOMEM;
    for (size_t j = 0; j < n; j++) {
        idx[j] = bn_sample_target(seed, j, n, s->p->n);
        for (int k = 0; k < 3; k++) acc[3 * j + k] = s->p->acc[k][idx[j]];
        pot[j] = s->p->pot[idx[j]];
    }
    const bn_status r = bn_direct_reference(s->p, s->g.G, s->g.softening, idx, n, acc_ref, pot_ref);
    free(idx);
    return r;
}

/* The CPU inspects the inputs in one pass of its own (it copies the
 * whole set: the integrator's upload). */
static bn_status cpu_upload_positions(void *st, const bn_particles *p, bn_input_summary *sum)
{
    BN_TRY(bn_summarize_particles(p, sum));
    return cpu_upload(st, p);
}

static bn_status cpu_download_forces(void *st, bn_particles *out, size_t *first_bad)
{
    cpu_state *s = st;
    if (!s->have_forces || out->n != s->p->n)
        return bn_fail(BN_ERR_INTERNAL, "download_forces: no forces for %zu particles", out->n);
    BN_TRY(bn_particles_ensure_forces(out));
    for (int k = 0; k < 3; k++) memcpy(out->acc[k], s->p->acc[k], out->n * sizeof(double));
    memcpy(out->pot, s->p->pot, out->n * sizeof(double));
    *first_bad = bn_particles_forces_first_bad(out);
    return BN_OK;
}

static void cpu_set_key_cube(void *st, const double lo[3], double side)
{
    cpu_state *s = (cpu_state *)st;
    for (int k = 0; k < 3; k++) s->cube_lo[k] = side > 0 ? lo[k] : 0.0;
    s->cube_side = side > 0 ? side : 0.0;
}

static bn_status cpu_set_comm(void *st, const bn_comm *c)
{
    ((cpu_state *)st)->comm = c;
    return BN_OK;
}

/* The crossers to their ranks (backend.h's migrate()): the particles
 * live here, bn_domain_update moves them with their forces, measured
 * costs and bins; what was made for the old order (tree, old |a|) is
 * made again. */
static bn_status cpu_migrate(void *st, bn_particles *host, const bn_domain *cut, bn_domain_stats *ds)
{
    cpu_state *s = st;
    /* block steps' bins travel along, on every rank or none (a rank
     * without holds all its particles in bin 0) */
    double bins = s->bin ? 1.0 : 0.0;
    BN_TRY(bn_comm_allreduce(s->comm, &bins, 1, BN_REDUCE_MAX));
    if (bins > 0) BN_TRY(bn_comm_agree(s->comm, ensure_bins(s)));
    /* costs on every rank or none, as the bins */
    double costs = s->cost ? 1.0 : 0.0;
    BN_TRY(bn_comm_allreduce(s->comm, &costs, 1, BN_REDUCE_MAX));
    if (costs > 0 && !s->cost) s->cost = bn_calloc(s->p->n ? s->p->n : 1, sizeof *s->cost, "particle costs");
    BN_TRY(bn_comm_agree(s->comm, costs > 0 && !s->cost ? BN_ERR_NOMEM : BN_OK));
    BN_TRY(bn_domain_update_tagged(s->comm, s->p, s->cost ? &s->cost : NULL, s->bin ? &s->bin : NULL, cut, ds));
    s->have_tree = 0;
    bn_tree_workspace_measure(s->ws, s->cost); /* the costs moved with their particles (maybe to a new array) */
    free(s->acc_old); /* the old |a| of the new order, from the forces that came along */
    s->acc_old = NULL;
    if (s->have_forces && s->g.mac == BN_MAC_ACCEL) BN_TRY(bn_comm_agree(s->comm, remember_accel(s)));
    /* the mirror is stale (the simulation downloads it when it needs it)
     * but its count is the set's: what the simulation sizes by */
    return host ? bn_particles_resize(host, s->p->n) : BN_OK;
}

static bn_status cpu_costs(void *st, double *out, double *total, int *measured)
{
    cpu_state *s = st;
    *measured = s->cost != NULL;
    *total = 0;
    if (!s->cost) return BN_OK;
    for (size_t i = 0; i < s->p->n; i++) *total += s->cost[i];
    if (!out) return BN_OK;
    memcpy(out, s->cost, s->p->n * sizeof *out);
    memset(s->cost, 0, s->p->n * sizeof *s->cost);
    return BN_OK;
}

static void cpu_build_ahead(void *st, double tau) { ((cpu_state *)st)->build_ahead = tau; }

static bn_status cpu_walk_seconds(void *st, double *seconds, int restart)
{
    cpu_state *s = st;
    *seconds = s->walk_seconds;
    if (restart) s->walk_seconds = 0;
    return BN_OK;
}

/* The bins as they are; a count that is not the uploaded one is the
 * caller's mistake (a restart file of another set). */
static bn_status check_bin_count(const cpu_state *s, size_t n)
{
    const size_t have = s->p ? s->p->n : 0;
    if (n == have) return BN_OK;
    return bn_fail(BN_ERR_ARGUMENT, "time bins: %zu given for %zu particles", n, have);
}

static bn_status cpu_bins_read(void *st, uint8_t *out, size_t n)
{
    cpu_state *s = st;
    BN_TRY(check_bin_count(s, n));
    if (s->bin) memcpy(out, s->bin, n);
    else memset(out, 0, n);
    return BN_OK;
}

static bn_status cpu_bins_write(void *st, const uint8_t *in, size_t n)
{
    cpu_state *s = st;
    BN_TRY(check_bin_count(s, n));
    BN_TRY(ensure_bins(s));
    memcpy(s->bin, in, n);
    return BN_OK;
}

static bn_status cpu_costs_set(void *st, const double *in, size_t n)
{
    cpu_state *s = st;
    if (n != s->p->n) return bn_fail(BN_ERR_INTERNAL, "costs: %zu given for %zu particles", n, s->p->n);
    double *c = bn_alloc((n ? n : 1) * sizeof *c, "particle costs");
    if (!c) return BN_ERR_NOMEM;
    memcpy(c, in, n * sizeof *c);
    free(s->cost);
    s->cost = c;
    bn_tree_workspace_measure(s->ws, s->cost);
    return BN_OK;
}

static bn_status cpu_tree_save(void *st, void **bytes, size_t *size)
{
    cpu_state *s = st;
    *bytes = NULL;
    *size = 0;
    /* a rank without particles keeps its last build's tree: none of these */
    return s->have_tree ? bn_tree_workspace_save(s->ws, s->p->n, bytes, size) : BN_OK;
}

static bn_status cpu_tree_load(void *st, const void *bytes, size_t size)
{
    cpu_state *s = st;
    s->have_tree = 0;
    BN_TRY(bn_tree_workspace_load(s->ws, bytes, size, &s->g, s->p));
    s->have_tree = 1;
    return BN_OK;
}

const bn_backend_ops bn_cpu_backend_ops = {
    "cpu", cpu_create, cpu_destroy, cpu_upload, cpu_download, cpu_forces, cpu_stats, cpu_finish,
    cpu_kick, cpu_drift, cpu_forces_active, cpu_block_kick, cpu_max_accel, cpu_energies,
    cpu_clock_stage, cpu_clock_read, cpu_clock_write, cpu_set_params, cpu_sample_forces,
    cpu_upload_positions, cpu_download_forces, cpu_set_comm, cpu_costs, NULL, cpu_migrate, cpu_bins_read, cpu_bins_write,
    cpu_costs_set, cpu_tree_save, cpu_tree_load, cpu_walk_seconds, cpu_build_ahead, cpu_set_key_cube,
};
