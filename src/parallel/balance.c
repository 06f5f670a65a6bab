/* The domains' cut by measured time (balance.h). */
#include <math.h>
#include "core/error.h"
#include "parallel/balance.h"
#include "parallel/comm.h"

bn_status bn_balance_time_scale(const bn_comm *c, double seconds, double flops, double *scale)
{
    if (!scale) return bn_fail(BN_ERR_ARGUMENT, "bn_balance_time_scale: scale is NULL");
    *scale = 1.0;
    const int timed = !(flops > 0) || (isfinite(seconds) && seconds > 0 && isfinite(flops));
    double ok = timed ? 1.0 : 0.0;
    BN_TRY(bn_comm_allreduce(c, &ok, 1, BN_REDUCE_MIN));
    if (!(ok > 0)) return BN_OK; /* every rank the same answer: work */
    /* half the measured rate's step (its square root): a rank's time per
     * flop is partly its domain's, not its particles' (session 29: the
     * full step moved 15% of the slowest rank's particles and made it the
     * fastest, on 4 GPUs), so the cuts approach the balance instead of
     * swinging across it */
    const double rate = flops > 0 ? sqrt(seconds / flops) : 0.0;
    double v[2] = {flops > 0 ? flops : 0.0, flops > 0 ? flops * rate : 0.0};
    BN_TRY(bn_comm_allreduce(c, v, 2, BN_REDUCE_SUM));
    if (!(v[0] > 0) || !(v[1] > 0) || !(flops > 0)) return BN_OK;
    const double f = rate * (v[0] / v[1]); /* the scaled weights add up to the counted flops */
    if (isfinite(f) && f > 0) *scale = f;
    return BN_OK;
}
