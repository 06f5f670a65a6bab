/* The domains' cut by measured time (Gravity:balance_cost time), as
 * Bonsai balances its domains by each process's measured compute time:
 * each rank's counted walk flops are scaled by its own measured walk
 * time per flop, so that a rank whose flops run slower than the count
 * says (its received trees' walk, its groups' shapes: the flop model's
 * misses) gives particles away at the next cut. The costs stay counted
 * flops; only the cut's weights are scaled. */
#ifndef BN_PARALLEL_BALANCE_H
#define BN_PARALLEL_BALANCE_H
#include "banyan.h"

/* This rank's factor for its particles' counted costs (sum `flops`,
 * whose walks took `seconds` of this rank's own time, waits for other
 * ranks excluded): the square root of its time per flop, sqrt(seconds /
 * flops) (a damped step: balance.c says why), normalised so that the
 * weights of every rank still add up to the counted flops.
 * 1 on every rank where some rank counted flops without a measured
 * time (a failed timer; a continued run cut before its first walk):
 * then the cut weighs work. A continued run that walked first scales
 * the restored costs (since the last cut) by the time since the restart
 * alone: a rate from fewer walks. A rank without flops gets 1 (it has
 * no weight to scale).
 * Collective: every rank gets its own factor. */
bn_status bn_balance_time_scale(const bn_comm *c, double seconds, double flops, double *scale);
#endif
