/* Allocation of the CPU tree's arrays: bodies sized to n, nodes grown
 * level by level as the build discovers them (the node count is not known
 * before the build; growing by half again keeps the copies O(total)). */
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include "tree/tree_cpu.h"

void bn_tree_release(bn_tree *t)
{
    if (!t) return;
    free(t->keys);
    free(t->order);
    for (int k = 0; k < 3; k++) free(t->pos[k]);
    free(t->mass);
    free(t->tmp_keys);
    free(t->tmp_order);
    free(t->first_child);
    free(t->n_children);
    free(t->first_body);
    free(t->n_bodies);
    free(t->level);
    free(t->center);
    free(t->size);
    free(t->mass_node);
    free(t->com);
    free(t->quad);
    free(t->delta);
    free(t->body_lo);
    free(t->body_hi);
    free(t->open_radius);
    free(t->group_first);
    free(t->group_count);
    free(t->group_lo);
    free(t->group_hi);
    free(t->scan);
    memset(t, 0, sizeof *t);
}

/* realloc *p to count elements of size bytes; on failure *p is kept. */
static bn_status grow(void *pp, size_t count, size_t size, const char *what)
{
    void **p = pp;
    const size_t bytes = count * size;
    void *q = realloc(*p, bytes > 0 ? bytes : 1);
    if (!q) return bn_fail(BN_ERR_NOMEM, "tree: cannot allocate %zu %s (%zu bytes)", count, what, count * size);
    *p = q;
    return BN_OK;
}

bn_status bn_tree_reserve_bodies(bn_tree *t, size_t n)
{
    if (n > (size_t)INT32_MAX) return bn_fail(BN_ERR_ARGUMENT, "tree: %zu particles exceed the limit of 2^31 - 1", n);
    if (n <= t->body_capacity) return BN_OK;
    BN_TRY(grow(&t->keys, n, sizeof(uint64_t), "keys"));
    BN_TRY(grow(&t->tmp_keys, n, sizeof(uint64_t), "keys"));
    BN_TRY(grow(&t->order, n, sizeof(uint32_t), "order entries"));
    BN_TRY(grow(&t->tmp_order, n, sizeof(uint32_t), "order entries"));
    for (int k = 0; k < 3; k++) BN_TRY(grow(&t->pos[k], n, sizeof(double), "sorted positions"));
    BN_TRY(grow(&t->mass, n, sizeof(double), "sorted masses"));
    t->body_capacity = n;
    return BN_OK;
}

bn_status bn_tree_reserve_nodes(bn_tree *t, int nodes)
{
    if (nodes <= t->capacity) return BN_OK;
    size_t cap = (size_t)nodes + (size_t)nodes / 2 + 64;
    BN_TRY(grow(&t->first_child, cap, sizeof(int32_t), "nodes"));
    BN_TRY(grow(&t->n_children, cap, sizeof(int32_t), "nodes"));
    BN_TRY(grow(&t->first_body, cap, sizeof(int32_t), "nodes"));
    BN_TRY(grow(&t->n_bodies, cap, sizeof(int32_t), "nodes"));
    BN_TRY(grow(&t->level, cap, sizeof(uint8_t), "nodes"));
    BN_TRY(grow(&t->center, 3 * cap, sizeof(double), "node centres"));
    BN_TRY(grow(&t->size, cap, sizeof(double), "nodes"));
    BN_TRY(grow(&t->mass_node, cap, sizeof(double), "nodes"));
    BN_TRY(grow(&t->com, 3 * cap, sizeof(double), "node centres of mass"));
    BN_TRY(grow(&t->quad, 6 * cap, sizeof(double), "node quadrupoles"));
    BN_TRY(grow(&t->delta, cap, sizeof(double), "nodes"));
    BN_TRY(grow(&t->body_lo, 3 * cap, sizeof(double), "node boxes"));
    BN_TRY(grow(&t->body_hi, 3 * cap, sizeof(double), "node boxes"));
    BN_TRY(grow(&t->open_radius, cap, sizeof(double), "nodes"));
    BN_TRY(grow(&t->scan, cap, sizeof(int32_t), "scan entries"));
    t->capacity = (int)cap;
    t->scan_capacity = (int)cap;
    return BN_OK;
}
