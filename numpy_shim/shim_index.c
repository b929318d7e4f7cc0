/* shim_index.c -- basic indexing of proxies: a[int, slice, ..., None].
 *
 * A basic index is an affine map over the proxy's C-order flat index
 * (offset + per-dim strides), handed to nd_proxy_view so reads and writes
 * through the result share the proxy's storage (functionalized by the
 * tracer). An index of integers only reads one element and returns a real
 * NumPy scalar at once (a flush only if the storage has pending work, never
 * a graph break). Everything else (integer/boolean arrays, lists, proxies as
 * indices) is advanced indexing: shim_advidx.c.
 */
#include "shim_internal.h"
#include <string.h>

typedef struct {
    int ndim;                   /* result rank */
    npy_intp shape[ND_MAXDIMS];
    npy_intp strides[ND_MAXDIMS];
    npy_intp off;
    int all_int;                /* only integers, one per dim: an element */
} basic_map;

static int is_integer_index(PyObject *o)
{
    if (PyBool_Check(o) || PyArray_IsScalar(o, Bool)) return 0;
    if (PyLong_Check(o) || PyArray_IsScalar(o, Integer)) return 1;
    /* 0-d integer ndarrays index like integers */
    if (PyArray_Check(o) && PyArray_NDIM((PyArrayObject *)o) == 0 &&
        PyArray_ISINTEGER((PyArrayObject *)o))
        return 1;
    return 0;
}

/* 1: basic, 0: advanced (or unknown: let NumPy's rules decide) */
static int is_basic_item(PyObject *o)
{
    return o == Py_None || o == Py_Ellipsis || PySlice_Check(o) || is_integer_index(o);
}

int nd_shim_key_is_basic(PyObject *key)
{
    if (PyTuple_Check(key)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); i++)
            if (!is_basic_item(PyTuple_GET_ITEM(key, i))) return 0;
        return 1;
    }
    return is_basic_item(key);
}

/* An integer index, converted as NumPy's index parsing does: past the C
 * long range, OverflowError "Python int too large to convert to C long"
 * (np.uint64(2**64-1), 2**63), except a Python int that not even uint64
 * holds, which NumPy turns into an object array and rejects. */
static int index_value(PyObject *o, npy_intp *v)
{
    PyObject *i = PyNumber_Index(o);
    if (!i) return -1;
    int over = 0;
    long x = PyLong_AsLongAndOverflow(i, &over);
    if (x == -1 && PyErr_Occurred()) { Py_DECREF(i); return -1; }
    if (over) {
        int fits_u64 = 0;
        if (over > 0) {
            unsigned long long u = PyLong_AsUnsignedLongLong(i);
            fits_u64 = !(u == (unsigned long long)-1 && PyErr_Occurred());
            PyErr_Clear();
        }
        Py_DECREF(i);
        if (PyLong_CheckExact(o) && !fits_u64)
            PyErr_SetString(PyExc_IndexError,
                            "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
                            "and integer or boolean arrays are valid indices");
        else
            PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C long");
        return -1;
    }
    Py_DECREF(i);
    *v = (npy_intp)x;
    return 0;
}

