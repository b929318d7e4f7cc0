/* shim_stats.c -- median, percentile/quantile, interp, convolve/correlate, histogram;
 * bincount, unique and nonzero (data-dependent shapes: recorded graph breaks)
 * as EXTERN nodes or fused graph ops (see shim_internal.h, "EXTERN calls", for how an extern
 * call is built: shapes by NumPy's rules written in C, dtypes from a cached
 * probe of NumPy itself). */
#include "shim_internal.h"
#include <string.h>

/* ------------------------------------------ order statistics, interp, conv */

static int reduced_shape(const nd_xj_arr *a, PyObject *axis, int keepdims, int *nd, npy_intp *sh)
{
    uint64_t mask;
    if (nd_shim_axis_mask_normalized(axis == Py_None ? NULL : axis, a->ndim, &mask) < 0) return -1;
    int o = 0;
    for (int d = 0; d < a->ndim; d++) {
        if (mask & (1ULL << d)) { if (keepdims) sh[o++] = 1; }
        else sh[o++] = a->shape[d];
    }
    *nd = o;
    return 0;
}

/* a hashable constant for the template: lists become tuples */
static PyObject *as_const(PyObject *o)
{
    if (!o) Py_RETURN_NONE;
    if (PyList_Check(o)) return PyList_AsTuple(o);
    Py_INCREF(o);
    return o;
}

static PyObject *median_impl(nd_trace *t, PyObject **argv)
{
    /* a, axis, out, overwrite_input, keepdims */
    if (argv[2] && argv[2] != Py_None) return nd_shim_unsupported("numpy.median with out=");
    if (argv[1] && nd_proxy_check(argv[1])) return nd_shim_unsupported("numpy.median with a lazy axis");
    if (argv[3] && PyObject_IsTrue(argv[3]))
        return nd_shim_unsupported("numpy.median with overwrite_input=True (partitions its input)");
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    int keep = nd_shim_bool_arg(argv[4], 0);
    if (keep < 0) return NULL;
    int nd;
    npy_intp sh[ND_MAXDIMS];
    if (reduced_shape(&a, argv[1], keep, &nd, sh) < 0) return NULL;
    nd_ext_out o;
    nd_ext_init1(&o, 1, nd, sh);
    /* never overwrite_input: the input buffer may be the caller's array */
    PyObject *ax = as_const(argv[1]);
    if (!ax) return NULL;
    PyObject *extra[4] = {ax, Py_None, Py_False, keep ? Py_True : Py_False};
    PyObject *r = nd_ext_simple(t, "median", 1, &a, 4, extra, NULL, &o);
    Py_DECREF(ax);
    return r;
}

/* percentile (scale 100) / quantile (scale 1) */
static PyObject *quantile_common(nd_trace *t, PyObject **argv, const char *path, double scale)
{
    static const char *P = "a,q|axis,out,overwrite_input,method,keepdims;weights,interpolation";
    /* a, q, axis, out, overwrite_input, method, keepdims; weights, interpolation */
    if ((argv[3] && argv[3] != Py_None) || (argv[7] && argv[7] != Py_None) || argv[8] ||
        (argv[4] && PyObject_IsTrue(argv[4])))
        return nd_shim_unsupported("numpy.%s with out=/weights=/interpolation=/overwrite_input=", path);
    if (nd_proxy_check(argv[1]) || (argv[2] && nd_proxy_check(argv[2])))
        return nd_shim_unsupported("numpy.%s with lazy q or axis", path);
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    int keep = nd_shim_bool_arg(argv[6], 0);
    if (keep < 0) return NULL;
    PyObject *qa = PyArray_FROMANY(argv[1], NPY_DOUBLE, 0, 0, NPY_ARRAY_CARRAY);
    if (!qa) { PyErr_Clear(); return nd_xj_numpy_error(path, P, argv); }
    PyArrayObject *q = (PyArrayObject *)qa;
    const double *qv = PyArray_DATA(q);
    for (npy_intp i = 0; i < PyArray_SIZE(q); i++)
        if (!(qv[i] >= 0 && qv[i] <= scale)) { Py_DECREF(qa); return nd_xj_numpy_error(path, P, argv); }
    int nd, qnd = PyArray_NDIM(q);
    npy_intp sh[ND_MAXDIMS], rsh[ND_MAXDIMS];
    if (qnd > ND_MAXDIMS || reduced_shape(&a, argv[2], keep, &nd, rsh) < 0 || qnd + nd > ND_MAXDIMS) {
        Py_DECREF(qa);
        return PyErr_Occurred() ? NULL : nd_shim_unsupported("numpy.%s above rank 16", path);
    }
    if (qnd) memcpy(sh, PyArray_DIMS(q), sizeof(npy_intp) * (size_t)qnd);  /* 0-d q: NULL dims */
    memcpy(sh + qnd, rsh, sizeof(npy_intp) * (size_t)nd);
    Py_DECREF(qa);
    nd_ext_out o;
    nd_ext_init1(&o, 1, qnd + nd, sh);
    PyObject *qc = as_const(argv[1]), *ax = qc ? as_const(argv[2]) : NULL;
    PyObject *meth = ax ? (argv[5] ? (Py_INCREF(argv[5]), argv[5]) : PyUnicode_FromString("linear")) : NULL;
    PyObject *r = NULL;
    if (meth) {
        PyObject *extra[6] = {qc, ax, Py_None, Py_False, meth, keep ? Py_True : Py_False};
        r = nd_ext_simple(t, path, 1, &a, 6, extra, NULL, &o);
    }
    Py_XDECREF(qc);
    Py_XDECREF(ax);
    Py_XDECREF(meth);
    return r;
}

