/*
 * Valid ranges of parameters that more than one place checks: the command
 * line (src/cli/), the parameter table (src/io/params_table.c) and the
 * library's validation (src/core/names.c, src/ic/ic.c). One definition, so
 * an option and its parameter can never disagree about what they accept.
 * The public ones (leaf, group size, device, error sample) are in
 * include/banyan.h; BN_TIME_BINS_MAX is in src/integrate/timebins.h.
 */
#ifndef BN_CORE_LIMITS_H
#define BN_CORE_LIMITS_H

/* Gravity:OpeningAngle, in [0, BN_THETA_MAX] */
#define BN_THETA_MAX 2.0
/* Gravity:group_expansion, in [0, BN_GROUP_EXPANSION_MAX] */
#define BN_GROUP_EXPANSION_MAX 1.0
/* Gravity:error_target, in [0, BN_ERROR_TARGET_MAX) (0: off) */
#define BN_ERROR_TARGET_MAX 1.0

/* TimeIntegration:tree_rebuild, in [0, BN_TREE_REBUILD_MAX] */
#define BN_TREE_REBUILD_MAX 1000000000

/* InitialConditions:truncation, in [MIN, MAX] scale radii or 0 (the model's
 * default): inside 1% of the scale radius a halo is no longer the model (and
 * the NFW distribution function stops being positive below ~1e-3). */
#define BN_IC_TRUNCATION_MIN 0.01
#define BN_IC_TRUNCATION_MAX 1e6

#endif
