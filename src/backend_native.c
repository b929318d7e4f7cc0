/* backend_native.c -- (STUB: to be replaced by the codegen owner): runs as eager. */
#include "backend.h"
PyObject *nd_backend_native_run(nd_graph *g, const nd_id *outs, int nout, PyObject *options)
{ return nd_backend_eager_run(g, outs, nout); }
int nd_native_init(PyObject *module) { (void)module; return 0; }
