/*
 * Per-interaction math shared by the CPU and CUDA backends: the opening
 * criteria (MACs), the softened particle-particle force and the
 * particle-cell monopole + quadrupole force. One source, compiled for
 * double (suffix _d, the CPU backend) and float (suffix _f, the GPU walk):
 * interact_impl.h is included once per precision.
 *
 * Sign convention: d = x_source - x_target. Results are accumulated
 * without G (the caller multiplies once): a += m d / r^3, phi -= m / r,
 * r^2 = |d|^2 + eps^2.
 *
 * Flop counts (for honest interaction rates; rsqrt counted as 4 flops,
 * as in the literature):
 *   bn_pp (and bn_pp_soft):
 *           3 sub (by caller) + 3 mul + 3 add (r^2 with eps^2)
 *           + rsqrt 4 + 2 mul (m/r, 1/r^2 -> m/r^3) + 1 mul
 *           + 3 fma (acc, 6) + 1 sub (phi)                 = 23 flop
 *   bn_pc:  3 sub + r^2 6 + rsqrt 4 + Q.d 15 + d.Qd 5 + 1/r^2, 1/r^5 4
 *           + phi 3 + radial coefficient 5 + acc 9 + misc 2 = 65 flop
 * (the peer code of REFERENCE-NUMBERS.md counts 23 and 65 likewise).
 *   bn_local_set + accumulating it (per far cell and group):
 *           3 sub + r^2 6 + rsqrt 4 + 1/r^2..15m/r^7 7 + Q.d 15 + d.Qd 5
 *           + 1/r^5, 1/r^7 3 + phi, a 11 + H coefficients 7 + H 57
 *           + T 35 + 20 adds                              = 180 flop
 *   bn_local_eval (per body):  3 sub + H.y 15 + y y 9 + T[.,y,y] 33
 *           + a 12 + phi 22                                = 95 flop
 */
#ifndef BN_INTERACT_H
#define BN_INTERACT_H
#include <math.h>
#include <stdint.h>
#include "core/hostdevice.h"

#define BN_FLOPS_PP 23
#define BN_FLOPS_PC 65
#define BN_FLOPS_FAR 180
#define BN_FLOPS_FAR_EVAL 95
/* Flops of a walk with these interaction counts over n bodies (the
 * expansion is evaluated at every body when any cell went through it). */
static inline double bn_walk_flops(double n_pp, double n_pc, double n_far, double n)
{
    return BN_FLOPS_PP * n_pp + BN_FLOPS_PC * n_pc + BN_FLOPS_FAR * n_far + (n_far > 0 ? BN_FLOPS_FAR_EVAL * n : 0);
}
/* A rebuild of the tree (keys, sort, build) in walk flops per particle:
 * about as long on an H100 (4.5 ms at 2^24 against 15 Tflop/s). The
 * self-tuned rebuild (simulation.c) and the error target's counted cost
 * (tune.c) weigh rebuilds with it. */
#define BN_REBUILD_FLOPS_PER_PARTICLE 4000.0
/* A cell the walk's traversal took (its MAC test, its loads, the stack),
 * in flops of the same time: 430, the least-squares fit of the walks'
 * device times on 4 H100-class GPUs (session 22: 1.06 ps a pp term of 23
 * flops, 19.8 ps a visit). The interaction counts leave the traversal
 * out, and a refreshed tree's walk spends its extra time there. */
#define BN_FLOPS_VISIT 430
/* A walk's work: its flops and its traversal (visits: cells visited). */
static inline double bn_walk_work(double n_pp, double n_pc, double n_far, double visits, double n)
{
    return bn_walk_flops(n_pp, n_pc, n_far, n) + BN_FLOPS_VISIT * visits;
}
/* What a rebuild costs beyond a refresh (keys, sort, build, reorder; a
 * refresh redoes moments and groups) in that work per particle, for the
 * self-tuned rebuild's counted rule: on an H100 at 2^24 (M31, session 23)
 * about 6 ms, i.e. 360 ps a particle, against 46 fs a walk flop: 7800.
 * Session 28's tree kernels cut keys, sort and build from 4.53 to 3.54 ms
 * (BENCHMARKS.md), the walk unchanged: 7800 x 3.54 / 4.53. */
