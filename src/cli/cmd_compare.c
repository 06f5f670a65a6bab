/* banyan compare: placeholder until its issue lands. */
#include <stdio.h>
#include "cli/cli.h"

int bn_cmd_compare(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "banyan compare: not implemented yet\n");
    return 1;
}
