/* Wall-clock seconds (monotonic). */
#ifndef BN_TIMER_H
#define BN_TIMER_H
#include <time.h>
static inline double bn_wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif
