/* guards.c -- (STUB: to be written by the codegen owner). */
#include "guards.h"
int nd_guards_init(PyObject *module) { (void)module; return 0; }
