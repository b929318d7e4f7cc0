/* shim_views.c -- functions and methods that return views: transpose,
 * swapaxes, moveaxis, reshape/ravel (a view when NumPy's no-copy rule
 * allows, else a new value), squeeze, expand_dims, broadcast_to, flip,
 * diagonal, atleast_*d, real/imag; and the copies: flatten, copy.
 *
 * Every view is an affine map over the base's C-order flat index given to
 * nd_proxy_view, so writes through it reach the base. A C-order reshape is
 * offered as a view first; the tracer refuses (SystemError) a map that is
 * not expressible per dimension over the storage -- exactly when NumPy
 * would have to copy -- and we then make a new value.
 */
#include "shim_internal.h"
#include <string.h>

static void c_strides(int ndim, const npy_intp *shape, npy_intp *cs)
{
    npy_intp s = 1;
    for (int d = ndim - 1; d >= 0; d--) { cs[d] = s; s *= shape[d]; }
}

/* The proxy for argument `a` (a new ref): proxies as they are, anything else
 * lifted as a fresh value. NULL + reason when unsupported. */
static PyObject *as_proxy(nd_trace *t, PyObject *a)
{
    if (nd_proxy_check(a)) { Py_INCREF(a); return a; }
    nd_operand op;
    if (nd_shim_operand(t, a, &op)) return NULL;
    nd_id id = nd_shim_operand_node(t, &op, op.dtype);
    return id == ND_NONE ? NULL : nd_shim_wrap(t, id, 0);
}

static PyObject *view_of(PyObject *p, int ndim, const npy_intp *shape, npy_intp off,
                         const npy_intp *strides)
{
    return nd_proxy_view(p, ndim, shape, off, strides);
}

/* ------------------------------------------------------------ permutations */

static PyObject *permute(PyObject *p, const int *perm)
{
    int nd = nd_proxy_ndim(p);
    const npy_intp *sh = nd_proxy_shape(p);
    npy_intp cs[ND_MAXDIMS], shape[ND_MAXDIMS], st[ND_MAXDIMS];
    c_strides(nd, sh, cs);
    for (int d = 0; d < nd; d++) { shape[d] = sh[perm[d]]; st[d] = cs[perm[d]]; }
    return view_of(p, nd, shape, 0, st);
}

static PyObject *transpose_axes(nd_trace *t, PyObject *a, PyObject *axes)
{
    PyObject *p = as_proxy(t, a);
    if (!p) return NULL;
    int nd = nd_proxy_ndim(p), perm[ND_MAXDIMS];
    if (!axes || axes == Py_None || (PyTuple_Check(axes) && PyTuple_GET_SIZE(axes) == 0)) {
        for (int d = 0; d < nd; d++) perm[d] = nd - 1 - d;
    } else {
        PyObject *seq = PySequence_Fast(axes, "axes must be a sequence");
        if (!seq) { Py_DECREF(p); return NULL; }
        if (PySequence_Fast_GET_SIZE(seq) != nd) {
            Py_DECREF(seq);
            Py_DECREF(p);
            PyErr_SetString(PyExc_ValueError, "axes don't match array");
            return NULL;
        }
        uint64_t seen = 0;
        for (int d = 0; d < nd; d++) {
            if (nd_shim_axis_index(PySequence_Fast_GET_ITEM(seq, d), nd, &perm[d]) < 0) {
                Py_DECREF(seq);
                Py_DECREF(p);
                return NULL;
            }
            if (seen & (1ULL << perm[d])) {
                Py_DECREF(seq);
                Py_DECREF(p);
                PyErr_SetString(PyExc_ValueError, "repeated axis in transpose");
                return NULL;
            }
            seen |= 1ULL << perm[d];
        }
        Py_DECREF(seq);
    }
    /* a NumPy scalar's transpose is the scalar (immutable: itself will do) */
    if (nd_proxy_is_scalar(p)) return p;
    PyObject *r = permute(p, perm);
    Py_DECREF(p);
    return r;
}

static PyObject *transpose_impl(nd_trace *t, PyObject **argv) { return transpose_axes(t, argv[0], argv[1]); }

/* ndarray.transpose(*axes): one tuple/list argument or the axes inline */
static PyObject *transpose_method(nd_trace *t, PyObject **argv)
{
    PyObject *axes = argv[1];
    if (axes && PyTuple_GET_SIZE(axes) == 1 && PyTuple_GET_ITEM(axes, 0) != Py_None &&
        !nd_shim_index_like(PyTuple_GET_ITEM(axes, 0)))
        axes = PyTuple_GET_ITEM(axes, 0);
    else if (axes && PyTuple_GET_SIZE(axes) == 1 && PyTuple_GET_ITEM(axes, 0) == Py_None)
        axes = NULL;
    return transpose_axes(t, argv[0], axes);
}

static PyObject *swapaxes_impl(nd_trace *t, PyObject **argv)
{
    PyObject *p = as_proxy(t, argv[0]);
    if (!p) return NULL;
    int nd = nd_proxy_ndim(p), a1, a2, perm[ND_MAXDIMS];
    if (nd_shim_axis_index_named(argv[1], nd, &a1, "axis1", ND_AXIS_INDEX) < 0 ||
        nd_shim_axis_index_named(argv[2], nd, &a2, "axis2", ND_AXIS_INDEX) < 0) {
        Py_DECREF(p);
        return NULL;
    }
    for (int d = 0; d < nd; d++) perm[d] = d;
    perm[a1] = a2;
    perm[a2] = a1;
    PyObject *r = permute(p, perm);
    Py_DECREF(p);
    return r;
}