#define BN_REBUILD_WORK_PER_PARTICLE 6100.0
/* Terms of a group's far-field expansion (bn_local, interact_impl.h):
 * potential and acceleration at the centre, Hessian H, third derivatives T. */
#define BN_LOCAL_FIELDS(X)                                                                                        \
    X(phi) X(ax) X(ay) X(az) X(hxx) X(hyy) X(hzz) X(hxy) X(hxz) X(hyz) X(txxx) X(tyyy) X(tzzz) X(txxy) X(txxz)      \
        X(txyy) X(tyyz) X(txzz) X(tyzz) X(txyz)
#define BN_LOCAL_TERMS 20
/* The received trees' far field per box of groups (walk_gpu.h's
 * bn_gpu_box_far; walk_cpu.c's the same in double): consecutive groups a
 * box, and its far cells beyond |half diagonal| / (BN_WALK_BOX_RATIO
 * kappa theta), twice a group's distance for its size, since the box's
 * expansion is evaluated up to its corners (at 1 a test's distant
 * sources' p99 grew 5x, session 22). */
#define BN_WALK_BOX_GROUPS 16
#define BN_WALK_BOX_RATIO 0.5

/* Multipole moments of a cell as the walk sees them: mass, centre of
 * mass, and the traceless quadrupole Q_ij = sum m (3 x_i x_j - r^2 d_ij)
 * about the centre of mass, components xx, yy, zz, xy, xz, yz. */
enum { BN_QXX = 0, BN_QYY, BN_QZZ, BN_QXY, BN_QXZ, BN_QYZ };

/* Float 1/sqrt(x): on the device the hardware rsqrt with denormals
 * flushed to zero. rsqrtf() without -ftz wraps the same instruction in a
 * test and two predicated rescales for denormal x (3 of a particle-
 * particle interaction's 14 instructions); r^2 >= eps^2 is never
 * denormal, and for normal x both give the same bits. */
