"""The numbers of `banyan run`'s summary, from its log: steps (every step
from the start time; a continued run's line also says how many were its
own), wall seconds, the steps' own seconds, the energy error at t_end,
particle forces per particle and tree builds (block steps; else the steps
stand for both). None where the log has no summary."""
import re


def summary(text):
    m = re.search(r"(\d+) steps from t = \S+ to \S+?(?:, (\d+) of them in this run,)? in ([\d.]+) s", text)
    if not m:
        return None
    e = re.search(r"energy error \|E-E0\|/\|E0\| at t_end: (\S+)", text)
    f = re.search(r"particle forces, ([\d.]+) per particle; (\d+) tree builds", text)
    a = re.search(r"the steps alone: ([\d.e+-]+) s", text)
    steps = int(m.group(1))
    return {"steps": steps, "made": int(m.group(2)) if m.group(2) else steps, "wall": float(m.group(3)),
            "alone": float(a.group(1)) if a else float("nan"), "energy": e.group(1) if e else "?",
            "forces": float(f.group(1)) if f else float(steps), "builds": int(f.group(2)) if f else steps}


if __name__ == "__main__":  # run_summary.py LOG N RULE [PREFIX]: a line of the run's ms a step
    import sys
    r = summary(open(sys.argv[1]).read())
    prefix = sys.argv[4] if len(sys.argv) > 4 else ""
    print(f"{prefix}N {sys.argv[2]} tree_rebuild {sys.argv[3]}: {r['steps']} steps, {1e3 * r['wall'] / r['steps']:.2f} "
          f"ms a step, energy error {r['energy']}, {r['builds']} builds")
