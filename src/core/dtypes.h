/* dtypes.h -- the IR's dtypes (dtypes.def, one X-macro) and their names. */
#ifndef ND_DTYPES_H
#define ND_DTYPES_H
#include "npy.h"

/* NumPy's name of a typenum of the IR ("float64"), "?" for any other. */
const char *nd_dtype_name(int typenum);
/* 1 when typenum is a dtype of the IR (bool, int8..64, uint8..64,
 * float16/32/64, complex64/128) as the graph speaks it: sized typenums
 * only (NPY_INT64, not its alias NPY_LONGLONG). */
int nd_dtype_ok(int typenum);
/* 1 for those and their platform aliases (NPY_LONGLONG, NPY_ULONGLONG):
 * what an ndarray may have to be bound to an INPUT node. */
int nd_dtype_known(int typenum);
/* d's typenum with NumPy's platform aliases of integers folded onto the
 * sized ones (NPY_LONGLONG -> NPY_INT64 on LP64): the graph speaks sized
 * typenums only. Other dtypes keep their typenum. */
int nd_dtype_canonical(PyArray_Descr *d);
#endif
