/* shim_ufunc.c -- ufunc __call__ as UFUNC nodes (operators, np.<ufunc>,
 * __array_ufunc__), plus ufunc.outer.
 *
 * Typing is NumPy's (shim_typing.c). Inputs keep their own dtype and the
 * UFUNC node records the loop dtype per input in in_dtype[k] (the node
 * casts, see graph.h); weak Python scalars become SCALAR nodes typed at the
 * loop dtype. Results are 0-d proxies marked is_scalar when 0-d: NumPy
 * returns NumPy scalars from ufuncs whose result is 0-d and no out= given.
 *
 * out=: a proxy is written through nd_proxy_write after NumPy's same_kind
 * output-cast check; a real ndarray that the trace does not own is filled
 * at once (the value is computed by a flush and np.copyto'd in), because
 * its buffer is visible to the caller from this call on.
 *
 * where= without out=: NumPy leaves the masked-out elements uninitialized;
 * we give them the computed value (any value is NumPy-conformant), and
 * warn as NumPy 2 does (UserWarning "'where' used without 'out'..."; an
 * out= keyword, even out=None, silences it, a positional None does not).
 * __array_ufunc__ drops an all-None out=, so only a call through the
 * shim's own ufunc objects (`np.add(..., where=m)` in a compiled function)
 * tells the two apart: it notes what it saw in where_no_out for the
 * nd_shim_ufunc_call it leads to; a call through NumPy's own ufuncs
 * (code the function calls) stays silent rather than warn wrongly.
 */
#include "shim_internal.h"
#include <stddef.h>
#include <string.h>

typedef struct {
    PyObject *outs[2];    /* borrowed; NULL when not given */
    int nouts_given;
    PyObject *where;      /* borrowed or NULL */
    int sig_dtype;        /* dtype= as typenum or -1 */
    NPY_CASTING casting;
    int out_kw;           /* out= given as a keyword (None included) */
    char order;           /* order=: the memory order of new results ('K') */
} ufunc_opts;

/* 1: the shim ufunc being called got where= and no out= keyword; 0: it
 * did not; -1: not called through a shim ufunc (unknown) */
static int where_no_out = -1;

/* A comparison with a Python int outside the integer loop dtype's range:
 * NumPy 2 compares true values, so the answer does not depend on the
 * array: e.g. uint8 < 300 is all True. */
static int comparison_constant(int uf, nd_operand *ops, int *loop_in, int *value)
{
    for (int k = 0; k < 2; k++) {
        if (!ops[k].weak || !PyLong_Check(ops[k].obj)) continue;
        int fits = nd_shim_pyint_fits(ops[k].obj, loop_in[k]);
        if (fits < 0) return -1;
        if (fits) continue;
        PyObject *zero = PyLong_FromLong(0);
        if (!zero) return -1;
        int below = PyObject_RichCompareBool(ops[k].obj, zero, Py_LT);
        Py_DECREF(zero);
        if (below < 0) return -1;
        /* big: the int is above every array value (or below, if below) */
        int arr_lt_int = !below;  /* for k == 1: a < v */
        int r;
        switch (uf) {
        case ND_UF_EQUAL: r = 0; break;
        case ND_UF_NOT_EQUAL: r = 1; break;
        case ND_UF_LESS: r = k == 1 ? arr_lt_int : !arr_lt_int; break;
        case ND_UF_LESS_EQUAL: r = k == 1 ? arr_lt_int : !arr_lt_int; break;
        case ND_UF_GREATER: r = k == 1 ? !arr_lt_int : arr_lt_int; break;
        default: r = k == 1 ? !arr_lt_int : arr_lt_int; break; /* greater_equal */
        }
        *value = r;
        return 1;
    }
    return 0;
}

/* order='A' of a ufunc call: Fortran when every operand is F-contiguous
 * (NumPy's flag: length-1 dims skipped; a scalar is), C otherwise */
static char any_order(int nin, PyObject *const *inputs)
{
    for (int k = 0; k < nin; k++) {
        int nd;
        const npy_intp *sh;
        npy_intp ms[ND_MAXDIMS], e = 1;
        if (!nd_proxy_check(inputs[k]) && !PyArray_Check(inputs[k])) continue;
        if (nd_operand_memory_strides(inputs[k], &nd, &sh, ms)) return 'C';
        for (int d = 0; d < nd; d++)
            if (sh[d] > 1) {
                if (ms[d] != e) return 'C';
                e *= sh[d];
            }
    }
    return 'F';
}

/* a new ufunc result, laid out as NumPy's iterator lays it out, or as
 * order= asks */
static PyObject *result(nd_trace *t, nd_id id, int nin, PyObject *const *inputs, char order)
{
    PyObject *p = nd_shim_wrap(t, id, nd_shim_node_ndim(t, id) == 0);
    if (!p) return NULL;
    if (order == 'A') order = any_order(nin, inputs);
    if (order == 'K') nd_proxy_set_korder(p, nin, inputs, 1);
    else nd_proxy_set_order(p, NULL, order);
    return p;
}

/* out= arrays that cannot take the loop's outputs under the casting rule */
static int check_out_casts(int uf, int nout, const ufunc_opts *o, const int *out_dtypes)
{
    for (int i = 0; o->nouts_given && i < nout; i++) {
        PyObject *out = o->outs[i];
        if (!out) continue;
        int od = nd_proxy_check(out) ? nd_proxy_dtype(out)
                 : PyArray_Check(out) ? PyArray_TYPE((PyArrayObject *)out) : -1;
        if (od >= 0 && nd_shim_check_output_cast_i(uf, i, out_dtypes[i], od, o->casting) < 0)
            return -1;
    }
    return 0;
}

