/* shim_join.c -- joining, splitting and rearranging arrays as graph nodes
 * (owned by the "extern" helper).
 *
 * Everything here is built from nodes the native backend fuses:
 *  - concatenate/stack/hstack/... and roll write each piece into a fresh
 *    zero-filled value with one SETITEM per piece (affine regions);
 *  - split/array_split/unstack return proxy views (they share the storage,
 *    so writes through a piece are seen by the original, as in NumPy);
 *  - tile and scalar repeat are a 0-stride broadcast VIEW followed by a
 *    reshape VIEW; array repeat, take-like reads and pad(mode="edge") are
 *    GATHERs whose flat indices are int64 arithmetic on INDEX (iota) nodes;
 *  - triu/tril are a WHERE over an INDEX-computed mask; outer is a
 *    broadcasting multiply.
 * Shape errors are reproduced exactly by asking NumPy itself: the function
 * is called on zero-stride stand-ins of the same dtypes and shapes
 * (nd_xj_numpy_error), which raises NumPy's own exception without computing
 * anything; if NumPy unexpectedly accepts them, the call falls back to real
 * NumPy with a recorded break instead of guessing.
 *
 * The nd_xj_* helpers (shim_internal.h) are shared with shim_advidx.c and
 * shim_extern.c. */
#include "shim_internal.h"
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

/* axis argument that may be absent (NULL: dflt, not normalized), read
 * by NumPy's converter `conv` */
static int axis_arg(PyObject *o, int dflt, int ndim, int *out, nd_axis_conv conv)
{
    if (!o) { *out = dflt; return 0; }
    return nd_shim_axis_conv(o, ndim, out, conv);
}

static int can_cast(int from, int to, NPY_CASTING casting)
{
    if (from == to) return 1;
    PyArray_Descr *f = PyArray_DescrFromType(from), *d = PyArray_DescrFromType(to);
    int r = (f && d) ? PyArray_CanCastTypeTo(f, d, casting) : 0;
    Py_XDECREF(f);
    Py_XDECREF(d);
    return r;
}

static int cast_error(int from, int to, NPY_CASTING casting)
{
    PyArray_Descr *f = PyArray_DescrFromType(from), *d = PyArray_DescrFromType(to);
    if (f && d)
        PyErr_Format(PyExc_TypeError,
                     "Cannot cast array data from %R to %R according to the rule '%s'",
                     (PyObject *)f, (PyObject *)d, nd_shim_casting_name(casting));
    Py_XDECREF(f);
    Py_XDECREF(d);
    return -1;
}

/* ---------------------------------------------------- sequences of arrays */

typedef struct {
    nd_xj_arr *a;
    Py_ssize_t n;
} arrlist;

static void arrlist_free(arrlist *l) { PyMem_Free(l->a); l->a = NULL; l->n = 0; }

/* 0 ok, -1 error, 1 unsupported */
static int arrlist_get(nd_trace *t, PyObject *seq, arrlist *l)
{
    l->a = NULL;
    l->n = 0;
    if (!PyList_Check(seq) && !PyTuple_Check(seq) && !nd_proxy_check(seq)) {
        nd_shim_unsupported("a sequence of arrays that is not a list or tuple");
        return 1;
    }
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of arrays");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    l->a = PyMem_Calloc((size_t)(n ? n : 1), sizeof(nd_xj_arr));
    if (!l->a) { Py_DECREF(fast); PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = nd_xj_array(t, PySequence_Fast_GET_ITEM(fast, i), &l->a[i]);
        if (r) { Py_DECREF(fast); arrlist_free(l); return r; }
    }
    l->n = n;
    Py_DECREF(fast);
    return 0;
}

/* Concatenate along ax (all ranks equal and >= 1, other dims matching:
 * checked by the caller) at dtype: one SETITEM per non-empty piece into a
 * zero value. */
static nd_id concat_nodes(nd_trace *t, const nd_xj_arr *a, Py_ssize_t n, int ax, int dtype)
{
    int nd = a[0].ndim;
    npy_intp shape[ND_MAXDIMS], cs[ND_MAXDIMS];
    memcpy(shape, a[0].shape, sizeof(npy_intp) * (size_t)nd);
    shape[ax] = 0;
    for (Py_ssize_t i = 0; i < n; i++) shape[ax] += a[i].shape[ax];
    if (n == 1) {
        /* a new array, as NumPy's: never the operand's own value (a
         * returned np.concatenate([x]) was x itself) */
        nd_id c = nd_shim_node_cast(t, a[0].id, dtype);
        return c == a[0].id ? nd_shim_node_reshape(t, c, nd, a[0].shape) : c;
    }
    nd_c_strides(nd, shape, cs);
    nd_id base = nd_xj_zeros(t, dtype, nd, shape);
    npy_intp off = 0;
    for (Py_ssize_t i = 0; base != ND_NONE && i < n; i++) {
        if (nd_xj_size(nd, a[i].shape) > 0)
            base = nd_xj_setitem(t, base, a[i].id, nd, a[i].shape, off * cs[ax], cs);
        off += a[i].shape[ax];
    }
    return base;
}

/* ------------------------------------------- np.array of nested lists
 * np.array([y[1], -y[0]], ...) of lazy values is a stack: the nesting
 * gives the leading dims, the leaves (lazy or concrete arrays, NumPy and
 * Python scalars, strong as array coercion types them) must agree in
 * shape, and the dtype is their promotion. Ragged or empty nestings, and
 * leaves that are not arrays or numbers, are NumPy's to build or reject. */

static int has_proxy(PyObject *o, int depth)
{
    if (nd_proxy_check(o)) return 1;
    if (depth >= ND_MAXDIMS || !(PyList_Check(o) || PyTuple_Check(o))) return 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
        if (has_proxy(PySequence_Fast_GET_ITEM(o, i), depth + 1)) return 1;
    return 0;
}

#define SELECT_LEAVES 8

/* where(i == 0, k0, where(i == 1, k1, ...)) over the new leading axis;
 * the leaves broadcast into it as operands (a view of a computed leaf
 * would give it a buffer, and a kernel, of its own) */
static nd_id select_stack(nd_trace *t, nd_xj_arr *kids, Py_ssize_t n, int nd,
                          const npy_intp *shape, int dtype)
{
    nd_id idx = nd_shim_node_index(t, nd, shape, 0);
    nd_id acc = idx == ND_NONE ? ND_NONE : nd_shim_node_cast(t, kids[n - 1].id, dtype);
    /* (a single leaf: where(i == 0, k0, k0) gives it the new shape) */
    for (Py_ssize_t i = n > 1 ? n - 2 : 0; acc != ND_NONE && i >= 0; i--) {
        nd_id v = nd_shim_node_cast(t, kids[i].id, dtype);
        nd_id c = v == ND_NONE ? ND_NONE : nd_xj_ibin_c(t, ND_UF_EQUAL, idx, (long long)i);
        acc = c == ND_NONE ? ND_NONE : nd_shim_node_where(t, c, v, acc, dtype);
    }
    return acc;
}

