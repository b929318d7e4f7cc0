/* backend_eager.c -- run a standalone graph node by node with NumPy.
 *
 * The reference semantics of every node kind (graph.h) in terms of NumPy
 * calls: the native backend falls back to nd_eval_node for what it does
 * not compile, numdyn.Graph.__call__ uses it, and tests compare against it.
 * Intermediates are released as soon as their last consumer has run, so
 * peak memory is bounded by the graph's live set, not its size.
 *
 * The outputs of one multi-output extern call (svd, qr, eigh, histogram...)
 * come from one NumPy call per run (nd_eval_extern_group).
 *
 * VIEW results are read-only NumPy views onto a C-contiguous copy of the
 * input (element offsets and strides as the node states); SETITEM copies
 * its base, so no node ever writes into an array another node can see.
 */
#include "core/npy.h"
#include "backend.h"
#include <math.h>
#include <string.h>

static PyObject *as_array(PyObject *o)
{
    if (!o) return NULL;
    if (PyArray_Check(o)) return o;
    PyObject *a = PyArray_FromAny(o, NULL, 0, 0, 0, NULL);
    Py_DECREF(o);
    return a;
}

/* a converted to typenum dtype (steals a; no copy when already that type;
 * NPY_LONG and NPY_LONGLONG are the same type on LP64). */
static PyObject *astype(PyObject *a, int dtype)
{
    if (!a) return NULL;
    PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)a);
    if (PyArray_EquivTypenums(d->type_num, dtype) && PyArray_ISNBO(d->byteorder)) return a;
    if (PyTypeNum_ISCOMPLEX(d->type_num) && !PyTypeNum_ISCOMPLEX(dtype) && dtype != NPY_BOOL) {
        /* the real part, as NumPy's cast keeps: its ComplexWarning was the
         * shim's, given when the cast was traced */
        PyObject *re = PyObject_GetAttrString(a, "real");
        Py_DECREF(a);
        if (!re) return NULL;
        /* a new array even for the part's own type (a view would alias) */
        PyObject *r = PyArray_CastToType((PyArrayObject *)re, PyArray_DescrFromType(dtype), 0);
        Py_DECREF(re);
        return r;
    }
    PyObject *r = PyArray_CastToType((PyArrayObject *)a, PyArray_DescrFromType(dtype), 0);
    Py_DECREF(a);
    return r;
}

/* element value of a SCALAR node as the Python object NumPy converts */
static PyObject *scalar_pyobj(const nd_node *n)
{
    int t = n->dtype;
    if (t == NPY_BOOL) return PyBool_FromLong(n->scalar.i != 0);
    if (PyTypeNum_ISCOMPLEX(t)) return PyComplex_FromDoubles(n->scalar.c.re, n->scalar.c.im);
    if (PyTypeNum_ISFLOAT(t)) return PyFloat_FromDouble(n->scalar.f);
    /* a value of the node's own dtype: NumPy's C cast into a narrower
     * integer keeps the low bits (np.full(n, -1.0, dtype=np.uint32) holds
     * 4294967295), so the 64-bit payload is wrapped to the dtype's width */
    int bits = 64;
    PyArray_Descr *d = PyArray_DescrFromType(t);
    if (d) {
        bits = 8 * (int)PyDataType_ELSIZE(d);
        Py_DECREF(d);
    }
    if (PyTypeNum_ISUNSIGNED(t)) {
        uint64_t u = n->scalar.u;
        if (bits < 64) u &= (UINT64_C(1) << bits) - 1;
        return PyLong_FromUnsignedLongLong(u);
    }
    int64_t i = n->scalar.i;
    if (bits < 64) {
        uint64_t m = (UINT64_C(1) << bits) - 1, u = (uint64_t)i & m;
        i = (u >> (bits - 1)) ? (int64_t)(u | ~m) : (int64_t)u;
    }
    return PyLong_FromLongLong(i);
}

static PyObject *eval_scalar(const nd_node *n)
{
    PyObject *v = scalar_pyobj(n);
    if (!v) return NULL;
    PyArrayObject *a = (PyArrayObject *)PyArray_Zeros(0, NULL, PyArray_DescrFromType(n->dtype), 0);
    if (!a) { Py_DECREF(v); return NULL; }
    /* setitem casts like np.array(v, dtype): a weak float beyond float16's
     * range becomes inf, as NumPy's own scalar conversion does */
    int rc = PyArray_SETITEM(a, PyArray_DATA(a), v);
    Py_DECREF(v);
    if (rc < 0) { Py_DECREF(a); return NULL; }
    return (PyObject *)a;
}

static PyObject *contiguous(PyObject *a)
{
    return (PyObject *)PyArray_GETCONTIGUOUS((PyArrayObject *)a);
}

/* Strided view of `base` (made C-contiguous) per an affine element map. */
static PyObject *affine_view(PyObject *base, npy_intp off, int ndim, const npy_intp *shape,
                             const npy_intp *estrides, int writeable)
{
    PyArrayObject *c = (PyArrayObject *)contiguous(base);
    if (!c) return NULL;
    PyArray_Descr *d = PyArray_DESCR(c);
    npy_intp isz = PyArray_ITEMSIZE(c), strides[ND_MAXDIMS];
    for (int k = 0; k < ndim; k++) strides[k] = estrides[k] * isz;
    Py_INCREF(d);
    PyObject *v = PyArray_NewFromDescr(&PyArray_Type, d, ndim, (npy_intp *)shape, strides,
                                       PyArray_BYTES(c) + off * isz,
                                       writeable ? NPY_ARRAY_WRITEABLE : 0, NULL);
    if (!v) { Py_DECREF(c); return NULL; }
    if (PyArray_SetBaseObject((PyArrayObject *)v, (PyObject *)c) < 0) { Py_DECREF(v); return NULL; }
    return v;
}

