/* strides.h -- NumPy's layout rules as pure arithmetic on (shape, strides).
 *
 * Shared by the tracer (a proxy's map over its storage's flat index is a
 * strided layout in element units) and the shim (a caller array's memory,
 * in bytes or elements): the same rule decides NumPy's view-vs-copy and
 * builds the view, so the two can never disagree.
 */
#ifndef ND_STRIDES_H
#define ND_STRIDES_H
#include "npy.h"

/* NumPy's C-contiguous flag for (ndim, dims, strides) with unit stride
 * `unit`: dims of length 1 do not count, an empty array is contiguous. */
int nd_c_contiguous(int ndim, const npy_intp *dims, const npy_intp *strides, npy_intp unit);

/* NumPy's _attempt_nocopy_reshape (numpy/_core/src/multiarray/shape.c):
 * whether (ndim, dims, strides) can be viewed with the C-order shape
 * (nnd, ndims) without a copy; 1 and the view's strides in nstrides (may
 * be NULL), else 0. Empty sizes answer 0 (NumPy's caller handles them). */
int nd_nocopy_reshape(int ndim, const npy_intp *dims, const npy_intp *strides,
                      int nnd, const npy_intp *ndims, npy_intp *nstrides);

/* NumPy's memory order (order='K') for a new array of rank ndim made from
 * nops operands: perm[0] its outermost dim .. perm[ndim-1] its innermost.
 * st[k][d] is operand k's element stride along the new array's dim d, 0
 * where it carries no order (broadcast, length 1, missing). iter=1 is the
 * iterator's rule (npyiter_find_best_axis_ordering: ufuncs, reductions,
 * scans), iter=0 PyArray_CreateMultiSortedStridePerm's (copy, astype,
 * *_like, concatenate). They differ only when operands disagree: each
 * keeps the running order on a conflict, but they sort from opposite ends. */
void nd_korder(int nops, int ndim, const npy_intp (*st)[ND_MAXDIMS], int iter, int *perm);

/* C-order element strides of shape (0-size dims count as 1). */
void nd_c_strides(int ndim, const npy_intp *shape, npy_intp *strides);

/* Element strides of a dense array of `shape` whose dims lie in memory in
 * the order perm (outermost first). */
void nd_perm_strides(int ndim, const npy_intp *shape, const int *perm, npy_intp *strides);

/* Whether the byte extents of two arrays intersect (NumPy's
 * may_share_memory with max_work=0: bounds only). Empty arrays share
 * nothing. */
int nd_mem_overlap(PyArrayObject *x, PyArrayObject *y);
#endif