static int seq_node(nd_trace *t, PyObject *o, int depth, nd_xj_arr *out)
{
    if (!PyList_Check(o) && !PyTuple_Check(o)) {
        if (!nd_proxy_check(o) && !PyArray_Check(o) && !PyArray_IsScalar(o, Generic) &&
            !PyLong_Check(o) && !PyFloat_Check(o) && !PyComplex_Check(o) && !PyBool_Check(o)) {
            nd_shim_unsupported("numpy.array of a sequence holding non-numeric objects");
            return 1;
        }
        return nd_xj_array(t, o, out);
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (n == 0 || depth + 1 >= ND_MAXDIMS) {
        nd_shim_unsupported("numpy.array of an empty or deep nesting of lazy values");
        return 1;
    }
    nd_xj_arr *kids = PyMem_Calloc((size_t)n, sizeof *kids);
    if (!kids) { PyErr_NoMemory(); return -1; }
    int rc = 0, dtype = -1;
    for (Py_ssize_t i = 0; i < n && !rc; i++) {
        rc = seq_node(t, PySequence_Fast_GET_ITEM(o, i), depth + 1, &kids[i]);
        if (rc) break;
        if (kids[i].ndim != kids[0].ndim || kids[i].ndim + 1 > ND_MAXDIMS ||
            memcmp(kids[i].shape, kids[0].shape, sizeof(npy_intp) * (size_t)kids[0].ndim)) {
            nd_shim_unsupported("numpy.array of a ragged nesting");
            rc = 1;
            break;
        }
        if (dtype < 0) {
            dtype = kids[i].dtype;
        } else {
            PyArray_Descr *a = PyArray_DescrFromType(dtype), *b = PyArray_DescrFromType(kids[i].dtype);
            PyArray_Descr *c = a && b ? PyArray_PromoteTypes(a, b) : NULL;
            Py_XDECREF(a);
            Py_XDECREF(b);
            if (!c) { rc = -1; break; }
            dtype = c->type_num;
            Py_DECREF(c);
        }
    }
    if (!rc) {
        int nd = kids[0].ndim + 1;
        npy_intp shape[ND_MAXDIMS], one[ND_MAXDIMS], cs[ND_MAXDIMS];
        shape[0] = n;
        one[0] = 1;
        memcpy(shape + 1, kids[0].shape, sizeof(npy_intp) * (size_t)kids[0].ndim);
        memcpy(one + 1, kids[0].shape, sizeof(npy_intp) * (size_t)kids[0].ndim);
        nd_c_strides(nd, shape, cs);
        /* a few leaves (a state vector): a pointwise select over the new
         * axis, which fuses into its readers; many: region writes */
        nd_id base = n <= SELECT_LEAVES ? select_stack(t, kids, n, nd, shape, dtype)
                                        : nd_xj_zeros(t, dtype, nd, shape);
        for (Py_ssize_t i = 0; n > SELECT_LEAVES && base != ND_NONE && i < n; i++) {
            if (nd_xj_reshape(t, &kids[i], nd, one) < 0) { base = ND_NONE; break; }
            nd_id v = nd_shim_node_cast(t, kids[i].id, dtype);
            base = v == ND_NONE ? ND_NONE
                 : nd_xj_size(nd, one) ? nd_xj_setitem(t, base, v, nd, one, i * cs[0], cs) : base;
        }
        if (base == ND_NONE) {
            rc = -1;
        } else {
            out->id = base;
            nd_xj_fill(t, out);
        }
    }
    PyMem_Free(kids);
    return rc;
}

int nd_shim_array_from_seq(nd_trace *t, PyObject *seq, nd_xj_arr *out)
{
    if (!has_proxy(seq, 0)) {
        nd_shim_unsupported("numpy.array of Python data");
        return 1;
    }
    return seq_node(t, seq, 0, out);
}

/* shape agreement for concatenation along ax; 1 when they disagree */
static int concat_mismatch(const nd_xj_arr *a, Py_ssize_t n, int ax)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (a[i].ndim != a[0].ndim || a[i].ndim == 0) return 1;
        for (int d = 0; d < a[0].ndim; d++)
            if (d != ax && a[i].shape[d] != a[0].shape[d]) return 1;
    }
    return 0;
}

/* Common tail of the concatenate family: dtype / casting / out, the node,
 * the result. axis_none: ravel every piece first. */
/* ins_axis: stack's new axis (the pieces' own dims skip it), else -1;
 * -2: argv[0] is not the sequence of pieces (np.append) */
static PyObject *concat_finish(nd_trace *t, const char *path, const char *params, PyObject **argv,
                               arrlist *l, PyObject *axis_obj, int axis_none,
                               PyObject *out, PyObject *dtype_obj, PyObject *casting_obj,
                               int ins_axis)
{
    PyObject *res = NULL;
    int dtype = -1;
    NPY_CASTING casting;
    if (l->n == 0 || (out && dtype_obj && dtype_obj != Py_None)) goto numpy_error;
    int r = nd_shim_dtype_arg(dtype_obj, &dtype);
    if (r) { if (r > 0) nd_shim_unsupported("numpy.%s with a non-numeric dtype", path); goto done; }
    if (nd_shim_casting_arg(casting_obj, NPY_SAME_KIND_CASTING, &casting) < 0) goto done;
    if (out) {
        if (nd_proxy_check(out)) dtype = nd_proxy_dtype(out);
        else if (PyArray_Check(out)) dtype = PyArray_TYPE((PyArrayObject *)out);
        else goto numpy_error;
    }
    int ax = 0;
    if (axis_none) {
        for (Py_ssize_t i = 0; i < l->n; i++)
            if (nd_xj_ravel(t, &l->a[i]) < 0) goto done;
    } else {
        if (l->a[0].ndim == 0) goto numpy_error;
        if (axis_arg(axis_obj, 0, l->a[0].ndim, &ax, ND_AXIS_CONVERTER) < 0) goto done;
    }
    if (concat_mismatch(l->a, l->n, ax)) goto numpy_error;
    if (dtype < 0) {
        int *dts = PyMem_Malloc(sizeof(int) * 2 * (size_t)l->n);
        if (!dts) { PyErr_NoMemory(); goto done; }
        for (Py_ssize_t i = 0; i < l->n; i++) { dts[i] = l->a[i].dtype; dts[l->n + i] = 0; }
        r = nd_shim_result_type((int)l->n, dts, dts + l->n, &dtype);
        PyMem_Free(dts);
        if (r < 0) goto done;
    }
    for (Py_ssize_t i = 0; i < l->n; i++)
        if (!can_cast(l->a[i].dtype, dtype, casting)) {
            cast_error(l->a[i].dtype, dtype, casting);
            goto done;
        }
    nd_id id = concat_nodes(t, l->a, l->n, ax, dtype);
    if (id == ND_NONE) goto done;
    if (out) {
        nd_xj_arr o;
        o.id = id;
        nd_xj_fill(t, &o);
        int ond = nd_proxy_check(out) ? nd_proxy_ndim(out) : PyArray_NDIM((PyArrayObject *)out);
        const npy_intp *osh = nd_proxy_check(out) ? nd_proxy_shape(out)
                                                  : PyArray_DIMS((PyArrayObject *)out);
        if (ond != o.ndim || memcmp(osh, o.shape, sizeof(npy_intp) * (size_t)ond) != 0)
            goto numpy_error;
        if (nd_shim_store_out(t, out, id, NULL, casting) < 0) goto done;
        Py_INCREF(out);
        res = out;
        goto done;
    }
    res = nd_shim_wrap(t, id, 0);
    /* NumPy lays the result out by its pieces' order (concatenate's
     * PyArray_CreateMultiSortedStridePerm) */
    if (res && !axis_none && ins_axis != -2 && (PyList_Check(argv[0]) || PyTuple_Check(argv[0])) &&
        PySequence_Fast_GET_SIZE(argv[0]) == l->n)
        nd_proxy_set_korder_join(res, (int)l->n, PySequence_Fast_ITEMS(argv[0]), ins_axis);
    goto done;
numpy_error:
    res = nd_xj_numpy_error(path, params, argv);
done:
    arrlist_free(l);
    return res;
}

#define P_CONCAT "arrays|axis,out;dtype,casting"

static PyObject *concatenate_impl(nd_trace *t, PyObject **argv)
{
    arrlist l;
    int r = arrlist_get(t, argv[0], &l);
    if (r) return NULL;
    int none = argv[1] == Py_None;
    return concat_finish(t, "concatenate", P_CONCAT, argv, &l, argv[1], none, argv[2], argv[3],
                         argv[4], -1);
}

static PyObject *concat_impl(nd_trace *t, PyObject **argv)
{
    arrlist l;
    if (arrlist_get(t, argv[0], &l)) return NULL;
    return concat_finish(t, "concat", P_CONCAT, argv, &l, argv[1], argv[1] == Py_None, argv[2],
                         argv[3], argv[4], -1);
}