/* NumPy broadcasts the inputs and the given outs together: an out= whose
 * shape does not broadcast with them raises "operands could not be
 * broadcast together with shapes <inputs> <outs>" (nd_shim_broadcast's
 * message); one that broadcasts but is smaller is store_out's error. */
static int outs_broadcast(int nin, PyObject *const *inputs, int nout, const ufunc_opts *o)
{
    int n = 0, ndims[ND_SHIM_MAXARGS], rc = -1, bnd;
    const npy_intp *shapes[ND_SHIM_MAXARGS];
    PyObject *held[ND_SHIM_MAXARGS] = {NULL};
    npy_intp bshape[ND_MAXDIMS];
    for (int k = 0; k < nin + nout && n < ND_SHIM_MAXARGS; k++) {
        PyObject *x = k < nin ? inputs[k] : o->outs[k - nin];
        if (!x) continue;
        if (nd_proxy_check(x)) {
            ndims[n] = nd_proxy_ndim(x);
            shapes[n] = nd_proxy_shape(x);
        } else {
            if (!PyArray_Check(x) && !(x = held[n] = PyArray_FROM_O(x))) goto done;
            ndims[n] = PyArray_NDIM((PyArrayObject *)x);
            shapes[n] = PyArray_DIMS((PyArrayObject *)x);
        }
        n++;
    }
    rc = nd_shim_broadcast(n, ndims, shapes, &bnd, bshape);
done:
    for (int k = 0; k < ND_SHIM_MAXARGS; k++) Py_XDECREF(held[k]);
    return rc;
}

static PyObject *finish(nd_trace *t, int uf, nd_id *res, int nout, const ufunc_opts *o,
                        int *out_dtypes, PyObject *const *inputs)
{
    int nin = nd_ufunc_nin(uf);
    if (o->nouts_given == 0) {
        if (nout == 1) return result(t, res[0], nin, inputs, o->order);
        PyObject *tup = PyTuple_New(nout);
        if (!tup) return NULL;
        for (int i = 0; i < nout; i++) {
            PyObject *p = result(t, res[i], nin, inputs, o->order);
            if (!p) { Py_DECREF(tup); return NULL; }
            PyTuple_SET_ITEM(tup, i, p);
        }
        return tup;
    }
    if (outs_broadcast(nin, inputs, nout, o) < 0) return NULL;
    for (int i = 0; i < nout; i++) {
        if (!o->outs[i]) continue;
        PyObject *out = o->outs[i];
        int od = nd_proxy_check(out) ? nd_proxy_dtype(out)
                 : PyArray_Check(out) ? PyArray_TYPE((PyArrayObject *)out) : -1;
        nd_id v = res[i];
        if (o->where && nd_proxy_check(out)) {
            /* masked-out elements keep out's current value */
            nd_operand w, cur;
            int rc = nd_shim_operand(t, o->where, &w);
            if (rc == 0 && w.weak) w.id = nd_shim_operand_node(t, &w, NPY_BOOL);
            if (rc == 1) return nd_shim_unsupported("ufunc where= of this type");
            if (rc < 0 || w.id == ND_NONE) return NULL;
            if (nd_shim_operand(t, out, &cur) != 0) return NULL;
            v = nd_shim_node_where(t, w.id, v, cur.id, od);
            if (v == ND_NONE) return NULL;
        } else if (o->where) {
            return nd_shim_unsupported("ufunc where= with a non-lazy out= array");
        }
        if (nd_shim_store_out(t, out, v, NULL, o->casting) < 0) return NULL;
    }
    if (nout == 1) {
        Py_INCREF(o->outs[0]);
        return o->outs[0];
    }
    PyObject *tup = PyTuple_New(nout);
    if (!tup) return NULL;
    for (int i = 0; i < nout; i++) {
        PyObject *p = o->outs[i] ? o->outs[i] : NULL;
        if (p) Py_INCREF(p);
        else if (!(p = result(t, res[i], nin, inputs, o->order))) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, p);
    }
    return tup;
}

/* The one path of every ufunc call: operands -> NEP 50 loop -> nodes. */
/* where=: NumPy runs the loop only on the lanes the mask selects, so a
 * masked-out lane never raises a floating-point (or integer division)
 * warning or, under errstate 'raise', an error. The graph computes every
 * lane and keeps out's value where the mask is False (finish), so the
 * operands of masked-out lanes are replaced by a value no ufunc flags:
 * 1 (0 for arctanh, whose 1 is a pole). */
static int mask_off_lanes(nd_trace *t, int uf, int nin, nd_id *ids, const int *loop_in,
                          PyObject *where)
{
    if (nd_ufunc_is_comparison(uf)) return 0;
    nd_id m = ND_NONE;
    for (int k = 0; k < nin; k++) {
        int dt = loop_in[k];
        if (!(PyTypeNum_ISINTEGER(dt) || PyTypeNum_ISFLOAT(dt) || PyTypeNum_ISCOMPLEX(dt)))
            continue;
        if (m == ND_NONE) {
            nd_operand w;
            int rc = nd_shim_operand(t, where, &w);
            if (rc == 1) { nd_shim_unsupported("ufunc where= of this type"); return -1; }
            if (rc < 0) return -1;
            if ((m = nd_shim_operand_node(t, &w, NPY_BOOL)) == ND_NONE) return -1;
        }
        PyObject *one = PyLong_FromLong(uf == ND_UF_ARCTANH ? 0 : 1);
        if (!one) return -1;
        nd_id c = nd_shim_node_scalar(t, one, dt, 0);
        Py_DECREF(one);
        if (c == ND_NONE || (ids[k] = nd_shim_node_where(t, m, ids[k], c, dt)) == ND_NONE)
            return -1;
    }
    return 0;
}

