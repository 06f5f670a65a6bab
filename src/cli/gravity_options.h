/* Gravity options shared by forces, bench and run. */
#ifndef BN_CLI_GRAVITY_OPTIONS_H
#define BN_CLI_GRAVITY_OPTIONS_H
#include <getopt.h>
#include "banyan.h"

#define CLI_GRAVITY_MAX_OPTIONS 20
/* Fill opts with the gravity long options; return how many. */
int cli_gravity_options(struct option *opts);
/* Apply option `c`; 0 on success, else the exit code (usage error). */
int cli_gravity_option(const char *cmd, int c, const char *arg, bn_gravity_params *g);
void cli_gravity_options_help(void);
#endif
