/*
 * Internal interface of the initial-conditions module (src/ic/).
 *
 * ic.c         parameters, names, validation, dispatch, ids, centre of mass
 * ic_plummer.c Plummer sphere (Aarseth, Henon & Wielen 1974)
 * ic_profiles.c density, mass and potential of truncated Hernquist / NFW
 * ic_eddington.c isotropic distribution function f(E) by Eddington's formula
 * ic_halo.c    Hernquist / NFW sampling (positions from M(r), speeds from f)
 * ic_uniform.c uniform sphere and uniform cube
 *
 * Every random number is bn_rng_uniform(seed, particle index, draw): each
 * particle owns its stream, so any loop schedule gives the same bits.
 * Models are generated with G = 1; velocities are scaled by sqrt(G) at the
 * end (positions and masses do not depend on G).
 */
#ifndef BN_IC_INTERNAL_H
#define BN_IC_INTERNAL_H
#include <stdint.h>
#include "banyan.h"

/* Plummer truncation: radii are sampled from the infinite model's mass
 * fraction in (0, IC_PLUMMER_MASS_CUT), i.e. r < 38.7 a. */
#define IC_PLUMMER_MASS_CUT 0.999

/* Default truncation radii (in scale radii) of the halo models. */
#define IC_HERNQUIST_DEFAULT_TRUNCATION 100.0
#define IC_NFW_DEFAULT_TRUNCATION 10.0

/* ---- ic.c: helpers shared by the generators ---------------------- */
/* Point at distance `len` from the origin in a direction uniform on the
 * sphere; consumes draws `draw` and `draw + 1` of particle i. */
void ic_isotropic(uint64_t seed, uint64_t i, uint64_t draw, double len, double out[3]);
/* Store a 3-vector into SoA arrays at index i. */
void ic_store3(double *arr[3], size_t i, const double v[3]);
/* Deterministic sums (independent of the thread count): fixed blocks summed
 * in parallel, then the block sums in order. terms(p, i, t) writes the
 * nterms (<= 8) summands of particle i into t. */
typedef void (*ic_terms_fn)(const bn_particles *p, size_t i, double *t);
bn_status ic_sum(const bn_particles *p, ic_terms_fn terms, int nterms, double *out);
/* Shift positions and velocities so the centre of mass is at rest at the
 * origin. */
bn_status ic_centre(bn_particles *p);
/* Kinetic energy sum 1/2 m v^2 (deterministic). */
bn_status ic_kinetic(const bn_particles *p, double *T);

/* A spherical model with isotropic velocities, sampled particle by
 * particle: radius from a uniform mass fraction (draw 0), position
 * direction (draws 1-2), velocity direction (draws 3-4), speed at that
 * radius from draws 5 on (negative: the sampler failed). */
typedef struct ic_spherical {
    const char *name;
    const void *ctx;
    double (*radius)(const void *ctx, double mass_fraction);
    double (*speed)(const void *ctx, double r, uint64_t seed, uint64_t i, uint64_t draw);
} ic_spherical;
/* Particles [first, first + n) of p, each of mass `mass`; particle i's
 * draws are (seed, i, k), so a component's particles in a larger set
 * (a galaxy) are the same at any thread count too. */
bn_status ic_sample_spherical(uint64_t seed, bn_particles *p, size_t first, size_t n, double mass,
                              const ic_spherical *model);

/* ---- generators: fill pos, vel (G = 1) and mass of p (p->n set) ---- */
bn_status ic_plummer(const bn_ic_params *prm, bn_particles *p);
bn_status ic_halo(const bn_ic_params *prm, bn_particles *p);
bn_status ic_uniform_sphere(const bn_ic_params *prm, bn_particles *p);
bn_status ic_uniform_cube(const bn_ic_params *prm, bn_particles *p);

/* ---- ic_profiles.c: truncated Hernquist and NFW, G = 1 ------------ */
/* Both densities are A / (x (1+x)^k) with x = r / r_s (r_s = 1):
 * Hernquist (1990) k = 3, NFW (Navarro, Frenk & White 1997) k = 2. The
 * truncated model is rho(r) - rho(rt) for r < rt (continuous, so it has an
 * isotropic equilibrium; see ic_profiles.c), normalised to total mass 1. */