/* NumPy's normalize_axis_tuple(o, nd, argname): AxisError with the
 * argument's name as prefix, ValueError for a repeated axis. */
static int axes_list(PyObject *o, int nd, int *out, int *n, const char *argname)
{
    int rc = nd_shim_axis_tuple(o, nd, out, n);
    if (rc < 0) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);  /* nd_shim_exc may import: no exception set */
        PyObject *cls = nd_shim_exc("numpy.exceptions.AxisError");
        if (!cls) {
            Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
            return -1;
        }
        PyErr_NormalizeException(&et, &ev, &tb);
        if (ev && PyObject_IsInstance(ev, cls) == 1) {
            PyObject *ax = PyObject_GetAttrString(ev, "axis");
            PyObject *e = ax ? PyObject_CallFunction(cls, "Ois", ax, nd, argname) : NULL;
            Py_XDECREF(ax);
            if (e) {
                Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
                PyErr_SetObject(cls, e);
                Py_DECREF(e);
                return -1;
            }
            PyErr_Clear();
        }
        PyErr_Restore(et, ev, tb);
        return -1;
    }
    for (int i = 0; i < *n; i++)
        for (int j = 0; j < i; j++)
            if (out[i] == out[j]) {
                PyErr_Format(PyExc_ValueError, "repeated axis in `%s` argument", argname);
                return -1;
            }
    return 0;
}

static PyObject *moveaxis_impl(nd_trace *t, PyObject **argv)
{
    PyObject *p = as_proxy(t, argv[0]);
    if (!p) return NULL;
    int nd = nd_proxy_ndim(p), src[ND_MAXDIMS], dst[ND_MAXDIMS], ns, ndst;
    if (axes_list(argv[1], nd, src, &ns, "source") < 0 ||
        axes_list(argv[2], nd, dst, &ndst, "destination") < 0) {
        Py_DECREF(p);
        return NULL;
    }
    if (ns != ndst) {
        Py_DECREF(p);
        PyErr_SetString(PyExc_ValueError,
                        "`source` and `destination` arguments must have the same number of elements");
        return NULL;
    }
    int perm[ND_MAXDIMS], used[ND_MAXDIMS] = {0}, placed[ND_MAXDIMS];
    for (int d = 0; d < nd; d++) placed[d] = -1;
    for (int i = 0; i < ns; i++) {
        if (used[src[i]] || placed[dst[i]] >= 0) {
            Py_DECREF(p);
            PyErr_SetString(PyExc_ValueError, "repeated axis in `source` or `destination` argument");
            return NULL;
        }
        used[src[i]] = 1;
        placed[dst[i]] = src[i];
    }
    int next = 0;
    for (int d = 0; d < nd; d++) {
        if (placed[d] >= 0) { perm[d] = placed[d]; continue; }
        while (used[next]) next++;
        perm[d] = next++;
    }
    PyObject *r = permute(p, perm);
    Py_DECREF(p);
    return r;
}

/* ------------------------------------------------------------ reshape */

static int shape_with_unknown(PyObject *o, npy_intp size, int *nd, npy_intp *shape)
{
    PyObject *seq = nd_shim_shape_items(o);
    if (!seq) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > ND_MAXDIMS) { Py_DECREF(seq); nd_shim_unsupported("reshape to rank above %d", ND_MAXDIMS); return 1; }
    int unknown = -1;
    npy_intp known = 1, orig[ND_MAXDIMS];
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t v;
        if (nd_shim_shape_item(PyTuple_GET_ITEM(seq, i), &v) < 0) { Py_DECREF(seq); return -1; }
        orig[i] = v;
        if (v < 0) {
            if (v != -1) {
                Py_DECREF(seq);
                PyErr_SetString(PyExc_ValueError, "negative dimensions not allowed");
                return -1;
            }
            if (unknown >= 0) {
                Py_DECREF(seq);
                PyErr_SetString(PyExc_ValueError, "can only specify one unknown dimension");
                return -1;
            }
            unknown = (int)i;
            shape[i] = 1;
        } else {
            shape[i] = v;
            known *= v;
        }
    }
    Py_DECREF(seq);
    int ok = 1;
    if (unknown >= 0) {
        if (known > 0 && size % known == 0) shape[unknown] = size / known;
        else ok = 0;
    } else {
        ok = known == size;
    }
    if (!ok) {
        /* NumPy's spelling: "(5,5)", "(5,)", "(7,newaxis)" for the -1 */
        char buf[ND_MAXDIMS * 24 + 8];
        size_t len = 0;
        buf[len++] = '(';
        for (Py_ssize_t i = 0; i < n; i++) {
            if (orig[i] < 0) len += (size_t)snprintf(buf + len, sizeof buf - len, "newaxis");
            else len += (size_t)snprintf(buf + len, sizeof buf - len, "%zd", (Py_ssize_t)orig[i]);
            if (i + 1 < n || n == 1) buf[len++] = ',';
        }
        buf[len++] = ')';
        buf[len] = 0;
        PyErr_Format(PyExc_ValueError, "cannot reshape array of size %zd into shape %s",
                     (Py_ssize_t)size, buf);
        return -1;
    }
    *nd = (int)n;
    return 0;
}

/* Whether NumPy's reshape (ravel: its stricter rule, a view only of a
 * C-contiguous array) of proxy p to (nd, shape) copies: 1 copy, 0 view,
 * -1 unknown (the map has no per-dimension form over the storage's memory:
 * the tracer's own rule decides).
 *
 * NumPy decides from the array's real strides, and a caller's array may be
 * Fortran-ordered, strided or reversed in memory, so the tracer's rule -- a
 * map expressible over the storage's C-order index -- is not enough: an F
 * array's ravel() would be a view, a[::2].ravel() too. */
