/* npy.h -- the NumPy C-API as every layer sees it, and the limits all of
 * them share. Include this (not numpy/arrayobject.h) in every C file that
 * uses the NumPy C-API; module.c alone imports the API tables (it defines
 * ND_MODULE_INIT first). core/ depends on nothing else of numdyn. */
#ifndef ND_NPY_H
#define ND_NPY_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#ifndef NPY_NO_DEPRECATED_API
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#endif
/* NumPy >= 2.5's ndarraytypes.h declares the C-API table itself, so the
 * table's shared name and import mode must be set before any NumPy header;
 * else each file gets a private, never-imported table and crashes. */
#ifndef ND_MODULE_INIT
#define NO_IMPORT_ARRAY
#define NO_IMPORT_UFUNC
#endif
#define PY_ARRAY_UNIQUE_SYMBOL numdyn_ARRAY_API
#define PY_UFUNC_UNIQUE_SYMBOL numdyn_UFUNC_API
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#define ND_MAXDIMS 8  /* arrays of higher rank are not traced: graph break */

/* Keep the raised exception across cleanup code that may call Python, then
 * put it back or drop it: one spelling for CPython 3.10 .. 3.13+ (3.12
 * replaced the (type, value, traceback) triple by one object). */
#if PY_VERSION_HEX >= 0x030C0000
#define ND_EXC_SAVE(v) PyObject *v = PyErr_GetRaisedException()
#define ND_EXC_RESTORE(v) PyErr_SetRaisedException(v)
#define ND_EXC_DROP(v) Py_XDECREF(v)
#else
#define ND_EXC_SAVE(v) PyObject *v##_t, *v##_v, *v##_tb; PyErr_Fetch(&v##_t, &v##_v, &v##_tb)
#define ND_EXC_RESTORE(v) PyErr_Restore(v##_t, v##_v, v##_tb)
#define ND_EXC_DROP(v) (Py_XDECREF(v##_t), Py_XDECREF(v##_v), Py_XDECREF(v##_tb))
#endif
#endif
