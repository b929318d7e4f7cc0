/* shim_create.c -- array creation as lazy nodes: zeros ones empty full
 * (+ _like), arange, linspace, eye, identity.
 *
 * Under a trace these never allocate: a constant array is a SCALAR node
 * broadcast by a 0-stride VIEW, and arange/linspace/eye are pointwise math
 * on INDEX (iota) nodes, so `out = np.zeros(n); out[1:] = expr` fuses.
 * `empty` is zeros (any content is what NumPy promises). dtype defaults,
 * lengths and errors follow NumPy (arange's length is NumPy's Python-number
 * arithmetic, its values start + i*delta with delta = (start+step) - start
 * in the result dtype, exactly as NumPy's fill loops).
 */
#include "shim_internal.h"
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ arguments */

static int shape_arg(PyObject *o, int *ndim, npy_intp *shape)
{
    PyObject *seq = nd_shim_shape_items(o);
    if (!seq) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > ND_MAXDIMS) {
        Py_DECREF(seq);
        nd_shim_unsupported("arrays of rank above %d are not supported in-graph", ND_MAXDIMS);
        return 1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t v;
        if (nd_shim_shape_item(PyTuple_GET_ITEM(seq, i), &v) < 0) { Py_DECREF(seq); return -1; }
        if (v < 0) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "negative dimensions are not allowed");
            return -1;
        }
        shape[i] = v;
    }
    Py_DECREF(seq);
    *ndim = (int)n;
    return 0;
}

/* like= / device= must be the defaults to stay in-graph */
static int plain_extras(PyObject *like, PyObject *device)
{
    if (like && like != Py_None) { nd_shim_unsupported("creation with like= is not supported in-graph"); return 1; }
    if (device && device != Py_None &&
        !(PyUnicode_Check(device) && PyUnicode_CompareWithASCIIString(device, "cpu") == 0)) {
        nd_shim_unsupported("creation with device= is not supported in-graph");
        return 1;
    }
    return 0;
}

static int dtype_or(PyObject *o, int dflt, int *out)
{
    int rc = nd_shim_dtype_arg(o, out);
    if (rc < 0) return -1;
    if (rc) { nd_shim_unsupported("array creation with a non-numeric dtype"); return 1; }
    if (*out < 0) *out = dflt;
    return 0;
}

/* value (any operand) broadcast to shape at dtype, unsafe cast like
 * np.copyto(..., casting='unsafe'); a Python int still has to fit. */
static PyObject *filled(nd_trace *t, int ndim, const npy_intp *shape, PyObject *value, int dtype)
{
    /* a broadcast scalar stands in for what NumPy allocates and fills */
    if (nd_shim_check_alloc(ndim, shape, dtype) < 0) return NULL;
    nd_operand op;
    int rc = nd_shim_operand(t, value, &op);
    if (rc) return NULL;
    /* NumPy's full is copyto(casting='unsafe') of the value */
    int via_cast;
    nd_id v = nd_shim_operand_node_unsafe(t, &op, dtype, &via_cast);
    /* cast the elements NumPy casts: none of an empty array */
    if (v == ND_NONE || (v = nd_shim_node_broadcast(t, v, ndim, shape)) == ND_NONE ||
        (v = nd_shim_node_cast_np(t, v, dtype)) == ND_NONE)
        return NULL;
    return nd_shim_wrap(t, v, 0);
}

static PyObject *const_filled(nd_trace *t, int ndim, const npy_intp *shape, long c, int dtype)
{
    if (nd_shim_check_alloc(ndim, shape, dtype) < 0) return NULL;  /* as filled() */
    PyObject *v = PyLong_FromLong(c);
    if (!v) return NULL;
    nd_id s = nd_shim_node_scalar(t, v, dtype, 0);
    Py_DECREF(v);
    if (s == ND_NONE || (s = nd_shim_node_broadcast(t, s, ndim, shape)) == ND_NONE) return NULL;
    return nd_shim_wrap(t, s, 0);
}

/* ------------------------------------------------------------ zeros & co */

/* NumPy's order= of a new array (zeros, ones, empty, full, eye): 'C' or
 * 'F', with NumPy's errors for the rest */
