#!/usr/bin/env python3
"""Issue 18: what the measured costs should weigh. Reads the traces of a
run across ranks (BANYAN_GRAVITY_TRACE=1, lines tagged "[rank r]"): for
each rank and force call, the device time of the local walk and of the
received trees' walk, and each walk's counts (pp, pc, far cells, cells
visited). Fits time = sum of weight x count over every walk, rank and
call (least squares, no intercept), and prints the weights in flops (a
pp interaction = interact.h's 23) beside those the costs use now
(23, 65, 180 a far cell, BANYAN_COST_VISIT a visit), and each rank's
walk time against what either set of weights predicts for it.
    scripts/cost-fit.py TRACE.err [more .err files]
"""
import collections
import re
import sys

import numpy as np

LINE = re.compile(r"\s*gravity (trace|count): (.*?)\s+([-0-9.e+]+)( ms)?( \[rank (\d+)\])?\s*$")
WALKS = {"local": ("local walk (device)", "local walk: "), "received": ("received walk (device)", "received walk: ")}
COUNTS = ("pp", "pc", "far cells", "cells visited")
FLOPS_NOW = (23.0, 65.0, 180.0, 0.0)


def samples(paths):
    """(walk, rank, call, time ms, counts) for every call where all were traced."""
    out = []
    for path in paths:
        seen = collections.defaultdict(list)  # (rank, name) -> values in order
        for l in open(path):
            m = LINE.match(l)
            if m and m.group(6) is not None:
                seen[(int(m.group(6)), m.group(2))].append(float(m.group(3)))
        ranks = sorted({r for r, _ in seen})
        for walk, (tname, prefix) in WALKS.items():
            for r in ranks:
                series = [seen.get((r, tname), [])] + [seen.get((r, prefix + c), []) for c in COUNTS]
                for k in range(min(len(s) for s in series)):
                    out.append((walk, r, k, series[0][k], [s[k] for s in series[1:]]))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = samples(sys.argv[1:])
    if len(rows) < 5:
        sys.exit(f"{len(rows)} traced walks with all their counts: too few to fit (tagged traces needed)")
    A = np.array([r[4] for r in rows])
    t = np.array([r[3] for r in rows])
    w, *_ = np.linalg.lstsq(A, t, rcond=None)
    flops = w / w[0] * FLOPS_NOW[0] if w[0] > 0 else w
    print(f"{len(rows)} walks fitted; residual rms {np.sqrt(np.mean((A @ w - t) ** 2)):.2f} ms of mean {t.mean():.1f} ms")
    print("weights (flops, a pp = 23):  " + ", ".join(f"{c} {f:.1f} (now {n:g})" for c, f, n in zip(COUNTS, flops, FLOPS_NOW)))
    now = np.array(FLOPS_NOW)
    scale = (A @ now).sum() / t.sum() if t.sum() > 0 else 1.0
    per_rank = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for (walk, r, k, tm, c), pred in zip(rows, A @ w):
        per_rank[r][0] += tm
        per_rank[r][1] += pred
        per_rank[r][2] += float(np.dot(c, now)) / scale
    print("rank: measured walk ms (sum over calls), fitted, today's flops (scaled to the same total)")
    for r, (m, f, n) in sorted(per_rank.items()):
        print(f"  {r}: {m:.1f}  {f:.1f}  {n:.1f}")


if __name__ == "__main__":
    main()
