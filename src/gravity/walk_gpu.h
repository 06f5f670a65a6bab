/*
 * The GPU walk and the GPU direct summation: the contract between the
 * GPU backend (src/core/backend_cuda.cu, which builds the tree) and the
 * force kernels (src/gravity/walk_cuda.cu, direct_cuda.cu). CUDA sources
 * only.
 */
#ifndef BN_WALK_GPU_H
#define BN_WALK_GPU_H
#include <cuda_runtime.h>
#include "banyan.h"
#include "tree/tree_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bn_walk_source; /* walk_cpu.h */

/* Device scratch of the walk, sized from the problem (bodies, groups,
 * nodes), never from the number of multiprocessors alone. Opaque. */
typedef struct bn_gpu_walk_scratch bn_gpu_walk_scratch;
bn_status bn_gpu_walk_scratch_create(bn_gpu_walk_scratch **out);
void bn_gpu_walk_scratch_free(bn_gpu_walk_scratch *s);
/* Device bytes the walk needs for a tree of this size (for the memory
 * check that says how many particles would fit). */
size_t bn_gpu_walk_bytes(int n_bodies, int n_groups, int n_nodes);

/* Forces on every body of t, in key order: out[i] = (ax, ay, az, phi),
 * G included, self term removed. With stats, waits for the walk and
 * puts the interaction counts in stats->n_pp, n_pc, n_far; with NULL
 * nothing comes back to the host. Deterministic: no floating-point
 * atomics. */
bn_status bn_gpu_walk(const bn_gpu_tree *t, const bn_gravity_params *g, float4 *out, bn_gpu_walk_scratch *s,
                      bn_force_stats *stats, cudaStream_t stream);
/* Block time steps: the targets of a walk. Only the groups
 * groups[0 .. *count) are walked (device arrays, made on the device by
 * bn_gpu_active_groups), and of their bodies only those with
 * bin[i] >= *bin_min (bins per body, key order; bin_min a device int: the
 * clock's, decided on the device, or the backend's copy of a host value)
 * are written; the others keep their forces. groups NULL: every group
 * and body.
 * live not NULL: the walk does nothing when *live is 0 (an idle step).
 * cost not NULL (several ranks: the domains' weights, backend.h's
 * costs()): each walked target's flops (interact.h's counts: its lists,
 * its chunk's far cells shared) are ADDED to its cost at its uploaded
 * index orig[i] (each body is one lane's: no atomics, the same sums every
 * time). cost_visit: the flops a cell visited by a chunk's breadth-wise
 * walk is charged as, shared by its targets (the traversal, which the
 * interaction counts leave out: BN_COST_VISIT unless the host sets
 * another). */
/* flops a visited cell is charged as (BANYAN_COST_VISIT): interact.h's
 * BN_FLOPS_VISIT, so that the domains' weights follow the walks' time,
 * not only their interactions */
#define BN_COST_VISIT ((float)BN_FLOPS_VISIT)
typedef struct bn_gpu_active {
    const int *groups;
    const int *count;
    const uint8_t *bin;
    const int *bin_min;
    const int *live;
    float *cost;
    const int *orig;
    float cost_visit;
} bn_gpu_active;
/* bn_gpu_walk for the active targets only (act NULL: all of them). */
bn_status bn_gpu_walk_active(const bn_gpu_tree *t, const bn_gravity_params *g, const bn_gpu_active *act,
                             float4 *out, bn_gpu_walk_scratch *s, bn_force_stats *stats, cudaStream_t stream);
/* The counts of the last walk (waits for it). */
bn_status bn_gpu_walk_counts(bn_gpu_walk_scratch *s, bn_force_stats *stats, cudaStream_t stream);

/* All-pairs forces of n bodies (x, y, z as hi in body, lo in body_lo,
 * bn_gpu_split; m in body.w), single precision, in the units of
 * tree_gpu.h (positions times len_scale, masses times mass_scale; eps in
 * the user's): out[i] = (ax, ay, az, phi) in the user's units, G
 * included, the self pair left out. */
bn_status bn_gpu_direct(const float4 *body, const float4 *body_lo, int n, double G, double eps, double len_scale,
                        double mass_scale, float4 *out, cudaStream_t stream);