static int create_order(PyObject *o, char *out)
{
    *out = 'C';
    if (!o || o == Py_None) return 0;
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "order must be str, not %s", Py_TYPE(o)->tp_name);
        return -1;
    }
    char c = nd_shim_order_char(o, 0);
    if (!c) {
        PyErr_Format(PyExc_ValueError, "order must be one of 'C', 'F', 'A', or 'K' (got %R)", o);
        return -1;
    }
    if (c != 'C' && c != 'F') {
        PyErr_SetString(PyExc_ValueError, "only 'C' or 'F' order is permitted");
        return -1;
    }
    *out = c;
    return 0;
}

/* r laid out in memory as order= asked (a Fortran array's strides, ravel('K'),
 * tobytes('A') and flags are NumPy's) */
static PyObject *in_order(PyObject *r, char order)
{
    if (r && order == 'F') nd_proxy_set_order(r, NULL, 'F');
    return r;
}

/* zeros/ones/empty: shape, dtype, order; device, like */
static PyObject *const_create(nd_trace *t, PyObject **argv, long c)
{
    if (plain_extras(argv[4], argv[3])) return NULL;
    int ndim, dtype;
    npy_intp shape[ND_MAXDIMS];
    char order;
    if (shape_arg(argv[0], &ndim, shape) || dtype_or(argv[1], NPY_FLOAT64, &dtype) ||
        create_order(argv[2], &order))
        return NULL;
    return in_order(const_filled(t, ndim, shape, c, dtype), order);
}
static PyObject *zeros_impl(nd_trace *t, PyObject **argv) { return const_create(t, argv, 0); }
static PyObject *ones_impl(nd_trace *t, PyObject **argv) { return const_create(t, argv, 1); }

/* the dtype np.array(value) would have, for a fill value */
static int value_dtype(nd_trace *t, PyObject *value, int *out)
{
    nd_operand op;
    int rc = nd_shim_operand(t, value, &op);
    if (rc) return rc;
    if (op.weak && PyLong_Check(value)) {
        int fits = nd_shim_pyint_fits(value, NPY_INT64);
        if (fits < 0) return -1;
        if (!fits) { nd_shim_unsupported("fill value out of int64 range"); return 1; }
    }
    *out = op.dtype;
    return 0;
}

/* full: shape, fill_value, dtype, order; device, like */
static PyObject *full_impl(nd_trace *t, PyObject **argv)
{
    if (plain_extras(argv[5], argv[4])) return NULL;
    int ndim, dtype;
    npy_intp shape[ND_MAXDIMS];
    if (shape_arg(argv[0], &ndim, shape)) return NULL;
    int rc = nd_shim_dtype_arg(argv[2], &dtype);
    if (rc < 0) return NULL;
    if (rc) return nd_shim_unsupported("numpy.full with a non-numeric dtype");
    if (dtype < 0 && value_dtype(t, argv[1], &dtype)) return NULL;
    char order;
    if (create_order(argv[3], &order)) return NULL;
    return in_order(filled(t, ndim, shape, argv[1], dtype), order);
}

/* *_like: a, [fill_value,] dtype, order, subok, shape; device */
static PyObject *like_core(nd_trace *t, PyObject *a, PyObject *fill, long c, PyObject *dtarg,
                           PyObject *shape_o, PyObject *device, PyObject *order)
{
    if (plain_extras(NULL, device)) return NULL;
    nd_operand op;
    int rc = nd_shim_operand(t, a, &op);
    if (rc) return NULL;
    int dtype;
    if (dtype_or(dtarg, op.dtype, &dtype)) return NULL;
    int ndim = op.ndim;
    npy_intp shape[ND_MAXDIMS];
    memcpy(shape, op.shape, sizeof(npy_intp) * (size_t)ndim);
    int reshaped = shape_o && shape_o != Py_None;
    if (reshaped && shape_arg(shape_o, &ndim, shape)) return NULL;
    PyObject *r = fill ? filled(t, ndim, shape, fill, dtype) : const_filled(t, ndim, shape, c, dtype);
    /* laid out like a (NumPy's PyArray_NewLikeArray), unless given a shape */
    if (r && !reshaped) nd_proxy_set_order(r, a, nd_shim_order_char(order, 'K'));
    return r;
}
static PyObject *zeros_like_impl(nd_trace *t, PyObject **argv)
{ return like_core(t, argv[0], NULL, 0, argv[1], argv[4], argv[5], argv[2]); }
static PyObject *ones_like_impl(nd_trace *t, PyObject **argv)
{ return like_core(t, argv[0], NULL, 1, argv[1], argv[4], argv[5], argv[2]); }
static PyObject *full_like_impl(nd_trace *t, PyObject **argv)
{ return like_core(t, argv[0], argv[1], 0, argv[2], argv[5], argv[6], argv[3]); }