static int numpy_copies(PyObject *p, int nd, const npy_intp *shape, int ravel)
{
    npy_intp ms[ND_MAXDIMS];
    if (nd_proxy_memory_strides(p, ms)) return -1;
    int pnd = nd_proxy_ndim(p);
    const npy_intp *pd = nd_proxy_shape(p);
    int view = nd_c_contiguous(pnd, pd, ms, 1);
    if (!view && !ravel) {
        int same = nd == pnd;
        for (int d = 0; same && d < nd; d++) same = shape[d] == pd[d];
        view = same || nd_nocopy_reshape(pnd, pd, ms, nd, shape, NULL);
    }
    return !view;
}

static PyObject *reshape_core(nd_trace *t, PyObject *a, PyObject *shape_o, PyObject *order,
                              PyObject *copy, int ravel)
{
    if (order && order != Py_None &&
        !(PyUnicode_Check(order) && PyUnicode_CompareWithASCIIString(order, "C") == 0))
        return nd_shim_unsupported("reshape with order other than 'C' is not supported in-graph");
    PyObject *p = as_proxy(t, a);
    if (!p) return NULL;
    npy_intp size = 1;
    for (int d = 0; d < nd_proxy_ndim(p); d++) size *= nd_proxy_shape(p)[d];
    int nd;
    npy_intp shape[ND_MAXDIMS], cs[ND_MAXDIMS];
    int rc = shape_with_unknown(shape_o, size, &nd, shape);
    if (rc) { Py_DECREF(p); return NULL; }
    c_strides(nd, shape, cs);
    int force_copy = copy && copy != Py_None && PyObject_IsTrue(copy) == 1;
    int copies = force_copy ? 1 : numpy_copies(p, nd, shape, ravel);
    if (copies == -2) { Py_DECREF(p); return NULL; }
    if (copies == 1 && copy == Py_False) {
        Py_DECREF(p);
        PyErr_SetString(PyExc_ValueError, "Unable to avoid creating a copy while reshaping.");
        return NULL;
    }
    if (copies != 1) {
        PyObject *v = nd_proxy_reshape_view(p, nd, shape);
        if (v || PyErr_Occurred()) { Py_DECREF(p); return v; }
        v = view_of(p, nd, shape, 0, cs);
        if (v || !PyErr_ExceptionMatches(PyExc_SystemError)) { Py_DECREF(p); return v; }
        PyErr_Clear();
        if (copy == Py_False) {
            Py_DECREF(p);
            PyErr_SetString(PyExc_ValueError,
                            "Unable to avoid creating a copy while reshaping.");
            return NULL;
        }
    }
    nd_id id = nd_proxy_read(p);
    Py_DECREF(p);
    if (id == ND_NONE || (id = nd_shim_node_reshape(t, id, nd, shape)) == ND_NONE) return NULL;
    return nd_shim_wrap(t, id, 0);
}

static PyObject *reshape_impl(nd_trace *t, PyObject **argv)
{
    return reshape_core(t, argv[0], argv[1], argv[2], argv[3], 0);
}

/* ndarray.reshape(*shape, order=, copy=) */
static PyObject *reshape_method(nd_trace *t, PyObject **argv)
{
    PyObject *shape = argv[1];
    if (PyTuple_GET_SIZE(shape) == 1) shape = PyTuple_GET_ITEM(shape, 0);
    if (PyTuple_Check(argv[1]) && PyTuple_GET_SIZE(argv[1]) == 0) {
        PyErr_SetString(PyExc_TypeError, "reshape() missing required argument 'shape' (pos 1)");
        return NULL;
    }
    return reshape_core(t, argv[0], shape, argv[2], argv[3], 0);
}

static PyObject *minus_one(void) { return PyLong_FromLong(-1); }

static PyObject *ravel_impl(nd_trace *t, PyObject **argv)
{
    PyObject *m1 = minus_one();
    if (!m1) return NULL;
    PyObject *r = reshape_core(t, argv[0], m1, argv[1], NULL, 1);
    Py_DECREF(m1);
    return r;
}

static PyObject *flatten_impl(nd_trace *t, PyObject **argv)
{
    PyObject *m1 = minus_one();
    if (!m1) return NULL;
    PyObject *r = reshape_core(t, argv[0], m1, argv[1], Py_True, 1);
    Py_DECREF(m1);
    return r;
}

/* a distinct new value equal to a (np.copy, ndarray.copy), laid out by
 * order= as NumPy lays out the copy */
static PyObject *copy_of(nd_trace *t, PyObject *a, char order)
{
    nd_operand op;
    if (nd_shim_operand(t, a, &op)) return NULL;
    nd_id id = nd_shim_operand_node(t, &op, op.dtype);
    /* an identity VIEW node: a new value, never the caller's array itself */
    if (id == ND_NONE || (id = nd_shim_node_reshape(t, id, op.ndim, op.shape)) == ND_NONE) return NULL;
    PyObject *r = nd_shim_wrap(t, id, 0);
    if (r) nd_proxy_set_order(r, a, order);
    return r;
}

static PyObject *copy_impl(nd_trace *t, PyObject **argv)
{
    return copy_of(t, argv[0], nd_shim_order_char(argv[1], 'K'));
}
static PyObject *copy_method(nd_trace *t, PyObject **argv)
{
    return copy_of(t, argv[0], nd_shim_order_char(argv[1], 'C'));
}
static PyObject *dunder_copy(nd_trace *t, PyObject **argv) { return copy_of(t, argv[0], 'K'); }

