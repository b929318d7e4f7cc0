/* shim_advidx.c -- advanced indexing, take/put, ufunc.at (owned by the
 * "extern" helper).
 *
 * Reads a[idx...] become one GATHER: its flat source indices are int64
 * arithmetic on INDEX (iota) nodes for the slice/newaxis parts plus the
 * index arrays broadcast into place, laid out by NumPy's rules (advanced
 * indices adjacent -> their broadcast dims replace them in place, else they
 * go first; integer scalars count as advanced when an array is present).
 * Index values are normalized (negative wrap) and bounds-checked where the
 * values exist: concrete index arrays (lists, globals) right now, with
 * NumPy's IndexError at the user's line; lazy index arrays by a checking
 * extern node (index_check below) that raises the same IndexError when the
 * graph runs -- an out-of-range index never reaches memory.
 *
 * Writes a[idx...] = v are an extern scatter (last write wins, as NumPy)
 * producing the storage's next version; a[mask] = scalar-like is a WHERE
 * over the storage (no break). Reading a[lazy_mask] has a data-dependent
 * shape: a recorded break. A concrete boolean mask is turned into integer
 * indices now (NumPy does the same with nonzero()).
 *
 * Shape and type errors are NumPy's own: the key is applied to a
 * zero-stride stand-in of self (nd_xj_numpy_error-style), never guessed. */
#include "shim_internal.h"
#include "runtime/backend.h"
#include "core/counters.h"
#include "core/containers.h"
#include <string.h>
#include <fenv.h>

/* ------------------------------------------------- runtime helper callables */

enum { MODE_RAISE = 0, MODE_WRAP = 1, MODE_CLIP = 2 };
/* or'ed into a mode: whose error a non-empty index of an empty axis gets
 * (NumPy's take and put say so in their own words, indexing names the index) */
enum { MODE_TAKE = 4, MODE_PUT = 8 };
#define MODE_OF(m) ((m) & 3)

/* src with negative indices wrapped by n, written to dst (a new array:
 * the copy and the check are one pass, not NumPy's copy then a check);
 * nonzero when some src[i] is outside [-n, n). Branch free, so the AVX2
 * clone is vectorized (-O2 alone does not: hence the optimize attribute; a
 * gathered or scattered index array of 1e6 entries is checked on every run
 * of its graph) */
__attribute__((target_clones("avx2", "default"), optimize("tree-vectorize", "vect-cost-model=dynamic")))
static int64_t wrap_check_copy_i64(int64_t *restrict dst, const int64_t *restrict src, npy_intp m, int64_t n)
{
    int64_t bad = 0;
    for (npy_intp i = 0; i < m; i++) {
        int64_t v = src[i];
        bad |= (int64_t)(v < -n) | (int64_t)(v >= n);
        dst[i] = v + (v < 0 ? n : 0);
    }
    return bad;
}

/* int64 copy of idx with negative indices wrapped (mode raise), wrapped
 * modulo n (wrap) or clipped (clip); IndexError like NumPy when out of
 * range. Used at trace time on concrete indices and as an extern node on
 * lazy ones. */
static PyObject *normalize_indices(PyObject *idx, npy_intp n, int axis, int mode)
{
    PyObject *a = PyArray_FROMANY(idx, NPY_INT64, 0, 0, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
    if (!a) return NULL;
    PyArrayObject *aa = (PyArrayObject *)a;
    npy_intp m = PyArray_SIZE(aa);
    if (m > 0 && n == 0 && (mode & MODE_PUT)) {
        Py_DECREF(a);
        PyErr_SetString(PyExc_IndexError, "cannot replace elements of an empty array");
        return NULL;
    }
    if (m > 0 && n == 0 && (MODE_OF(mode) != MODE_RAISE || (mode & MODE_TAKE))) {
        Py_DECREF(a);
        PyErr_SetString(PyExc_IndexError, "cannot do a non-empty take from an empty axes.");
        return NULL;
    }
    mode = MODE_OF(mode);
    /* the result is always a new array (lift_index makes it read-only),
     * filled by the check itself where mode is raise (an index of 1000
     * entries checked on every run of its graph spent as much on NumPy's
     * copy machinery as on the check) */
    PyObject *r = PyArray_SimpleNew(PyArray_NDIM(aa), PyArray_DIMS(aa), NPY_INT64);
    if (!r) { Py_DECREF(a); return NULL; }
    int64_t *p = PyArray_DATA((PyArrayObject *)r);
    /* the common case in one branch-free pass the compiler vectorizes
     * (negatives wrapped, out-of-range ones only flagged) */
    if (mode == MODE_RAISE && !wrap_check_copy_i64(p, PyArray_DATA(aa), m, (int64_t)n)) {
        Py_DECREF(a);
        return r;
    }
    /* another mode, or a bad index: the loop below finds the first one for
     * NumPy's message, which names it as given */
    memcpy(p, PyArray_DATA(aa), (size_t)m * sizeof(int64_t));
    Py_DECREF(a);
    for (npy_intp i = 0; i < m; i++) {
        int64_t v = p[i];
        if (mode == MODE_RAISE) {
            if (v < -n || v >= n) {
                Py_DECREF(r);
                PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis %d with size %lld",
                             (long long)v, axis, (long long)n);
                return NULL;
            }
            if (v < 0) v += n;
        } else if (mode == MODE_WRAP) {
            v %= n;
            if (v < 0) v += n;
        } else {
            v = v < 0 ? 0 : v >= n ? n - 1 : v;
        }
        p[i] = v;
    }
    return r;
}

static PyObject *index_check_fn(PyObject *self, PyObject *args)
{
    PyObject *idx;
    Py_ssize_t n;
    int axis, mode;
    if (!PyArg_ParseTuple(args, "Onii", &idx, &n, &axis, &mode)) return NULL;
    return normalize_indices(idx, n, axis, mode);
}

/* copy of base (C order) with base.flat[flat[i]] = vals[i] in order: the
 * last write to a repeated index wins, as in NumPy (the native backend
 * writes into base itself where its run may consume it: ND_F_SCATTER) */
static PyObject *scatter_fn(PyObject *self, PyObject *args)
{
    PyObject *base, *flat, *vals;
    if (!PyArg_ParseTuple(args, "OOO", &base, &flat, &vals)) return NULL;
    if (!PyArray_Check(base)) { PyErr_SetString(PyExc_TypeError, "scatter: base must be an array"); return NULL; }
    PyObject *out = PyArray_NewCopy((PyArrayObject *)base, NPY_CORDER);
    if (out) nd_counter_add(ND_CTR_BASE_COPY_BYTES, (long long)PyArray_NBYTES((PyArrayObject *)out));
    if (out && nd_scatter_into((PyArrayObject *)out, flat, vals, NULL) < 0) Py_CLEAR(out);
    return out;
}

/* 1 when vals needs no broadcast against flat before ufunc.at: an array
 * of flat's shape, or one value (at() broadcasts a 0-d or Python scalar
 * itself); np.broadcast_to is a Python function, a few microseconds of a
 * small scatter-add (COO mat-vec of 1000 entries: 15 -> ~11 us) */
static int same_or_scalar_shape(PyObject *vals, PyArrayObject *flat)
{
    if (PyFloat_CheckExact(vals) || PyLong_CheckExact(vals) || PyComplex_CheckExact(vals) ||
        PyBool_Check(vals) || PyArray_IsScalar(vals, Generic))
        return 1;
    if (!PyArray_Check(vals)) return 0;
    PyArrayObject *v = (PyArrayObject *)vals;
    if (PyArray_NDIM(v) == 0) return 1;
    return PyArray_NDIM(v) == PyArray_NDIM(flat) &&
           PyArray_CompareLists(PyArray_DIMS(v), PyArray_DIMS(flat), PyArray_NDIM(v));
}

/* NumPy's scalar ops of the indexed loops (umath loops_minmax: a float
 * maximum keeps a NaN already there, else takes the larger or the new one) */
#define AT_ADD(o, v) ((o) + (v))
#define AT_SUB(o, v) ((o) - (v))
#define AT_MUL(o, v) ((o) * (v))
#define AT_MAXF(o, v) (((o) >= (v) || (o) != (o)) ? (o) : (v))
#define AT_MINF(o, v) (((o) <= (v) || (o) != (o)) ? (o) : (v))
#define AT_MAXI(o, v) ((o) > (v) ? (o) : (v))
#define AT_MINI(o, v) ((o) < (v) ? (o) : (v))
/* integer add/subtract/multiply wrap as NumPy's: in the unsigned type */
#define AT_LOOP(T, U, OP)                                                      \
    for (npy_intp i = 0; i < m; i++) {                                         \
        T *q = o + ix[i];                                                      \
        T v = vp[i * vs];                                                      \
        *q = (T)(U)OP((U)*q, (U)v);                                            \
    }
#define AT_SWITCH(T, U, MAX, MIN)                                              \
    {                                                                          \
        T *o = (T *)PyArray_DATA(out);                                         \
        const T *vp = (const T *)PyArray_DATA(va);                             \
        switch (uf) {                                                          \
        case ND_UF_ADD: AT_LOOP(T, U, AT_ADD) break;                           \
        case ND_UF_SUBTRACT: AT_LOOP(T, U, AT_SUB) break;                      \
        case ND_UF_MULTIPLY: AT_LOOP(T, U, AT_MUL) break;                      \
        case ND_UF_MAXIMUM: AT_LOOP(T, T, MAX) break;                          \
        case ND_UF_MINIMUM: AT_LOOP(T, T, MIN) break;                          \
        }                                                                      \
    }

