/* shim_xj.c -- the array-argument helpers (shim_internal.h): array arguments as nodes, int64
 * index arithmetic, and asking NumPy itself (attribute lookup, stand-ins
 * that make NumPy raise its own shape errors). Shared by shim_join.c,
 * shim_extern.c and shim_advidx.c. */
#include "shim_internal.h"
#include <string.h>

void nd_xj_fill(nd_trace *t, nd_xj_arr *a)
{
    a->dtype = nd_shim_node_dtype(t, a->id);
    a->ndim = nd_shim_node_ndim(t, a->id);
    nd_shim_node_shape(t, a->id, a->shape);
}

npy_intp nd_xj_size(int ndim, const npy_intp *shape)
{
    npy_intp s = 1;
    for (int d = 0; d < ndim; d++) s *= shape[d];
    return s;
}

/* An array-like argument as a node, with np.asarray semantics: Python
 * scalars are *strong* here (np.concatenate, np.outer... convert them with
 * asarray first). 0 ok, -1 error, 1 unsupported (reason recorded). */
int nd_xj_array(nd_trace *t, PyObject *obj, nd_xj_arr *a)
{
    if (nd_proxy_check(obj)) {
        a->id = nd_proxy_read(obj);
    } else {
        PyObject *arr = PyArray_FROM_O(obj);
        if (!arr) return -1;
        if (!nd_dtype_ok(PyArray_TYPE((PyArrayObject *)arr)) ||
            PyArray_NDIM((PyArrayObject *)arr) > ND_MAXDIMS) {
            Py_DECREF(arr);
            nd_shim_unsupported("an operand of dtype or rank numdyn does not trace");
            return 1;
        }
        a->id = nd_trace_lift(t, arr);
        Py_DECREF(arr);
    }
    if (a->id == ND_NONE) return -1;
    nd_xj_fill(t, a);
    if (!nd_dtype_ok(a->dtype)) {
        nd_shim_unsupported("an operand of dtype numdyn does not trace");
        return 1;
    }
    return 0;
}

/* Value-level reshape (a VIEW over the logical C-order flat index). */
int nd_xj_reshape(nd_trace *t, nd_xj_arr *a, int ndim, const npy_intp *shape)
{
    if (ndim == a->ndim && memcmp(shape, a->shape, sizeof(npy_intp) * (size_t)ndim) == 0)
        return 0;
    npy_intp st[ND_MAXDIMS];
    nd_c_strides(ndim, shape, st);
    nd_id v = nd_shim_node_view(t, a->id, ndim, shape, 0, st);
    if (v == ND_NONE) return -1;
    a->id = v;
    nd_xj_fill(t, a);
    return 0;
}

int nd_xj_ravel(nd_trace *t, nd_xj_arr *a)
{
    npy_intp n = nd_xj_size(a->ndim, a->shape);
    return nd_xj_reshape(t, a, 1, &n);
}

nd_id nd_xj_i64(nd_trace *t, long long v)
{
    PyObject *o = PyLong_FromLongLong(v);
    if (!o) return ND_NONE;
    nd_id id = nd_shim_node_scalar(t, o, NPY_INT64, 0);
    Py_DECREF(o);
    return id;
}

/* int64 ufunc node; either operand may be ND_NONE meaning "absent" for add
 * (returns the other). */
nd_id nd_xj_ibin(nd_trace *t, int uf, nd_id x, nd_id y)
{
    if (x == ND_NONE || y == ND_NONE) {
        if (uf == ND_UF_ADD) return x == ND_NONE ? y : x;
        PyErr_SetString(PyExc_SystemError, "numdyn: missing int64 operand");
        return ND_NONE;
    }
    nd_id in[2] = {x, y};
    int loop[2] = {NPY_INT64, NPY_INT64};
    int out = (uf >= ND_UF_GREATER && uf <= ND_UF_EQUAL) ? NPY_BOOL : NPY_INT64;
    return nd_shim_node_ufunc(t, uf, in, loop, out, 0);
}

nd_id nd_xj_ibin_c(nd_trace *t, int uf, nd_id x, long long c)
{
    if (x == ND_NONE) return ND_NONE;
    if ((uf == ND_UF_MULTIPLY && c == 1) || ((uf == ND_UF_ADD || uf == ND_UF_SUBTRACT) && c == 0))
        return x;
    nd_id s = nd_xj_i64(t, c);
    if (s == ND_NONE) return ND_NONE;
    return nd_xj_ibin(t, uf, x, s);
}

