/* banyan ic: placeholder until its issue lands. */
#include <stdio.h>
#include "cli/cli.h"

int bn_cmd_ic(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "banyan ic: not implemented yet\n");
    return 1;
}
