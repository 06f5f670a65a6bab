#!/usr/bin/env python3
# Usage: banyan ic galaxy --model m31 --n N -o ic.hdf5; banyan forces ic.hdf5 --eps 0.015625 -o f.hdf5;
#        python3 scripts/experiments/active_groups.py f.hdf5 [GROUP_SIZE]   (numpy and h5py)
# Issue 19: how much of a block step's walk is spent on inactive bodies of
# active groups (a group of the tree with any active body walks all of
# them)? Groups emulated as the GPU tree makes them: the largest octree
# nodes (Morton cells of the particles' cube) with at most G bodies.
import h5py, numpy as np, sys
f = h5py.File(sys.argv[1], 'r'); G = int(sys.argv[2]) if len(sys.argv) > 2 else 64
eps = 0.015625; dtmax = 1 / 128; Gc = 4.300917270e-6; K = 8
P, A, PH = [], [], []
for pt in (1, 2, 3):
    P.append(f[f"PartType{pt}/Coordinates"][:]); A.append(f[f"PartType{pt}/Acceleration"][:] * Gc)
    PH.append(f[f"PartType{pt}/Potential"][:] * Gc)
P = np.concatenate(P); A = np.concatenate(A); PH = np.concatenate(PH)
am = np.sqrt((A * A).sum(1)); n = len(am)
lo = P.min(0); span = (P.max(0) - lo).max() * 1.0001
q = ((P - lo) / span * (1 << 21)).astype(np.uint64)
def spread(v):
    v = v & np.uint64(0x1fffff)
    for s, m in ((32, 0x1f00000000ffff), (16, 0x1f0000ff0000ff), (8, 0x100f00f00f00f00f), (4, 0x10c30c30c30c30c3), (2, 0x1249249249249249)):
        v = (v | (v << np.uint64(s))) & np.uint64(m)
    return v
key = spread(q[:, 0]) | (spread(q[:, 1]) << np.uint64(1)) | (spread(q[:, 2]) << np.uint64(2))
o = np.argsort(key, kind='stable'); key = key[o]
group = np.full(n, -1, np.int64); ng = 0
for L in range(22):
    free = group < 0
    if not free.any(): break
    pre = key[free] >> np.uint64(3 * (21 - L))
    u, inv, cnt = np.unique(pre, return_inverse=True, return_counts=True)
    ok = cnt[inv] <= G
    if L == 21: ok[:] = True
    idx = np.nonzero(free)[0][ok]
    group[idx] = ng + inv[ok]; ng += len(u)
_, group = np.unique(group, return_inverse=True)
size = np.bincount(group)
print(f"N {n}, groups of at most {G}: {len(size)} (mean {size.mean():.1f} bodies)")
for crit, eta in (("acceleration", 0.3), ("dynamical", 0.01), ("dynamical", 0.005)):
    dt = eta * np.sqrt(eps / am) if crit == "acceleration" else eta * np.sqrt(np.abs(PH)) / am
    b = np.clip(np.ceil(np.log2(dtmax / dt)), 0, K - 1).astype(int)[o]
    tot_act = tot_walk = 0.0
    for bmin in range(K - 1, -1, -1):
        act = b >= bmin; ga = np.bincount(group, weights=act) > 0
        walked = size[ga].sum(); steps = 2 ** (bmin - 1) if bmin > 0 else 1  # steps a cycle whose coarsest active bin is bmin
        tot_act += steps * act.sum(); tot_walk += steps * walked
        print(f"  {crit} {eta}: first active bin {bmin}: {steps:3d} steps a cycle, active {act.sum():8d} ({act.mean():.4f}), "
              f"in active groups {walked:8d}: x{walked / max(act.sum(), 1):.2f}, groups {ga.sum()}")
    print(f"  {crit} {eta}: over a cycle, bodies walked / active = {tot_walk / tot_act:.3f}")