static PyObject *percentile_impl(nd_trace *t, PyObject **argv) { return quantile_common(t, argv, "percentile", 100.0); }
static PyObject *quantile_impl(nd_trace *t, PyObject **argv) { return quantile_common(t, argv, "quantile", 1.0); }

static PyObject *interp_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "x,xp,fp|left,right,period";
    for (int k = 3; k < 6; k++)
        if (argv[k] && nd_proxy_check(argv[k]))
            return nd_shim_unsupported("numpy.interp with lazy left/right/period");
    nd_xj_arr in[3];
    for (int k = 0; k < 3; k++)
        if (nd_xj_array(t, argv[k], &in[k])) return NULL;
    if (in[1].ndim != 1 || in[2].ndim != 1 || in[1].shape[0] != in[2].shape[0] || in[1].shape[0] == 0)
        return nd_xj_numpy_error("interp", P, argv);
    nd_ext_out o;
    nd_ext_init1(&o, 1, in[0].ndim, in[0].shape);
    PyObject *extra[3] = {argv[3], argv[4], argv[5]};
    return nd_ext_simple(t, "interp", 3, in, 3, extra, NULL, &o);
}

/* mode='valid' of a short real filter as a stencil of graph nodes: out[i]
 * = sum_k a[i + k] * w[k] (w = v reversed for convolve), accumulated in k
 * order at the promoted dtype as NumPy's dot loop does. A loop of per-row
 * np.convolve calls (a separable blur) then fuses each row with its store
 * instead of calling NumPy per row. Not here: float16 (NumPy accumulates
 * it in float32), bool (a logical dot), complex (correlate conjugates),
 * long filters (NumPy's BLAS dot is the better loop). */
#define CONV_MAX_TAPS 16
static PyObject *conv_stencil(nd_trace *t, nd_xj_arr *a, nd_xj_arr *v, int reverse, npy_intp len)
{
    PyArray_Descr *da = PyArray_DescrFromType(a->dtype), *dv = PyArray_DescrFromType(v->dtype);
    PyArray_Descr *dt = da && dv ? PyArray_PromoteTypes(da, dv) : NULL;
    Py_XDECREF(da);
    Py_XDECREF(dv);
    if (!dt) return NULL;
    int d = dt->type_num;
    Py_DECREF(dt);
    if (!(PyTypeNum_ISINTEGER(d) || d == NPY_FLOAT || d == NPY_DOUBLE)) return Py_NewRef(Py_NotImplemented);
    npy_intp m = v->shape[0], one = 1;
    int loop[2] = {d, d};
    nd_id acc = ND_NONE;
    for (npy_intp k = 0; k < m; k++) {
        nd_id x = nd_shim_node_view(t, a->id, 1, &len, k, &one);
        nd_id w = x == ND_NONE ? ND_NONE : nd_shim_node_view(t, v->id, 0, NULL, reverse ? m - 1 - k : k, NULL);
        nd_id in[2] = {x, w};
        nd_id p = w == ND_NONE ? ND_NONE : nd_shim_node_ufunc(t, ND_UF_MULTIPLY, in, loop, d, 0);
        if (p == ND_NONE) return NULL;
        if (acc == ND_NONE) { acc = p; continue; }
        nd_id s2[2] = {acc, p};
        if ((acc = nd_shim_node_ufunc(t, ND_UF_ADD, s2, loop, d, 0)) == ND_NONE) return NULL;
    }
    return nd_shim_wrap(t, acc, 0);
}

