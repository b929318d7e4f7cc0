/* guards.c -- module registration of the guards area (the fit rule itself
 * is guard_key.c). */
#include "guards.h"
int nd_guards_init(PyObject *module) { return nd_marks_init(module); }