static PyObject *apply(nd_trace *t, int uf, PyObject *const *inputs, const ufunc_opts *o)
{
    int nin = nd_ufunc_nin(uf), nout = nd_ufunc_nout(uf);
    /* NumPy checks writeability of out= before typing (read-only views:
     * broadcast_to, diagonal, read-only caller arrays) */
    for (int i = 0; o->nouts_given && i < nout; i++) {
        PyObject *x = o->outs[i];
        if (x && (nd_proxy_is_readonly(x) ||
                  (PyArray_Check(x) && !PyArray_ISWRITEABLE((PyArrayObject *)x)))) {
            PyErr_SetString(PyExc_ValueError, "output array is read-only");
            return NULL;
        }
    }
    nd_operand ops[ND_MAXIN];
    int dtypes[ND_MAXIN], weak[ND_MAXIN], loop_in[ND_MAXIN], out_dt[2];
    PyObject *vals[ND_MAXIN];
    for (int k = 0; k < nin; k++) {
        int rc = nd_shim_operand(t, inputs[k], &ops[k]);
        if (rc) return NULL;  /* rc 1: reason recorded, dispatcher falls back */
        dtypes[k] = ops[k].dtype;
        weak[k] = ops[k].weak;
        vals[k] = ops[k].obj;
    }
    int rc = nd_shim_resolve_ufunc_ex(uf, nin, dtypes, weak, vals, o->sig_dtype, o->casting,
                                      loop_in, out_dt);
    if (rc < 0) return NULL;
    /* NumPy types the call (the loop, then out='s casts) before its
     * iterator broadcasts the operands */
    if (check_out_casts(uf, nout, o, out_dt) < 0) return NULL;
    if (o->nouts_given) {
        /* inputs that do not broadcast: NumPy's message lists out= too */
        int nds[ND_MAXIN + 2], m = 0, nd;
        const npy_intp *shs[ND_MAXIN + 2];
        npy_intp sh[ND_MAXDIMS];
        for (int k = 0; k < nin; k++, m++) { nds[m] = ops[k].ndim; shs[m] = ops[k].shape; }
        if (nd_shim_broadcast(nin, nds, shs, &nd, sh) < 0) {
            for (int i = 0; i < nout; i++) {
                PyObject *x = o->outs[i];
                if (x && nd_proxy_check(x)) {
                    nds[m] = nd_proxy_ndim(x);
                    shs[m++] = nd_proxy_shape(x);
                } else if (x && PyArray_Check(x)) {
                    nds[m] = PyArray_NDIM((PyArrayObject *)x);
                    shs[m++] = PyArray_DIMS((PyArrayObject *)x);
                }
            }
            PyErr_Clear();
            nd_shim_broadcast(m, nds, shs, &nd, sh);
            return NULL;
        }
    }
    nd_id res[2];
    if (rc == 2 && nd_ufunc_is_comparison(uf)) {
        int value = 0;
        if (comparison_constant(uf, ops, loop_in, &value) < 0) return NULL;
        int ndims[2] = {ops[0].ndim, ops[1].ndim};
        const npy_intp *shapes[2] = {ops[0].shape, ops[1].shape};
        int nd;
        npy_intp shape[ND_MAXDIMS];
        if (nd_shim_broadcast(2, ndims, shapes, &nd, shape) < 0) return NULL;
        nd_id c = nd_shim_node_scalar(t, value ? Py_True : Py_False, NPY_BOOL, 0);
        if (c == ND_NONE || (res[0] = nd_shim_node_broadcast(t, c, nd, shape)) == ND_NONE)
            return NULL;
        return finish(t, uf, res, 1, o, out_dt, inputs);
    }
    nd_id ids[ND_MAXIN];
    for (int k = 0; k < nin; k++)
        if ((ids[k] = nd_shim_operand_node(t, &ops[k], loop_in[k])) == ND_NONE) return NULL;
    if (o->where && mask_off_lanes(t, uf, nin, ids, loop_in, o->where) < 0) return NULL;
    for (int i = 0; i < nout; i++)
        if ((res[i] = nd_shim_node_ufunc(t, uf, ids, loop_in, out_dt[i], i)) == ND_NONE)
            return NULL;
    return finish(t, uf, res, nout, o, out_dt, inputs);
}

static const ufunc_opts plain = {{NULL, NULL}, 0, NULL, -1, NPY_SAME_KIND_CASTING, 0, 'K'};

static PyObject *no_trace_call(int uf, PyObject *args)
{
    return nd_trace_fallback_call(nd_ufunc_object(uf), args, NULL,
                                  "array operation outside of a trace");
}

static PyObject *operator_fallback(int uf, PyObject *const *in, int n)
{
    const char *reason = nd_shim_take_unsupported();
    char buf[320];
    snprintf(buf, sizeof buf, "%s", reason ? reason : "operand not supported in-graph");
    PyObject *args = n == 1 ? PyTuple_Pack(1, in[0]) : PyTuple_Pack(2, in[0], in[1]);
    if (!args) return NULL;
    PyObject *r = nd_trace_fallback_call(nd_ufunc_object(uf), args, NULL, buf);
    Py_DECREF(args);
    return r;
}

