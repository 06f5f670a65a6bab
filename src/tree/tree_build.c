/* Stage 4: the sparse octree, top-down and level by level (Bonsai, paper
 * 003 sec. 4.2.1). The bodies are sorted by key and the top 3L bits of a
 * key name its level-L cell, so the bodies of every cell are a contiguous
 * range and its children's ranges are found by binary search for the 8
 * possible values of the next 3 key bits. Per level:
 *   1. count: each node of the level with > leaf_size bodies (below the
 *      deepest level) counts its non-empty octants; the others are leaves
 *   2. scan: exclusive scan of the counts = where each node's children go
 *   3. write: each splitting node writes its children contiguously
 * The next level is the children just written. Nothing depends on the
 * order nodes are handled in within a level, so each pass is a parallel
 * for (one GPU thread per node). */
#include "core/error.h"
#include "tree/tree_cpu.h"

/* Shift that brings the 3 key bits of level `level` (1..21) down. */
static inline int level_shift(int level) { return 3 * (BN_KEY_MAX_LEVEL - level); }

/* First index in keys[lo, hi) whose key is >= k (keys ascending). */
static int lower_bound(const uint64_t *keys, int lo, int hi, uint64_t k)
{
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (keys[mid] < k) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Body ranges of the 8 octants of a level-L node: octant o holds
 * [edge[o], edge[o+1]). */
static void octant_edges(const bn_tree *t, int node, int level, int edge[9])
{
    const int f = t->first_body[node], e = f + t->n_bodies[node];
    const int sh = level_shift(level + 1);
    /* the node's key prefix, lower bits cleared (the root's is 0) */
    const uint64_t base = level == 0 ? 0 : (t->keys[f] >> level_shift(level)) << level_shift(level);
    edge[0] = f;
    edge[8] = e;
    for (int o = 1; o < 8; o++) edge[o] = lower_bound(t->keys, edge[o - 1], e, base | ((uint64_t)o << sh));
}

static int splits(const bn_tree *t, int node, int level, int leaf_size)
{
    return level < BN_KEY_MAX_LEVEL && t->n_bodies[node] > leaf_size;
}

/* Pass 1: number of children of each node of [s, e) into t->scan. */
static void count_children(bn_tree *t, int s, int e, int level, int leaf_size)
{
#pragma omp parallel for schedule(static)
    for (int i = s; i < e; i++) {
        int c = 0;
        if (splits(t, i, level, leaf_size)) {
            int edge[9];
            octant_edges(t, i, level, edge);
            for (int o = 0; o < 8; o++) c += edge[o + 1] > edge[o];
        }
        t->scan[i - s] = c;
    }
}

/* Pass 2: exclusive scan of the counts (sequential here; CUB on the GPU). */
int bn_tree_exclusive_scan(int32_t *a, int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++) {
        int c = a[i];
        a[i] = sum;
        sum += c;
    }
    return sum;
}

/* Pass 3: write the children of [s, e) from position `next`. */
static void write_children(bn_tree *t, int s, int e, int level, int leaf_size, int next)
{
#pragma omp parallel for schedule(static)
    for (int i = s; i < e; i++) {
        t->first_child[i] = -1;
        t->n_children[i] = 0;
        if (!splits(t, i, level, leaf_size)) continue;
        int edge[9], c = next + t->scan[i - s];
        octant_edges(t, i, level, edge);
        t->first_child[i] = c;
        for (int o = 0; o < 8; o++) {
            if (edge[o + 1] == edge[o]) continue;
            t->first_body[c] = edge[o];
            t->n_bodies[c] = edge[o + 1] - edge[o];
            t->level[c] = (uint8_t)(level + 1);
            c++;
        }
        t->n_children[i] = c - t->first_child[i];
    }
}

bn_status bn_tree_build(bn_tree *t, int leaf_size)
{
    if (t->n == 0) return bn_fail(BN_ERR_ARGUMENT, "tree build: no particles");
    if (leaf_size < 1) return bn_fail(BN_ERR_ARGUMENT, "tree build: leaf_size must be >= 1, got %d", leaf_size);
    BN_TRY(bn_tree_reserve_nodes(t, 1));
    t->first_body[0] = 0;
    t->n_bodies[0] = (int32_t)t->n;
    t->level[0] = 0;
    t->level_start[0] = 0;
    t->level_start[1] = 1;
    int level = 0;
    for (;; level++) {
        const int s = t->level_start[level], e = t->level_start[level + 1];
        count_children(t, s, e, level, leaf_size);
        const int n_next = bn_tree_exclusive_scan(t->scan, e - s);
        BN_TRY(bn_tree_reserve_nodes(t, e + n_next)); /* keeps t->scan */
        write_children(t, s, e, level, leaf_size, e);
        if (n_next == 0) break; /* always by level 21: level_start has 23 entries */
        t->level_start[level + 2] = e + n_next;
    }
    t->n_levels = level + 1;
    t->n_nodes = t->level_start[t->n_levels];
    int leaves = 0;
#pragma omp parallel for reduction(+ : leaves) schedule(static)
    for (int i = 0; i < t->n_nodes; i++) leaves += t->n_children[i] == 0;
    t->n_leaves = leaves;
    return BN_OK;
}