/* ------------------------------------------------------------ arange */

static int number_kind(PyObject *o)  /* 0 int/bool, 1 float, 2 complex, -1 other */
{
    if (PyBool_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Integer) || PyArray_IsScalar(o, Bool))
        return 0;
    if (PyFloat_Check(o) || PyArray_IsScalar(o, Floating)) return 1;
    if (PyComplex_Check(o) || PyArray_IsScalar(o, ComplexFloating)) return 2;
    return -1;
}

static nd_id scalar_at(nd_trace *t, PyObject *v, int dtype)
{
    if (PyTypeNum_ISINTEGER(dtype) && PyLong_Check(v)) {
        int fits = nd_shim_pyint_fits(v, dtype);
        if (fits < 0) return ND_NONE;
        if (!fits) {
            nd_shim_raise_pyint_overflow(v, dtype);
            return ND_NONE;
        }
    }
    if (PyTypeNum_ISINTEGER(dtype) && !nd_shim_index_like(v)) {
        /* float start/step with an integer dtype: C truncation, as NumPy's setitem */
        PyObject *i = PyNumber_Long(v);
        if (!i) return ND_NONE;
        nd_id r = nd_shim_node_scalar(t, i, dtype, 0);
        Py_DECREF(i);
        return r;
    }
    return nd_shim_node_scalar(t, v, dtype, 0);
}

static nd_id binop(nd_trace *t, int uf, nd_id a, nd_id b, int dtype)
{
    int loop[2] = {dtype, dtype};
    nd_id in[2] = {a, b};
    return nd_shim_node_ufunc(t, uf, in, loop, uf >= ND_UF_GREATER && uf <= ND_UF_EQUAL ? NPY_BOOL : dtype, 0);
}

/* start + i * delta over an INDEX of length n, computed in `work` dtype */
static nd_id ramp(nd_trace *t, npy_intp n, nd_id start, nd_id delta, int work)
{
    nd_id idx = nd_shim_node_index(t, 1, &n, 0);
    if (idx == ND_NONE || (idx = nd_shim_node_cast(t, idx, work)) == ND_NONE) return ND_NONE;
    nd_id m = binop(t, ND_UF_MULTIPLY, idx, delta, work);
    return m == ND_NONE ? ND_NONE : binop(t, ND_UF_ADD, start, m, work);
}

/* arange's dtype when none is given: as NumPy's PyArray_ArangeObj, its
 * arguments' types promoted with intp (a uint64 bound makes float64, a
 * NumPy float32 one float64, an int8 one int64). -1 with an exception or an
 * unsupported reason. */
static int arange_dtype(PyObject *start, PyObject *stop, PyObject *step)
{
    PyArray_Descr *d = PyArray_DescrFromType(NPY_INTP);
    PyObject *args[3] = {start, stop, step};
    for (int k = 0; d && k < 3; k++) Py_SETREF(d, PyArray_DescrFromObject(args[k], d));
    if (!d) return -1;
    int dt = d->type_num;
    Py_DECREF(d);
    if (dt == NPY_LONGLONG) dt = NPY_INT64;
    if (dt == NPY_ULONGLONG) dt = NPY_UINT64;
    if (!nd_dtype_ok(dt)) {
        nd_shim_unsupported("numpy.arange of a %s range", "non-numeric");
        return -1;
    }
    return dt;
}