/* insert a length-1 axis at ax into every piece */
static int expand_all(nd_trace *t, arrlist *l, int ax)
{
    for (Py_ssize_t i = 0; i < l->n; i++) {
        nd_xj_arr *a = &l->a[i];
        npy_intp sh[ND_MAXDIMS];
        int o = 0;
        for (int d = 0; d <= a->ndim; d++) {
            if (d == ax) sh[o++] = 1;
            if (d < a->ndim) sh[o++] = a->shape[d];
        }
        if (nd_xj_reshape(t, a, a->ndim + 1, sh) < 0) return -1;
    }
    return 0;
}

static PyObject *stack_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "arrays|axis,out;dtype,casting";
    arrlist l;
    if (arrlist_get(t, argv[0], &l)) return NULL;
    int ax = 0;
    if (l.n == 0 || (argv[1] && !nd_shim_index_like(argv[1]))) goto err;
    for (Py_ssize_t i = 1; i < l.n; i++)
        if (l.a[i].ndim != l.a[0].ndim ||
            memcmp(l.a[i].shape, l.a[0].shape, sizeof(npy_intp) * (size_t)l.a[0].ndim))
            goto err;
    if (l.a[0].ndim + 1 > ND_MAXDIMS) { arrlist_free(&l); return nd_shim_unsupported("stack above rank 16"); }
    if (axis_arg(argv[1], 0, l.a[0].ndim + 1, &ax, ND_AXIS_NORMALIZE) < 0 || expand_all(t, &l, ax) < 0) {
        arrlist_free(&l);
        return NULL;
    }
    {
        PyObject *axo = PyLong_FromLong(ax);
        if (!axo) { arrlist_free(&l); return NULL; }
        PyObject *r = concat_finish(t, "stack", P, argv, &l, axo, 0, argv[2], argv[3], argv[4], ax);
        Py_DECREF(axo);
        return r;
    }
err:
    arrlist_free(&l);
    return nd_xj_numpy_error("stack", P, argv);
}

/* atleast_Nd as NumPy's hstack/vstack/dstack/column_stack apply it */
static int promote(nd_trace *t, nd_xj_arr *a, int kind)
{
    npy_intp sh[3];
    switch (kind) {
    case 1: /* atleast_1d */
        if (a->ndim >= 1) return 0;
        sh[0] = 1;
        return nd_xj_reshape(t, a, 1, sh);
    case 2: /* atleast_2d */
        if (a->ndim >= 2) return 0;
        sh[0] = 1;
        sh[1] = a->ndim == 1 ? a->shape[0] : 1;
        return nd_xj_reshape(t, a, 2, sh);
    case 3: /* atleast_3d */
        if (a->ndim >= 3) return 0;
        if (a->ndim == 0) { sh[0] = sh[1] = sh[2] = 1; }
        else if (a->ndim == 1) { sh[0] = 1; sh[1] = a->shape[0]; sh[2] = 1; }
        else { sh[0] = a->shape[0]; sh[1] = a->shape[1]; sh[2] = 1; }
        return nd_xj_reshape(t, a, 3, sh);
    case 4: /* column_stack: 1-d (N,) -> (N, 1) */
        if (a->ndim >= 2) return 0;
        sh[0] = a->ndim == 1 ? a->shape[0] : 1;
        sh[1] = 1;
        return nd_xj_reshape(t, a, 2, sh);
    }
    return 0;
}

static PyObject *stack_family(nd_trace *t, PyObject **argv, const char *path, const char *params,
                              int kind, int has_dtype)
{
    arrlist l;
    if (arrlist_get(t, argv[0], &l)) return NULL;
    for (Py_ssize_t i = 0; i < l.n; i++)
        if (promote(t, &l.a[i], kind) < 0) { arrlist_free(&l); return NULL; }
    int ax = kind == 1 ? (l.n && l.a[0].ndim == 1 ? 0 : 1) : kind == 2 ? 0 : kind == 3 ? 2 : 1;
    PyObject *axo = PyLong_FromLong(ax);
    if (!axo) { arrlist_free(&l); return NULL; }
    PyObject *r = concat_finish(t, path, params, argv, &l, axo, 0, NULL,
                                has_dtype ? argv[1] : NULL, has_dtype ? argv[2] : NULL, -1);
    Py_DECREF(axo);
    return r;
}

static PyObject *hstack_impl(nd_trace *t, PyObject **argv)
{ return stack_family(t, argv, "hstack", "tup|;dtype,casting", 1, 1); }
static PyObject *vstack_impl(nd_trace *t, PyObject **argv)
{ return stack_family(t, argv, "vstack", "tup|;dtype,casting", 2, 1); }
static PyObject *dstack_impl(nd_trace *t, PyObject **argv)
{ return stack_family(t, argv, "dstack", "tup", 3, 0); }
static PyObject *column_stack_impl(nd_trace *t, PyObject **argv)
{ return stack_family(t, argv, "column_stack", "tup", 4, 0); }

static PyObject *append_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "arr,values|axis";
    nd_xj_arr ab[2];
    int r;
    if ((r = nd_xj_array(t, argv[0], &ab[0])) || (r = nd_xj_array(t, argv[1], &ab[1])))
        return NULL;
    arrlist l;
    l.a = PyMem_Malloc(sizeof(ab));
    if (!l.a) return PyErr_NoMemory();
    memcpy(l.a, ab, sizeof(ab));
    l.n = 2;
    int none = !argv[2] || argv[2] == Py_None;
    /* argv[0] is not the pieces here: no layout from it (C order) */
    return concat_finish(t, "append", P, argv, &l, argv[2], none, NULL, NULL, NULL, -2);
}

/* ------------------------------------------------------------- splitting */

/* Python slice [start:stop] of an axis of length n (NumPy's array_split
 * slices with the user's division points, negative ones included). */
static void slice_bounds(npy_intp n, npy_intp start, npy_intp stop, npy_intp *lo, npy_intp *hi)
{
    Py_ssize_t s = start, e = stop;
    PySlice_AdjustIndices(n, &s, &e, 1);
    *lo = s;
    *hi = e < s ? s : e;
}

/* the pieces [points[i], points[i+1]) of ary along ax, as proxy views */
static PyObject *split_views(PyObject *ary, int ax, const npy_intp *pts, Py_ssize_t npts,
                             int as_tuple)
{
    int nd = nd_proxy_ndim(ary);
    npy_intp shape[ND_MAXDIMS], cs[ND_MAXDIMS];
    memcpy(shape, nd_proxy_shape(ary), sizeof(npy_intp) * (size_t)nd);
    nd_c_strides(nd, shape, cs);
    npy_intp n = shape[ax];
    PyObject *res = as_tuple ? PyTuple_New(npts - 1) : PyList_New(npts - 1);
    if (!res) return NULL;
    for (Py_ssize_t i = 0; i + 1 < npts; i++) {
        npy_intp lo, hi, sh[ND_MAXDIMS];
        slice_bounds(n, pts[i], pts[i + 1], &lo, &hi);
        memcpy(sh, shape, sizeof(sh));
        sh[ax] = hi - lo;
        PyObject *v = nd_proxy_view(ary, nd, sh, lo * cs[ax], cs);
        if (!v) { Py_DECREF(res); return NULL; }
        if (as_tuple) PyTuple_SET_ITEM(res, i, v);
        else PyList_SET_ITEM(res, i, v);
    }
    return res;
}

