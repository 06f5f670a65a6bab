/* See trace.h. */
#include "core/trace.h"
#include <stdio.h>
#include <stdlib.h>
#include "core/timer.h"

static int trace_rank = -1; /* -1: one process, no tag */

void bn_trace_set_rank(int rank) { trace_rank = rank; }

/* " [rank r]" on several ranks, else nothing. */
static const char *rank_tag(char *buf, size_t size)
{
    if (trace_rank < 0) return "";
    snprintf(buf, size, " [rank %d]", trace_rank);
    return buf;
}

int bn_trace_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("BANYAN_GRAVITY_TRACE");
        on = e == NULL ? 0 : (e[0] == '2' ? 2 : 1);
    }
    return on;
}

/* One stage's line; at >= 0 (BANYAN_GRAVITY_TRACE=2, stages) its end on
 * the monotonic clock (ms), which the ranks of one host share: their
 * timelines side by side, who waits for whom. */
static void trace_line(const char *stage, double ms, double at)
{
    char tag[32], when[40] = "";
    if (!bn_trace_on()) return;
    if (at >= 0) snprintf(when, sizeof when, " @ %.3f", at);
    fprintf(stderr, "gravity trace: %-24s %9.3f ms%s%s\n", stage, ms, rank_tag(tag, sizeof tag), when);
}

void bn_trace_stage(const char *stage, double *t)
{
    const double now = bn_wall_seconds();
    trace_line(stage, 1e3 * (now - *t), bn_trace_on() == 2 ? 1e3 * now : -1.0);
    *t = now;
}

void bn_trace_ms(const char *stage, double ms) { trace_line(stage, ms, -1.0); }

void bn_trace_count(const char *what, double v)
{
    char tag[32];
    if (bn_trace_on()) fprintf(stderr, "gravity count: %-24s %14.0f%s\n", what, v, rank_tag(tag, sizeof tag));
}
