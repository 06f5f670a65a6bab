#!/usr/bin/env python3
"""Per-rank medians of the traced walk stages of several-GPU runs
(BANYAN_GRAVITY_TRACE=1 logs of `banyan bench` under mpirun): the local
walk, the received trees' walk, the wait for the other ranks, and their
sum, per rank, so that an uneven cut shows as one rank's larger sum.
    scripts/rank-walks.py LOG.err [LOG.err ...]"""
import re
import sys

STAGES = ("local walk (device)", "received walk (device)", "wait for the other ranks (device)")
LINE = re.compile(r"^gravity trace: (.*?)\s+([-\d.]+) ms \[rank (\d+)\]")


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


for name in sys.argv[1:]:
    per = {}
    try:
        for line in open(name):
            m = LINE.match(line)
            if m and m.group(1).strip() in STAGES:
                per.setdefault(int(m.group(3)), {}).setdefault(m.group(1).strip(), []).append(float(m.group(2)))
    except OSError as e:
        print(f"{name}: {e}")
        continue
    print(f"{name}: median ms per rank (local walk / received walk / wait / walks' sum)")
    for r in sorted(per):
        loc, rem, wait = (median(per[r].get(s, [])) for s in STAGES)
        print(f"  rank {r}: {loc:7.1f} / {rem:6.1f} / {wait:6.1f} / {loc + rem:7.1f}")
