/* graph_py.c -- numdyn.Graph (STUB: to be written by the shim owner). */
#include "graph_py.h"
int nd_graphpy_init(PyObject *module) { (void)module; return 0; }