/* Build the affine map of a basic key over a base of (ndim, shape). */
static int basic_index(PyObject *key, int ndim, const npy_intp *shape, basic_map *m)
{
    PyObject *single[1] = {key};
    PyObject *const *items = single;
    Py_ssize_t n = 1;
    if (PyTuple_Check(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    }
    npy_intp cs[ND_MAXDIMS];
    npy_intp s = 1;
    for (int d = ndim - 1; d >= 0; d--) { cs[d] = s; s *= shape[d]; }
    int consumed = 0, ellipsis = -1, nnone = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = items[i];
        if (o == Py_Ellipsis) {
            if (ellipsis >= 0) {
                PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
                return -1;
            }
            ellipsis = (int)i;
        } else if (o == Py_None) {
            nnone++;
        } else {
            consumed++;
        }
    }
    if (consumed > ndim) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for array: array is %d-dimensional, but %d were indexed",
                     ndim, consumed);
        return -1;
    }
    if (ndim - consumed + nnone + consumed > ND_MAXDIMS) {
        nd_shim_unsupported("indexing to rank above %d", ND_MAXDIMS);
        return 1;
    }
    m->ndim = 0;
    m->off = 0;
    m->all_int = ellipsis < 0 && nnone == 0;
    int d = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = items[i];
        if (o == Py_Ellipsis) {
            int take = ndim - consumed;
            for (int k = 0; k < take; k++, d++) {
                m->shape[m->ndim] = shape[d];
                m->strides[m->ndim++] = cs[d];
            }
            continue;
        }
        if (o == Py_None) {
            m->shape[m->ndim] = 1;
            m->strides[m->ndim++] = 0;
            continue;
        }
        if (PySlice_Check(o)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(o, &start, &stop, &step) < 0) return -1;
            Py_ssize_t len = PySlice_AdjustIndices(shape[d], &start, &stop, step);
            m->shape[m->ndim] = len;
            m->strides[m->ndim++] = len > 1 ? step * cs[d] : (len == 1 ? cs[d] : 0);
            if (len > 0) m->off += start * cs[d];
            m->all_int = 0;
            d++;
            continue;
        }
        npy_intp v;
        if (index_value(o, &v) < 0) return -1;
        if (v < -shape[d] || v >= shape[d]) {
            PyErr_Format(PyExc_IndexError, "index %zd is out of bounds for axis %d with size %zd",
                         (Py_ssize_t)v, d, (Py_ssize_t)shape[d]);
            return -1;
        }
        if (v < 0) v += shape[d];
        m->off += v * cs[d];
        d++;
    }
    for (; d < ndim; d++) {
        m->shape[m->ndim] = shape[d];
        m->strides[m->ndim++] = cs[d];
        m->all_int = 0;
    }
    return 0;
}

/* A lazily computed 0-d integer used as an index is an integer index in
 * NumPy (a view, or an element; IndexError at this line when out of range):
 * its value decides the view's offset, so it is computed now (a flush, not a
 * break: no Python code sees it). Returns a new ref to the key with those
 * proxies replaced by 0-d arrays, or NULL + exception. */
static int lazy_int_index(PyObject *o)
{
    return nd_proxy_check(o) && nd_proxy_ndim(o) == 0 &&
           PyTypeNum_ISINTEGER(nd_proxy_dtype(o));
}

/* An integer index array computed in the graph: its bounds are checked at
 * this line unless the call defers such checks (nd_trace_checks_deferred). */
#define IDX_READ "a computed integer index array, bounds-checked at its line after the pending writes to the caller's arrays"
#define INT_READ "a computed integer used as an index (its value decides the view or element)"
static int lazy_int_array(PyObject *o, int defer)
{
    return !defer && nd_proxy_check(o) && nd_proxy_ndim(o) > 0 &&
           PyTypeNum_ISINTEGER(nd_proxy_dtype(o));
}

PyObject *nd_shim_checked_index(nd_trace *t, PyObject *index)
{
    if (lazy_int_array(index, nd_trace_checks_deferred(t))) return nd_trace_read(index, IDX_READ);
    return Py_NewRef(index);
}

/* A lazy NumPy float/complex scalar as an index: NumPy refuses the scalar
 * with its scalar message ("arrays used as indices ..." is for a 0-d array,
 * which the proxy would become if it were materialized) */
static int lazy_inexact_scalar(PyObject *o)
{
    return nd_proxy_check(o) && nd_proxy_is_scalar(o) &&
           (PyTypeNum_ISFLOAT(nd_proxy_dtype(o)) || PyTypeNum_ISCOMPLEX(nd_proxy_dtype(o)));
}

