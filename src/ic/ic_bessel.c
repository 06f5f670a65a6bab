/* Modified Bessel functions I0, I1, K0, K1 by the polynomial fits of
 * Abramowitz & Stegun (1964), 9.8.1-9.8.8: the exponential disk's
 * circular speed (Freeman 1970) needs them and C has none. */
#include <math.h>
#include "ic/ic_galaxy.h"

/* c[0] + c[1] t + ... + c[n-1] t^(n-1) */
static double poly(const double *c, int n, double t)
{
    double s = c[n - 1];
    for (int k = n - 2; k >= 0; k--) s = s * t + c[k];
    return s;
}

double gx_bessel_i0(double x)
{
    static const double a[7] = {1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813};
    static const double b[9] = {0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281,
                                -0.02057706, 0.02635537, -0.01647633, 0.00392377};
    const double t = x / 3.75;
    if (x <= 3.75) return poly(a, 7, t * t);
    return exp(x) / sqrt(x) * poly(b, 9, 1 / t);
}

double gx_bessel_i1(double x)
{
    static const double a[7] = {0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411};
    static const double b[9] = {0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555,
                                0.02282967, -0.02895312, 0.01787654, -0.00420059};
    const double t = x / 3.75;
    if (x <= 3.75) return x * poly(a, 7, t * t);
    return exp(x) / sqrt(x) * poly(b, 9, 1 / t);
}

double gx_bessel_k0(double x)
{
    static const double a[7] = {-0.57721566, 0.42278420, 0.23069756, 0.03488590, 0.00262698, 0.00010750, 0.00000740};
    static const double b[7] = {1.25331414, -0.07832358, 0.02189568, -0.01062446, 0.00587872, -0.00251540, 0.00053208};
    if (x <= 2) return -log(x / 2) * gx_bessel_i0(x) + poly(a, 7, x * x / 4);
    return exp(-x) / sqrt(x) * poly(b, 7, 2 / x);
}

double gx_bessel_k1(double x)
{
    static const double a[7] = {1.0, 0.15443144, -0.67278579, -0.18156897, -0.01919402, -0.00110404, -0.00004686};
    static const double b[7] = {1.25331414, 0.23498619, -0.03655620, 0.01504268, -0.00780353, 0.00325614, -0.00068245};
    if (x <= 2) return log(x / 2) * gx_bessel_i1(x) + poly(a, 7, x * x / 4) / x;
    return exp(-x) / sqrt(x) * poly(b, 7, 2 / x);
}
