/* BANYAN_GRAVITY_TRACE=1: the stages of a force call and of the
 * exchange between ranks timed to stderr (a tuning aid: the library
 * prints nothing otherwise). */
#ifndef BN_TRACE_H
#define BN_TRACE_H
#ifdef __cplusplus
extern "C" {
#endif
/* The wall time since *t under the stage's name, when tracing; *t = now. */
void bn_trace_stage(const char *stage, double *t);
/* Whether tracing is on, and a time measured elsewhere (the device's
 * events) printed under a stage's name. */
int bn_trace_on(void);
void bn_trace_ms(const char *stage, double ms);
/* A count (interactions, groups) under its name, when tracing. */
void bn_trace_count(const char *what, double v);
/* Several ranks (bn_comm_world): each line ends in "[rank r]", so that
 * the ranks' lines, which interleave on one stream, can be told apart. */
void bn_trace_set_rank(int rank);
#ifdef __cplusplus
}
#endif
#endif