static PyObject *concrete_key(nd_trace *t, PyObject *key)
{
    int defer = nd_trace_checks_deferred(t);
    Py_ssize_t nkey = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 1;
    for (Py_ssize_t i = 0; i < nkey; i++)
        if (lazy_inexact_scalar(PyTuple_Check(key) ? PyTuple_GET_ITEM(key, i) : key)) {
            PyErr_SetString(PyExc_IndexError,
                            "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
                            "and integer or boolean arrays are valid indices");
            return NULL;
        }
    if (lazy_int_index(key) || lazy_int_array(key, defer))
        return nd_trace_read(key, lazy_int_index(key) ? INT_READ : IDX_READ);
    if (!PyTuple_Check(key)) return Py_NewRef(key);
    Py_ssize_t n = PyTuple_GET_SIZE(key), i;
    for (i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(key, i);
        if (lazy_int_index(o) || lazy_int_array(o, defer)) break;
    }
    if (i == n) return Py_NewRef(key);
    PyObject *k = PyTuple_New(n);
    if (!k) return NULL;
    for (i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(key, i);
        PyObject *v = lazy_int_index(o) ? nd_trace_read(o, INT_READ)
                      : lazy_int_array(o, defer) ? nd_trace_read(o, IDX_READ) : Py_NewRef(o);
        if (!v) { Py_DECREF(k); return NULL; }
        PyTuple_SET_ITEM(k, i, v);
    }
    return k;
}

/* a[k] / a[i, k] naming one element, some of its integers computed (lazy
 * 0-d integers, `b[np.argmax(b)]`): where the call defers checks it is a
 * gather in the graph (its bound checked when the graph runs), the NumPy
 * scalar NumPy's integer indexing gives, instead of computing k now */
static int lazy_element_key(PyObject *key, int ndim)
{
    int tup = PyTuple_CheckExact(key);
    Py_ssize_t n = tup ? PyTuple_GET_SIZE(key) : 1;
    if (n != ndim || ndim == 0) return 0;
    int lazy = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = tup ? PyTuple_GET_ITEM(key, i) : key;
        if (lazy_int_index(o)) lazy = 1;
        else if (!PyLong_CheckExact(o)) return 0;
    }
    return lazy;
}

/* m[k] / m[k, :] / m[i, k] leaving dims, some of the leading integers
 * computed (lazy 0-d integers, `m[np.argmax(v)]`), the rest full slices:
 * NumPy's view at an offset the graph computes. Under fullgraph=True it is
 * a gather in the graph (nd_proxy_dynamic_view keeps NumPy's view
 * semantics), where computing k now would run the graph so far. */
static int lazy_row_key(PyObject *key, int ndim)
{
    int tup = PyTuple_CheckExact(key);
    Py_ssize_t n = tup ? PyTuple_GET_SIZE(key) : 1, ints = 0;
    int lazy = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = tup ? PyTuple_GET_ITEM(key, i) : key;
        if (ints == i && (lazy_int_index(o) || PyLong_CheckExact(o))) {
            lazy |= lazy_int_index(o);
            ints++;
        } else if (!PySlice_Check(o) || ((PySliceObject *)o)->start != Py_None ||
                   ((PySliceObject *)o)->stop != Py_None || ((PySliceObject *)o)->step != Py_None) {
            return 0;
        }
    }
    return lazy && ints < ndim && n <= ndim;
}

static PyObject *dynamic_row(nd_trace *t, PyObject *self, PyObject *key)
{
    PyObject *r = nd_shim_advidx_getitem(t, self, key);
    if (!r) return NULL;
    int rc = nd_proxy_dynamic_view(r, self, key);
    if (rc == 0) return r;
    Py_DECREF(r);
    if (rc > 0)
        PyErr_SetString(PyExc_SystemError, "numdyn: a gather at a computed index could not stand for the view");
    return NULL;
}

static PyObject *materialized_getitem(PyObject *self, PyObject *key)
{
    PyObject *arr = nd_trace_read(self, "an element read (a NumPy scalar for Python)");
    if (!arr) return NULL;
    PyObject *r = PyObject_GetItem(arr, key);
    Py_DECREF(arr);
    return r;
}

static PyObject *getitem(nd_trace *t, PyObject *self, PyObject *key, int scalar_array);

