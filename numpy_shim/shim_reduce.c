/* shim_reduce.c -- reductions and scans: sum prod min max any all argmin
 * argmax mean var std ptp count_nonzero cumsum cumprod nansum..., their
 * ndarray methods, and ufunc.reduce / ufunc.accumulate.
 *
 * Result dtypes are NumPy's: each (function, input dtype, dtype=) is asked
 * once of NumPy itself on a one-element probe array and cached (sum of int8
 * is int64, mean of float16 is float16 computed in float32, var of
 * complex64 is float32...). mean/var/std are composed from REDUCE and
 * pointwise nodes, exactly as numpy/_core/_methods.py composes them, so the
 * native backend can fuse them.
 */
#include "shim_internal.h"
#include <string.h>
#include <math.h>

/* ------------------------------------------------------------ oracle */

static PyObject *probe_cache;  /* (callable, dtype, dtarg, method) -> typenum */

static int typenum_of_result(PyObject *r)
{
    PyObject *dt = PyObject_GetAttrString(r, "dtype");
    if (!dt) return -1;
    int t = -1;
    if (PyArray_DescrCheck(dt)) {
        PyArray_Descr *d = (PyArray_Descr *)dt;
        t = nd_dtype_canonical(d);
    }
    Py_DECREF(dt);
    if (t < 0 || !nd_dtype_ok(t)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "numdyn: reduction result is not numeric");
        return -1;
    }
    return t;
}

/* dtype NumPy's `func` (or func.<method>) returns for input dtype `dt` and
 * dtype= `dtarg` (-1: not given). NumPy's own exception on failure. */
static int probe(PyObject *func, const char *method, int dt, int dtarg)
{
    if (!probe_cache && !(probe_cache = PyDict_New())) return -1;
    PyObject *key = Py_BuildValue("(Oiis)", func, dt, dtarg, method ? method : "");
    if (!key) return -1;
    PyObject *hit = PyDict_GetItemWithError(probe_cache, key);
    if (hit) { Py_DECREF(key); return (int)PyLong_AsLong(hit); }
    if (PyErr_Occurred()) { Py_DECREF(key); return -1; }
    npy_intp one = 1;
    PyObject *arr = PyArray_Zeros(1, &one, PyArray_DescrFromType(dt), 0);
    PyObject *callee = method ? PyObject_GetAttrString(func, method) : (Py_INCREF(func), func);
    PyObject *r = NULL;
    if (arr && callee) {
        PyObject *args = PyTuple_Pack(1, arr), *kw = PyDict_New();
        PyObject *d = dtarg >= 0 ? nd_shim_descr(dtarg) : NULL;
        if (args && kw && (dtarg < 0 || (d && PyDict_SetItemString(kw, "dtype", d) == 0)))
            r = PyObject_Call(callee, args, kw);
        Py_XDECREF(d);
        Py_XDECREF(args);
        Py_XDECREF(kw);
    }
    Py_XDECREF(arr);
    Py_XDECREF(callee);
    int t = -1;
    if (r) {
        t = typenum_of_result(r);
        Py_DECREF(r);
    }
    if (t >= 0) {
        PyObject *v = PyLong_FromLong(t);
        if (!v || PyDict_SetItem(probe_cache, key, v) < 0) t = -1;
        Py_XDECREF(v);
    }
    Py_DECREF(key);
    return t;
}

static PyObject *np_attr(const char *name)
{
    /* borrowed-like: cached for the process (module attributes are stable) */
    static struct { const char *n; PyObject *o; } cache[32];
    for (int i = 0; i < 32; i++) {
        if (cache[i].n && strcmp(cache[i].n, name) == 0) return cache[i].o;
        if (!cache[i].n) {
            PyObject *o = PyObject_GetAttrString(nd_shim_numpy(), name);
            if (!o) return NULL;
            cache[i].n = name;
            cache[i].o = o;
            return o;
        }
    }
    return PyObject_GetAttrString(nd_shim_numpy(), name);  /* not reached in practice */
}

/* ------------------------------------------------------------ helpers */

typedef struct {
    PyObject *a, *axis, *dtype, *out, *keepdims, *initial, *where, *ddof, *correction, *mean;
} red_args;

static int operand_array(nd_trace *t, PyObject *obj, nd_operand *op)
{
    int rc = nd_shim_operand(t, obj, op);
    if (rc) return rc;
    if (op->weak) {
        /* np.sum(3.0): a Python scalar becomes a 0-d array of its default dtype */
        op->id = nd_shim_operand_node(t, op, op->dtype);
        op->weak = 0;
        if (op->id == ND_NONE) return -1;
    }
    return 0;
}

static npy_intp count_of(const nd_operand *op, uint64_t mask)
{
    npy_intp n = 1;
    for (int d = 0; d < op->ndim; d++) if (mask & (1ULL << d)) n *= op->shape[d];
    return n;
}

static npy_intp size_of(const nd_operand *op) { return count_of(op, ~0ULL); }

/* src: the reduced operand (NULL: the result is laid out in C order, as
 * NumPy's argmax/argmin lay it out); the result keeps its order. out=: one
 * array of exactly the result's shape whose dtype the result casts to under
 * `casting` (argmax/argmin: want, intp); any other out= is NumPy's to refuse
 * (nd_shim_out_result) */
static PyObject *finish(nd_trace *t, nd_id r, PyObject *out, const nd_operand *src,
                        uint64_t mask, int keep, NPY_CASTING casting, int want)
{
    if (r == ND_NONE) return NULL;
    if (out && out != Py_None) {
        nd_shim_out_rule rule = {0, want, casting, NULL, NPY_UNSAFE_CASTING,
                                 "a reduction's out= that NumPy checks itself (a tuple, another "
                                 "shape, or a dtype the result does not cast to)"};
        return nd_shim_out_result(t, out, r, &rule);
    }
    PyObject *p = nd_shim_wrap(t, r, nd_shim_node_ndim(t, r) == 0);
    if (p && src && src->obj) nd_proxy_set_korder_reduced(p, src->obj, mask, keep);
    return p;
}

/* A scalar node holding `value` (a Python object) at dtype. */
static nd_id const_node(nd_trace *t, PyObject *value, int dtype)
{
    return nd_shim_node_scalar(t, value, dtype, 1);
}

/* initial= (or where='s fill) in the reduction's dtype: NumPy converts it
 * as np.asarray(initial, dtype), so a Python int out of an integer dtype's
 * range is an OverflowError (a float is cast) */
static nd_id initial_node(nd_trace *t, PyObject *value, int dtype)
{
    if (PyLong_Check(value) && !PyBool_Check(value) && PyTypeNum_ISINTEGER(dtype)) {
        int fits = nd_shim_pyint_fits(value, dtype);
        if (fits < 0) return ND_NONE;
        if (!fits) {
            nd_shim_raise_pyint_overflow(value, dtype);
            return ND_NONE;
        }
    }
    return const_node(t, value, dtype);
}

static nd_id const_long(nd_trace *t, long v, int dtype)
{
    PyObject *o = PyLong_FromLong(v);
    if (!o) return ND_NONE;
    nd_id r = const_node(t, o, dtype);
    Py_DECREF(o);
    return r;
}

/* x / n with NumPy's true_divide typing for (x dtype, weak Python number) */
/* The count n as a value of dtype dt: float16/float32 hold every integer
 * only up to 2048 / 2**24. */
static int count_exact_in(PyObject *n, int dt)
{
    double v = PyFloat_AsDouble(n);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    /* complex64: NumPy's division by (n + 0j) multiplies by the reciprocal
     * (Smith's), not correctly rounded: only complex128's, rounded back, is
     * NumPy's (the mean of 2100 x 3 values with imaginary parts 1 was
     * 0.99999994j) */
    if (dt == NPY_COMPLEX64) return 0;
    int bits = dt == NPY_FLOAT16 ? 11 : dt == NPY_FLOAT32 ? 24 : 0;
    if (!bits || v == 0.0) return 1;
    if (!(fabs(v) <= (bits == 11 ? 65504.0 : 3.4028234663852886e38))) return 0;
    int e;
    double m = ldexp(frexp(fabs(v), &e), bits);  /* the significand as an integer, if it is one */
    return m == floor(m);
}

/* _methods' rcount is an np.intp (max(rcount - ddof, 0): a float64 when
 * ddof is a float), a strong NumPy scalar: a float16/float32/complex64 sum
 * is divided in float64/complex128 and rounded back to the sum's dtype
 * (true_divide(ret, rcount, out=ret) / ret.dtype.type(ret / rcount)).
 * Where the count is a value of a real sum's dtype, dividing in that dtype
 * gives the same bits (a quotient correctly rounded to 53 bits, then to 24
 * or 11, rounds as once: 53 >= 2*24 + 2) and keeps the graph the fusion
 * passes know; past 2048 (float16) or 2**24 (float32) it is not, and a
 * division in the sum's dtype was off by an ulp. */
