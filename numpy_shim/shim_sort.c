/* shim_sort.c -- sort, argsort, partition, argpartition, searchsorted (and the methods)
 * as EXTERN nodes or fused graph ops (see shim_internal.h, "EXTERN calls", for how an extern
 * call is built: shapes by NumPy's rules written in C, dtypes from a cached
 * probe of NumPy itself). */
#include "shim_internal.h"
#include <string.h>

/* ------------------------------------------------------------------ sort */

/* kind: 0 sort, 1 argsort, 2 partition, 3 argpartition. For functions:
 * argv = a, (kth,) axis, kind, order[, stable]. Returns the node's proxy. */
static PyObject *sort_node(nd_trace *t, const char *path, nd_xj_arr *a, PyObject *axis,
                           PyObject *kind, PyObject *kth, PyObject *stable, int which,
                           const char *P, PyObject **argv)
{
    int ax = -1;
    if (axis == Py_None) {
        npy_intp n = nd_xj_size(a->ndim, a->shape);
        if (nd_xj_reshape(t, a, 1, &n) < 0) return NULL;
        ax = 0;
    } else {
        if (a->ndim == 0) return nd_xj_numpy_error(path, P, argv);
        if (!axis) ax = a->ndim - 1;
        /* sort, partition: normalize_axis_index; argsort, argpartition:
         * PyArray_AxisConverter */
        else if (nd_shim_axis_conv(axis, a->ndim, &ax, which & 1 ? ND_AXIS_CONVERTER
                                                                 : ND_AXIS_NORMALIZE) < 0)
            return NULL;
    }
    if (kth) {
        npy_intp n = a->shape[ax];
        PyObject *seq = nd_shim_index_like(kth) ? PyTuple_Pack(1, kth) : PySequence_Fast(kth, "kth");
        if (!seq) { PyErr_Clear(); return nd_xj_numpy_error(path, P, argv); }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
            Py_ssize_t k = nd_shim_index_like(e) ? PyNumber_AsSsize_t(e, NULL) : n + 1;
            if (k < -n || k >= n) { Py_DECREF(seq); return nd_xj_numpy_error(path, P, argv); }
        }
        Py_DECREF(seq);
    }
    nd_ext_out o;
    nd_ext_init1(&o, 0, a->ndim, a->shape);
    o.dtype[0] = which & 1 ? NPY_INTP : a->dtype;
    PyObject *axo = PyLong_FromLong(ax);
    if (!axo) return NULL;
    PyObject *kw = NULL, *r = NULL;
    if (stable && !(kw = Py_BuildValue("{sO}", "stable", stable))) { Py_DECREF(axo); return NULL; }
    const char *fpath = which == 0 ? "sort" : which == 1 ? "argsort" : which == 2 ? "partition" : "argpartition";
    if (kth) {
        PyObject *kc = nd_shim_index_like(kth) ? (Py_INCREF(kth), kth) : PySequence_Tuple(kth);
        if (kc) {
            PyObject *extra[3] = {kc, axo, kind ? kind : Py_None};
            if (!kind) {
                extra[2] = PyUnicode_FromString("introselect");
                if (extra[2]) { r = nd_ext_simple(t, fpath, 1, a, 3, extra, kw, &o); Py_DECREF(extra[2]); }
            } else {
                r = nd_ext_simple(t, fpath, 1, a, 3, extra, kw, &o);
            }
            Py_DECREF(kc);
        }
    } else {
        PyObject *extra[2] = {axo, kind ? kind : Py_None};
        r = nd_ext_simple(t, fpath, 1, a, 2, extra, kw, &o);
    }
    Py_DECREF(axo);
    Py_XDECREF(kw);
    return r;
}

static PyObject *sort_fn(nd_trace *t, PyObject **argv, int which)
{
    static const char *paths[] = {"sort", "argsort", "partition", "argpartition"};
    static const char *params[] = {"a|axis,kind,order;stable", "a|axis,kind,order;stable",
                                   "a,kth|axis,kind,order", "a,kth|axis,kind,order"};
    int part = which >= 2;
    PyObject *kth = part ? argv[1] : NULL;
    PyObject **rest = argv + (part ? 2 : 1);  /* axis, kind, order[, stable] */
    if (rest[2] && rest[2] != Py_None) return nd_shim_unsupported("numpy.%s with order=", paths[which]);
    if ((kth && nd_proxy_check(kth)) || (rest[0] && nd_proxy_check(rest[0])))
        return nd_shim_unsupported("numpy.%s with lazy kth/axis", paths[which]);
    /* argsort/argpartition are C (PyArray_AxisConverter): a bool axis is no
     * integer there; sort/partition go through Python and take it as 0/1 */
    if ((which & 1) && rest[0] && !PyTuple_Check(rest[0]) &&
        nd_shim_axis_bool_refused(rest[0], "an integer is required for the axis") < 0)
        return NULL;
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    PyObject *r = sort_node(t, paths[which], &a, rest[0], rest[1], kth, part ? NULL : rest[3], which,
                            params[which], argv);
    /* np.sort / np.partition sort a.copy(order='K'); the arg* forms are C.
     * NumPy computes the value; the order is known before it runs, for
     * view-vs-copy of the pending result */
    if (r && !(which & 1)) nd_proxy_set_order(r, argv[0], 'K');
    return r;
}