/* Whether key holds a 0-d integer array (a lazy one too; not a NumPy
 * scalar): NumPy's HAS_SCALAR_ARRAY. It indexes as an integer, but an
 * index with one that does not name an element is an advanced index: the
 * result is a copy, not a view (a[np.array(1)] of a 2-d a) */
static int has_scalar_array(PyObject *key)
{
    Py_ssize_t n = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_Check(key) ? PyTuple_GET_ITEM(key, i) : key;
        if (PyArray_Check(o) ? PyArray_NDIM((PyArrayObject *)o) == 0 && PyArray_ISINTEGER((PyArrayObject *)o)
                             : lazy_int_index(o) && !nd_proxy_is_scalar(o))
            return 1;
    }
    return 0;
}

PyObject *nd_shim_getitem(PyObject *self, PyObject *key)
{
    nd_trace *t = nd_trace_current();
    if (!t || !nd_proxy_live(self)) return materialized_getitem(self, key);
    /* a[i] / a[i, j] with Python ints, the scalar-loop case: straight to the
     * element (in-range checks as in basic_index) */
    int nd = nd_proxy_ndim(self);
    Py_ssize_t nk = PyTuple_CheckExact(key) ? PyTuple_GET_SIZE(key) : PyLong_CheckExact(key) ? 1 : -1;
    if (nk == nd && nd > 0) {
        PyObject *const *items = PyTuple_CheckExact(key) ? &PyTuple_GET_ITEM(key, 0) : &key;
        const npy_intp *shape = nd_proxy_shape(self);
        npy_intp off = 0;
        int d = 0;
        for (; d < nd; d++) {
            if (!PyLong_CheckExact(items[d])) break;
            Py_ssize_t v = PyLong_AsSsize_t(items[d]);
            if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); break; }
            if (v < -shape[d] || v >= shape[d]) break;  /* basic_index raises */
            off = off * shape[d] + (v < 0 ? v + shape[d] : v);
        }
        if (d == nd) {
            PyObject *e = nd_proxy_element(self, off);
            if (e || PyErr_Occurred()) return e;
            return materialized_getitem(self, key);
        }
    }
    if (lazy_element_key(key, nd) && nd_trace_checks_deferred(t))
        return nd_shim_advidx_getitem(t, self, key);  /* a gather of one element */
    int sa = has_scalar_array(key);
    if (lazy_row_key(key, nd) && nd_trace_checks_deferred(t)) {
        if (sa) return nd_shim_advidx_getitem(t, self, key);  /* NumPy's copy: a gather */
        if (nd_proxy_dynamic_view_ok(self))
            return dynamic_row(t, self, key);  /* a gather standing for the view */
    }
    PyObject *k = concrete_key(t, key);
    if (!k) return NULL;
    PyObject *r = getitem(t, self, k, sa);
    Py_DECREF(k);
    return r;
}

static PyObject *getitem(nd_trace *t, PyObject *self, PyObject *key, int scalar_array)
{
    if (!nd_shim_key_is_basic(key)) return nd_shim_advidx_getitem(t, self, key);
    basic_map m;
    int rc = basic_index(key, nd_proxy_ndim(self), nd_proxy_shape(self), &m);
    if (rc < 0) return NULL;
    if (rc > 0) {
        const char *why = nd_shim_take_unsupported();
        char buf[200];
        snprintf(buf, sizeof buf, "%s", why ? why : "indexing not supported in-graph");
        PyObject *arr = nd_trace_materialize(self, buf);
        if (!arr) return NULL;
        PyObject *r = PyObject_GetItem(arr, key);
        Py_DECREF(arr);
        return r;
    }
    if (m.all_int) {
        /* one element: lazy while the call records for replay, else a real
         * NumPy scalar now (flush only if pending) */
        PyObject *e = nd_proxy_element(self, m.off);
        if (e || PyErr_Occurred()) return e;
        return materialized_getitem(self, key);
    }
    PyObject *v = nd_proxy_view(self, m.ndim, m.shape, m.off, m.strides);
    if (!v || !scalar_array) return v;
    /* a 0-d integer array in it: NumPy's result is a copy of that view */
    nd_id id = nd_proxy_read(v);
    Py_DECREF(v);
    if (id == ND_NONE || (id = nd_shim_node_reshape(t, id, m.ndim, m.shape)) == ND_NONE) return NULL;
    return nd_shim_wrap(t, id, 0);
}