/* arange: start_or_stop, stop, step; dtype, device, like */
static PyObject *arange_impl(nd_trace *t, PyObject **argv)
{
    if (plain_extras(argv[5], argv[4])) return NULL;
    PyObject *start = argv[0], *stop = argv[1], *step = argv[2];
    PyObject *zero = NULL, *one = NULL;
    if (!stop || stop == Py_None) {
        stop = start;
        start = zero = PyLong_FromLong(0);
        if (!zero) return NULL;
    }
    if (!step || step == Py_None) {
        step = one = PyLong_FromLong(1);
        if (!one) { Py_XDECREF(zero); return NULL; }
    }
    PyObject *r = NULL, *range = NULL, *q = NULL, *next = NULL;
    int ks = number_kind(start), ke = number_kind(stop), kp = number_kind(step);
    if (ks < 0 || ke < 0 || kp < 0 || ks == 2 || ke == 2 || kp == 2) {
        nd_shim_unsupported("numpy.arange of these argument types is not supported in-graph");
        goto done;
    }
    int dtype;
    if (dtype_or(argv[3], -1, &dtype)) goto done;
    if (dtype < 0 && (dtype = arange_dtype(start, stop, step)) < 0) goto done;
    if (PyTypeNum_ISCOMPLEX(dtype) || dtype == NPY_BOOL) {
        nd_shim_unsupported("numpy.arange with dtype %s is not supported in-graph", nd_dtype_name(dtype));
        goto done;
    }
    /* NumPy computes the length with Python number arithmetic (where that
     * fails -- a NumPy scalar bound overflowing -- NumPy says in its words) */
    if (!(range = PyNumber_Subtract(stop, start)) || !(q = PyNumber_TrueDivide(range, step))) {
        PyErr_Clear();
        nd_shim_unsupported("numpy.arange whose length NumPy cannot compute");
        goto done;
    }
    double qd = PyFloat_AsDouble(q);
    if (qd == -1.0 && PyErr_Occurred()) goto done;
    if (!isfinite(qd)) {
        nd_shim_unsupported("numpy.arange with a non-finite length");
        goto done;
    }
    double c = ceil(qd);
    if (qd == 0.0) {
        /* NumPy's _calc_length: a step so large that the quotient is 0 (an
         * infinite one, or one underflowing it) gives the start alone when
         * it points from start towards stop */
        int nz = PyObject_IsTrue(range);
        if (nz < 0) goto done;
        c = nz && !signbit(qd) ? 1.0 : 0.0;
    }
    if (c > 1e15) {
        nd_shim_unsupported("numpy.arange of this length");
        goto done;
    }
    npy_intp n = c > 0 ? (npy_intp)c : 0;
    if (!(next = PyNumber_Add(start, step))) goto done;
    /* the two first values in the result dtype; delta = second - first */
    int work = dtype == NPY_FLOAT16 ? NPY_FLOAT32 : PyTypeNum_ISINTEGER(dtype) ? NPY_INT64 : dtype;
    /* NumPy sets the first value only when there is one, the second only
     * when there are two (np.arange(300, 0, dtype=np.int8) is empty, the
     * start of np.arange(0, 5, np.inf) is not 0 * inf) */
    PyObject *zero0 = n ? NULL : PyLong_FromLong(0);
    if (!n && !zero0) goto done;
    nd_id s0 = scalar_at(t, n ? start : zero0, dtype);
    Py_XDECREF(zero0);
    nd_id s1 = s0 == ND_NONE ? ND_NONE : n <= 1 ? s0 : scalar_at(t, next, dtype);
    if (s1 == ND_NONE) goto done;
    s0 = nd_shim_node_cast(t, s0, work);
    s1 = s0 == ND_NONE ? ND_NONE : nd_shim_node_cast(t, s1, work);
    nd_id delta = s1 == ND_NONE ? ND_NONE : binop(t, ND_UF_SUBTRACT, s1, s0, work);
    nd_id v = delta == ND_NONE ? ND_NONE : ramp(t, n, s0, delta, work);
    if (v == ND_NONE || (v = nd_shim_node_cast(t, v, dtype)) == ND_NONE) goto done;
    r = nd_shim_wrap(t, v, 0);
done:
    Py_XDECREF(next);
    Py_XDECREF(q);
    Py_XDECREF(range);
    Py_XDECREF(zero);
    Py_XDECREF(one);
    return r;
}

/* ------------------------------------------------------------ linspace */