/* kind: 0 split, 1 array_split, 2 hsplit, 3 vsplit, 4 dsplit */
static PyObject *split_common(nd_trace *t, PyObject **argv, int kind)
{
    static const char *paths[] = {"split", "array_split", "hsplit", "vsplit", "dsplit"};
    static const char *params[] = {"ary,indices_or_sections|axis", "ary,indices_or_sections|axis",
                                   "ary,indices_or_sections", "ary,indices_or_sections",
                                   "ary,indices_or_sections"};
    const char *path = paths[kind], *P = params[kind];
    PyObject *ary = argv[0], *ios = argv[1];
    if (!nd_proxy_check(ary) || nd_proxy_is_scalar(ary) || nd_proxy_check(ios))
        return nd_shim_unsupported("numpy.%s of a non-array or with lazy split points", path);
    int nd = nd_proxy_ndim(ary), ax = 0;
    if (kind <= 1) {
        if (argv[2]) {
            if (!nd_shim_index_like(argv[2])) return nd_xj_numpy_error(path, P, argv);
            long v = PyLong_AsLong(argv[2]);
            if (v == -1 && PyErr_Occurred()) return NULL;
            if (v < -nd || v >= nd) return nd_xj_numpy_error(path, P, argv);
            ax = (int)(v < 0 ? v + nd : v);
        }
    } else {
        int need = kind == 2 ? 1 : kind == 3 ? 2 : 3;
        if (nd < need) return nd_xj_numpy_error(path, P, argv);
        ax = kind == 2 ? (nd > 1 ? 1 : 0) : kind == 3 ? 0 : 2;
    }
    npy_intp n = nd_proxy_shape(ary)[ax];
    npy_intp *pts = NULL;
    Py_ssize_t npts = 0;
    PyObject *res = NULL;
    if (nd_shim_index_like(ios)) {
        Py_ssize_t s = PyNumber_AsSsize_t(ios, PyExc_OverflowError);
        if (s == -1 && PyErr_Occurred()) return NULL;
        if (s <= 0 || (kind != 1 && n % s != 0)) return nd_xj_numpy_error(path, P, argv);
        pts = PyMem_Malloc(sizeof(npy_intp) * (size_t)(s + 1));
        if (!pts) return PyErr_NoMemory();
        npy_intp each = n / s, extra = n % s, acc = 0;
        pts[0] = 0;
        for (Py_ssize_t i = 0; i < s; i++) { acc += each + (i < extra); pts[i + 1] = acc; }
        npts = s + 1;
    } else {
        PyObject *seq = PySequence_Fast(ios, "indices_or_sections");
        if (!seq) { PyErr_Clear(); return nd_xj_numpy_error(path, P, argv); }
        Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
        pts = PyMem_Malloc(sizeof(npy_intp) * (size_t)(k + 2));
        if (!pts) { Py_DECREF(seq); return PyErr_NoMemory(); }
        pts[0] = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
            if (!nd_shim_index_like(e)) {
                Py_DECREF(seq);
                PyMem_Free(pts);
                return nd_xj_numpy_error(path, P, argv);
            }
            pts[i + 1] = PyNumber_AsSsize_t(e, PyExc_OverflowError);
            if (pts[i + 1] == -1 && PyErr_Occurred()) { Py_DECREF(seq); PyMem_Free(pts); return NULL; }
        }
        Py_DECREF(seq);
        pts[k + 1] = n;
        npts = k + 2;
    }
    res = split_views(ary, ax, pts, npts, 0);
    PyMem_Free(pts);
    return res;
}

static PyObject *split_impl(nd_trace *t, PyObject **argv) { return split_common(t, argv, 0); }
static PyObject *array_split_impl(nd_trace *t, PyObject **argv) { return split_common(t, argv, 1); }
static PyObject *hsplit_impl(nd_trace *t, PyObject **argv) { return split_common(t, argv, 2); }
static PyObject *vsplit_impl(nd_trace *t, PyObject **argv) { return split_common(t, argv, 3); }
static PyObject *dsplit_impl(nd_trace *t, PyObject **argv) { return split_common(t, argv, 4); }

static PyObject *unstack_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "x|;axis";
    PyObject *x = argv[0];
    if (!nd_proxy_check(x) || nd_proxy_is_scalar(x) || nd_proxy_ndim(x) == 0)
        return nd_xj_numpy_error("unstack", P, argv);
    int nd = nd_proxy_ndim(x), ax = 0, axes[ND_MAXDIMS], nax = 1;
    /* NumPy's unstack is moveaxis(x, axis, 0): normalize_axis_tuple */
    if (argv[1] && nd_shim_axis_tuple(argv[1], nd, axes, &nax) < 0) return NULL;
    if (nax != 1) {
        PyErr_SetString(PyExc_ValueError,
                        "`source` and `destination` arguments must have the same number of elements");
        return NULL;
    }
    if (argv[1]) ax = axes[0];
    npy_intp shape[ND_MAXDIMS], cs[ND_MAXDIMS], sh[ND_MAXDIMS], st[ND_MAXDIMS];
    memcpy(shape, nd_proxy_shape(x), sizeof(npy_intp) * (size_t)nd);
    nd_c_strides(nd, shape, cs);
    int o = 0;
    for (int d = 0; d < nd; d++)
        if (d != ax) { sh[o] = shape[d]; st[o] = cs[d]; o++; }
    PyObject *res = PyTuple_New(shape[ax]);
    if (!res) return NULL;
    for (npy_intp i = 0; i < shape[ax]; i++) {
        PyObject *v = nd_proxy_view(x, nd - 1, sh, i * cs[ax], st);
        if (!v) { Py_DECREF(res); return NULL; }
        PyTuple_SET_ITEM(res, i, v);
    }
    return res;
}

/* ------------------------------------------------------ tile and repeat */

static PyObject *tile_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "A,reps";
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    npy_intp reps[ND_MAXDIMS];
    int nr, r = nd_xj_int_list(argv[1], 1, reps, ND_MAXDIMS, &nr);
    if (r < 0) return NULL;
    if (r == 2) return nd_shim_unsupported("numpy.tile above rank 16");
    if (r) return nd_xj_numpy_error("tile", P, argv);
    for (int i = 0; i < nr; i++)
        if (reps[i] < 0) return nd_xj_numpy_error("tile", P, argv);
    int nd = a.ndim > nr ? a.ndim : nr;
    npy_intp ash[ND_MAXDIMS], rp[ND_MAXDIMS], out[ND_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        int da = d - (nd - a.ndim), dr = d - (nd - nr);
        ash[d] = da >= 0 ? a.shape[da] : 1;
        rp[d] = dr >= 0 ? reps[dr] : 1;
        out[d] = ash[d] * rp[d];
    }
    if (2 * nd > ND_MAXDIMS) return nd_shim_unsupported("numpy.tile above rank 8");
    /* (r0, n0, r1, n1, ...) broadcast, then reshape to (r0*n0, ...) */
    npy_intp bsh[ND_MAXDIMS], bst[ND_MAXDIMS], acs[ND_MAXDIMS];
    nd_c_strides(nd, ash, acs);
    for (int d = 0; d < nd; d++) {
        bsh[2 * d] = rp[d];
        bst[2 * d] = 0;
        bsh[2 * d + 1] = ash[d];
        bst[2 * d + 1] = ash[d] == 1 ? 0 : acs[d];
    }
    nd_xj_arr b = a;
    b.id = nd_shim_node_view(t, a.id, 2 * nd, bsh, 0, bst);
    if (b.id == ND_NONE) return NULL;
    nd_xj_fill(t, &b);
    if (nd_xj_reshape(t, &b, nd, out) < 0) return NULL;
    return nd_shim_wrap(t, b.id, 0);
}

