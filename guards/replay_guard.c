/* replay_guard.c -- does a new argument fit what a replayed trace saw?
 *
 * Arrays are guarded exactly: type ndarray (subclasses are not traced),
 * dtype, rank, every size and stride, alignment and writeability. Exact
 * sizes make the recorded graph (whose nodes carry shapes) valid as is;
 * another shape simply records another entry. Scalars are guarded by value:
 * a trace bakes a Python scalar argument into the graph (or into Python
 * control flow), so only the same value may replay it. Two arguments that
 * were the same array object must be the same object again, and vice
 * versa: the trace gave them one storage (one graph input).
 */
#include "core/npy.h"
#include "replay_guard.h"
#include "core/containers.h"
#include <string.h>

#define AG_FLAGS (NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE)

int nd_argguard_record(nd_argguard *g, PyObject *const *args, Py_ssize_t n, Py_ssize_t i,
                       const char **why)
{
    PyObject *o = args[i];
    memset(g, 0, sizeof(*g));
    g->same_as = -1;
    if (PyArray_CheckExact(o)) {
        PyArrayObject *a = (PyArrayObject *)o;
        if (!nd_supported_array(o)) {
            *why = "an array argument of a dtype the tracer does not capture";
            return 1;
        }
        g->kind = ND_AG_ARRAY;
        g->typenum = PyArray_TYPE(a);
        g->ndim = PyArray_NDIM(a);
        g->flags = PyArray_FLAGS(a) & AG_FLAGS;
        if (g->ndim) {  /* a 0-d array's dims/strides are NULL */
            memcpy(g->shape, PyArray_DIMS(a), sizeof(npy_intp) * (size_t)g->ndim);
            memcpy(g->strides, PyArray_STRIDES(a), sizeof(npy_intp) * (size_t)g->ndim);
        }
        for (Py_ssize_t j = 0; j < i; j++)
            if (args[j] == o) { g->same_as = (int)j; break; }
        return 0;
    }
    if (PyFloat_CheckExact(o)) g->kind = ND_AG_FLOAT;
    else if (PyBool_Check(o)) g->kind = ND_AG_BOOL;
    else if (PyLong_CheckExact(o)) g->kind = ND_AG_INT;
    else if (PyComplex_CheckExact(o)) g->kind = ND_AG_COMPLEX;
    else if (o == Py_None) g->kind = ND_AG_NONE;
    else if (PyArray_IsScalar(o, Generic) && !PyArray_IsScalar(o, Object) &&
             !PyArray_IsScalar(o, Void) && !PyArray_IsScalar(o, Character))
        g->kind = ND_AG_NPSCALAR;
    else if (PyUnicode_CheckExact(o)) g->kind = ND_AG_STR;
    else {
        *why = "an argument that is not an ndarray, a scalar, None or a str";
        return 1;
    }
    g->value = Py_NewRef(o);
    return 0;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static int npscalar_equal(PyObject *a, PyObject *b)
{
    if (Py_TYPE(a) != Py_TYPE(b)) return 0;
    PyArray_Descr *da = PyArray_DescrFromScalar(a);
    if (!da) { PyErr_Clear(); return 0; }
    Py_ssize_t sz = PyDataType_ELSIZE(da);
    Py_DECREF(da);
    if (sz <= 0 || sz > 32) return 0;
    char x[32], y[32];
    memset(x, 0, sizeof x);
    memset(y, 0, sizeof y);
    PyArray_ScalarAsCtype(a, x);
    PyArray_ScalarAsCtype(b, y);
    return memcmp(x, y, (size_t)sz) == 0;
}

int nd_argguard_check(const nd_argguard *g, PyObject *const *args, Py_ssize_t i)
{
    PyObject *o = args[i];
    switch (g->kind) {
    case ND_AG_ARRAY: {
        if (!PyArray_CheckExact(o)) return 0;
        PyArrayObject *a = (PyArrayObject *)o;
        if (PyArray_TYPE(a) != g->typenum || PyArray_NDIM(a) != g->ndim ||
            (PyArray_FLAGS(a) & AG_FLAGS) != g->flags || !PyArray_ISNBO(PyArray_DESCR(a)->byteorder))
            return 0;
        if (memcmp(PyArray_DIMS(a), g->shape, sizeof(npy_intp) * (size_t)g->ndim) ||
            memcmp(PyArray_STRIDES(a), g->strides, sizeof(npy_intp) * (size_t)g->ndim))
            return 0;
        if (g->same_as >= 0) return args[g->same_as] == o;
        for (Py_ssize_t j = 0; j < i; j++) if (args[j] == o) return 0;
        return 1;
    }
    case ND_AG_FLOAT:
        return PyFloat_CheckExact(o) && same_bits(PyFloat_AS_DOUBLE(o), PyFloat_AS_DOUBLE(g->value));
    case ND_AG_BOOL:
    case ND_AG_NONE:
        return o == g->value;
    case ND_AG_INT: {
        if (!PyLong_CheckExact(o)) return 0;
        if (o == g->value) return 1;
        int r = PyObject_RichCompareBool(o, g->value, Py_EQ);
        if (r < 0) { PyErr_Clear(); return 0; }
        return r;
    }
    case ND_AG_COMPLEX: {
        if (!PyComplex_CheckExact(o)) return 0;
        Py_complex x = PyComplex_AsCComplex(o), y = PyComplex_AsCComplex(g->value);
        return same_bits(x.real, y.real) && same_bits(x.imag, y.imag);
    }
    case ND_AG_NPSCALAR:
        return npscalar_equal(o, g->value);
    case ND_AG_STR: {
        if (!PyUnicode_CheckExact(o)) return 0;
        if (o == g->value) return 1;
        int r = PyUnicode_Compare(o, g->value);
        if (r == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        return r == 0;
    }
    default:
        return 0;
    }
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case ND_AG_ARRAY: return "ndarray";
    case ND_AG_FLOAT: return "float";
    case ND_AG_INT: return "int";
    case ND_AG_BOOL: return "bool";
    case ND_AG_COMPLEX: return "complex";
    case ND_AG_NONE: return "NoneType";
    case ND_AG_NPSCALAR: return "NumPy scalar";
    case ND_AG_STR: return "str";
    default: return "?";
    }
}

PyObject *nd_argguard_miss(const nd_argguard *g, PyObject *const *args, Py_ssize_t i)
{
    PyObject *o = args[i];
    if (g->kind != ND_AG_ARRAY) {
        if (g->kind == ND_AG_NPSCALAR ? Py_TYPE(o) != Py_TYPE(g->value)
                                      : !nd_argguard_check(&(nd_argguard){.kind = g->kind,
                                                                          .value = o}, &o, 0))
            return PyUnicode_FromFormat("type of argument %zd changed: %s -> %s", i,
                                        g->kind == ND_AG_NPSCALAR ? Py_TYPE(g->value)->tp_name
                                                                  : kind_name(g->kind),
                                        Py_TYPE(o)->tp_name);
        return PyUnicode_FromFormat("value of argument %zd changed: %R -> %R", i, g->value, o);
    }
    if (!PyArray_CheckExact(o))
        return PyUnicode_FromFormat("type of argument %zd changed: ndarray -> %s", i,
                                    Py_TYPE(o)->tp_name);
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_TYPE(a) != g->typenum || !PyArray_ISNBO(PyArray_DESCR(a)->byteorder)) {
        PyObject *was = (PyObject *)PyArray_DescrFromType(g->typenum);
        PyObject *r = was ? PyUnicode_FromFormat("dtype of argument %zd changed: %S -> %S", i,
                                                 was, (PyObject *)PyArray_DESCR(a))
                          : NULL;
        Py_XDECREF(was);
        return r;
    }
    if (PyArray_NDIM(a) != g->ndim ||
        memcmp(PyArray_DIMS(a), g->shape, sizeof(npy_intp) * (size_t)g->ndim)) {
        PyObject *was = nd_intp_tuple(g->ndim, g->shape), *now = nd_intp_tuple(PyArray_NDIM(a), PyArray_DIMS(a));
        PyObject *r = was && now ? PyUnicode_FromFormat("shape of argument %zd changed: %S -> %S",
                                                        i, was, now)
                                 : NULL;
        Py_XDECREF(was);
        Py_XDECREF(now);
        return r;
    }
    if (memcmp(PyArray_STRIDES(a), g->strides, sizeof(npy_intp) * (size_t)g->ndim)) {
        PyObject *was = nd_intp_tuple(g->ndim, g->strides), *now = nd_intp_tuple(g->ndim, PyArray_STRIDES(a));
        PyObject *r = was && now ? PyUnicode_FromFormat(
                                       "strides (layout) of argument %zd changed: %S -> %S", i,
                                       was, now)
                                 : NULL;
        Py_XDECREF(was);
        Py_XDECREF(now);
        return r;
    }
    if ((PyArray_FLAGS(a) & NPY_ARRAY_ALIGNED) != (g->flags & NPY_ARRAY_ALIGNED))
        return PyUnicode_FromFormat("alignment of argument %zd changed", i);
    if ((PyArray_FLAGS(a) & NPY_ARRAY_WRITEABLE) != (g->flags & NPY_ARRAY_WRITEABLE))
        return PyUnicode_FromFormat("writeability of argument %zd changed", i);
    return PyUnicode_FromFormat("argument %zd %s another argument than before "
                                "(the trace shared one buffer between them)",
                                i, g->same_as >= 0 ? "is no longer the same array as"
                                                   : "is now the same array as");
}

void nd_argguard_clear(nd_argguard *g)
{
    Py_CLEAR(g->value);
    g->kind = 0;
}