static nd_id divide_by(nd_trace *t, nd_id x, PyObject *n)
{
    int sdt = nd_shim_node_dtype(t, x);
    int strong = !count_exact_in(n, sdt);
    int dt[2] = {sdt, PyFloat_Check(n) ? NPY_FLOAT64 : strong ? NPY_INTP : NPY_INT64};
    int weak[2] = {0, !strong}, loop[2], out;
    PyObject *vals[2] = {NULL, n};
    if (nd_shim_resolve_ufunc(ND_UF_TRUE_DIVIDE, 2, dt, weak, vals, loop, &out) < 0) return ND_NONE;
    nd_id s = nd_shim_node_scalar(t, n, loop[1], !strong);
    if (s == ND_NONE) return ND_NONE;
    nd_id in[2] = {x, s};
    nd_id r = nd_shim_node_ufunc(t, ND_UF_TRUE_DIVIDE, in, loop, out, 0);
    return r == ND_NONE || out == sdt || !strong ? r : nd_shim_node_cast(t, r, sdt);
}

/* node x carries a nan-function's data-dependent warning (graph.h) */
static int mark_data_warn(nd_trace *t, nd_id x)
{
    nd_node *d = nd_graph_node(nd_trace_graph(t), x);
    if (d->op != ND_OP_UFUNC) {
        PyErr_SetString(PyExc_SystemError, "numdyn: data warning on a non-ufunc node");
        return -1;
    }
    d->flags |= ND_F_DATA_WARN;
    return 0;
}

/* _methods._mean/_var divide a 0-d sum with no out= as NumPy scalars
 * (ret.dtype.type(ret / rcount), rcount an np.intp): scalar math, "scalar
 * divide" -- where the sum's type holds intp safely; float32/complex64
 * scalars defer to the ufunc ("divide") */
static nd_id divide_result(nd_trace *t, nd_id x, PyObject *n, PyObject *out)
{
    int sdt = nd_shim_node_dtype(t, x);
    nd_id r = divide_by(t, x, n);
    if (r == ND_NONE || (out && out != Py_None)) return r;
    if (!PyArray_CanCastSafely(NPY_INTP, sdt)) return r;
    nd_node *d = nd_graph_node(nd_trace_graph(t), r);
    if (d->op == ND_OP_UFUNC && d->sub == ND_UF_TRUE_DIVIDE && d->ndim == 0 && !d->value)
        d->flags |= ND_F_SCALAR_MATH;
    return r;
}

static nd_id binary(nd_trace *t, int uf, nd_id a, nd_id b)
{
    int dt[2] = {nd_shim_node_dtype(t, a), nd_shim_node_dtype(t, b)}, loop[2], out[2];
    if (nd_shim_resolve_ufunc(uf, 2, dt, NULL, NULL, loop, out) < 0) return ND_NONE;
    nd_id in[2] = {a, b};
    return nd_shim_node_ufunc(t, uf, in, loop, out[0], 0);
}

static nd_id unary(nd_trace *t, int uf, nd_id a)
{
    int dt[1] = {nd_shim_node_dtype(t, a)}, loop[1], out[2];
    if (nd_shim_resolve_ufunc(uf, 1, dt, NULL, NULL, loop, out) < 0) return ND_NONE;
    return nd_shim_node_ufunc(t, uf, &a, loop, out[0], 0);
}

/* NumPy's ufunc reductions accept an integer axis 0 or -1 on a 0-d value
 * (a tuple, even (0,), is checked against ndim 0 and raises AxisError
 * "axis 0 is out of bounds for array of dimension 0"; axis=1 says
 * "dimension 0" too). mean/var/std are stricter: see strict_axis_mask. */
static int red_axis_mask(PyObject *axis, int ndim, uint64_t *mask)
{
    if (ndim > 0 || !axis || axis == Py_None || PyTuple_Check(axis))
        return nd_shim_axis_mask(axis, ndim, 1, mask);
    int k;
    if (nd_shim_axis_index(axis, 1, &k) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_IndexError)) return -1;  /* AxisError is one */
        PyErr_Clear();
        long v = PyLong_AsLong(axis);
        if (v == -1 && PyErr_Occurred()) return -1;
        nd_shim_raise_axis_error(v, 0);
        return -1;
    }
    *mask = 0;
    return 0;
}

/* np.mean / var / std check any axis against the true ndim (a 0-d value
 * with axis=0 raises AxisError) */
static int strict_axis_mask(PyObject *axis, int ndim, uint64_t *mask)
{
    return nd_shim_axis_mask_conv(axis, ndim, 1, mask, ND_AXIS_NORMALIZE);
}

/* How a reduction family reads axis=: */
enum {
    AX_UFUNC,   /* np.sum & co: red_axis_mask; absent = all axes */
    AX_FIRST,   /* ufunc.reduce: absent = axis 0 */
    AX_STRICT,  /* mean/var/std: strict_axis_mask */
    AX_ARG,     /* argmax/argmin: one axis (a 0-d value counts as 1-d); absent = all */
    AX_SKIP,    /* scans read axis themselves */
};

/* The options every reduction reads, in NumPy's order of checks: axis=
 * (as a mask over a's dims), dtype=, keepdims=, then the result dtype:
 * `fixed` when >= 0, else NumPy's answer for oracle(.method), else -1.
 * -1 with an exception, or with an unsupported reason naming `what`. */
typedef struct { uint64_t mask; int dtarg, keep, res; } red_opts;

static int red_options(const nd_operand *a, PyObject *axis, int axmode, PyObject *dtype,
                       PyObject *keepdims, PyObject *oracle, const char *method, int fixed,
                       const char *what, red_opts *o)
{
    o->mask = 0;
    /* (mean/var/std: an np.bool_ axis meets the index check below first) */
    if (axmode != AX_SKIP && axmode != AX_ARG &&
        !(axmode == AX_STRICT && axis && PyArray_IsScalar(axis, Bool)) &&
        nd_shim_axis_bool_refused(axis, "an integer is required") < 0)
        return -1;
    switch (axmode) {
    case AX_FIRST:
        if (!axis) { o->mask = a->ndim ? 1 : 0; break; }
        /* fall through */
    case AX_UFUNC:
        if (red_axis_mask(axis, a->ndim, &o->mask) < 0) return -1;
        break;
    case AX_STRICT:
        if (strict_axis_mask(axis, a->ndim, &o->mask) < 0) return -1;
        break;
    case AX_ARG:
        if (axis && axis != Py_None) {
            int ax;
            if (nd_shim_axis_conv(axis, a->ndim ? a->ndim : 1, &ax, ND_AXIS_CONVERTER) < 0) return -1;
            o->mask = a->ndim ? 1ULL << ax : 0;
        } else {
            o->mask = a->ndim ? ((a->ndim >= 64 ? ~0ULL : (1ULL << a->ndim) - 1)) : 0;
        }
        break;
    }
    int rc = nd_shim_dtype_arg(dtype, &o->dtarg);
    if (rc < 0) return -1;
    if (rc) { nd_shim_unsupported("%s with a non-numeric dtype=", what); return -1; }
    /* argmax/argmin read keepdims as a bool, the ufunc reductions as an integer */
    o->keep = axmode == AX_ARG ? nd_shim_bool_arg(keepdims, 0) : nd_shim_keepdims_arg(keepdims);
    if (o->keep < 0) return -1;
    o->res = fixed >= 0 ? fixed : oracle ? probe(oracle, method, a->dtype, o->dtarg) : -1;
    return (fixed >= 0 || oracle) && o->res < 0 ? -1 : 0;
}

/* where= other than True: mean/var/std compose their own reductions and
 * do not model it */
static int where_given(PyObject *where) { return where && where != Py_True; }

/* ------------------------------------------------------------ ufunc reductions */

static PyObject *ufunc_identity(int uf)
{
    PyObject *id = PyObject_GetAttrString(nd_ufunc_object(uf), "identity");
    if (!id) return NULL;
    return id;  /* new ref; None when the ufunc has none */
}

/* out= without dtype=: NumPy's reduction promotes out's dtype with the
 * operand's (reducelike_promote_and_resolve: out's DType is the
 * operation's first operand and its output), and no small-integer upcast
 * then: np.sum(f32, out=f64) adds in float64, np.sum(f64, out=f32) in
 * float64 too, then casts. That loop as a dtype= (a new reference), or NULL
 * when out= is absent or not one array (NumPy's own checks then). */
static PyObject *out_loop_dtype(int uf, int adt, PyObject *dtype, PyObject *out, int inexact_only)
{
    if ((dtype && dtype != Py_None) || !out || out == Py_None) return NULL;
    int odt;
    if (nd_proxy_check(out)) odt = nd_proxy_dtype(out);
    else if (PyArray_Check(out)) odt = PyArray_TYPE((PyArrayObject *)out);
    else return NULL;
    /* float16's type number (23) lies past NPY_CLONGDOUBLE's: the range alone missed it */
    if (odt < 0 || (odt > NPY_CLONGDOUBLE && odt != NPY_HALF) || odt == NPY_LONGDOUBLE ||
        odt == NPY_CLONGDOUBLE)
        return NULL;
    if (inexact_only && !PyTypeNum_ISFLOAT(odt) && !PyTypeNum_ISCOMPLEX(odt)) return NULL;
    int dt[2] = {odt, adt}, loop[2], res[2];
    if (nd_shim_resolve_ufunc(uf, 2, dt, NULL, NULL, loop, res) < 0) {
        PyErr_Clear();
        return NULL;
    }
    return (PyObject *)PyArray_DescrFromType(res[0]);
}

