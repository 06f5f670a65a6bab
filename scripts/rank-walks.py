#!/usr/bin/env python3
"""Per-rank medians of the traced walk stages of several-GPU runs
(BANYAN_GRAVITY_TRACE=1 logs of `banyan bench` under mpirun): the local
walk, the received trees' walk, the wait for the other ranks, and the
span of both walks (their sum where the log has no "both walks", which
the received walk beside the local one brought), per rank, so that an
uneven cut shows as one rank's larger span.
    scripts/rank-walks.py LOG.err [LOG.err ...]"""
import re
import sys

STAGES = ("local walk (device)", "received walk (device)", "wait for the other ranks (device)", "both walks (device)")
LINE = re.compile(r"^gravity trace: (.*?)\s+([-\d.]+) ms \[rank (\d+)\]")
CUT = re.compile(r"^gravity count: domains: particles after the cut\s+(\d+) \[rank (\d+)\]")
CALLS = "--calls" in sys.argv


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


for name in [a for a in sys.argv[1:] if a != "--calls"]:
    per, seq = {}, {}
    try:
        for line in open(name):
            m = LINE.match(line)
            if m and m.group(1).strip() in STAGES:
                r, st = int(m.group(3)), m.group(1).strip()
                per.setdefault(r, {}).setdefault(st, []).append(float(m.group(2)))
                if st == STAGES[0]:
                    seq.setdefault(r, []).append(float(m.group(2)))
                elif st == STAGES[1] and seq.get(r):
                    seq[r][-1] = f"{seq[r][-1] + float(m.group(2)):.0f}"
            c = CUT.match(line)
            if c:
                seq.setdefault(int(c.group(2)), []).append(f"| {int(c.group(1)) / 1e6:.1f}M")
    except OSError as e:
        print(f"{name}: {e}")
        continue
    print(f"{name}: median ms per rank (local walk / received walk / wait / both walks' span)")
    for r in sorted(per):
        loc, rem, wait, both = (median(per[r].get(s, [])) for s in STAGES)
        span = both if per[r].get(STAGES[3]) else loc + rem
        print(f"  rank {r}: {loc:7.1f} / {rem:6.1f} / {wait:6.1f} / {span:7.1f}")
    for r in sorted(seq) if CALLS else []:
        print(f"  rank {r} by call: " + " ".join(str(x) for x in seq[r]))