PyObject *nd_shim_ufunc1(int uf, PyObject *a)
{
    nd_trace *t = nd_trace_current();
    if (!t) {
        PyObject *args = PyTuple_Pack(1, a);
        PyObject *r = args ? no_trace_call(uf, args) : NULL;
        Py_XDECREF(args);
        return r;
    }
    if (nd_trace_errstate_sync(t) < 0) return NULL;
    nd_id first = nd_shim_graph_size(t);
    PyObject *in[1] = {a};
    PyObject *r = apply(t, uf, in, &plain);
    if (!r && !PyErr_Occurred()) return operator_fallback(uf, in, 1);
    return nd_shim_settled(t, first, r);
}

/* ---- operator fast path ------------------------------------------------
 * `x + y` on live proxies and Python floats/ints is what traced code does
 * most, and recording it must cost less than NumPy's own call (~1 us). The
 * general path (apply) classifies operands into nd_operand records, copies
 * shapes, broadcasts and wraps through several layers; this one reads the
 * proxies' fields in place, skips broadcasting for equal shapes and builds
 * one UFUNC node. Anything else (NumPy scalars, arrays, bools, out-of-range
 * ints in comparisons, multi-output ufuncs) returns FAST_MISS and takes the
 * general path, which gives the same result. */

#define FAST_MISS Py_NotImplemented

typedef struct {
    nd_id id;
    int dtype, weak, ndim;
    const npy_intp *shape;
} fast_op;

static int fast_classify(PyObject *o, fast_op *f)
{
    if (nd_proxy_check(o)) {
        if (!nd_proxy_live(o)) return 0;
        f->weak = 0;
        f->dtype = nd_proxy_dtype(o);
        f->ndim = nd_proxy_ndim(o);
        f->shape = nd_proxy_shape(o);
        f->id = ND_NONE;  /* read after typing succeeded: reads may add a VIEW */
        return 1;
    }
    if (PyFloat_CheckExact(o)) { f->dtype = NPY_FLOAT64; goto weak; }
    if (PyLong_CheckExact(o)) { f->dtype = NPY_INT64; goto weak; }
    return 0;
weak:
    f->weak = 1;
    f->ndim = 0;
    f->shape = NULL;
    f->id = ND_NONE;
    return 1;
}

/* The last typing answer per ufunc: a loop of `x = x + b` asks the same
 * question every time, and this hit is a compare instead of the packed-key
 * hash probe. Weak ints are still range-checked on every call. */
typedef struct { int key; int8_t loop[2], out; } fast_memo;
static fast_memo memo[ND_UF_COUNT];

/* out[0] = -1: not for the fast path (the general path decides, e.g. an
 * out-of-range Python int in a comparison). 0 or -1 with an exception. */
static int fast_typing(int uf, const fast_op *f, PyObject *a, PyObject *b,
                       int *loop_in, int *out)
{
    int key = 1 | (f[0].dtype << 1) | (f[1].dtype << 6) | (f[0].weak << 11) | (f[1].weak << 12);
    fast_memo *m = &memo[uf];
    if (m->key == key) {
        loop_in[0] = m->loop[0];
        loop_in[1] = m->loop[1];
        out[0] = m->out;
        PyObject *w = f[0].weak ? a : f[1].weak ? b : NULL;
        int k = f[0].weak ? 0 : 1;
        if (w && PyLong_CheckExact(w) && PyTypeNum_ISINTEGER(loop_in[k])) {
            int fits = nd_shim_pyint_fits(w, loop_in[k]);
            if (fits < 0) return -1;
            if (!fits) out[0] = -1;  /* the general path raises NumPy's error */
        }
        return 0;
    }
    int dtypes[2] = {f[0].dtype, f[1].dtype}, weak[2] = {f[0].weak, f[1].weak};
    PyObject *vals[2] = {a, b};
    int rc = nd_shim_resolve_ufunc_ex(uf, 2, dtypes, weak, vals, -1, NPY_SAME_KIND_CASTING,
                                      loop_in, out);
    if (rc < 0) return -1;
    if (rc == 2) {  /* comparison with an out-of-range int */
        out[0] = -1;
        return 0;
    }
    m->key = key;
    m->loop[0] = (int8_t)loop_in[0];
    m->loop[1] = (int8_t)loop_in[1];
    m->out = (int8_t)out[0];
    return 0;
}

static PyObject *fast2(nd_trace *t, int uf, PyObject *a, PyObject *b)
{
    fast_op f[2];
    if (nd_ufunc_nout(uf) != 1 || nd_ufunc_nin(uf) != 2 || !fast_classify(a, &f[0]) ||
        !fast_classify(b, &f[1]) || (f[0].weak && f[1].weak))
        return FAST_MISS;
    int loop_in[2], out[2];
    if (fast_typing(uf, f, a, b, loop_in, out) < 0) return NULL;
    if (out[0] < 0) return FAST_MISS;
    PyObject *objs[2] = {a, b};
    nd_id ids[2];
    for (int k = 0; k < 2; k++) {
        ids[k] = f[k].weak ? nd_shim_node_scalar(t, objs[k], loop_in[k], 1)
                           : nd_proxy_read(objs[k]);
        if (ids[k] == ND_NONE) return NULL;
    }
    /* the result shape: the proxy's when the other is a scalar or has the
     * same shape, NumPy's broadcasting otherwise */
    int nd;
    npy_intp shape[ND_MAXDIMS];
    const npy_intp *shp;
    if (f[1].weak || (f[0].ndim == f[1].ndim && !f[1].weak && !f[0].weak &&
                      memcmp(f[0].shape, f[1].shape, sizeof(npy_intp) * (size_t)f[0].ndim) == 0)) {
        nd = f[0].ndim;
        shp = f[0].shape;
    } else if (f[0].weak) {
        nd = f[1].ndim;
        shp = f[1].shape;
    } else {
        int ndims[2] = {f[0].ndim, f[1].ndim};
        const npy_intp *shapes[2] = {f[0].shape, f[1].shape};
        if (nd_shim_broadcast(2, ndims, shapes, &nd, shape) < 0) return NULL;
        shp = shape;
    }
    nd_node n;
    nd_node_init(&n, ND_OP_UFUNC, out[0], nd, shp);
    n.sub = uf;
    n.nin = 2;
    n.in[0] = ids[0];
    n.in[1] = ids[1];
    n.in_dtype[0] = loop_in[0];
    n.in_dtype[1] = loop_in[1];
    n.obj = Py_NewRef(nd_ufunc_object(uf));
    nd_id id = nd_graph_add(nd_trace_graph(t), &n);
    if (id == ND_NONE) {
        Py_DECREF(n.obj);
        return NULL;
    }
    PyObject *r = nd_shim_wrap(t, id, nd == 0);  /* (checks the size NumPy allocates) */
    if (r && nd >= 2) nd_proxy_set_korder(r, 2, objs, 1);
    return r;
}

