"""Per-kernel totals of an `ncu --metrics gpu__time_duration.sum --csv`
output: launches and device time of each kernel name, largest first.
    python3 scripts/ncu_kernels.py NCU.csv [TITLE]"""
import collections
import csv
import sys


def kernel_totals(path):
    tot = collections.defaultdict(lambda: [0, 0.0])
    lines = [l for l in open(path, errors="replace") if l.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row["Kernel Name"].replace("(anonymous namespace)::", "").replace("<unnamed>::", "").replace("void ", "")
        name = name.split("(")[0].split("<")[0].strip()[:44]
        scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0}
        tot[name][0] += 1
        tot[name][1] += float(row["Metric Value"].replace(",", "")) * scale.get(row["Metric Unit"], 1e-6)
    return tot


if __name__ == "__main__":
    tot = kernel_totals(sys.argv[1])
    print(sys.argv[2] if len(sys.argv) > 2 else sys.argv[1])
    for name, (k, ms) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:44s} {k:5d} launches {ms:9.3f} ms")
    print(f"  {'total':44s} {sum(v[0] for v in tot.values()):5d} launches {sum(v[1] for v in tot.values()):9.3f} ms")