static PyObject *conv_common(nd_trace *t, PyObject **argv, const char *path, const char *dflt)
{
    static const char *P = "a,v|mode";
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    for (int k = 0; k < 2; k++) {
        if (in[k].ndim > 1) return nd_xj_numpy_error(path, P, argv);
        if (in[k].ndim == 0) {
            npy_intp one = 1;
            if (nd_xj_reshape(t, &in[k], 1, &one) < 0) return NULL;
        }
    }
    const char *mode = dflt;
    if (argv[2]) {
        if (!PyUnicode_Check(argv[2])) return nd_shim_unsupported("numpy.%s with a numeric mode", path);
        if (!(mode = PyUnicode_AsUTF8(argv[2]))) return NULL;
    }
    npy_intp n = in[0].shape[0], m = in[1].shape[0], len;
    npy_intp big = n > m ? n : m, small = n > m ? m : n;
    if (n == 0 || m == 0) return nd_xj_numpy_error(path, P, argv);
    if (strcmp(mode, "full") == 0) len = n + m - 1;
    else if (strcmp(mode, "same") == 0) len = big;
    else if (strcmp(mode, "valid") == 0) len = big - small + 1;
    else return nd_xj_numpy_error(path, P, argv);
    int conv = path[0] == 'c' && path[2] == 'n';   /* convolve (else correlate) */
    if (strcmp(mode, "valid") == 0 && small <= CONV_MAX_TAPS && (conv || n >= m)) {
        /* convolve is symmetric in its operands (NumPy swaps them so the
         * longer one slides); correlate of a longer v reverses: extern */
        nd_xj_arr *pa = n >= m ? &in[0] : &in[1], *pv = n >= m ? &in[1] : &in[0];
        PyObject *r = conv_stencil(t, pa, pv, conv, len);
        if (r != Py_NotImplemented) return r;
        Py_DECREF(r);
    }
    nd_ext_out o;
    nd_ext_init1(&o, 0, 1, &len);
    PyObject *mo = PyUnicode_FromString(mode);
    if (!mo) return NULL;
    PyObject *r = nd_ext_simple(t, path, 2, in, 1, &mo, NULL, &o);
    Py_DECREF(mo);
    return r;
}

static PyObject *convolve_impl(nd_trace *t, PyObject **argv) { return conv_common(t, argv, "convolve", "full"); }
static PyObject *correlate_impl(nd_trace *t, PyObject **argv) { return conv_common(t, argv, "correlate", "valid"); }

#define DATA_DEP(NAME, MSG) \
    static PyObject *NAME(nd_trace *t, PyObject **argv) { return nd_shim_unsupported(MSG); }
DATA_DEP(unique_impl, "numpy.unique: output shape depends on the data")
DATA_DEP(nonzero_impl, "numpy.nonzero: output shape depends on the data")
DATA_DEP(flatnonzero_impl, "numpy.flatnonzero: output shape depends on the data")
DATA_DEP(argwhere_impl, "numpy.argwhere: output shape depends on the data")
DATA_DEP(extract_impl, "numpy.extract: output shape depends on the data")
DATA_DEP(nonzero_method, "ndarray.nonzero: output shape depends on the data")


/* ------------------------------------------------------------ bincount */

#define BC_MAX(T)                                                              \
    do {                                                                       \
        for (npy_intp i = 0; i < n; i++) {                                     \
            int64_t v = (int64_t)*(const T *)(p + i * st);                     \
            if (v < 0) return -1;                                              \
            if (v > mx) mx = v;                                                \
        }                                                                      \
    } while (0)