static PyObject *sort_impl(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 0); }
static PyObject *argsort_impl(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 1); }
static PyObject *partition_impl(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 2); }
static PyObject *argpartition_impl(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 3); }

/* ndarray.sort / ndarray.partition: in place, through the proxy's storage */
static PyObject *sort_method_common(nd_trace *t, PyObject **argv, int which)
{
    PyObject *self = argv[0];
    int part = which == 2;
    PyObject *kth = part ? argv[1] : NULL;
    PyObject **rest = argv + (part ? 2 : 1);
    if (rest[2] && rest[2] != Py_None) return nd_shim_unsupported("ndarray.sort with order=");
    if (rest[0] == Py_None) {
        /* ndarray.sort(axis=None) is an error in NumPy; let it say so */
        nd_shim_unsupported("ndarray.sort with axis=None");
        return NULL;
    }
    nd_xj_arr a;
    if (nd_xj_array(t, self, &a)) return NULL;
    if (a.ndim == 0) return nd_shim_unsupported("ndarray.sort of a 0-d array");
    PyObject *r = sort_node(t, part ? "partition" : "sort", &a, rest[0], rest[1], kth,
                            part ? NULL : rest[3], which, "a|axis,kind,order;stable", argv);
    if (!r) return NULL;
    nd_id v = nd_proxy_read(r);
    Py_DECREF(r);
    if (v == ND_NONE || nd_proxy_write(self, v) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *sort_method(nd_trace *t, PyObject **argv) { return sort_method_common(t, argv, 0); }
static PyObject *partition_method(nd_trace *t, PyObject **argv) { return sort_method_common(t, argv, 2); }

static PyObject *argsort_method(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 1); }
static PyObject *argpartition_method(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 3); }

static PyObject *searchsorted_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a,v|side,sorter";
    nd_xj_arr in[3];
    if (nd_xj_array2(t, argv, in)) return NULL;
    if (in[0].ndim != 1) return nd_xj_numpy_error("searchsorted", P, argv);
    int nin = 2;
    if (argv[3] && argv[3] != Py_None) {
        if (nd_xj_array(t, argv[3], &in[2])) return NULL;
        nin = 3;
    }
    nd_ext_out o;
    nd_ext_init1(&o, 1, in[1].ndim, in[1].shape);
    o.dtype[0] = NPY_INTP;
    PyObject *fn = nd_xj_np_attr("searchsorted");
    if (!fn) return NULL;
    PyObject *p0 = nd_extern_placeholder(0), *p1 = nd_extern_placeholder(1);
    PyObject *p2 = nin == 3 ? nd_extern_placeholder(2) : (Py_INCREF(Py_None), Py_None);
    PyObject *side = argv[2] ? (Py_INCREF(argv[2]), argv[2]) : PyUnicode_FromString("left");
    PyObject *tmpl = (p0 && p1 && p2 && side) ? PyTuple_Pack(4, p0, p1, side, p2) : NULL;
    PyObject *r = NULL;
    Py_XDECREF(side);
    /* searchsorted of a Python scalar v returns a NumPy scalar */
    o.scalar0d = 1;
    if (tmpl) r = nd_ext_build(t, fn, tmpl, NULL, nin, in, &o);
    Py_XDECREF(p0);
    Py_XDECREF(p1);
    Py_XDECREF(p2);
    Py_XDECREF(tmpl);
    Py_DECREF(fn);
    return r;
}

/* -------------------------------------------------------------- register */

static const nd_shim_def sort_defs[] = {
    {"sort", "a|axis,kind,order;stable", sort_impl, 0},
    {"argsort", "a|axis,kind,order;stable", argsort_impl, 0},
    {"partition", "a,kth|axis,kind,order", partition_impl, 0},
    {"argpartition", "a,kth|axis,kind,order", argpartition_impl, 0},
    {"searchsorted", "a,v|side,sorter", searchsorted_impl, 0},
    {NULL, NULL, NULL, 0},
};

static const nd_shim_def sort_methods[] = {
    {"sort", "self|axis,kind,order;stable", sort_method, 0},
    {"argsort", "self|axis,kind,order;stable", argsort_method, 0},
    {"partition", "self,kth|axis,kind,order", partition_method, 0},
    {"argpartition", "self,kth|axis,kind,order", argpartition_method, 0},
    {"searchsorted", "self,v|side,sorter", searchsorted_impl, 0},
    {NULL, NULL, NULL, 0},
};

int nd_shim_register_sort(nd_shim_table *tab)
{
    if (nd_shim_add_functions(tab, sort_defs) < 0) return -1;
    return nd_shim_add_methods(tab, sort_methods);
}
