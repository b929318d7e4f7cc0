/* trace_proxy.c -- (STUB: to be replaced by the tracer owner). */
#include "trace.h"
#define STUB_NULL { PyErr_SetString(PyExc_NotImplementedError, "numdyn tracer: not yet implemented"); return NULL; }
PyTypeObject NdProxy_Type = { PyVarObject_HEAD_INIT(NULL, 0) .tp_name = "numdyn._C.LazyArray" };
nd_trace *nd_trace_current(void) { return NULL; }
nd_graph *nd_trace_graph(nd_trace *t) { return NULL; }
PyObject *nd_proxy_wrap(nd_trace *t, nd_id id, int is_scalar) STUB_NULL
int nd_proxy_is_scalar(PyObject *p) { return 0; }
nd_id nd_proxy_read(PyObject *p) { PyErr_SetString(PyExc_NotImplementedError, "stub"); return ND_NONE; }
int nd_proxy_dtype(PyObject *p) { return -1; }
int nd_proxy_ndim(PyObject *p) { return -1; }
const npy_intp *nd_proxy_shape(PyObject *p) { return NULL; }
int nd_proxy_write(PyObject *p, nd_id v) { PyErr_SetString(PyExc_NotImplementedError, "stub"); return -1; }
PyObject *nd_proxy_view(PyObject *b, int nd, const npy_intp *sh, npy_intp off, const npy_intp *st) STUB_NULL
nd_id nd_trace_lift(nd_trace *t, PyObject *o) { PyErr_SetString(PyExc_NotImplementedError, "stub"); return ND_NONE; }
PyObject *nd_trace_materialize(PyObject *p, const char *r) STUB_NULL
PyObject *nd_trace_fallback_call(PyObject *f, PyObject *a, PyObject *k, const char *r) STUB_NULL
int nd_trace_record_break(nd_trace *t, const char *r) { return 0; }
int nd_trace_init(PyObject *module) { (void)module; return 0; }