/* the dtype of one out= array (a proxy or an ndarray), or -1 */
static int out_dtype(PyObject *out)
{
    if (out && nd_proxy_check(out)) return nd_proxy_dtype(out);
    if (out && PyArray_Check(out)) return PyArray_TYPE((PyArrayObject *)out);
    return -1;
}

/* The reduction of ufunc `uf` with NumPy's reduce semantics. oracle +
 * method name give NumPy's result dtype; axis_all: NULL axis means all
 * axes (np.sum) rather than axis 0 (ufunc.reduce). */
/* float16 add.reduce: NumPy's inner loop sums its run pairwise in float32
 * and adds that into a float16 accumulator, so only the reduced axes its
 * iterator coalesces into that one inner run (the innermost in memory:
 * strides below every kept axis's, each the next one's extent) are summed
 * in float32 as the graph's REDUCE does; over other axes NumPy adds in
 * float16, rounding at each step (a C-order m.sum(0) differs from a float32
 * sum by several float16 ulps). 1: that case, left to NumPy. */
static int half_sum_rounds_per_step(const nd_operand *a, uint64_t mask, PyObject *where)
{
    if (where && where != Py_True) return 1;
    int nd, red[ND_MAXDIMS], nred = 0;
    const npy_intp *shape;
    npy_intp ms[ND_MAXDIMS], min_kept = NPY_MAX_INTP;
    if (nd_operand_memory_strides(a->obj, &nd, &shape, ms) != 0 || nd != a->ndim) return 1;
    for (int d = 0; d < nd; d++) {
        if (shape[d] <= 1) continue;
        npy_intp s = ms[d] < 0 ? -ms[d] : ms[d];
        ms[d] = s;
        if (!(mask & (1ULL << d))) { if (s < min_kept) min_kept = s; continue; }
        int i = nred++;
        for (; i > 0 && ms[red[i - 1]] > s; i--) red[i] = red[i - 1];
        red[i] = d;
    }
    for (int i = 1; i < nred; i++)
        if (ms[red[i]] != ms[red[i - 1]] * shape[red[i - 1]]) return 1;
    return nred > 0 && ms[red[nred - 1]] >= min_kept;
}

/* A float16 total (sum, mean, var, nanmean, nanvar summing in float16)
 * that numdyn's float32 sum, rounded once, does not give: over axes NumPy
 * adds in float16 step by step, or from another dtype -- a cast into the
 * float16 total runs through NumPy's buffers, and the total is rounded to
 * float16 at each buffer (np.int8 values' sum(dtype=np.float16) over 9000
 * elements, mean(dtype=np.float16) of 20000 float32 values). 1: left to
 * NumPy. */
static int half_total_differs(const nd_operand *a, uint64_t mask, PyObject *where)
{
    return a->dtype != NPY_FLOAT16 || half_sum_rounds_per_step(a, mask, where);
}

static PyObject *reduce_core(nd_trace *t, int uf, const red_args *ra, int axis_all,
                             PyObject *oracle, const char *method, int fixed_res)
{
    nd_operand a;
    int rc = operand_array(t, ra->a, &a);
    if (rc) return NULL;
    /* fixed_res: any/all always give bool (they reduce with dtype=bool) */
    red_opts o;
    PyObject *odt = (uf == ND_UF_ADD || uf == ND_UF_MULTIPLY) && fixed_res < 0
                        ? out_loop_dtype(uf, a.dtype, ra->dtype, ra->out, 0) : NULL;
    rc = red_options(&a, ra->axis, axis_all ? AX_UFUNC : AX_FIRST, odt ? odt : ra->dtype, ra->keepdims,
                     oracle, method, fixed_res, "reduction", &o);
    Py_XDECREF(odt);
    if (rc < 0) return NULL;
    uint64_t mask = o.mask;
    int keep = o.keep, res = o.res;
    int acc = (uf == ND_UF_ADD && res == NPY_FLOAT16) ? NPY_FLOAT32 : res;
    /* prod alike: NumPy multiplies a run in float32, the runs into float16 */
    if ((uf == ND_UF_ADD || uf == ND_UF_MULTIPLY) && res == NPY_FLOAT16 &&
        half_total_differs(&a, mask, ra->where))
        return nd_shim_unsupported("a float16 sum or product over axes NumPy reduces in float16 "
                                   "step by step (not the innermost in memory) runs in NumPy");
    PyObject *ident = ufunc_identity(uf);
    if (!ident) return NULL;
    int has_initial = ra->initial != NULL;
    nd_id x = a.id;
    if (ra->where && ra->where != Py_True) {
        PyObject *fill = has_initial ? ra->initial : ident;
        if (fill == Py_None) {
            Py_DECREF(ident);
            PyErr_Format(PyExc_ValueError,
                         "reduction operation '%s' does not have an identity, so to use a where mask "
                         "one has to specify 'initial'", nd_ufunc_name(uf));
            return NULL;
        }
        nd_operand w;
        rc = nd_shim_operand(t, ra->where, &w);
        if (rc == 0 && w.weak) w.id = nd_shim_operand_node(t, &w, NPY_BOOL);
        nd_id f = rc == 0 && w.id != ND_NONE ? initial_node(t, fill, acc) : ND_NONE;
        if (f != ND_NONE) {
            /* where's shape must broadcast to a's (NumPy reports it too) */
            int nds[2] = {a.ndim, w.ndim}, nd;
            const npy_intp *shs[2] = {a.shape, w.shape};
            npy_intp sh[ND_MAXDIMS];
            if (nd_shim_broadcast(2, nds, shs, &nd, sh) < 0 || nd != a.ndim) f = ND_NONE;
        }
        if (f == ND_NONE || (x = nd_shim_node_where(t, w.id, a.id, f, acc)) == ND_NONE) {
            Py_DECREF(ident);
            if (rc == 1) return NULL;
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "where mask does not broadcast to the array");
            return NULL;
        }
    }
    if (ident == Py_None && !has_initial && count_of(&a, mask) == 0) {
        npy_intp outer = 1;
        for (int d = 0; d < a.ndim; d++) if (!(mask & (1ULL << d))) outer *= a.shape[d];
        if (outer > 0) {
            Py_DECREF(ident);
            PyErr_Format(PyExc_ValueError, "zero-size array to reduction operation %s which has no identity",
                         nd_ufunc_name(uf));
            return NULL;
        }
    }
    Py_DECREF(ident);
    nd_id init = ND_NONE;
    if (has_initial && (init = initial_node(t, ra->initial, acc)) == ND_NONE) return NULL;
    nd_id r = nd_shim_node_reduce(t, uf, x, mask, keep, acc, res, init);
    /* max/min (nanmax/nanmin) into another kind (a bool out=) reduce in the out's dtype in
     * NumPy: that out= is NumPy's */
    NPY_CASTING oc = uf == ND_UF_MAXIMUM || uf == ND_UF_MINIMUM || uf == ND_UF_FMAX || uf == ND_UF_FMIN
                         ? NPY_SAME_KIND_CASTING : NPY_UNSAFE_CASTING;
    return finish(t, r, ra->out, &a, mask, keep, oc, -1);
}

typedef struct { const char *name; int uf; } named_uf;

/* argv layouts, by spec */
#define A(i) argv[i]

/* sum/prod/nansum/nanprod: a, axis, dtype, out, keepdims, initial, where */
static PyObject *sum_impl_uf(nd_trace *t, PyObject **argv, int uf, const char *fname)
{
    red_args ra = {A(0), A(1), A(2), A(3), A(4), A(5), A(6), NULL, NULL, NULL};
    return reduce_core(t, uf, &ra, 1, np_attr(fname), NULL, -1);
}
/* np.sum(v) / np.mean(v) of a masked read a[m] (shim_masked.c) is its
 * method, as NumPy's functions call an ndarray's: a full reduction stays in
 * the graph, anything else reduces NumPy's a[m] */
static PyObject *masked_method(PyObject **argv, const char *method, const char *const *names, int n)
{
    PyObject *kw = PyDict_New(), *f = NULL, *r = NULL, *none = PyTuple_New(0);
    for (int k = 1; kw && k < n; k++)
        if (A(k) && PyDict_SetItemString(kw, names[k], A(k)) < 0) Py_CLEAR(kw);
    if (kw && none && (f = PyObject_GetAttrString(A(0), method))) r = PyObject_Call(f, none, kw);
    Py_XDECREF(f);
    Py_XDECREF(kw);
    Py_XDECREF(none);
    return r;
}

static PyObject *sum_impl(nd_trace *t, PyObject **argv)
{
    static const char *const names[] = {"a", "axis", "dtype", "out", "keepdims", "initial", "where"};
    if (nd_shim_masked_check(A(0))) return masked_method(argv, "sum", names, 7);
    return sum_impl_uf(t, argv, ND_UF_ADD, "sum");
}
static PyObject *prod_impl(nd_trace *t, PyObject **argv) { return sum_impl_uf(t, argv, ND_UF_MULTIPLY, "prod"); }