/* 1 when every ix[i] is in [0, n): branch-free, vectorized */
__attribute__((target_clones("avx2", "default"), optimize("tree-vectorize", "vect-cost-model=dynamic")))
static int flat_ok(const int64_t *ix, npy_intp m, uint64_t n)
{
    uint64_t bad = 0;
    for (npy_intp i = 0; i < m; i++) bad |= (uint64_t)ix[i] >= n;
    return !bad;
}

/* ufunc.at(out.flat, flat, vals) in index order, as NumPy's indexed loops
 * do, where that is a plain loop: add/subtract/multiply/maximum/minimum of
 * out's dtype (float64/32, int64/32) on values of that dtype and flat's
 * shape (or one value), flat int64 already normalized and checked
 * (index_check). 1 done, 0 not this case (NumPy's ufunc.at runs it). */
static int ufunc_at_direct(PyObject *ufo, PyArrayObject *out, PyObject *flat, PyObject *vals)
{
    int uf = nd_ufunc_lookup(ufo);
    if (uf != ND_UF_ADD && uf != ND_UF_SUBTRACT && uf != ND_UF_MULTIPLY && uf != ND_UF_MAXIMUM &&
        uf != ND_UF_MINIMUM)
        return 0;
    int dt = PyArray_TYPE(out);
    if (dt != NPY_DOUBLE && dt != NPY_FLOAT && dt != NPY_INT64 && dt != NPY_INT32) return 0;
    if (!PyArray_Check(flat) || !PyArray_Check(vals)) return 0;
    PyArrayObject *fa = (PyArrayObject *)flat, *va = (PyArrayObject *)vals;
    if (PyArray_TYPE(fa) != NPY_INT64 || !PyArray_IS_C_CONTIGUOUS(fa) || !PyArray_ISALIGNED(fa) ||
        PyArray_TYPE(va) != dt || !PyArray_ISALIGNED(va) || !PyArray_IS_C_CONTIGUOUS(out) ||
        !PyArray_ISALIGNED(out) || !PyArray_ISNOTSWAPPED(va) || !PyArray_ISNOTSWAPPED(out))
        return 0;
    npy_intp m = PyArray_SIZE(fa), vs;
    if (PyArray_NDIM(va) == 0) vs = 0;
    else if (PyArray_IS_C_CONTIGUOUS(va) && PyArray_NDIM(va) == PyArray_NDIM(fa) &&
             PyArray_CompareLists(PyArray_DIMS(va), PyArray_DIMS(fa), PyArray_NDIM(va)))
        vs = 1;
    else
        return 0;
    const int64_t *ix = (const int64_t *)PyArray_DATA(fa);
    npy_intp n = PyArray_SIZE(out);
    if (!flat_ok(ix, m, (uint64_t)n)) return 0;   /* not normalized: NumPy's own error */
    feclearexcept(FE_ALL_EXCEPT);
    switch (dt) {
    case NPY_DOUBLE: AT_SWITCH(double, double, AT_MAXF, AT_MINF) break;
    case NPY_FLOAT: AT_SWITCH(float, float, AT_MAXF, AT_MINF) break;
    case NPY_INT64: AT_SWITCH(int64_t, uint64_t, AT_MAXI, AT_MINI) break;
    case NPY_INT32: AT_SWITCH(int32_t, uint32_t, AT_MAXI, AT_MINI) break;
    }
    /* a floating-point flag (NaN compared, overflow, inf - inf): NumPy's
     * loop raises the same one and warns or raises by the errstate; the
     * caller has it run NumPy on a fresh copy */
    return fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW) ? -1 : 1;
}
#undef AT_SWITCH
#undef AT_LOOP

/* copy of base with ufunc.at(copy.flat-view, flat, vals) applied */
static PyObject *ufunc_at_fn(PyObject *self, PyObject *args)
{
    PyObject *uf, *base, *flat, *vals;
    if (!PyArg_ParseTuple(args, "OOOO", &uf, &base, &flat, &vals)) return NULL;
    if (!PyArray_Check(base)) { PyErr_SetString(PyExc_TypeError, "ufunc_at: base must be an array"); return NULL; }
    PyObject *out = PyArray_NewCopy((PyArrayObject *)base, NPY_CORDER);
    if (!out) return NULL;
    int direct = ufunc_at_direct(uf, (PyArrayObject *)out, flat, vals);
    if (direct > 0) return out;
    if (direct < 0) {
        Py_DECREF(out);
        if (!(out = PyArray_NewCopy((PyArrayObject *)base, NPY_CORDER))) return NULL;
    }
    PyObject *fl = PyArray_Ravel((PyArrayObject *)out, NPY_CORDER);
    PyObject *r = NULL, *bv = NULL;
    /* flat is the index array of the user's whole key (rows of a row
     * index): the values broadcast against it as NumPy's at() does for the
     * original key, which it does not do by itself against flat */
    if (fl && vals != Py_None && PyArray_Check(flat) && !same_or_scalar_shape(vals, (PyArrayObject *)flat)) {
        PyObject *bt = nd_xj_np_attr("broadcast_to");
        PyObject *shape = bt ? PyObject_GetAttrString(flat, "shape") : NULL;
        bv = shape ? PyObject_CallFunctionObjArgs(bt, vals, shape, NULL) : NULL;
        Py_XDECREF(bt);
        Py_XDECREF(shape);
        if (!bv) PyErr_Clear();  /* not broadcastable: at() raises NumPy's error */
    }
    if (fl) {
        r = vals == Py_None ? PyObject_CallMethod(uf, "at", "OO", fl, flat)
                            : PyObject_CallMethod(uf, "at", "OOO", fl, flat, bv ? bv : vals);
        Py_DECREF(fl);
    }
    Py_XDECREF(bv);
    if (!r) { Py_DECREF(out); return NULL; }
    Py_DECREF(r);
    return out;
}

static PyMethodDef helper_defs[] = {
    {"index_check", index_check_fn, METH_VARARGS, "numdyn: normalize and bounds-check indices"},
    {"scatter", scatter_fn, METH_VARARGS, "numdyn: functional a.flat[idx] = v"},
    {"ufunc_at", ufunc_at_fn, METH_VARARGS, "numdyn: functional ufunc.at"},
};
static PyObject *index_check_obj, *scatter_obj, *ufunc_at_obj;

/* ------------------------------------------------------- key analysis */

enum { IT_INT, IT_SLICE, IT_NONE, IT_ADV };

typedef struct {
    int kind;
    int src;               /* source dim (IT_INT, IT_SLICE, IT_ADV) */
    npy_intp ival;         /* IT_INT: normalized */
    npy_intp start, step, len;
    nd_xj_arr arr;         /* IT_ADV: int64, normalized */
    int msnd;              /* IT_ADV: rank of the index as given, -1 unknown */
    npy_intp ms[ND_MAXDIMS]; /* IT_ADV: its element memory strides */
} idx_item;

typedef struct {
    int n;
    idx_item it[2 * ND_MAXDIMS];
    int nadv;              /* IT_ADV items */
    int ond;
    npy_intp oshape[ND_MAXDIMS];
    int bnd;               /* broadcast shape of the advanced indices */
    npy_intp bshape[ND_MAXDIMS];
    int bpos;              /* out position of the broadcast block */
    int pos[2 * ND_MAXDIMS]; /* out position of each slice/newaxis item */
    int lazy_mask;         /* a proxy boolean mask was seen */
} idx_plan;

/* key -> tuple (new ref) as NumPy reads it: a tuple stays a tuple, anything
 * else (list, array, proxy, int...) is a single index */
static PyObject *key_tuple(PyObject *key)
{
    if (PyTuple_Check(key)) { Py_INCREF(key); return key; }
    return PyTuple_Pack(1, key);
}

/* Let NumPy raise for self[key] (or self[key] = value) on a stand-in. */
static PyObject *index_error(PyObject *self, PyObject *key, PyObject *value)
{
    PyObject *sa = nd_xj_standin(nd_proxy_dtype(self), nd_proxy_ndim(self), nd_proxy_shape(self));
    if (!sa) return NULL;
    PyObject *k = key_tuple(key), *sk = NULL;
    if (!k) { Py_DECREF(sa); return NULL; }
    Py_ssize_t n = PyTuple_GET_SIZE(k);
    sk = PyTuple_New(n);
    for (Py_ssize_t i = 0; sk && i < n; i++) {
        PyObject *e = PyTuple_GET_ITEM(k, i), *s;
        if (nd_proxy_check(e)) s = nd_xj_standin(nd_proxy_dtype(e), nd_proxy_ndim(e), nd_proxy_shape(e));
        else { Py_INCREF(e); s = e; }
        if (!s) { Py_CLEAR(sk); break; }
        PyTuple_SET_ITEM(sk, i, s);
    }
    Py_DECREF(k);
    PyObject *r = NULL;
    if (sk) {
        PyObject *kk = PyTuple_Check(key) ? sk : PyTuple_GET_ITEM(sk, 0);
        if (value) {
            PyObject *sv = nd_proxy_check(value)
                               ? nd_xj_standin(nd_proxy_dtype(value), nd_proxy_ndim(value), nd_proxy_shape(value))
                               : (Py_INCREF(value), value);
            /* the stand-in is read-only: copy it so NumPy gets to the shape checks */
            PyObject *wa = sv ? PyArray_NewCopy((PyArrayObject *)sa, NPY_CORDER) : NULL;
            if (wa) {
                int rc = PyObject_SetItem(wa, kk, sv);
                if (rc == 0) r = Py_None;
                Py_DECREF(wa);
            }
            Py_XDECREF(sv);
        } else {
            r = PyObject_GetItem(sa, kk);
            Py_XDECREF(r);
        }
        Py_DECREF(sk);
    }
    Py_DECREF(sa);
    if (!r) return NULL;
    return nd_shim_unsupported("an indexing case numdyn's rules do not model");
}