/* ------------------------------------------------------------ squeeze & co */

static PyObject *squeeze_impl(nd_trace *t, PyObject **argv)
{
    PyObject *p = as_proxy(t, argv[0]);
    if (!p) return NULL;
    int nd = nd_proxy_ndim(p);
    const npy_intp *sh = nd_proxy_shape(p);
    uint64_t mask = 0;
    if (argv[1] && argv[1] != Py_None) {
        if (nd_shim_axis_bool_refused(argv[1], PyTuple_Check(argv[1])
                                                   ? "integers are required for the axis tuple elements"
                                                   : "an integer is required for the axis") < 0 ||
            nd_shim_axis_mask(argv[1], nd, 1, &mask) < 0) {
            Py_DECREF(p);
            return NULL;
        }
        for (int d = 0; d < nd; d++) {
            if ((mask & (1ULL << d)) && sh[d] != 1) {
                Py_DECREF(p);
                PyErr_SetString(PyExc_ValueError,
                                "cannot select an axis to squeeze out which has size not equal to one");
                return NULL;
            }
        }
    } else {
        for (int d = 0; d < nd; d++) if (sh[d] == 1) mask |= 1ULL << d;
    }
    /* NumPy's PyArray_Squeeze(Selected): with no dim to remove the array
     * itself (`a.squeeze() is a`, `a.squeeze(axis=())`), not a view of it;
     * a NumPy scalar's squeeze is a scalar (immutable: itself will do) */
    if (!mask && (p == argv[0] || nd_proxy_is_scalar(p))) return p;
    npy_intp cs[ND_MAXDIMS], shape[ND_MAXDIMS], st[ND_MAXDIMS];
    c_strides(nd, sh, cs);
    int k = 0;
    for (int d = 0; d < nd; d++) {
        if (mask & (1ULL << d)) continue;
        shape[k] = sh[d];
        st[k++] = cs[d];
    }
    PyObject *r = view_of(p, k, shape, 0, st);
    Py_DECREF(p);
    return r;
}

static PyObject *expand_dims_impl(nd_trace *t, PyObject **argv)
{
    PyObject *p = as_proxy(t, argv[0]);
    if (!p) return NULL;
    int nd = nd_proxy_ndim(p);
    const npy_intp *sh = nd_proxy_shape(p);
    /* NumPy: an axis that is not a tuple or list is (axis,) */
    PyObject *axes = PyTuple_Check(argv[1]) || PyList_Check(argv[1]) ? (Py_INCREF(argv[1]), argv[1])
                                                                      : PyTuple_Pack(1, argv[1]);
    if (!axes) { Py_DECREF(p); return NULL; }
    int out_nd = nd + (int)PySequence_Fast_GET_SIZE(axes);
    if (out_nd > ND_MAXDIMS) {
        Py_DECREF(p);
        Py_DECREF(axes);
        return nd_shim_unsupported("expand_dims to rank above %d", ND_MAXDIMS);
    }
    uint64_t mask;
    int rc = nd_shim_axis_mask_normalized(axes, out_nd, &mask);
    Py_DECREF(axes);
    if (rc < 0) {
        Py_DECREF(p);
        return NULL;
    }
    if (PyErr_Occurred()) { Py_DECREF(p); return NULL; }
    npy_intp cs[ND_MAXDIMS], shape[ND_MAXDIMS], st[ND_MAXDIMS];
    c_strides(nd, sh, cs);
    for (int d = 0, k = 0; d < out_nd; d++) {
        if (mask & (1ULL << d)) { shape[d] = 1; st[d] = 0; }
        else { shape[d] = sh[k]; st[d] = cs[k]; k++; }
    }
    PyObject *r = view_of(p, out_nd, shape, 0, st);
    Py_DECREF(p);
    return r;
}

static int shape_arg(PyObject *o, int *nd, npy_intp *shape)
{
    PyObject *seq = nd_shim_index_like(o) ? PyTuple_Pack(1, o) : PySequence_Tuple(o);
    if (!seq) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > ND_MAXDIMS) { Py_DECREF(seq); nd_shim_unsupported("rank above %d", ND_MAXDIMS); return 1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t v = PyNumber_AsSsize_t(PyTuple_GET_ITEM(seq, i), PyExc_ValueError);
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
        if (v < 0) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "all elements of broadcast shape must be non-negative");
            return -1;
        }
        shape[i] = v;
    }
    Py_DECREF(seq);
    *nd = (int)n;
    return 0;
}

/* a shape as NumPy's C code prints it: "(3,)", "(2,4)", "()" */
static const char *numpy_shape_str(char *buf, size_t cap, int n, const npy_intp *shape)
{
    size_t len = 0;
    buf[len++] = '(';
    for (int i = 0; i < n && len + 24 < cap; i++) {
        len += (size_t)snprintf(buf + len, cap - len, "%zd", (Py_ssize_t)shape[i]);
        if (i + 1 < n || n == 1) buf[len++] = ',';
    }
    buf[len++] = ')';
    buf[len] = 0;
    return buf;
}