/* max/min: a, axis, out, keepdims, initial, where */
static PyObject *minmax(nd_trace *t, PyObject **argv, int uf, const char *fname)
{
    static const char *const names[] = {"a", "axis", "out", "keepdims", "initial", "where"};
    if (nd_shim_masked_check(A(0))) return masked_method(argv, fname, names, 6);
    red_args ra = {A(0), A(1), NULL, A(2), A(3), A(4), A(5), NULL, NULL, NULL};
    return reduce_core(t, uf, &ra, 1, np_attr(fname), NULL, -1);
}
static PyObject *max_impl(nd_trace *t, PyObject **argv) { return minmax(t, argv, ND_UF_MAXIMUM, "max"); }
static PyObject *min_impl(nd_trace *t, PyObject **argv) { return minmax(t, argv, ND_UF_MINIMUM, "min"); }

/* any/all: a, axis, out, keepdims, where */
static PyObject *anyall(nd_trace *t, PyObject **argv, int uf, const char *fname)
{
    red_args ra = {A(0), A(1), NULL, A(2), A(3), NULL, A(4), NULL, NULL, NULL};
    return reduce_core(t, uf, &ra, 1, np_attr(fname), NULL, NPY_BOOL);
}
static PyObject *any_impl(nd_trace *t, PyObject **argv) { return anyall(t, argv, ND_UF_LOGICAL_OR, "any"); }
static PyObject *all_impl(nd_trace *t, PyObject **argv) { return anyall(t, argv, ND_UF_LOGICAL_AND, "all"); }

/* nansum/nanprod: NaNs count as the identity */
static PyObject *nan_reduce(nd_trace *t, PyObject **argv, int uf, const char *fname, int nout_is_minmax)
{
    nd_operand a;
    int rc = operand_array(t, A(0), &a);
    if (rc) return NULL;
    if (!PyTypeNum_ISFLOAT(a.dtype) && !PyTypeNum_ISCOMPLEX(a.dtype)) {
        if (nout_is_minmax) return minmax(t, argv, uf == ND_UF_FMAX ? ND_UF_MAXIMUM : ND_UF_MINIMUM,
                                          uf == ND_UF_FMAX ? "max" : "min");
        return sum_impl_uf(t, argv, uf, fname);
    }
    if (nout_is_minmax) {
        /* fmax/fmin skip NaNs; an all-NaN slice gives NaN, and NumPy warns
         * "All-NaN slice encountered": a +x marked to do so (graph.h) */
        red_args ra = {a.obj, A(1), NULL, A(2), A(3), A(4), A(5), NULL, NULL, NULL};
        PyObject *r = reduce_core(t, uf, &ra, 1, np_attr(fname), NULL, -1);
        if (!r || (A(2) && A(2) != Py_None) || !nd_proxy_check(r)) return r;
        nd_id v = nd_proxy_read(r), w = v == ND_NONE ? ND_NONE : unary(t, ND_UF_POSITIVE, v);
        int scalar = nd_proxy_is_scalar(r);
        Py_DECREF(r);
        if (w == ND_NONE || mark_data_warn(t, w) < 0) return NULL;
        PyObject *p = nd_shim_wrap(t, w, scalar);
        red_opts o;
        if (p && red_options(&a, A(1), AX_UFUNC, NULL, A(3), NULL, NULL, -1, fname, &o) == 0)
            nd_proxy_set_korder_reduced(p, a.obj, o.mask, o.keep);
        PyErr_Clear();
        return p;
    }
    nd_id isn = unary(t, ND_UF_ISNAN, a.id);
    nd_id fill = isn == ND_NONE ? ND_NONE : const_long(t, uf == ND_UF_MULTIPLY ? 1 : 0, a.dtype);
    nd_id x = fill == ND_NONE ? ND_NONE : nd_shim_node_where(t, isn, fill, a.id, a.dtype);
    /* NumPy's nansum reduces a copy of a: a's order */
    PyObject *px = x == ND_NONE ? NULL : nd_shim_wrap_k(t, x, 0, 1, &a.obj, 0);
    if (!px) return NULL;
    red_args ra = {px, A(1), A(2), A(3), A(4), A(5), A(6), NULL, NULL, NULL};
    PyObject *r = reduce_core(t, uf, &ra, 1, np_attr(fname), NULL, -1);
    Py_DECREF(px);
    return r;
}
static PyObject *nansum_impl(nd_trace *t, PyObject **argv) { return nan_reduce(t, argv, ND_UF_ADD, "nansum", 0); }
static PyObject *nanprod_impl(nd_trace *t, PyObject **argv) { return nan_reduce(t, argv, ND_UF_MULTIPLY, "nanprod", 0); }
static PyObject *nanmax_impl(nd_trace *t, PyObject **argv) { return nan_reduce(t, argv, ND_UF_FMAX, "nanmax", 1); }
static PyObject *nanmin_impl(nd_trace *t, PyObject **argv) { return nan_reduce(t, argv, ND_UF_FMIN, "nanmin", 1); }

/* ------------------------------------------------------------ arg reductions */

/* argmax/argmin: a, axis, out, keepdims */
static PyObject *argred(nd_trace *t, PyObject **argv, int which, const char *name)
{
    nd_operand a;
    int rc = operand_array(t, A(0), &a);
    if (rc) return NULL;
    red_opts o;
    if (red_options(&a, A(1), AX_ARG, NULL, A(3), NULL, NULL, -1, name, &o) < 0) return NULL;
    uint64_t mask = o.mask;
    npy_intp outer = 1;
    for (int d = 0; d < a.ndim; d++) if (!(mask & (1ULL << d))) outer *= a.shape[d];
    if (count_of(&a, mask) == 0 && outer > 0) {
        PyErr_Format(PyExc_ValueError, "attempt to get %s of an empty sequence", name);
        return NULL;
    }
    nd_id r = nd_shim_node_reduce(t, which, a.id, mask, o.keep, a.dtype, NPY_INT64, ND_NONE);
    return finish(t, r, A(2), NULL, 0, 0, NPY_UNSAFE_CASTING, NPY_INTP);
}
static PyObject *argmax_impl(nd_trace *t, PyObject **argv) { return argred(t, argv, ND_RED_ARGMAX, "argmax"); }
static PyObject *argmin_impl(nd_trace *t, PyObject **argv) { return argred(t, argv, ND_RED_ARGMIN, "argmin"); }

/* ------------------------------------------------------------ mean/var/std */

static int mean_acc(int dt, int dtarg)
{
    if (dtarg >= 0) return dtarg;
    if (dt == NPY_BOOL || PyTypeNum_ISINTEGER(dt)) return NPY_FLOAT64;
    if (dt == NPY_FLOAT16) return NPY_FLOAT32;
    return dt;
}

/* NumPy's RuntimeWarning for a mean/var over too few elements (a
 * property of the shapes, so warned while tracing; a replay would not) */
static int empty_slice_warning(nd_trace *t, const char *msg)
{
    if (PyErr_WarnEx(PyExc_RuntimeWarning, msg, 1) < 0) return -1;
    nd_trace_not_replayable(t);
    return 0;
}

/* mean: a, axis, dtype, out, keepdims, where */
/* into: -1, or the dtype of the out= the sum is made in (_mean: umr_sum
 * with out=, then the division in out) */
static nd_id mean_node(nd_trace *t, nd_operand *a, uint64_t mask, int keep, int acc, PyObject *out, int into)
{
    nd_id s = nd_shim_node_reduce(t, ND_UF_ADD, a->id, mask, keep, acc, acc, ND_NONE);
    if (s == ND_NONE) return ND_NONE;
    if (into >= 0 && (s = nd_shim_node_cast(t, s, into)) == ND_NONE) return ND_NONE;
    PyObject *n = PyLong_FromSsize_t(count_of(a, mask));
    if (!n) return ND_NONE;
    nd_id r = divide_result(t, s, n, out);
    Py_DECREF(n);
    return r;
}

/* mean(where=w), as _methods._mean: sum(a, where=w) in the accumulator
 * dtype over rcount = sum(broadcast_to(w, a.shape), axis, intp), divided in
 * the promoted dtype (true_divide(ret, rcount), float64 for float32 sums)
 * and cast back. The counts are taken from w's values here (a lazy mask is
 * computed: a recorded break), so the trace is not replayed with another
 * mask; a count of 0 (NumPy warns "Mean of empty slice.") and out= are
 * left to NumPy. A composition of sums and a division: differentiable. */