/* linspace: start, stop, num, endpoint, retstep, dtype, axis; device */
static PyObject *linspace_impl(nd_trace *t, PyObject **argv)
{
    if (plain_extras(NULL, argv[7])) return NULL;
    PyObject *start = argv[0], *stop = argv[1];
    int ks = number_kind(start), ke = number_kind(stop);
    if (ks < 0 || ke < 0 || ks == 2 || ke == 2)
        return nd_shim_unsupported("numpy.linspace of array or complex bounds is not supported in-graph");
    if (argv[6] && argv[6] != Py_None) {
        Py_ssize_t ax = PyNumber_AsSsize_t(argv[6], PyExc_OverflowError);
        if (ax == -1 && PyErr_Occurred()) return NULL;
        if (ax != 0 && ax != -1) {
            nd_shim_raise_axis_error((long)ax, 1);
            return NULL;
        }
    }
    Py_ssize_t num = 50;
    if (argv[2]) {
        PyObject *i = PyNumber_Index(argv[2]);
        if (!i) return NULL;
        num = PyLong_AsSsize_t(i);
        Py_DECREF(i);
        if (num == -1 && PyErr_Occurred()) return NULL;
    }
    if (num < 0) {
        PyErr_Format(PyExc_ValueError, "Number of samples, %zd, must be non-negative.", num);
        return NULL;
    }
    int endpoint = nd_shim_bool_arg(argv[3], 1), retstep = nd_shim_bool_arg(argv[4], 0);
    if (endpoint < 0 || retstep < 0) return NULL;
    /* dt = result_type(start, stop, float): float64 unless a float32/16
     * NumPy scalar bound makes it smaller */
    int dts[3] = {NPY_FLOAT64, NPY_FLOAT64, NPY_FLOAT64}, weak[3] = {1, 1, 1}, dt;
    nd_operand o0, o1;
    if (nd_shim_operand(t, start, &o0) || nd_shim_operand(t, stop, &o1)) return NULL;
    dts[0] = o0.dtype; weak[0] = o0.weak;
    dts[1] = o1.dtype; weak[1] = o1.weak;
    if (nd_shim_result_type(3, dts, weak, &dt) < 0) return NULL;
    if (dt == NPY_FLOAT16 || !PyTypeNum_ISFLOAT(dt)) dt = dt == NPY_FLOAT16 ? NPY_FLOAT16 : NPY_FLOAT64;
    int dtype;
    if (dtype_or(argv[5], dt, &dtype)) return NULL;
    Py_ssize_t div = endpoint ? num - 1 : num;
    /* delta and step as NumPy: np.subtract(stop, start, dtype=dt) / div */
    double a = PyFloat_AsDouble(start), b = PyFloat_AsDouble(stop);
    if ((a == -1.0 || b == -1.0) && PyErr_Occurred()) return NULL;
    double delta = b - a;
    if (dt == NPY_FLOAT32) delta = (double)(float)((float)b - (float)a);
    double step = div > 0 ? delta / (double)div : NAN;
    if (dt == NPY_FLOAT32 && div > 0) step = (double)((float)delta / (float)div);
    npy_intp n = num;
    PyObject *ps = PyFloat_FromDouble(a), *pd = PyFloat_FromDouble(div > 0 && step != 0 ? step : delta);
    if (!ps || !pd) { Py_XDECREF(ps); Py_XDECREF(pd); return NULL; }
    nd_id s0 = nd_shim_node_scalar(t, ps, dt, 0);
    nd_id sd = s0 == ND_NONE ? ND_NONE : nd_shim_node_scalar(t, pd, dt, 0);
    Py_DECREF(ps);
    Py_DECREF(pd);
    if (sd == ND_NONE) return NULL;
    nd_id idx = nd_shim_node_index(t, 1, &n, 0);
    nd_id y = idx == ND_NONE ? ND_NONE : nd_shim_node_cast(t, idx, dt);
    if (y == ND_NONE) return NULL;
    if (div > 0 && step == 0) {
        PyObject *pv = PyFloat_FromDouble((double)div);
        nd_id dv = pv ? nd_shim_node_scalar(t, pv, dt, 0) : ND_NONE;
        Py_XDECREF(pv);
        if (dv == ND_NONE || (y = binop(t, ND_UF_TRUE_DIVIDE, y, dv, dt)) == ND_NONE) return NULL;
    }
    if ((y = binop(t, ND_UF_MULTIPLY, y, sd, dt)) == ND_NONE) return NULL;
    if ((y = binop(t, ND_UF_ADD, y, s0, dt)) == ND_NONE) return NULL;
    if (endpoint && num > 1) {
        /* y[-1] = stop */
        PyObject *pb = PyFloat_FromDouble(b), *last = PyLong_FromSsize_t(num - 1);
        nd_id sb = pb ? nd_shim_node_scalar(t, pb, dt, 0) : ND_NONE;
        nd_id sl = last && sb != ND_NONE ? nd_shim_node_scalar(t, last, NPY_INT64, 0) : ND_NONE;
        Py_XDECREF(pb);
        Py_XDECREF(last);
        nd_id i2 = sl == ND_NONE ? ND_NONE : nd_shim_node_index(t, 1, &n, 0);
        nd_id is_last = i2 == ND_NONE ? ND_NONE : binop(t, ND_UF_EQUAL, i2, sl, NPY_INT64);
        if (is_last == ND_NONE || (y = nd_shim_node_where(t, is_last, sb, y, dt)) == ND_NONE) return NULL;
    }
    if (PyTypeNum_ISINTEGER(dtype) || dtype == NPY_BOOL) {
        int loop[1] = {dt};
        if ((y = nd_shim_node_ufunc(t, ND_UF_FLOOR, &y, loop, dt, 0)) == ND_NONE) return NULL;
    }
    if ((y = nd_shim_node_cast(t, y, dtype)) == ND_NONE) return NULL;
    PyObject *res = nd_shim_wrap(t, y, 0);
    if (!res || !retstep) return res;
    /* NumPy's step where there is none (div <= 0) is the Python float nan */
    PyObject *st = div <= 0 ? PyFloat_FromDouble(NAN)
                            : PyArray_Scalar(&step, PyArray_DescrFromType(NPY_FLOAT64), NULL);
    if (st && div > 0 && dt != NPY_FLOAT64) {
        PyObject *d = nd_shim_descr(dt);
        PyObject *cast = d ? PyObject_CallMethod(d, "type", "O", st) : NULL;
        Py_XDECREF(d);
        Py_SETREF(st, cast);
    }
    if (!st) { Py_DECREF(res); return NULL; }
    PyObject *tup = PyTuple_Pack(2, res, st);
    Py_DECREF(res);
    Py_DECREF(st);
    return tup;
}

