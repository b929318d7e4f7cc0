/* shim_elementwise.c -- elementwise functions that are not single ufuncs:
 * where (3-arg), clip, round/around, isclose/allclose, nan_to_num, astype,
 * asarray/array/ascontiguousarray, result_type, can_cast; and the ndarray
 * methods astype, fill, item, clip, round, conj/conjugate.
 *
 * Each is composed of UFUNC/CAST/WHERE nodes with NumPy's NEP 50 typing,
 * following NumPy's own Python implementation where it has one (isclose,
 * nan_to_num), so values and dtypes agree.
 */
#include "shim_internal.h"
#include <math.h>
#include <float.h>
#include <string.h>

/* a ufunc applied through the shim's full ufunc path (typing, weak scalars) */
static PyObject *uf2(int uf, PyObject *a, PyObject *b) { return nd_shim_ufunc2(uf, a, b); }
static PyObject *uf1(int uf, PyObject *a) { return nd_shim_ufunc1(uf, a); }

/* ------------------------------------------------------------ where */

static PyObject *where_impl(nd_trace *t, PyObject **argv)
{
    if (!argv[1] && !argv[2])
        return nd_shim_unsupported("numpy.where with one argument has a data-dependent shape");
    if (!argv[1] || !argv[2]) {
        PyErr_SetString(PyExc_ValueError, "either both or neither of x and y should be given");
        return NULL;
    }
    nd_operand c, x, y;
    if (nd_shim_operand(t, argv[0], &c) || nd_shim_operand(t, argv[1], &x) ||
        nd_shim_operand(t, argv[2], &y))
        return NULL;
    int dts[2] = {x.dtype, y.dtype}, weak[2] = {x.weak, y.weak}, dt;
    if (nd_shim_result_type(2, dts, weak, &dt) < 0) return NULL;
    if (c.weak && (c.id = nd_shim_operand_node(t, &c, c.dtype)) == ND_NONE) return NULL;
    /* np.where casts x and y to the result dtype unsafely: a weak 300
     * into int8 wraps (it does not raise like a ufunc operand) */
    nd_operand *xy[2] = {&x, &y};
    for (int k = 0; k < 2; k++) {
        nd_operand *o = xy[k];
        if (!o->weak) continue;
        /* a weak value taking a float/complex result dtype is converted to
         * it directly (2**64 into complex64 is fine, not an int64 overflow) */
        int at = (PyTypeNum_ISFLOAT(dt) || PyTypeNum_ISCOMPLEX(dt)) ? dt : o->dtype;
        if ((o->id = nd_shim_node_scalar(t, o->obj, at, 1)) == ND_NONE) return NULL;
        o->dtype = at;
        o->weak = 0;
    }
    nd_id xi = nd_shim_operand_at(t, &x, dt);
    nd_id yi = xi == ND_NONE ? ND_NONE : nd_shim_operand_at(t, &y, dt);
    nd_id r = yi == ND_NONE ? ND_NONE : nd_shim_node_where(t, c.id, xi, yi, dt);
    return nd_shim_wrap_k(t, r, 0, 3, (PyObject *const *)argv, 1);
}

/* ------------------------------------------------------------ clip */

static int dtype_of_result(PyObject *r)
{
    PyObject *d = PyObject_GetAttrString(r, "dtype");
    if (!d) return -1;
    int t = PyArray_DescrCheck(d) ? ((PyArray_Descr *)d)->type_num : -1;
    if (t == NPY_LONGLONG) t = NPY_INT64;
    if (t == NPY_ULONGLONG) t = NPY_UINT64;
    Py_DECREF(d);
    return t;
}

/* the clip result dtype from NumPy itself on one-element stand-ins */
static int clip_dtype(nd_trace *t, nd_operand *ops, int n)
{
    PyObject *args = PyTuple_New(n);
    if (!args) return -1;
    for (int i = 0; i < n; i++) {
        PyObject *o;
        if (!ops[i].obj || ops[i].obj == Py_None) { o = Py_None; Py_INCREF(o); }
        else if (ops[i].weak) { o = ops[i].obj; Py_INCREF(o); }
        else {
            npy_intp one = 1;
            o = PyArray_Zeros(i == 0 ? 1 : 0, &one, PyArray_DescrFromType(ops[i].dtype), 0);
        }
        if (!o) { Py_DECREF(args); return -1; }
        PyTuple_SET_ITEM(args, i, o);
    }
    PyObject *f = PyObject_GetAttrString(nd_shim_numpy(), "clip");
    PyObject *r = f ? PyObject_Call(f, args, NULL) : NULL;
    Py_XDECREF(f);
    Py_DECREF(args);
    if (!r) return -1;
    int dt = dtype_of_result(r);
    Py_DECREF(r);
    if (dt < 0 || !nd_dtype_ok(dt)) {
        if (!PyErr_Occurred()) nd_shim_unsupported("numpy.clip to a non-numeric dtype");
        return -2;
    }
    return dt;
}

/* clamp a weak Python int bound into an integer dtype's range (NumPy's clip
 * accepts out-of-range Python ints and compares true values) */
static PyObject *clamped_bound(PyObject *v, int dtype)
{
    if (!PyLong_Check(v) || !PyTypeNum_ISINTEGER(dtype)) { Py_INCREF(v); return v; }
    int fits = nd_shim_pyint_fits(v, dtype);
    if (fits < 0) return NULL;
    if (fits) { Py_INCREF(v); return v; }
    PyObject *zero = PyLong_FromLong(0);
    int neg = zero ? PyObject_RichCompareBool(v, zero, Py_LT) : -1;
    Py_XDECREF(zero);
    if (neg < 0) return NULL;
    PyObject *info = PyObject_CallMethod(nd_shim_numpy(), "iinfo", "N", nd_shim_descr(dtype));
    if (!info) return NULL;
    PyObject *b = PyObject_GetAttrString(info, neg ? "min" : "max");
    Py_DECREF(info);
    return b;
}

