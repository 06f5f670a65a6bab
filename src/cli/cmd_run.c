/* banyan run: placeholder until its issue lands. */
#include <stdio.h>
#include "cli/cli.h"

int bn_cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "banyan run: not implemented yet\n");
    return 1;
}
