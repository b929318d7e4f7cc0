/* containers.c -- Python containers: built from C arrays, and walked
 * (containers.h). */
#include "containers.h"

PyObject *nd_intp_tuple(int n, const npy_intp *v)
{
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int d = 0; d < n; d++) {
        PyObject *x = PyLong_FromSsize_t(v[d]);
        if (!x) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, d, x);
    }
    return t;
}

PyObject *nd_tuple_prepend(PyObject *first, PyObject *rest)
{
    Py_ssize_t n = rest ? PyTuple_GET_SIZE(rest) : 0;
    PyObject *t = PyTuple_New(n + 1);
    if (!t) return NULL;
    PyTuple_SET_ITEM(t, 0, Py_NewRef(first));
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(t, i + 1, Py_NewRef(PyTuple_GET_ITEM(rest, i)));
    return t;
}

int nd_vectorcall_unpack(PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames,
                         int always_dict, PyObject **args, PyObject **kwargs)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    *kwargs = NULL;
    if (!(*args = PyTuple_New(nargs))) return -1;
    for (Py_ssize_t i = 0; i < nargs; i++) PyTuple_SET_ITEM(*args, i, Py_NewRef(argv[i]));
    if (!nkw && !always_dict) return 0;
    if (!(*kwargs = PyDict_New())) goto fail;
    for (Py_ssize_t i = 0; i < nkw; i++)
        if (PyDict_SetItem(*kwargs, PyTuple_GET_ITEM(kwnames, i), argv[nargs + i]) < 0) goto fail;
    return 0;
fail:
    Py_CLEAR(*args);
    Py_CLEAR(*kwargs);
    return -1;
}

char nd__not_leaf;

static PyObject *walk(PyObject *o, nd_leaf_fn fn, void *ctx, int depth, int maxdepth,
                      unsigned flags)
{
    PyObject *r = fn(o, depth, ctx);
    if (r != ND_NOT_LEAF) return r;
    if (depth > maxdepth) return Py_NewRef(o);
    int is_tuple = PyTuple_Check(o);
    if (is_tuple || PyList_Check(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        /* made at the first item that changes (most walks change nothing):
         * the result itself for an exact tuple or a list */
        int as_tuple = PyTuple_CheckExact(o);
        PyObject *items = NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(o, i);
            PyObject *w = walk(it, fn, ctx, depth + 1, maxdepth, flags);
            if (!w) { Py_XDECREF(items); return NULL; }
            if (!items && w != it) {
                if (!(items = as_tuple ? PyTuple_New(n) : PyList_New(n))) { Py_DECREF(w); return NULL; }
                for (Py_ssize_t j = 0; j < i; j++) {
                    PyObject *same = Py_NewRef(PySequence_Fast_GET_ITEM(o, j));
                    if (as_tuple) PyTuple_SET_ITEM(items, j, same);
                    else PyList_SET_ITEM(items, j, same);
                }
            }
            if (!items) Py_DECREF(w);
            else if (as_tuple) PyTuple_SET_ITEM(items, i, w);
            else PyList_SET_ITEM(items, i, w);
        }
        if (!items) return Py_NewRef(o);
        if (!is_tuple || as_tuple) return items;
        if (!PyObject_HasAttrString((PyObject *)Py_TYPE(o), "_make"))
            r = PyList_AsTuple(items);
        else  /* namedtuple */
            r = PyObject_CallMethod((PyObject *)Py_TYPE(o), "_make", "O", items);
        Py_DECREF(items);
        return r;
    }
    if (PyDict_CheckExact(o) || ((flags & ND_WALK_DICT_SUBCLASSES) && PyDict_Check(o))) {
        PyObject *d = PyDict_New();
        if (!d) return NULL;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        int changed = 0;
        while (PyDict_Next(o, &pos, &k, &v)) {
            PyObject *w = walk(v, fn, ctx, depth + 1, maxdepth, flags);
            if (!w || PyDict_SetItem(d, k, w) < 0) { Py_XDECREF(w); Py_DECREF(d); return NULL; }
            changed |= w != v;
            Py_DECREF(w);
        }
        if (!changed) { Py_DECREF(d); return Py_NewRef(o); }
        if (!PyDict_CheckExact(o)) {
            /* OrderedDict, defaultdict...: same type, same items */
            r = PyObject_CallMethod(o, "copy", NULL);
            if (r && PyDict_Update(r, d) < 0) Py_CLEAR(r);
            Py_DECREF(d);
            return r;
        }
        return d;
    }
    return Py_NewRef(o);
}