static PyObject *clip_core(nd_trace *t, PyObject *a, PyObject *lo, PyObject *hi, PyObject *out)
{
    if (lo == Py_None) lo = NULL;
    if (hi == Py_None) hi = NULL;
    nd_operand ops[3];
    if (nd_shim_operand(t, a, &ops[0])) return NULL;
    ops[1].obj = lo; ops[1].weak = 0;
    ops[2].obj = hi; ops[2].weak = 0;
    if (lo && nd_shim_operand(t, lo, &ops[1])) return NULL;
    if (hi && nd_shim_operand(t, hi, &ops[2])) return NULL;
    {   /* np.clip is one ufunc of the given operands: a shape error names
         * each one's shape, not those of a maximum and a minimum */
        int nds[3], n = 0, ond;
        const npy_intp *shs[3];
        npy_intp osh[ND_MAXDIMS];
        for (int k = 0; k < 3; k++)
            if (k == 0 || ops[k].obj) { nds[n] = ops[k].ndim; shs[n++] = ops[k].shape; }
        if (nd_shim_broadcast(n, nds, shs, &ond, osh) < 0) return NULL;
    }
    int dt = clip_dtype(t, ops, 3);
    if (dt < 0) return NULL;
    nd_id x = nd_shim_operand_at(t, &ops[0], dt);
    if (x == ND_NONE) return NULL;
    for (int k = 1; k < 3; k++) {
        if (!ops[k].obj) continue;
        nd_id b;
        if (ops[k].weak) {
            PyObject *v = clamped_bound(ops[k].obj, dt);
            b = v ? nd_shim_node_scalar(t, v, dt, 1) : ND_NONE;
            Py_XDECREF(v);
        } else {
            b = nd_shim_node_cast(t, ops[k].id, dt);
        }
        if (b == ND_NONE) return NULL;
        int loop[2] = {dt, dt};
        nd_id in[2] = {x, b};
        x = nd_shim_node_ufunc(t, k == 1 ? ND_UF_MAXIMUM : ND_UF_MINIMUM, in, loop, dt, 0);
        if (x == ND_NONE) return NULL;
        /* a bound's tie is the clipped value's (graph.h, autodiff) */
        nd_node *xn = nd_graph_node(nd_trace_graph(t), x);
        if (xn->op == ND_OP_UFUNC && xn->nin == 2 && xn->in[0] == in[0]) xn->flags |= ND_F_CLIP;
    }
    if (!lo && !hi && (x = nd_shim_node_reshape(t, x, ops[0].ndim, ops[0].shape)) == ND_NONE) return NULL;
    if (out && out != Py_None) {
        /* a ufunc's out=: a 1-tuple holds the array; any out= not plainly
         * fine (another shape, a cast NumPy refuses) is NumPy's to check */
        static const nd_shim_out_rule rule = {1, -1, NPY_SAME_KIND_CASTING, "clip",
                                              NPY_SAME_KIND_CASTING,
                                              "numpy.clip with an out= NumPy checks itself"};
        return nd_shim_out_result(t, out, x, &rule);
    }
    /* np.clip is a ufunc in NumPy 2: a 0-d result is a NumPy scalar */
    PyObject *in3[3] = {a, lo, hi};
    return nd_shim_wrap_k(t, x, nd_shim_node_ndim(t, x) == 0, 3, in3, 1);
}

/* clip: a, a_min, a_max, out; min, max */
static PyObject *clip_impl(nd_trace *t, PyObject **argv)
{
    PyObject *lo = argv[1], *hi = argv[2];
    if (argv[4]) {
        if (lo) { PyErr_SetString(PyExc_TypeError, "Passed `min` and `a_min`, but only one may be given."); return NULL; }
        lo = argv[4];
    }
    if (argv[5]) {
        if (hi) { PyErr_SetString(PyExc_TypeError, "Passed `max` and `a_max`, but only one may be given."); return NULL; }
        hi = argv[5];
    }
    return clip_core(t, argv[0], lo ? lo : Py_None, hi ? hi : Py_None, argv[3]);
}

/* ndarray.clip(min=None, max=None, out=None) */
static PyObject *clip_method(nd_trace *t, PyObject **argv)
{
    return clip_core(t, argv[0], argv[1] ? argv[1] : Py_None, argv[2] ? argv[2] : Py_None, argv[3]);
}

/* ------------------------------------------------------------ round */

/* numpy.<name> (borrowed, looked up once; NumPy's functions live as long as
 * the numpy module) */
static PyObject *numpy_attr(const char *name)
{
    static PyObject *cache[4];
    static const char *names[4];
    for (int i = 0; i < 4; i++) {
        if (names[i] && strcmp(names[i], name) == 0) return cache[i];
        if (!names[i]) {
            PyObject *f = PyObject_GetAttrString(nd_shim_numpy(), name);
            if (!f) return NULL;
            cache[i] = f;
            names[i] = name;
            return f;
        }
    }
    PyErr_SetString(PyExc_SystemError, "numdyn shim: numpy_attr cache full");
    return NULL;
}

