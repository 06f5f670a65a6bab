/* Before `banyan run` writes anything: is the planned run sane? A run
 * that would take more steps, log rows or snapshots than any real one
 * (t_end = 1e308, dt = 1e-300, an interval of 1e-300) is refused with the
 * numbers, instead of running until it is killed. */
#include <math.h>
#include "cli/run.h"
#include "core/error.h"

/* The eps of the step criterion (simulation.c: the softening, or 1e-3). */
static double step_eps(const bn_run_params *p) { return p->gravity.softening > 0 ? p->gravity.softening : 1e-3; }

double run_plan_dt_min(const bn_run_params *p, double t_start)
{
    if (p->integ.dt_min > 0) return p->integ.dt_min;
    double floor_dt = (p->t_end - t_start) / RUN_MAX_STEPS;
    /* block steps stop at their finest bin anyway: never refuse it */
    if (p->integ.time_bins >= 2) floor_dt = fmin(floor_dt, ldexp(p->integ.dt, -(p->integ.time_bins - 1)));
    return floor_dt;
}

bn_status run_plan_check(const bn_run_params *p, double t_start, double amax)
{
    const double span = p->t_end - t_start, dt_min = run_plan_dt_min(p, t_start);
    double dt = p->integ.dt;
    if (p->integ.eta > 0 && p->integ.time_bins == 0 && amax > 0)
        dt = fmin(dt, p->integ.eta * sqrt(step_eps(p) / amax));
    const double steps = span / dt;
    if (!(steps <= RUN_MAX_STEPS))
        return bn_fail(BN_ERR_PARAMETER, "TimeIntegration: from t = %g to t_end = %g in steps of %g (dt = %g, eta = %g) "
                       "is %.3g steps (more than %g): check t_end, dt and eta", t_start, p->t_end, dt, p->integ.dt,
                       p->integ.eta, steps, RUN_MAX_STEPS);
    if (dt < dt_min)
        return bn_fail(BN_ERR_PARAMETER, "TimeIntegration: the first step %g (dt = %g, eta = %g) is below dt_min = %g",
                       dt, p->integ.dt, p->integ.eta, dt_min);
    /* a first kick and drift that throw particles beyond any box */
    if (!(amax * dt * dt < BN_MAX_SPAN))
        return bn_fail(BN_ERR_ARGUMENT, "the first step %g with max|a| = %g moves particles by %g, beyond %g: the "
                       "forces are too large for this step (G = %g, softening %g)", dt, amax, amax * dt * dt,
                       BN_MAX_SPAN, p->gravity.G, p->gravity.softening);
    const double interval = p->energy_interval;
    const double rows = interval > 0 ? span / interval : steps;
    if (!(rows <= RUN_MAX_LOG_ROWS))
        return bn_fail(BN_ERR_PARAMETER, "Statistics:interval = %g: the energy log would get %.3g rows (more than %g; "
                       "0 means a row every step)", interval, rows, RUN_MAX_LOG_ROWS);
    return BN_OK;
}
