/* graph_py.h -- numdyn.Graph: the Python view of a standalone graph. */
#ifndef ND_GRAPH_PY_H
#define ND_GRAPH_PY_H
#include "graph.h"
extern PyTypeObject NdGraph_Type;
/* Wrap a standalone graph (steals g) with its output ids (copied). */
PyObject *nd_graphpy_wrap(nd_graph *g, const nd_id *outs, int nout);
int nd_graphpy_init(PyObject *module);
/* The graph and outputs a numdyn.Graph wraps (borrowed, alive while o is);
 * -1 + TypeError when o is not a numdyn.Graph. */
int nd_graphpy_parts(PyObject *o, nd_graph **g, const nd_id **outs, int *nout);
/* What Graph.__call__ runs the graph with (a backend's run, e.g. the eager
 * one), set at module init: graph/ depends on no backend. */
typedef PyObject *(*nd_graph_runner)(nd_graph *g, const nd_id *outs, int nout);
void nd_graphpy_set_runner(nd_graph_runner run);
#endif