static PyObject *round_core(nd_trace *t, PyObject *a, PyObject *decimals, PyObject *out)
{
    Py_ssize_t d = 0;
    if (decimals && (d = PyNumber_AsSsize_t(decimals, PyExc_OverflowError)) == -1 && PyErr_Occurred())
        return NULL;
    nd_operand op;
    if (nd_shim_operand(t, a, &op)) return NULL;
    if (op.weak && (op.id = nd_shim_operand_node(t, &op, op.dtype)) == ND_NONE) return NULL;
    /* NumPy's round gives a NumPy scalar for any 0-d input (ndarray.round
     * goes through ufuncs) */
    int scalar = op.ndim == 0;
    PyObject *r;
    if (op.dtype == NPY_BOOL && d != 0)  /* NumPy raises its casting error */
        return nd_shim_unsupported("numpy.round of booleans with decimals != 0");
    if (PyTypeNum_ISCOMPLEX(op.dtype) || (PyTypeNum_ISINTEGER(op.dtype) && d < 0)) {
        /* complex parts are rounded separately and integers with decimals
         * < 0 in integer arithmetic: NumPy's own round, inside the program */
        PyObject *tmpl = Py_BuildValue("(Nn)", nd_extern_placeholder(0), d);
        PyObject *fn = tmpl ? numpy_attr("round") : NULL;
        nd_id e = fn ? nd_shim_node_extern(t, fn, tmpl, NULL, 1, &op.id, -1, op.dtype,
                                           op.ndim, op.shape)
                     : ND_NONE;
        Py_XDECREF(tmpl);
        r = e == ND_NONE ? NULL : nd_shim_wrap(t, e, scalar);
        goto stored;
    }
    PyObject *p = nd_shim_wrap(t, op.id, scalar);
    if (!p) return NULL;
    if (op.dtype == NPY_BOOL) {
        r = uf1(ND_UF_RINT, p);  /* NumPy: rint's bool loop gives float16 */
    } else if (PyTypeNum_ISINTEGER(op.dtype)) {
        /* NumPy returns a copy for integers with decimals >= 0 */
        nd_id c = nd_shim_node_reshape(t, op.id, op.ndim, op.shape);
        r = c == ND_NONE ? NULL : nd_shim_wrap(t, c, scalar);
    } else if (d == 0) {
        r = uf1(ND_UF_RINT, p);
    } else {
        /* NumPy: multiply by 10**d (a Python float: weak), rint, divide */
        double f = pow(10.0, (double)(d < 0 ? -d : d));
        PyObject *pf = PyFloat_FromDouble(f), *y = NULL, *z = NULL;
        if (pf) y = uf2(d > 0 ? ND_UF_MULTIPLY : ND_UF_TRUE_DIVIDE, p, pf);
        if (y) z = uf1(ND_UF_RINT, y);
        r = z ? uf2(d > 0 ? ND_UF_TRUE_DIVIDE : ND_UF_MULTIPLY, z, pf) : NULL;
        Py_XDECREF(pf);
        Py_XDECREF(y);
        Py_XDECREF(z);
    }
    Py_DECREF(p);
stored:
    /* NumPy's PyArray_Round: the scaled float path (and integers scaled
     * down) allocate in order 'A'; rint and the integer copy keep 'K' */
    if (r && ((PyTypeNum_ISFLOAT(op.dtype) && d != 0) || (PyTypeNum_ISINTEGER(op.dtype) && d < 0)))
        nd_proxy_set_order(r, a, 'A');
    else if (r)
        nd_proxy_set_korder(r, 1, &a, 1);
    if (!r || !out || out == Py_None) return r;
    nd_id v = nd_proxy_read(r);
    Py_DECREF(r);
    /* NumPy's round writes out= through its ufuncs (same_kind casts) and
     * wants exactly the result's shape; other out= are NumPy's to refuse */
    static const nd_shim_out_rule rule = {0, -1, NPY_SAME_KIND_CASTING, NULL, NPY_UNSAFE_CASTING,
                                          "numpy.round with an out= NumPy checks itself"};
    return nd_shim_out_result(t, out, v, &rule);
}

static PyObject *round_impl(nd_trace *t, PyObject **argv) { return round_core(t, argv[0], argv[1], argv[2]); }

/* ------------------------------------------------------------ isclose */

/* Whether NumPy's isclose takes tolerance v without its "One of rtol or
 * atol is not valid" check firing (np.all(np.isfinite(v))): 1 yes, 0 no or
 * not known (NumPy then runs isclose: its warning, its errors), -1 error.
 * A computed tolerance is computed now for it. */
static int plain_finite_tol(PyObject *v)
{
    if (!v || PyLong_Check(v)) return 1;
    if (PyFloat_Check(v)) return isfinite(PyFloat_AS_DOUBLE(v));
    PyObject *c = nd_proxy_check(v) ? nd_trace_materialize(v, NULL) : Py_NewRef(v);
    if (!c) return -1;
    PyObject *fn = nd_xj_np_attr("isfinite");
    PyObject *f = fn ? PyObject_CallOneArg(fn, c) : NULL;
    PyObject *all = f ? PyObject_CallMethod(f, "all", NULL) : NULL;
    int ok = all ? PyObject_IsTrue(all) : 0;
    Py_XDECREF(fn); Py_XDECREF(f); Py_XDECREF(all);
    Py_DECREF(c);
    PyErr_Clear();  /* not a number NumPy's isfinite takes: NumPy's isclose says so */
    return ok > 0;
}

/* as numpy/_core/numeric.py isclose, NumPy 2. NumPy computes it under
 * errstate(invalid='ignore'): |inf - inf| and rtol * |inf| with rtol 0 are
 * invalid there, and a graph runs under one error state. So the arithmetic
 * reads y where it is finite and 0 elsewhere -- the result there is x == y
 * alone (isfinite(y) is false) -- which, with finite tolerances, can raise
 * no invalid flag; overflow still warns, as NumPy's. Other tolerances
 * (non-finite: NumPy's own warning; arrays) are NumPy's to take. */
static PyObject *isclose_core(nd_trace *t, PyObject *a, PyObject *b, PyObject *rtol, PyObject *atol,
                              PyObject *equal_nan)
{
    int okr = plain_finite_tol(rtol), oka = okr > 0 ? plain_finite_tol(atol) : okr;
    if (oka < 0) return NULL;
    if (!oka)
        return nd_shim_unsupported("numpy.isclose with tolerances other than finite Python numbers");
    PyObject *one = PyFloat_FromDouble(1.0);
    PyObject *x = a, *y = b, *yy = NULL, *r = NULL, *fin = NULL, *yf = NULL;
    PyObject *rt = rtol ? rtol : NULL, *at = atol ? atol : NULL;
    PyObject *rtd = NULL, *atd = NULL;
    if (!one) return NULL;
    if (!rt) rt = rtd = PyFloat_FromDouble(1e-05);
    if (!at) at = atd = PyFloat_FromDouble(1e-08);
    nd_operand oy;
    if (!rt || !at || nd_shim_operand(t, y, &oy)) goto done;
    if (!oy.weak) {
        /* y = asanyarray(y, dtype=result_type(y, 1.)) */
        int dts[2] = {oy.dtype, NPY_FLOAT64}, w[2] = {0, 1}, dt;
        if (nd_shim_result_type(2, dts, w, &dt) < 0) goto done;
        nd_id c = nd_shim_node_cast(t, oy.id, dt);
        if (c == ND_NONE || !(yy = nd_shim_wrap(t, c, oy.is_scalar && oy.ndim == 0))) goto done;
        y = yy;
    } else if (PyLong_Check(y)) {
        if (!(yy = PyNumber_Float(y))) goto done;
        y = yy;
    }
    if (!(fin = uf1(ND_UF_ISFINITE, y))) goto done;
    if (PyFloat_Check(y)) {
        yf = PyFloat_FromDouble(isfinite(PyFloat_AS_DOUBLE(y)) ? PyFloat_AS_DOUBLE(y) : 0.0);
    } else {
        PyObject *zero = PyLong_FromLong(0);
        PyObject *wargv[3] = {fin, y, zero};
        yf = zero ? where_impl(t, wargv) : NULL;
        Py_XDECREF(zero);
    }
    if (!yf) goto done;
    {
        PyObject *diff = uf2(ND_UF_SUBTRACT, x, yf);
        PyObject *adiff = diff ? uf1(ND_UF_ABSOLUTE, diff) : NULL;
        PyObject *ay = adiff ? uf1(ND_UF_ABSOLUTE, yf) : NULL;
        PyObject *rtay = ay ? uf2(ND_UF_MULTIPLY, rt, ay) : NULL;
        PyObject *tol = rtay ? uf2(ND_UF_ADD, at, rtay) : NULL;
        PyObject *le = tol ? uf2(ND_UF_LESS_EQUAL, adiff, tol) : NULL;
        PyObject *lf = le ? uf2(ND_UF_BITWISE_AND, le, fin) : NULL;
        PyObject *eq = lf ? uf2(ND_UF_EQUAL, x, y) : NULL;
        r = eq ? uf2(ND_UF_BITWISE_OR, lf, eq) : NULL;
        Py_XDECREF(diff); Py_XDECREF(adiff); Py_XDECREF(ay); Py_XDECREF(rtay); Py_XDECREF(tol);
        Py_XDECREF(le); Py_XDECREF(lf); Py_XDECREF(eq);
    }
    if (r && equal_nan && PyObject_IsTrue(equal_nan) == 1) {
        PyObject *nx = uf1(ND_UF_ISNAN, x), *ny = nx ? uf1(ND_UF_ISNAN, y) : NULL;
        PyObject *both = ny ? uf2(ND_UF_BITWISE_AND, nx, ny) : NULL;
        PyObject *r2 = both ? uf2(ND_UF_BITWISE_OR, r, both) : NULL;
        Py_XDECREF(nx); Py_XDECREF(ny); Py_XDECREF(both);
        Py_SETREF(r, r2);
    }
done:
    Py_XDECREF(fin);
    Py_XDECREF(yf);
    Py_XDECREF(yy);
    Py_XDECREF(rtd);
    Py_XDECREF(atd);
    Py_DECREF(one);
    return r;
}