PyObject *nd_shim_ufunc2(int uf, PyObject *a, PyObject *b)
{
    nd_trace *t = nd_trace_current();
    if (!t) {
        PyObject *args = PyTuple_Pack(2, a, b);
        PyObject *r = args ? no_trace_call(uf, args) : NULL;
        Py_XDECREF(args);
        return r;
    }
    if (nd_trace_errstate_sync(t) < 0) return NULL;
    nd_id first = nd_shim_graph_size(t);
    PyObject *r0 = fast2(t, uf, a, b);
    if (r0 != FAST_MISS) return nd_shim_settled(t, first, r0);
    PyObject *in[2] = {a, b};
    PyObject *r = apply(t, uf, in, &plain);
    if (!r && !PyErr_Occurred()) return operator_fallback(uf, in, 2);
    return nd_shim_settled(t, first, r);
}

/* Python's builtin max(a, b, ...) / min(...) (or of one list or tuple) of
 * lazy NumPy scalars: a lazy scalar in the graph, with the builtin's own
 * semantics -- it keeps the first item and takes a later one only when
 * `item > best` (`item < best` for min) is true, so ties keep the first
 * and a NaN compares false (max(nan, 1) is nan, max(1, nan) is 1). Every
 * item a lazy scalar or a NumPy scalar of one real dtype, at least one of
 * them lazy: otherwise the result's type could depend on the values (a
 * Python float or another dtype chosen), and NULL with no exception asks
 * the caller for the builtin itself. */
PyObject *nd_shim_builtin_minmax(int is_max, PyObject *const *args, Py_ssize_t n)
{
    nd_trace *t = nd_trace_current();
    if (!t || n < 1) return NULL;
    PyObject *seq = NULL;
    if (n == 1) {
        if (!PyList_CheckExact(args[0]) && !PyTuple_CheckExact(args[0])) return NULL;
        seq = PySequence_Fast(args[0], "");  /* a new ref: the list stays alive */
        if (!seq) return NULL;
        args = PySequence_Fast_ITEMS(seq);
        n = PySequence_Fast_GET_SIZE(seq);
    }
    int dt = -1, lazy = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = args[k];
        int d;
        if (nd_shim_lazy_scalar(o)) {
            d = nd_proxy_dtype(o);
            lazy = 1;
        } else if (PyArray_IsScalar(o, Generic)) {
            PyArray_Descr *descr = PyArray_DescrFromScalar(o);
            if (!descr) { Py_XDECREF(seq); return NULL; }
            d = descr->type_num;
            Py_DECREF(descr);
        } else {
            d = -2;
        }
        if (d < 0 || (dt >= 0 && d != dt) ||
            !(PyTypeNum_ISBOOL(d) || PyTypeNum_ISINTEGER(d) || PyTypeNum_ISFLOAT(d))) {
            Py_XDECREF(seq);
            return NULL;
        }
        dt = d;
    }
    if (!lazy || n < 2) { Py_XDECREF(seq); return NULL; }
    nd_id first = nd_shim_graph_size(t);
    const int loop[2] = {dt, dt};
    nd_operand op;
    nd_id best = ND_NONE;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (nd_shim_operand(t, args[k], &op)) { best = ND_NONE; break; }
        nd_id x = op.id;
        if (k) {
            nd_id in[2] = {x, best};
            nd_id c = nd_shim_node_ufunc(t, is_max ? ND_UF_GREATER : ND_UF_LESS, in, loop, NPY_BOOL, 0);
            x = c == ND_NONE ? ND_NONE : nd_shim_node_where(t, c, x, best, dt);
        }
        if ((best = x) == ND_NONE) break;
    }
    Py_XDECREF(seq);
    if (best == ND_NONE) {
        if (!PyErr_Occurred()) nd_shim_take_unsupported();  /* the builtin then */
        return NULL;
    }
    return nd_shim_settled(t, first, nd_shim_wrap(t, best, 1));
}