PyObject *nd_map_leaves(PyObject *o, nd_leaf_fn fn, void *ctx, int maxdepth, unsigned flags)
{
    return walk(o, fn, ctx, 0, maxdepth, flags);
}

static PyObject *leaf_append(PyObject *o, int depth, void *ctx)
{
    if (PyTuple_Check(o) || PyList_Check(o) || PyDict_CheckExact(o)) return ND_NOT_LEAF;
    return PyList_Append((PyObject *)ctx, o) < 0 ? NULL : Py_NewRef(o);
}

PyObject *nd_tree_leaves(PyObject *o, int maxdepth)
{
    PyObject *list = PyList_New(0);
    PyObject *r = list ? nd_map_leaves(o, leaf_append, list, maxdepth, 0) : NULL;
    if (!r) { Py_XDECREF(list); return NULL; }
    Py_DECREF(r);
    return list;
}

typedef struct {
    PyObject *leaves;
    Py_ssize_t next;
} unflatten_ctx;

static PyObject *leaf_next(PyObject *o, int depth, void *ctx)
{
    if (PyTuple_Check(o) || PyList_Check(o) || PyDict_CheckExact(o)) return ND_NOT_LEAF;
    unflatten_ctx *c = ctx;
    if (c->next >= PySequence_Fast_GET_SIZE(c->leaves)) {
        PyErr_SetString(PyExc_ValueError, "numdyn: fewer leaves than the structure holds");
        return NULL;
    }
    return Py_NewRef(PySequence_Fast_GET_ITEM(c->leaves, c->next++));
}

PyObject *nd_tree_unflatten(PyObject *o, PyObject *leaves, int maxdepth)
{
    PyObject *seq = PySequence_Fast(leaves, "numdyn: leaves must be a sequence");
    if (!seq) return NULL;
    unflatten_ctx c = {seq, 0};
    PyObject *r = nd_map_leaves(o, leaf_next, &c, maxdepth, 0);
    if (r && c.next != PySequence_Fast_GET_SIZE(seq)) {
        PyErr_SetString(PyExc_ValueError, "numdyn: more leaves than the structure holds");
        Py_CLEAR(r);
    }
    Py_DECREF(seq);
    return r;
}

int nd_tree_each(PyObject *o, nd_visit_fn fn, void *ctx, int maxdepth)
{
    int rc = 0;
    if (PyTuple_Check(o) || PyList_Check(o)) {
        for (Py_ssize_t i = 0; maxdepth >= 0 && !rc && i < PySequence_Fast_GET_SIZE(o); i++)
            rc = nd_tree_each(PySequence_Fast_GET_ITEM(o, i), fn, ctx, maxdepth - 1);
        return rc;
    }
    if (PyDict_Check(o)) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (maxdepth >= 0 && !rc && PyDict_Next(o, &pos, &k, &v))
            rc = nd_tree_each(v, fn, ctx, maxdepth - 1);
        return rc;
    }
    return fn(o, ctx);
}

typedef struct { int (*pred)(PyObject *); } any_ctx;

static int any_leaf(PyObject *o, void *ctx) { return ((any_ctx *)ctx)->pred(o) ? 1 : 0; }

int nd_tree_any(PyObject *o, int (*pred)(PyObject *), int maxdepth)
{
    any_ctx c = {pred};
    return nd_tree_each(o, any_leaf, &c, maxdepth);
}