#ifdef __CUDA_ARCH__
__device__ __forceinline__ float bn_rsqrt_ftz_f(float x)
{
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#define BN_RSQRT_F(x) bn_rsqrt_ftz_f(x)
#elif defined(__CUDACC__)
#define BN_RSQRT_F(x) rsqrtf(x)
#else
#define BN_RSQRT_F(x) (1.0f / sqrtf(x))
#endif
/* Double 1/sqrt(x) for x > 0 on the host: the bit-trick first guess
 * (magic constant for doubles, relative error < 3.5%) and four Newton
 * steps y <- y (3/2 - x/2 y^2), each squaring the error: 3.5e-2, 1.8e-3,
 * 5e-6, 4e-11, then rounding (a few ulp; measured <= 4e-16 relative).
 * Only multiplies, adds and integer ops, so a loop over it vectorises
 * with the default flags, where 1.0 / sqrt(x) stays scalar (sqrt may set
 * errno) and is 4-6 times slower even when vectorised (vsqrtpd + vdivpd).
 * The device has a hardware rsqrt. */
/* BN_RSQRT_CELL: the particle-cell interaction stops one Newton step
 * earlier (relative error <= 4e-11, a bias far below the multipole
 * truncation error of any accepted cell, >= 1e-9 even at theta = 0.05);
 * it saves a tenth of that kernel. */
#ifdef __CUDA_ARCH__
#define BN_RSQRT_D(x) rsqrt(x)
#define BN_RSQRT_CELL_D(x) rsqrt(x)
#else
static inline double bn_rsqrt_newton_d(double x, int steps)
{
    union { double d; uint64_t u; } v = {x};
    v.u = 0x5fe6eb50c7b537a9ull - (v.u >> 1);
    const double h = 0.5 * x;
    double y = v.d;
    for (int k = 0; k < steps; k++) y = y * (1.5 - h * y * y);
    return y;
}
#define BN_RSQRT_D(x) bn_rsqrt_newton_d((x), 4)
#define BN_RSQRT_CELL_D(x) bn_rsqrt_newton_d((x), 3)
#endif

#define BN_T double
#define BN_FN(name) name##_d
#define BN_RSQRT(x) BN_RSQRT_D(x)
#define BN_RSQRT_CELL(x) BN_RSQRT_CELL_D(x)
#include "gravity/interact_impl.h"
#undef BN_T
#undef BN_FN
#undef BN_RSQRT
#undef BN_RSQRT_CELL

#define BN_T float
#define BN_FN(name) name##_f
#define BN_RSQRT(x) BN_RSQRT_F(x)
#define BN_RSQRT_CELL(x) BN_RSQRT_F(x)
#include "gravity/interact_impl.h"
#undef BN_T
#undef BN_FN
#undef BN_RSQRT
#undef BN_RSQRT_CELL

/* Opening radius of a cell for the geometric criteria, computed once per
 * cell when the moments are made: the walk opens the cell when the
 * distance from the group's box to the cell's centre of mass is below it.
 *   bonsai: r = l/theta + delta   (Bonsai eq. 4.1; delta = |com - centre|;
 *           bonsai-box: the same, l and the centre from the bounding box
 *           of the cell's bodies: the caller passes those)
 *   bh:     r = l/theta           (classic l/d < theta, d from the group box)
 *   accel:  r = sqrt(3)/2 l + delta: a target inside the sphere around the
 *           com that holds the whole cell must always open it (GADGET's
 *           box guard); the acceleration test comes on top (bn_mac_accel_open).
 * The guard sqrt(3)/2 l + delta is a floor for all three: every body of
 * the cell lies within it of the com, so no accepted cell ever holds a
 * target of the group (its own mass would act on it through the
 * multipole). It only binds for bh with theta > 0.58 when the com sits
 * near a corner, and for bonsai with theta > 1.15.
 * theta <= 0 opens everything (direct summation through the tree). */
/* bonsai-box: the side of a cell's bodies' box, floored at 1/8 of its
 * octant's side l. Cells of one body (or of bodies at one point) would
 * have radius 0: a group holding the body must still open its cell when
 * rounding (float coordinates on the GPU) moves the centre of mass off
 * the body by far less than l/8. */
BN_HD double bn_mac_box_side(double side, double l)
{
    return side > 0.125 * l ? side : 0.125 * l;
}

BN_HD double bn_mac_open_radius(int mac, double l, double delta, double theta)
{
    const double guard = 0.8660254037844386 * l + delta;
    if (mac == 2) return guard;
    if (!(theta > 0.0)) return 1e300;
    const double r = mac == 1 ? l / theta : l / theta + delta;
    return r > guard ? r : guard;
}

/* The side a criterion takes for a cell of octant side l whose bodies
 * fill the box [lo, hi]: bonsai-box the box's largest side (floored,
 * bn_mac_box_side); the octant criteria l, or the box's side where the
 * bodies have spread beyond their octant (a refreshed tree). The accel
 * criterion's G M l^2 takes it too, so that a refreshed cell is not
 * judged smaller than its bodies' spread. */
BN_HD double bn_mac_cell_side(int mac, double l, const double lo[3], const double hi[3])
{
    double side = 0;
    for (int k = 0; k < 3; k++) side = hi[k] - lo[k] > side ? hi[k] - lo[k] : side;
    if (mac == 3) return bn_mac_box_side(side, l);
    return side > l ? side : l;
}

/* Opening radius of one cell, the criterion choosing its geometry (the
 * one place both backends take it from): the octant (side l, centre
 * `centre`) for bonsai, bh and accel; the bounding box [lo, hi] of the
 * cell's bodies for bonsai-box. com: the cell's centre of mass.
 * centre NULL: the bodies have moved since the tree was built (a refresh
 * between rebuilds, block time steps) and may have left their octant;
 * the octant criteria then take the cube of side max(l, the box's
 * largest side) about the box's centre, which holds every body. */
BN_HD double bn_mac_cell_radius(int mac, double theta, double l, const double centre[3], const double com[3],
                                const double lo[3], const double hi[3])
{
    const int box = mac == 3 || !centre; /* BN_MAC_BONSAI_BOX, or moved */
    double d2 = 0;
    for (int k = 0; k < 3; k++) {
        const double c = box ? 0.5 * (lo[k] + hi[k]) : centre[k];
        d2 += (com[k] - c) * (com[k] - c);
    }
    return bn_mac_open_radius(mac, bn_mac_cell_side(mac, l, lo, hi), sqrt(d2), theta);
}
#endif
