/* autodiff_kernels.h -- numeric VJP kernels the rules call as EXTERN nodes
 * (private to passes/: autodiff.c builds the nodes).
 *
 * Each is a builtin taking arrays (and constants from the node's template)
 * and returning the float64 cotangent of x, x's shape; the rule's acc
 * casts it to x's dtype. They exist where the VJP is a data-dependent
 * routing of the cotangent (which element a running maximum or an order
 * statistic came from) that graph nodes would spell only with sorts and
 * scatters of their own. */
#ifndef ND_AUTODIFF_KERNELS_H
#define ND_AUTODIFF_KERNELS_H
#include "core/core.h"

/* cumext_vjp(x, y, c, axis): y = maximum.accumulate(x, axis) (or minimum's,
 * fmax's, fmin's); each c[i] goes to the last element x[j], j <= i,
 * equal to y[i] (torch's cummax/cummin indices). */
extern PyObject *nd_ad_cumext_vjp;

/* lae_scan_vjp(x, y, c, axis, base2): y = logaddexp.accumulate(x, axis)
 * (base2: logaddexp2's); g_j = sum_{i >= j} c_i exp(x_j - y_i), by a
 * reverse scan whose factors never exceed 1. */
extern PyObject *nd_ad_lae_scan_vjp;

/* powacc_vjp(x, y, c, axis): y = power.accumulate(x, axis); a reverse
 * scan of the chain rule through y_i = y_{i-1} ** x_i (np.power's rule). */
extern PyObject *nd_ad_powacc_vjp;

/* quantile_vjp(x, c, q, axis, method): y = quantile(x, q, axis, method)
 * with q in [0, 1] (a float or a sequence; c has q's dims first, then the
 * reduced shape with or without kept 1-dims); every output's cotangent is
 * split between the two order statistics it interpolates by NumPy's
 * weights (1 - gamma, gamma) for the continuous methods, all of it to the
 * one it takes for lower/higher/nearest/inverted_cdf/closest_observation
 * (midpoint, averaged_inverted_cdf at an exact index: halves). Ties in x:
 * the stable sort's order decides which element is which order statistic. */
extern PyObject *nd_ad_quantile_vjp;

/* interp_vjp(x, xp, fp, c, which, left_none, right_none): y = interp(x,
 * xp, fp[, left, right]). which 0: the cotangent of x (x's shape): c times
 * the slope of the segment NumPy's search picks (xp[j] <= x < xp[j+1]; the
 * last one at x == xp[-1]; JAX's convention at the knots), 0 outside
 * [xp[0], xp[-1]]. which 1: the cotangent of fp (fp's length): c split
 * (1 - t, t) between the segment's ends, an exact knot's all to its fp,
 * and outside the range all to fp[0] / fp[-1] when left / right is None
 * (the values NumPy then returns; given constants take none). */
extern PyObject *nd_ad_interp_vjp;

/* 1 when quantile_vjp knows NumPy's method named s */
int nd_ad_quantile_method_known(const char *s);

int nd_ad_kernels_init(void);
#endif