/* NumPy's own store of the NumPy scalar x into an element of a signed
 * integer array of dtype: int() of it (of its real part for a complex,
 * whose ComplexWarning the cast the caller then makes gives), range-checked.
 * 0, or -1 with NumPy's exception. */
static int scalar_int_store(PyObject *x, int dtype)
{
    PyObject *r = NULL;
    if (PyArray_IsScalar(x, ComplexFloating)) {
        x = r = PyObject_GetAttrString(x, "real");
        if (!x) return -1;
    }
    npy_intp one = 1;
    PyObject *dst = PyArray_Zeros(1, &one, PyArray_DescrFromType(dtype), 0);
    int rc = dst ? PySequence_SetItem(dst, 0, x) : -1;
    Py_XDECREF(dst);
    Py_XDECREF(r);
    return rc;
}

/* value stands for a NumPy scalar whose value the run computes */
int nd_shim_lazy_scalar(PyObject *value)
{
    return nd_proxy_check(value) && nd_proxy_live(value) && nd_proxy_is_scalar(value);
}

/* A value for assignment into a region of (ndim, shape) at dtype, with
 * NumPy's setitem rules: unsafe casting of arrays, Python ints range-checked,
 * leading size-1 dims of the value dropped before broadcasting. as_item:
 * a basic-index store or fill(), where NumPy converts a scalar into an
 * integer array as int() does (np.copyto casts it) */
nd_id nd_shim_assign_value(nd_trace *t, PyObject *value, int dtype, int ndim, const npy_intp *shape,
                           int as_item, int warn)
{
    nd_operand op;
    int rc = nd_shim_operand(t, value, &op);
    if (rc) return ND_NONE;
    if (op.weak && PyComplex_Check(value) && !PyTypeNum_ISCOMPLEX(dtype)) {
        nd_shim_unsupported("assigning a complex into a real array");
        return ND_NONE;
    }
    if (as_item && PyTypeNum_ISINTEGER(dtype) && PyFloat_Check(value) &&
        !PyArray_IsScalar(value, Generic)) {
        /* NumPy's integer setitem converts a Python float as int() does:
         * ValueError for NaN, OverflowError for inf or past int64: NumPy
         * itself does these, on a copy */
        double x = PyFloat_AsDouble(value);
        if (x == -1.0 && PyErr_Occurred()) return ND_NONE;
        if (!(x > -0x1p63 - 1.0 && x < 0x1p63)) {
            nd_shim_unsupported("a NaN, infinite or huge float assigned into an integer array");
            return ND_NONE;
        }
        /* then the Python int int(x) is range-checked like any Python int */
        PyObject *iv = PyLong_FromLongLong((long long)x);
        if (!iv) return ND_NONE;
        int fits = nd_shim_pyint_fits(iv, dtype);
        if (fits == 0) nd_shim_raise_pyint_overflow(iv, dtype);
        Py_DECREF(iv);
        if (fits <= 0) return ND_NONE;
    }
    /* a NumPy scalar into a signed integer array: int() of it; into an
     * unsigned one NumPy casts -- a float past the C integer its cast goes
     * through (int32 for 1 and 2 bytes, int64, uint64) with an "invalid
     * value" warning: NumPy's own, on a copy */
    if (as_item && PyTypeNum_ISSIGNED(dtype) && PyArray_IsScalar(value, Number) &&
        nd_scalar_store_may_refuse(op.dtype, dtype) && scalar_int_store(value, dtype) < 0)
        return ND_NONE;
    if (as_item && PyTypeNum_ISUNSIGNED(dtype) && PyArray_IsScalar(value, Floating)) {
        int size = PyArray_DescrFromType(dtype)->elsize;
        double lo = size <= 2 ? -0x1p31 : -0x1p63, hi = size <= 2 ? 0x1p31 : size == 4 ? 0x1p63 : 0x1p64;
        double x = PyFloat_AsDouble(value);
        if (x == -1.0 && PyErr_Occurred()) return ND_NONE;
        if (!(x > lo - 1.0 && x < hi)) {
            nd_shim_unsupported("a NaN, infinite or huge float scalar assigned into an integer array");
            return ND_NONE;
        }
    }
    /* np.copyto (not as_item) casts a Python float unsafely, after the
     * broadcast: nothing is cast into an empty region */
    int late = 0;
    nd_id v = as_item ? nd_shim_operand_node(t, &op, dtype) : nd_shim_operand_node_unsafe(t, &op, dtype, &late);
    if (v == ND_NONE ||
        (!late && (v = warn ? nd_shim_node_cast_np(t, v, dtype) : nd_shim_node_cast(t, v, dtype)) == ND_NONE))
        return ND_NONE;
    if (op.ndim > ndim) {
        int drop = 0;
        while (op.ndim - drop > ndim && op.shape[drop] == 1) drop++;
        if (drop && (v = nd_shim_node_reshape(t, v, op.ndim - drop, op.shape + drop)) == ND_NONE)
            return ND_NONE;
    }
    v = nd_shim_node_broadcast(t, v, ndim, shape);
    return late && v != ND_NONE ? nd_shim_node_cast(t, v, dtype) : v;
}