/* The same for the targets [t0, t0 + nt) among ns sources (the bodies
 * of every rank, this rank's from t0): out[i - t0] for target i, each
 * target's own pair left out by index. variant: 0 (the fastest for eps),
 * else a kernel of bn_gpu_direct_variant's test. */
bn_status bn_gpu_direct_targets(const float4 *body, const float4 *body_lo, int ns, int t0, int nt, double G,
                                double eps, double len_scale, double mass_scale, float4 *out, cudaStream_t stream,
                                int variant);

/* Another tree's sources (another rank's locally essential tree,
 * parallel/let.h) on the device, in the frame and units of the local
 * tree whose targets walk it: coms and bodies hi + lo relative to the
 * local ref times len_scale, masses times mass_scale, quadrupoles and
 * M l^2 (without G) in those units as node_quad0/1 hold them, the
 * opening radius squared in quad1.z (negative: a cell sent closed, never
 * opened). One device block per source (bn_gpu_source_free). */
typedef struct bn_gpu_source {
    int n_cells, n_bodies;
    int stack_need;         /* the deepest walk stack it can need (walk_remote.h) */
    double len_scale, mass_scale; /* the units it was made for           */
    float4 *com, *com_lo, *quad0, *quad1;
    int2 *child;            /* first child, child count (0: a leaf)     */
    int2 *body;             /* a leaf's first body, body count          */
    float4 *pos, *pos_lo;   /* bodies: hi and mass; lo                  */
    void *block;            /* the one allocation behind the arrays     */
    unsigned long long *counts; /* walk counters: pp, pc, far, overflow,
                                   cells visited (breadth-wise, costs) */
} bn_gpu_source;

/* Check src (bn_remote_check: the message names what is malformed or too
 * deep for the walk's stack), upload it once and convert it on the device
 * to local's frame: ref_device (3 doubles on the device: the backend's
 * frame->ref, which moves with every build and is never read back), or
 * NULL to take local->ref (a tree whose host copy of ref is current).
 * G: the gravitational constant src's gml2 includes. Stream-ordered: the
 * conversion runs after whatever is queued on stream (the moments stage
 * that sets ref). An empty source (n_cells 0) allocates nothing. */
bn_status bn_gpu_source_upload(const struct bn_walk_source *src, const bn_gpu_tree *local,
                               const double *ref_device, double G, bn_gpu_source *out, cudaStream_t stream);
/* A checked src staged on the device (walk_remote.h's layout: *staged,
 * bn_cuda_free on stream; NULL for an empty source), *n_cells and
 * *n_bodies its counts: what a LET message holds after its two counts. */
bn_status bn_gpu_source_stage(const struct bn_walk_source *src, uint64_t **staged, int *n_cells, int *n_bodies,
                              cudaStream_t stream);
/* k trees staged on the device (staged[i]: n_cells[i] > 0 cells and
 * n_bodies[i] bodies, checked: bn_gpu_let_check or bn_gpu_source_stage)
 * as one source, in local's frame (its host ref) on stream: a root that
 * every group opens over their roots (at 1 .. k), then each tree's other
 * cells and its bodies, in order. One walk then takes every received
 * tree: one pass over the local groups, one far-field expansion each
 * (issue 18: on 4 GPUs three walks of the received trees took 50 ms for
 * 10% more interactions than one GPU's walk). Its stack need is not
 * known: the walk fails where it would overflow its stack. k = 0: an
 * empty source. */
bn_status bn_gpu_source_merge(const uint64_t *const *staged, const int *n_cells, const int *n_bodies, int k,
                              const bn_gpu_tree *local, double G, bn_gpu_source *out, cudaStream_t stream);
void bn_gpu_source_free(bn_gpu_source *s, cudaStream_t stream);

/* The field of src ADDED to out for the targets of local's groups (act:
 * the active groups and bodies as for bn_gpu_walk_active; NULL: all),
 * G included, in the user's units: the walk of bn_tree_walk_remote_cpu
 * (bn_walk_opens' test on the group's box, cells beyond the group
 * expansion distance through one expansion per group, interact.h's
 * float math as in bn_gpu_walk) for one warp per group, depth first.
 * src must have been made for local's units. Deterministic: no
 * floating-point atomics, each body's sum in one lane in a fixed order.
 * With stats, waits, ADDS the interaction counts to stats->n_pp, n_pc,
 * n_far, and fails if a walk ran out of stack (bn_gpu_source_upload
 * refuses such trees: only a corrupted source could). */
