/* graph_py.c -- numdyn.Graph (STUB: to be replaced by the shim owner). */
#include "graph_py.h"
PyTypeObject NdGraph_Type = { PyVarObject_HEAD_INIT(NULL, 0) .tp_name = "numdyn.Graph" };
PyObject *nd_graphpy_wrap(nd_graph *g, const nd_id *outs, int nout)
{ nd_graph_free(g); PyErr_SetString(PyExc_NotImplementedError, "stub"); return NULL; }
PyObject *nd_graph_repr(nd_graph *g, const nd_id *outs, int nout)
{ PyErr_SetString(PyExc_NotImplementedError, "stub"); return NULL; }
int nd_graphpy_init(PyObject *module) { (void)module; return 0; }