static int is_int_scalar(PyObject *o)
{
    if (PyBool_Check(o)) return 0;
    if (PyLong_Check(o)) return 1;
    return PyArray_IsScalar(o, Integer);
}

/* Lift a normalized concrete int64 index array. */
static int lift_index(nd_trace *t, PyObject *norm, nd_xj_arr *out)
{
    /* norm is normalize_indices' own copy, which nothing else holds:
     * read-only, the graph reads it as is (a writeable one is an array
     * Python code might change before the graph runs, so it was copied
     * again at every read: 43 MB a call of a 256x256 compacting loop) */
    PyArray_CLEARFLAGS((PyArrayObject *)norm, NPY_ARRAY_WRITEABLE);
    out->id = nd_trace_lift(t, norm);
    if (out->id == ND_NONE) return -1;
    nd_xj_fill(t, out);
    return 0;
}

/* The index array's memory order as the caller gave it (normalizing makes
 * a C-order copy): NumPy lays a result with no sliced dims out in the index
 * arrays' order. */
static void note_index_order(idx_item *it, PyObject *index)
{
    const npy_intp *shape;
    if (nd_operand_memory_strides(index, &it->msnd, &shape, it->ms)) it->msnd = -1;
}

/* A lazy integer index: normalized by an index_check extern node. */
static int lazy_index(nd_trace *t, PyObject *proxy, npy_intp n, int axis, int mode, nd_xj_arr *out)
{
    nd_xj_arr a;
    if (nd_xj_array(t, proxy, &a)) return -1;
    PyObject *ph = nd_extern_placeholder(0);
    if (!ph) return -1;
    PyObject *tmpl = Py_BuildValue("(Onii)", ph, (Py_ssize_t)n, axis, mode);
    Py_DECREF(ph);
    if (!tmpl) return -1;
    out->id = nd_shim_node_extern(t, index_check_obj, tmpl, NULL, 1, &a.id, -1, NPY_INT64,
                                  a.ndim, a.shape);
    Py_DECREF(tmpl);
    if (out->id == ND_NONE) return -1;
    nd_graph_node(nd_trace_graph(t), out->id)->flags |= ND_F_CHECK;
    nd_xj_fill(t, out);
    return 0;
}

/* A list (or tuple) index of Python ints and 0-d integer proxies
 * (`A[[k, p]]` with p = k + np.argmax(...)) is an integer index array.
 * Turning it into one with np.asarray would read each proxy through the
 * buffer protocol and int() -- two recorded breaks per element, each a
 * flush. Instead: an int64 array now when every value is known (a value a
 * branch has computed already), else a lazy array (the shim's np.array),
 * bounds-checked in the graph like any lazy index (np.stack of the items:
 * int64, as np.asarray gives for ints). New ref; NULL with no
 * exception when e is not such a list. */
static PyObject *int_list_index(PyObject *e)
{
    if (!PyList_Check(e) && !PyTuple_Check(e)) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(e);
    int proxies = 0, lazy = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(e, i);
        if (PyLong_CheckExact(x)) continue;
        if (!nd_proxy_check(x) || !nd_proxy_live(x) || nd_proxy_ndim(x) != 0 ||
            !PyTypeNum_ISINTEGER(nd_proxy_dtype(x)))
            return NULL;
        proxies = 1;
        PyObject *b = nd_proxy_base_array(x);
        if (!b) {
            if (PyErr_Occurred()) return NULL;
            lazy = 1;
        }
        Py_XDECREF(b);
    }
    if (!proxies || n == 0) return NULL;
    if (lazy) {
        PyObject *f = PyObject_GetAttrString(nd_shim_module(), "stack");
        PyObject *r = f ? PyObject_CallOneArg(f, e) : NULL;
        Py_XDECREF(f);
        return r;
    }
    npy_intp dim = n;
    PyObject *a = PyArray_SimpleNew(1, &dim, NPY_INT64);
    if (!a) return NULL;
    int64_t *v = PyArray_DATA((PyArrayObject *)a);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(e, i), *b = NULL, *o = x;
        if (!PyLong_CheckExact(x)) {
            b = nd_proxy_base_array(x);
            o = b ? PyArray_ToScalar(PyArray_DATA((PyArrayObject *)b), (PyArrayObject *)b) : NULL;
            Py_XDECREF(b);
            if (!o) { Py_DECREF(a); return NULL; }
        } else {
            Py_INCREF(o);
        }
        /* an int beyond int64 is NumPy's IndexError: left to the usual path */
        PyObject *ii = PyNumber_Index(o);
        Py_DECREF(o);
        long long iv = ii ? PyLong_AsLongLong(ii) : -1;
        Py_XDECREF(ii);
        if (iv == -1 && PyErr_Occurred()) {
            Py_DECREF(a);
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
            PyErr_Clear();
            return NULL;
        }
        v[i] = iv;
    }
    return a;
}

/* key with its int_list_index elements replaced (new ref) */
static PyObject *key_ints(PyObject *key)
{
    int tup = PyTuple_Check(key);
    PyObject *k = tup ? key : NULL;
    if (!tup) {
        PyObject *r = int_list_index(key);
        return r ? r : PyErr_Occurred() ? NULL : Py_NewRef(key);
    }
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(k); i++) {
        PyObject *r = int_list_index(PyTuple_GET_ITEM(k, i));
        if (!r) {
            if (PyErr_Occurred()) { Py_XDECREF(out); return NULL; }
            continue;
        }
        if (!out) {
            /* a copy: the caller's key tuple stays as it is */
            out = PyTuple_New(PyTuple_GET_SIZE(k));
            if (!out) { Py_DECREF(r); return NULL; }
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(k); j++)
                PyTuple_SET_ITEM(out, j, Py_NewRef(PyTuple_GET_ITEM(k, j)));
        }
        PyObject *old = PyTuple_GET_ITEM(out, i);
        PyTuple_SET_ITEM(out, i, r);
        Py_DECREF(old);
    }
    return out ? out : Py_NewRef(key);
}

/* Build the plan for self[key]. 0 ok, -1 error (maybe NumPy's via the
 * stand-in), 1 unsupported (reason set), 2 a lazy boolean mask (reads of it
 * have a data-dependent shape). */
