"""A run's health in one look (matplotlib, imported when used): the
energy log's relative energy error and momenta against time."""
import numpy as np


def read_energy_log(path):
    """energy.txt as a dict of columns (time, kinetic, potential, total,
    rel_error, momentum, ang_mom, wall_time)."""
    names = ("time", "kinetic", "potential", "total", "rel_error", "momentum", "ang_mom", "wall_time")
    rows = np.loadtxt(path, comments="#", ndmin=2)
    if rows.shape[1] < len(names):
        raise ValueError(f"{path}: {rows.shape[1]} columns, an energy log has at least {len(names)}")
    return {name: rows[:, i] for i, name in enumerate(names)}


def energy(path, out=None):
    """|E - E0| / |E0|, |P| and |L| against time from an energy log; the
    figure, saved to `out` (PNG) when given."""
    import matplotlib
    if out is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    log = read_energy_log(path)
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    err = np.where(log["rel_error"] > 0, log["rel_error"], np.nan)
    top.semilogy(log["time"], err, "k-")
    top.set_ylabel("|E - E0| / |E0|")
    bottom.plot(log["time"], log["momentum"], label="|P|")
    bottom.plot(log["time"], log["ang_mom"], label="|L|")
    bottom.set_xlabel("time")
    bottom.legend()
    fig.suptitle(str(path))
    fig.tight_layout()
    if out is not None:
        fig.savefig(out, dpi=100)
    return fig