nd_id nd_xj_full(nd_trace *t, PyObject *value, int dtype, int weak, int ndim,
                 const npy_intp *shape)
{
    if (weak && PyLong_Check(value) && !PyBool_Check(value) && PyTypeNum_ISINTEGER(dtype)) {
        /* NEP 50: a Python int must fit the dtype it takes */
        int fits = nd_shim_pyint_fits(value, dtype);
        if (fits < 0) return ND_NONE;
        if (!fits) {
            PyArray_Descr *d = PyArray_DescrFromType(dtype);
            if (d) {
                PyErr_Format(PyExc_OverflowError, "Python integer %R out of bounds for %s", value,
                             d->typeobj->tp_name + (strncmp(d->typeobj->tp_name, "numpy.", 6) ? 0 : 6));
                Py_DECREF(d);
            }
            return ND_NONE;
        }
    }
    nd_id s = nd_shim_node_scalar(t, value, dtype, weak);
    if (s == ND_NONE) return ND_NONE;
    return nd_shim_node_broadcast(t, s, ndim, shape);
}

nd_id nd_xj_zeros(nd_trace *t, int dtype, int ndim, const npy_intp *shape)
{
    PyObject *z = PyLong_FromLong(0);
    if (!z) return ND_NONE;
    nd_id r = nd_xj_full(t, z, dtype, 0, ndim, shape);
    Py_DECREF(z);
    return r;
}

/* SETITEM: base with the affine region (voff, vstrides over vshape, over
 * base's C-order flat index) replaced by val (broadcast, cast to base's
 * dtype). */
nd_id nd_xj_setitem(nd_trace *t, nd_id base, nd_id val, int vndim, const npy_intp *vshape,
                    npy_intp voff, const npy_intp *vstrides)
{
    nd_graph *g = nd_trace_graph(t);
    nd_node n;
    {
        const nd_node *b = nd_graph_node(g, base);
        nd_node_init(&n, ND_OP_SETITEM, b->dtype, b->ndim, b->shape);
    }
    n.nin = 2;
    n.in[0] = base;
    n.in[1] = val;
    n.voff = voff;
    n.vndim = (uint8_t)vndim;
    for (int d = 0; d < vndim; d++) { n.vshape[d] = vshape[d]; n.vstrides[d] = vstrides[d]; }
    return nd_graph_add(g, &n);
}

nd_id nd_xj_gather(nd_trace *t, nd_id src, nd_id flat)
{
    nd_graph *g = nd_trace_graph(t);
    nd_node n;
    {
        const nd_node *f = nd_graph_node(g, flat);
        const nd_node *s = nd_graph_node(g, src);
        nd_node_init(&n, ND_OP_GATHER, s->dtype, f->ndim, f->shape);
    }
    n.nin = 2;
    n.in[0] = src;
    n.in[1] = flat;
    n.in_dtype[1] = NPY_INT64;
    return nd_graph_add(g, &n);
}

/* take along one axis: out = a.shape[:ax] + idx.shape + a.shape[ax+1:],
 * out[..., j..., ...] = a[..., idx[j...], ...]. idx is an int64 node whose
 * values are already in [0, a.shape[ax]). One GATHER whose flat indices
 * are iota arithmetic (fused by the native backend). */
