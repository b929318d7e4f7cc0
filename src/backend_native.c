/* backend_native.c -- (STUB: to be written by the codegen owner). */
#include "backend.h"
int nd_native_init(PyObject *module) { (void)module; return 0; }