static PyObject *mean_where(nd_trace *t, PyObject **argv, const nd_operand *a, const red_opts *o)
{
    if (A(3) && A(3) != Py_None)
        return nd_shim_unsupported("numpy.mean with where= and out= is not supported in-graph");
    PyObject *w = nd_proxy_check(A(5)) ? nd_trace_materialize(A(5), "numpy.mean with where= needs the mask's values")
                                       : Py_NewRef(A(5));
    PyObject *np = w ? PyImport_ImportModule("numpy") : NULL;
    PyObject *wa = np ? PyArray_FROM_O(w) : NULL, *shape = NULL, *wb = NULL, *cnt = NULL, *zero = NULL;
    PyObject *r = NULL, *s = NULL;
    if (!wa) goto done;
    if (PyArray_TYPE((PyArrayObject *)wa) != NPY_BOOL) {
        r = nd_shim_unsupported("numpy.mean with a non-bool where= is not supported in-graph");
        goto done;
    }
    if (!(shape = PyTuple_New(a->ndim))) goto done;
    for (int d = 0; d < a->ndim; d++) {
        PyObject *n = PyLong_FromSsize_t(a->shape[d]);
        if (!n) goto done;
        PyTuple_SET_ITEM(shape, d, n);
    }
    wb = PyObject_CallMethod(np, "broadcast_to", "OO", wa, shape);
    if (!wb) {  /* NumPy reports a mask that does not broadcast */
        PyErr_Clear();
        r = nd_shim_unsupported("numpy.mean with a where= that does not broadcast");
        goto done;
    }
    {
        PyObject *kw = Py_BuildValue("{sOsOsO}", "axis", A(1) ? A(1) : Py_None, "dtype",
                                     (PyObject *)&PyLongArrType_Type, "keepdims", o->keep ? Py_True : Py_False);
        PyObject *sum = kw ? PyObject_GetAttrString(np, "sum") : NULL;
        PyObject *args = sum ? PyTuple_Pack(1, wb) : NULL;
        if (args) cnt = PyObject_Call(sum, args, kw);
        Py_XDECREF(args);
        Py_XDECREF(sum);
        Py_XDECREF(kw);
    }
    if (!cnt || !(zero = PyArray_FROM_OTF(cnt, NPY_INTP, NPY_ARRAY_CARRAY_RO))) goto done;
    int empty = 0;
    const npy_intp *cv = PyArray_DATA((PyArrayObject *)zero);
    for (npy_intp k = 0; k < PyArray_SIZE((PyArrayObject *)zero); k++) empty |= cv[k] == 0;
    if (empty) {
        r = nd_shim_unsupported("numpy.mean(where=) over an empty slice (NumPy warns)");
        goto done;
    }
    nd_trace_not_replayable(t);  /* the counts are this mask's */
    red_args ra = {A(0), A(1), NULL, NULL, A(4), NULL, wa, NULL, NULL, NULL};
    PyObject *acc = (PyObject *)PyArray_DescrFromType(mean_acc(a->dtype, o->dtarg));
    ra.dtype = acc;
    s = acc ? reduce_core(t, ND_UF_ADD, &ra, 1, np_attr("sum"), NULL, -1) : NULL;
    Py_XDECREF(acc);
    if (!s) goto done;
    nd_operand c;
    if (nd_shim_operand(t, cnt, &c) != 0) goto done;
    nd_id q = binary(t, ND_UF_TRUE_DIVIDE, nd_proxy_read(s), c.id);
    if (q == ND_NONE || (q = nd_shim_node_cast(t, q, o->res)) == ND_NONE) goto done;
    r = finish(t, q, NULL, a, o->mask, o->keep, NPY_UNSAFE_CASTING, -1);
done:
    Py_XDECREF(w);
    Py_XDECREF(np);
    Py_XDECREF(wa);
    Py_XDECREF(shape);
    Py_XDECREF(wb);
    Py_XDECREF(cnt);
    Py_XDECREF(zero);
    Py_XDECREF(s);
    return r;
}

static PyObject *mean_impl(nd_trace *t, PyObject **argv)
{
    static const char *const names[] = {"a", "axis", "dtype", "out", "keepdims", "where"};
    if (nd_shim_masked_check(A(0))) return masked_method(argv, "mean", names, 6);
    nd_operand a;
    red_opts o;
    if (operand_array(t, A(0), &a)) return NULL;
    /* _mean sums with out= (umr_sum): out's dtype joins the loop's */
    PyObject *odt = where_given(A(5)) ? NULL : out_loop_dtype(ND_UF_ADD, a.dtype, A(2), A(3), 1);
    int into = odt ? out_dtype(A(3)) : -1;
    int rc = red_options(&a, A(1), AX_STRICT, odt ? odt : A(2), A(4), np_attr("mean"), NULL, -1, "numpy.mean", &o);
    Py_XDECREF(odt);
    if (rc < 0) return NULL;
    if (where_given(A(5))) return mean_where(t, argv, &a, &o);
    if (count_of(&a, o.mask) == 0 && empty_slice_warning(t, "Mean of empty slice") < 0) return NULL;
    if (mean_acc(a.dtype, o.dtarg) == NPY_FLOAT16 && half_total_differs(&a, o.mask, NULL))
        return nd_shim_unsupported("numpy.mean summing in float16 over axes NumPy sums step by step "
                                   "(or from another dtype) runs in NumPy");
    nd_id m = mean_node(t, &a, o.mask, o.keep, mean_acc(a.dtype, o.dtarg), A(3), into);
    if (m == ND_NONE || (m = nd_shim_node_cast(t, m, o.res)) == ND_NONE) return NULL;
    return finish(t, m, A(3), &a, o.mask, o.keep, NPY_UNSAFE_CASTING, -1);
}

/* The mean of a masked read a[m] (shim_masked.c), kept in the graph: w is
 * where(m, a, 0) over a's full shape, cnt the int64 count of the selected
 * elements. As _methods._mean of NumPy's a[m]: the sum in mean's
 * accumulator dtype, divided by the count, an np.intp as _mean's rcount
 * (a float32 sum is divided in float64 and rounded back: a count past
 * 2**24 is not a float32 value), a NumPy scalar; where the count is 0 it warns
 * "Mean of empty slice", then the division 0/0 warns under the user's
 * errstate (ND_F_DATA_WARN | ND_F_FP_KEPT, graph.h). */
PyObject *nd_shim_masked_mean(nd_trace *t, nd_id w, nd_id cnt, int dtype, int dtarg)
{
    int acc = mean_acc(dtype, dtarg);
    int res = dtarg >= 0 ? dtarg : dtype == NPY_FLOAT16 ? NPY_FLOAT16 : acc;
    nd_id s = nd_shim_node_reduce(t, ND_UF_ADD, w, ~0ULL, 0, acc, acc, ND_NONE);
    if (s == ND_NONE) return NULL;
    int dt[2] = {acc, NPY_INTP}, weak[2] = {0, 0}, loop[2], out;
    PyObject *one = PyLong_FromLong(1);
    PyObject *vals[2] = {NULL, one};
    int rc = one ? nd_shim_resolve_ufunc(ND_UF_TRUE_DIVIDE, 2, dt, weak, vals, loop, &out) : -1;
    Py_XDECREF(one);
    if (rc < 0) return NULL;
    nd_id c = nd_shim_node_cast(t, cnt, loop[1]);
    nd_id in[2] = {s, c};
    nd_id q = c == ND_NONE ? ND_NONE : nd_shim_node_ufunc(t, ND_UF_TRUE_DIVIDE, in, loop, out, 0);
    if (q == ND_NONE) return NULL;
    nd_node *d = nd_graph_node(nd_trace_graph(t), q);
    d->flags |= ND_F_DATA_WARN | ND_F_FP_KEPT;
    if (PyArray_CanCastSafely(NPY_INTP, acc) && d->ndim == 0 && !d->value)
        d->flags |= ND_F_SCALAR_MATH;  /* "scalar divide", as divide_result */
    if ((q = nd_shim_node_cast(t, q, res)) == ND_NONE) return NULL;
    return nd_shim_wrap(t, q, 1);
}