static PyObject *axes_tuple(uint64_t mask, int ndim)
{
    int n = 0;
    for (int d = 0; d < ndim; d++) if (mask & (1ULL << d)) n++;
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int d = 0, k = 0; d < ndim; d++)
        if (mask & (1ULL << d)) PyTuple_SET_ITEM(t, k++, PyLong_FromLong(d));
    return t;
}

static PyObject *call_kw(PyObject *f, PyObject *args, const char *fmt_names[], PyObject *vals[], int n)
{
    PyObject *kw = PyDict_New();
    if (!kw) return NULL;
    for (int i = 0; i < n; i++)
        if (vals[i] && PyDict_SetItemString(kw, fmt_names[i], vals[i]) < 0) { Py_DECREF(kw); return NULL; }
    PyObject *r = PyObject_Call(f, args, kw);
    Py_DECREF(kw);
    return r;
}

static PyObject *eval_reduce(const nd_node *n, PyObject *const *in)
{
    PyArrayObject *x = (PyArrayObject *)in[0];
    int ndim = PyArray_NDIM(x), keep = (n->flags & ND_F_KEEPDIMS) != 0;
    if (n->sub == ND_RED_ARGMAX || n->sub == ND_RED_ARGMIN) {
        int bits = 0, axis = 0;
        for (int d = 0; d < ndim; d++) if (n->axes & (1ULL << d)) { bits++; axis = d; }
        PyObject *src = (PyObject *)x, *r;
        Py_INCREF(src);
        if (bits != 1 && ndim != 1) {
            /* axis=None over a nd array: NumPy flattens in C order */
            Py_SETREF(src, PyArray_Ravel(x, NPY_CORDER));
            if (!src) return NULL;
            axis = 0;
        }
        r = n->sub == ND_RED_ARGMAX ? PyArray_ArgMax((PyArrayObject *)src, ndim ? axis : NPY_RAVEL_AXIS, NULL)
                                    : PyArray_ArgMin((PyArrayObject *)src, ndim ? axis : NPY_RAVEL_AXIS, NULL);
        Py_DECREF(src);
        r = as_array(r);
        if (r && keep) {
            PyArray_Dims dims = {(npy_intp *)n->shape, n->ndim};
            Py_SETREF(r, PyArray_Newshape((PyArrayObject *)r, &dims, NPY_CORDER));
        }
        return astype(r, n->dtype);
    }
    PyObject *reduce = PyObject_GetAttrString(n->obj, "reduce");
    if (!reduce) return NULL;
    PyObject *axes = axes_tuple(n->axes, ndim);
    PyObject *dt = (PyObject *)PyArray_DescrFromType(n->in_dtype[0]);
    PyObject *kd = PyBool_FromLong(keep);
    PyObject *init = NULL;
    if (n->nin > 1 && in[1]) init = PyObject_CallMethod(in[1], "item", NULL);
    PyObject *args = PyTuple_Pack(1, (PyObject *)x);
    PyObject *r = NULL;
    if (axes && dt && args && (n->nin < 2 || init)) {
        const char *names[] = {"axis", "dtype", "keepdims", "initial"};
        PyObject *vals[] = {axes, dt, kd, init};
        r = call_kw(reduce, args, names, vals, 4);
    }
    Py_XDECREF(args);
    Py_XDECREF(init);
    Py_XDECREF(kd);
    Py_XDECREF(dt);
    Py_XDECREF(axes);
    Py_DECREF(reduce);
    return astype(as_array(r), n->dtype);
}

static PyObject *eval_scan(const nd_node *n, PyObject *const *in)
{
    PyObject *acc = PyObject_GetAttrString(n->obj, "accumulate");
    if (!acc) return NULL;
    PyObject *axis = PyLong_FromLong(n->aux);
    PyObject *dt = (PyObject *)PyArray_DescrFromType(n->in_dtype[0] >= 0 ? n->in_dtype[0] : n->dtype);
    PyObject *args = PyTuple_Pack(1, in[0]);
    PyObject *r = NULL;
    if (axis && dt && args) {
        const char *names[] = {"axis", "dtype"};
        PyObject *vals[] = {axis, dt};
        r = call_kw(acc, args, names, vals, 2);
    }
    Py_XDECREF(args);
    Py_XDECREF(dt);
    Py_XDECREF(axis);
    Py_DECREF(acc);
    return astype(as_array(r), n->dtype);
}

/* A node marked ND_F_SCALAR_MATH (graph.h): the Python operator on NumPy
 * scalars of the loop's dtypes, as the traced code computed it -- NumPy's
 * scalar math, whose warnings say "scalar" and which warns where integers
 * wrap. The operator's whole result (divmod's pair); NULL with an
 * exception, or with none when the node is not such an operator (the
 * ufunc computes it). */
static PyObject *scalar_math(const nd_node *n, PyObject *const *in)
{
    PyObject *x[2] = {NULL, NULL}, *r = NULL;
    if (n->nin < 1 || n->nin > 2 || n->ndim != 0) return NULL;
    for (int k = 0; k < n->nin; k++) {
        if (!in[k] || !PyArray_Check(in[k]) || PyArray_NDIM((PyArrayObject *)in[k]) != 0) goto done;
        PyObject *a = Py_NewRef(in[k]);
        if (n->in_dtype[k] >= 0) a = astype(a, n->in_dtype[k]);
        if (!a || !(x[k] = PyArray_Return((PyArrayObject *)a))) goto done;
    }
    if (n->nin == 1) {
        switch (n->sub) {
        case ND_UF_NEGATIVE: r = PyNumber_Negative(x[0]); break;
        case ND_UF_POSITIVE: r = PyNumber_Positive(x[0]); break;
        case ND_UF_ABSOLUTE: r = PyNumber_Absolute(x[0]); break;
        case ND_UF_INVERT: r = PyNumber_Invert(x[0]); break;
        }
        goto done;
    }
    switch (n->sub) {
    case ND_UF_ADD: r = PyNumber_Add(x[0], x[1]); break;
    case ND_UF_SUBTRACT: r = PyNumber_Subtract(x[0], x[1]); break;
    case ND_UF_MULTIPLY: r = PyNumber_Multiply(x[0], x[1]); break;
    case ND_UF_TRUE_DIVIDE: r = PyNumber_TrueDivide(x[0], x[1]); break;
    case ND_UF_FLOOR_DIVIDE: r = PyNumber_FloorDivide(x[0], x[1]); break;
    case ND_UF_REMAINDER: r = PyNumber_Remainder(x[0], x[1]); break;
    case ND_UF_DIVMOD: r = PyNumber_Divmod(x[0], x[1]); break;
    case ND_UF_POWER: r = PyNumber_Power(x[0], x[1], Py_None); break;
    case ND_UF_LEFT_SHIFT: r = PyNumber_Lshift(x[0], x[1]); break;
    case ND_UF_RIGHT_SHIFT: r = PyNumber_Rshift(x[0], x[1]); break;
    case ND_UF_BITWISE_AND: r = PyNumber_And(x[0], x[1]); break;
    case ND_UF_BITWISE_OR: r = PyNumber_Or(x[0], x[1]); break;
    case ND_UF_BITWISE_XOR: r = PyNumber_Xor(x[0], x[1]); break;
    }
done:
    Py_XDECREF(x[0]);
    Py_XDECREF(x[1]);
    return r;
}