static PyObject *isclose_impl(nd_trace *t, PyObject **argv)
{
    /* NumPy's isclose works on warnings-suppressed floats; values agree */
    PyObject *r = isclose_core(t, argv[0], argv[1], argv[2], argv[3], argv[4]);
    if (r) nd_proxy_set_korder(r, 2, argv, 1);
    if (r && nd_proxy_check(r) && nd_proxy_ndim(r) == 0 && !nd_proxy_is_scalar(r)) {
        /* result[()] : 0-d results are NumPy scalars */
        nd_id id = nd_proxy_read(r);
        Py_DECREF(r);
        return id == ND_NONE ? NULL : nd_shim_wrap(t, id, 1);
    }
    return r;
}

/* allclose returns a Python bool: a concrete value, so a graph break */
static PyObject *allclose_impl(nd_trace *t, PyObject **argv)
{
    PyObject *r = isclose_core(t, argv[0], argv[1], argv[2], argv[3], argv[4]);
    if (!r) return NULL;
    nd_operand op;
    if (nd_shim_operand(t, r, &op)) { Py_DECREF(r); return NULL; }
    Py_DECREF(r);
    uint64_t mask = op.ndim ? ((1ULL << op.ndim) - 1) : 0;
    nd_id all = nd_shim_node_reduce(t, ND_UF_LOGICAL_AND, op.id, mask, 0, NPY_BOOL, NPY_BOOL, ND_NONE);
    PyObject *p = nd_shim_wrap(t, all, 1);
    if (!p) return NULL;
    PyObject *v = nd_trace_materialize(p, "numpy.allclose returns a Python bool");
    Py_DECREF(p);
    if (!v) return NULL;
    int b = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (b < 0) return NULL;
    return PyBool_FromLong(b);
}

/* ------------------------------------------------------------ nan_to_num */

static PyObject *nan_to_num_impl(nd_trace *t, PyObject **argv)
{
    nd_operand op;
    if (nd_shim_operand(t, argv[0], &op)) return NULL;
    if (op.weak && (op.id = nd_shim_operand_node(t, &op, op.dtype)) == ND_NONE) return NULL;
    int dt = op.dtype;
    int nocopy = argv[1] ? PyObject_IsTrue(argv[1]) == 0 : 0;
    if (nocopy && !nd_proxy_check(argv[0]))
        return nd_shim_unsupported("numpy.nan_to_num(copy=False) of a non-lazy array");
    /* np.array(x, copy=False) first: a NumPy scalar (s = x.sum()) has no
     * array to write into, never its own storage */
    if (nocopy && nd_proxy_is_scalar(argv[0])) return nd_err_copy_unavoidable();
    nd_id x = op.id;
    if (PyTypeNum_ISCOMPLEX(dt)) {
        /* each part replaced separately: NumPy's own nan_to_num inside the
         * program (nan/posinf/neginf must be plain numbers to be kept in the
         * node's hashable template) */
        PyObject *kw = PyDict_New();
        static const char *keys[3] = {"nan", "posinf", "neginf"};
        for (int k = 0; kw && k < 3; k++) {
            PyObject *v = argv[2 + k];
            if (!v || v == Py_None) continue;
            if (!PyFloat_Check(v) && !PyLong_Check(v) && !PyComplex_Check(v) &&
                !PyArray_IsScalar(v, Number)) {
                Py_DECREF(kw);
                return nd_shim_unsupported("numpy.nan_to_num of complex values with array fill values");
            }
            if (PyDict_SetItemString(kw, keys[k], v) < 0) Py_CLEAR(kw);
        }
        PyObject *tmpl = kw ? Py_BuildValue("(N)", nd_extern_placeholder(0)) : NULL;
        PyObject *fn = tmpl ? numpy_attr("nan_to_num") : NULL;
        x = fn ? nd_shim_node_extern(t, fn, tmpl, kw, 1, &op.id, -1, dt, op.ndim, op.shape)
               : ND_NONE;
        Py_XDECREF(tmpl);
        Py_XDECREF(kw);
    } else if (PyTypeNum_ISFLOAT(dt)) {
        double big = dt == NPY_FLOAT16 ? 65504.0 : dt == NPY_FLOAT32 ? FLT_MAX : DBL_MAX;
        PyObject *nanv = argv[2] ? argv[2] : NULL;
        PyObject *pos = (argv[3] && argv[3] != Py_None) ? argv[3] : NULL;
        PyObject *neg = (argv[4] && argv[4] != Py_None) ? argv[4] : NULL;
        PyObject *dn = nanv ? (Py_INCREF(nanv), nanv) : PyFloat_FromDouble(0.0);
        PyObject *dp = pos ? (Py_INCREF(pos), pos) : PyFloat_FromDouble(big);
        PyObject *dm = neg ? (Py_INCREF(neg), neg) : PyFloat_FromDouble(-big);
        nd_id sn = dn ? nd_shim_node_scalar(t, dn, dt, 1) : ND_NONE;
        nd_id sp = dp && sn != ND_NONE ? nd_shim_node_scalar(t, dp, dt, 1) : ND_NONE;
        nd_id sm = dm && sp != ND_NONE ? nd_shim_node_scalar(t, dm, dt, 1) : ND_NONE;
        Py_XDECREF(dn); Py_XDECREF(dp); Py_XDECREF(dm);
        if (sm == ND_NONE) return NULL;
        int loop1[1] = {dt};
        nd_id isn = nd_shim_node_ufunc(t, ND_UF_ISNAN, &x, loop1, NPY_BOOL, 0);
        nd_id isi = isn == ND_NONE ? ND_NONE : nd_shim_node_ufunc(t, ND_UF_ISINF, &x, loop1, NPY_BOOL, 0);
        nd_id sgn = isi == ND_NONE ? ND_NONE : nd_shim_node_ufunc(t, ND_UF_SIGNBIT, &x, loop1, NPY_BOOL, 0);
        nd_id infv = sgn == ND_NONE ? ND_NONE : nd_shim_node_where(t, sgn, sm, sp, dt);
        nd_id y = infv == ND_NONE ? ND_NONE : nd_shim_node_where(t, isi, infv, x, dt);
        x = y == ND_NONE ? ND_NONE : nd_shim_node_where(t, isn, sn, y, dt);
    } else {
        x = nd_shim_node_reshape(t, x, op.ndim, op.shape);
    }
    if (x == ND_NONE) return NULL;
    if (nocopy) {
        if (nd_proxy_write(argv[0], x) < 0) return NULL;
        if (op.ndim) return Py_NewRef(argv[0]);
        /* a 0-d array is written, and x[()] -- a NumPy scalar -- returned */
        nd_id v = nd_proxy_read(argv[0]);
        return v == ND_NONE ? NULL : nd_shim_wrap(t, v, 1);
    }
    /* NumPy returns a NumPy scalar for any 0-d input; the copy keeps a's order */
    return nd_shim_wrap_k(t, x, op.ndim == 0, 1, argv, 0);
}

