/* backend_eager.c -- (STUB: to be replaced by the shim owner). */
#include "backend.h"
PyObject *nd_backend_eager_run(nd_graph *g, const nd_id *outs, int nout)
{ PyErr_SetString(PyExc_NotImplementedError, "eager backend: not yet implemented"); return NULL; }
PyObject *nd_eval_node(nd_graph *g, nd_id id, PyObject *const *inputs)
{ PyErr_SetString(PyExc_NotImplementedError, "eager eval: not yet implemented"); return NULL; }
