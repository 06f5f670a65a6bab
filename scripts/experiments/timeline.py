#!/usr/bin/env python3
"""The ranks' host timelines of the last batch steps from a
BANYAN_GRAVITY_TRACE=2 log (each stage line ends in "[rank r] @ T", T the
stage's end in ms on the host's monotonic clock): each stage's start and
end per rank, from the last "crossers: prepared" but one of rank 0, so
that who waits for whom shows.
  timeline.py LOG [STEPS]"""
import re, sys, collections
LINE = re.compile(r"^gravity trace: (.*?)\s+([-\d.]+) ms \[rank (\d+)\] @ ([\d.]+)")
rows = collections.defaultdict(list)
for line in open(sys.argv[1], errors="replace"):
    m = LINE.match(line)
    if m:
        rows[int(m.group(3))].append((m.group(1).strip(), float(m.group(2)), float(m.group(4))))
if not rows:
    sys.exit("timeline: no stamped lines")
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1
starts = [i for i, r in enumerate(rows[0]) if r[0] == "crossers: prepared"]
if len(starts) < steps:
    sys.exit("timeline: too few steps")
t0 = rows[0][starts[-steps]][2] - rows[0][starts[-steps]][1]
t1 = rows[0][-1][2]
print(f"host timelines from rank 0's crossers' move {steps} steps before the end (ms; start-end):")
names = []
per = {}
for r in sorted(rows):
    per[r] = collections.defaultdict(list)
    for name, dur, at in rows[r]:
        if at - dur >= t0 - 0.5 and at <= t1 + 50:
            per[r][name].append((at - dur - t0, at - t0))
            if name not in names:
                names.append(name)
for name in names:
    cells = []
    for r in sorted(per):
        v = per[r].get(name, [])
        cells.append(" ".join(f"{a:6.1f}-{b:6.1f}" for a, b in v[:steps]))
    print(f"  {name[:38]:38s} | " + " | ".join(cells))