/* np.bincount(x, minlength=m)'s length for a 1-D integer array x that
 * NumPy casts safely to intp: max(m, max(x) + 1); -1 where NumPy raises
 * or the dtype is not one of these (the break then runs NumPy). Also the
 * replay's data guard (nd_trace_data_guard): a vectorizable pass. */
static int64_t bincount_len(PyArrayObject *x, int64_t minlength)
{
    /* an empty x: NumPy's result is intp whatever the weights (a break) */
    if (PyArray_NDIM(x) != 1 || PyArray_DIM(x, 0) == 0) return -1;
    npy_intp n = PyArray_DIM(x, 0), st = PyArray_STRIDE(x, 0);
    const char *p = PyArray_BYTES(x);
    int64_t mx = -1;
    switch (PyArray_TYPE(x)) {
    case NPY_BYTE: BC_MAX(int8_t); break;
    case NPY_UBYTE: BC_MAX(uint8_t); break;
    case NPY_SHORT: BC_MAX(int16_t); break;
    case NPY_USHORT: BC_MAX(uint16_t); break;
    case NPY_INT: BC_MAX(int32_t); break;
    case NPY_UINT: BC_MAX(uint32_t); break;
    case NPY_LONG: case NPY_LONGLONG: BC_MAX(int64_t); break;
    default: return -1;
    }
    return mx + 1 > minlength ? mx + 1 : minlength;
}
#undef BC_MAX

/* bincount_n(x, weights or None, L): np.bincount(x, weights, minlength=L)
 * for an x whose largest element is below L (the trace's data guard saw
 * to it), in one pass and without NumPy's argument parsing: the counts as
 * intp, or the weights (as float64) summed in x's order, as NumPy does.
 * Anything else is NumPy's own call (its result, its errors). */
static PyObject *bincount_n_fn(PyObject *self, PyObject *args)
{
    PyObject *x, *w;
    Py_ssize_t L;
    if (!PyArg_ParseTuple(args, "OOn", &x, &w, &L)) return NULL;
    PyArrayObject *xa = PyArray_Check(x) ? (PyArrayObject *)x : NULL;
    PyArrayObject *wa = w != Py_None && PyArray_Check(w) ? (PyArrayObject *)w : NULL;
    int fast = xa && PyArray_NDIM(xa) == 1 && PyArray_TYPE(xa) == NPY_INTP && PyArray_ISALIGNED(xa) &&
               PyArray_ISNOTSWAPPED(xa) && L >= 0 &&
               (w == Py_None || (wa && PyArray_NDIM(wa) == 1 && PyArray_TYPE(wa) == NPY_DOUBLE &&
                                 PyArray_ISALIGNED(wa) && PyArray_ISNOTSWAPPED(wa) &&
                                 PyArray_DIM(wa, 0) == PyArray_DIM(xa, 0)));
    if (fast) {
        npy_intp n = PyArray_DIM(xa, 0), xs = PyArray_STRIDE(xa, 0) / (npy_intp)sizeof(npy_intp);
        const npy_intp *xp = (const npy_intp *)PyArray_DATA(xa);
        for (npy_intp i = 0; i < n && fast; i++) fast = xp[i * xs] >= 0 && xp[i * xs] < L;
        if (fast) {
            npy_intp dim = L;
            PyObject *out = PyArray_Zeros(1, &dim, PyArray_DescrFromType(w == Py_None ? NPY_INTP : NPY_DOUBLE), 0);
            if (!out) return NULL;
            if (w == Py_None) {
                npy_intp *o = (npy_intp *)PyArray_DATA((PyArrayObject *)out);
                for (npy_intp i = 0; i < n; i++) o[xp[i * xs]]++;
            } else {
                double *o = (double *)PyArray_DATA((PyArrayObject *)out);
                const double *wp = (const double *)PyArray_DATA(wa);
                npy_intp ws = PyArray_STRIDE(wa, 0) / (npy_intp)sizeof(double);
                for (npy_intp i = 0; i < n; i++) o[xp[i * xs]] += wp[i * ws];
            }
            return out;
        }
    }
    PyObject *fn = nd_xj_np_attr("bincount");
    if (!fn) return NULL;
    PyObject *r = PyObject_CallFunction(fn, "OOn", x, w, L);
    Py_DECREF(fn);
    return r;
}

