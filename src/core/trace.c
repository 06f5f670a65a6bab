/* See trace.h. */
#include "core/trace.h"
#include <stdio.h>
#include <stdlib.h>
#include "core/timer.h"

int bn_trace_on(void)
{
    static int on = -1;
    if (on < 0) on = getenv("BANYAN_GRAVITY_TRACE") != NULL;
    return on;
}

void bn_trace_stage(const char *stage, double *t)
{
    const double now = bn_wall_seconds();
    if (bn_trace_on()) fprintf(stderr, "gravity trace: %-24s %9.3f ms\n", stage, 1e3 * (now - *t));
    *t = now;
}

void bn_trace_ms(const char *stage, double ms)
{
    if (bn_trace_on()) fprintf(stderr, "gravity trace: %-24s %9.3f ms\n", stage, ms);
}

void bn_trace_count(const char *what, double v)
{
    if (bn_trace_on()) fprintf(stderr, "gravity count: %-24s %14.0f\n", what, v);
}
