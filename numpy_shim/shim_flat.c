/* shim_flat.c -- x.flat of a proxy: indexing x in C order, as NumPy's
 * flatiter does.
 *
 * Reads are x reshaped to 1-d (a value, like NumPy's flat[...] copies) then
 * indexed. Writes are functional: the 1-d value is updated and reshaped
 * back into x, so views of x see them (`res[:n].flat[::n+1] = v`, as in
 * NumPy's own np.diag, must reach res). NumPy's flat assignment repeats a
 * short value instead of broadcasting it; when the value is neither one
 * element nor exactly as long as a slice or integer key selects, NumPy does
 * the assignment on x's concrete value (a recorded break), written back
 * into x the same way.
 */
#include "shim_internal.h"

typedef struct {
    PyObject_HEAD
    PyObject *x;  /* the proxy */
} NdFlat;

static PyTypeObject NdFlat_Type;

static npy_intp size_of(PyObject *x)
{
    npy_intp n = 1;
    for (int d = 0; d < nd_proxy_ndim(x); d++) n *= nd_proxy_shape(x)[d];
    return n;
}

/* a new proxy holding x raveled (C order), or NULL */
static PyObject *raveled(nd_trace *t, PyObject *x)
{
    nd_id v = nd_proxy_read(x);
    npy_intp n = size_of(x);
    if (v == ND_NONE || (v = nd_shim_node_reshape(t, v, 1, &n)) == ND_NONE) return NULL;
    return nd_shim_wrap(t, v, 0);
}

static int live(NdFlat *f, nd_trace **t)
{
    *t = nd_trace_current();
    return *t && nd_proxy_live(f->x);
}

static PyObject *concrete_flat(NdFlat *f)
{
    PyObject *a = nd_trace_read(f->x, "ndarray.flat (an access numdyn runs with NumPy)");
    if (!a) return NULL;
    PyObject *r = PyObject_GetAttrString(a, "flat");
    Py_DECREF(a);
    return r;
}

static PyObject *flat_getitem(PyObject *o, PyObject *key)
{
    NdFlat *f = (NdFlat *)o;
    nd_trace *t;
    if (!live(f, &t)) {
        PyObject *fl = concrete_flat(f);
        PyObject *r = fl ? PyObject_GetItem(fl, key) : NULL;
        Py_XDECREF(fl);
        return r;
    }
    PyObject *r1 = raveled(t, f->x);
    if (!r1) return NULL;
    PyObject *r = nd_shim_getitem(r1, key);
    Py_DECREF(r1);
    return r;
}

/* Does a write of `value` at `key` mean the same as setitem on the 1-d
 * value (one element, or exactly the selected length)? */
static int plain_write(PyObject *key, PyObject *value, npy_intp n)
{
    npy_intp vn;
    if (PyLong_Check(value) || PyFloat_Check(value) || PyComplex_Check(value) ||
        PyBool_Check(value) || PyArray_IsScalar(value, Generic))
        return 1;
    if (nd_proxy_check(value)) {
        vn = size_of(value);
    } else if (PyArray_Check(value)) {
        vn = PyArray_SIZE((PyArrayObject *)value);
    } else {
        return 0;
    }
    if (vn == 1) return 1;
    if (PySlice_Check(key)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0) { PyErr_Clear(); return 0; }
        return PySlice_AdjustIndices(n, &start, &stop, step) == vn;
    }
    return 0;
}

