/* shim_xj.h -- array-argument and node helpers shared by shim_join.c,
 * shim_extern.c and shim_advidx.c (the "extern" area of the shim;
 * implemented in shim_xj.c). Not a contract for other areas: they use
 * shim_internal.h.
 *
 * Conventions:
 *  - an nd_xj_arr is a node id with a snapshot of its dtype, rank and
 *    shape; helpers that change the id (reshape) refresh the snapshot;
 *  - int-returning helpers: 0 ok, -1 error with an exception set, 1 (where
 *    stated) "not modelled": a reason is recorded with nd_shim_unsupported
 *    or, for argument parsers, nothing is set and the caller decides;
 *  - nd_id-returning helpers: ND_NONE with an exception set;
 *  - `path` arguments name a numpy attribute ("linalg.svd") and must be
 *    static strings: lookups are cached by the pointer.
 */
#ifndef ND_SHIM_XJ_H
#define ND_SHIM_XJ_H
#include "shim_internal.h"
#include "core/strides.h"

typedef struct nd_xj_arr {
    nd_id id;
    int dtype, ndim;
    npy_intp shape[ND_MAXDIMS];
} nd_xj_arr;

/* ------------------------------------------------------- shapes, arrays */

/* refresh a->dtype/ndim/shape from a->id */
void nd_xj_fill(nd_trace *t, nd_xj_arr *a);
npy_intp nd_xj_size(int ndim, const npy_intp *shape);
/* An array-like argument as a node, with np.asarray semantics (Python
 * scalars are strong). 0, -1, or 1 unsupported (reason recorded). */
int nd_xj_array(nd_trace *t, PyObject *obj, nd_xj_arr *a);
/* value-level C-order reshape (a VIEW); a no-op when the shape is a's */
int nd_xj_reshape(nd_trace *t, nd_xj_arr *a, int ndim, const npy_intp *shape);
int nd_xj_ravel(nd_trace *t, nd_xj_arr *a);

/* ---------------------------------------------------------------- nodes */

nd_id nd_xj_i64(nd_trace *t, long long v);
/* int64 ufunc node (comparisons give bool); for add, an ND_NONE operand
 * means "absent" and the other is returned */
nd_id nd_xj_ibin(nd_trace *t, int uf, nd_id x, nd_id y);
/* x uf c for a constant c (identities fold away) */
nd_id nd_xj_ibin_c(nd_trace *t, int uf, nd_id x, long long c);
/* value broadcast to shape at dtype; a weak Python int must fit (NEP 50) */
nd_id nd_xj_full(nd_trace *t, PyObject *value, int dtype, int weak, int ndim,
                 const npy_intp *shape);
nd_id nd_xj_zeros(nd_trace *t, int dtype, int ndim, const npy_intp *shape);
/* base with the affine region (voff, vstrides over vshape, base's C-order
 * flat index) replaced by val (broadcast, cast to base's dtype) */
nd_id nd_xj_setitem(nd_trace *t, nd_id base, nd_id val, int vndim, const npy_intp *vshape,
                    npy_intp voff, const npy_intp *vstrides);
/* src's elements at the int64 flat indices `flat` (already in range) */
nd_id nd_xj_gather(nd_trace *t, nd_id src, nd_id flat);
/* np.take along axis ax with int64 indices already in [0, a.shape[ax]) */
nd_id nd_xj_take_axis(nd_trace *t, const nd_xj_arr *a, int ax, const nd_xj_arr *idx);

/* ------------------------------------------------------- NumPy's word */

/* numpy.<path> (new ref), cached per path */
PyObject *nd_xj_np_attr(const char *path);
/* o with every leaf replaced: leaf(o, ctx, &out) returns 1 with *out (new
 * ref) for a leaf it replaces, 0 to keep o (tuples and lists are walked,
 * keeping their type; anything else is kept as is), -1 on error. */
typedef int (*nd_xj_leaf_fn)(PyObject *o, void *ctx, PyObject **out);
PyObject *nd_xj_map_template(PyObject *o, nd_xj_leaf_fn leaf, void *ctx);
/* EXTERN args template (placeholder 0..nin-1, then extra[], NULL = None) */
PyObject *nd_xj_tmpl(int nin, int nextra, PyObject *const *extra);
/* dtype/shape-faithful array whose elements all alias one zero (strides 0) */
PyObject *nd_xj_standin(int dtype, int ndim, const npy_intp *shape);
/* Let NumPy raise its own error for a call the shape rules reject: calls
 * numpy.<path> with proxies replaced by stand-ins (argv/params as the
 * def's). NULL with NumPy's exception, or with an unsupported reason when
 * NumPy accepts the call after all. */
PyObject *nd_xj_numpy_error(const char *path, const char *params, PyObject **argv);

/* -------------------------------------------------------------- arguments */

/* A sequence of ints -- or with allow_int a single int too -- (axes=,
 * shift=, reps=...) into out[0..*n). 0 ok; 1 not that (or an item is not
 * an int), 2 more than cap items: both with no exception set; -1 a value
 * beyond npy_intp (OverflowError set). The length is checked before the
 * items are read. */
int nd_xj_int_list(PyObject *o, int allow_int, npy_intp *out, int cap, int *n);
/* Two array arguments argv[0], argv[1] (nd_xj_array each): 0, -1 or 1. */
int nd_xj_array2(nd_trace *t, PyObject **argv, nd_xj_arr *in);

#endif
