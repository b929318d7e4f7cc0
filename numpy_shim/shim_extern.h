/* shim_extern.h -- building EXTERN calls: what the NumPy areas that run
 * NumPy's own code inside the compiled program share (shim_extern.c).
 *
 * An area (shim_matmul.c, shim_linalg.c, shim_fft.c, shim_sort.c,
 * shim_stats.c) computes the result shapes by NumPy's rules, fills an
 * nd_ext_out, and calls nd_ext_build / nd_ext_simple; dtypes it leaves at
 * -1 come from a probe of NumPy itself on tiny arrays, cached per
 * (function, input dtypes and ranks, constant arguments).
 */
#ifndef ND_SHIM_EXTERN_H
#define ND_SHIM_EXTERN_H
#include "shim_xj.h"

typedef struct {
    int nout;     /* number of result arrays */
    int tuple;    /* NumPy returns a tuple (or namedtuple) of them */
    int scalar0d; /* 0-d results are NumPy scalars (np.dot, det...) */
    int dtype[4]; /* -1: ask the probe */
    int ndim[4];
    npy_intp shape[4][ND_MAXDIMS];
} nd_ext_out;

void nd_ext_init(nd_ext_out *o, int nout, int tuple, int scalar0d);
void nd_ext_shape(nd_ext_out *o, int k, int ndim, const npy_intp *shape);
/* one array result (not a tuple) of the given shape */
void nd_ext_init1(nd_ext_out *o, int scalar0d, int ndim, const npy_intp *shape);
/* Nodes for fn(*tmpl, **kw) on ins; the result NumPy would return (new ref). */
PyObject *nd_ext_build(nd_trace *t, PyObject *fn, PyObject *tmpl, PyObject *kw, int nin,
                       const nd_xj_arr *ins, nd_ext_out *o);
/* call numpy.<path> as NumPy would, with a simple positional template:
 * the nin inputs, then extra[0..nextra) */
PyObject *nd_ext_simple(nd_trace *t, const char *path, int nin, const nd_xj_arr *ins,
                        int nextra, PyObject *const *extra, PyObject *kw, nd_ext_out *o);
/* any of argv[from..to) given -> not modelled */
int nd_ext_given(PyObject **argv, int from, int to);
/* broadcast two batch shapes; 0 ok, 1 mismatch (no exception) */
int nd_ext_batch_broadcast(int n1, const npy_intp *s1, int n2, const npy_intp *s2, int *nd,
                           npy_intp *out);

/* each area registers its functions and methods */
int nd_shim_register_matmul(nd_shim_table *tab);
int nd_shim_register_linalg(nd_shim_table *tab);
int nd_shim_register_fft(nd_shim_table *tab);
int nd_shim_register_sort(nd_shim_table *tab);
int nd_shim_register_stats(nd_shim_table *tab);
#endif