static int plan_key(nd_trace *t, PyObject *self, PyObject *key, idx_plan *pl, PyObject *value)
{
    memset(pl, 0, sizeof(*pl));
    int sdim = nd_proxy_ndim(self);
    npy_intp sshape[ND_MAXDIMS];
    memcpy(sshape, nd_proxy_shape(self), sizeof(npy_intp) * (size_t)sdim);
    PyObject *k = key_tuple(key);
    if (!k) return -1;
    Py_ssize_t nk = PyTuple_GET_SIZE(k);
    int rc = 0;
    /* pass 1: how many source dims the key consumes (for Ellipsis) */
    int consumed = 0, ell = 0;
    PyObject **conv = PyMem_Calloc((size_t)(nk ? nk : 1), sizeof(PyObject *));
    if (!conv) { Py_DECREF(k); PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *e = PyTuple_GET_ITEM(k, i);
        if (e == Py_Ellipsis) { if (ell++) goto numpy_err; continue; }
        if (e == Py_None) continue;
        if (PyBool_Check(e)) { rc = 1; nd_shim_unsupported("indexing with a Python bool"); goto done; }
        if (PySlice_Check(e) || is_int_scalar(e)) { consumed++; continue; }
        if (nd_proxy_check(e)) {
            int dt = nd_proxy_dtype(e);
            if (dt == NPY_BOOL) {
                if (nd_proxy_ndim(e) == 0) { rc = 1; nd_shim_unsupported("indexing with a 0-d boolean"); goto done; }
                pl->lazy_mask = 1;
                consumed += nd_proxy_ndim(e);
            } else if (PyTypeNum_ISINTEGER(dt)) {
                consumed++;
            } else {
                goto numpy_err;
            }
            continue;
        }
        /* concrete array-like */
        PyObject *arr = PyArray_FROM_O(e);
        if (!arr) goto done_err;
        PyArrayObject *aa = (PyArrayObject *)arr;
        if (PyArray_SIZE(aa) == 0 && !PyArray_Check(e) && PyArray_TYPE(aa) == NPY_FLOAT64) {
            /* an empty list indexes as intp */
            PyObject *c = PyArray_FROMANY(arr, NPY_INT64, 0, 0, NPY_ARRAY_DEFAULT | NPY_ARRAY_FORCECAST);
            Py_DECREF(arr);
            if (!c) goto done_err;
            arr = c;
            aa = (PyArrayObject *)arr;
        }
        if (PyArray_TYPE(aa) == NPY_BOOL) {
            if (PyArray_NDIM(aa) == 0) { Py_DECREF(arr); rc = 1; nd_shim_unsupported("indexing with a 0-d boolean"); goto done; }
            consumed += PyArray_NDIM(aa);
        } else if (PyArray_ISINTEGER(aa)) {
            consumed++;
        } else {
            Py_DECREF(arr);
            goto numpy_err;
        }
        conv[i] = arr;
    }
    if (consumed > sdim) goto numpy_err;
    if (pl->lazy_mask && !value) { rc = 2; goto done; }
    if (pl->lazy_mask) { rc = 1; nd_shim_unsupported("assignment through a lazy boolean mask with this key"); goto done; }
    /* pass 2: items over source dims */
    int sd = 0;
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *e = PyTuple_GET_ITEM(k, i);
        if (pl->n + ND_MAXDIMS >= 2 * ND_MAXDIMS) { rc = 1; nd_shim_unsupported("a very long index"); goto done; }
        if (e == Py_Ellipsis) {
            for (int j = 0; j < sdim - consumed; j++) {
                idx_item *it = &pl->it[pl->n++];
                it->kind = IT_SLICE; it->src = sd; it->start = 0; it->step = 1; it->len = sshape[sd];
                sd++;
            }
            continue;
        }
        idx_item *it = &pl->it[pl->n];
        if (e == Py_None) { it->kind = IT_NONE; pl->n++; continue; }
        if (PySlice_Check(e)) {
            Py_ssize_t st, sp, step;
            if (PySlice_Unpack(e, &st, &sp, &step) < 0) goto done_err;
            it->len = PySlice_AdjustIndices(sshape[sd], &st, &sp, step);
            it->kind = IT_SLICE; it->src = sd++; it->start = st; it->step = step;
            pl->n++;
            continue;
        }
        if (is_int_scalar(e)) {
            Py_ssize_t v = PyNumber_AsSsize_t(e, PyExc_IndexError);
            if (v == -1 && PyErr_Occurred()) goto done_err;
            if (v < -sshape[sd] || v >= sshape[sd]) goto numpy_err;
            it->kind = IT_INT; it->src = sd++; it->ival = v < 0 ? v + sshape[sd - 1] : v;
            pl->n++;
            continue;
        }
        if (nd_proxy_check(e)) {
            it->kind = IT_ADV; it->src = sd;
            note_index_order(it, e);
            if (lazy_index(t, e, sshape[sd], sd, MODE_RAISE, &it->arr) < 0) goto done_err;
            sd++;
            pl->n++;
            continue;
        }
        PyArrayObject *aa = (PyArrayObject *)conv[i];
        if (PyArray_TYPE(aa) == NPY_BOOL) {
            /* NumPy: a k-d mask is nonzero()'s k integer arrays */
            int md = PyArray_NDIM(aa);
            for (int d = 0; d < md; d++)
                if (PyArray_DIMS(aa)[d] != sshape[sd + d]) goto numpy_err;
            PyObject *nz = PyArray_Nonzero(aa);
            if (!nz) goto done_err;
            for (int d = 0; d < md; d++) {
                idx_item *jt = &pl->it[pl->n++];
                jt->kind = IT_ADV; jt->src = sd++; jt->msnd = -1;
                if (lift_index(t, PyTuple_GET_ITEM(nz, d), &jt->arr) < 0) { Py_DECREF(nz); goto done_err; }
            }
            Py_DECREF(nz);
            continue;
        }
        PyObject *norm = normalize_indices(conv[i], sshape[sd], sd, MODE_RAISE);
        if (!norm) goto done_err;
        it->kind = IT_ADV; it->src = sd;
        note_index_order(it, conv[i]);
        int lr = lift_index(t, norm, &it->arr);
        Py_DECREF(norm);
        if (lr < 0) goto done_err;
        sd++;
        pl->n++;
    }
    for (; sd < sdim; sd++) {
        idx_item *it = &pl->it[pl->n++];
        it->kind = IT_SLICE; it->src = sd; it->start = 0; it->step = 1; it->len = sshape[sd];
    }
    /* the advanced block: integer scalars count as advanced next to arrays */
    int first = -1, last = -1, count = 0;
    for (int i = 0; i < pl->n; i++) {
        int adv = pl->it[i].kind == IT_ADV;
        if (adv) pl->nadv++;
    }
    for (int i = 0; i < pl->n; i++) {
        int adv = pl->it[i].kind == IT_ADV || (pl->nadv && pl->it[i].kind == IT_INT);
        if (!adv) continue;
        if (first < 0) first = i;
        last = i;
        count++;
    }
    int adjacent = count == 0 || last - first + 1 == count;
    {
        int nds[2 * ND_MAXDIMS];
        const npy_intp *shs[2 * ND_MAXDIMS];
        int m = 0;
        for (int i = 0; i < pl->n; i++)
            if (pl->it[i].kind == IT_ADV) { nds[m] = pl->it[i].arr.ndim; shs[m] = pl->it[i].arr.shape; m++; }
        pl->bnd = 0;
        if (m && nd_shim_broadcast(m, nds, shs, &pl->bnd, pl->bshape) < 0) {
            PyErr_Clear();
            goto numpy_err;
        }
    }
    int o = 0;
    if (pl->nadv && !adjacent) {
        pl->bpos = 0;
        for (int d = 0; d < pl->bnd; d++) pl->oshape[o++] = pl->bshape[d];
    }
    for (int i = 0; i < pl->n; i++) {
        idx_item *it = &pl->it[i];
        if (o + pl->bnd > ND_MAXDIMS) { rc = 1; nd_shim_unsupported("an indexing result above rank 16"); goto done; }
        pl->pos[i] = o;
        if (it->kind == IT_SLICE) pl->oshape[o++] = it->len;
        else if (it->kind == IT_NONE) pl->oshape[o++] = 1;
        else if (pl->nadv && adjacent && i == first) {
            pl->bpos = o;
            for (int d = 0; d < pl->bnd; d++) pl->oshape[o++] = pl->bshape[d];
        }
    }
    pl->ond = o;
    goto done;
numpy_err:
    rc = -1;
    {
        PyObject *r = index_error(self, key, value);
        if (!r && !PyErr_Occurred()) rc = 1;
        Py_XDECREF(r);
    }
    goto done;
done_err:
    rc = -1;
done:
    for (Py_ssize_t i = 0; i < nk; i++) Py_XDECREF(conv[i]);
    PyMem_Free(conv);
    Py_DECREF(k);
    return rc;
}

/* flat C-order source index of every output element (int64, out shape) */
static nd_id plan_flat(nd_trace *t, const idx_plan *pl, int sdim, const npy_intp *sshape)
{
    npy_intp cs[ND_MAXDIMS];
    nd_c_strides(sdim, sshape, cs);
    nd_id flat = ND_NONE;
    long long konst = 0;
    const int *pos = pl->pos;
    for (int i = 0; i < pl->n; i++) {
        const idx_item *it = &pl->it[i];
        nd_id term = ND_NONE;
        if (it->kind == IT_INT) {
            konst += (long long)it->ival * cs[it->src];
            continue;
        }
        if (it->kind == IT_NONE) continue;
        if (it->kind == IT_SLICE) {
            konst += (long long)it->start * cs[it->src];
            if (pl->oshape[pos[i]] <= 1) continue;
            term = nd_shim_node_index(t, pl->ond, pl->oshape, pos[i]);
            term = nd_xj_ibin_c(t, ND_UF_MULTIPLY, term, (long long)(it->step * cs[it->src]));
        } else {
            /* index array broadcast into the block, right-aligned */
            npy_intp st[ND_MAXDIMS] = {0}, acs[ND_MAXDIMS];
            nd_c_strides(it->arr.ndim, it->arr.shape, acs);
            int off = pl->bpos + pl->bnd - it->arr.ndim;
            for (int d = 0; d < it->arr.ndim; d++)
                st[off + d] = it->arr.shape[d] == 1 ? 0 : acs[d];
            npy_intp ocs[ND_MAXDIMS];
            nd_c_strides(pl->ond, pl->oshape, ocs);
            int same = it->arr.ndim == pl->ond;
            for (int d = 0; same && d < pl->ond; d++)
                same = it->arr.shape[d] == pl->oshape[d];
            term = same ? it->arr.id : nd_shim_node_view(t, it->arr.id, pl->ond, pl->oshape, 0, st);
            term = nd_xj_ibin_c(t, ND_UF_MULTIPLY, term, (long long)cs[it->src]);
        }
        if (term == ND_NONE || (flat = nd_xj_ibin(t, ND_UF_ADD, flat, term)) == ND_NONE)
            return ND_NONE;
    }
    if (flat == ND_NONE) {
        flat = nd_xj_zeros(t, NPY_INT64, pl->ond, pl->oshape);
        if (flat == ND_NONE) return ND_NONE;
    }
    return nd_xj_ibin_c(t, ND_UF_ADD, flat, konst);
}

static PyObject *operator_attr(const char *name)
{
    PyObject *op = PyImport_ImportModule("operator");
    if (!op) return NULL;
    PyObject *f = PyObject_GetAttrString(op, name);
    Py_DECREF(op);
    return f;
}

static PyObject *fallback_getitem(PyObject *self, PyObject *key, const char *reason)
{
    PyObject *getitem = operator_attr("getitem");
    if (!getitem) return NULL;
    PyObject *args = PyTuple_Pack(2, self, key);
    PyObject *r = args ? nd_trace_fallback_call(getitem, args, NULL, reason) : NULL;
    Py_XDECREF(args);
    Py_DECREF(getitem);
    return r;
}

/* NumPy's mapiter lays a fancy-indexing result out with the index dims
 * outermost, then the sliced dims in the source's memory order. */