nd_id nd_xj_take_axis(nd_trace *t, const nd_xj_arr *a, int ax, const nd_xj_arr *idx)
{
    int ond = a->ndim - 1 + idx->ndim;
    if (ond > ND_MAXDIMS) {
        nd_shim_unsupported("indexing result of rank above %d", ND_MAXDIMS);
        return ND_NONE;
    }
    npy_intp oshape[ND_MAXDIMS], acs[ND_MAXDIMS], ics[ND_MAXDIMS];
    int o = 0;
    for (int d = 0; d < ax; d++) oshape[o++] = a->shape[d];
    for (int d = 0; d < idx->ndim; d++) oshape[o++] = idx->shape[d];
    for (int d = ax + 1; d < a->ndim; d++) oshape[o++] = a->shape[d];
    nd_c_strides(a->ndim, a->shape, acs);
    nd_c_strides(idx->ndim, idx->shape, ics);
    nd_id flat = ND_NONE;
    for (int d = 0; d < ond; d++) {
        nd_id term;
        if (d >= ax && d < ax + idx->ndim) continue;
        int ad = d < ax ? d : d - idx->ndim + 1;
        if (oshape[d] == 1) continue;
        term = nd_shim_node_index(t, ond, oshape, d);
        term = nd_xj_ibin_c(t, ND_UF_MULTIPLY, term, (long long)acs[ad]);
        if (term == ND_NONE || (flat = nd_xj_ibin(t, ND_UF_ADD, flat, term)) == ND_NONE)
            return ND_NONE;
    }
    /* idx broadcast over the out shape, then scaled by a's stride on ax */
    npy_intp bst[ND_MAXDIMS] = {0};
    for (int d = 0; d < idx->ndim; d++) bst[ax + d] = idx->shape[d] == 1 ? 0 : ics[d];
    nd_id ib = nd_shim_node_view(t, idx->id, ond, oshape, 0, bst);
    ib = nd_xj_ibin_c(t, ND_UF_MULTIPLY, ib, (long long)acs[ax]);
    if (ib == ND_NONE || (flat = nd_xj_ibin(t, ND_UF_ADD, flat, ib)) == ND_NONE)
        return ND_NONE;
    return nd_xj_gather(t, a->id, flat);
}

/* An array of the given dtype and shape whose every element is one zero
 * (all strides 0): NumPy validates shapes on it without work. */
PyObject *nd_xj_standin(int dtype, int ndim, const npy_intp *shape)
{
    PyArray_Descr *d = PyArray_DescrFromType(dtype);
    if (!d) return NULL;
    Py_INCREF(d);
    PyObject *z = PyArray_Zeros(0, NULL, d, 0);
    if (!z) { Py_DECREF(d); return NULL; }
    npy_intp st[ND_MAXDIMS];
    for (int k = 0; k < ndim; k++) st[k] = 0;
    /* NewFromDescr steals d; SetBaseObject steals z */
    /* writeable so NumPy gets past its out= checks to the shape/type ones;
     * any write lands in the private zero element */
    PyObject *r = PyArray_NewFromDescr(&PyArray_Type, d, ndim, shape, st,
                                       PyArray_DATA((PyArrayObject *)z), NPY_ARRAY_WRITEABLE, NULL);
    if (!r) { Py_DECREF(z); return NULL; }
    if (PyArray_SetBaseObject((PyArrayObject *)r, z) < 0) { Py_DECREF(r); return NULL; }
    return r;
}

/* leaf of nd_xj_map_template: a proxy becomes its stand-in (a NumPy
 * scalar for a scalar-valued proxy) */
static int standin_leaf(PyObject *o, void *ctx, PyObject **out)
{
    (void)ctx;
    if (!nd_proxy_check(o)) return 0;
    if (nd_proxy_is_scalar(o)) {
        PyObject *a = nd_xj_standin(nd_proxy_dtype(o), 0, NULL);
        *out = a ? PyArray_Return((PyArrayObject *)a) : NULL;
    } else {
        *out = nd_xj_standin(nd_proxy_dtype(o), nd_proxy_ndim(o), nd_proxy_shape(o));
    }
    return *out ? 1 : -1;
}

static PyObject *standins(PyObject *o) { return nd_xj_map_template(o, standin_leaf, NULL); }

/* argv/params as the def's (see shim_internal.h "Parameter spec") */
PyObject *nd_xj_numpy_error(const char *path, const char *params, PyObject **argv)
{
    PyObject *fn = nd_xj_np_attr(path);
    if (!fn) return NULL;
    PyObject *args = PyList_New(0), *kw = PyDict_New();
    if (!args || !kw) goto fail;
    int k = 0, required = 1, kwonly = 0;
    for (const char *p = params; *p;) {
        if (*p == '|') { required = 0; p++; continue; }
        if (*p == ';') { kwonly = 1; p++; continue; }
        if (*p == ',' || *p == ' ') { p++; continue; }
        int star = *p == '*';
        if (star) p++;
        const char *e = p;
        while (*e && *e != ',' && *e != '|' && *e != ';' && *e != ' ') e++;
        PyObject *v = argv[k++];
        if (v) {
            PyObject *sv = standins(v);
            if (!sv) goto fail;
            int rc;
            if (star) {
                PyObject *lst = PySequence_List(sv);
                Py_ssize_t end = PyList_GET_SIZE(args);
                rc = lst ? PyList_SetSlice(args, end, end, lst) : -1;
                Py_XDECREF(lst);
            } else if (required || (!kwonly && PyList_GET_SIZE(args) == k - 1)) {
                rc = PyList_Append(args, sv);
            } else {
                PyObject *name = PyUnicode_FromStringAndSize(p, e - p);
                rc = name ? PyDict_SetItem(kw, name, sv) : -1;
                Py_XDECREF(name);
            }
            Py_DECREF(sv);
            if (rc < 0) goto fail;
        }
        p = e;
    }
    PyObject *tup = PyList_AsTuple(args);
    if (!tup) goto fail;
    PyObject *r = PyObject_Call(fn, tup, kw);
    Py_DECREF(tup);
    Py_DECREF(fn);
    Py_DECREF(args);
    Py_DECREF(kw);
    if (!r) return NULL;
    Py_DECREF(r);
    return nd_shim_unsupported("numpy.%s: a case numdyn's shape rules do not model", path);
fail:
    Py_XDECREF(fn);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return NULL;
}