/* var/std: a, axis, dtype, out, ddof, keepdims, where, mean, correction */
static PyObject *var_std(nd_trace *t, PyObject **argv, int is_std)
{
    const char *fname = is_std ? "std" : "var";
    if (where_given(A(6))) return nd_shim_unsupported("numpy.%s with where= is not supported in-graph", fname);
    if (A(7)) return nd_shim_unsupported("numpy.%s with mean= is not supported in-graph", fname);
    PyObject *ddof = A(4);
    if (A(8)) {
        if (ddof) {
            PyErr_SetString(PyExc_ValueError, "ddof and correction can't be provided simultaneously.");
            return NULL;
        }
        ddof = A(8);
    }
    nd_operand a;
    red_opts o;
    if (operand_array(t, A(0), &a) ||
        red_options(&a, A(1), AX_STRICT, A(2), A(5), np_attr(fname), NULL, -1,
                    is_std ? "numpy.std" : "numpy.var", &o) < 0)
        return NULL;
    uint64_t mask = o.mask;
    int dtarg = o.dtarg;
    /* _var of float16 sums in float16 (no dtype=): step by step over outer axes */
    int acc = dtarg >= 0 ? dtarg : (a.dtype == NPY_BOOL || PyTypeNum_ISINTEGER(a.dtype)) ? NPY_FLOAT64 : a.dtype;
    if (acc == NPY_FLOAT16 && half_total_differs(&a, mask, NULL))
        return nd_shim_unsupported("numpy.%s summing in float16 over axes NumPy sums step by step "
                                   "(or from another dtype) runs in NumPy", fname);
    /* as _methods._var: ddof >= rcount warns first, compared as Python does */
    PyObject *n_obj = PyLong_FromSsize_t(count_of(&a, mask));
    PyObject *dd = ddof && ddof != Py_None ? Py_NewRef(ddof) : PyLong_FromLong(0);
    int few = n_obj && dd ? PyObject_RichCompareBool(dd, n_obj, Py_GE) : -1;
    Py_XDECREF(n_obj);
    Py_XDECREF(dd);
    if (few < 0 || (few && empty_slice_warning(t, "Degrees of freedom <= 0 for slice") < 0))
        return NULL;
    /* as numpy/_core/_methods.py _var: the mean in dtype (f8 for ints), acc above */
    nd_id m = mean_node(t, &a, mask, 1, acc, NULL, -1);
    if (m == ND_NONE) return NULL;
    nd_id d = binary(t, ND_UF_SUBTRACT, a.id, m);
    if (d == ND_NONE) return NULL;
    nd_id sq;
    if (PyTypeNum_ISCOMPLEX(nd_shim_node_dtype(t, d))) {
        nd_id re = nd_shim_node_part(t, d, 0), im = re == ND_NONE ? ND_NONE : nd_shim_node_part(t, d, 1);
        nd_id re2 = im == ND_NONE ? ND_NONE : unary(t, ND_UF_SQUARE, re);
        nd_id im2 = re2 == ND_NONE ? ND_NONE : unary(t, ND_UF_SQUARE, im);
        sq = im2 == ND_NONE ? ND_NONE : binary(t, ND_UF_ADD, re2, im2);
    } else {
        /* np.square, as _methods._var: its overflow warning names square */
        sq = unary(t, ND_UF_SQUARE, d);
    }
    if (sq == ND_NONE) return NULL;
    /* _var's last umr_sum is given out=: out's dtype joins its loop
     * (out_loop_dtype; the mean before it is not) */
    int sacc = dtarg >= 0 ? nd_shim_complex_part_dtype(dtarg) : nd_shim_node_dtype(t, sq);
    PyObject *odt = dtarg >= 0 ? NULL : out_loop_dtype(ND_UF_ADD, sacc, NULL, A(3), 1);
    int into_out = odt != NULL;  /* then its result is out's, not rounded through var's dtype */
    if (odt) sacc = nd_shim_complex_part_dtype(((PyArray_Descr *)odt)->type_num);
    Py_XDECREF(odt);
    nd_id ss = nd_shim_node_reduce(t, ND_UF_ADD, sq, mask, o.keep, sacc, sacc, ND_NONE);
    if (ss == ND_NONE) return NULL;
    /* into out=: _var's sum is made in out, divided and rooted there */
    if (into_out && (ss = nd_shim_node_cast(t, ss, out_dtype(A(3)))) == ND_NONE) return NULL;
    /* rcount = max(n - ddof, 0), a Python number as in NumPy */
    PyObject *cnt = PyLong_FromSsize_t(count_of(&a, mask)), *rc_obj = NULL;
    if (!cnt) return NULL;
    if (ddof && ddof != Py_None) {
        PyObject *diff = PyNumber_Subtract(cnt, ddof);
        Py_DECREF(cnt);
        if (!diff) return NULL;
        PyObject *zero = PyLong_FromLong(0);
        int neg = zero ? PyObject_RichCompareBool(diff, zero, Py_LT) : -1;
        if (neg < 0) { Py_XDECREF(zero); Py_DECREF(diff); return NULL; }
        if (neg) { Py_DECREF(diff); rc_obj = zero; } else { Py_DECREF(zero); rc_obj = diff; }
        if (!PyLong_Check(rc_obj) && !PyFloat_Check(rc_obj)) {
            PyObject *f = PyNumber_Float(rc_obj);
            Py_DECREF(rc_obj);
            if (!(rc_obj = f)) return NULL;
        }
    } else {
        rc_obj = cnt;
    }
    nd_id v = divide_result(t, ss, rc_obj, A(3));
    Py_DECREF(rc_obj);
    if (v == ND_NONE) return NULL;
    if (is_std && (v = unary(t, ND_UF_SQRT, v)) == ND_NONE) return NULL;
    if (!into_out && (v = nd_shim_node_cast(t, v, o.res)) == ND_NONE) return NULL;
    return finish(t, v, A(3), &a, mask, o.keep, is_std ? NPY_SAME_KIND_CASTING : NPY_UNSAFE_CASTING, -1);
}
static PyObject *var_impl(nd_trace *t, PyObject **argv) { return var_std(t, argv, 0); }
static PyObject *std_impl(nd_trace *t, PyObject **argv) { return var_std(t, argv, 1); }

/* nanvar/nanstd of a real float array, as numpy/lib/_nanfunctions_impl.py
 * computes them: NaNs replaced by 0, the mean over the non-NaN count
 * (divided with errors ignored), deviations zeroed at the NaNs, their
 * squares summed and divided by dof = count - ddof (with errors ignored;
 * "Degrees of freedom <= 0 for slice." and NaN where dof <= 0, ND_F_DATA_WARN
 * on the dof node). A composition of sums, where and a division, so it
 * stays in the graph and is differentiable (zero gradient at the NaNs).
 * Before, NumPy's Python code ran on the proxy and its scalar division
 * (a.dtype.type(a / b)) took the value out of the graph. */
static PyObject *nanvar_std(nd_trace *t, PyObject **argv, int is_std)
{
    const char *fname = is_std ? "nanstd" : "nanvar";
    nd_operand a;
    if (operand_array(t, A(0), &a)) return NULL;
    if (!PyTypeNum_ISFLOAT(a.dtype))
        return PyTypeNum_ISCOMPLEX(a.dtype)
                   ? nd_shim_unsupported("numpy.%s of complex values is not supported in-graph", fname)
                   : var_std(t, argv, is_std);  /* no NaNs: NumPy calls np.var/np.std */
    if (where_given(A(6)) || A(7) || (A(3) && A(3) != Py_None))
        return nd_shim_unsupported("numpy.%s with where=, mean= or out= is not supported in-graph", fname);
    PyObject *ddof = A(4);
    if (A(8)) {
        int nz = ddof ? PyObject_IsTrue(ddof) : 0;
        if (nz < 0) return NULL;
        if (nz) {
            PyErr_SetString(PyExc_ValueError, "ddof and correction can't be provided simultaneously.");
            return NULL;
        }
        ddof = A(8);
    }
    int ddt = !ddof || ddof == Py_None || (PyLong_Check(ddof) && !PyBool_Check(ddof)) ? NPY_INT64
              : PyFloat_Check(ddof) ? NPY_FLOAT64 : -1;
    if (ddt < 0) return nd_shim_unsupported("numpy.%s with a ddof= that is not a Python int or float", fname);
    red_opts o;
    if (red_options(&a, A(1), AX_UFUNC, A(2), A(5), np_attr(fname), NULL, -1, fname, &o) < 0) return NULL;
    uint64_t mask = o.mask;
    int sdt = o.dtarg >= 0 ? o.dtarg : a.dtype;  /* np.sum(arr, dtype=dtype)'s result */
    int sacc = sdt == NPY_FLOAT16 ? NPY_FLOAT32 : sdt;
    if (sdt == NPY_FLOAT16 && half_total_differs(&a, mask, NULL))
        return nd_shim_unsupported("numpy.%s summing in float16 over axes NumPy sums step by step "
                                   "(or from another dtype) runs in NumPy", fname);
    nd_id isn = unary(t, ND_UF_ISNAN, a.id);
    nd_id zero = isn == ND_NONE ? ND_NONE : const_long(t, 0, a.dtype);
    nd_id arr = zero == ND_NONE ? ND_NONE : nd_shim_node_where(t, isn, zero, a.id, a.dtype);
    nd_id ok = arr == ND_NONE ? ND_NONE : unary(t, ND_UF_LOGICAL_NOT, isn);
    nd_id cnt = ok == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, ok, mask, 1, NPY_INT64, NPY_INT64, ND_NONE);
    nd_id avg = cnt == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, arr, mask, 1, sacc, sdt, ND_NONE);
    /* np.divide(avg, cnt, out=avg, casting='unsafe') with errors ignored:
     * over a count >= 1 (an all-NaN slice's mean only meets masked
     * deviations), then np.subtract(arr, avg, out=arr, casting='unsafe') */
    nd_id one = avg == ND_NONE ? ND_NONE : const_long(t, 1, NPY_INT64);
    nd_id cnt1 = one == ND_NONE ? ND_NONE : binary(t, ND_UF_MAXIMUM, cnt, one);
    nd_id q = cnt1 == ND_NONE ? ND_NONE : binary(t, ND_UF_TRUE_DIVIDE, avg, cnt1);
    if (q == ND_NONE || (q = nd_shim_node_cast(t, q, sdt)) == ND_NONE) return NULL;
    nd_id dev = binary(t, ND_UF_SUBTRACT, arr, q);
    if (dev == ND_NONE || (dev = nd_shim_node_cast(t, dev, a.dtype)) == ND_NONE) return NULL;
    nd_id dz = nd_shim_node_where(t, isn, zero, dev, a.dtype);
    nd_id sq = dz == ND_NONE ? ND_NONE : binary(t, ND_UF_MULTIPLY, dz, dz);
    nd_id var = sq == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, sq, mask, o.keep, sacc, sdt, ND_NONE);
    /* the count as var's shape (NumPy squeezes the kept dims), minus ddof */
    nd_id c2 = var == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, ok, mask, o.keep, NPY_INT64, NPY_INT64, ND_NONE);
    nd_id dd = c2 == ND_NONE ? ND_NONE
               : ddt == NPY_INT64 && (!ddof || ddof == Py_None) ? const_long(t, 0, NPY_INT64)
               : nd_shim_node_scalar(t, ddof, ddt, 0);
    nd_id dof = dd == ND_NONE ? ND_NONE : binary(t, ND_UF_SUBTRACT, c2, dd);
    if (dof == ND_NONE || mark_data_warn(t, dof) < 0) return NULL;
    /* divided with errors ignored: where dof <= 0 the result is NaN
     * (NumPy's _copyto(var, np.nan, isbad)), so divide by 1 there */
    PyObject *nan = PyFloat_FromDouble(NAN);
    nd_id nn = nan ? nd_shim_node_scalar(t, nan, sdt, 0) : ND_NONE;
    Py_XDECREF(nan);
    nd_id z0 = nn == ND_NONE ? ND_NONE : const_long(t, 0, NPY_INT64);
    nd_id bad = z0 == ND_NONE ? ND_NONE : binary(t, ND_UF_LESS_EQUAL, dof, z0);
    nd_id dsafe = bad == ND_NONE ? ND_NONE : nd_shim_node_where(t, bad, one, dof, nd_shim_node_dtype(t, dof));
    nd_id v = dsafe == ND_NONE ? ND_NONE : binary(t, ND_UF_TRUE_DIVIDE, var, dsafe);
    if (v == ND_NONE || (v = nd_shim_node_cast(t, v, sdt)) == ND_NONE) return NULL;
    if ((v = nd_shim_node_where(t, bad, nn, v, sdt)) == ND_NONE) return NULL;
    if (is_std && (v = unary(t, ND_UF_SQRT, v)) == ND_NONE) return NULL;
    if ((v = nd_shim_node_cast(t, v, o.res)) == ND_NONE) return NULL;
    return finish(t, v, NULL, &a, mask, o.keep, NPY_UNSAFE_CASTING, -1);
}
static PyObject *nanvar_impl(nd_trace *t, PyObject **argv) { return nanvar_std(t, argv, 0); }
static PyObject *nanstd_impl(nd_trace *t, PyObject **argv) { return nanvar_std(t, argv, 1); }

