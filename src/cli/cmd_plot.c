/* banyan plot: a run's energy log (or a benchmark's errors) as a PNG,
 * drawn by the Python package's banyan.plot with matplotlib (the plotting
 * library; banyan's own PNG writer draws no text). This command finds the
 * package beside the program (the source tree's python/ next to build/)
 * and the library the program was built with, and runs banyan.plot's
 * main with ARGS in python3 ($BANYAN_PYTHON names another Python; one
 * without numpy or matplotlib gets a message, not a traceback). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"

static void plot_help(void)
{
    printf("usage: banyan plot ENERGY_TXT [-o OUT.png]\n"
           "       banyan plot --errors BENCH_JSON [-o OUT.png]\n\n"
           "The relative energy error |E - E0| / |E0| and |P|, |L| against time from a\n"
           "run's energy.txt, or with --errors the p99 and p50 of the acceleration error\n"
           "against the force time of `banyan bench --json --check` runs (one JSON object\n"
           "after another), each labelled by its criterion and theta. Without -o the PNG\n"
           "goes next to the input, its extension replaced: run/energy.txt gives\n"
           "run/energy.png, --errors bench.json gives bench-errors.png (never the input\n"
           "itself); the command prints where it wrote. Drawn by the Python package\n"
           "(python/, matplotlib), as `python3 -m banyan.plot_command` with the same\n"
           "arguments would; BANYAN_PYTHON names the interpreter (default python3).\n");
}

/* The folder of this program, from /proc/self/exe ("" when unknown). */
static void program_dir(char *out, size_t size)
{
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    out[0] = '\0';
    if (n <= 0) return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(out, size, "%s", exe);
}

/* PYTHONPATH and BANYAN_LIB for the package and library beside the program. */
static void point_at_package(const char *dir)
{
    char path[PATH_MAX + 64], lib[PATH_MAX + 32];
    if (snprintf(path, sizeof path, "%s/../python/banyan/plot.py", dir) < (int)sizeof path && access(path, R_OK) == 0) {
        snprintf(path, sizeof path, "%s/../python", dir);
        const char *old = getenv("PYTHONPATH");
        char *both = malloc(strlen(path) + (old ? strlen(old) : 0) + 2);
        if (both) {
            sprintf(both, "%s%s%s", path, old && *old ? ":" : "", old && *old ? old : "");
            setenv("PYTHONPATH", both, 1);
            free(both);
        }
    }
    if (!getenv("BANYAN_LIB") && snprintf(lib, sizeof lib, "%s/libbanyan.so", dir) < (int)sizeof lib &&
        access(lib, R_OK) == 0)
        setenv("BANYAN_LIB", lib, 1);
    setenv("MPLBACKEND", "Agg", 0);
}

int bn_cmd_plot(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            plot_help();
            return 0;
        }
    if (argc < 2) return cli_usage_error("plot", "an energy log or (with --errors) a bench JSON file is needed");
    char dir[PATH_MAX];
    program_dir(dir, sizeof dir);
    if (dir[0]) point_at_package(dir);
    const char *python = getenv("BANYAN_PYTHON") ? getenv("BANYAN_PYTHON") : "python3";
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args) return cli_fail("plot", BN_ERR_NOMEM);
    /* an interpreter without numpy or matplotlib: one line naming them,
     * not a traceback from the package's import; any other import error
     * (banyan's own) keeps its traceback */
    static const char bootstrap[] =
        "import sys\n"
        "try:\n"
        "    from banyan.plot import main\n"
        "except ImportError as e:\n"
        "    if (e.name or '').split('.')[0] not in ('numpy', 'matplotlib'):\n"
        "        raise\n"
        "    sys.stderr.write('banyan plot: error: %s cannot import %s: the plots need Python 3 with numpy and '\n"
        "                     'matplotlib (install them, or name another interpreter with BANYAN_PYTHON)\\n'\n"
        "                     % (sys.executable, e))\n"
        "    sys.exit(1)\n"
        "sys.exit(main())\n";
    args[0] = (char *)python;
    args[1] = "-c";
    args[2] = (char *)bootstrap;
    for (int i = 1; i < argc; i++) args[i + 2] = argv[i];
    fflush(stdout);
    execvp(python, args); /* returns only when it could not start */
    fprintf(stderr, "banyan plot: error: cannot run %s (%s): the plots need Python 3 with numpy and matplotlib "
            "(BANYAN_PYTHON names the interpreter)\n", python, strerror(errno));
    free(args);
    return 1;
}
