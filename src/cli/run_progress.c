/* The progress line of `banyan run` (stderr). */
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/run.h"
#include "core/timer.h"

#define TTY_PERIOD 0.25  /* seconds between updates on a terminal          */
#define LOG_PERIOD 30.0  /* seconds between plain lines off a terminal      */

void run_progress_start(run_progress *pr, double t_start, double t_end, int quiet)
{
    pr->tty = cli_is_tty(STDERR_FILENO);
    pr->quiet = quiet;
    pr->t_start = t_start;
    pr->t_end = t_end;
    pr->wall_start = pr->last_print = bn_wall_seconds();
    pr->printed_tty = 0;
}

/* "1m05s" style durations read faster than seconds for long runs. */
static void format_duration(double s, char *buf, size_t size)
{
    if (!isfinite(s)) snprintf(buf, size, "?");
    else if (s < 60) snprintf(buf, size, "%.1fs", s);
    else if (s < 3600) snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void run_progress_update(run_progress *pr, double t, long steps, double rel_error)
{
    if (pr->quiet) return;
    double now = bn_wall_seconds();
    if (now - pr->last_print < (pr->tty ? TTY_PERIOD : LOG_PERIOD) && t < pr->t_end) return;
    if (!pr->tty && t >= pr->t_end) return; /* the summary says the rest */
    pr->last_print = now;
    double elapsed = now - pr->wall_start, span = pr->t_end - pr->t_start;
    double frac = span > 0 ? (t - pr->t_start) / span : 1;
    double left = frac > 0 ? elapsed * (1 - frac) / frac : NAN;
    char el[32], lf[32];
    format_duration(elapsed, el, sizeof el);
    format_duration(left, lf, sizeof lf);
    fprintf(stderr, "%st = %-10.6g %5.1f%%  step %-7ld elapsed %-8s left ~%-8s |dE/E0| %.2e%s",
            pr->tty ? "\r" : "banyan run: ", t, 100 * frac, steps, el, lf, rel_error, pr->tty ? "  " : "\n");
    if (pr->tty) {
        pr->printed_tty = 1;
        fflush(stderr);
    }
}

void run_progress_end(run_progress *pr)
{
    if (pr->printed_tty) fputc('\n', stderr);
    pr->printed_tty = 0;
}