typedef struct ic_profile {
    bn_ic_model model;
    int k;          /* outer slope exponent of (1+x)                  */
    double amp;     /* A of the untruncated model (mass scale 1)      */
    double rt;      /* truncation radius                              */
    double rho_edge; /* untruncated density at rt, subtracted          */
    double mnorm;   /* untruncated mass inside rt: divides rho, M, Phi */
    double psi_max; /* relative potential at the centre               */
} ic_profile;

bn_status ic_profile_init(ic_profile *pr, bn_ic_model model, double truncation);
double ic_profile_density(const ic_profile *pr, double r);  /* 0 beyond rt    */
double ic_profile_mass(const ic_profile *pr, double r);     /* M(rt) = 1      */
double ic_profile_potential(const ic_profile *pr, double r); /* -1/r beyond rt */
/* Relative potential Psi(r) = Phi(rt) - Phi(r) (0 at rt) and its depth
 * below the centre psi_max - Psi(r), each without cancellation. */
double ic_profile_psi(const ic_profile *pr, double r);
double ic_profile_depth(const ic_profile *pr, double r);
/* d rho / d Psi and d^2 rho / d Psi^2 at radius r < rt. */
void ic_profile_drho_dpsi(const ic_profile *pr, double r, double *d1, double *d2);
/* Radius enclosing mass fraction m in (0, 1]. */
double ic_profile_radius_of_mass(const ic_profile *pr, double m);
/* Radius where psi_max - Psi(r) = depth, depth in (0, psi_max). */
double ic_profile_radius_of_depth(const ic_profile *pr, double depth);

/* ---- ic_eddington.c: f(E) of a truncated profile ------------------- */
/*
 * Eddington's formula (Binney & Tremaine 2008, eq. 4.46b) with the
 * relative potential Psi zero at the truncation radius:
 *   f(E) = 1/(sqrt(8) pi^2) [ int_0^E d2rho/dPsi2 dPsi / sqrt(E - Psi)
 *                             + (drho/dPsi)_{Psi=0} / sqrt(E) ].
 * The first part (f_a) is tabulated as ln f_a on a uniform grid of
 * u = ln(E / (psi_max - E)), which is logarithmic at both ends (E -> 0 at
 * the edge, E -> psi_max in the cusp); the second (f_b) is kept analytic
 * because it diverges at E = 0.
 */
/* What Eddington's formula needs of a component: its density as a
 * function of the relative potential Psi of the whole model (G
 * included), which is 0 at r_max (no density beyond) and psi_max at the
 * centre. One truncated halo in its own potential (ic_profile_df_model)
 * or a galaxy's spheroid in the galaxy's potential (ic_galaxy_pot.c). */
typedef struct ic_df_model {
    const void *ctx;
    const char *name;   /* in messages: "hernquist", "galaxy halo"      */
    double r_max, psi_max;
    double (*psi)(const void *ctx, double r);
    double (*depth)(const void *ctx, double r);  /* psi_max - Psi(r), without cancellation */
    double (*radius_of_depth)(const void *ctx, double depth);
    double (*dpsi_ds)(const void *ctx, double r); /* -dPsi/d ln r = G M(<r) / r */
    void (*drho_dpsi)(const void *ctx, double r, double *d1, double *d2);
} ic_df_model;
ic_df_model ic_profile_df_model(const ic_profile *pr);

typedef struct ic_df {
    ic_df_model m;
    const ic_profile *pr; /* ic_df_build's profile, else NULL           */
    size_t n;     /* table nodes                                       */
    double u0, du;
    double *lnfa; /* ln f_a at u0 + i du                                */
    double *lnfa_max; /* running maximum of lnfa (speed sampling's bound) */
    double fb;    /* f_b(E) = fb / sqrt(E)                              */
} ic_df;

/* Fails naming the component when f is negative somewhere (no isotropic
 * equilibrium of that density in that potential). */
bn_status ic_df_build_model(ic_df *df, const ic_df_model *m);
bn_status ic_df_build(ic_df *df, const ic_profile *pr);
void ic_df_free(ic_df *df);
/* f(E) with depth = psi_max - E passed separately for precision. */
double ic_df_eval(const ic_df *df, double E, double depth);
double ic_df_eval_a(const ic_df *df, double E, double depth);
/* Speed of particle i at radius r, drawn from v^2 f(Psi(r) - v^2/2) by
 * rejection, using draws from `draw` on. Returns -1 if no sample was
 * accepted in a generous number of tries (a bug). */
double ic_df_sample_speed(const ic_df *df, double r, uint64_t seed, uint64_t i, uint64_t draw);
#endif