/* nanmean: a, axis, dtype, out, keepdims, where */
static PyObject *nanmean_impl(nd_trace *t, PyObject **argv)
{
    if (where_given(A(5))) return nd_shim_unsupported("numpy.nanmean with where= is not supported in-graph");
    nd_operand a;
    if (operand_array(t, A(0), &a)) return NULL;
    if (!PyTypeNum_ISFLOAT(a.dtype) && !PyTypeNum_ISCOMPLEX(a.dtype)) return mean_impl(t, argv);
    red_opts o;
    if (red_options(&a, A(1), AX_UFUNC, A(2), A(4), np_attr("nanmean"), NULL, -1, "numpy.nanmean", &o) < 0)
        return NULL;
    uint64_t mask = o.mask;
    int keep = o.keep, acc = mean_acc(a.dtype, o.dtarg);
    /* NumPy's nanmean of float16 (no dtype=) divides np.sum(a with nans
     * zeroed): a float16 total, rounded before the division; see
     * half_sum_rounds_per_step for the axes it sums in float16 */
    int tot = a.dtype == NPY_FLOAT16 && o.dtarg < 0 ? NPY_FLOAT16 : acc;
    if (tot == NPY_FLOAT16 && half_total_differs(&a, mask, NULL))
        return nd_shim_unsupported("numpy.nanmean summing in float16 over axes NumPy sums step by step "
                                   "(or from another dtype) runs in NumPy");
    nd_id isn = unary(t, ND_UF_ISNAN, a.id);
    nd_id zero = isn == ND_NONE ? ND_NONE : const_long(t, 0, a.dtype);
    nd_id x = zero == ND_NONE ? ND_NONE : nd_shim_node_where(t, isn, zero, a.id, a.dtype);
    nd_id s = x == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, x, mask, keep, acc, tot, ND_NONE);
    nd_id ok = s == ND_NONE ? ND_NONE : unary(t, ND_UF_LOGICAL_NOT, isn);
    nd_id cnt = ok == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, ok, mask, keep, NPY_INT64, NPY_INT64, ND_NONE);
    nd_id q = cnt == ND_NONE ? ND_NONE : binary(t, ND_UF_TRUE_DIVIDE, s, cnt);
    if (q == ND_NONE) return NULL;
    /* NumPy divides by the count with errors ignored and warns "Mean of
     * empty slice" where it is 0 (graph.h) */
    if (mark_data_warn(t, q) < 0) return NULL;
    /* s / cnt promotes int64 with acc: keep acc's precision like NumPy */
    if ((q = nd_shim_node_cast(t, q, o.res)) == ND_NONE) return NULL;
    return finish(t, q, A(3), &a, mask, keep, NPY_SAME_KIND_CASTING, -1);
}

/* ------------------------------------------------------------ ptp, count_nonzero */

/* ptp: a, axis, out, keepdims */
static PyObject *ptp_impl(nd_trace *t, PyObject **argv)
{
    nd_operand a;
    int rc = operand_array(t, A(0), &a);
    if (rc) return NULL;
    PyObject *maxargs[6] = {a.obj, A(1), NULL, A(3), NULL, NULL};
    PyObject *hi = minmax(t, maxargs, ND_UF_MAXIMUM, "max");
    if (!hi) return NULL;
    PyObject *lo = minmax(t, maxargs, ND_UF_MINIMUM, "min");
    if (!lo) { Py_DECREF(hi); return NULL; }
    nd_id h = nd_proxy_read(hi), l = nd_proxy_read(lo);
    Py_DECREF(hi);
    Py_DECREF(lo);
    if (h == ND_NONE || l == ND_NONE) return NULL;
    nd_id r = binary(t, ND_UF_SUBTRACT, h, l);
    if (r == ND_NONE) return NULL;  /* NumPy's TypeError for bool (no subtract loop) */
    uint64_t mask = 0;
    int keep = 0;
    red_opts o;
    if (red_options(&a, A(1), AX_UFUNC, NULL, A(3), NULL, NULL, -1, "numpy.ptp", &o) == 0) {
        mask = o.mask;
        keep = o.keep;
    } else {
        PyErr_Clear();
    }
    return finish(t, r, A(2), &a, mask, keep, NPY_SAME_KIND_CASTING, -1);
}

/* count_nonzero: a, axis, keepdims */
static PyObject *count_nonzero_impl(nd_trace *t, PyObject **argv)
{
    nd_operand a;
    red_opts o;
    if (operand_array(t, A(0), &a) ||
        red_options(&a, A(1), AX_UFUNC, NULL, A(2), NULL, NULL, -1, "numpy.count_nonzero", &o) < 0)
        return NULL;
    nd_id nz = nd_shim_node_cast(t, a.id, NPY_BOOL);
    nd_id r = nz == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, nz, o.mask, o.keep, NPY_INT64, NPY_INT64, ND_NONE);
    return finish(t, r, NULL, &a, o.mask, o.keep, NPY_UNSAFE_CASTING, -1);
}

/* ------------------------------------------------------------ scans */

/* ufunc.accumulate's axis as NumPy's PyUFunc_GenericReduction reads it:
 * absent is axis 0 (no axis of a 0-d array), None every axis, a tuple its
 * elements in order (each an integer, bools refused, in range), anything
 * else one integer (0 or -1 name no axis of a 0-d array); then a 0-d array
 * is a TypeError and anything but one axis a ValueError. */
static int accumulate_axis(PyObject *axis, int ndim, int *ax)
{
    static const char nobool[] = "an integer is required";
    Py_ssize_t naxes = 0;
    *ax = 0;
    if (!axis) {
        naxes = ndim ? 1 : 0;
    } else if (axis == Py_None) {
        naxes = ndim;
    } else if (PyTuple_Check(axis)) {
        naxes = PyTuple_GET_SIZE(axis);
        if (naxes > NPY_MAXDIMS) {
            PyErr_SetString(PyExc_ValueError, "too many values for 'axis'");
            return -1;
        }
        for (Py_ssize_t i = 0; i < naxes; i++) {
            PyObject *o = PyTuple_GET_ITEM(axis, i);
            int a;
            if ((!PyTuple_Check(o) && nd_shim_axis_bool_refused(o, nobool) < 0) ||
                nd_shim_axis_conv(o, ndim, &a, ND_AXIS_INDEX) < 0)
                return -1;
            if (i == 0) *ax = a;
        }
    } else {
        if (nd_shim_axis_bool_refused(axis, nobool) < 0) return -1;
        naxes = 1;
        if (ndim == 0) {
            /* 0 and -1 are no axis there; another integer is out of range */
            int a;
            if (nd_shim_axis_conv(axis, 1, &a, ND_AXIS_INDEX) == 0) naxes = 0;
            else if (PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
            else { PyErr_Clear(); return nd_shim_axis_conv(axis, 0, &a, ND_AXIS_INDEX); }
        } else if (nd_shim_axis_conv(axis, ndim, ax, ND_AXIS_INDEX) < 0) {
            return -1;
        }
    }
    if (ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "cannot accumulate on a scalar");
        return -1;
    }
    if (naxes != 1) {
        PyErr_SetString(PyExc_ValueError, "accumulate does not allow multiple axes");
        return -1;
    }
    return 0;
}