/* ------------------------------------------------------------ casts */

static PyObject *astype_core(nd_trace *t, PyObject *a, PyObject *dtype, PyObject *casting, PyObject *copy,
                             char order)
{
    int dt;
    int rc = nd_shim_dtype_arg(dtype, &dt);
    if (rc < 0) return NULL;
    if (rc || dt < 0) return nd_shim_unsupported("astype to a non-numeric dtype is not supported in-graph");
    nd_operand op;
    if (nd_shim_operand(t, a, &op)) return NULL;
    if (op.weak && (op.id = nd_shim_operand_node(t, &op, op.dtype)) == ND_NONE) return NULL;
    NPY_CASTING c;
    if (nd_shim_casting_arg(casting, NPY_UNSAFE_CASTING, &c) < 0) return NULL;
    if (c != NPY_UNSAFE_CASTING) {
        PyArray_Descr *f = PyArray_DescrFromType(op.dtype), *d = PyArray_DescrFromType(dt);
        int ok = PyArray_CanCastTypeTo(f, d, c);
        if (!ok) {
            PyErr_Format(PyExc_TypeError,
                         "Cannot cast array data from %R to %R according to the rule '%s'",
                         (PyObject *)f, (PyObject *)d, nd_shim_casting_name(c));
        }
        Py_DECREF(f);
        Py_DECREF(d);
        if (!ok) return NULL;
    }
    int want_copy = copy ? PyObject_IsTrue(copy) : 1;
    if (want_copy < 0) return NULL;
    if (!want_copy && PyArray_EquivTypenums(dt, op.dtype) && nd_proxy_check(a)) {
        if (!nd_proxy_is_scalar(a)) return Py_NewRef(a);
        /* a NumPy-scalar-valued proxy: asarray gives a new 0-d ndarray
         * holding its value (nd_proxy_view's copy: writes into it leave the
         * scalar as it was); copy=False cannot avoid that copy */
        if (copy != Py_False) return nd_proxy_view(a, 0, NULL, 0, NULL);
    }
    nd_id r = PyArray_EquivTypenums(dt, op.dtype) ? nd_shim_node_reshape(t, op.id, op.ndim, op.shape)
                                                   : nd_shim_node_cast_np(t, op.id, dt);
    /* a NumPy scalar's astype gives a NumPy scalar */
    PyObject *res = nd_shim_wrap(t, r, nd_proxy_check(a) && nd_proxy_is_scalar(a));
    if (res) nd_proxy_set_order(res, a, order);
    return res;
}

/* ndarray.astype(dtype, order, casting, subok, copy) */
static PyObject *astype_method(nd_trace *t, PyObject **argv)
{
    return astype_core(t, argv[0], argv[1], argv[3], argv[5], nd_shim_order_char(argv[2], 'K'));
}

/* np.astype(x, dtype, /, *, copy, device) */
static PyObject *astype_impl(nd_trace *t, PyObject **argv)
{
    return astype_core(t, argv[0], argv[1], NULL, argv[2], 'K');
}

/* np.asarray / asanyarray / ascontiguousarray / array: a proxy with the
 * requested dtype; array() copies unless copy=False. */
/* Whether `order` (None, 'K', 'A', 'C', 'F') makes NumPy copy proxy p for
 * its memory layout: 1 copy, 0 no, -1 an order NumPy would reject (the
 * fallback gives its error). */
static int layout_copies(PyObject *p, PyObject *order)
{
    if (!order || order == Py_None) return 0;
    if (!PyUnicode_Check(order) || PyUnicode_GetLength(order) != 1) return -1;
    Py_UCS4 o = PyUnicode_READ_CHAR(order, 0);
    /* NumPy's STRIDING_OK: 'K' and 'A' take any layout as it is */
    if (o == 'K' || o == 'A') return 0;
    if (o != 'C' && o != 'F') return -1;
    npy_intp ms[ND_MAXDIMS], rd[ND_MAXDIMS], rs[ND_MAXDIMS];
    if (nd_proxy_memory_strides(p, ms)) return 1;
    int nd = nd_proxy_ndim(p);
    const npy_intp *sh = nd_proxy_shape(p);
    for (int d = 0; d < nd; d++) { rd[d] = sh[nd - 1 - d]; rs[d] = ms[nd - 1 - d]; }
    int c = nd_c_contiguous(nd, sh, ms, 1), f = nd_c_contiguous(nd, rd, rs, 1);
    return o == 'C' ? !c : !f;
}