/* The ufunc's (or scalar operator's) whole result for node n: a tuple for
 * a multi-output one */
/* the ufunc called on the node's inputs (cast to its loop dtypes) */
static PyObject *ufunc_call(const nd_node *n, PyObject *const *in)
{
    PyObject *args = PyTuple_New(n->nin);
    if (!args) return NULL;
    for (int k = 0; k < n->nin; k++) {
        PyObject *a = in[k];
        Py_INCREF(a);
        if (n->in_dtype[k] >= 0) a = astype(a, n->in_dtype[k]);
        if (!a) { Py_DECREF(args); return NULL; }
        PyTuple_SET_ITEM(args, k, a);
    }
    PyObject *r = PyObject_Call(n->obj, args, NULL);
    Py_DECREF(args);
    return r;
}

/* np.errstate(all="ignore") entered: the context to leave (errors_leave),
 * or NULL with an exception */
static PyObject *errors_ignored(void)
{
    static PyObject *errstate, *kw, *noargs;
    if (!errstate) {
        PyObject *np = PyImport_ImportModule("numpy");
        PyObject *es = np ? PyObject_GetAttrString(np, "errstate") : NULL;
        Py_XDECREF(np);
        kw = Py_BuildValue("{s:s}", "all", "ignore");
        noargs = PyTuple_New(0);
        if (!es || !kw || !noargs) { Py_XDECREF(es); return NULL; }
        errstate = es;
    }
    PyObject *ctx = PyObject_Call(errstate, noargs, kw);
    if (!ctx) return NULL;
    PyObject *ent = PyObject_CallMethod(ctx, "__enter__", NULL);
    if (!ent) { Py_DECREF(ctx); return NULL; }
    Py_DECREF(ent);
    return ctx;
}

/* Leave ctx (steals it); ok: what ran inside succeeded. -1 when it failed
 * or leaving did: the error of what ran wins over one from leaving. */
static int errors_leave(PyObject *ctx, int ok)
{
    ND_EXC_SAVE(exc);
    PyObject *ex = PyObject_CallMethod(ctx, "__exit__", "OOO", Py_None, Py_None, Py_None);
    Py_DECREF(ctx);
    Py_XDECREF(ex);
    if (!ok) {
        PyErr_Clear();
        ND_EXC_RESTORE(exc);
    }
    return ok && ex ? 0 : -1;
}

/* A node marked ND_F_DATA_WARN (graph.h): NumPy's nan-functions compute
 * with FP errors ignored, then warn from the data */
static PyObject *data_warn(const nd_node *n, PyObject *const *in)
{
    PyObject *ctx = errors_ignored();
    if (!ctx) return NULL;
    PyObject *r = ufunc_call(n, in);
    if (errors_leave(ctx, r != NULL) < 0) {
        Py_XDECREF(r);
        return NULL;
    }
    int divide = n->sub == ND_UF_TRUE_DIVIDE, dof = n->sub == ND_UF_SUBTRACT;
    PyObject *zero = divide || dof ? PyLong_FromLong(0) : NULL;
    PyObject *cond = divide ? (zero ? PyObject_RichCompare(in[1], zero, Py_EQ) : NULL)
                     : dof  ? (zero ? PyObject_RichCompare(r, zero, Py_LE) : NULL)
                            : PyObject_RichCompare(r, r, Py_NE);
    Py_XDECREF(zero);
    PyObject *any = cond ? PyObject_CallMethod(cond, "any", NULL) : NULL;
    Py_XDECREF(cond);
    int hit = any ? PyObject_IsTrue(any) : -1;
    Py_XDECREF(any);
    const char *msg = divide ? "Mean of empty slice"
                      : dof  ? "Degrees of freedom <= 0 for slice."
                             : "All-NaN slice encountered";
    if (hit < 0 || (hit && PyErr_WarnEx(PyExc_RuntimeWarning, msg, 1) < 0)) {
        Py_DECREF(r);
        return NULL;
    }
    return r;
}

/* ND_F_FP_KEPT (graph.h): _methods._mean's "Mean of empty slice" where the
 * count (the divisor) is 0, before the division warns on its own */
static int empty_mean_warning(PyObject *divisor)
{
    PyObject *zero = PyLong_FromLong(0);
    PyObject *cond = zero ? PyObject_RichCompare(divisor, zero, Py_EQ) : NULL;
    Py_XDECREF(zero);
    PyObject *any = cond ? PyObject_CallMethod(cond, "any", NULL) : NULL;
    Py_XDECREF(cond);
    int hit = any ? PyObject_IsTrue(any) : -1;
    Py_XDECREF(any);
    if (hit > 0 && PyErr_WarnEx(PyExc_RuntimeWarning, "Mean of empty slice", 1) < 0) return -1;
    return hit < 0 ? -1 : 0;
}

