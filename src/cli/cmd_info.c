/* banyan info: placeholder until its issue lands. */
#include <stdio.h>
#include "cli/cli.h"

int bn_cmd_info(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "banyan info: not implemented yet\n");
    return 1;
}
