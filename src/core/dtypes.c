/* dtypes.c -- names and membership of the IR's dtypes (dtypes.h). */
#include "dtypes.h"

const char *nd_dtype_name(int t)
{
    switch (t) {
#define ND_DT(typenum, name, kind, sized) case typenum: return name;
#include "dtypes.def"
#undef ND_DT
    default: return "?";
    }
}

int nd_dtype_ok(int t)
{
    switch (t) {
#define ND_DT(typenum, name, kind, sized) case typenum: return sized;
#include "dtypes.def"
#undef ND_DT
    default:
        return 0;
    }
}

int nd_dtype_known(int t)
{
    switch (t) {
#define ND_DT(typenum, name, kind, sized) case typenum:
#include "dtypes.def"
#undef ND_DT
        return 1;
    default:
        return 0;
    }
}

int nd_dtype_canonical(PyArray_Descr *d)
{
    int t = d->type_num;
    if (!PyTypeNum_ISINTEGER(t)) return t;
    int u = PyTypeNum_ISUNSIGNED(t);
    switch (PyDataType_ELSIZE(d)) {
    case 1: return u ? NPY_UINT8 : NPY_INT8;
    case 2: return u ? NPY_UINT16 : NPY_INT16;
    case 4: return u ? NPY_UINT32 : NPY_INT32;
    case 8: return u ? NPY_UINT64 : NPY_INT64;
    default: return t;
    }
}