/* np.array / np.asarray of a few Python numbers (a filter's taps, a small
 * table): NumPy makes the array (its dtype inference, casts and errors),
 * and its value enters the graph as SCALAR nodes of its elements, stacked
 * -- not as an array input, which a replayed call cannot bind ("the graph
 * reads an array that is not an argument": such functions were traced on
 * every call). The numbers come from the code's constants and values the
 * replay guards, so a call that passes the guards makes the same array. */
#define CONST_SEQ_MAX 64
static int few_numbers(PyObject *o, int depth, Py_ssize_t *count)
{
    if (PyList_Check(o) || PyTuple_Check(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        if (n == 0 || depth >= ND_MAXDIMS) return 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (!few_numbers(PySequence_Fast_GET_ITEM(o, i), depth + 1, count)) return 0;
        return 1;
    }
    int num = PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyComplex_CheckExact(o) ||
              PyArray_IsScalar(o, Number) || PyArray_IsScalar(o, Bool);
    return num && ++*count <= CONST_SEQ_MAX;
}

typedef struct { nd_trace *t; int dt; } leafctx;

int nd_shim_few_numbers(PyObject *o)
{
    Py_ssize_t count = 0;
    return (PyList_Check(o) || PyTuple_Check(o)) && few_numbers(o, 0, &count);
}

static int scalar_leaf(PyObject *o, void *ctx, PyObject **out)
{
    if (PyList_Check(o) || PyTuple_Check(o)) return 0;
    leafctx *c = ctx;
    nd_id id = nd_shim_node_scalar(c->t, o, c->dt, 0);
    if (id == ND_NONE) return -1;
    *out = nd_shim_wrap(c->t, id, 1);
    return *out ? 1 : -1;
}

static PyObject *constant_seq(nd_trace *t, PyObject *a, PyObject *dtype)
{
    PyObject *f = nd_xj_np_attr("array");
    PyObject *arr = f ? PyObject_CallFunctionObjArgs(f, a, dtype ? dtype : Py_None, NULL) : NULL;
    Py_XDECREF(f);
    if (!arr) return NULL;
    int dt = PyArray_Check(arr) ? PyArray_TYPE((PyArrayObject *)arr) : -1;
    /* NumPy's own array, as an untraced call gives it: object, strings,
     * long double; and bool -- a constant mask indexes by its known
     * positions, where a lazy one would be a data-dependent shape */
    if (!(PyTypeNum_ISINTEGER(dt) || dt == NPY_HALF || dt == NPY_FLOAT || dt == NPY_DOUBLE ||
          dt == NPY_CFLOAT || dt == NPY_CDOUBLE) || PyArray_NDIM((PyArrayObject *)arr) == 0)
        return arr;
    if (PyArray_SIZE((PyArrayObject *)arr) == 1) {
        /* np.array([np.inf]): one SCALAR node broadcast, as np.full makes
         * it -- not a select over positions (5 nodes, 1.4 us to trace in
         * seam carving's row loop) */
        PyArrayObject *A = (PyArrayObject *)arr;
        PyObject *v = PyArray_GETITEM(A, PyArray_DATA(A));
        nd_id id = v ? nd_shim_node_scalar(t, v, dt, 0) : ND_NONE;
        Py_XDECREF(v);
        if (id != ND_NONE) id = nd_shim_node_broadcast(t, id, PyArray_NDIM(A), PyArray_SHAPE(A));
        Py_DECREF(arr);
        return id == ND_NONE ? NULL : nd_shim_wrap(t, id, 0);
    }
    PyObject *items = PyArray_ToList((PyArrayObject *)arr);
    leafctx ctx = {t, dt};
    PyObject *leaves = items ? nd_xj_map_template(items, scalar_leaf, &ctx) : NULL;
    Py_XDECREF(items);
    nd_xj_arr s;
    int r = leaves ? nd_shim_array_from_seq(t, leaves, &s) : -1;
    Py_XDECREF(leaves);
    PyObject *res = NULL;
    if (r < 0) goto done;
    PyArrayObject *A = (PyArrayObject *)arr;
    if (r > 0 || s.dtype != dt || s.ndim != PyArray_NDIM(A) ||
        memcmp(s.shape, PyArray_SHAPE(A), sizeof(npy_intp) * (size_t)s.ndim)) {
        (void)nd_shim_take_unsupported();
        res = Py_NewRef(arr);   /* NumPy's array, as before */
        goto done;
    }
    res = nd_shim_wrap(t, s.id, 0);
done:
    Py_DECREF(arr);
    return res;
}

static PyObject *asarray_value(nd_trace *t, PyObject *a, PyObject *dtype, PyObject *copy, int dflt_copy,
                               PyObject *order);

static PyObject *asarray_core(nd_trace *t, PyObject *a, PyObject *dtype, PyObject *copy, int dflt_copy,
                              PyObject *ndmin, PyObject *order)
{
    long nmin = 0;
    if (ndmin && ndmin != Py_None) {
        /* NumPy's errors (a float, past its limit) come from the fallback */
        if (!PyLong_Check(ndmin)) return nd_shim_unsupported("numpy.array with this ndmin=");
        nmin = PyLong_AsLong(ndmin);
        if (nmin == -1 && PyErr_Occurred()) return NULL;
        if (nmin > ND_MAXDIMS) return nd_shim_unsupported("numpy.array with ndmin= past numdyn's rank limit");
    }
    PyObject *res = asarray_value(t, a, dtype, copy, dflt_copy, order);
    if (res && PyArray_Check(res) && PyArray_NDIM((PyArrayObject *)res) < nmin) {
        /* NumPy's own array (constant_seq's bool/object cases): its ndmin */
        PyObject *kw = Py_BuildValue("{s:O,s:l}", "copy", Py_None, "ndmin", nmin);
        PyObject *one = kw ? PyTuple_Pack(1, res) : NULL;
        PyObject *f = one ? nd_xj_np_attr("array") : NULL;
        PyObject *r2 = f ? PyObject_Call(f, one, kw) : NULL;
        Py_XDECREF(f);
        Py_XDECREF(kw);
        Py_XDECREF(one);
        Py_SETREF(res, r2);
    }
    if (!res || !nd_proxy_check(res) || nd_proxy_ndim(res) >= nmin) return res;
    /* ndmin: a view with leading 1-dims, of the copy or of the operand
     * itself (np.array(x, copy=None, ndmin=2).base is x) */
    int nd = nd_proxy_ndim(res), k = (int)nmin - nd;
    npy_intp shape[ND_MAXDIMS], st[ND_MAXDIMS], c = 1;
    const npy_intp *sh = nd_proxy_shape(res);
    for (int d = nd - 1; d >= 0; d--) { shape[k + d] = sh[d]; st[k + d] = c; c *= sh[d]; }
    /* the new dims step over the whole operand: NumPy's strides for them
     * (strides[0] * shape[0]) where the operand is C-contiguous; a view of
     * another layout reports 0 for them (NumPy: strides[0] * shape[0], or
     * the itemsize when F-contiguous -- a size-1 dim is never stepped) */
    for (int d = 0; d < k; d++) { shape[d] = 1; st[d] = c; }
    PyObject *v = nd_proxy_view(res, (int)nmin, shape, 0, st);
    Py_DECREF(res);
    return v;
}

/* Whether a nesting holds a float or complex scalar (a Python one, a NumPy
 * one, a lazy one): np.array(..., dtype=<integer>) stores each such scalar
 * by setitem, as int() converts it (300.5 into int8: OverflowError, NaN:
 * ValueError), where arrays in it are cast */
static int inexact_scalar_leaf(PyObject *o, int depth)
{
    if (PyList_Check(o) || PyTuple_Check(o)) {
        if (depth >= ND_MAXDIMS) return 0;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            if (inexact_scalar_leaf(PySequence_Fast_GET_ITEM(o, i), depth + 1)) return 1;
        return 0;
    }
    if (nd_proxy_check(o))
        return nd_proxy_ndim(o) == 0 && (PyTypeNum_ISFLOAT(nd_proxy_dtype(o)) || PyTypeNum_ISCOMPLEX(nd_proxy_dtype(o)));
    return PyFloat_Check(o) || PyComplex_Check(o) || PyArray_IsScalar(o, Inexact);
}

/* np.array / np.asarray without ndmin */
static PyObject *asarray_value(nd_trace *t, PyObject *a, PyObject *dtype, PyObject *copy, int dflt_copy,
                               PyObject *order)
{
    if (!nd_proxy_check(a) && !PyList_Check(a) && !PyTuple_Check(a) && !PyArray_Check(a))
        return nd_shim_unsupported("numpy.asarray of this object is not supported in-graph");
    if (PyList_Check(a) || PyTuple_Check(a)) {
        /* a nesting of lazy values: a stack, a new array whatever copy= says */
        if (copy == Py_False) return nd_shim_unsupported("numpy.array(copy=False) of a sequence");
        int lc = order && order != Py_None && !(PyUnicode_Check(order) &&
                 (!PyUnicode_CompareWithASCIIString(order, "K") ||
                  !PyUnicode_CompareWithASCIIString(order, "A") ||
                  !PyUnicode_CompareWithASCIIString(order, "C")));
        if (lc) return nd_shim_unsupported("numpy.array of a sequence in Fortran order");
        int sdt = -1;
        int src = nd_shim_dtype_arg(dtype, &sdt);
        if (src < 0) return NULL;
        if (src) return nd_shim_unsupported("asarray to a non-numeric dtype is not supported in-graph");
        if (nd_shim_few_numbers(a)) return constant_seq(t, a, dtype);
        if (PyTypeNum_ISINTEGER(sdt) && inexact_scalar_leaf(a, 0))
            return nd_shim_unsupported("numpy.array of float scalars into an integer dtype");
        nd_xj_arr s;
        int r = nd_shim_array_from_seq(t, a, &s);
        if (r) return NULL;
        nd_id id = sdt >= 0 && sdt != s.dtype ? nd_shim_node_cast_np(t, s.id, sdt) : s.id;
        return id == ND_NONE ? NULL : nd_shim_wrap(t, id, 0);
    }
    /* copy=None: only when needed (NumPy 2), whatever the default */
    int want_copy = copy == Py_None ? 0 : dflt_copy;
    if (copy && copy != Py_None) {
        want_copy = PyObject_IsTrue(copy);
        if (want_copy < 0) return NULL;
    }
    int dt = -1;
    int rc = nd_shim_dtype_arg(dtype, &dt);
    if (rc < 0) return NULL;
    if (rc) return nd_shim_unsupported("asarray to a non-numeric dtype is not supported in-graph");
    nd_operand op;
    if (nd_shim_operand(t, a, &op)) return NULL;
    if (dt < 0) dt = op.dtype;
    if (!want_copy && nd_proxy_check(a)) {
        int lc = layout_copies(a, order);
        if (lc < 0) return nd_shim_unsupported("numpy.asarray with this order is not supported in-graph");
        want_copy = lc;
    }
    if (!want_copy && PyArray_EquivTypenums(dt, op.dtype) && nd_proxy_check(a)) {
        if (!nd_proxy_is_scalar(a)) return Py_NewRef(a);
        /* a NumPy-scalar-valued proxy: asarray gives a new 0-d ndarray
         * holding its value (nd_proxy_view's copy: writes into it leave the
         * scalar as it was); copy=False cannot avoid that copy */
        if (copy != Py_False) return nd_proxy_view(a, 0, NULL, 0, NULL);
    }
    if (copy == Py_False) return nd_err_copy_unavoidable();
    nd_id r = PyArray_EquivTypenums(dt, op.dtype) ? nd_shim_node_reshape(t, op.id, op.ndim, op.shape)
                                                   : nd_shim_node_cast_np(t, op.id, dt);
    PyObject *res = nd_shim_wrap(t, r, 0);
    if (res) nd_proxy_set_order(res, a, nd_shim_order_char(order, 'K'));
    return res;
}

static PyObject *asarray_impl(nd_trace *t, PyObject **argv) { return asarray_core(t, argv[0], argv[1], argv[4], 0, NULL, argv[2]); }
static PyObject *array_impl(nd_trace *t, PyObject **argv) { return asarray_core(t, argv[0], argv[1], argv[2], 1, argv[5], argv[3]); }

/* a C- (F-) contiguous array of rank >= 1: 0-d input becomes shape (1,);
 * an operand already so laid out is itself, as NumPy gives it */
static PyObject *as_ordered_array(nd_trace *t, PyObject **argv, const char *order)
{
    PyObject *c = PyUnicode_FromString(order);
    PyObject *r = c ? asarray_core(t, argv[0], argv[1], NULL, 0, NULL, c) : NULL;
    Py_XDECREF(c);
    if (!r || !nd_proxy_check(r) || nd_proxy_ndim(r) != 0) return r;
    npy_intp one = 1, st = 0;
    PyObject *v = nd_proxy_view(r, 1, &one, 0, &st);
    Py_DECREF(r);
    return v;
}

static PyObject *ascontiguousarray_impl(nd_trace *t, PyObject **argv)
{
    return as_ordered_array(t, argv, "C");
}

/* NumPy's own asfortranarray of a lazy array went through the buffer
 * protocol: a new ndarray over its memory, never the operand itself */
static PyObject *asfortranarray_impl(nd_trace *t, PyObject **argv)
{
    return as_ordered_array(t, argv, "F");
}

/* result_type / can_cast: metadata only -- proxies stand in by their dtype
 * (a 0-d proxy is as strong as a dtype under NEP 50). */
static PyObject *replace_proxies(PyObject *args)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *r = PyTuple_New(n);
    if (!r) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(args, i);
        PyObject *v = nd_proxy_check(o) ? nd_shim_descr(nd_proxy_dtype(o)) : (Py_INCREF(o), o);
        if (!v) { Py_DECREF(r); return NULL; }
        PyTuple_SET_ITEM(r, i, v);
    }
    return r;
}