PyObject *nd_xj_np_attr(const char *path)
{
    static struct { const char *path; PyObject *obj; } cache[96];
    static int ncache;
    for (int i = 0; i < ncache; i++)
        if (cache[i].path == path) { Py_INCREF(cache[i].obj); return cache[i].obj; }
    PyObject *o = nd_shim_numpy();
    Py_INCREF(o);
    for (const char *p = path; *p;) {
        const char *e = strchr(p, '.');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        PyObject *name = PyUnicode_FromStringAndSize(p, (Py_ssize_t)len);
        PyObject *n = name ? PyObject_GetAttr(o, name) : NULL;
        Py_XDECREF(name);
        Py_DECREF(o);
        if (!n) return NULL;
        o = n;
        p += len + (e ? 1 : 0);
    }
    /* numpy's functions live as long as numpy: keep one reference */
    if (ncache < 96) {
        cache[ncache].path = path;
        cache[ncache++].obj = o;
        Py_INCREF(o);
    }
    return o;
}

PyObject *nd_xj_map_template(PyObject *o, nd_xj_leaf_fn leaf, void *ctx)
{
    PyObject *r = NULL;
    int rc = leaf(o, ctx, &r);
    if (rc) return rc > 0 ? r : NULL;
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject *l = PyList_New(n);
        if (!l) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *e = nd_xj_map_template(PySequence_Fast_GET_ITEM(o, i), leaf, ctx);
            if (!e) { Py_DECREF(l); return NULL; }
            PyList_SET_ITEM(l, i, e);
        }
        if (PyList_CheckExact(o)) return l;
        PyObject *tup = PyList_AsTuple(l);
        Py_DECREF(l);
        return tup;
    }
    Py_INCREF(o);
    return o;
}

PyObject *nd_xj_tmpl(int nin, int nextra, PyObject *const *extra)
{
    PyObject *t = PyTuple_New(nin + nextra);
    if (!t) return NULL;
    for (int k = 0; k < nin; k++) {
        PyObject *p = nd_extern_placeholder(k);
        if (!p) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, k, p);
    }
    for (int k = 0; k < nextra; k++) {
        PyObject *e = extra[k] ? extra[k] : Py_None;
        Py_INCREF(e);
        PyTuple_SET_ITEM(t, nin + k, e);
    }
    return t;
}

int nd_xj_int_list(PyObject *o, int allow_int, npy_intp *out, int cap, int *n)
{
    if (allow_int && nd_shim_index_like(o)) {
        out[0] = PyNumber_AsSsize_t(o, PyExc_OverflowError);
        *n = 1;
        return (out[0] == -1 && PyErr_Occurred()) ? -1 : 0;
    }
    PyObject *seq = PySequence_Fast(o, "");
    if (!seq) { PyErr_Clear(); return 1; }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    if (k > cap) { Py_DECREF(seq); return 2; }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
        if (!nd_shim_index_like(e)) { Py_DECREF(seq); return 1; }
        out[i] = PyNumber_AsSsize_t(e, PyExc_OverflowError);
        if (out[i] == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
    }
    Py_DECREF(seq);
    *n = (int)k;
    return 0;
}

int nd_xj_array2(nd_trace *t, PyObject **argv, nd_xj_arr *in)
{
    int rc = nd_xj_array(t, argv[0], &in[0]);
    return rc ? rc : nd_xj_array(t, argv[1], &in[1]);
}