/* ------------------------------------------------------------ eye */

static PyObject *eye_core(nd_trace *t, PyObject *N, PyObject *M, PyObject *k, PyObject *dtarg)
{
    Py_ssize_t n = PyNumber_AsSsize_t(N, PyExc_OverflowError), m = n, kk = 0;
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (M && M != Py_None && (m = PyNumber_AsSsize_t(M, PyExc_OverflowError)) == -1 && PyErr_Occurred())
        return NULL;
    if (k && (kk = PyNumber_AsSsize_t(k, PyExc_OverflowError)) == -1 && PyErr_Occurred()) return NULL;
    if (n < 0 || m < 0) {
        PyErr_SetString(PyExc_ValueError, "negative dimensions are not allowed");
        return NULL;
    }
    int dtype;
    if (dtype_or(dtarg, NPY_FLOAT64, &dtype)) return NULL;
    npy_intp shape[2] = {n, m};
    nd_id r = nd_shim_node_index(t, 2, shape, 0);
    nd_id c = r == ND_NONE ? ND_NONE : nd_shim_node_index(t, 2, shape, 1);
    nd_id d = c == ND_NONE ? ND_NONE : binop(t, ND_UF_SUBTRACT, c, r, NPY_INT64);
    PyObject *kv = PyLong_FromSsize_t(kk);
    nd_id ks = kv && d != ND_NONE ? nd_shim_node_scalar(t, kv, NPY_INT64, 0) : ND_NONE;
    Py_XDECREF(kv);
    nd_id e = ks == ND_NONE ? ND_NONE : binop(t, ND_UF_EQUAL, d, ks, NPY_INT64);
    if (e == ND_NONE || (e = nd_shim_node_cast(t, e, dtype)) == ND_NONE) return NULL;
    return nd_shim_wrap(t, e, 0);
}

/* eye: N, M, k, dtype, order; device, like */
static PyObject *eye_impl(nd_trace *t, PyObject **argv)
{
    if (plain_extras(argv[6], argv[5])) return NULL;
    char order;
    if (create_order(argv[4], &order)) return NULL;
    return in_order(eye_core(t, argv[0], argv[1], argv[2], argv[3]), order);
}