static PyObject *repeat_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a,repeats|axis";
    if (nd_proxy_check(argv[1]))
        return nd_shim_unsupported("numpy.repeat with lazy repeats (data-dependent shape)");
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    int ax = 0;
    if (!argv[2] || argv[2] == Py_None) {
        if (nd_xj_ravel(t, &a) < 0) return NULL;
    } else if (nd_shim_axis_conv(argv[2], a.ndim, &ax, ND_AXIS_CONVERTER) < 0) {
        return NULL;
    }
    npy_intp n = a.shape[ax];
    PyObject *rep = PyArray_FROM_O(argv[1]);
    if (!rep) return NULL;
    PyArrayObject *ra = (PyArrayObject *)rep;
    if (!PyArray_ISINTEGER(ra) && !PyArray_ISBOOL(ra)) { Py_DECREF(rep); return nd_xj_numpy_error("repeat", P, argv); }
    PyObject *r64 = PyArray_FROMANY(rep, NPY_INT64, 0, 1, NPY_ARRAY_CARRAY);
    Py_DECREF(rep);
    if (!r64) { PyErr_Clear(); return nd_xj_numpy_error("repeat", P, argv); }
    npy_intp k = PyArray_SIZE((PyArrayObject *)r64);
    const int64_t *rv = PyArray_DATA((PyArrayObject *)r64);
    for (npy_intp i = 0; i < k; i++)
        if (rv[i] < 0) { Py_DECREF(r64); return nd_xj_numpy_error("repeat", P, argv); }
    if (k != 1 && k != n) { Py_DECREF(r64); return nd_xj_numpy_error("repeat", P, argv); }
    PyObject *res = NULL;
    if (k == 1) {
        /* broadcast a new axis of length r after ax, then merge the two */
        npy_intp r = rv[0];
        if (a.ndim + 1 > ND_MAXDIMS) { Py_DECREF(r64); return nd_shim_unsupported("numpy.repeat above rank 15"); }
        npy_intp bsh[ND_MAXDIMS], bst[ND_MAXDIMS], acs[ND_MAXDIMS], osh[ND_MAXDIMS];
        nd_c_strides(a.ndim, a.shape, acs);
        int o = 0;
        for (int d = 0; d < a.ndim; d++) {
            bsh[o] = a.shape[d];
            bst[o++] = acs[d];
            if (d == ax) { bsh[o] = r; bst[o++] = 0; }
            osh[d] = d == ax ? a.shape[d] * r : a.shape[d];
        }
        nd_xj_arr b = a;
        b.id = nd_shim_node_view(t, a.id, a.ndim + 1, bsh, 0, bst);
        if (b.id != ND_NONE) {
            nd_xj_fill(t, &b);
            if (nd_xj_reshape(t, &b, a.ndim, osh) == 0) res = nd_shim_wrap(t, b.id, 0);
        }
    } else {
        /* per-element counts: the source index of every output position is
         * known now (it depends only on the counts, constants of the call) */
        npy_intp total = 0;
        for (npy_intp i = 0; i < k; i++) total += rv[i];
        PyObject *idx = PyArray_SimpleNew(1, &total, NPY_INT64);
        if (idx) {
            int64_t *p = PyArray_DATA((PyArrayObject *)idx);
            for (npy_intp i = 0, o = 0; i < k; i++)
                for (int64_t j = 0; j < rv[i]; j++) p[o++] = i;
            nd_xj_arr ia;
            ia.id = nd_trace_lift(t, idx);
            Py_DECREF(idx);
            if (ia.id != ND_NONE) {
                nd_xj_fill(t, &ia);
                nd_id g = nd_xj_take_axis(t, &a, ax, &ia);
                if (g != ND_NONE) res = nd_shim_wrap(t, g, 0);
            }
        }
    }
    Py_DECREF(r64);
    return res;
}

/* ------------------------------------------------------------------ roll */

/* roll value a by s (0 < s < n) along ax: two SETITEMs of views */
static nd_id roll_axis(nd_trace *t, const nd_xj_arr *a, int ax, npy_intp s)
{
    npy_intp cs[ND_MAXDIMS];
    nd_c_strides(a->ndim, a->shape, cs);
    npy_intp n = a->shape[ax];
    nd_xj_arr p[2];
    p[0] = *a;
    p[1] = *a;
    p[0].shape[ax] = s;     /* a[n-s:] */
    p[1].shape[ax] = n - s; /* a[:n-s] */
    p[0].id = nd_shim_node_view(t, a->id, a->ndim, p[0].shape, (n - s) * cs[ax], cs);
    if (p[0].id == ND_NONE) return ND_NONE;
    p[1].id = nd_shim_node_view(t, a->id, a->ndim, p[1].shape, 0, cs);
    if (p[1].id == ND_NONE) return ND_NONE;
    return concat_nodes(t, p, 2, ax, a->dtype);
}

/* shift > 0 rolls toward higher indices, like np.roll */
static nd_id roll_value(nd_trace *t, nd_xj_arr *a, const npy_intp *shifts)
{
    for (int d = 0; d < a->ndim; d++) {
        npy_intp n = a->shape[d];
        if (n <= 0) continue;
        npy_intp s = shifts[d] % n;
        if (s < 0) s += n;
        if (s == 0) continue;
        nd_id r = roll_axis(t, a, d, s);
        if (r == ND_NONE) return ND_NONE;
        a->id = r;
    }
    return a->id;
}

static PyObject *roll_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a,shift|axis";
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    npy_intp sh[ND_MAXDIMS], ax[ND_MAXDIMS], shifts[ND_MAXDIMS] = {0};
    int ns, na, r;
    if (nd_proxy_check(argv[1])) return nd_shim_unsupported("numpy.roll with a lazy shift");
    if ((r = nd_xj_int_list(argv[1], 1, sh, ND_MAXDIMS, &ns))) {
        if (r < 0) return NULL;
        return nd_xj_numpy_error("roll", P, argv);
    }
    if (!argv[2] || argv[2] == Py_None) {
        /* NumPy rolls the raveled array on axis 0 by every shift given */
        nd_xj_arr f = a;
        if (nd_xj_ravel(t, &f) < 0) return NULL;
        for (int i = 0; i < ns; i++) shifts[0] += sh[i];
        if (roll_value(t, &f, shifts) == ND_NONE) return NULL;
        if (nd_xj_reshape(t, &f, a.ndim, a.shape) < 0) return NULL;
        return nd_shim_wrap(t, f.id, 0);
    }
    if ((r = nd_xj_int_list(argv[2], 1, ax, ND_MAXDIMS, &na))) {
        if (r < 0) return NULL;
        return nd_xj_numpy_error("roll", P, argv);
    }
    int n = ns > na ? ns : na;
    if ((ns != 1 && ns != n) || (na != 1 && na != n)) return nd_xj_numpy_error("roll", P, argv);
    for (int i = 0; i < n; i++) {
        npy_intp d = ax[na == 1 ? 0 : i];
        if (d < -a.ndim || d >= a.ndim) return nd_xj_numpy_error("roll", P, argv);
        if (d < 0) d += a.ndim;
        shifts[d] += sh[ns == 1 ? 0 : i];
    }
    nd_xj_arr c = a;
    if (roll_value(t, &c, shifts) == ND_NONE) return NULL;
    /* a zero shift returns a's value node: the new proxy gets its own
     * storage, so it is still a new array as np.roll promises; NumPy
     * fills an empty_like(a) */
    return nd_shim_wrap_k(t, c.id, 0, 1, argv, 0);
}

/* fft.fftshift / ifftshift: rolls by n//2 (or -(n//2)) over axes */
static PyObject *fftshift_common(nd_trace *t, PyObject **argv, int inverse)
{
    const char *path = inverse ? "fft.ifftshift" : "fft.fftshift";
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    npy_intp shifts[ND_MAXDIMS] = {0}, ax[ND_MAXDIMS];
    int na = 0;
    if (!argv[1] || argv[1] == Py_None) {
        for (int d = 0; d < a.ndim; d++) ax[na++] = d;
    } else {
        int r = nd_xj_int_list(argv[1], 1, ax, ND_MAXDIMS, &na);
        if (r < 0) return NULL;
        if (r > 0) return nd_xj_numpy_error(path, "x|axes", argv);
    }
    for (int i = 0; i < na; i++) {
        npy_intp d = ax[i];
        if (d < -a.ndim || d >= a.ndim) return nd_xj_numpy_error(path, "x|axes", argv);
        if (d < 0) d += a.ndim;
        npy_intp h = a.shape[d] / 2;
        shifts[d] += inverse ? -h : h;
    }
    nd_xj_arr c = a;
    if (roll_value(t, &c, shifts) == ND_NONE) return NULL;
    return nd_shim_wrap(t, c.id, 0);
}