bn_status bn_gpu_walk_remote(const bn_gpu_tree *local, const bn_gpu_source *src, const bn_gravity_params *g,
                             const bn_gpu_active *act, float4 *out, bn_force_stats *stats, cudaStream_t stream);

/* The received trees' far field per box (issue 18: their walk was its
 * traversal; 1800 cells a group on 4 GPUs, three quarters of them far
 * cells that the neighbouring groups take too). A box is a run of
 * groups_per_box consecutive groups (key order: neighbours), its bounds
 * their boxes'. One warp per box walks src from its root with the box
 * for a group: the cells every target of the box accepts beyond twice
 * the box's expansion distance (BN_WALK_BOX_RATIO: the expansion is
 * evaluated up to the box's corners, farther from its centre than a
 * group's targets from theirs) go into one expansion about the box's
 * centre; the nodes every group of the box opens are opened; every other
 * cell goes to the box's frontier, from which each group's walk then
 * starts instead of the root, adding the box's expansion at its targets.
 * A group accepts no cell it would have opened (the tests at the box's
 * nearest and farthest points, with margins of a few ulp), and takes any
 * cell it would have accepted as that cell or as its children (more
 * terms, never fewer). A box whose frontier outgrows cap cells has count
 * -1: its groups walk from the root, as they all do where the boxes'
 * memory is not to be had. Only where every group is walked (not block
 * steps' active lists) and the group expansion is on. The costs: each
 * target its box's far cells' and visits' share (share). */
typedef struct bn_gpu_box_far {
    int n_boxes, groups_per_box, cap; /* n_boxes 0: none (the plain walk) */
    int *front;                       /* box b's frontier: front[b cap ..] */
    int *count;                       /* its length; -1: overflowed        */
    float4 *local;                    /* box b's expansion: 5 float4 from
                                         local[5 b], BN_LOCAL_FIELDS order */
    float4 *center;                   /* its centre (local's frame, w 0)  */
    float *share;                     /* with costs: each target's share of
                                         its box's far cells and visits
                                         (flops), else NULL              */
    int *order;                       /* or NULL: the groups in the order
                                         the received walk takes them, the
                                         largest boxes first (by octaves
                                         of size, key order within one) */
    unsigned long long *group_time;   /* or NULL (a tracing aid,
                                         BANYAN_REMOTE_GROUP_TIMES=1): each
                                         group's start and end in the main
                                         pass, the device's ns clock     */
} bn_gpu_box_far;
/* The boxes of local's groups over src (out->n_boxes 0 where not
 * applicable, or BANYAN_REMOTE_BOX_GROUPS=0); far cells and visits
 * (with act's costs) added to counts[2], counts[4]; the order, unless
 * BANYAN_REMOTE_ORDER=key (a tuning aid: the groups in key order; the
 * largest groups' walks, the longest, then end the kernel with the GPU
 * nearly idle: on 4 GPUs one rank's received walk took half as long
 * again as the others' for fewer interactions). Queued on stream. */
bn_status bn_gpu_box_far_make(const bn_gpu_tree *local, const bn_gpu_source *src, const bn_gravity_params *g,
                              const bn_gpu_active *act, unsigned long long *counts, bn_gpu_box_far *out,
                              cudaStream_t stream);
void bn_gpu_box_far_free(bn_gpu_box_far *b, cudaStream_t stream);

/* The received walk's chunks of 32 targets walked apart (device
 * memory, bn_gpu_chunk_queue_make): a group whose walk would overflow the
 * main pass's stack or outran its budget hands its chunks to the queue
 * (items[0 .. counts[0])), each (group << 32 | first body in it), ~0 until
 * written; warps of the main pass that have walked their groups take
 * them (counts[1]: how many taken), each chunk with its own box; a chunk
 * that overflows there goes to deep[0 .. counts[2]). The deep pass walks
 * those and the chunks left untaken. cap: room in items and in deep (a
 * group's chunks at most: bodies / 32 + groups). */