/* a * b of complex arrays with each part's two products rounded apart
 * (ND_F_CMUL_PLAIN, graph.h): ar*br - ai*bi, ar*bi + ai*br by float
 * ufuncs, whose products are not fused as complex multiply's SIMD loop */
static PyObject *plain_cmul(const nd_node *n, PyObject *const *in)
{
    PyObject *part[2][2] = {{NULL, NULL}, {NULL, NULL}}, *r = NULL, *re = NULL, *im = NULL;
    PyObject *rr = NULL, *ii = NULL, *ri = NULL, *ir = NULL;
    for (int k = 0; k < 2; k++) {
        PyObject *a = astype(Py_NewRef(in[k]), n->in_dtype[k] >= 0 ? n->in_dtype[k] : n->dtype);
        if (!a) goto done;
        part[k][0] = PyObject_GetAttrString(a, "real");
        part[k][1] = PyObject_GetAttrString(a, "imag");
        Py_DECREF(a);
        if (!part[k][0] || !part[k][1]) goto done;
    }
    if (!(rr = PyNumber_Multiply(part[0][0], part[1][0])) || !(ii = PyNumber_Multiply(part[0][1], part[1][1])) ||
        !(ri = PyNumber_Multiply(part[0][0], part[1][1])) || !(ir = PyNumber_Multiply(part[0][1], part[1][0])) ||
        !(re = PyNumber_Subtract(rr, ii)) || !(im = PyNumber_Add(ri, ir)))
        goto done;
    PyArrayObject *ra = (PyArrayObject *)(re = as_array(re));
    if (!ra || !(r = PyArray_Zeros(PyArray_NDIM(ra), PyArray_DIMS(ra), PyArray_DescrFromType(n->dtype), 0)))
        goto done;
    if (PyObject_SetAttrString(r, "real", re) < 0 || PyObject_SetAttrString(r, "imag", im) < 0) Py_CLEAR(r);
done:
    for (int k = 0; k < 2; k++) { Py_XDECREF(part[k][0]); Py_XDECREF(part[k][1]); }
    Py_XDECREF(rr); Py_XDECREF(ii); Py_XDECREF(ri); Py_XDECREF(ir);
    Py_XDECREF(re); Py_XDECREF(im);
    return r;
}

static PyObject *ufunc_result(const nd_node *n, PyObject *const *in)
{
    if ((n->flags & ND_F_CMUL_PLAIN) && n->sub == ND_UF_MULTIPLY && n->nin == 2 &&
        PyTypeNum_ISCOMPLEX(n->dtype))
        return plain_cmul(n, in);
    int kept = (n->flags & ND_F_DATA_WARN) && (n->flags & ND_F_FP_KEPT) && n->nin == 2;
    if (kept && empty_mean_warning(in[1]) < 0) return NULL;
    if (n->flags & ND_F_SCALAR_MATH) {
        PyObject *r = scalar_math(n, in);
        if (r || PyErr_Occurred()) return r;
    }
    if ((n->flags & ND_F_DATA_WARN) && !kept) return data_warn(n, in);
    return ufunc_call(n, in);
}

/* output aux of node n from its whole result r (borrowed) */
static PyObject *ufunc_pick(const nd_node *n, PyObject *r)
{
    if (PyTuple_Check(r)) {
        if (n->aux < 0 || n->aux >= PyTuple_GET_SIZE(r)) {
            PyErr_SetString(PyExc_SystemError, "numdyn eager: ufunc output out of range");
            return NULL;
        }
        r = PyTuple_GET_ITEM(r, n->aux);
    }
    return astype(as_array(Py_NewRef(r)), n->dtype);
}

static PyObject *eval_ufunc(const nd_node *n, PyObject *const *in)
{
    PyObject *r = ufunc_result(n, in);
    if (!r) return NULL;
    PyObject *v = ufunc_pick(n, r);
    Py_DECREF(r);
    return v;
}

/* the other output of the divmod call that made node a (UFUNC nodes made
 * one after the other by one call: the same inputs) */
static int divmod_sibling(const nd_node *a, const nd_node *b)
{
    if (a->op != ND_OP_UFUNC || b->op != ND_OP_UFUNC || a->sub != ND_UF_DIVMOD ||
        b->sub != ND_UF_DIVMOD || a->aux == b->aux || a->nin != b->nin || b->value ||
        ((a->flags ^ b->flags) & ND_F_SCALAR_MATH))
        return 0;
    for (int k = 0; k < a->nin; k++)
        if (a->in[k] != b->in[k] || a->in_dtype[k] != b->in_dtype[k]) return 0;
    return 1;
}

static PyObject *eval_view(const nd_node *n, PyObject *const *in)
{
    PyObject *v = affine_view(in[0], n->voff, n->ndim, n->shape, n->vstrides, 0);
    if (!v || !(n->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG))) return v;
    PyObject *part = PyObject_GetAttrString(v, (n->flags & ND_F_VIEW_REAL) ? "real" : "imag");
    Py_DECREF(v);
    return part;
}

static PyObject *eval_setitem(const nd_node *n, PyObject *const *in)
{
    PyArrayObject *res = (PyArrayObject *)PyArray_NewCopy((PyArrayObject *)in[0], NPY_CORDER);
    if (!res) return NULL;
    res = (PyArrayObject *)astype((PyObject *)res, n->dtype);
    if (!res) return NULL;
    PyObject *region = affine_view((PyObject *)res, n->voff, n->vndim, n->vshape, n->vstrides, 1);
    if (!region) { Py_DECREF(res); return NULL; }
    /* unsafe casting: the shim checked NumPy's rules when it recorded the write */
    PyObject *src = in[1];
    Py_INCREF(src);
    src = astype(src, n->dtype);
    int rc = src ? PyArray_CopyInto((PyArrayObject *)region, (PyArrayObject *)src) : -1;
    Py_XDECREF(src);
    Py_DECREF(region);
    if (rc < 0) { Py_DECREF(res); return NULL; }
    return (PyObject *)res;
}

