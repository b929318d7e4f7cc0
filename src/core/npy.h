/* npy.h -- include this (not numpy/arrayobject.h) in every C file that uses
 * the NumPy C-API; module.c alone imports the API tables. */
#ifndef ND_NPY_H
#define ND_NPY_H
#include "graph/graph.h"
#ifndef ND_MODULE_INIT
#define NO_IMPORT_ARRAY
#define NO_IMPORT_UFUNC
#endif
#define PY_ARRAY_UNIQUE_SYMBOL numdyn_ARRAY_API
#define PY_UFUNC_UNIQUE_SYMBOL numdyn_UFUNC_API
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
#endif