static PyMethodDef bincount_n_def = {"bincount_n", bincount_n_fn, METH_VARARGS,
                                     "numdyn: np.bincount of a known length"};
static PyObject *bincount_n_obj;

/* bincount(x, weights=None, minlength=0). Its length is the data's: known
 * now where x is a caller's array as it came in (a graph INPUT), so the
 * call is an EXTERN of that length, and a replayed call runs it only while
 * its argument gives the same length (a data guard). A computed x, or
 * anything NumPy would refuse, is a recorded break (NumPy runs it). */
static PyObject *bincount_impl(nd_trace *t, PyObject **argv)
{
    static const char *why = "numpy.bincount: output length depends on the data";
    PyObject *w = argv[1] && argv[1] != Py_None ? argv[1] : NULL, *ml = argv[2];
    long long minlength = 0;
    if (ml) {
        if (!PyLong_CheckExact(ml)) return nd_shim_unsupported(why);
        minlength = PyLong_AsLongLong(ml);
        if (minlength == -1 && PyErr_Occurred()) { PyErr_Clear(); return nd_shim_unsupported(why); }
        if (minlength < 0) return nd_shim_unsupported(why);
    }
    if (!nd_proxy_check(argv[0])) return nd_shim_unsupported(why);
    nd_xj_arr in[2];
    int r = nd_xj_array(t, argv[0], &in[0]);
    if (r) return r < 0 ? NULL : nd_shim_unsupported(why);
    nd_node *xn = nd_graph_node(nd_trace_graph(t), in[0].id);
    if (xn->op != ND_OP_INPUT || !xn->obj || !PyArray_Check(xn->obj) || in[0].ndim != 1 ||
        PyArray_NDIM((PyArrayObject *)xn->obj) != 1 || PyArray_DIM((PyArrayObject *)xn->obj, 0) != in[0].shape[0])
        return nd_shim_unsupported(why);
    PyObject *xarr = xn->obj;
    int64_t len = bincount_len((PyArrayObject *)xarr, minlength);
    if (len < 0) return nd_shim_unsupported(why);
    if (w) {
        r = nd_xj_array(t, w, &in[1]);
        if (r) return r < 0 ? NULL : nd_shim_unsupported(why);
        /* NumPy casts the weights to float64 safely: the same length, real */
        if (in[1].ndim != 1 || in[1].shape[0] != in[0].shape[0] ||
            !(PyTypeNum_ISBOOL(in[1].dtype) || PyTypeNum_ISINTEGER(in[1].dtype) ||
              in[1].dtype == NPY_HALF || in[1].dtype == NPY_FLOAT || in[1].dtype == NPY_DOUBLE))
            return nd_shim_unsupported(why);
    }
    Py_INCREF(xarr);   /* the guard keeps it; the node may go */
    r = nd_trace_data_guard(t, xarr, bincount_len, minlength, len);
    Py_DECREF(xarr);
    if (r < 0) return NULL;
    npy_intp sh = (npy_intp)len;
    nd_ext_out o;
    nd_ext_init1(&o, 0, 1, &sh);
    o.dtype[0] = w ? NPY_DOUBLE : NPY_INTP;
    PyObject *L = PyLong_FromLongLong((long long)len);
    if (!L) return NULL;
    PyObject *p0 = nd_extern_placeholder(0), *p1 = w ? nd_extern_placeholder(1) : Py_NewRef(Py_None);
    PyObject *tmpl = p0 && p1 ? PyTuple_Pack(3, p0, p1, L) : NULL;
    Py_XDECREF(p0);
    Py_XDECREF(p1);
    Py_DECREF(L);
    if (!tmpl) return NULL;
    PyObject *res = nd_ext_build(t, bincount_n_obj, tmpl, NULL, w ? 2 : 1, in, &o);
    Py_DECREF(tmpl);
    return res;
}