static void gather_layout(PyObject *res, PyObject *self, const idx_plan *pl)
{
    int sdim, perm[ND_MAXDIMS], rank[ND_MAXDIMS], n = 0;
    const npy_intp *ssh;
    npy_intp ms[1][ND_MAXDIMS];
    if (pl->ond < 2) return;
    int sliced = 0;
    for (int i = 0; i < pl->n; i++) sliced |= pl->it[i].kind == IT_SLICE;
    if (!sliced) {
        /* no subspace: mapiter allocates the result by iterating the index
         * arrays in order 'K' (a[F-ordered index] is F-ordered) */
        npy_intp (*fx)[ND_MAXDIMS] = PyMem_Calloc((size_t)pl->n, sizeof *fx);
        int m = 0;
        if (!fx) { PyErr_Clear(); return; }
        for (int i = 0; i < pl->n; i++) {
            const idx_item *it = &pl->it[i];
            if (it->kind != IT_ADV || it->msnd < 0 || it->msnd > pl->bnd) continue;
            for (int d = 0; d < it->msnd; d++)
                fx[m][pl->bpos + pl->bnd - it->msnd + d] = it->ms[d];
            m++;
        }
        if (m) nd_proxy_set_korder_st(res, m, (const npy_intp (*)[ND_MAXDIMS])fx, 0, NULL, 1);
        PyMem_Free(fx);
        return;
    }
    if (nd_operand_memory_strides(self, &sdim, &ssh, ms[0])) return;
    int sperm[ND_MAXDIMS], used[ND_MAXDIMS] = {0};
    nd_korder(1, sdim, (const npy_intp (*)[ND_MAXDIMS])ms, 0, sperm);
    for (int i = 0; i < sdim; i++) rank[sperm[i]] = i;
    for (int d = pl->bpos; d < pl->bpos + pl->bnd && d < pl->ond; d++) { perm[n++] = d; used[d] = 1; }
    for (int r = 0; r < sdim; r++)
        for (int i = 0; i < pl->n; i++) {
            const idx_item *it = &pl->it[i];
            if (it->kind == IT_SLICE && rank[it->src] == r && !used[pl->pos[i]]) {
                perm[n++] = pl->pos[i];
                used[pl->pos[i]] = 1;
            }
        }
    for (int d = 0; d < pl->ond; d++) if (!used[d]) perm[n++] = d;
    nd_proxy_set_perm(res, perm);
}

static PyObject *advidx_getitem(nd_trace *t, PyObject *self, PyObject *key)
{
    idx_plan *pl = PyMem_Malloc(sizeof(idx_plan));
    if (!pl) return PyErr_NoMemory();
    PyObject *res = NULL;
    PyObject *kk = key_ints(key);
    int rc = kk ? plan_key(t, self, kk, pl, NULL) : -1;
    Py_XDECREF(kk);
    if (rc == 2) {
        res = nd_shim_masked_read(t, self, key);
        if (res || PyErr_Occurred()) goto done;
        res = fallback_getitem(self, key, "boolean mask indexing: data-dependent output shape");
        goto done;
    }
    if (rc == 1) {
        res = fallback_getitem(self, key, "advanced indexing case not supported in-graph");
        goto done;
    }
    if (rc < 0) goto done;
    {
        int sdim = nd_proxy_ndim(self);
        npy_intp sshape[ND_MAXDIMS];
        memcpy(sshape, nd_proxy_shape(self), sizeof(npy_intp) * (size_t)sdim);
        nd_id src = nd_proxy_read(self);
        if (src == ND_NONE) goto done;
        nd_id flat = plan_flat(t, pl, sdim, sshape);
        if (flat == ND_NONE) goto done;
        nd_id g = nd_xj_gather(t, src, flat);
        res = nd_shim_wrap(t, g, pl->ond == 0);
        if (res) gather_layout(res, self, pl);
    }
done:
    PyMem_Free(pl);
    return res;
}

/* self's storage gets its next version: vals written at the int64 flat
 * indices `flat` (same shape as vals) of its current value, by the scatter
 * extern (last write wins, as NumPy). 0 or -1. */
static int scatter_write(nd_trace *t, PyObject *self, nd_id flat, nd_id vals)
{
    nd_id cur = nd_proxy_read(self);
    PyObject *tmpl = cur == ND_NONE ? NULL : nd_xj_tmpl(3, 0, NULL);
    if (!tmpl) return -1;
    nd_id ins[3] = {cur, flat, vals};
    nd_id nv = nd_shim_node_extern(t, scatter_obj, tmpl, NULL, 3, ins, -1, nd_proxy_dtype(self),
                                   nd_proxy_ndim(self), nd_proxy_shape(self));
    Py_DECREF(tmpl);
    if (nv == ND_NONE) return -1;
    nd_graph_node(nd_trace_graph(t), nv)->flags |= ND_F_SCATTER;
    return nd_proxy_write(self, nv);
}

/* Functional update: run NumPy on a private copy of self's value, then make
 * that copy self's new value, so every view of the storage sees it. */
static int fallback_update(nd_trace *t, PyObject *self, PyObject *func,
                           PyObject *rest, PyObject *kwargs, const char *reason)
{
    /* the break is recorded once, by nd_trace_fallback_call below */
    PyObject *cur = nd_trace_break_value(self, reason);
    if (!cur) return -1;
    PyObject *copy = PyObject_CallMethod(cur, "copy", NULL);
    Py_DECREF(cur);
    if (!copy) return -1;
    PyObject *args = nd_tuple_prepend(copy, rest);
    if (!args) { Py_DECREF(copy); return -1; }
    PyObject *r = nd_trace_fallback_call(func, args, kwargs, reason);
    Py_DECREF(args);
    if (!r) { Py_DECREF(copy); return -1; }
    Py_DECREF(r);
    nd_id v = nd_trace_lift(t, copy);
    Py_DECREF(copy);
    if (v == ND_NONE) return -1;
    return nd_proxy_write(self, v);
}

static int fallback_setitem(nd_trace *t, PyObject *self, PyObject *key, PyObject *value,
                            const char *reason)
{
    PyObject *setitem = operator_attr("setitem");
    if (!setitem) return -1;
    PyObject *rest = PyTuple_Pack(2, key, value);
    if (!rest) { Py_DECREF(setitem); return -1; }
    int r = fallback_update(t, self, setitem, rest, NULL, reason);
    Py_DECREF(rest);
    Py_DECREF(setitem);
    return r;
}

/* value typed for assignment into dtype: weak Python scalars by NEP 50
 * (OverflowError like NumPy), then an unsafe cast as NumPy's setitem does */
static nd_id value_node(nd_trace *t, PyObject *value, int dtype)
{
    /* a scalar is stored as by a basic index: a Python float into an
     * integer array as int() of it, range-checked (OverflowError) */
    if (PyFloat_Check(value) || PyLong_Check(value) || PyArray_IsScalar(value, Number))
        return nd_shim_assign_value(t, value, dtype, 0, NULL, 1, 0);
    nd_operand op;
    int r = nd_shim_operand(t, value, &op);
    if (r) return ND_NONE;
    if (PyTypeNum_ISCOMPLEX(op.dtype) && !PyTypeNum_ISCOMPLEX(dtype)) {
        nd_shim_unsupported("assigning complex values into a real array");
        return ND_NONE;
    }
    nd_id v = nd_shim_operand_node(t, &op, dtype);
    if (v == ND_NONE) return ND_NONE;
    return nd_shim_node_cast(t, v, dtype);
}

/* a[mask] = v with mask covering the leading dims and v independent of
 * the position among the selected elements: a WHERE over the storage */
static int mask_where(nd_trace *t, PyObject *self, PyObject *key, PyObject *value, int *done)
{
    *done = 0;
    PyObject *m = key;
    if (PyTuple_Check(key)) {
        if (PyTuple_GET_SIZE(key) != 1) return 0;
        m = PyTuple_GET_ITEM(key, 0);
    }
    int sdim = nd_proxy_ndim(self), dtype = nd_proxy_dtype(self);
    const npy_intp *sshape = nd_proxy_shape(self);
    nd_xj_arr mask;
    if (nd_proxy_check(m)) {
        if (nd_proxy_dtype(m) != NPY_BOOL) return 0;
    } else if (PyArray_Check(m)) {
        if (PyArray_TYPE((PyArrayObject *)m) != NPY_BOOL) return 0;
    } else {
        return 0;
    }
    if (nd_xj_array(t, m, &mask)) return PyErr_Occurred() ? -1 : 0;
    if (mask.ndim == 0 || mask.ndim > sdim) return 0;
    for (int d = 0; d < mask.ndim; d++) if (mask.shape[d] != sshape[d]) return 0;
    /* value must broadcast to the trailing dims alone */
    int vnd;
    npy_intp vsh[ND_MAXDIMS];
    if (nd_proxy_check(value)) {
        vnd = nd_proxy_ndim(value);
        memcpy(vsh, nd_proxy_shape(value), sizeof(npy_intp) * (size_t)vnd);
    } else if (PyArray_Check(value)) {
        vnd = PyArray_NDIM((PyArrayObject *)value);
        memcpy(vsh, PyArray_DIMS((PyArrayObject *)value), sizeof(npy_intp) * (size_t)vnd);
    } else if (PyLong_Check(value) || PyFloat_Check(value) || PyComplex_Check(value) ||
               PyArray_IsScalar(value, Generic)) {
        vnd = 0;
    } else {
        return 0;
    }
    int trail = sdim - mask.ndim;
    if (vnd > trail) {
        /* (1, ...) values broadcast against (count, ...) too */
        for (int d = 0; d < vnd - trail; d++) if (vsh[d] != 1) return 0;
    }
    for (int d = 0; d < vnd && d < trail; d++) {
        npy_intp v = vsh[vnd - 1 - d], s = sshape[sdim - 1 - d];
        if (v != 1 && v != s) return 0;
    }
    nd_id v = value_node(t, value, dtype);
    if (v == ND_NONE) return PyErr_Occurred() ? -1 : 0;
    if (vnd > trail) {
        nd_xj_arr va;
        va.id = v;
        nd_xj_fill(t, &va);
        if (nd_xj_reshape(t, &va, trail, va.shape + (vnd - trail)) < 0) return -1;
        v = va.id;
    }
    npy_intp cst[ND_MAXDIMS] = {0}, mcs[ND_MAXDIMS];
    nd_c_strides(mask.ndim, mask.shape, mcs);
    for (int d = 0; d < mask.ndim; d++) cst[d] = mask.shape[d] == 1 ? 0 : mcs[d];
    nd_id cond = nd_shim_node_view(t, mask.id, sdim, sshape, 0, cst);
    nd_id cur = cond == ND_NONE ? ND_NONE : nd_proxy_read(self);
    if (cur == ND_NONE) return -1;
    nd_id w = nd_shim_node_where(t, cond, v, cur, dtype);
    if (w == ND_NONE || nd_proxy_write(self, w) < 0) return -1;
    *done = 1;
    return 0;
}