static PyObject *broadcast_to_impl(nd_trace *t, PyObject **argv)
{
    PyObject *p = as_proxy(t, argv[0]);
    if (!p) return NULL;
    int nd, ind = nd_proxy_ndim(p);
    npy_intp shape[ND_MAXDIMS], cs[ND_MAXDIMS], st[ND_MAXDIMS];
    const npy_intp *sh = nd_proxy_shape(p);
    if (shape_arg(argv[1], &nd, shape)) { Py_DECREF(p); return NULL; }
    c_strides(ind, sh, cs);
    int ok = ind <= nd;
    for (int d = 0; ok && d < nd; d++) {
        int k = d - (nd - ind);
        if (k < 0) { st[d] = 0; continue; }
        if (sh[k] == shape[d]) st[d] = cs[k];
        else if (sh[k] == 1) st[d] = 0;
        else ok = 0;
    }
    if (!ok) {
        if (ind > nd) {
            PyErr_SetString(PyExc_ValueError,
                            "input operand has more dimensions than allowed by the axis remapping");
        } else {
            char a[ND_MAXDIMS * 24 + 4], b[ND_MAXDIMS * 24 + 4];
            PyErr_Format(PyExc_ValueError,
                         "operands could not be broadcast together with remapped shapes "
                         "[original->remapped]: %s  and requested shape %s",
                         numpy_shape_str(a, sizeof a, ind, sh),
                         numpy_shape_str(b, sizeof b, nd, shape));
        }
        Py_DECREF(p);
        return NULL;
    }
    /* NumPy's broadcast_to builds an iterator over the shape and a view of
     * it: an element count past npy_intp, then a byte count past it, are
     * its ValueErrors (no array of that shape could exist) */
    PyArray_Descr *dd = PyArray_DescrFromType(nd_proxy_dtype(p));
    npy_intp count = 1, isz = dd ? PyDataType_ELSIZE(dd) : 1;
    Py_XDECREF(dd);
    int zero = 0, big = 0;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 0) zero = 1;
        else if (!big && count > NPY_MAX_INTP / shape[d]) big = 1;
        else if (!big) count *= shape[d];
    }
    if (!zero && (big || count > NPY_MAX_INTP / (isz ? isz : 1))) {
        PyErr_SetString(PyExc_ValueError, big ? "iterator is too large"
                                              : "array is too big; `arr.size * arr.dtype.itemsize` is larger "
                                                "than the maximum possible size.");
        Py_DECREF(p);
        return NULL;
    }
    PyObject *r = view_of(p, nd, shape, 0, st);
    Py_DECREF(p);
    /* NumPy's broadcast_to returns a read-only view */
    if (r && nd_proxy_check(r) && nd_proxy_set_readonly(r) < 0) Py_CLEAR(r);
    return r;
}

static PyObject *flip_mask(nd_trace *t, PyObject *a, PyObject *axis, int fixed)
{
    PyObject *p = as_proxy(t, a);
    if (!p) return NULL;
    int nd = nd_proxy_ndim(p);
    const npy_intp *sh = nd_proxy_shape(p);
    uint64_t mask;
    if (fixed >= 0) {
        if (nd <= fixed) {
            Py_DECREF(p);
            PyErr_SetString(PyExc_ValueError, fixed ? "Input must be >= 2-d." : "Input must be >= 1-d.");
            return NULL;
        }
        mask = 1ULL << fixed;
    } else if (nd_shim_axis_mask_normalized(axis, nd, &mask) < 0) {
        Py_DECREF(p);
        return NULL;
    }
    npy_intp cs[ND_MAXDIMS], st[ND_MAXDIMS], off = 0;
    c_strides(nd, sh, cs);
    for (int d = 0; d < nd; d++) {
        if ((mask & (1ULL << d)) && sh[d] > 1) { st[d] = -cs[d]; off += (sh[d] - 1) * cs[d]; }
        else st[d] = cs[d];
    }
    PyObject *r = view_of(p, nd, sh, off, st);
    Py_DECREF(p);
    return r;
}

static PyObject *flip_impl(nd_trace *t, PyObject **argv) { return flip_mask(t, argv[0], argv[1], -1); }
static PyObject *flipud_impl(nd_trace *t, PyObject **argv) { return flip_mask(t, argv[0], NULL, 0); }
static PyObject *fliplr_impl(nd_trace *t, PyObject **argv) { return flip_mask(t, argv[0], NULL, 1); }

/* conv: how the axes are read (np.diagonal: operator.index; np.trace:
 * normalize_axis_index) */
static PyObject *diagonal_of(nd_trace *t, PyObject **argv, nd_axis_conv conv)
{
    PyObject *p = as_proxy(t, argv[0]);
    if (!p) return NULL;
    int nd = nd_proxy_ndim(p), a1 = 0, a2 = 1;
    const npy_intp *sh = nd_proxy_shape(p);
    Py_ssize_t off = 0;
    if (nd < 2) {
        Py_DECREF(p);
        PyErr_SetString(PyExc_ValueError, "diag requires an array of at least two dimensions");
        return NULL;
    }
    if ((argv[1] && (off = PyNumber_AsSsize_t(argv[1], PyExc_OverflowError)) == -1 && PyErr_Occurred()) ||
        (argv[2] && nd_shim_axis_index_named(argv[2], nd, &a1, "axis1", conv) < 0) ||
        (argv[3] && nd_shim_axis_index_named(argv[3], nd, &a2, "axis2", conv) < 0)) {
        Py_DECREF(p);
        return NULL;
    }
    if (a1 == a2) {
        Py_DECREF(p);
        PyErr_SetString(PyExc_ValueError, "axis1 and axis2 cannot be the same");
        return NULL;
    }
    npy_intp cs[ND_MAXDIMS], shape[ND_MAXDIMS], st[ND_MAXDIMS], start = 0;
    c_strides(nd, sh, cs);
    npy_intp n1 = sh[a1], n2 = sh[a2], len;
    if (off >= 0) { len = n2 - off < n1 ? n2 - off : n1; if (len > 0) start = off * cs[a2]; }
    else { len = n1 + off < n2 ? n1 + off : n2; if (len > 0) start = -off * cs[a1]; }
    if (len < 0) len = 0;
    int k = 0;
    for (int d = 0; d < nd; d++) {
        if (d == a1 || d == a2) continue;
        shape[k] = sh[d];
        st[k++] = cs[d];
    }
    shape[k] = len;
    st[k++] = cs[a1] + cs[a2];
    PyObject *r = view_of(p, k, shape, len > 0 ? start : 0, st);
    Py_DECREF(p);
    /* NumPy's diagonal is a read-only view */
    if (r && nd_proxy_check(r) && nd_proxy_set_readonly(r) < 0) Py_CLEAR(r);
    return r;
}