static PyObject *eval_index(const nd_node *n)
{
    npy_intp len = n->ndim ? n->shape[n->aux] : 1;
    PyObject *ar = PyArray_Arange(0, (double)len, 1, NPY_INT64);
    if (!ar || n->ndim == 0) {
        if (ar && n->ndim == 0) { Py_DECREF(ar); return PyArray_Zeros(0, NULL, PyArray_DescrFromType(NPY_INT64), 0); }
        return ar;
    }
    npy_intp estr[ND_MAXDIMS];
    for (int d = 0; d < n->ndim; d++) estr[d] = d == n->aux ? 1 : 0;
    PyObject *v = affine_view(ar, 0, n->ndim, n->shape, estr, 0);
    Py_DECREF(ar);
    return v;
}

static PyObject *eval_gather(const nd_node *n, PyObject *const *in)
{
    PyObject *flat = PyArray_Ravel((PyArrayObject *)in[0], NPY_CORDER);
    if (!flat) return NULL;
    PyObject *r = PyArray_TakeFrom((PyArrayObject *)flat, in[1], NPY_RAVEL_AXIS, NULL, NPY_RAISE);
    Py_DECREF(flat);
    return astype(as_array(r), n->dtype);
}

/* An EXTERN node's (args, kwargs) template with every placeholder
 * (graph.h: nd_extern_placeholder(k)) replaced by input array k, looking
 * into tuples, lists and dict values at any depth. */
static PyObject *fill_template(PyObject *o, PyObject *const *in, int nin)
{
    int k = nd_extern_placeholder_index(o);
    if (k >= 0) {
        if (k >= nin) {
            PyErr_Format(PyExc_SystemError, "numdyn: extern placeholder %d of %d inputs", k, nin);
            return NULL;
        }
        Py_INCREF(in[k]);
        return in[k];
    }
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject *r = PyTuple_CheckExact(o) ? PyTuple_New(n) : PyList_New(n);
        if (!r) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = fill_template(PySequence_Fast_GET_ITEM(o, i), in, nin);
            if (!x) { Py_DECREF(r); return NULL; }
            if (PyTuple_CheckExact(o)) PyTuple_SET_ITEM(r, i, x); else PyList_SET_ITEM(r, i, x);
        }
        return r;
    }
    if (PyDict_CheckExact(o)) {
        PyObject *r = PyDict_New();
        Py_ssize_t pos = 0;
        PyObject *key, *val;
        while (r && PyDict_Next(o, &pos, &key, &val)) {
            PyObject *x = fill_template(val, in, nin);
            if (!x || PyDict_SetItem(r, key, x) < 0) { Py_XDECREF(x); Py_CLEAR(r); break; }
            Py_DECREF(x);
        }
        return r;
    }
    Py_INCREF(o);
    return o;
}

int nd_scatter_into(PyArrayObject *out, PyObject *flat, PyObject *vals, PyObject **saved)
{
    if (saved) *saved = NULL;
    PyObject *fi = PyArray_FROMANY(flat, NPY_INT64, 0, 0, NPY_ARRAY_CARRAY);
    PyArray_Descr *d = PyArray_DESCR(out);
    Py_INCREF(d);
    PyObject *va = fi ? PyArray_FromAny(vals, d, 0, 0, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST, NULL)
                      : (Py_DECREF(d), NULL);
    if (!fi || !va) { Py_XDECREF(fi); Py_XDECREF(va); return -1; }
    npy_intp m = PyArray_SIZE((PyArrayObject *)fi), total = PyArray_SIZE(out);
    size_t isz = (size_t)PyArray_ITEMSIZE(out);
    char *dst = PyArray_DATA(out);
    const int64_t *ix = PyArray_DATA((PyArrayObject *)fi);
    int rc = -1;
    if (PyArray_SIZE((PyArrayObject *)va) != m) {
        PyErr_SetString(PyExc_ValueError, "numdyn scatter: values and indices differ in size");
        goto done;
    }
    for (npy_intp i = 0; i < m; i++)
        if (ix[i] < 0 || ix[i] >= total) {
            /* indices were checked when traced; never write out of range */
            PyErr_SetString(PyExc_IndexError, "numdyn scatter: index out of range");
            goto done;
        }
    if (saved) {
        Py_INCREF(d);
        npy_intp dim = m;
        PyObject *sv = PyArray_NewFromDescr(&PyArray_Type, d, 1, &dim, NULL, NULL, 0, NULL);
        if (!sv) goto done;
        char *sp = PyArray_DATA((PyArrayObject *)sv);
        for (npy_intp i = 0; i < m; i++) memcpy(sp + (size_t)i * isz, dst + (size_t)ix[i] * isz, isz);
        *saved = sv;
    }
    const char *src = PyArray_DATA((PyArrayObject *)va);
    for (npy_intp i = 0; i < m; i++) memcpy(dst + (size_t)ix[i] * isz, src + (size_t)i * isz, isz);
    rc = 0;
done:
    Py_DECREF(fi);
    Py_DECREF(va);
    return rc;
}

/* fn(*args, **kwargs) of an EXTERN node: the whole result, before a
 * multi-output node picks its item (new ref). */
static PyObject *extern_call(const nd_node *n, PyObject *const *in)
{
    if (!n->attrs || !PyTuple_Check(n->attrs) || PyTuple_GET_SIZE(n->attrs) != 2) {
        PyErr_SetString(PyExc_SystemError, "numdyn: EXTERN node without (args, kwargs) attrs");
        return NULL;
    }
    PyObject *args = fill_template(PyTuple_GET_ITEM(n->attrs, 0), in, n->nextra);
    /* kwargs are stored hashable: None or a tuple of (key, value) pairs */
    PyObject *kwt = PyTuple_GET_ITEM(n->attrs, 1), *kw = args ? PyDict_New() : NULL;
    if (kw && PyTuple_Check(kwt)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwt); i++) {
            PyObject *kv = PyTuple_GET_ITEM(kwt, i), *v;
            if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2 ||
                !(v = fill_template(PyTuple_GET_ITEM(kv, 1), in, n->nextra))) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "numdyn: bad EXTERN kwargs");
                Py_CLEAR(kw);
                break;
            }
            int rc = PyDict_SetItem(kw, PyTuple_GET_ITEM(kv, 0), v);
            Py_DECREF(v);
            if (rc < 0) { Py_CLEAR(kw); break; }
        }
    } else if (kw && PyDict_Check(kwt)) {
        Py_SETREF(kw, fill_template(kwt, in, n->nextra));
    }
    PyObject *r = NULL;
    if (kw) {
        if (!PyTuple_Check(args)) Py_SETREF(args, PySequence_Tuple(args));
        if (args) r = PyObject_Call(n->obj, args, kw);
    }
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return r;
}