static PyObject *fftshift_impl(nd_trace *t, PyObject **argv) { return fftshift_common(t, argv, 0); }
static PyObject *ifftshift_impl(nd_trace *t, PyObject **argv) { return fftshift_common(t, argv, 1); }

/* ------------------------------------------------------------ triu/tril */

static PyObject *tri_common(nd_trace *t, PyObject **argv, int upper)
{
    const char *path = upper ? "triu" : "tril";
    nd_xj_arr m;
    if (nd_xj_array(t, argv[0], &m)) return NULL;
    if (m.ndim == 0) return nd_xj_numpy_error(path, "m|k", argv);
    long long k = 0;
    if (argv[1]) {
        if (!nd_shim_index_like(argv[1])) return nd_shim_unsupported("numpy.%s with a non-integer k", path);
        k = PyLong_AsLongLong(argv[1]);
        if (k == -1 && PyErr_Occurred()) return NULL;
    }
    npy_intp rc[2];
    rc[0] = m.ndim == 1 ? m.shape[0] : m.shape[m.ndim - 2];
    rc[1] = m.shape[m.ndim - 1];
    nd_id i = nd_shim_node_index(t, 2, rc, 0);
    nd_id j = nd_shim_node_index(t, 2, rc, 1);
    if (i == ND_NONE || j == ND_NONE) return NULL;
    nd_id d = nd_xj_ibin(t, ND_UF_SUBTRACT, j, i);
    nd_id kk = nd_xj_i64(t, k);
    if (d == ND_NONE || kk == ND_NONE) return NULL;
    /* triu keeps j - i >= k, tril keeps j - i <= k */
    nd_id keep = nd_xj_ibin(t, upper ? ND_UF_GREATER_EQUAL : ND_UF_LESS_EQUAL, d, kk);
    nd_id zero = keep == ND_NONE ? ND_NONE : nd_xj_i64(t, 0);
    if (zero == ND_NONE) return NULL;
    zero = nd_shim_node_cast(t, zero, m.dtype);
    if (zero == ND_NONE) return NULL;
    nd_id r = nd_shim_node_where(t, keep, m.id, zero, m.dtype);
    PyObject *res = nd_shim_wrap(t, r, 0);
    if (res && m.ndim >= 2) {
        /* NumPy: where(tri(N, M) mask, zeros(1), m): the C-ordered mask
         * over the last two dims goes first */
        npy_intp mask[1][ND_MAXDIMS] = {{0}};
        mask[0][m.ndim - 2] = rc[1];
        mask[0][m.ndim - 1] = 1;
        nd_proxy_set_korder_st(res, 1, (const npy_intp (*)[ND_MAXDIMS])mask, 1, argv, 1);
    }
    return res;
}

static PyObject *triu_impl(nd_trace *t, PyObject **argv) { return tri_common(t, argv, 1); }
static PyObject *tril_impl(nd_trace *t, PyObject **argv) { return tri_common(t, argv, 0); }

/* ----------------------------------------------------------------- outer */

static PyObject *outer_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr a, b;
    if (nd_xj_array(t, argv[0], &a) || nd_xj_array(t, argv[1], &b)) return NULL;
    npy_intp na = nd_xj_size(a.ndim, a.shape), nb = nd_xj_size(b.ndim, b.shape);
    npy_intp sa[2] = {na, 1}, sb[2] = {1, nb}, ta[2] = {1, 0}, tb[2] = {0, 1};
    nd_id va = nd_shim_node_view(t, a.id, 2, sa, 0, ta);
    nd_id vb = va == ND_NONE ? ND_NONE : nd_shim_node_view(t, b.id, 2, sb, 0, tb);
    if (vb == ND_NONE) return NULL;
    int dts[2] = {a.dtype, b.dtype}, weak[2] = {0, 0}, loop[2], out;
    PyObject *sv[2] = {NULL, NULL};
    if (nd_shim_resolve_ufunc(ND_UF_MULTIPLY, 2, dts, weak, sv, loop, &out) < 0) return NULL;
    nd_id in[2] = {va, vb};
    nd_id r = nd_shim_node_ufunc(t, ND_UF_MULTIPLY, in, loop, out, 0);
    if (r == ND_NONE) return NULL;
    if (argv[2] && argv[2] != Py_None) {
        if (nd_shim_store_out(t, argv[2], r, "multiply", NPY_SAME_KIND_CASTING) < 0) return NULL;
        Py_INCREF(argv[2]);
        return argv[2];
    }
    return nd_shim_wrap(t, r, 0);
}

/* kron(a, b): NumPy's own (numpy/lib/_shape_base_impl.py) in nodes: both
 * padded with leading 1s to one rank n, a seen at (a0, b0, a1, b1, ...)
 * broadcast over b's dims and b over a's, multiplied, and the C-order
 * result viewed at (a0*b0, a1*b1, ...). NumPy branches on b.flags to make
 * b contiguous first, which changes no value (the reason its Python code
 * cannot be inlined). The result is C-contiguous as NumPy's is for
 * operands whose dims are in C order in memory; other layouts (NumPy's result follows the
 * operands' order), two 0-d operands (multiply's scalar) and ndarray
 * subclasses (np.matrix's own rules) are NumPy's. */
/* A small bool array with o's memory order (its dims longer than 1 cut to
 * 2, their strides in o's order and signs), or a new reference to o itself
 * when it has no layout to copy (a scalar, a list). */
static PyObject *layout_standin(PyObject *o)
{
    int nd;
    const npy_intp *shape;
    npy_intp ms[ND_MAXDIMS], cs[ND_MAXDIMS], bs[ND_MAXDIMS];
    if (nd_operand_memory_strides(o, &nd, &shape, ms) != 0) return Py_NewRef(o);
    int perm[ND_MAXDIMS];
    for (int d = 0; d < nd; d++) perm[d] = d;
    for (int i = 1; i < nd; i++)  /* dims by |stride|, largest first (stable) */
        for (int j = i; j > 0 && llabs((long long)ms[perm[j]]) > llabs((long long)ms[perm[j - 1]]); j--) {
            int tmp = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = tmp;
        }
    for (int d = 0; d < nd; d++) cs[d] = shape[d] > 1 ? 2 : shape[d];
    for (int k = 0; k < nd; k++) bs[k] = cs[perm[k]];
    PyObject *base = PyArray_ZEROS(nd, bs, NPY_BOOL, 0);
    npy_intp axes[ND_MAXDIMS];
    for (int k = 0; k < nd; k++) axes[perm[k]] = k;
    PyArray_Dims pd = {axes, nd};
    PyObject *r = base ? PyArray_Transpose((PyArrayObject *)base, &pd) : NULL;
    Py_XDECREF(base);
    for (int d = 0; r && d < nd; d++) {
        if (ms[d] >= 0) continue;
        PyObject *np = PyImport_ImportModule("numpy");
        PyObject *f = np ? PyObject_CallMethod(np, "flip", "Oi", r, d) : NULL;
        Py_XDECREF(np);
        Py_SETREF(r, f);
    }
    return r;
}

/* 1 when NumPy lays np.kron(a, b) out in C order, as kron_impl makes it:
 * asked of NumPy itself, on stand-ins with the operands' memory orders
 * (its product follows its iterator's order; a transposed or reversed
 * operand usually still gives C order) */
static int kron_c_ordered(PyObject *a, PyObject *b)
{
    PyObject *sa = layout_standin(a), *sb = sa ? layout_standin(b) : NULL;
    PyObject *np = sb ? PyImport_ImportModule("numpy") : NULL;
    PyObject *r = np ? PyObject_CallMethod(np, "kron", "OO", sa, sb) : NULL;
    int c = r && PyArray_Check(r) ? PyArray_IS_C_CONTIGUOUS((PyArrayObject *)r) : -1;
    Py_XDECREF(sa);
    Py_XDECREF(sb);
    Py_XDECREF(np);
    Py_XDECREF(r);
    if (c < 0) PyErr_Clear();
    return c > 0;
}