static PyObject *result_type_impl(nd_trace *t, PyObject **argv)
{
    PyObject *args = replace_proxies(argv[0]);
    if (!args) return NULL;
    PyObject *f = PyObject_GetAttrString(nd_shim_numpy(), "result_type");
    PyObject *r = f ? PyObject_Call(f, args, NULL) : NULL;
    Py_XDECREF(f);
    Py_DECREF(args);
    return r;
}

static PyObject *can_cast_impl(nd_trace *t, PyObject **argv)
{
    PyObject *from = argv[0];
    if (nd_proxy_check(from)) from = nd_shim_descr(nd_proxy_dtype(from));
    else Py_INCREF(from);
    if (!from) return NULL;
    PyObject *f = PyObject_GetAttrString(nd_shim_numpy(), "can_cast");
    PyObject *r = NULL;
    if (f) {
        r = argv[2] ? PyObject_CallFunction(f, "OOO", from, argv[1], argv[2])
                    : PyObject_CallFunction(f, "OO", from, argv[1]);
        Py_DECREF(f);
    }
    Py_DECREF(from);
    return r;
}

/* ------------------------------------------------------------ methods */

static PyObject *fill_method(nd_trace *t, PyObject **argv)
{
    PyObject *self = argv[0];
    nd_id v = nd_shim_assign_value(t, argv[1], nd_proxy_dtype(self), nd_proxy_ndim(self), nd_proxy_shape(self), 1, 1);
    if (v == ND_NONE) return NULL;
    int rc = nd_shim_lazy_scalar(argv[1]) ? nd_proxy_write_scalar(self, v, nd_proxy_dtype(argv[1]))
                                          : nd_proxy_write(self, v);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* item() reads values: a flush (not a break), then NumPy's item */
static PyObject *item_method(nd_trace *t, PyObject **argv)
{
    PyObject *arr = nd_trace_read(argv[0], "ndarray.item() (a Python scalar)");
    if (!arr) return NULL;
    PyObject *item = PyObject_GetAttrString(arr, "item");
    Py_DECREF(arr);
    if (!item) return NULL;
    PyObject *r = PyObject_Call(item, argv[1], NULL);
    Py_DECREF(item);
    return r;
}

/* NumPy's PyArray_Conjugate: of a complex array the ufunc; of any other
 * numeric array the array itself (`c = a.conj(); c += 1` writes into a) */
static PyObject *conj_method(nd_trace *t, PyObject **argv)
{
    PyObject *self = argv[0];
    if (nd_proxy_check(self) && !nd_proxy_is_scalar(self) && !PyTypeNum_ISCOMPLEX(nd_proxy_dtype(self)))
        return Py_NewRef(self);
    return uf1(ND_UF_CONJUGATE, self);
}

static PyObject *round_method(nd_trace *t, PyObject **argv) { return round_core(t, argv[0], argv[1], argv[2]); }

static const nd_shim_def functions[] = {
    {"where", "condition|x,y", where_impl, 0},
    {"clip", "a|a_min,a_max,out;min,max", clip_impl, 0},
    {"round", "a|decimals,out", round_impl, 0},
    {"around", "a|decimals,out", round_impl, 0},
    {"isclose", "a,b|rtol,atol,equal_nan", isclose_impl, 0},
    {"allclose", "a,b|rtol,atol,equal_nan", allclose_impl, 0},
    {"nan_to_num", "x|copy,nan,posinf,neginf", nan_to_num_impl, 0},
    {"astype", "x,dtype|;copy,device", astype_impl, 0},
    {"asarray", "a|dtype,order;device,copy,like", asarray_impl, ND_SHIM_NUMBERS},
    {"asanyarray", "a|dtype,order;device,copy,like", asarray_impl, 0},
    {"ascontiguousarray", "a|dtype;like", ascontiguousarray_impl, 0},
    {"asfortranarray", "a|dtype;like", asfortranarray_impl, 0},
    {"array", "object|dtype;copy,order,subok,ndmin,ndmax,like", array_impl, ND_SHIM_NUMBERS},
    {"result_type", "*arrays_and_dtypes", result_type_impl, 0},
    {"can_cast", "from_,to|casting", can_cast_impl, 0},
    {NULL},
};

static const nd_shim_def methods[] = {
    {"astype", "self,dtype|order,casting,subok,copy", astype_method, 0},
    {"fill", "self,value", fill_method, 0},
    {"item", "self|*args", item_method, 0},
    {"clip", "self|min,max,out", clip_method, 0},
    {"round", "self|decimals,out", round_method, 0},
    {"conj", "self", conj_method, 0},
    {"conjugate", "self", conj_method, 0},
    {NULL},
};

int nd_shim_register_elementwise(nd_shim_table *tab)
{
    return nd_shim_add_functions(tab, functions);
}

/* the ndarray methods without a numpy-function twin elsewhere live here */
int nd_shim_register_methods(nd_shim_table *tab)
{
    return nd_shim_add_methods(tab, methods);
}