typedef struct bn_gpu_chunk_queue {
    unsigned long long *items, *deep;
    int *counts; /* pushed, taken, deep */
    long long cap;
    int take;    /* 1: the main pass's warps take chunks; 0 (a testing
                    aid, BANYAN_REMOTE_QUEUE_TAKE=0): all go to the deep
                    pass (a chunk's forces are the same bits either way) */
} bn_gpu_chunk_queue;
bn_status bn_gpu_chunk_queue_make(const bn_gpu_tree *local, bn_gpu_chunk_queue *q, cudaStream_t stream);
void bn_gpu_chunk_queue_free(bn_gpu_chunk_queue *q, cudaStream_t stream);

/* The breadth-wise walk of bn_gpu_walk (walk_cuda.cu) over src's cells
 * and bodies instead of local's own, for local's groups (act as above),
 * ADDED to out; the interaction counts added to counts[0..3). A group
 * whose walk would overflow the stack (a received node has no bodies to
 * fall back on) or outrun the budget (bn_walk_remote_budget) writes
 * nothing and hands its chunks to q (above). boxes (NULL or none: from
 * the root): each group starts from its box's frontier and adds its
 * box's expansion. Used by bn_gpu_walk_remote. */
bn_status bn_gpu_walk_sources(const bn_gpu_tree *local, const bn_gpu_source *src, const bn_gravity_params *g,
                              const bn_gpu_active *act, const bn_gpu_box_far *boxes, float4 *out,
                              unsigned long long *counts, const bn_gpu_chunk_queue *q, cudaStream_t stream);

/* The chunks bn_gpu_walk_sources left in q (untaken, or overflowed
 * there) walked as it does, with a stack of BN_WALK_DEEP_STACK cells, a
 * warp each, each chunk with its own box (within its group's: the
 * frontier holds); a chunk that would overflow even this walks depth
 * first from the root. */
bn_status bn_gpu_walk_sources_deep(const bn_gpu_tree *local, const bn_gpu_source *src, const bn_gravity_params *g,
                                   const bn_gpu_active *act, const bn_gpu_box_far *boxes, float4 *out,
                                   unsigned long long *counts, const bn_gpu_chunk_queue *q, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include "gravity/interact.h"
/* The fields every walk's arguments share (bn_walk_args, bn_remote_args):
 * the targets t, units, criterion, output and active set, from g. */
template <typename Args>
inline void bn_gpu_walk_common(Args *a, const bn_gpu_tree *t, const bn_gravity_params *g, const bn_gpu_active *act,
                               float4 *out)
{
    a->t = *t;
    const bn_gpu_units u = bn_gpu_units_of(g->G, g->softening, t->len_scale, t->mass_scale);
    a->eps2 = u.eps2;
    a->acc_unit = u.acc_unit;
    a->pot_unit = u.pot_unit;
    const double kt = g->group_expansion * g->theta;
    a->far_kt2 = (float)(kt * kt);
    a->accel_mac = g->mac == BN_MAC_ACCEL;
    a->quadrupole = g->quadrupole != 0;
    a->soft = a->eps2 > 0.f;
    a->out = out;
    a->act = act ? *act : bn_gpu_active{NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0.f};
}
/* One target's share of a chunk's walk (interact.h's flops): pp and pc
 * sources evaluated for it, far cells and cells visited of the chunk (nt
 * targets) shared, and the expansion's evaluation at it when the chunk
 * had one. Added to the target's cost at its uploaded index. */
__device__ inline void bn_gpu_charge(const bn_gpu_active &act, int body, long long pp, long long pc, long long far,
                                     long long visits, int nt, bool expansion)
{
    const float share = BN_FLOPS_PP * (float)pp + BN_FLOPS_PC * (float)pc +
                        (BN_FLOPS_FAR * (float)far + act.cost_visit * (float)visits) / (float)nt +
                        (expansion ? (float)BN_FLOPS_FAR_EVAL : 0.f);
    act.cost[act.orig[body]] += share;
}
#endif
#endif