static PyObject *kron_impl(nd_trace *t, PyObject **argv)
{
    int c_order = 1;
    for (int k = 0; k < 2; k++) {
        if (PyArray_Check(argv[k]) && !PyArray_CheckExact(argv[k]))
            return nd_shim_unsupported("numpy.kron of an ndarray subclass");
        /* its dims in C order in memory (positive strides, decreasing over
         * the dims longer than 1): NumPy's product is then laid out in C order */
        int nd;
        const npy_intp *shape;
        npy_intp ms[ND_MAXDIMS], prev = -1;
        if (nd_operand_memory_strides(argv[k], &nd, &shape, ms) == 0) {
            for (int d = 0; d < nd; d++) {
                if (shape[d] <= 1) continue;
                if (ms[d] <= 0 || (prev >= 0 && ms[d] >= prev)) c_order = 0;
                prev = ms[d];
            }
        }
    }
    if (!c_order && !kron_c_ordered(argv[0], argv[1]))
        return nd_shim_unsupported("numpy.kron of an operand not in C order whose product "
                                   "NumPy lays out in another order");
    nd_xj_arr a, b;
    int rc = nd_xj_array(t, argv[0], &a);
    if (rc == 0) rc = nd_xj_array(t, argv[1], &b);
    if (rc) return NULL;
    int n = a.ndim > b.ndim ? a.ndim : b.ndim;
    if (n == 0 || 2 * n > ND_MAXDIMS)
        return nd_shim_unsupported("numpy.kron of two 0-d operands or above %d dims", ND_MAXDIMS / 2);
    npy_intp as[ND_MAXDIMS], bs[ND_MAXDIMS], ac[ND_MAXDIMS], bc[ND_MAXDIMS];
    for (int d = 0; d < n; d++) {
        int da = d - (n - a.ndim), db = d - (n - b.ndim);
        as[d] = da >= 0 ? a.shape[da] : 1;
        bs[d] = db >= 0 ? b.shape[db] : 1;
    }
    nd_c_strides(n, as, ac);
    nd_c_strides(n, bs, bc);
    npy_intp sh[ND_MAXDIMS], sa[ND_MAXDIMS], sb[ND_MAXDIMS], out[ND_MAXDIMS], oc[ND_MAXDIMS];
    for (int d = 0; d < n; d++) {
        sh[2 * d] = as[d];
        sh[2 * d + 1] = bs[d];
        sa[2 * d] = as[d] > 1 ? ac[d] : 0;
        sa[2 * d + 1] = 0;
        sb[2 * d] = 0;
        sb[2 * d + 1] = bs[d] > 1 ? bc[d] : 0;
        out[d] = as[d] * bs[d];
    }
    nd_c_strides(n, out, oc);
    nd_id va = nd_shim_node_view(t, a.id, 2 * n, sh, 0, sa);
    nd_id vb = va == ND_NONE ? ND_NONE : nd_shim_node_view(t, b.id, 2 * n, sh, 0, sb);
    if (vb == ND_NONE) return NULL;
    int dts[2] = {a.dtype, b.dtype}, weak[2] = {0, 0}, loop[2], odt;
    PyObject *sv[2] = {NULL, NULL};
    if (nd_shim_resolve_ufunc(ND_UF_MULTIPLY, 2, dts, weak, sv, loop, &odt) < 0) return NULL;
    nd_id in[2] = {va, vb};
    nd_id r = nd_shim_node_ufunc(t, ND_UF_MULTIPLY, in, loop, odt, 0);
    if (r == ND_NONE || (r = nd_shim_node_view(t, r, n, out, 0, oc)) == ND_NONE) return NULL;
    return nd_shim_wrap(t, r, 0);
}

/* ------------------------------------------------------------------- pad */

static PyObject *pad_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "array,pad_width|mode;constant_values,end_values,reflect_type,stat_length";
    const char *mode = "constant";
    if (argv[2]) {
        if (!PyUnicode_Check(argv[2])) return nd_shim_unsupported("numpy.pad with a callable mode");
        mode = PyUnicode_AsUTF8(argv[2]);
        if (!mode) return NULL;
    }
    int constant = strcmp(mode, "constant") == 0, edge = strcmp(mode, "edge") == 0;
    if (!constant && !edge) return nd_shim_unsupported("numpy.pad mode '%s' is not supported in-graph", mode);
    if (argv[4] || argv[5] || argv[6] || (edge && argv[3])) return nd_xj_numpy_error("pad", P, argv);
    if (nd_proxy_check(argv[1]) || (argv[3] && nd_proxy_check(argv[3])))
        return nd_shim_unsupported("numpy.pad with lazy pad widths or values");
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    /* pad_width -> (ndim, 2) ints >= 0, else NumPy's own error */
    PyObject *pw = PyArray_FROM_O(argv[1]);
    if (!pw) return NULL;
    if (!PyArray_ISINTEGER((PyArrayObject *)pw)) { Py_DECREF(pw); return nd_xj_numpy_error("pad", P, argv); }
    PyObject *pw64 = PyArray_FROMANY(pw, NPY_INT64, 0, 2, NPY_ARRAY_CARRAY);
    Py_DECREF(pw);
    if (!pw64) return NULL;
    npy_intp before[ND_MAXDIMS], after[ND_MAXDIMS];
    {
        PyArrayObject *p = (PyArrayObject *)pw64;
        int pnd = PyArray_NDIM(p);
        const npy_intp *psh = PyArray_DIMS(p);
        const int64_t *pv = PyArray_DATA(p);
        /* NumPy broadcasts pad_width to (ndim, 2) */
        int ok = pnd == 0 || (pnd == 1 && (psh[0] == 1 || psh[0] == 2)) ||
                 (pnd == 2 && (psh[0] == 1 || psh[0] == a.ndim) && (psh[1] == 1 || psh[1] == 2));
        for (int d = 0; ok && d < a.ndim; d++) {
            npy_intp r = (pnd == 2 && psh[0] != 1) ? d : 0;
            npy_intp cols = pnd == 2 ? psh[1] : pnd == 1 ? psh[0] : 1;
            before[d] = pv[r * cols];
            after[d] = pv[r * cols + (cols == 2 ? 1 : 0)];
            if (before[d] < 0 || after[d] < 0) ok = 0;
            if (edge && a.shape[d] == 0 && (before[d] || after[d])) ok = 0;
        }
        Py_DECREF(pw64);
        if (!ok) return nd_xj_numpy_error("pad", P, argv);
    }
    npy_intp osh[ND_MAXDIMS], ocs[ND_MAXDIMS], acs[ND_MAXDIMS];
    for (int d = 0; d < a.ndim; d++) osh[d] = a.shape[d] + before[d] + after[d];
    nd_c_strides(a.ndim, osh, ocs);
    nd_c_strides(a.ndim, a.shape, acs);
    nd_id r;
    if (constant) {
        PyObject *cv = argv[3];
        if (cv && !PyLong_Check(cv) && !PyFloat_Check(cv) && !PyComplex_Check(cv) &&
            !PyArray_IsScalar(cv, Number) && !PyArray_IsScalar(cv, Bool))
            return nd_shim_unsupported("numpy.pad with per-axis constant_values");
        PyObject *zero = NULL;
        if (!cv) { zero = PyLong_FromLong(0); if (!zero) return NULL; cv = zero; }
        int weak = PyLong_Check(cv) || PyFloat_Check(cv) || PyComplex_Check(cv);
        r = nd_xj_full(t, cv, a.dtype, weak, a.ndim, osh);
        Py_XDECREF(zero);
        if (r == ND_NONE) return NULL;
        if (nd_xj_size(a.ndim, a.shape) > 0) {
            npy_intp off = 0;
            for (int d = 0; d < a.ndim; d++) off += before[d] * ocs[d];
            r = nd_xj_setitem(t, r, a.id, a.ndim, a.shape, off, ocs);
        }
    } else {
        nd_id flat = ND_NONE;
        if (nd_xj_size(a.ndim, osh) == 0 || a.ndim == 0) {
            r = nd_shim_node_cast(t, a.id, a.dtype);
        } else {
            for (int d = 0; d < a.ndim; d++) {
                if (osh[d] == 1) continue;
                nd_id i = nd_shim_node_index(t, a.ndim, osh, d);
                if (before[d] || after[d]) {
                    i = nd_xj_ibin_c(t, ND_UF_SUBTRACT, i, (long long)before[d]);
                    i = nd_xj_ibin_c(t, ND_UF_MAXIMUM, i, 0);
                    i = nd_xj_ibin_c(t, ND_UF_MINIMUM, i, (long long)(a.shape[d] - 1));
                }
                i = nd_xj_ibin_c(t, ND_UF_MULTIPLY, i, (long long)acs[d]);
                if (i == ND_NONE || (flat = nd_xj_ibin(t, ND_UF_ADD, flat, i)) == ND_NONE)
                    return NULL;
            }
            if (flat == ND_NONE) {
                flat = nd_xj_zeros(t, NPY_INT64, a.ndim, osh);
                if (flat == ND_NONE) return NULL;
            }
            r = nd_xj_gather(t, a.id, flat);
        }
    }
    /* NumPy's _pad_simple: Fortran when the array is F- and not C-contiguous */
    PyObject *res = nd_shim_wrap(t, r, 0);
    if (res) nd_proxy_set_order(res, argv[0], 'A');
    return res;
}