PyObject *nd_shim_ufunc2_inplace(int uf, PyObject *a, PyObject *b)
{
    nd_trace *t = nd_trace_current();
    if (!t || !nd_proxy_check(a)) {
        PyObject *args = PyTuple_Pack(3, a, b, a);
        PyObject *r = args ? no_trace_call(uf, args) : NULL;
        Py_XDECREF(args);
        return r;
    }
    if (nd_trace_errstate_sync(t) < 0) return NULL;
    nd_id first = nd_shim_graph_size(t);
    ufunc_opts o = plain;
    o.outs[0] = a;
    o.nouts_given = 1;
    PyObject *in[2] = {a, b};
    PyObject *r = apply(t, uf, in, &o);
    if (!r && !PyErr_Occurred()) {
        const char *reason = nd_shim_take_unsupported();
        char buf[320];
        snprintf(buf, sizeof buf, "%s", reason ? reason : "operand not supported in-graph");
        /* compute out of place with NumPy, then store functionally */
        PyObject *args = PyTuple_Pack(2, a, b);
        PyObject *v = args ? nd_trace_fallback_call(nd_ufunc_object(uf), args, NULL, buf) : NULL;
        Py_XDECREF(args);
        if (!v) return NULL;
        nd_operand op;
        int rc = nd_shim_operand(t, v, &op);
        if (rc == 0 && op.weak) op.id = nd_shim_operand_node(t, &op, op.dtype);
        if (rc != 0 || op.id == ND_NONE ||
            nd_shim_store_out(t, a, op.id, nd_ufunc_name(uf), NPY_SAME_KIND_CASTING) < 0) {
            Py_DECREF(v);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, buf);
            return NULL;
        }
        Py_DECREF(v);
        Py_INCREF(a);
        return nd_shim_settled(t, first, a);
    }
    return nd_shim_settled(t, first, r);
}

/* ufunc.__call__'s keywords, declared once like every shim function's
 * parameters (shim_args.c parses them: NumPy's TypeErrors for unknown and
 * repeated ones); the inputs and positional outs are checked by arity below,
 * with NumPy's message. One def per ufunc, so the messages name it. */
enum { UKW_OUT, UKW_WHERE, UKW_DTYPE, UKW_CASTING, UKW_ORDER, UKW_SUBOK, UKW_UNSUPPORTED };
static nd_shim_def ufunc_kw_defs[ND_UF_COUNT];

static const nd_shim_def *ufunc_kw_def(int uf)
{
    nd_shim_def *def = &ufunc_kw_defs[uf];
    if (!def->name) {
        def->params = "|;out,where,dtype,casting,order,subok,signature,axes,axis,keepdims";
        def->name = nd_ufunc_name(uf);
    }
    return def;
}

/* an out= that is no array -- a number, or an element read (`o[1, 0]` is
 * a NumPy scalar, whatever the tracer holds for it) -- is NumPy's TypeError */
static int outs_are_arrays(const ufunc_opts *o, int nout)
{
    for (int i = 0; i < nout; i++) {
        PyObject *x = o->outs[i];
        if (x && (nd_proxy_check(x) ? nd_proxy_is_scalar(x) : !PyArray_Check(x))) {
            PyErr_SetString(PyExc_TypeError, "return arrays must be of ArrayType");
            return -1;
        }
    }
    return 0;
}

/* kwargs of ufunc.__call__ the shim understands; others fall back. */
static int parse_opts(int uf, PyObject *args, PyObject *kwargs, ufunc_opts *o)
{
    int nin = nd_ufunc_nin(uf), nout = nd_ufunc_nout(uf);
    *o = plain;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < nin || n > nin + nout) {
        PyErr_Format(PyExc_TypeError, "%s() takes from %d to %d positional arguments but %zd were given",
                     nd_ufunc_name(uf), nin, nin + nout, n);
        return -1;
    }
    for (Py_ssize_t i = nin; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        if (x != Py_None) { o->outs[i - nin] = x; o->nouts_given++; }
    }
    if (!kwargs || !PyDict_GET_SIZE(kwargs)) return outs_are_arrays(o, nout);
    const nd_shim_def *def = ufunc_kw_def(uf);
    PyObject *kw[ND_SHIM_MAXARGS];
    if (nd_shim_parse_args(def, NULL, kwargs, kw) < 0) return -1;
    PyObject *val = kw[UKW_OUT];
    o->out_kw = val != NULL;
    if (val && n > nin) {
        PyErr_SetString(PyExc_TypeError, "cannot specify 'out' as both a positional and keyword argument");
        return -1;
    }
    if (val && val != Py_None) {
        if (PyTuple_Check(val)) {
            if (PyTuple_GET_SIZE(val) != nout) {
                PyErr_SetString(PyExc_ValueError,
                                "The 'out' tuple must have exactly one entry per ufunc output");
                return -1;
            }
            for (int i = 0; i < nout; i++) {
                PyObject *x = PyTuple_GET_ITEM(val, i);
                if (x != Py_None) { o->outs[i] = x; o->nouts_given++; }
            }
        } else {
            if (nout != 1) {
                PyErr_SetString(PyExc_TypeError,
                                "'out' must be a tuple of arrays for ufuncs with several outputs");
                return -1;
            }
            o->outs[0] = val;
            o->nouts_given = 1;
        }
    }
    if (kw[UKW_WHERE] && kw[UKW_WHERE] != Py_True) o->where = kw[UKW_WHERE];
    if (kw[UKW_DTYPE]) {
        int rc = nd_shim_dtype_arg(kw[UKW_DTYPE], &o->sig_dtype);
        if (rc < 0) return -1;
        if (rc == 1) { nd_shim_unsupported("ufunc dtype= of a non-numeric dtype"); return 1; }
    }
    if (kw[UKW_CASTING] && nd_shim_casting_arg(kw[UKW_CASTING], NPY_SAME_KIND_CASTING, &o->casting) < 0)
        return -1;
    /* order=: the layout of new results (NumPy's ValueError / TypeError for
     * another value come from the fallback); subok=: no subclass is traced */
    PyObject *ord = kw[UKW_ORDER];
    if (ord && ord != Py_None && !(o->order = nd_shim_order_char(ord, 0))) {
        nd_shim_unsupported("numpy.%s with this order=", nd_ufunc_name(uf));
        return 1;
    }
    const nd_spec *sp = nd_shim_spec(def);
    for (int k = UKW_UNSUPPORTED; k < sp->n; k++)
        if (kw[k]) {
            nd_shim_unsupported("numpy.%s with %s= is not supported in-graph", nd_ufunc_name(uf),
                                PyUnicode_AsUTF8(sp->names[k]));
            return 1;
        }
    return outs_are_arrays(o, nout);
}

