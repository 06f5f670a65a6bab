/* Before `banyan run` writes anything: is the planned run sane? A run
 * that would take more steps, log rows or snapshots than any real one
 * (t_end = 1e308, dt = 1e-300, an interval of 1e-300) is refused with the
 * numbers, instead of running until it is killed. */
#include <math.h>
#include "cli/run.h"
#include "core/error.h"

/* The eps of the step criterion (simulation.c: the softening, or 1e-3). */
static double step_eps(const bn_run_params *p) { return p->gravity.softening > 0 ? p->gravity.softening : 1e-3; }

/* The shortest interval the run's clock can tell from zero: RUN_MIN_ULPS
 * units in the last place of the largest time it meets. At t = 1e15 a step
 * of 1/128 leaves t + dt == t and the run would never end. */
static double time_resolution(const bn_run_params *p, double t_start)
{
    const double t = fmax(fabs(t_start), fabs(p->t_end));
    return RUN_MIN_ULPS * (nextafter(t, INFINITY) - t);
}

double run_plan_dt_min(const bn_run_params *p, double t_start)
{
    if (p->integ.dt_min > 0) return fmax(p->integ.dt_min, time_resolution(p, t_start));
    double floor_dt = fmax((p->t_end - t_start) / RUN_MAX_STEPS, time_resolution(p, t_start));
    /* block steps stop at their finest bin anyway: never refuse it */
    if (p->integ.time_bins >= 2) floor_dt = fmin(floor_dt, ldexp(p->integ.dt, -(p->integ.time_bins - 1)));
    return floor_dt;
}

/* The finest step against the clock's resolution, and block steps' worst case (every particle in the finest
 * bin: eta = 1e-300) against RUN_MAX_STEPS. */
static bn_status check_resolution(const bn_run_params *p, double t_start)
{
    const double res = time_resolution(p, t_start), span = p->t_end - t_start;
    const int bins = p->integ.time_bins;
    const double finest = bins >= 2 ? ldexp(p->integ.dt, -(bins - 1)) : p->integ.dt;
    if (finest < res)
        return bn_fail(BN_ERR_PARAMETER, "TimeIntegration: a step of %g (dt = %g, time_bins = %d) is too short to "
                       "advance a clock at t = %g (resolution %g): shift the time origin or lengthen dt", finest,
                       p->integ.dt, bins, fmax(fabs(t_start), fabs(p->t_end)), res);
    if (bins >= 2 && !(span / finest <= RUN_MAX_STEPS))
        return bn_fail(BN_ERR_PARAMETER, "TimeIntegration: time_bins = %d: up to %.3g steps of dt / 2^%d = %g from t = "
                       "%g to t_end = %g (more than %g): use fewer bins or a shorter run", bins, span / finest,
                       bins - 1, finest, t_start, p->t_end, RUN_MAX_STEPS);
    return BN_OK;
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
    BN_TRY(check_resolution(p, t_start));
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
    const double res = time_resolution(p, t_start);
    if (interval > 0 && interval < res)
        return bn_fail(BN_ERR_PARAMETER, "Statistics:interval = %g is below the clock's resolution %g at t = %g",
                       interval, res, fmax(fabs(t_start), fabs(p->t_end)));
    return BN_OK;
}