/* real/imag: for complex values a new (read-only in spirit) value of the
 * part; writes through it do not reach the base (not expressible as an
 * element-strided view of the storage). */
static PyObject *part(nd_trace *t, PyObject *a, int imag)
{
    nd_operand op;
    if (nd_shim_operand(t, a, &op)) return NULL;
    nd_id id = nd_shim_operand_node(t, &op, op.dtype);
    if (id == ND_NONE) return NULL;
    if (PyTypeNum_ISCOMPLEX(op.dtype) && nd_proxy_check(a))  /* a view: writes reach a */
        return nd_proxy_part(a, imag ? ND_F_VIEW_IMAG : ND_F_VIEW_REAL);
    if (PyTypeNum_ISCOMPLEX(op.dtype)) {
        id = nd_shim_node_part(t, id, imag);
        return id == ND_NONE ? NULL : nd_shim_wrap(t, id, op.is_scalar && op.ndim == 0 && !nd_proxy_check(a));
    }
    if (!imag) {
        if (nd_proxy_check(a)) return Py_NewRef(a);  /* NumPy: x.real is x */
        return nd_shim_wrap(t, id, 0);
    }
    PyObject *zero = PyLong_FromLong(0);
    nd_id z = zero ? nd_shim_node_scalar(t, zero, op.dtype, 0) : ND_NONE;
    Py_XDECREF(zero);
    if (z == ND_NONE || (z = nd_shim_node_broadcast(t, z, op.ndim, op.shape)) == ND_NONE) return NULL;
    /* NumPy's .imag of a real array is a read-only array of zeros */
    PyObject *r = nd_shim_wrap(t, z, 0);
    if (r && nd_proxy_set_readonly(r) < 0) Py_CLEAR(r);
    return r;
}

static PyObject *real_impl(nd_trace *t, PyObject **argv) { return part(t, argv[0], 0); }
static PyObject *imag_impl(nd_trace *t, PyObject **argv) { return part(t, argv[0], 1); }

/* x.view() and x.view(np.ndarray) (as dtype or type): a view of all of x,
 * sharing its storage, as NumPy's; another dtype or an ndarray subclass is
 * NumPy's (a break). Why view(dtype) is not a node: ND_OP_VIEW is an
 * affine map in elements of in[0]'s own dtype (voff, vstrides), so another
 * itemsize (f8 -> u1: 8 elements per element) has no element strides to
 * state, and every backend reads a node's input in its dtype: a same-size
 * reinterpretation (f8 <-> i8) would be a new bit-cast op in each codegen
 * (C, eager, CUDA) and, as a view, writes through it must reach the base
 * (SETITEM of the base with the inverse bit-cast), and an EXTERN running
 * NumPy's view would give a copy, losing that aliasing. */
static PyObject *view_method(nd_trace *t, PyObject **argv)
{
    PyObject *nd = (PyObject *)&PyArray_Type;
    if ((argv[1] && argv[1] != Py_None && argv[1] != nd) || (argv[2] && argv[2] != Py_None && argv[2] != nd))
        return nd_shim_unsupported("ndarray.view to another dtype or type is not supported in-graph");
    PyObject *p = as_proxy(t, argv[0]);
    if (!p) return NULL;
    int n = nd_proxy_ndim(p);
    npy_intp cs[ND_MAXDIMS];
    c_strides(n, nd_proxy_shape(p), cs);
    PyObject *v = nd_proxy_view(p, n, nd_proxy_shape(p), 0, cs);
    Py_DECREF(p);
    return v;
}

static PyObject *atleast(nd_trace *t, PyObject *arys, int k)
{
    Py_ssize_t n = PyTuple_GET_SIZE(arys);
    PyObject *res = PyList_New(n);
    if (!res) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = as_proxy(t, PyTuple_GET_ITEM(arys, i));
        if (!p) { Py_DECREF(res); return NULL; }
        int nd = nd_proxy_ndim(p);
        const npy_intp *sh = nd_proxy_shape(p);
        npy_intp shape[ND_MAXDIMS], cs[ND_MAXDIMS], st[ND_MAXDIMS];
        c_strides(nd, sh, cs);
        int out = nd;
        if (nd < k) {
            /* NumPy: 1d -> (1, N) for 2d; (1, N, 1) / (M, N, 1) for 3d */
            npy_intp s1[3] = {1, 1, 1}, c1[3] = {0, 0, 0};
            if (k == 1) { s1[0] = 1; }
            else if (k == 2) { if (nd == 1) { s1[1] = sh[0]; c1[1] = cs[0]; } }
            else {
                if (nd == 1) { s1[1] = sh[0]; c1[1] = cs[0]; }
                else if (nd == 2) { s1[0] = sh[0]; c1[0] = cs[0]; s1[1] = sh[1]; c1[1] = cs[1]; }
            }
            memcpy(shape, s1, sizeof(npy_intp) * (size_t)k);
            memcpy(st, c1, sizeof(npy_intp) * (size_t)k);
            out = k;
            PyObject *v = view_of(p, out, shape, 0, st);
            Py_DECREF(p);
            if (!v) { Py_DECREF(res); return NULL; }
            PyList_SET_ITEM(res, i, v);
        } else {
            PyList_SET_ITEM(res, i, p);
        }
    }
    if (n == 1) {
        PyObject *one = PyList_GET_ITEM(res, 0);
        Py_INCREF(one);
        Py_DECREF(res);
        return one;
    }
    PyObject *tup = PyList_AsTuple(res);
    Py_DECREF(res);
    return tup;
}