static int flat_setitem(PyObject *o, PyObject *key, PyObject *value)
{
    NdFlat *f = (NdFlat *)o;
    nd_trace *t;
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "Cannot delete array elements.");
        return -1;
    }
    if (!live(f, &t)) {
        PyObject *fl = concrete_flat(f);
        int r = fl ? PyObject_SetItem(fl, key, value) : -1;
        Py_XDECREF(fl);
        return r;
    }
    PyObject *x = f->x;
    int ndim = nd_proxy_ndim(x);
    npy_intp shape[ND_MAXDIMS];
    for (int d = 0; d < ndim; d++) shape[d] = nd_proxy_shape(x)[d];
    if (plain_write(key, value, size_of(x))) {
        PyObject *r1 = raveled(t, x);
        if (!r1) return -1;
        int rc = nd_shim_setitem(r1, key, value);
        nd_id v = rc < 0 ? ND_NONE : nd_proxy_read(r1);
        Py_DECREF(r1);
        if (v == ND_NONE || (v = nd_shim_node_reshape(t, v, ndim, shape)) == ND_NONE) return -1;
        return nd_proxy_write(x, v);
    }
    /* NumPy's repeating assignment, on a private copy of x's value */
    static const char why[] = "ndarray.flat assignment of a value NumPy repeats";
    PyObject *cur = nd_trace_break_value(x, why);
    if (!cur) return -1;
    PyObject *c = PyArray_NewCopy((PyArrayObject *)cur, NPY_CORDER);
    Py_DECREF(cur);
    if (!c) return -1;
    if (nd_trace_record_break(t, why) < 0) {
        Py_DECREF(c);
        return -1;
    }
    PyObject *fl = PyObject_GetAttrString(c, "flat");
    int rc = -1;
    if (fl) {
        /* the value may itself be lazy: NumPy needs it concrete */
        PyObject *v = nd_proxy_check(value) ? nd_trace_materialize(value, NULL) : Py_NewRef(value);
        if (v) {
            rc = PyObject_SetItem(fl, key, v);
            Py_DECREF(v);
        }
        Py_DECREF(fl);
    }
    if (rc == 0) {
        nd_id id = nd_trace_lift(t, c);
        rc = id == ND_NONE ? -1 : nd_proxy_write(x, id);
    }
    Py_DECREF(c);
    return rc;
}

static Py_ssize_t flat_len(PyObject *o) { return (Py_ssize_t)size_of(((NdFlat *)o)->x); }

static PyObject *flat_iter(PyObject *o)
{
    PyObject *fl = concrete_flat((NdFlat *)o);
    if (!fl) return NULL;
    PyObject *it = PyObject_GetIter(fl);
    Py_DECREF(fl);
    return it;
}

static PyObject *flat_array(PyObject *o, PyObject *args, PyObject *kwargs)
{
    NdFlat *f = (NdFlat *)o;
    PyObject *a = nd_trace_materialize(f->x, NULL);
    if (!a) return NULL;
    PyObject *r = PyArray_Ravel((PyArrayObject *)a, NPY_CORDER);
    Py_DECREF(a);
    return r;
}

static PyObject *flat_copy(PyObject *o, PyObject *unused)
{
    NdFlat *f = (NdFlat *)o;
    nd_trace *t;
    if (!live(f, &t)) {
        PyObject *a = flat_array(o, NULL, NULL);
        if (!a) return NULL;
        PyObject *c = PyArray_NewCopy((PyArrayObject *)a, NPY_CORDER);
        Py_DECREF(a);
        return c;
    }
    return raveled(t, f->x);
}

static PyObject *flat_base(PyObject *o, void *unused) { return Py_NewRef(((NdFlat *)o)->x); }

static void flat_dealloc(PyObject *o)
{
    Py_XDECREF(((NdFlat *)o)->x);
    Py_TYPE(o)->tp_free(o);
}

static PyMappingMethods flat_mapping = {flat_len, flat_getitem, flat_setitem};
static PyMethodDef flat_methods[] = {
    {"copy", flat_copy, METH_NOARGS, "x.flat.copy(): x raveled"},
    {"__array__", (PyCFunction)(void (*)(void))flat_array, METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL},
};
static PyGetSetDef flat_getset[] = {{"base", flat_base, NULL, NULL, NULL}, {NULL}};

static PyTypeObject NdFlat_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.LazyFlatIter",
    .tp_basicsize = sizeof(NdFlat),
    .tp_dealloc = flat_dealloc,
    .tp_as_mapping = &flat_mapping,
    .tp_iter = flat_iter,
    .tp_methods = flat_methods,
    .tp_getset = flat_getset,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "x.flat of a numdyn lazy array",
};

static PyObject *flat_attr(nd_trace *t, PyObject **argv)
{
    NdFlat *f = PyObject_New(NdFlat, &NdFlat_Type);
    if (!f) return NULL;
    f->x = Py_NewRef(argv[0]);
    return (PyObject *)f;
}

static const nd_shim_def flat_defs[] = {
    {"flat", "self", flat_attr, 0},
    {NULL},
};

int nd_shim_register_flat(nd_shim_table *tab)
{
    if (PyType_Ready(&NdFlat_Type) < 0) return -1;
    return nd_shim_add_methods(tab, flat_defs);
}
