"""Run under mpirun by tests/cli_python.sh (not a pytest module): the
package over several ranks against this process alone, on fresh random
particles. Every rank makes the same set and passes its own share:
 - direct summation over the ranks equals one process's to 1e-12 (double
   sums in another order);
 - tree forces over the ranks are within 1.3x of one process's p99
   against the direct sums (the LETs' bound of tests/test_forces_dist.c);
 - a Simulation over the ranks: its energy (summed over the ranks) after
   16 steps agrees with one process's to 1e-4 (trees apart).
Prints "ranks_check: ok" on rank 0."""
import sys

import numpy as np

import banyan

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
rank, size = banyan.ranks.rank(), banyan.ranks.size()
assert size > 1, f"run under mpirun with 2 or more ranks (got {size})"
p = banyan.ic.plummer(3000, seed=seed)
mine = np.arange(len(p))[rank::size]
eps = 1e-2


def p99(acc, ref):
    return np.percentile(np.linalg.norm(acc - ref, axis=1) / np.linalg.norm(ref, axis=1), 99)


ref_all, pot_all = banyan.forces(p.pos, p.mass, eps=eps, method="direct", backend="cpu")
acc, pot = banyan.forces(p.pos[mine], p.mass[mine], eps=eps, method="direct", backend="cpu", ranks=True)
assert np.abs(acc - ref_all[mine]).max() <= 1e-12 * np.abs(ref_all).max(), "direct summation over ranks"
assert np.abs(pot - pot_all[mine]).max() <= 1e-12 * np.abs(pot_all).max(), "direct potentials over ranks"

tree_one, _ = banyan.forces(p.pos, p.mass, eps=eps, backend="cpu", theta=0.6)
tree, _ = banyan.forces(p.pos[mine], p.mass[mine], eps=eps, backend="cpu", theta=0.6, ranks=True)
one, many = p99(tree_one[mine], ref_all[mine]), p99(tree, ref_all[mine])
assert many <= 1.3 * one + 1e-7, f"tree forces over ranks: p99 {many:.3e} against one process's {one:.3e}"

share = banyan.Particles(p.pos[mine], p.mass[mine], vel=p.vel[mine], ids=p.ids[mine])
sim = banyan.Simulation(share, eps=eps, dt=1 / 256, backend="cpu", ranks=True)
alone = banyan.Simulation(p, eps=eps, dt=1 / 256, backend="cpu")
sim.run(16 / 256)
alone.run(16 / 256)
e, e1 = sim.energies()["total"], alone.energies()["total"]
assert abs(e - e1) <= 1e-4 * abs(e1), f"energy over ranks {e} against one process's {e1}"
held = len(sim.particles)
if rank == 0:
    print(f"ranks_check: ok ({size} ranks; tree p99 {many:.2e} vs {one:.2e}; energy {e:.8f} vs {e1:.8f}; "
          f"rank 0 holds {held} particles)")