static PyObject *diagonal_impl(nd_trace *t, PyObject **argv)
{
    return diagonal_of(t, argv, ND_AXIS_INDEX);
}

/* trace: the diagonal's sum over its last axis, as NumPy's PyArray_Trace
 * (a composition: differentiable, fused like any sum). a, offset, axis1,
 * axis2 are diagonal's parameters in the same slots; dtype, out the sum's. */
static PyObject *trace_impl(nd_trace *t, PyObject **argv)
{
    PyObject *d = diagonal_of(t, argv, ND_AXIS_NORMALIZE);
    if (!d) return NULL;
    PyObject *kw = Py_BuildValue("{si}", "axis", -1);
    PyObject *sum = kw ? PyObject_GetAttrString(d, "sum") : NULL;
    PyObject *r = NULL;
    if (sum && (!argv[4] || PyDict_SetItemString(kw, "dtype", argv[4]) == 0) &&
        (!argv[5] || PyDict_SetItemString(kw, "out", argv[5]) == 0)) {
        PyObject *empty = PyTuple_New(0);
        if (empty) r = PyObject_Call(sum, empty, kw);
        Py_XDECREF(empty);
    }
    Py_XDECREF(sum);
    Py_XDECREF(kw);
    Py_DECREF(d);
    return r;
}

/* np.broadcast(*args) of lazy arrays: a stand-in that answers what the
 * shapes decide (shape, ndim, nd, numiter, size) at once, and builds
 * NumPy's own np.broadcast over the arrays' values (a recorded break)
 * for anything else -- iterating it, index, iters, reset. NumPy's Python
 * code asks only for the shape (np.cross: `broadcast(a[..., 0],
 * b[..., 0]).shape`), which then stays in the graph. */
typedef struct {
    PyObject_HEAD
    PyObject *args;   /* owned tuple: the operands as given */
    PyObject *shape;  /* owned tuple of ints */
    PyObject *real;   /* owned or NULL: NumPy's np.broadcast, once needed */
} LazyBroadcast;

static PyObject *lb_real(LazyBroadcast *b)
{
    if (b->real) return b->real;
    Py_ssize_t n = PyTuple_GET_SIZE(b->args);
    PyObject *vals = PyTuple_New(n);
    for (Py_ssize_t i = 0; vals && i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(b->args, i);
        PyObject *v = nd_proxy_check(o) ? nd_trace_materialize(o, "np.broadcast's elements need the arrays' values")
                                        : Py_NewRef(o);
        if (!v) Py_CLEAR(vals);
        else PyTuple_SET_ITEM(vals, i, v);
    }
    PyObject *cls = vals ? PyObject_GetAttrString(nd_shim_numpy(), "broadcast") : NULL;
    if (cls) b->real = PyObject_Call(cls, vals, NULL);
    Py_XDECREF(cls);
    Py_XDECREF(vals);
    return b->real;
}

static PyObject *lb_getattro(PyObject *o, PyObject *name)
{
    LazyBroadcast *b = (LazyBroadcast *)o;
    if (PyUnicode_Check(name)) {
        Py_ssize_t nd = PyTuple_GET_SIZE(b->shape);
        if (PyUnicode_CompareWithASCIIString(name, "shape") == 0) return Py_NewRef(b->shape);
        if (PyUnicode_CompareWithASCIIString(name, "ndim") == 0 ||
            PyUnicode_CompareWithASCIIString(name, "nd") == 0)
            return PyLong_FromSsize_t(nd);
        if (PyUnicode_CompareWithASCIIString(name, "numiter") == 0)
            return PyLong_FromSsize_t(PyTuple_GET_SIZE(b->args));
        if (PyUnicode_CompareWithASCIIString(name, "size") == 0) {
            npy_intp n = 1;
            for (Py_ssize_t d = 0; d < nd; d++) n *= PyLong_AsSsize_t(PyTuple_GET_ITEM(b->shape, d));
            return PyLong_FromSsize_t(n);
        }
    }
    PyObject *r = lb_real(b);
    return r ? PyObject_GetAttr(r, name) : NULL;
}

static PyObject *lb_iter(PyObject *o)
{
    PyObject *r = lb_real((LazyBroadcast *)o);
    return r ? PyObject_GetIter(r) : NULL;
}

static PyObject *lb_next(PyObject *o)
{
    PyObject *r = lb_real((LazyBroadcast *)o);
    return r ? PyIter_Next(r) : NULL;
}

static void lb_dealloc(PyObject *o)
{
    LazyBroadcast *b = (LazyBroadcast *)o;
    Py_XDECREF(b->args);
    Py_XDECREF(b->shape);
    Py_XDECREF(b->real);
    PyObject_Free(o);
}

