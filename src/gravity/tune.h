/*
 * Internal: an error target instead of the tree's settings (issue 14,
 * bn_gravity_params.error_target). Both backends run the same search,
 * through their table (core/backend.h): set_params() to try settings,
 * forces() to evaluate them (timed, or their work counted), and
 * sample_forces() for double-precision direct summation on a sample of
 * targets, done where the particles are (the GPU's on the device).
 *
 * The search: for a structure (mac, leaf size, group size, expansion)
 * the largest theta whose sample p99 is at most BN_TUNE_MARGIN E is found
 * by a secant on log p99 against log theta (p99 ~ theta^k), bracketed;
 * the cost of that structure is its evaluation at that theta. From a
 * start suited to the backend and N, coordinate descent moves one setting
 * at a time to a neighbouring value while the cost falls, within a budget
 * of evaluations (and, measuring time, of 100 evaluations' time). The
 * settings in
 * error_fixed are never moved. Deterministic for BN_TUNE_WORK; with
 * BN_TUNE_TIME the choice follows measured times (and with it the bits).
 */
#ifndef BN_TUNE_H
#define BN_TUNE_H
#include <stdint.h>
#include "core/backend.h"

/* The sample p99 aimed at, a fraction of E: the sample's p99 (a few
 * hundred targets) scatters by about 20% around the true one. */
#define BN_TUNE_MARGIN 0.75

typedef struct bn_tune_env {
    const bn_backend_ops *ops;
    void *state;        /* holds the particles                        */
    size_t n;           /* their number (this rank's)                 */
    int gpu;            /* the backend is the GPU's (start point)     */
    const bn_comm *comm; /* several ranks (NULL: one process): the
                            search is collective, every decision taken
                            from agreed values (the sample over every
                            rank's particles, costs agreed over the
                            ranks), so every rank chooses the same      */
} bn_tune_env;

/* Every rank's particles in all (collective; e->n in one process). */
bn_status bn_tune_total(const bn_tune_env *e, size_t *total);

/* Choose the settings for g->error_target: on return *g holds them, the
 * backend has evaluated the forces with them, and acc records the search
 * (tunings, evaluations, time, the sample's error, met). theta_only: keep
 * the structure, search theta alone (a re-tune). */
bn_status bn_tune_search(const bn_tune_env *e, bn_gravity_params *g, int theta_only, bn_accuracy *acc);

/* A check of the backend's current forces on a fresh sample (seed),
 * recorded in acc (the error, checks, t_checks, t_tuning); *retune: its
 * p99 calls for a new search (above E, or below E/4: slower than needed). */
bn_status bn_tune_check_record(const bn_tune_env *e, const bn_gravity_params *g, uint64_t seed, bn_accuracy *acc,
                               int *retune);
#endif
