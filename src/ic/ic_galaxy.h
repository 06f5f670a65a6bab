/*
 * Internal interface of the galaxy models (banyan ic galaxy).
 *
 * ic_galaxy.c      the M31 model, validation, particle counts, sampling
 *                  of the spheroids, ids, types, centre of mass
 * ic_galaxy_pot.c  the components' densities (MAGI's erfc taper) and the
 *                  spherical total potential on a log grid in r: enclosed
 *                  masses, Psi, the spheroids' Eddington DFs in it
 * ic_disk.c        the exponential disk: v_c, kappa, dispersions (Q),
 *                  asymmetric drift, and its sampling
 * ic_bessel.c      I0, I1, K0, K1 (the thin exponential disk's v_c)
 *
 * The disk enters the spheroids' potential through its enclosed mass in
 * cylinders, M_d(<R = r): the spherical average of a thin disk (exact for
 * the monopole at r well beyond the disk, within a few % of the disk's
 * force inside). The spheroids enter the disk's v_c exactly (spherical).
 */
#ifndef BN_IC_GALAXY_H
#define BN_IC_GALAXY_H
#include "ic/ic_internal.h"

enum { GX_HALO = 0, GX_BULGE = 1, GX_DISK = 2, GX_COMPONENTS = 3 };

typedef struct gx_model {
    const bn_galaxy_model *m;
    const bn_galaxy_component *c[GX_COMPONENTS]; /* NULL: absent          */
    double norm[GX_COMPONENTS]; /* rho_0 (spheroids), Sigma_0 (disk) giving
                                   each component its mass              */
    double G;
    /* tables on nodes s_i = s0 + i ds, s = ln r, r0 = e^s0 .. r_max     */
    size_t n;
    double s0, ds, r0, r_max;
    double *mass[GX_COMPONENTS]; /* enclosed mass (disk: in cylinders)    */
    double *mtot, *psi, *depth;  /* total; Psi (0 at r_max); psi_max - Psi */
    double psi_max;
} gx_model;

bn_status gx_model_build(gx_model *g, const bn_galaxy_model *m);
void gx_model_free(gx_model *g);
/* 0.5 erfc((r - cutoff) / width) and its first two r-derivatives. */
void gx_taper(const bn_galaxy_component *c, double r, double *t, double *t1, double *t2);
/* A spheroid's density and its r-derivatives. */
void gx_spheroid_density(const gx_model *g, int c, double r, double *rho, double *d1, double *d2);
/* The disk's surface density Sigma(R) (0 without a disk). */
double gx_disk_sigma(const gx_model *g, double R);
/* Enclosed masses from the tables (beyond r_max: the whole mass). */
double gx_mass(const gx_model *g, int c, double r);
double gx_mass_total(const gx_model *g, double r);
/* Radius enclosing mass fraction f in (0, 1) of component c. */
double gx_radius_of_fraction(const gx_model *g, int c, double f);
/* Eddington's view of spheroid c in the total potential; ctx must
 * outlive the model returned. */
typedef struct gx_df_ctx {
    const gx_model *g;
    int c;
} gx_df_ctx;
ic_df_model gx_df_model(const gx_df_ctx *ctx);

/* ic_disk.c */
void gx_disk_point(const gx_model *g, double sigma_r0, double R, bn_galaxy_disk_point *out);
/* sigma_R at R = 0 of the exponential law that gives Q(q_radius). */
double gx_disk_sigma_r0(const gx_model *g);
/* Disk particles [first, first + n) of p (masses, positions, velocities). */
bn_status gx_disk_sample(const gx_model *g, bn_particles *p, size_t first, size_t n, uint64_t seed);

/* ic_bessel.c: modified Bessel functions (Abramowitz & Stegun 9.8.1-8,
 * relative error below 2e-7), x > 0. */
double gx_bessel_i0(double x);
double gx_bessel_i1(double x);
double gx_bessel_k0(double x);
double gx_bessel_k1(double x);
#endif