/* identity: n, dtype; like */
static PyObject *identity_impl(nd_trace *t, PyObject **argv)
{
    if (plain_extras(argv[2], NULL)) return NULL;
    return eye_core(t, argv[0], NULL, NULL, argv[1]);
}

/* np.ndarray(shape, dtype, buffer, offset, strides, order) called directly
 * (trace_remap.c): without a buffer it allocates as np.empty does, so the
 * stores that fill it stay in the graph (NPBench nbody: `KE =
 * np.ndarray(Nt + 1)`, then `KE[i + 1] = lazy` each step), in C or F
 * order. Anything else is
 * NumPy's constructor itself, called as given: no graph break, as when the
 * call was not renamed. */
static PyObject *ndarray_impl(nd_trace *t, PyObject **argv)
{
    char order = !argv[5] || argv[5] == Py_None ? 'C' : 0;
    if (!order && PyUnicode_Check(argv[5]))
        order = !PyUnicode_CompareWithASCIIString(argv[5], "C") ? 'C'
                : !PyUnicode_CompareWithASCIIString(argv[5], "F") ? 'F' : 0;
    int plain = order && (!argv[2] || argv[2] == Py_None) && (!argv[4] || argv[4] == Py_None);
    if (plain && argv[3] && !(PyLong_CheckExact(argv[3]) && PyLong_AsLong(argv[3]) == 0)) {
        PyErr_Clear();
        plain = 0;
    }
    if (plain) {
        int ndim, dtype;
        npy_intp shape[ND_MAXDIMS];
        int rc = shape_arg(argv[0], &ndim, shape);
        if (rc < 0 || (rc == 0 && (rc = dtype_or(argv[1], NPY_FLOAT64, &dtype)) < 0)) return NULL;
        if (rc == 0) return in_order(const_filled(t, ndim, shape, 0, dtype), order);
        (void)nd_shim_take_unsupported();
    }
    PyObject *args = PyTuple_New(6);
    if (!args) return NULL;
    for (int i = 0; i < 6; i++) {
        PyObject *v = argv[i] ? argv[i] : (i == 3 ? PyLong_FromLong(0) : Py_NewRef(Py_None));
        if (argv[i]) Py_INCREF(v);
        if (!v) { Py_DECREF(args); return NULL; }
        PyTuple_SET_ITEM(args, i, v);
    }
    PyObject *r = PyObject_Call((PyObject *)&PyArray_Type, args, NULL);
    Py_DECREF(args);
    return r;
}

static const nd_shim_def call_only[] = {
    {"ndarray", "shape|dtype,buffer,offset,strides,order", ndarray_impl, ND_SHIM_CREATE},
    {NULL},
};

static const nd_shim_def functions[] = {
    {"zeros", "shape|dtype,order;device,like", zeros_impl, ND_SHIM_CREATE},
    {"empty", "shape|dtype,order;device,like", zeros_impl, ND_SHIM_CREATE},
    {"ones", "shape|dtype,order;device,like", ones_impl, ND_SHIM_CREATE},
    {"full", "shape,fill_value|dtype,order;device,like", full_impl, ND_SHIM_CREATE},
    {"zeros_like", "a|dtype,order,subok,shape;device", zeros_like_impl, ND_SHIM_CREATE},
    {"empty_like", "prototype|dtype,order,subok,shape;device", zeros_like_impl, ND_SHIM_CREATE},
    {"ones_like", "a|dtype,order,subok,shape;device", ones_like_impl, ND_SHIM_CREATE},
    {"full_like", "a,fill_value|dtype,order,subok,shape;device", full_like_impl, ND_SHIM_CREATE},
    {"arange", "start_or_stop|stop,step;dtype,device,like", arange_impl, ND_SHIM_CREATE},
    {"linspace", "start,stop|num,endpoint,retstep,dtype,axis;device", linspace_impl, ND_SHIM_CREATE},
    {"eye", "N|M,k,dtype,order;device,like", eye_impl, ND_SHIM_CREATE},
    {"identity", "n|dtype;like", identity_impl, ND_SHIM_CREATE},
    {NULL},
};

int nd_shim_register_create(nd_shim_table *tab)
{
    return nd_shim_add_functions(tab, functions) < 0 ? -1 : nd_shim_add_call_only(tab, call_only);
}