/* NumPy treats a boolean index array as its nonzero() positions. A key
 * with boolean arrays becomes one with those integer arrays, so the
 * assignment is an in-graph scatter instead of a NumPy call on the whole
 * array. A lazy mask is computed first (a recorded break: the graph then
 * depends on its data; after `a[m]` was read it is computed already).
 * New ref; NULL with no exception when the key has no boolean array, or
 * one NumPy would reject (shape mismatch: NumPy's error comes from the
 * fallback), or Ellipsis/None make the dims it indexes unclear. */
static PyObject *mask_as_positions(PyObject *self, PyObject *key, PyObject **concrete)
{
    PyObject *k = key_tuple(key), *items = k ? PyList_New(0) : NULL, *out = NULL;
    PyObject *ck = k ? PyList_New(0) : NULL;  /* the key with masks concrete */
    *concrete = NULL;
    if (!items || !ck) { Py_XDECREF(k); Py_XDECREF(items); Py_XDECREF(ck); return NULL; }
    int sdim = nd_proxy_ndim(self), pos = 0, any = 0;
    const npy_intp *sshape = nd_proxy_shape(self);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(k); i++) {
        PyObject *e = PyTuple_GET_ITEM(k, i);
        if (e == Py_Ellipsis || e == Py_None || PyBool_Check(e)) goto done;
        int isb = nd_proxy_check(e) ? nd_proxy_dtype(e) == NPY_BOOL
                  : PyArray_Check(e) && PyArray_TYPE((PyArrayObject *)e) == NPY_BOOL;
        if (!isb) {
            if (PyList_Append(items, e) < 0 || PyList_Append(ck, e) < 0) goto done;
            pos++;
            continue;
        }
        int mnd = nd_proxy_check(e) ? nd_proxy_ndim(e) : PyArray_NDIM((PyArrayObject *)e);
        const npy_intp *msh = nd_proxy_check(e) ? nd_proxy_shape(e) : PyArray_DIMS((PyArrayObject *)e);
        if (mnd == 0 || pos + mnd > sdim) goto done;
        for (int d = 0; d < mnd; d++) if (msh[d] != sshape[pos + d]) goto done;
        PyObject *arr = Py_NewRef(e);
        if (nd_proxy_check(e)) {
            /* a break only when the mask still has to be computed */
            PyObject *b = nd_proxy_base_array(e);
            if (!b && PyErr_Occurred()) goto done;
            Py_XDECREF(b);
            Py_SETREF(arr, nd_trace_materialize(
                e, b ? NULL : "boolean mask assignment: the mask's positions (nonzero)"));
        }
        PyObject *nz = arr ? PyArray_Nonzero((PyArrayObject *)arr) : NULL;
        int bad = arr && PyList_Append(ck, arr) < 0;
        Py_XDECREF(arr);
        if (!nz || bad) { Py_XDECREF(nz); goto done; }
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(nz); j++)
            if (PyList_Append(items, PyTuple_GET_ITEM(nz, j)) < 0) { Py_DECREF(nz); goto done; }
        Py_DECREF(nz);
        pos += mnd;
        any = 1;
    }
    if (any && (out = PyList_AsTuple(items)) && !(*concrete = PyList_AsTuple(ck))) Py_CLEAR(out);
done:
    Py_DECREF(items);
    Py_DECREF(ck);
    Py_DECREF(k);
    return out;
}

/* NumPy's assignment through one boolean array of the array's dims
 * (array_assign_boolean_subscript) takes a value of 0 or 1 dims only,
 * where the same positions as a fancy index would broadcast (1, n) */
static int bool_value_refused(PyObject *self, PyObject *key, PyObject *value)
{
    PyObject *m = key;
    if (PyTuple_Check(key)) {
        if (PyTuple_GET_SIZE(key) != 1) return 0;
        m = PyTuple_GET_ITEM(key, 0);
    }
    int mnd;
    if (nd_proxy_check(m) && nd_proxy_dtype(m) == NPY_BOOL) mnd = nd_proxy_ndim(m);
    else if (PyArray_Check(m) && PyArray_TYPE((PyArrayObject *)m) == NPY_BOOL) mnd = PyArray_NDIM((PyArrayObject *)m);
    else return 0;
    if (mnd == 0 || mnd != nd_proxy_ndim(self)) return 0;
    int vnd = nd_proxy_check(value) ? nd_proxy_ndim(value)
              : PyArray_Check(value) ? PyArray_NDIM((PyArrayObject *)value) : nd_shim_seq_ndim(value);
    if (vnd <= 1) return 0;
    PyErr_Format(PyExc_TypeError, "NumPy boolean array indexing assignment requires a 0 or 1-dimensional "
                 "input, input has %d dimensions", vnd);
    return -1;
}

static int advidx_setitem(nd_trace *t, PyObject *self, PyObject *key, PyObject *value)
{
    if (bool_value_refused(self, key, value) < 0) return -1;
    int done = nd_shim_masked_store(t, self, key, value);
    if (done) return done < 0 ? -1 : 0;
    if (mask_where(t, self, key, value, &done) < 0) return -1;
    if (done) return 0;
    idx_plan *pl = PyMem_Malloc(sizeof(idx_plan));
    if (!pl) { PyErr_NoMemory(); return -1; }
    int res = -1;
    PyObject *kk = key_ints(key);
    int rc = kk ? plan_key(t, self, kk, pl, value) : -1;
    Py_XDECREF(kk);
    if (rc > 0) {
        PyObject *ck, *pk = mask_as_positions(self, key, &ck);
        if (pk || PyErr_Occurred()) {
            res = pk ? advidx_setitem(t, self, pk, value) : -1;
            if (res < 0 && ck && PyErr_ExceptionMatches(PyExc_ValueError)) {
                /* a value that does not fit: NumPy's own message for the
                 * boolean key (its boolean fast path words it otherwise) */
                PyObject *et, *ev, *tb;
                PyErr_Fetch(&et, &ev, &tb);
                PyObject *r = index_error(self, PyTuple_Check(key) ? ck : PyTuple_GET_ITEM(ck, 0), value);
                Py_XDECREF(r);
                if (PyErr_Occurred()) {
                    Py_XDECREF(et);
                    Py_XDECREF(ev);
                    Py_XDECREF(tb);
                } else {
                    nd_shim_take_unsupported();
                    PyErr_Restore(et, ev, tb);
                }
            }
            Py_XDECREF(pk);
            Py_XDECREF(ck);
            goto done;
        }
        res = fallback_setitem(t, self, key, value,
                               rc == 2 ? "assignment through a lazy boolean mask"
                                       : "advanced index assignment case not supported in-graph");
        goto done;
    }
    if (rc < 0) goto done;
    {
        int sdim = nd_proxy_ndim(self), dtype = nd_proxy_dtype(self);
        npy_intp sshape[ND_MAXDIMS];
        memcpy(sshape, nd_proxy_shape(self), sizeof(npy_intp) * (size_t)sdim);
        nd_id v = value_node(t, value, dtype);
        if (v == ND_NONE) {
            if (!PyErr_Occurred())
                res = fallback_setitem(t, self, key, value, "advanced index assignment of this value");
            goto done;
        }
        nd_xj_arr va;
        va.id = v;
        nd_xj_fill(t, &va);
        /* the value must broadcast to the indexing result (NumPy's check) */
        int ok = va.ndim <= pl->ond;
        for (int d = 0; ok && d < va.ndim; d++) {
            npy_intp a = va.shape[va.ndim - 1 - d], b = pl->oshape[pl->ond - 1 - d];
            ok = a == b || a == 1;
        }
        if (!ok) {
            /* NumPy also strips leading 1s of the value */
            int lead = 0;
            while (lead < va.ndim && va.shape[lead] == 1 && va.ndim - lead > pl->ond) lead++;
            ok = va.ndim - lead <= pl->ond;
            for (int d = 0; ok && d < va.ndim - lead; d++) {
                npy_intp a = va.shape[va.ndim - 1 - d], b = pl->oshape[pl->ond - 1 - d];
                ok = a == b || a == 1;
            }
            if (ok && nd_xj_reshape(t, &va, va.ndim - lead, va.shape + lead) < 0) goto done;
        }
        if (!ok) {
            PyObject *r = index_error(self, key, value);
            if (r || !PyErr_Occurred()) {
                Py_XDECREF(r);
                res = fallback_setitem(t, self, key, value, "advanced index assignment case not modelled");
            }
            goto done;
        }
        nd_id vb = nd_shim_node_broadcast(t, va.id, pl->ond, pl->oshape);
        nd_id flat = vb == ND_NONE ? ND_NONE : plan_flat(t, pl, sdim, sshape);
        if (flat == ND_NONE) goto done;
        res = scatter_write(t, self, flat, vb);
    }
done:
    PyMem_Free(pl);
    return res;
}

/* Masked values in the key (`b[a[m], c[m]]`) index as their compacted
 * arrays: lazy gathers by the mask's positions (shim_masked.c). */
PyObject *nd_shim_advidx_getitem(nd_trace *t, PyObject *self, PyObject *key)
{
    PyObject *k = nd_shim_masked_key(key);
    PyObject *r = k ? advidx_getitem(t, self, k) : NULL;
    Py_XDECREF(k);
    return r;
}