static PyTypeObject LazyBroadcast_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.LazyBroadcast",
    .tp_doc = "np.broadcast of lazy arrays: shape, ndim, numiter, size at once; the rest is NumPy's",
    .tp_basicsize = sizeof(LazyBroadcast),
    .tp_dealloc = lb_dealloc,
    .tp_getattro = lb_getattro,
    .tp_iter = lb_iter,
    .tp_iternext = lb_next,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

static PyObject *broadcast_impl(nd_trace *t, PyObject **argv)
{
    PyObject *args = argv[0];
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    int lazy = 0;
    for (Py_ssize_t i = 0; i < n; i++) lazy |= nd_proxy_check(PyTuple_GET_ITEM(args, i));
    if (!lazy || n > 32) return nd_shim_unsupported("np.broadcast of no lazy array (or above 32)");
    int nds[32];
    const npy_intp *shs[32];
    PyObject *keep[32] = {NULL};
    int rc = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *o = PyTuple_GET_ITEM(args, i);
        if (!nd_proxy_check(o)) {
            if (!(o = keep[i] = PyArray_FROM_O(o))) { rc = -1; break; }
            nds[i] = PyArray_NDIM((PyArrayObject *)o);
            shs[i] = PyArray_DIMS((PyArrayObject *)o);
        } else {
            nds[i] = nd_proxy_ndim(o);
            shs[i] = nd_proxy_shape(o);
        }
    }
    int nd = 0;
    npy_intp sh[ND_MAXDIMS];
    if (rc == 0 && nd_shim_broadcast((int)n, nds, shs, &nd, sh) < 0) {
        /* NumPy's own words for a mismatch */
        PyErr_Clear();
        rc = 1;
    }
    for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(keep[i]);
    if (rc) return rc < 0 ? NULL : nd_shim_unsupported("np.broadcast of shapes that do not broadcast");
    if (!(LazyBroadcast_Type.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&LazyBroadcast_Type) < 0)
        return NULL;
    PyObject *shape = PyTuple_New(nd);
    for (int d = 0; shape && d < nd; d++) {
        PyObject *v = PyLong_FromSsize_t(sh[d]);
        if (!v) Py_CLEAR(shape);
        else PyTuple_SET_ITEM(shape, d, v);
    }
    LazyBroadcast *b = shape ? PyObject_New(LazyBroadcast, &LazyBroadcast_Type) : NULL;
    if (!b) { Py_XDECREF(shape); return NULL; }
    b->args = Py_NewRef(args);
    b->shape = shape;
    b->real = NULL;
    (void)t;
    return (PyObject *)b;
}

static PyObject *atleast_1d_impl(nd_trace *t, PyObject **argv) { return atleast(t, argv[0], 1); }
static PyObject *atleast_2d_impl(nd_trace *t, PyObject **argv) { return atleast(t, argv[0], 2); }
static PyObject *atleast_3d_impl(nd_trace *t, PyObject **argv) { return atleast(t, argv[0], 3); }

static const nd_shim_def functions[] = {
    {"transpose", "a|axes", transpose_impl, 0},
    {"permute_dims", "a|axes", transpose_impl, 0},
    {"swapaxes", "a,axis1,axis2", swapaxes_impl, 0},
    {"moveaxis", "a,source,destination", moveaxis_impl, 0},
    {"reshape", "a,shape|order;copy", reshape_impl, 0},
    {"ravel", "a|order", ravel_impl, 0},
    {"copy", "a|order,subok", copy_impl, 0},
    {"squeeze", "a|axis", squeeze_impl, 0},
    {"expand_dims", "a,axis", expand_dims_impl, 0},
    {"broadcast_to", "array,shape|subok", broadcast_to_impl, 0},
    {"flip", "m|axis", flip_impl, 0},
    {"flipud", "m", flipud_impl, 0},
    {"fliplr", "m", fliplr_impl, 0},
    {"diagonal", "a|offset,axis1,axis2", diagonal_impl, 0},
    {"trace", "a|offset,axis1,axis2,dtype,out", trace_impl, 0},
    {"real", "val", real_impl, 0},
    {"imag", "val", imag_impl, 0},
    {"broadcast", "*args", broadcast_impl, 0},
    {"atleast_1d", "*arys", atleast_1d_impl, 0},
    {"atleast_2d", "*arys", atleast_2d_impl, 0},
    {"atleast_3d", "*arys", atleast_3d_impl, 0},
    {NULL},
};

static const nd_shim_def methods[] = {
    {"transpose", "self|*axes", transpose_method, 0},
    {"swapaxes", "self,axis1,axis2", swapaxes_impl, 0},
    {"reshape", "self|*shape;order,copy", reshape_method, 0},
    {"ravel", "self|order", ravel_impl, 0},
    {"flatten", "self|order", flatten_impl, 0},
    {"copy", "self|order", copy_method, 0},
    {"view", "self|dtype,type", view_method, 0},
    {"__copy__", "self", dunder_copy, 0},
    {"squeeze", "self|axis", squeeze_impl, 0},
    {"diagonal", "self|offset,axis1,axis2", diagonal_impl, 0},
    {"trace", "self|offset,axis1,axis2,dtype,out", trace_impl, 0},
    {"real", "self", real_impl, 0},
    {"imag", "self", imag_impl, 0},
    {NULL},
};

int nd_shim_register_views(nd_shim_table *tab)
{
    if (nd_shim_add_functions(tab, functions) < 0) return -1;
    return nd_shim_add_methods(tab, methods);
}
