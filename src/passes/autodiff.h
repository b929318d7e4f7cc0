/* autodiff.h -- reverse-mode automatic differentiation over numdyn's IR.
 *
 * The backward graph is built from the forward graph: each differentiable op
 * has a vector-Jacobian-product rule that appends ordinary graph nodes
 * (ufuncs, reductions, views, setitems, externs) to the same graph, so the
 * backward is typed, fused and compiled like any other graph, and can itself
 * be differentiated again.
 *
 * Conventions (those of JAX at kinks and ties):
 *  - float16/32/64 and complex64/128 values carry gradients; integer and
 *    bool nodes stop them (a comparison, an argmax, an index);
 *  - complex values follow JAX: cotangents propagate by the transpose of
 *    the linearization, not its adjoint, so a holomorphic op's rule is its
 *    real rule (c * f'(z)) and vjp(f)(1) = f'(z); a real value's share of a
 *    complex cotangent is its real part; re(z) -> c, im(z) -> -1j c,
 *    conj(z) -> conj(c), |z| -> c conj(z)/|z| (0 at 0). numdyn.grad of a
 *    real loss conjugates that (python layer) to give torch's
 *    conjugate-Wirtinger gradient, the steepest-ascent direction.
 *    cumprod and slogdet's log|det| take complex values (its sign, the
 *    determinant's phase, does not); so do eigh/eigvalsh (Hermitian),
 *    svd (losses invariant to the gauge U, V -> U e^{i phi}, V e^{i phi})
 *    and qr (LAPACK's R has a real diagonal): torch's adjoint-convention
 *    rules run on conj(c), their result conjugated; so does cholesky
 *    (torch's rule); sort/partition and max/min/maximum/minimum take
 *    them in NumPy's lexicographic order;
 *  - linalg.eig/eigvals: eigenvalues and eigenvectors (torch's rule;
 *    distinct eigenvalues, losses invariant to the eigenvectors' phases);
 *    of a real matrix the node is complex and NumPy's real result its real
 *    part, so the gradient is the real part of the complex one (torch's);
 *  - numpy.fft: fft/ifft/fft2/ifft2/fftn/ifftn, rfft/rfft2/rfftn,
 *    irfft/irfft2/irfftn and hfft/ihfft, every norm=, with n/s that pad or
 *    crop the input (the transpose of zero-padding crops the cotangent, of
 *    a crop pads it);
 *  - median/quantile/percentile: each output's cotangent split between the
 *    order statistics it interpolates by NumPy's weights (every method
 *    NumPy has: the discrete ones route it to the order statistic they
 *    pick, averaged_inverted_cdf/midpoint halve it at exact indices), a
 *    tie's share to the element the stable sort puts there;
 *    maximum/minimum(.fmax/fmin).accumulate: to the last element equal to
 *    the running extremum (torch's cummax/cummin); logaddexp(2).accumulate:
 *    torch's logcumsumexp rule (an element at -inf gets 0);
 *  - convolve/correlate (every mode) by correlations of the cotangent;
 *    pinv, and lstsq at any rank (the minimum-norm solution through the
 *    pseudo-inverse at lstsq's own cutoff; the rank must not change nearby);
 *  - sort/partition: each element takes the cotangent of the position
 *    NumPy moved it to (partition's own arrangement, found by stable
 *    argsorts of its input and output);
 *    norm ord=2/-2/'nuc' through svd's singular values (the shim traces
 *    them so);
 *  - abs'(0) = 1 (JAX: select(x >= 0, g, -g)), sign/floor/ceil/round have
 *    zero derivative;
 *  - maximum/minimum give a tie half the cotangent each; np.clip's bounds
 *    (ND_F_CLIP) leave it to the clipped value: 1 on the closed interval
 *    [min, max], a bound's where it wins strictly, nobody's where
 *    min == max and x < min (torch.clamp);
 *    max/min reductions split the cotangent evenly among the tied maxima;
 *  - x ** y: d/dx is 0 where y == 0, d/dy is 0 where x == 0;
 *  - cumprod's gradient is exact where x has zeros (no division);
 *  - eigh/eigvalsh: the gradient of eigh((A + A^T)/2) (symmetric); svd
 *    and qr: of the reduced decompositions (a wide qr through its square
 *    first block); svd(full_matrices=True) of a non-square matrix ignores
 *    the cotangent of U's columns / Vh's rows past min(M, N), any basis of
 *    a complement (torch's convention); losses must
 *    not depend on the decompositions' sign choices;
 *  - an op without a rule raises NotImplementedError naming the op: never a
 *    silently wrong (zero) gradient.
 */
#ifndef ND_AUTODIFF_H
#define ND_AUTODIFF_H
#include "graph/graph.h"

/* Append to g the backward nodes of the outputs outs[0..nout) with
 * cotangents cts[0..nout) (nodes of the outputs' shapes and dtypes;
 * ND_NONE: a zero cotangent), differentiating with respect to the distinct
 * nodes wrt[0..nwrt). grads[k] receives the node of d<cts, outs>/d wrt[k]
 * (wrt[k]'s shape and dtype), or ND_NONE when no output depends on wrt[k]
 * through float values (its gradient is zero). wrt nodes are leaves: the
 * sweep stops at them. 0, or -1 with an exception set (NotImplementedError
 * for an op without a rule). */
int nd_autodiff_backward(nd_graph *g, int nout, const nd_id *outs, const nd_id *cts,
                         int nwrt, const nd_id *wrt, nd_id *grads);

/* 1 when a forward node read by backward nodes is cheap to recompute there
 * (pointwise work: ufuncs, casts, wheres, views, scalars, indices) rather
 * than worth saving: the partition of a deferred vjp saves the others. */
int nd_autodiff_recomputable(const nd_node *n);

/* What the forward of a deferred vjp saves for its backward: g's nodes
 * [0, nfwd) are the forward, [nfwd, g->n) the backward. A minimum cut by
 * bytes (autodiff_partition.c): every forward value the backward reads is
 * saved, recomputed by it from saved values through recomputable nodes,
 * or free (INPUT, SCALAR, INDEX nodes). *saved receives the saved node ids
 * in ascending order (PyMem; free it); returns their count, -1 with an
 * exception set. */
typedef struct {
    int64_t saved_bytes;     /* bytes of the saved values */
    int64_t boundary_bytes;  /* bytes of the values the backward reads directly:
                                what saving all of them would keep */
    int64_t recomputed;      /* forward nodes the backward computes again */
} nd_ad_partition_stats;
Py_ssize_t nd_autodiff_partition(const nd_graph *g, nd_id nfwd, nd_id **saved,
                                 nd_ad_partition_stats *stats);

/* Zeros of a node's shape and dtype (a broadcast scalar), appended to g. */
nd_id nd_autodiff_zeros(nd_graph *g, int dtype, int ndim, const npy_intp *shape);

/* At module init: the NumPy functions the EXTERN rules recognise. */
int nd_autodiff_init(void);
#endif