static PyObject *histogram_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a|bins,range,density,weights";
    PyObject *bins = argv[1];
    if (bins && !nd_shim_index_like(bins)) return nd_shim_unsupported("numpy.histogram with explicit or named bins");
    if ((argv[2] && argv[2] != Py_None && (PyTuple_Check(argv[2]) || PyList_Check(argv[2])) &&
         (nd_proxy_check(PySequence_Fast_GET_ITEM(argv[2], 0)) ||
          nd_proxy_check(PySequence_Fast_GET_ITEM(argv[2], PySequence_Fast_GET_SIZE(argv[2]) - 1)))) ||
        (argv[2] && nd_proxy_check(argv[2])))
        return nd_shim_unsupported("numpy.histogram with a lazy range");
    Py_ssize_t nb = bins ? PyNumber_AsSsize_t(bins, PyExc_OverflowError) : 10;
    if (nb == -1 && PyErr_Occurred()) return NULL;
    if (nb < 1) return nd_xj_numpy_error("histogram", P, argv);
    nd_xj_arr in[2];
    int nin = 1;
    if (nd_xj_array(t, argv[0], &in[0])) return NULL;
    if (argv[4] && argv[4] != Py_None) {
        if (nd_xj_array(t, argv[4], &in[1])) return NULL;
        if (in[1].ndim != in[0].ndim ||
            memcmp(in[1].shape, in[0].shape, sizeof(npy_intp) * (size_t)in[0].ndim))
            return nd_xj_numpy_error("histogram", P, argv);
        nin = 2;
    }
    nd_ext_out o;
    nd_ext_init(&o, 2, 1, 0);
    npy_intp h = nb, e = nb + 1;
    nd_ext_shape(&o, 0, 1, &h);
    nd_ext_shape(&o, 1, 1, &e);
    PyObject *fn = nd_xj_np_attr("histogram");
    if (!fn) return NULL;
    PyObject *nbo = PyLong_FromSsize_t(nb);
    PyObject *rng = argv[2] ? argv[2] : Py_None, *r = NULL, *tmpl = NULL;
    PyObject *rt = (rng != Py_None && PyList_Check(rng)) ? PyList_AsTuple(rng) : (Py_INCREF(rng), rng);
    PyObject *p0 = nd_extern_placeholder(0);
    PyObject *pw = nin == 2 ? nd_extern_placeholder(1) : (Py_INCREF(Py_None), Py_None);
    if (nbo && rt && p0 && pw)
        tmpl = PyTuple_Pack(5, p0, nbo, rt, argv[3] ? argv[3] : Py_None, pw);
    if (tmpl) r = nd_ext_build(t, fn, tmpl, NULL, nin, in, &o);
    Py_XDECREF(nbo);
    Py_XDECREF(rt);
    Py_XDECREF(p0);
    Py_XDECREF(pw);
    Py_XDECREF(tmpl);
    Py_DECREF(fn);
    return r;
}

/* -------------------------------------------------------------- register */

static const nd_shim_def stats_defs[] = {
    {"histogram", "a|bins,range,density,weights", histogram_impl, 0},
    {"median", "a|axis,out,overwrite_input,keepdims", median_impl, 0},
    {"percentile", "a,q|axis,out,overwrite_input,method,keepdims;weights,interpolation", percentile_impl, 0},
    {"quantile", "a,q|axis,out,overwrite_input,method,keepdims;weights,interpolation", quantile_impl, 0},
    {"interp", "x,xp,fp|left,right,period", interp_impl, 0},
    {"convolve", "a,v|mode", convolve_impl, 0},
    {"correlate", "a,v|mode", correlate_impl, 0},
    {"bincount", "x|weights,minlength", bincount_impl, 0},
    {"unique", "ar|return_index,return_inverse,return_counts,axis;equal_nan,sorted", unique_impl, 0},
    {"nonzero", "a", nonzero_impl, 0},
    {"flatnonzero", "a", flatnonzero_impl, 0},
    {"argwhere", "a", argwhere_impl, 0},
    {"extract", "condition,arr", extract_impl, 0},
    {NULL, NULL, NULL, 0},
};

static const nd_shim_def stats_methods[] = {
    {"nonzero", "self", nonzero_method, 0},
    {NULL, NULL, NULL, 0},
};

int nd_shim_register_stats(nd_shim_table *tab)
{
    if (!bincount_n_obj && !(bincount_n_obj = PyCFunction_New(&bincount_n_def, NULL))) return -1;
    if (nd_shim_add_functions(tab, stats_defs) < 0) return -1;
    return nd_shim_add_methods(tab, stats_methods);
}
