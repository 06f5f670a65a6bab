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
    double v[3] = {timed ? 1.0 : 0.0, flops > 0 ? flops : 0.0, timed && flops > 0 ? seconds : 0.0};
    BN_TRY(bn_comm_allreduce(c, v, 1, BN_REDUCE_MIN));
    BN_TRY(bn_comm_allreduce(c, v + 1, 2, BN_REDUCE_SUM));
    if (!(v[0] > 0) || !(v[1] > 0) || !(v[2] > 0) || !(flops > 0)) return BN_OK;
    const double f = (seconds / flops) * (v[1] / v[2]);
    if (isfinite(f) && f > 0) *scale = f;
    return BN_OK;
}
