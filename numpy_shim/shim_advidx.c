/* shim_advidx.c -- advanced indexing, ufunc.at (owned by the "extern"
 * helper). Initial version written by shim: correct fallbacks that
 * materialize, run real NumPy and record a graph break. */
#include "shim_internal.h"

int nd_shim_register_advidx(nd_shim_table *tab)
{
    (void)tab;
    return 0;
}

static PyObject *operator_attr(const char *name)
{
    PyObject *op = PyImport_ImportModule("operator");
    if (!op) return NULL;
    PyObject *f = PyObject_GetAttrString(op, name);
    Py_DECREF(op);
    return f;
}

PyObject *nd_shim_advidx_getitem(nd_trace *t, PyObject *self, PyObject *key)
{
    (void)t;
    PyObject *getitem = operator_attr("getitem");
    if (!getitem) return NULL;
    PyObject *args = PyTuple_Pack(2, self, key);
    if (!args) { Py_DECREF(getitem); return NULL; }
    PyObject *r = nd_trace_fallback_call(getitem, args, NULL,
                                         "advanced indexing is not supported in-graph");
    Py_DECREF(args);
    Py_DECREF(getitem);
    return r;
}

/* Functional update: run NumPy on a private copy of self's value, then make
 * that copy self's new value, so every view of the storage sees it. */
static int fallback_update(nd_trace *t, PyObject *self, PyObject *func,
                           PyObject *rest, PyObject *kwargs, const char *reason)
{
    PyObject *cur = nd_trace_materialize(self, reason);
    if (!cur) return -1;
    PyObject *copy = PyObject_CallMethod(cur, "copy", NULL);
    Py_DECREF(cur);
    if (!copy) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(rest);
    PyObject *args = PyTuple_New(n + 1);
    if (!args) { Py_DECREF(copy); return -1; }
    Py_INCREF(copy);
    PyTuple_SET_ITEM(args, 0, copy);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(rest, i);
        Py_INCREF(o);
        PyTuple_SET_ITEM(args, i + 1, o);
    }
    PyObject *r = nd_trace_fallback_call(func, args, kwargs, reason);
    Py_DECREF(args);
    if (!r) { Py_DECREF(copy); return -1; }
    Py_DECREF(r);
    nd_id v = nd_trace_lift(t, copy);
    Py_DECREF(copy);
    if (v == ND_NONE) return -1;
    return nd_proxy_write(self, v);
}

int nd_shim_advidx_setitem(nd_trace *t, PyObject *self, PyObject *key, PyObject *value)
{
    PyObject *setitem = operator_attr("setitem");
    if (!setitem) return -1;
    PyObject *rest = PyTuple_Pack(2, key, value);
    if (!rest) { Py_DECREF(setitem); return -1; }
    int r = fallback_update(t, self, setitem, rest, NULL,
                            "advanced index assignment is not supported in-graph");
    Py_DECREF(rest);
    Py_DECREF(setitem);
    return r;
}

PyObject *nd_shim_ufunc_at(nd_trace *t, PyObject *ufunc, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 1 || !nd_proxy_check(PyTuple_GET_ITEM(args, 0)))
        return nd_trace_fallback_call(ufunc, args, kwargs, "ufunc.at is not supported in-graph");
    PyObject *at = PyObject_GetAttrString(ufunc, "at");
    if (!at) return NULL;
    PyObject *rest = PyTuple_GetSlice(args, 1, n);
    if (!rest) { Py_DECREF(at); return NULL; }
    int r = fallback_update(t, PyTuple_GET_ITEM(args, 0), at, rest, kwargs,
                            "ufunc.at is not supported in-graph");
    Py_DECREF(rest);
    Py_DECREF(at);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}
