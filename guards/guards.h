/* guards.h -- does something cached fit new inputs? (see guards.c) */
#ifndef ND_GUARDS_H
#define ND_GUARDS_H
#include "../src/graph.h"
int nd_guards_init(PyObject *module);
#endif