/* ------------------------------------------------------------------ diff */

/* a[1:] - a[:-1] along axis, n times (not_equal for bool, as NumPy);
 * prepend/append are concatenated first, scalars broadcast to one slice */
static PyObject *diff_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a|n,axis,prepend,append";
    long n = 1;
    if (argv[1]) {
        if (!nd_shim_index_like(argv[1])) return nd_xj_numpy_error("diff", P, argv);
        n = PyLong_AsLong(argv[1]);
        if (n == -1 && PyErr_Occurred()) return NULL;
    }
    if (n == 0 && nd_proxy_check(argv[0])) { Py_INCREF(argv[0]); return argv[0]; }
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (a.ndim == 0 || n < 0) return nd_xj_numpy_error("diff", P, argv);
    int ax = a.ndim - 1;
    if (axis_arg(argv[2], a.ndim - 1, a.ndim, &ax, ND_AXIS_NORMALIZE) < 0) return NULL;
    if (argv[3] || argv[4]) {
        nd_xj_arr parts[3];
        int np_ = 0;
        for (int k = 3; k <= 4; k++) {
            if (k == 4) parts[np_++] = a;
            if (!argv[k]) continue;
            nd_xj_arr e;
            if (nd_xj_array(t, argv[k], &e)) return NULL;
            if (e.ndim == 0) {
                npy_intp sh[ND_MAXDIMS];
                memcpy(sh, a.shape, sizeof(sh));
                sh[ax] = 1;
                e.id = nd_shim_node_broadcast(t, e.id, a.ndim, sh);
                if (e.id == ND_NONE) return NULL;
                nd_xj_fill(t, &e);
            }
            parts[np_++] = e;
        }
        if (concat_mismatch(parts, np_, ax)) return nd_xj_numpy_error("diff", P, argv);
        int dts[3], weak[3] = {0, 0, 0}, dt;
        for (int k = 0; k < np_; k++) dts[k] = parts[k].dtype;
        if (nd_shim_result_type(np_, dts, weak, &dt) < 0) return NULL;
        a.id = concat_nodes(t, parts, np_, ax, dt);
        if (a.id == ND_NONE) return NULL;
        nd_xj_fill(t, &a);
    }
    npy_intp cs[ND_MAXDIMS];
    /* NumPy's diff is a ufunc of slices of a: a's memory order throughout */
    PyObject *cur = nd_shim_wrap_k(t, a.id, 0, 1, argv, 0);
    if (!cur) return NULL;
    for (long i = 0; i < n; i++) {
        nd_xj_arr c;
        c.id = nd_proxy_read(cur);
        if (c.id == ND_NONE) { Py_DECREF(cur); return NULL; }
        nd_xj_fill(t, &c);
        npy_intp sh[ND_MAXDIMS];
        memcpy(sh, c.shape, sizeof(sh));
        sh[ax] = c.shape[ax] > 0 ? c.shape[ax] - 1 : 0;
        nd_c_strides(c.ndim, c.shape, cs);
        nd_id hi = nd_shim_node_view(t, c.id, c.ndim, sh, sh[ax] > 0 ? cs[ax] : 0, cs);
        nd_id lo = hi == ND_NONE ? ND_NONE : nd_shim_node_view(t, c.id, c.ndim, sh, 0, cs);
        PyObject *ph = lo == ND_NONE ? NULL : nd_shim_wrap(t, hi, 0);
        PyObject *pl = ph ? nd_shim_wrap(t, lo, 0) : NULL;
        PyObject *r = pl ? nd_shim_ufunc2(c.dtype == NPY_BOOL ? ND_UF_NOT_EQUAL : ND_UF_SUBTRACT,
                                          ph, pl) : NULL;
        Py_XDECREF(ph);
        Py_XDECREF(pl);
        if (r) nd_proxy_set_korder(r, 1, &cur, 1);
        Py_DECREF(cur);
        if (!r) return NULL;
        cur = r;
    }
    return cur;
}

/* -------------------------------------------------------------- register */

static const nd_shim_def join_defs[] = {
    {"concatenate", P_CONCAT, concatenate_impl, 0},
    {"concat", P_CONCAT, concat_impl, 0},
    {"stack", "arrays|axis,out;dtype,casting", stack_impl, 0},
    {"hstack", "tup|;dtype,casting", hstack_impl, 0},
    {"vstack", "tup|;dtype,casting", vstack_impl, 0},
    {"dstack", "tup", dstack_impl, 0},
    {"column_stack", "tup", column_stack_impl, 0},
    {"append", "arr,values|axis", append_impl, 0},
    {"split", "ary,indices_or_sections|axis", split_impl, 0},
    {"array_split", "ary,indices_or_sections|axis", array_split_impl, 0},
    {"hsplit", "ary,indices_or_sections", hsplit_impl, 0},
    {"vsplit", "ary,indices_or_sections", vsplit_impl, 0},
    {"dsplit", "ary,indices_or_sections", dsplit_impl, 0},
    {"unstack", "x|;axis", unstack_impl, 0},
    {"tile", "A,reps", tile_impl, 0},
    {"repeat", "a,repeats|axis", repeat_impl, 0},
    {"roll", "a,shift|axis", roll_impl, 0},
    {"fft.fftshift", "x|axes", fftshift_impl, 0},
    {"fft.ifftshift", "x|axes", ifftshift_impl, 0},
    {"triu", "m|k", triu_impl, 0},
    {"tril", "m|k", tril_impl, 0},
    {"outer", "a,b|out", outer_impl, 0},
    {"kron", "a,b", kron_impl, 0},
    {"pad", "array,pad_width|mode;constant_values,end_values,reflect_type,stat_length", pad_impl, 0},
    {"diff", "a|n,axis,prepend,append", diff_impl, 0},
    {NULL, NULL, NULL, 0},
};

static const nd_shim_def join_methods[] = {
    {"repeat", "self,repeats|axis", repeat_impl, 0},
    {NULL, NULL, NULL, 0},
};

int nd_shim_register_join(nd_shim_table *tab)
{
    if (nd_shim_add_functions(tab, join_defs) < 0) return -1;
    return nd_shim_add_methods(tab, join_methods);
}
