"""A run's health in one look (matplotlib, imported when used): the
energy log's relative energy error and momenta against time, and a
benchmark's errors against its time. Also a command (what `banyan plot`
runs):

    python3 -m banyan.plot_command energy.txt -o energy.png
    python3 -m banyan.plot_command --errors bench.json -o errors.png

Without -o the PNG goes next to the input, named after it: energy.txt
gives energy.png, and with --errors bench.json gives bench-errors.png.
"""
import argparse
import itertools
import json
import os
import sys

import numpy as np


def read_energy_log(path):
    """energy.txt as a dict of columns (time, kinetic, potential, total,
    rel_error, momentum, ang_mom, wall_time)."""
    names = ("time", "kinetic", "potential", "total", "rel_error", "momentum", "ang_mom", "wall_time")
    rows = np.loadtxt(path, comments="#", ndmin=2)
    if rows.shape[1] < len(names):
        raise ValueError(f"{path}: {rows.shape[1]} columns, an energy log has at least {len(names)}")
    return {name: rows[:, i] for i, name in enumerate(names)}


def _pyplot(out):
    import matplotlib
    if out is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


_tmp_counter = itertools.count()


def _write_target(out):
    """The file a write of out replaces: out itself, or, when out is a
    symbolic link to a regular file, that file (a rename onto the link
    would replace the link; banyan's C writers do the same)."""
    if os.path.islink(out) and os.path.isfile(out):
        return os.path.realpath(out)
    return out


def _save(fig, out):
    """Through a temporary file next to out, renamed at the end. Created
    with mode 0666 less the umask (as banyan's other outputs, 0644 under
    the usual umask 022), where tempfile.mkstemp would give 0600."""
    target = _write_target(os.fspath(out))
    for _ in range(100):
        tmp = f"{target}.tmp.{os.getpid()}.{next(_tmp_counter)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(f"cannot find a free temporary name next to {target}")
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, dpi=100, format="png")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _finish(fig, path, out):
    """The input's name as the title; saved to out when given."""
    fig.suptitle(str(path))
    fig.tight_layout()
    if out is not None:
        _save(fig, out)
    return fig


def energy(path, out=None):
    """|E - E0| / |E0|, |P| and |L| against time from an energy log; the
    figure, saved to `out` (PNG) when given."""
    plt = _pyplot(out)
    log = read_energy_log(path)
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    err = np.where(log["rel_error"] > 0, log["rel_error"], np.nan)
    top.semilogy(log["time"], err, "k-")
    top.set_ylabel("|E - E0| / |E0|")
    bottom.plot(log["time"], log["momentum"], label="|P|")
    bottom.plot(log["time"], log["ang_mom"], label="|L|")
    bottom.set_xlabel("time")
    bottom.legend()
    return _finish(fig, path, out)


def read_bench(path):
    """The JSON objects of `banyan bench --json` runs, one after another."""
    text, rows, at, dec = open(path).read(), [], 0, json.JSONDecoder()
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        row, at = dec.raw_decode(text, at)
        rows.append(row)
    return rows


def errors(path, out=None):
    """p99 (and p50) of |a - a_ref| / |a_ref| against the force time of
    `banyan bench --json --check` runs, each labelled by its criterion and
    theta; the figure, saved to `out` when given."""
    rows = [r for r in read_bench(path) if "err_p99" in r]
    if not rows:
        raise ValueError(f"{path}: no `banyan bench --json --check` results (err_p99) in it")
    plt = _pyplot(out)
    fig, ax = plt.subplots(figsize=(7, 5))
    t = np.array([1e3 * r["t_total"] for r in rows])
    ax.loglog(t, [r["err_p99"] for r in rows], "o", label="p99")
    ax.loglog(t, [r["err_p50"] for r in rows], "x", label="p50")
    for x, r in zip(t, rows):
        ax.annotate(f"{r['mac']} {r['theta']:g}", (x, r["err_p99"]), fontsize=7, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_xlabel("force time (ms)")
    ax.set_ylabel("|a - a_ref| / |a_ref|")
    ax.legend()
    return _finish(fig, path, out)


def default_output(path, errors=False):
    """Where `banyan plot` writes without -o: next to the input, its name
    with the extension replaced (energy.txt -> energy.png; with --errors
    bench.json -> bench-errors.png)."""
    stem = os.path.splitext(os.fspath(path))[0]
    return stem + ("-errors.png" if errors else ".png")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="banyan plot", description="a run's energy log, or a benchmark's errors, as PNG")
    ap.add_argument("input", help="energy.txt of banyan run, or with --errors the JSON of banyan bench --json --check")
    ap.add_argument("-o", "--output", help="the PNG to write (default: next to the input, its extension replaced: "
                    "energy.txt -> energy.png, with --errors bench.json -> bench-errors.png)")
    ap.add_argument("--errors", action="store_true", help="the input is banyan bench JSON: error against time")
    a = ap.parse_args(argv)
    if not os.path.exists(a.input):
        print(f"banyan plot: error: {a.input}: no such file", file=sys.stderr)
        return 1
    out = a.output if a.output is not None else default_output(a.input, a.errors)
    if os.path.exists(out) and os.path.samefile(a.input, out):
        how = "" if a.output is not None else " (the default: name another with -o)"
        print(f"banyan plot: error: the output {out} is the input{how}", file=sys.stderr)
        return 1
    if os.path.isdir(out) or str(out).endswith("/"):  # refused before drawing, not after
        print(f"banyan plot: error: the output {out} is a directory: name a file with -o", file=sys.stderr)
        return 1
    try:
        (errors if a.errors else energy)(a.input, out)
    except (ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"banyan plot: error: {a.input}: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # an output folder that does not exist, or cannot be written
        print(f"banyan plot: error: {out}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"banyan plot: wrote {out}")
    return 0
