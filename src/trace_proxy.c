/* trace_proxy.c -- lazy proxy type (STUB: to be written by the tracer owner). */
#include "trace.h"
PyTypeObject NdProxy_Type = { PyVarObject_HEAD_INIT(NULL, 0) .tp_name = "numdyn._C.LazyArray" };
int nd_trace_init(PyObject *module) { (void)module; return 0; }
