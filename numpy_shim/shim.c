/* shim.c -- (STUB: to be written by the shim owner). */
#include "shim.h"
int nd_shim_init(PyObject *module) { (void)module; return 0; }