PyObject *nd_shim_ufunc_call(nd_trace *t, int uf, PyObject *args, PyObject *kwargs)
{
    if (nd_trace_n_disallowed && nd_trace_ufunc_disallowed(uf))  /* numdyn.disallow_in_graph */
        return nd_trace_disallowed_ufunc(uf, NULL, NULL, args, kwargs, 0);
    int warn_where = where_no_out == 1;
    where_no_out = -1;
    ufunc_opts o;
    int rc = parse_opts(uf, args, kwargs, &o);
    PyObject *r = NULL;
    if (rc == 0) r = apply(t, uf, &PyTuple_GET_ITEM(args, 0), &o);
    if (r && o.where && !o.out_kw && warn_where) {
        /* NumPy warns at every such call; a replayed call would not */
        nd_trace_not_replayable(t);
        if (PyErr_WarnEx(PyExc_UserWarning, "'where' used without 'out', expect unitialized memory in "
                         "output. If this is intentional, use out=None.", 1) < 0)
            Py_CLEAR(r);
    }
    if (r || PyErr_Occurred()) {
        (void)nd_shim_take_unsupported();
        return r;
    }
    const char *reason = nd_shim_take_unsupported();
    char buf[320];
    snprintf(buf, sizeof buf, "%s", reason ? reason : "ufunc call not supported in-graph");
    return nd_trace_fallback_call(nd_ufunc_object(uf), args, kwargs, buf);
}

/* ufunc.outer(a, b): a's dims then b's, pointwise: a reshaped to
 * a.shape + (1,)*b.ndim, broadcast against b. */
PyObject *nd_shim_ufunc_outer(nd_trace *t, int uf, PyObject *args, PyObject *kwargs)
{
    if (nd_ufunc_nin(uf) != 2) {
        PyErr_Format(PyExc_ValueError, "method outer is only supported for binary functions");
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) != 2 || (kwargs && PyDict_GET_SIZE(kwargs)))
        goto fallback;
    nd_operand a;
    int rc = nd_shim_operand(t, PyTuple_GET_ITEM(args, 0), &a);
    if (rc < 0) return NULL;
    if (rc > 0 || a.weak) goto fallback;
    nd_operand b;
    rc = nd_shim_operand(t, PyTuple_GET_ITEM(args, 1), &b);
    if (rc < 0) return NULL;
    if (rc > 0 || b.weak || a.ndim + b.ndim > ND_MAXDIMS) goto fallback;
    {
        npy_intp shape[ND_MAXDIMS], strides[ND_MAXDIMS], s = 1;
        int nd = a.ndim + b.ndim;
        for (int d = 0; d < a.ndim; d++) shape[d] = a.shape[d];
        for (int d = 0; d < b.ndim; d++) shape[a.ndim + d] = 1;
        for (int d = nd - 1; d >= 0; d--) { strides[d] = d < a.ndim ? s : 0; if (d < a.ndim) s *= a.shape[d]; }
        nd_id av = nd_shim_node_view(t, a.id, nd, shape, 0, strides);
        if (av == ND_NONE) return NULL;
        ufunc_opts o = plain;
        PyObject *pa = nd_shim_wrap(t, av, 0);
        if (!pa) return NULL;
        PyObject *in[2] = {pa, b.obj};
        PyObject *r = apply(t, uf, in, &o);
        Py_DECREF(pa);
        if (r) nd_proxy_set_korder_outer(r, a.obj, b.obj);
        if (r || PyErr_Occurred()) return r;
    }
fallback:;
    PyObject *m = PyObject_GetAttrString(nd_ufunc_object(uf), "outer");
    if (!m) return NULL;
    PyObject *r = nd_trace_fallback_call(m, args, kwargs, "ufunc.outer with these arguments is not supported in-graph");
    Py_DECREF(m);
    return r;
}

/* ---- np.<ufunc> inside compiled functions ------------------------------
 * The shim module's `exp`, `add`, ... are ShimUfunc objects wrapping NumPy's
 * ufuncs. NumPy's own route for np.exp(proxy) -- override lookup, an args
 * tuple and kwargs dict, __array_ufunc__, its method-name dispatch -- costs
 * several times what recording the op does. A ShimUfunc called during a
 * trace with exactly its nin positional operands, no keywords, at least one
 * live proxy and otherwise plain scalars/arrays records the op directly
 * (the operator path); every other call -- keywords (out=, dtype=, where=),
 * no trace, no proxy, foreign objects with their own __array_ufunc__ -- is
 * forwarded to the real ufunc, i.e. NumPy's behaviour by construction.
 * Attributes (reduce, accumulate, outer, at, nin, types, __name__ ...) are
 * the real ufunc's, so np.add.reduce(proxy) still goes through
 * __array_ufunc__. Not an np.ufunc instance (that type cannot be
 * subclassed): `isinstance(np.add, np.ufunc)` inside a compiled function is
 * False; it compares equal to and hashes like the ufunc it wraps. */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *ufunc;  /* owned: NumPy's ufunc */
    int uf;           /* nd_ufunc_id */
} shim_ufunc;