static int setitem(nd_trace *t, PyObject *self, PyObject *key, PyObject *value);

int nd_shim_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    nd_trace *t = nd_trace_current();
    if (!t || !nd_proxy_live(self)) {
        PyObject *arr = nd_trace_materialize(self, NULL);
        if (!arr) return -1;
        int r = PyObject_SetItem(arr, key, value);
        Py_DECREF(arr);
        return r;
    }
    /* NumPy refuses a read-only destination before looking at key or value */
    if (nd_proxy_is_readonly(self)) {
        PyErr_SetString(PyExc_ValueError, "assignment destination is read-only");
        return -1;
    }
    if (nd_trace_errstate_sync(t) < 0) return -1;
    nd_id first = nd_shim_graph_size(t);
    PyObject *k = concrete_key(t, key);
    if (!k) return -1;
    int r = setitem(t, self, k, value);
    Py_DECREF(k);
    return r < 0 ? r : nd_trace_settle(t, first);
}

/* Every dim indexed by an integer (or a 0-d array by ()): NumPy assigns
 * ONE element through its scalar conversion, not by broadcasting -- a value
 * with dims raises "setting an array element with a sequence.", a list
 * int()'s or float()'s TypeError. */
static int element_key(PyObject *key, int ndim)
{
    if (!PyTuple_Check(key)) return ndim == 1 && !PyBool_Check(key) && nd_shim_index_like(key) &&
                                    !PyArray_Check(key) && !nd_proxy_check(key);
    if (PyTuple_GET_SIZE(key) != ndim) return 0;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        PyObject *k = PyTuple_GET_ITEM(key, i);
        if (PyBool_Check(k) || !nd_shim_index_like(k) || PyArray_Check(k) || nd_proxy_check(k)) return 0;
    }
    return 1;
}

/* NumPy's answer to that assignment of a value with dims or a sequence,
 * asked of a 0-d array of the destination's dtype (a lazy value stands in
 * as zeros of its dtype and shape): 0 accepted, -1 NumPy's error set */
static int element_value_ok(int dtype, PyObject *value)
{
    PyObject *standin = NULL;
    if (nd_proxy_check(value)) {
        if (nd_proxy_is_scalar(value) || nd_proxy_ndim(value) == 0) return 0;
        standin = PyArray_Zeros(nd_proxy_ndim(value), (npy_intp *)nd_proxy_shape(value),
                                PyArray_DescrFromType(nd_proxy_dtype(value)), 0);
        if (!standin) return -1;
    } else if ((PyArray_Check(value) && PyArray_NDIM((PyArrayObject *)value) > 0) ||
               PyList_Check(value) || PyTuple_Check(value)) {
        standin = Py_NewRef(value);
    } else {
        return 0;
    }
    PyObject *probe = PyArray_Zeros(0, NULL, PyArray_DescrFromType(dtype), 0);
    PyObject *empty = probe ? PyTuple_New(0) : NULL;
    int r = empty ? PyObject_SetItem(probe, empty, standin) : -1;
    Py_XDECREF(empty);
    Py_XDECREF(probe);
    Py_DECREF(standin);
    return r < 0 ? -1 : 0;
}

