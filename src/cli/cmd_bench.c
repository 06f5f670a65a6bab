/* banyan bench: placeholder until its issue lands. */
#include <stdio.h>
#include "cli/cli.h"

int bn_cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "banyan bench: not implemented yet\n");
    return 1;
}
