/* shim.h -- NumPy's API in terms of graph nodes, NEP-50 typed.
 *
 * Owned by the numpy_shim/ sources. Called by the proxy type (operators,
 * __array_ufunc__, __array_function__, methods) and exposed as a module
 * (numdyn._C.shim) that compiled functions see in place of `numpy`.
 * Everything returns a new reference (a proxy, a real NumPy scalar, or
 * whatever NumPy would return), or NULL with NumPy's exception set.
 */
#ifndef ND_SHIM_H
#define ND_SHIM_H
#include "graph/graph.h"

/* ufunc call on operands (proxies, arrays, scalars) -- operator fast path */
PyObject *nd_shim_ufunc1(int ufunc_id, PyObject *a);
PyObject *nd_shim_ufunc2(int ufunc_id, PyObject *a, PyObject *b);
/* in-place operator: a op= b (writes through nd_proxy_write) */
PyObject *nd_shim_ufunc2_inplace(int ufunc_id, PyObject *a, PyObject *b);

/* builtin max()/min() of lazy NumPy scalars (trace.h nd_numpy_entries) */
PyObject *nd_shim_builtin_minmax(int is_max, PyObject *const *args, Py_ssize_t n);

/* The protocols: what NumPy hands the proxy. */
PyObject *nd_shim_array_ufunc(PyObject *ufunc, PyObject *method,
                              PyObject *args, PyObject *kwargs);
PyObject *nd_shim_array_function(PyObject *func, PyObject *types,
                                 PyObject *args, PyObject *kwargs);
/* ndarray methods of the proxy: name e.g. "sum", self prepended to args. */
PyObject *nd_shim_method(const char *name, PyObject *self, PyObject *args,
                         PyObject *kwargs);
/* __getitem__ / __setitem__ of a proxy */
PyObject *nd_shim_getitem(PyObject *self, PyObject *key);
int nd_shim_setitem(PyObject *self, PyObject *key, PyObject *value);

/* The module used in place of `numpy` inside compiled functions (borrowed).
 * Attributes it does not define fall through to numpy itself. */
PyObject *nd_shim_module(void);
/* The shim's replacement for a NumPy function object (e.g. numpy.zeros), or
 * NULL (no exception) when the shim has none. Borrowed. */
PyObject *nd_shim_lookup(PyObject *numpy_func);

/* NEP 50: resolve the loop dtypes of ufunc `ufunc_id` for operands with the
 * given dtypes (weak[k] != 0: a Python scalar of kind dtypes[k]).
 * Fills loop_in[nin] and out[nout]. Cached in C; NumPy is the oracle. */
int nd_shim_resolve_ufunc(int ufunc_id, int nin, const int *dtypes,
                          const int *weak, PyObject *const *scalar_values,
                          int *loop_in, int *out);

int nd_shim_init(PyObject *module);
#endif