int nd_shim_advidx_setitem(nd_trace *t, PyObject *self, PyObject *key, PyObject *value)
{
    int done = nd_shim_masked_store(t, self, key, value);
    if (done) return done < 0 ? -1 : 0;
    /* a masked value stored by other positions: its compacted array */
    PyObject *k = nd_shim_masked_key(key), *v = k ? nd_shim_masked_key(value) : NULL;
    int r = v ? advidx_setitem(t, self, k, v) : -1;
    Py_XDECREF(k);
    Py_XDECREF(v);
    return r;
}

/* ufunc.at(a, indices, b=None) */
PyObject *nd_shim_ufunc_at(nd_trace *t, PyObject *ufunc, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *self = n >= 1 ? PyTuple_GET_ITEM(args, 0) : NULL;
    const char *reason = "ufunc.at case not supported in-graph";
    if (!self || !nd_proxy_check(self) || n < 2 || n > 3 || (kwargs && PyDict_Size(kwargs)) ||
        nd_ufunc_lookup(ufunc) < 0) {
        if (self && nd_proxy_check(self)) goto fallback;
        /* a real array updated in place (a global, an argument's .base...):
         * NumPy runs ufunc.at itself on the materialized operands */
        PyObject *at = PyObject_GetAttrString(ufunc, "at");
        if (!at) return NULL;
        PyObject *r = nd_trace_fallback_call(at, args, kwargs, reason);
        Py_DECREF(at);
        return r;
    }
    if (nd_proxy_is_scalar(self)) {   /* a NumPy scalar, not an array */
        PyErr_SetString(PyExc_TypeError, "first operand must be array");
        return NULL;
    }
    int uf = nd_ufunc_lookup(ufunc);
    int nin = nd_ufunc_nin(uf);
    if ((nin == 2) != (n == 3) || nd_ufunc_nout(uf) != 1) goto fallback;
    PyObject *key = PyTuple_GET_ITEM(args, 1), *b = n == 3 ? PyTuple_GET_ITEM(args, 2) : NULL;
    int sdim = nd_proxy_ndim(self), dtype = nd_proxy_dtype(self);
    npy_intp sshape[ND_MAXDIMS];
    memcpy(sshape, nd_proxy_shape(self), sizeof(npy_intp) * (size_t)sdim);
    /* NumPy's own type resolution/casting errors, on a tiny probe */
    {
        PyObject *pa = PyArray_Zeros(1, (npy_intp[]){1}, PyArray_DescrFromType(dtype), 0);
        PyObject *pi = pa ? PyLong_FromLong(0) : NULL;
        PyObject *pb = NULL;
        if (pi && b) {
            if (nd_proxy_check(b)) pb = nd_xj_standin(nd_proxy_dtype(b), 0, NULL);
            else if (PyArray_Check(b)) pb = PyArray_Zeros(0, NULL, PyArray_DescrFromType(PyArray_TYPE((PyArrayObject *)b)), 0);
            else { Py_INCREF(b); pb = b; }
        }
        PyObject *r = (pi && (!b || pb)) ? (b ? PyObject_CallMethod(ufunc, "at", "OOO", pa, pi, pb)
                                             : PyObject_CallMethod(ufunc, "at", "OO", pa, pi))
                                         : NULL;
        Py_XDECREF(pa); Py_XDECREF(pi); Py_XDECREF(pb);
        if (!r) {
            /* a weak-scalar value that did not fit is NumPy's error too */
            return NULL;
        }
        Py_DECREF(r);
    }
    idx_plan *pl = PyMem_Malloc(sizeof(idx_plan));
    if (!pl) return PyErr_NoMemory();
    PyObject *res = NULL;
    /* a computed index is checked at this line (nd_shim_checked_index) */
    PyObject *ckey = nd_shim_checked_index(t, key);
    if (!ckey) { PyMem_Free(pl); return NULL; }
    int rc = plan_key(t, self, ckey, pl, b ? b : Py_None);
    Py_DECREF(ckey);
    if (rc > 0) { PyMem_Free(pl); goto fallback; }
    if (rc < 0) { PyMem_Free(pl); return NULL; }
    nd_id flat = plan_flat(t, pl, sdim, sshape);
    nd_id cur = flat == ND_NONE ? ND_NONE : nd_proxy_read(self);
    nd_id ins[3] = {cur, flat, ND_NONE};
    int nins = 2;
    if (cur != ND_NONE && b) {
        nd_xj_arr ba;
        if (nd_proxy_check(b) || PyArray_Check(b)) {
            int ar = nd_xj_array(t, b, &ba);
            if (ar) { PyMem_Free(pl); if (ar < 0) return NULL; goto fallback; }
        } else {
            /* a Python/NumPy scalar stays a template constant: ufunc.at
             * types it exactly as NumPy does */
            ba.id = ND_NONE;
        }
        if (ba.id != ND_NONE) {
            int ok = ba.ndim <= pl->ond;
            for (int d = 0; ok && d < ba.ndim; d++) {
                npy_intp x = ba.shape[ba.ndim - 1 - d], y = pl->oshape[pl->ond - 1 - d];
                ok = x == y || x == 1;
            }
            if (!ok) { PyMem_Free(pl); goto fallback; }
            ins[2] = ba.id;
            nins = 3;
        }
    }
    if (cur == ND_NONE) { PyMem_Free(pl); return NULL; }
    PyMem_Free(pl);
    PyObject *p0 = nd_extern_placeholder(0), *p1 = nd_extern_placeholder(1);
    PyObject *p2 = nins == 3 ? nd_extern_placeholder(2) : (b ? (Py_INCREF(b), b) : (Py_INCREF(Py_None), Py_None));
    PyObject *tmpl = (p0 && p1 && p2) ? PyTuple_Pack(4, ufunc, p0, p1, p2) : NULL;
    Py_XDECREF(p0); Py_XDECREF(p1); Py_XDECREF(p2);
    if (!tmpl) return NULL;
    nd_id nv = nd_shim_node_extern(t, ufunc_at_obj, tmpl, NULL, nins, ins, -1, dtype, sdim, sshape);
    Py_DECREF(tmpl);
    if (nv == ND_NONE || nd_proxy_write(self, nv) < 0) return NULL;
    res = Py_None;
    Py_INCREF(res);
    return res;
fallback:
    {
        PyObject *at = PyObject_GetAttrString(ufunc, "at");
        if (!at) return NULL;
        PyObject *rest = PyTuple_GetSlice(args, 1, n);
        if (!rest) { Py_DECREF(at); return NULL; }
        int r = fallback_update(t, self, at, rest, kwargs, reason);
        Py_DECREF(rest);
        Py_DECREF(at);
        if (r < 0) return NULL;
        Py_RETURN_NONE;
    }
}

/* ------------------------------------------------------------ take / put */

static int mode_arg(PyObject *o, int *mode)
{
    *mode = MODE_RAISE;
    if (!o) return 0;
    if (!PyUnicode_Check(o)) return 1;
    const char *s = PyUnicode_AsUTF8(o);
    if (!s) return -1;
    if (strcmp(s, "raise") == 0) *mode = MODE_RAISE;
    else if (strcmp(s, "wrap") == 0) *mode = MODE_WRAP;
    else if (strcmp(s, "clip") == 0) *mode = MODE_CLIP;
    else return 1;
    return 0;
}

/* indices for one axis of length n: concrete ones normalized now, lazy
 * ones by an index_check node. 0 ok, -1 error, 1 unsupported. */
static int axis_indices(nd_trace *t, PyObject *ind, npy_intp n, int axis, int mode, nd_xj_arr *out)
{
    if (nd_proxy_check(ind)) {
        if (!PyTypeNum_ISINTEGER(nd_proxy_dtype(ind))) return 1;
        /* a computed index is checked at this line unless the call defers */
        PyObject *c = nd_shim_checked_index(t, ind);
        if (!c) return -1;
        if (nd_proxy_check(c)) {
            Py_DECREF(c);
            return lazy_index(t, ind, n, axis, mode, out) < 0 ? -1 : 0;
        }
        int r = axis_indices(t, c, n, axis, mode, out);
        Py_DECREF(c);
        return r;
    }
    PyObject *arr = PyArray_FROM_O(ind);
    if (!arr) return -1;
    if (!PyArray_ISINTEGER((PyArrayObject *)arr) &&
        !(PyArray_SIZE((PyArrayObject *)arr) == 0 && !PyArray_Check(ind))) {
        Py_DECREF(arr);
        return 1;
    }
    PyObject *norm = normalize_indices(arr, n, axis, mode);
    Py_DECREF(arr);
    if (!norm) return -1;
    int r = lift_index(t, norm, out);
    Py_DECREF(norm);
    return r;
}

static PyObject *take_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a,indices|axis,out,mode";
    if (argv[3] && argv[3] != Py_None) return nd_shim_unsupported("numpy.take with out=");
    int mode, r;
    if ((r = mode_arg(argv[4], &mode))) return r < 0 ? NULL : nd_xj_numpy_error("take", P, argv);
    nd_xj_arr a, idx;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    int ax = 0;
    if (!argv[2] || argv[2] == Py_None) {
        npy_intp n = nd_xj_size(a.ndim, a.shape);
        if (nd_xj_reshape(t, &a, 1, &n) < 0) return NULL;
    } else if (nd_shim_axis_conv(argv[2], a.ndim, &ax, ND_AXIS_CONVERTER) < 0) {
        return NULL;
    }
    if (a.ndim == 0) return nd_xj_numpy_error("take", P, argv);
    r = axis_indices(t, argv[1], a.shape[ax], ax, mode | MODE_TAKE, &idx);
    if (r < 0) return NULL;
    if (r > 0) return nd_xj_numpy_error("take", P, argv);
    nd_id g = nd_xj_take_axis(t, &a, ax, &idx);
    if (g == ND_NONE) return NULL;
    return nd_shim_wrap(t, g, nd_shim_node_ndim(t, g) == 0);
}

