/* shim.c -- (STUB: to be replaced by the shim owner). Every entry point
 * raises NotImplementedError so that the tree links while work proceeds. */
#include "shim.h"
#define STUB_NULL { PyErr_SetString(PyExc_NotImplementedError, "numdyn shim: not yet implemented"); return NULL; }
PyObject *nd_shim_ufunc1(int u, PyObject *a) STUB_NULL
PyObject *nd_shim_ufunc2(int u, PyObject *a, PyObject *b) STUB_NULL
PyObject *nd_shim_ufunc2_inplace(int u, PyObject *a, PyObject *b) STUB_NULL
PyObject *nd_shim_array_ufunc(PyObject *u, PyObject *m, PyObject *a, PyObject *k) STUB_NULL
PyObject *nd_shim_array_function(PyObject *f, PyObject *t, PyObject *a, PyObject *k) STUB_NULL
PyObject *nd_shim_method(const char *n, PyObject *s, PyObject *a, PyObject *k) STUB_NULL
PyObject *nd_shim_getitem(PyObject *s, PyObject *k) STUB_NULL
int nd_shim_setitem(PyObject *s, PyObject *k, PyObject *v) { PyErr_SetString(PyExc_NotImplementedError, "stub"); return -1; }
PyObject *nd_shim_module(void) { return NULL; }
PyObject *nd_shim_lookup(PyObject *f) { return NULL; }
int nd_shim_resolve_ufunc(int u, int nin, const int *d, const int *w, PyObject *const *s, int *li, int *o)
{ PyErr_SetString(PyExc_NotImplementedError, "stub"); return -1; }
int nd_shim_init(PyObject *module) { (void)module; return 0; }
