/* banyan render: placeholder until its issue lands. */
#include <stdio.h>
#include "cli/cli.h"

int bn_cmd_render(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "banyan render: not implemented yet\n");
    return 1;
}