int nd_shim_seq_ndim(PyObject *value)
{
    if (!PyList_Check(value) && !PyTuple_Check(value)) return -1;
    int nd = 0;
    PyObject *o = value;
    while ((PyList_Check(o) || PyTuple_Check(o)) && nd <= NPY_MAXDIMS) {
        nd++;
        if (PySequence_Fast_GET_SIZE(o) == 0) return nd;
        o = PySequence_Fast_GET_ITEM(o, 0);
    }
    if (nd_proxy_check(o)) nd += nd_proxy_ndim(o);
    else if (PyArray_Check(o)) nd += PyArray_NDIM((PyArrayObject *)o);
    return nd;
}

static int setitem(nd_trace *t, PyObject *self, PyObject *key, PyObject *value)
{
    if (element_key(key, nd_proxy_ndim(self)) && element_value_ok(nd_proxy_dtype(self), value) < 0)
        return -1;
    if (!nd_shim_key_is_basic(key)) return nd_shim_advidx_setitem(t, self, key, value);
    basic_map m;
    int rc = basic_index(key, nd_proxy_ndim(self), nd_proxy_shape(self), &m);
    if (rc < 0) return -1;
    nd_id v = ND_NONE;
    if (rc == 0 && nd_shim_seq_ndim(value) > m.ndim) {
        /* NumPy converts a sequence with at most the view's dims
         * (PyArray_CopyObject), where an array's leading 1s broadcast */
        PyErr_Format(PyExc_ValueError, "setting an array element with a sequence. The requested array "
                     "would exceed the maximum number of dimension of %d.", m.ndim);
        return -1;
    }
    if (rc == 0) v = nd_shim_assign_value(t, value, nd_proxy_dtype(self), m.ndim, m.shape, 1, 1);
    if (v == ND_NONE) {
        if (PyErr_Occurred()) return -1;
        /* unsupported value or key: NumPy on a private copy, then the copy
         * becomes the proxy's value (functional, every view sees it) */
        const char *why = nd_shim_take_unsupported();
        char buf[200];
        snprintf(buf, sizeof buf, "%s", why ? why : "assignment not supported in-graph");
        PyObject *cur = nd_trace_break_value(self, buf);  /* break recorded below */
        if (!cur) return -1;
        PyObject *copy = PyArray_NewCopy((PyArrayObject *)cur, NPY_CORDER);
        Py_DECREF(cur);
        if (!copy) return -1;
        PyObject *setitem = PyObject_GetAttrString(copy, "__setitem__");
        PyObject *args = setitem ? PyTuple_Pack(2, key, value) : NULL;
        PyObject *r = args ? nd_trace_fallback_call(setitem, args, NULL, buf) : NULL;
        Py_XDECREF(args);
        Py_XDECREF(setitem);
        if (!r) { Py_DECREF(copy); return -1; }
        Py_DECREF(r);
        nd_id c = nd_trace_lift(t, copy);
        Py_DECREF(copy);
        return c == ND_NONE ? -1 : nd_proxy_write(self, c);
    }
    PyObject *view = nd_proxy_view(self, m.ndim, m.shape, m.off, m.strides);
    if (!view) return -1;
    int r = nd_shim_lazy_scalar(value) ? nd_proxy_write_scalar(view, v, nd_proxy_dtype(value))
                                       : nd_proxy_write(view, v);
    Py_DECREF(view);
    return r;
}

int nd_shim_register_index(nd_shim_table *tab)
{
    (void)tab;
    return 0;
}