static PyObject *take_method(nd_trace *t, PyObject **argv) { return take_impl(t, argv); }

static PyObject *take_along_axis_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "arr,indices|axis";
    nd_xj_arr a, idx;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    int ax = a.ndim - 1; /* NumPy 2's default axis=-1 */
    if (argv[2] == Py_None) {
        npy_intp n = nd_xj_size(a.ndim, a.shape);
        if (nd_xj_reshape(t, &a, 1, &n) < 0) return NULL;
        ax = 0;
    } else if (argv[2] && nd_shim_axis_conv(argv[2], a.ndim, &ax, ND_AXIS_NORMALIZE) < 0) {
        return NULL;
    }
    if (a.ndim == 0) return nd_xj_numpy_error("take_along_axis", P, argv);
    nd_xj_arr ia;
    if (nd_xj_array(t, argv[1], &ia)) return NULL;
    if (!PyTypeNum_ISINTEGER(ia.dtype) || ia.ndim != a.ndim) return nd_xj_numpy_error("take_along_axis", P, argv);
    /* shapes broadcast except along ax */
    npy_intp osh[ND_MAXDIMS];
    for (int d = 0; d < a.ndim; d++) {
        if (d == ax) { osh[d] = ia.shape[d]; continue; }
        if (a.shape[d] != ia.shape[d] && a.shape[d] != 1 && ia.shape[d] != 1)
            return nd_xj_numpy_error("take_along_axis", P, argv);
        osh[d] = a.shape[d] == 1 ? ia.shape[d] : a.shape[d];
    }
    int r = axis_indices(t, argv[1], a.shape[ax], ax, MODE_RAISE, &idx);
    if (r) return r < 0 ? NULL : nd_xj_numpy_error("take_along_axis", P, argv);
    npy_intp acs[ND_MAXDIMS], ics[ND_MAXDIMS], ist[ND_MAXDIMS];
    nd_c_strides(a.ndim, a.shape, acs);
    nd_c_strides(idx.ndim, idx.shape, ics);
    for (int d = 0; d < a.ndim; d++) ist[d] = idx.shape[d] == 1 ? 0 : ics[d];
    nd_id flat = nd_shim_node_view(t, idx.id, a.ndim, osh, 0, ist);
    flat = nd_xj_ibin_c(t, ND_UF_MULTIPLY, flat, (long long)acs[ax]);
    for (int d = 0; flat != ND_NONE && d < a.ndim; d++) {
        if (d == ax || a.shape[d] == 1) continue;
        nd_id term = nd_shim_node_index(t, a.ndim, osh, d);
        term = nd_xj_ibin_c(t, ND_UF_MULTIPLY, term, (long long)acs[d]);
        flat = term == ND_NONE ? ND_NONE : nd_xj_ibin(t, ND_UF_ADD, flat, term);
    }
    if (flat == ND_NONE) return NULL;
    return nd_shim_wrap(t, nd_xj_gather(t, a.id, flat), 0);
}

/* np.put raising IndexError has already written the values before the bad
 * index (NumPy stores in order): NumPy does it on a copy of a's value,
 * which becomes a's value, and its error stands. */
static PyObject *put_partial(nd_trace *t, PyObject **argv)
{
    PyErr_Clear();
    /* NumPy puts into a C-contiguous array in place, but into a copy of any
     * other (written back only on success): only then is a failed put's
     * partial write seen */
    npy_intp ms[ND_MAXDIMS];
    int inplace = !nd_proxy_memory_strides(argv[0], ms) &&
                  nd_c_contiguous(nd_proxy_ndim(argv[0]), nd_proxy_shape(argv[0]), ms, 1);
    PyObject *cur = nd_trace_materialize(argv[0], NULL);
    PyObject *c = cur ? PyArray_NewCopy((PyArrayObject *)cur, NPY_CORDER) : NULL;
    Py_XDECREF(cur);
    if (!c) return NULL;
    PyObject *ind = nd_proxy_check(argv[1]) ? nd_trace_materialize(argv[1], NULL) : Py_NewRef(argv[1]);
    PyObject *v = !ind ? NULL : nd_proxy_check(argv[2]) ? nd_trace_materialize(argv[2], NULL)
                                                        : Py_NewRef(argv[2]);
    PyObject *fn = v ? nd_xj_np_attr("put") : NULL;
    PyObject *r = NULL;
    if (fn) r = argv[3] ? PyObject_CallFunctionObjArgs(fn, c, ind, v, argv[3], NULL)
                        : PyObject_CallFunctionObjArgs(fn, c, ind, v, NULL);
    Py_XDECREF(fn);
    Py_XDECREF(ind);
    Py_XDECREF(v);
    if (r) {  /* NumPy accepted what the trace-time check refused: its result stands */
        Py_DECREF(r);
        nd_id id = nd_trace_lift(t, c);
        Py_DECREF(c);
        if (id == ND_NONE || nd_proxy_write(argv[0], id) < 0) return NULL;
        Py_RETURN_NONE;
    }
    ND_EXC_SAVE(exc);
    nd_id id = inplace ? nd_trace_lift(t, c) : ND_NONE;
    Py_DECREF(c);
    int ok = !inplace || (id != ND_NONE && nd_proxy_write(argv[0], id) == 0);
    if (!ok) ND_EXC_DROP(exc);
    else ND_EXC_RESTORE(exc);
    return NULL;
}

static PyObject *put_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a,ind,v|mode";
    PyObject *self = argv[0];
    if (!nd_proxy_check(self)) return nd_shim_unsupported("numpy.put into a non-lazy array");
    if (nd_proxy_is_scalar(self)) {
        /* np.put(s, ...) of a NumPy scalar is s.put(...): it puts into a
         * new 0-d array of its value, s stays as it was */
        PyObject *c = nd_shim_method("copy", self, NULL, NULL), *r = NULL;
        if (c && !nd_proxy_is_scalar(c)) {
            PyObject *cargv[4] = {c, argv[1], argv[2], argv[3]};
            r = put_impl(t, cargv);
        }
        Py_XDECREF(c);
        return r;
    }
    int mode, r;
    if ((r = mode_arg(argv[3], &mode))) return r < 0 ? NULL : nd_xj_numpy_error("put", P, argv);
    int sdim = nd_proxy_ndim(self), dtype = nd_proxy_dtype(self);
    npy_intp sshape[ND_MAXDIMS];
    memcpy(sshape, nd_proxy_shape(self), sizeof(npy_intp) * (size_t)sdim);
    npy_intp total = nd_xj_size(sdim, sshape);
    nd_xj_arr idx;
    if (mode == MODE_RAISE && nd_proxy_check(argv[1]) && nd_proxy_ndim(argv[1]) > 0 &&
        PyTypeNum_ISINTEGER(nd_proxy_dtype(argv[1]))) {
        /* NumPy's put stores index by index and stops at a bad one, the
         * stores before it made (put_partial): a computed index array is
         * read now, never left to a check node that raises before any store
         * (a call that defers index checks, nd_trace_checks_deferred) */
        PyObject *ind = nd_trace_materialize(argv[1], NULL);
        if (!ind) return NULL;
        PyObject *cargv[4] = {argv[0], ind, argv[2], argv[3]};
        PyObject *res = put_impl(t, cargv);
        Py_DECREF(ind);
        return res;
    }
    r = axis_indices(t, argv[1], total, 0, mode | MODE_PUT, &idx);
    if (r < 0 && PyErr_ExceptionMatches(PyExc_IndexError)) return put_partial(t, argv);
    if (r) return r < 0 ? NULL : nd_xj_numpy_error("put", P, argv);
    npy_intp m = nd_xj_size(idx.ndim, idx.shape);
    if (nd_xj_reshape(t, &idx, 1, &m) < 0) return NULL;
    nd_id v = value_node(t, argv[2], dtype);
    if (v == ND_NONE) return PyErr_Occurred() ? NULL : nd_shim_unsupported("numpy.put of these values");
    nd_xj_arr va;
    va.id = v;
    nd_xj_fill(t, &va);
    npy_intp vn = nd_xj_size(va.ndim, va.shape);
    if (vn != m && vn != 1) return nd_shim_unsupported("numpy.put with values repeated cyclically");
    if (m == 0) Py_RETURN_NONE;
    if (nd_xj_reshape(t, &va, 1, &vn) < 0) return NULL;
    nd_id vb = nd_shim_node_broadcast(t, va.id, 1, &m);
    if (vb == ND_NONE || scatter_write(t, self, idx.id, vb) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *put_method(nd_trace *t, PyObject **argv) { return put_impl(t, argv); }

/* -------------------------------------------------------------- register */

static const nd_shim_def advidx_defs[] = {
    {"take", "a,indices|axis,out,mode", take_impl, 0},
    {"take_along_axis", "arr,indices|axis", take_along_axis_impl, 0},
    {"put", "a,ind,v|mode", put_impl, 0},
    {NULL, NULL, NULL, 0},
};

static const nd_shim_def advidx_methods[] = {
    {"take", "self,indices|axis,out,mode", take_method, 0},
    {"put", "self,ind,v|mode", put_method, 0},
    {NULL, NULL, NULL, 0},
};

int nd_shim_register_advidx(nd_shim_table *tab)
{
    if (!index_check_obj) {
        index_check_obj = PyCFunction_New(&helper_defs[0], NULL);
        scatter_obj = PyCFunction_New(&helper_defs[1], NULL);
        ufunc_at_obj = PyCFunction_New(&helper_defs[2], NULL);
        if (!index_check_obj || !scatter_obj || !ufunc_at_obj) return -1;
    }
    if (nd_shim_add_functions(tab, advidx_defs) < 0) return -1;
    return nd_shim_add_methods(tab, advidx_methods);
}