/* Node n's array out of its call's result r (borrowed): item aux of a
 * multi-output call, at the traced dtype, checked against the traced shape. */
static PyObject *extern_pick(const nd_node *n, PyObject *r)
{
    if (n->aux >= 0) r = PySequence_GetItem(r, n->aux);
    else Py_INCREF(r);
    r = astype(as_array(r), n->dtype);
    if (r && (PyArray_NDIM((PyArrayObject *)r) != n->ndim ||
              (n->ndim > 0 &&
               memcmp(PyArray_DIMS((PyArrayObject *)r), n->shape, sizeof(npy_intp) * n->ndim) != 0))) {
        PyErr_Format(PyExc_RuntimeError,
                     "numdyn: extern call %R returned a shape other than the traced one", n->obj);
        Py_CLEAR(r);
    }
    return r;
}

static PyObject *eval_extern(const nd_node *n, PyObject *const *in)
{
    PyObject *r = extern_call(n, in);
    if (!r) return NULL;
    PyObject *v = extern_pick(n, r);
    Py_DECREF(r);
    return v;
}

/* b is another output of a's call (graph.h, EXTERN): the shim builds the
 * outputs of one call from one args template object and one kwargs dict,
 * so identity of the template and equality of the kwargs pairs (same
 * objects) tell the call apart from a second call with equal arguments. */
int nd_extern_same_call(const nd_node *a, const nd_node *b)
{
    if (b->op != ND_OP_EXTERN || b->aux < 0 || b->obj != a->obj || b->nextra != a->nextra)
        return 0;
    if (a->nextra && memcmp(a->extra, b->extra, sizeof(nd_id) * (size_t)a->nextra) != 0) return 0;
    if (a->attrs == b->attrs) return 1;
    if (!b->attrs || !PyTuple_Check(b->attrs) || PyTuple_GET_SIZE(b->attrs) != 2 ||
        PyTuple_GET_ITEM(a->attrs, 0) != PyTuple_GET_ITEM(b->attrs, 0))
        return 0;
    int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(a->attrs, 1), PyTuple_GET_ITEM(b->attrs, 1), Py_EQ);
    if (eq < 0) { PyErr_Clear(); return 0; }  /* uncomparable kwargs: two calls, as before */
    return eq;
}

int nd_extern_sibling(const nd_node *a, const nd_node *b)
{
    return !b->value && nd_extern_same_call(a, b);
}

int nd_eval_extern_group(nd_graph *g, nd_id id, PyObject *const *in, PyObject **vals,
                         const char *want)
{
    const nd_node *n = nd_graph_node(g, id);
    if (n->op == ND_OP_UFUNC && n->sub == ND_UF_DIVMOD && !n->value) {
        /* one call for both outputs, NumPy's warnings once (with want:
         * the sibling wanted gets its output now) */
        PyObject *r = ufunc_result(n, in);
        if (!r || !(vals[id] = ufunc_pick(n, r))) {
            Py_XDECREF(r);
            return -1;
        }
        int rc = 0;
        for (nd_id j = id - 1; j <= id + 1 && rc == 0; j += 2) {
            if (!want || j < 0 || j >= g->n || vals[j] || !want[j] ||
                !divmod_sibling(n, &g->nodes[j]))
                continue;
            if (!(vals[j] = ufunc_pick(&g->nodes[j], r))) rc = -1;
        }
        Py_DECREF(r);
        return rc;
    }
    if (n->op != ND_OP_EXTERN || n->aux < 0 || n->value) {
        vals[id] = nd_eval_node(g, id, in);
        return vals[id] ? 0 : -1;
    }
    PyObject *r = extern_call(n, in);
    if (!r) return -1;
    int rc = 0;
    if (!(vals[id] = extern_pick(n, r))) rc = -1;
    for (nd_id j = 0; rc == 0 && j < g->n; j++) {
        if (j == id || vals[j] || (want && !want[j]) || !nd_extern_sibling(n, &g->nodes[j])) continue;
        if (!(vals[j] = extern_pick(&g->nodes[j], r))) rc = -1;
    }
    Py_DECREF(r);
    return rc;
}

PyObject *nd_eval_node(nd_graph *g, nd_id id, PyObject *const *in)
{
    nd_node *n = nd_graph_node(g, id);
    if (n->value) { Py_INCREF(n->value); return n->value; }
    switch (n->op) {
    case ND_OP_INPUT:
        if (!n->obj) break;
        Py_INCREF(n->obj);
        return n->obj;
    case ND_OP_SCALAR: return eval_scalar(n);
    case ND_OP_UFUNC: return eval_ufunc(n, in);
    case ND_OP_CAST: {
        PyObject *a = in[0];
        Py_INCREF(a);
        return astype(a, n->dtype);
    }
    case ND_OP_WHERE: {
        PyObject *r = PyArray_Where(in[0], in[1], in[2]);
        return astype(as_array(r), n->dtype);
    }
    case ND_OP_REDUCE: return eval_reduce(n, in);
    case ND_OP_SCAN: return eval_scan(n, in);
    case ND_OP_VIEW: return eval_view(n, in);
    case ND_OP_SETITEM: return eval_setitem(n, in);
    case ND_OP_INDEX: return eval_index(n);
    case ND_OP_GATHER: return eval_gather(n, in);
    case ND_OP_EXTERN: return eval_extern(n, in);
    }
    PyErr_Format(PyExc_SystemError, "numdyn eager: cannot evaluate %s node %d", nd_op_name(n->op), id);
    return NULL;
}