static PyObject *scan_core(nd_trace *t, int uf, PyObject *aobj, PyObject *axis, PyObject *dtype,
                           PyObject *out, PyObject *oracle, const char *method, int axis_none_flat)
{
    nd_operand a;
    red_opts o;
    if (operand_array(t, aobj, &a) ||
        red_options(&a, axis, AX_SKIP, dtype, NULL, oracle, method, -1, "cumulative op", &o) < 0)
        return NULL;
    int res = o.res;
    nd_id x = a.id;
    int ax = 0;
    /* cumsum & co: PyArray_AxisConverter, None the flattened array */
    if (!axis_none_flat) {
        if (accumulate_axis(axis, a.ndim, &ax) < 0) return NULL;
    } else if (!axis || axis == Py_None) {
        npy_intp n = size_of(&a);
        if ((x = nd_shim_node_reshape(t, a.id, 1, &n)) == ND_NONE) return NULL;
    } else {
        if (a.ndim == 0) {
            /* NumPy accumulates a 0-d value as a 1-element 1-d array */
            npy_intp one = 1;
            if (nd_shim_axis_conv(axis, 1, &ax, ND_AXIS_CONVERTER) < 0 ||
                (x = nd_shim_node_reshape(t, a.id, 1, &one)) == ND_NONE)
                return NULL;
        } else if (nd_shim_axis_conv(axis, a.ndim, &ax, ND_AXIS_CONVERTER) < 0) {
            return NULL;
        }
    }
    nd_id r = nd_shim_node_scan(t, uf, x, ax, res, res);
    if (r == ND_NONE) return NULL;
    if (out && out != Py_None) return finish(t, r, out, NULL, 0, 0, NPY_UNSAFE_CASTING, -1);
    PyObject *p = nd_shim_wrap(t, r, 0);
    if (p && x == a.id) nd_proxy_set_korder(p, 1, &aobj, 1);
    return p;
}

/* cumsum/cumprod: a, axis, dtype, out */
static PyObject *cumsum_impl(nd_trace *t, PyObject **argv)
{
    return scan_core(t, ND_UF_ADD, A(0), A(1), A(2), A(3), np_attr("cumsum"), NULL, 1);
}
static PyObject *cumprod_impl(nd_trace *t, PyObject **argv)
{
    return scan_core(t, ND_UF_MULTIPLY, A(0), A(1), A(2), A(3), np_attr("cumprod"), NULL, 1);
}

/* ------------------------------------------------------------ ufunc methods */

static const nd_shim_def ureduce_def = {"reduce", "array|axis,dtype,out,keepdims,initial,where", NULL, 0};
static const nd_shim_def uaccum_def = {"accumulate", "array|axis,dtype,out", NULL, 0};

static int binary_single_out(int uf)
{
    return nd_ufunc_nin(uf) == 2 && nd_ufunc_nout(uf) == 1;
}

static PyObject *method_fallback(int uf, const char *m, PyObject *args, PyObject *kwargs, const char *why)
{
    PyObject *f = PyObject_GetAttrString(nd_ufunc_object(uf), m);
    if (!f) return NULL;
    char buf[256];
    snprintf(buf, sizeof buf, "numpy.%s.%s %s", nd_ufunc_name(uf), m, why);
    PyObject *r = nd_trace_fallback_call(f, args, kwargs, buf);
    Py_DECREF(f);
    return r;
}

/* ufunc.reduce/accumulate take out=(array,) as a keyword (as
 * __array_ufunc__ always passes it); a tuple given positionally is NumPy's
 * to refuse (finish hands it over) */
static void method_out(PyObject *args, PyObject **argv)
{
    PyObject *o = argv[3];
    if (o && PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 1 && PyTuple_GET_SIZE(args) <= 3)
        argv[3] = PyTuple_GET_ITEM(o, 0);
}

PyObject *nd_shim_ufunc_reduce(nd_trace *t, int uf, PyObject *args, PyObject *kwargs)
{
    if (!binary_single_out(uf)) return method_fallback(uf, "reduce", args, kwargs, "of a non-binary ufunc");
    PyObject *argv[ND_SHIM_MAXARGS];
    if (nd_shim_parse_args(&ureduce_def, args, kwargs, argv) < 0) return NULL;
    method_out(args, argv);
    red_args ra = {argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6], NULL, NULL, NULL};
    if (ra.axis == Py_None) {
        /* explicit axis=None: all axes */
        ra.axis = NULL;
        PyObject *r = reduce_core(t, uf, &ra, 1, nd_ufunc_object(uf), "reduce", -1);
        if (r || PyErr_Occurred()) { (void)nd_shim_take_unsupported(); return r; }
    } else {
        PyObject *r = reduce_core(t, uf, &ra, 0, nd_ufunc_object(uf), "reduce", -1);
        if (r || PyErr_Occurred()) { (void)nd_shim_take_unsupported(); return r; }
    }
    const char *why = nd_shim_take_unsupported();
    char buf[200];
    snprintf(buf, sizeof buf, "%s", why ? why : "is not supported in-graph");
    return method_fallback(uf, "reduce", args, kwargs, buf);
}

PyObject *nd_shim_ufunc_accumulate(nd_trace *t, int uf, PyObject *args, PyObject *kwargs)
{
    if (!binary_single_out(uf)) return method_fallback(uf, "accumulate", args, kwargs, "of a non-binary ufunc");
    PyObject *argv[ND_SHIM_MAXARGS];
    if (nd_shim_parse_args(&uaccum_def, args, kwargs, argv) < 0) return NULL;
    method_out(args, argv);
    PyObject *r = scan_core(t, uf, argv[0], argv[1], argv[2], argv[3], nd_ufunc_object(uf), "accumulate", 0);
    if (r || PyErr_Occurred()) { (void)nd_shim_take_unsupported(); return r; }
    const char *why = nd_shim_take_unsupported();
    char buf[200];
    snprintf(buf, sizeof buf, "%s", why ? why : "is not supported in-graph");
    return method_fallback(uf, "accumulate", args, kwargs, buf);
}

/* ------------------------------------------------------------ registration */

#define SUMSPEC "a|axis,dtype,out,keepdims,initial,where"
#define MAXSPEC "a|axis,out,keepdims,initial,where"
#define ANYSPEC "a|axis,out,keepdims;where"
#define MEANSPEC "a|axis,dtype,out,keepdims;where"
#define VARSPEC "a|axis,dtype,out,ddof,keepdims;where,mean,correction"

static const nd_shim_def functions[] = {
    {"sum", SUMSPEC, sum_impl, 0},
    {"prod", SUMSPEC, prod_impl, 0},
    {"nansum", SUMSPEC, nansum_impl, 0},
    {"nanprod", SUMSPEC, nanprod_impl, 0},
    {"max", MAXSPEC, max_impl, 0},
    {"amax", MAXSPEC, max_impl, 0},
    {"min", MAXSPEC, min_impl, 0},
    {"amin", MAXSPEC, min_impl, 0},
    {"nanmax", MAXSPEC, nanmax_impl, 0},
    {"nanmin", MAXSPEC, nanmin_impl, 0},
    {"any", ANYSPEC, any_impl, 0},
    {"all", ANYSPEC, all_impl, 0},
    {"argmax", "a|axis,out;keepdims", argmax_impl, 0},
    {"argmin", "a|axis,out;keepdims", argmin_impl, 0},
    {"mean", MEANSPEC, mean_impl, 0},
    {"nanmean", MEANSPEC, nanmean_impl, 0},
    {"nanvar", VARSPEC, nanvar_impl, 0},
    {"nanstd", VARSPEC, nanstd_impl, 0},
    {"var", VARSPEC, var_impl, 0},
    {"std", VARSPEC, std_impl, 0},
    {"ptp", "a|axis,out,keepdims", ptp_impl, 0},
    {"count_nonzero", "a|axis;keepdims", count_nonzero_impl, 0},
    {"cumsum", "a|axis,dtype,out", cumsum_impl, 0},
    {"cumprod", "a|axis,dtype,out", cumprod_impl, 0},
    {NULL},
};

/* ndarray methods: self first, keepdims and later keyword-only */
static const nd_shim_def methods[] = {
    {"sum", "self|axis,dtype,out;keepdims,initial,where", sum_impl, 0},
    {"prod", "self|axis,dtype,out;keepdims,initial,where", prod_impl, 0},
    {"max", "self|axis,out;keepdims,initial,where", max_impl, 0},
    {"min", "self|axis,out;keepdims,initial,where", min_impl, 0},
    {"any", "self|axis,out;keepdims,where", any_impl, 0},
    {"all", "self|axis,out;keepdims,where", all_impl, 0},
    {"argmax", "self|axis,out;keepdims", argmax_impl, 0},
    {"argmin", "self|axis,out;keepdims", argmin_impl, 0},
    {"mean", "self|axis,dtype,out;keepdims,where", mean_impl, 0},
    {"var", "self|axis,dtype,out,ddof;keepdims,where,mean,correction", var_impl, 0},
    {"std", "self|axis,dtype,out,ddof;keepdims,where,mean,correction", std_impl, 0},
    {"cumsum", "self|axis,dtype,out", cumsum_impl, 0},
    {"cumprod", "self|axis,dtype,out", cumprod_impl, 0},
    {NULL},
};

int nd_shim_register_reduce(nd_shim_table *tab)
{
    if (!nd_shim_spec(&ureduce_def) || !nd_shim_spec(&uaccum_def)) return -1;
    if (nd_shim_add_functions(tab, functions) < 0) return -1;
    return nd_shim_add_methods(tab, methods);
}
