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
#ifdef __cplusplus
}
#endif
#endif