/* ------------------------------------------------ NumPy's order of events */

_Thread_local const nd_id *nd_scalar_stores;
_Thread_local int nd_nscalar_stores;
_Thread_local nd_id nd_failed_node = ND_NONE;
_Thread_local int nd_failed_before;

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* [lo, hi] of a signed integer typenum, or 0 when dtype is not one */
static int signed_range(int dtype, int64_t *lo, int64_t *hi)
{
    switch (dtype) {
    case NPY_BYTE: *lo = INT8_MIN; *hi = INT8_MAX; return 1;
    case NPY_SHORT: *lo = INT16_MIN; *hi = INT16_MAX; return 1;
    case NPY_INT: *lo = INT32_MIN; *hi = INT32_MAX; return 1;
    case NPY_LONG: case NPY_LONGLONG: *lo = INT64_MIN; *hi = INT64_MAX; return 1;
    default: return 0;
    }
}

int nd_scalar_store_check(PyObject *value, int dtype, int raise_)
{
    PyArrayObject *v = (PyArrayObject *)value;
    int64_t lo, hi;
    if (!PyArray_Check(value) || PyArray_SIZE(v) != 1 || !signed_range(dtype, &lo, &hi)) return 0;
    int vt = PyArray_TYPE(v), bad;
    const char *p = PyArray_BYTES(v);
    /* a complex converts its real part (NumPy's ComplexWarning is the
     * store's cast's, made by the shim) */
    int cplx = vt == NPY_CFLOAT || vt == NPY_CDOUBLE;
    if (cplx) vt = vt == NPY_CFLOAT ? NPY_FLOAT : NPY_DOUBLE;
    if (!PyArray_ISNBO(PyArray_DESCR(v)->byteorder) || !PyArray_ISALIGNED(v)) bad = 1;  /* let NumPy say */
    else if (PyTypeNum_ISFLOAT(vt)) {
        double x = vt == NPY_DOUBLE ? *(const double *)p
                   : vt == NPY_FLOAT ? (double)*(const float *)p
                   : vt == NPY_HALF ? half_to_double(*(const uint16_t *)p) : NAN;
        double t = trunc(x);
        /* int(x), then the range: NaN and inf fail both compares */
        bad = !(t >= (double)lo && t < (double)hi + 1.0);
    } else if (PyTypeNum_ISSIGNED(vt)) {
        int64_t x = vt == NPY_BYTE ? *(const int8_t *)p : vt == NPY_SHORT ? *(const int16_t *)p
                    : vt == NPY_INT ? *(const int32_t *)p : *(const int64_t *)p;
        bad = x < lo || x > hi;
    } else if (PyTypeNum_ISUNSIGNED(vt)) {
        uint64_t x = vt == NPY_UBYTE ? *(const uint8_t *)p : vt == NPY_USHORT ? *(const uint16_t *)p
                     : vt == NPY_UINT ? *(const uint32_t *)p : *(const uint64_t *)p;
        bad = x > (uint64_t)hi;
    } else {
        return 0;  /* bool converts */
    }
    if (!bad || !raise_) return bad;
    /* NumPy's own words: the same store into a one-element array */
    PyObject *s = cplx ? PyObject_GetAttrString(value, "real") : Py_NewRef(value);
    if (s) s = PyArray_Return((PyArrayObject *)s);
    PyObject *dst = s ? PyArray_Zeros(1, (npy_intp[]){1}, PyArray_DescrFromType(dtype), 0) : NULL;
    int rc = dst ? PySequence_SetItem(dst, 0, s) : -1;
    Py_XDECREF(dst);
    Py_XDECREF(s);
    if (rc < 0) return 1;
    return 0;  /* NumPy stored it after all */
}

char *nd_scalar_store_marks(nd_graph *g, nd_id **value_of)
{
    *value_of = NULL;
    if (nd_nscalar_stores <= 0 || !nd_scalar_stores) return NULL;
    char *m = PyMem_Calloc((size_t)g->n + 1, 1);
    nd_id *vo = PyMem_Malloc(sizeof(nd_id) * ((size_t)g->n + 1));
    if (!m || !vo) {
        PyMem_Free(m);
        PyMem_Free(vo);
        return PyErr_NoMemory(), NULL;
    }
    for (int k = 0; k < nd_nscalar_stores; k++) {
        nd_id s = nd_scalar_stores[2 * k], v = nd_scalar_stores[2 * k + 1];
        if (s < 0 || s >= g->n || v < 0 || v >= g->n) continue;
        m[s] = 1;
        vo[s] = v;
    }
    *value_of = vo;
    return m;
}

/* The product whose sum REDUCE n is, when one NumPy call computes that sum
 * (graph.h, ND_RED_BY_DOT): its operands are n's inputs here, and the
 * product itself is not computed */
static const nd_node *dot_product(const nd_graph *g, const nd_node *n)
{
    if (n->op != ND_OP_REDUCE || !n->aux || n->nin != 1 || n->in[0] < 0 || n->value) return NULL;
    const nd_node *p = &g->nodes[n->in[0]];
    return p->op == ND_OP_UFUNC && p->sub == ND_UF_MULTIPLY && p->nin == 2 && !p->value &&
           p->in[0] >= 0 && p->in[1] >= 0 ? p : NULL;
}

static int n_inputs(const nd_graph *g, const nd_node *n)
{
    return n->op == ND_OP_EXTERN ? n->nextra : dot_product(g, n) ? 2 : n->nin;
}

static nd_id input_of(const nd_graph *g, const nd_node *n, int k)
{
    const nd_node *p = n->op == ND_OP_REDUCE ? dot_product(g, n) : NULL;
    return n->op == ND_OP_EXTERN ? n->extra[k] : p ? p->in[k] : n->in[k];
}

