/* The node-local rank that an MPI launcher or a batch system gives a
 * process, read from its environment (before or without MPI_Init): what
 * BN_DEVICE_AUTO spreads the ranks of a node over its GPUs by. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include "banyan.h"

int bn_local_rank_hint(void)
{
    /* Open MPI, MPICH/Hydra and Intel MPI, MVAPICH2, Slurm's srun, PMI */
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                                        "SLURM_LOCALID", "PMI_LOCAL_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v) continue;
        char *end = NULL;
        errno = 0;
        const long r = strtol(v, &end, 10);
        if (errno == 0 && *end == '\0' && r >= 0 && r <= INT_MAX) return (int)r;
    }
    return -1;
}