static PyTypeObject ShimUfunc_Type;

/* an operand the direct path takes: live proxy, exact ndarray, Python or
 * NumPy scalar. 1 = plain operand, 2 = live proxy, 0 = forward. */
static int direct_operand(PyObject *o)
{
    /* a tagged subclass proxy goes through __array_ufunc__ (its result type) */
    if (nd_proxy_check(o)) return nd_proxy_live(o) && !nd_proxy_sub(o) ? 2 : 0;
    if (PyFloat_CheckExact(o) || PyLong_Check(o) || PyComplex_CheckExact(o) ||
        PyArray_CheckExact(o) || PyArray_IsScalar(o, Generic))
        return 1;
    return 0;
}

static PyObject *shim_ufunc_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                       PyObject *kwnames)
{
    shim_ufunc *f = (shim_ufunc *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int nin = nd_ufunc_nin(f->uf);
    if (!kwnames && nargs == nin && nin <= 2 && nd_trace_current() &&
        !(nd_trace_n_disallowed && nd_trace_ufunc_disallowed(f->uf))) {
        int k0 = direct_operand(args[0]), k1 = nin == 2 ? direct_operand(args[1]) : 1;
        if (k0 && k1 && (k0 == 2 || k1 == 2))
            return nin == 1 ? nd_shim_ufunc1(f->uf, args[0])
                            : nd_shim_ufunc2(f->uf, args[0], args[1]);
    }
    int saved = where_no_out, seen = -1;
    PyObject *kw[ND_SHIM_MAXARGS];
    if (kwnames && nd_shim_parse_fast(ufunc_kw_def(f->uf), args + nargs, 0, kwnames, kw) == 0)
        seen = kw[UKW_WHERE] && kw[UKW_WHERE] != Py_True && !kw[UKW_OUT];
    else if (kwnames)
        PyErr_Clear();  /* NumPy's own call below raises it */
    where_no_out = seen;
    PyObject *r = PyObject_Vectorcall(f->ufunc, args, nargsf, kwnames);
    where_no_out = saved;
    return r;
}

static void shim_ufunc_dealloc(PyObject *self)
{
    Py_XDECREF(((shim_ufunc *)self)->ufunc);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *shim_ufunc_repr(PyObject *self)
{
    return PyObject_Repr(((shim_ufunc *)self)->ufunc);
}

static PyObject *shim_ufunc_getattro(PyObject *self, PyObject *name)
{
    if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0)
        return Py_NewRef(((shim_ufunc *)self)->ufunc);
    return PyObject_GetAttr(((shim_ufunc *)self)->ufunc, name);
}

static Py_hash_t shim_ufunc_hash(PyObject *self)
{
    return PyObject_Hash(((shim_ufunc *)self)->ufunc);
}

static PyObject *unwrap_ufunc(PyObject *o)
{
    return Py_IS_TYPE(o, &ShimUfunc_Type) ? ((shim_ufunc *)o)->ufunc : o;
}

static PyObject *shim_ufunc_richcompare(PyObject *a, PyObject *b, int op)
{
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    int same = unwrap_ufunc(a) == unwrap_ufunc(b);
    return Py_NewRef((same == (op == Py_EQ)) ? Py_True : Py_False);
}

static PyTypeObject ShimUfunc_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.ShimUfunc",
    .tp_basicsize = sizeof(shim_ufunc),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(shim_ufunc, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = shim_ufunc_dealloc,
    .tp_repr = shim_ufunc_repr,
    .tp_getattro = shim_ufunc_getattro,
    .tp_hash = shim_ufunc_hash,
    .tp_richcompare = shim_ufunc_richcompare,
    .tp_doc = "A NumPy ufunc as numdyn's shim records it inside compiled functions.",
};

static PyObject *ufunc_wrappers[ND_UF_COUNT];

PyObject *nd_shim_ufunc_wrapper(int uf)
{
    return (uf >= 0 && uf < ND_UF_COUNT) ? ufunc_wrappers[uf] : NULL;
}

int nd_shim_install_ufuncs(PyObject *module)
{
    if (PyType_Ready(&ShimUfunc_Type) < 0) return -1;
    for (int k = 0; k < ND_UF_COUNT; k++) {
        if (ufunc_wrappers[k]) continue;
        shim_ufunc *f = PyObject_New(shim_ufunc, &ShimUfunc_Type);
        if (!f) return -1;
        f->vectorcall = shim_ufunc_vectorcall;
        f->ufunc = Py_NewRef(nd_ufunc_object(k));
        f->uf = k;
        ufunc_wrappers[k] = (PyObject *)f;
    }
    /* every numpy name bound to a known ufunc (aliases too: abs/absolute,
     * pow/power, acos/arccos) unless the shim defines that name itself */
    PyObject *mdict = PyModule_GetDict(module), *npdict = PyModule_GetDict(nd_shim_numpy());
    Py_ssize_t pos = 0;
    PyObject *name, *val;
    while (PyDict_Next(npdict, &pos, &name, &val)) {
        int uf = nd_ufunc_lookup(val);
        if (uf < 0) continue;
        int has = PyDict_Contains(mdict, name);
        if (has < 0) return -1;
        if (!has && PyDict_SetItem(mdict, name, ufunc_wrappers[uf]) < 0) return -1;
    }
    return 0;
}

/* Ufuncs are installed by nd_shim_install_ufuncs once every area has
 * registered its functions (a def with a ufunc's name wins). */
int nd_shim_register_ufunc(nd_shim_table *tab)
{
    (void)tab;
    return 0;
}