/* np.dot or np.matmul of the product p's operands (in: their values), in
 * p's loop dtypes: NumPy's values (BLAS) and its warnings */
static PyObject *eval_dot(const nd_node *n, const nd_node *p, PyObject *const *in)
{
    static PyObject *fn[2];
    int which = n->aux == ND_RED_BY_MATMUL;
    if (!fn[which]) {
        PyObject *np = PyImport_ImportModule("numpy");
        fn[which] = np ? PyObject_GetAttrString(np, which ? "matmul" : "dot") : NULL;
        Py_XDECREF(np);
        if (!fn[which]) return NULL;
    }
    PyObject *a = Py_NewRef(in[0]), *b = Py_NewRef(in[1]);
    if (p->in_dtype[0] >= 0) a = astype(a, p->in_dtype[0]);
    if (p->in_dtype[1] >= 0) b = astype(b, p->in_dtype[1]);
    PyObject *r = a && b ? PyObject_CallFunctionObjArgs(fn[which], a, b, NULL) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return astype(as_array(r), n->dtype);
}

/* node i of the eager run, its value into val[i] (ND_F_FP_QUIET: with
 * FP errors ignored, as the NumPy function that made it) */
static int eager_step(nd_graph *g, nd_id i, PyObject *const *inp, PyObject **val, const char *need)
{
    const nd_node *n = &g->nodes[i], *p = n->op == ND_OP_REDUCE ? dot_product(g, n) : NULL;
    PyObject *ctx = NULL;
    if ((n->flags & ND_F_FP_QUIET) && !n->value && !(ctx = errors_ignored())) return -1;
    int rc;
    if (p) rc = (val[i] = eval_dot(n, p, inp)) ? 0 : -1;
    else rc = nd_eval_extern_group(g, i, inp, val, need);
    if (ctx && errors_leave(ctx, rc == 0) < 0) rc = -1;
    return rc;
}

PyObject *nd_backend_eager_run(nd_graph *g, const nd_id *outs, int nout)
{
    int32_t N = g->n;
    PyObject **val = PyMem_Calloc((size_t)N + 1, sizeof(PyObject *));
    int32_t *uses = PyMem_Calloc((size_t)N + 1, sizeof(int32_t));
    char *need = PyMem_Calloc((size_t)N + 1, 1);
    nd_id *store_value = NULL;
    char *store = NULL;
    PyObject *result = NULL;
    nd_failed_node = ND_NONE;
    nd_failed_before = 0;
    if (!val || !uses || !need) { PyErr_NoMemory(); goto done; }
    store = nd_scalar_store_marks(g, &store_value);
    if (!store && PyErr_Occurred()) goto done;
    for (int i = 0; i < nout; i++) {
        if (outs[i] < 0 || outs[i] >= N) {
            PyErr_SetString(PyExc_ValueError, "numdyn eager: output id out of range");
            goto done;
        }
        need[outs[i]] = 1;
        uses[outs[i]]++;  /* outputs stay alive until the end */
    }
    for (nd_id i = N - 1; i >= 0; i--) {
        nd_node *n = &g->nodes[i];
        if (!need[i] || n->value || n->op == ND_OP_INPUT) continue;
        for (int k = 0; k < n_inputs(g, n); k++) {
            nd_id j = input_of(g, n, k);
            if (j >= 0) { need[j] = 1; uses[j]++; }
        }
    }
    for (nd_id i = 0; i < N; i++) {
        if (!need[i]) continue;
        nd_node *n = &g->nodes[i];
        PyObject *ins[ND_MAXIN > 8 ? ND_MAXIN : 8], **inp = ins;
        int nin = (n->value || n->op == ND_OP_INPUT) ? 0 : n_inputs(g, n);
        if (nin > 8 && !(inp = PyMem_Malloc(sizeof(PyObject *) * (size_t)nin))) {
            PyErr_NoMemory();
            goto done;
        }
        for (int k = 0; k < nin; k++) inp[k] = input_of(g, n, k) >= 0 ? val[input_of(g, n, k)] : NULL;
        /* a scalar store raises before its write: NumPy's int() of the scalar */
        if (store && store[i] && !n->value && val[store_value[i]] &&
            nd_scalar_store_check(val[store_value[i]], n->dtype, 1) != 0) {
            if (inp != ins) PyMem_Free(inp);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_SystemError, "numdyn eager: scalar store check failed");
            nd_failed_node = i;
            nd_failed_before = 1;
            goto done;
        }
        /* val[i] set already: an earlier output of the same extern call made it */
        int rc = 0;
        if (!val[i]) rc = eager_step(g, i, inp, val, need);
        if (inp != ins) PyMem_Free(inp);
        if (rc < 0) {
            nd_failed_node = i;
            goto done;
        }
        for (int k = 0; k < nin; k++) {
            nd_id j = input_of(g, n, k);
            if (j >= 0 && --uses[j] == 0) Py_CLEAR(val[j]);
        }
    }
    result = PyList_New(nout);
    if (!result) goto done;
    for (int i = 0; i < nout; i++) {
        PyObject *v = val[outs[i]];
        /* results escape to user code: hand out writeable arrays, never a
         * read-only (possibly 0-stride) view of an intermediate */
        if (!(PyArray_FLAGS((PyArrayObject *)v) & NPY_ARRAY_WRITEABLE))
            v = PyArray_NewCopy((PyArrayObject *)v, NPY_CORDER);
        else
            Py_INCREF(v);
        if (!v) { Py_CLEAR(result); goto done; }
        PyList_SET_ITEM(result, i, v);
    }
    if (nd_outputs_in_order(g, outs, nout, result) < 0) Py_CLEAR(result);
done:
    if (val) for (int32_t i = 0; i < N; i++) Py_XDECREF(val[i]);
    PyMem_Free(val);
    PyMem_Free(uses);
    PyMem_Free(need);
    PyMem_Free(store);
    PyMem_Free(store_value);
    return result;
}
