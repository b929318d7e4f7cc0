/* trace_lift.c -- lifting Python values into the trace: caller arrays get
 * a storage (written back at flushes), Python and NumPy scalars become
 * SCALAR nodes (weak or strong, NEP 50), array-likes become INPUT nodes. */
#include "trace_internal.h"
#include "core/strides.h"
#include "core/counters.h"
#include "trace_replay.h"
#include <string.h>

extern PyTypeObject NdProxy_Type;

/* Storage for a caller array, created on first sight (borrowed result). */
nd_storage *nd__caller_storage(nd_trace *t, PyObject *arr)
{
    nd_storage *s = nd__caller_find(t, arr);
    if (s) return s;
    PyObject *base = arr;
    if (!PyArray_CheckExact(arr)) {
        /* subclasses (matrix, memmap...) take part as plain ndarray data */
        base = PyArray_View((PyArrayObject *)arr, NULL, &PyArray_Type);
        if (!base) return NULL;
    } else {
        Py_INCREF(base);
    }
    nd_id id = nd__input_node(t, base);
    Py_DECREF(base);
    if (id == ND_NONE) return NULL;
    s = nd__storage_new(t, id, arr);
    if (!s) return NULL;
    if (nd__caller_add(t, s) < 0) { nd__storage_decref(s); return NULL; }
    nd__storage_decref(s);  /* the caller table holds it */
    return s;
}

static nd_id scalar_node(nd_trace *t, PyObject *obj, int dtype, int weak)
{
    nd_node n;
    nd_node_init(&n, ND_OP_SCALAR, dtype, 0, NULL);
    if (weak) n.flags |= ND_F_WEAK;
    switch (dtype) {
    case NPY_BOOL:
        if ((n.scalar.i = PyObject_IsTrue(obj)) < 0) return ND_NONE;
        break;
    case NPY_HALF: case NPY_FLOAT: case NPY_DOUBLE:
        n.scalar.f = PyFloat_AsDouble(obj);
        if (n.scalar.f == -1.0 && PyErr_Occurred()) return ND_NONE;
        break;
    case NPY_CFLOAT: case NPY_CDOUBLE: {
        Py_complex c = PyComplex_AsCComplex(obj);
        if (c.real == -1.0 && PyErr_Occurred()) return ND_NONE;
        n.scalar.c.re = c.real;
        n.scalar.c.im = c.imag;
        break;
    }
    default: {  /* integers */
        PyObject *i = PyNumber_Index(obj);
        if (!i) return ND_NONE;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
        if (overflow > 0) {
            /* a weak int above int64 keeps its value as uint64 when it fits;
             * beyond that the shim raises NumPy's OverflowError from obj */
            unsigned long long u = PyLong_AsUnsignedLongLong(i);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                u = 0;
            } else if (weak) {
                n.dtype = NPY_UINT64;
            }
            n.scalar.u = u;
        } else if (overflow < 0) {
            n.scalar.i = 0;
        } else {
            if (v == -1 && PyErr_Occurred()) { Py_DECREF(i); return ND_NONE; }
            n.scalar.i = v;
        }
        Py_DECREF(i);
    }
    }
    n.obj = Py_NewRef(obj);
    nd_id id = nd_graph_add(t->g, &n);
    if (id == ND_NONE) Py_DECREF(obj);
    return id;
}

nd_id nd_trace_lift(nd_trace *t, PyObject *obj)
{
    if (!t) t = nd_trace_current();
    if (!t) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: nd_trace_lift outside a trace");
        return ND_NONE;
    }
    if (nd_proxy_check(obj)) return nd_proxy_read(obj);
    if (PyArray_Check(obj)) {
        if (!nd_supported_array(obj)) {
            PyErr_Format(PyExc_TypeError,
                         "numdyn: arrays of dtype %R (or rank above %d, or non-native "
                         "byte order) are not traced",
                         (PyObject *)PyArray_DESCR((PyArrayObject *)obj), ND_MAXDIMS);
            return ND_NONE;
        }
        nd_storage *s = nd__caller_find(t, obj);
        if (!s) {
            s = nd__caller_storage(t, obj);
            if (!s) return ND_NONE;
            /* not an argument: Python code holds this very array and may
             * change it with NumPy (`b += 1`, `G[0] = 5`) before the pending
             * graph runs. Writeable memory (or a view, whose base may be)
             * is read through a snapshot taken now, and writes into it land
             * at once (shared), as under NumPy. */
            if (PyArray_ISWRITEABLE((PyArrayObject *)obj) || PyArray_BASE((PyArrayObject *)obj))
                s->foreign = s->shared = 1;
        }
        if (s->foreign && !s->dirty) {
            PyObject *snap = PyArray_NewCopy((PyArrayObject *)obj, NPY_KEEPORDER);
            nd_id id = snap ? nd__input_node(t, snap) : ND_NONE;
            Py_XDECREF(snap);
            if (id == ND_NONE) return ND_NONE;
            nd_counter_add(ND_CTR_FOREIGN_SNAPSHOT_BYTES, (long long)PyArray_NBYTES((PyArrayObject *)obj));
            s->version = id;
            if (t->pins) nd__pins_lifted(t, obj, id);
        }
        if (!s->rebased) return s->version;
        PyObject *p = nd__caller_proxy(s, 0);  /* its map over the memory order */
        nd_id id = p ? nd__proxy_read_own((NdProxy *)p) : ND_NONE;
        Py_XDECREF(p);
        return id;
    }
    if (PyBool_Check(obj)) return scalar_node(t, obj, NPY_BOOL, 1);
    if (PyLong_Check(obj)) return scalar_node(t, obj, NPY_INT64, 1);
    if (PyFloat_Check(obj)) return scalar_node(t, obj, NPY_DOUBLE, 1);
    if (PyComplex_Check(obj)) return scalar_node(t, obj, NPY_CDOUBLE, 1);
    if (PyArray_IsScalar(obj, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(obj);
        if (!d) return ND_NONE;
        int tn = d->type_num;
        Py_DECREF(d);
        PyObject *probe = PyArray_FROM_O(obj);
        if (!probe) return ND_NONE;
        int ok = nd_supported_array(probe);
        Py_DECREF(probe);
        if (ok) return scalar_node(t, obj, tn, 0);
        PyErr_Format(PyExc_TypeError, "numdyn: NumPy scalars of type %s are not traced",
                     Py_TYPE(obj)->tp_name);
        return ND_NONE;
    }
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        PyObject *arr = PyArray_FROM_O(obj);
        if (!arr) return ND_NONE;
        nd_id id = ND_NONE;
        if (nd_supported_array(arr)) id = nd__input_node(t, arr);
        else PyErr_Format(PyExc_TypeError,
                          "numdyn: a sequence converting to dtype %R is not traced",
                          (PyObject *)PyArray_DESCR((PyArrayObject *)arr));
        Py_DECREF(arr);
        return id;
    }
    PyErr_Format(PyExc_TypeError, "numdyn: cannot use an object of type %s as an array",
                 Py_TYPE(obj)->tp_name);
    return ND_NONE;
}
