/* shim_copyto.c -- np.copyto(dst, src, casting='same_kind', where=True) as
 * a functionalized write of dst, like `dst[...] = src`.
 *
 * Which calls NumPy accepts (the casting rule, value-based checks of Python
 * scalars, strict broadcasting of src and where to dst's shape, where's
 * dtype) is decided by NumPy itself, on stand-ins: zero-stride arrays with
 * the operands' dtypes and shapes (one element of memory each), so every
 * error is NumPy's own type and message and costs nothing per element. The
 * graph then writes dst's new value: src cast to dst's dtype and broadcast,
 * or where(mask, src, dst) with a mask.
 */
#include "shim_internal.h"

/* A zero-stride array of (dtype, ndim, shape) over one zeroed element. */
static PyObject *standin(int dtype, int ndim, const npy_intp *shape, int writeable)
{
    npy_intp zero[ND_MAXDIMS] = {0};
    PyObject *one = PyArray_ZEROS(0, NULL, dtype, 0);
    if (!one) return NULL;
    PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)one);
    Py_INCREF(d);
    PyObject *r = PyArray_NewFromDescr(&PyArray_Type, d, ndim, shape, zero,
                                       PyArray_DATA((PyArrayObject *)one),
                                       writeable ? NPY_ARRAY_WRITEABLE : 0, NULL);
    if (!r || PyArray_SetBaseObject((PyArrayObject *)r, one) < 0) {
        if (!r) Py_DECREF(one);
        Py_XDECREF(r);
        return NULL;
    }
    return r;
}

/* What NumPy's validation sees for an operand: proxies and arrays as
 * stand-ins of their dtype/shape, anything else (Python and NumPy scalars,
 * lists) as it is, since NumPy's checks on those depend on the values. */
static PyObject *probe_operand(PyObject *o)
{
    if (nd_proxy_check(o))
        return standin(nd_proxy_dtype(o), nd_proxy_ndim(o), nd_proxy_shape(o), 0);
    if (PyArray_Check(o) && PyArray_NDIM((PyArrayObject *)o) <= ND_MAXDIMS &&
        nd_dtype_ok(PyArray_TYPE((PyArrayObject *)o)))
        return standin(PyArray_TYPE((PyArrayObject *)o), PyArray_NDIM((PyArrayObject *)o),
                       PyArray_DIMS((PyArrayObject *)o), 0);
    return Py_NewRef(o);
}

static int numpy_accepts(PyObject *dst, PyObject *src, PyObject *casting, PyObject *where)
{
    PyObject *d = standin(nd_proxy_dtype(dst), nd_proxy_ndim(dst), nd_proxy_shape(dst), 1);
    PyObject *s = d ? probe_operand(src) : NULL;
    PyObject *w = s && where ? probe_operand(where) : NULL;
    PyObject *args = s ? PyTuple_Pack(2, d, s) : NULL;
    PyObject *kw = args ? PyDict_New() : NULL;
    PyObject *fn = kw ? PyObject_GetAttrString(nd_shim_numpy(), "copyto") : NULL;
    int rc = -1;
    if (fn && (!casting || PyDict_SetItemString(kw, "casting", casting) == 0) &&
        (!w || PyDict_SetItemString(kw, "where", w) == 0)) {
        PyObject *r = PyObject_Call(fn, args, kw);
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
    Py_XDECREF(fn);
    Py_XDECREF(kw);
    Py_XDECREF(args);
    Py_XDECREF(w);
    Py_XDECREF(s);
    Py_XDECREF(d);
    return rc;
}

static PyObject *copyto_impl(nd_trace *t, PyObject **argv)
{
    PyObject *dst = argv[0], *src = argv[1], *casting = argv[2], *where = argv[3];
    if (nd_proxy_check(dst) && nd_proxy_is_scalar(dst)) {
        /* a NumPy scalar the function computed is no array to copy into */
        PyObject *tp = PyArray_TypeObjectFromType(nd_proxy_dtype(dst));
        if (tp)
            PyErr_Format(PyExc_TypeError, "copyto() argument 1 must be a numpy.ndarray, not %.100s",
                         ((PyTypeObject *)tp)->tp_name);
        Py_XDECREF(tp);
        return NULL;
    }
    if (!nd_proxy_check(dst) || !nd_proxy_live(dst)) {
        if (!PyArray_Check(dst)) {
            PyErr_Format(PyExc_TypeError,
                         "copyto() argument 1 must be a numpy.ndarray, not %.100s",
                         Py_TYPE(dst)->tp_name);
            return NULL;
        }
        return nd_shim_unsupported("numpy.copyto into an array that is not traced");
    }
    if (where == Py_True) where = NULL;
    if (numpy_accepts(dst, src, casting, where) < 0) return NULL;
    /* NumPy skips copying an array onto itself (same data, dtype, shape and
     * strides: PyArray_AssignArray's redundant-copy check), before it
     * checks that dst is writeable */
    if (nd_proxy_same_view(dst, src)) Py_RETURN_NONE;
    int dt = nd_proxy_dtype(dst), ndim = nd_proxy_ndim(dst);
    const npy_intp *shape = nd_proxy_shape(dst);
    /* numpy_accepts gave NumPy's warnings; a replayed call would not */
    int sdt = nd_proxy_check(src) ? nd_proxy_dtype(src) : PyArray_Check(src) ? PyArray_TYPE((PyArrayObject *)src)
              : PyComplex_Check(src) || PyArray_IsScalar(src, ComplexFloating) ? NPY_CDOUBLE : -1;
    if (sdt >= 0 && PyTypeNum_ISCOMPLEX(sdt) && !PyTypeNum_ISCOMPLEX(dt)) nd_trace_not_replayable(t);
    nd_id v = nd_shim_assign_value(t, src, dt, ndim, shape, 0, 0);
    if (v == ND_NONE) return PyErr_Occurred() ? NULL : nd_shim_unsupported("numpy.copyto of this source");
    if (where) {
        nd_operand m;
        int rc = nd_shim_operand(t, where, &m);
        if (rc) return NULL;  /* error, or unsupported (reason recorded) */
        nd_id mask = nd_shim_operand_at(t, &m, NPY_BOOL);
        if (mask == ND_NONE) return NULL;
        if ((mask = nd_shim_node_broadcast(t, mask, ndim, shape)) == ND_NONE) return NULL;
        nd_id cur = nd_proxy_read(dst);
        if (cur == ND_NONE) return NULL;
        if ((v = nd_shim_node_where(t, mask, v, cur, dt)) == ND_NONE) return NULL;
    }
    if (nd_proxy_write(dst, v) < 0) return NULL;
    Py_RETURN_NONE;
}

static const nd_shim_def copyto_defs[] = {
    {"copyto", "dst,src|casting,where", copyto_impl, 0},
    {NULL},
};

int nd_shim_register_copyto(nd_shim_table *tab)
{
    return nd_shim_add_functions(tab, copyto_defs);
}
