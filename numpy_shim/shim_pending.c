/* shim_pending.c -- temporary: entry points not written yet (shim helper is
 * replacing these one area at a time). Raise NotImplementedError. */
#include "shim_priv.h"
#define PENDING(ret) { PyErr_SetString(PyExc_NotImplementedError, "numdyn shim: not yet implemented"); return ret; }
int nd_shim_register_create(nd_shim_table *tab) { (void)tab; return 0; }
int nd_shim_register_index(nd_shim_table *tab) { (void)tab; return 0; }
int nd_shim_register_methods(nd_shim_table *tab) { (void)tab; return 0; }
int nd_shim_register_elementwise(nd_shim_table *tab) { (void)tab; return 0; }
PyObject *nd_shim_getitem(PyObject *s, PyObject *k) PENDING(NULL)
int nd_shim_setitem(PyObject *s, PyObject *k, PyObject *v) PENDING(-1)
