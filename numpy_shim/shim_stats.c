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
DATA_DEP(bincount_impl, "numpy.bincount: output length depends on the data")
DATA_DEP(unique_impl, "numpy.unique: output shape depends on the data")
DATA_DEP(nonzero_impl, "numpy.nonzero: output shape depends on the data")
DATA_DEP(flatnonzero_impl, "numpy.flatnonzero: output shape depends on the data")
DATA_DEP(argwhere_impl, "numpy.argwhere: output shape depends on the data")
DATA_DEP(extract_impl, "numpy.extract: output shape depends on the data")
DATA_DEP(nonzero_method, "ndarray.nonzero: output shape depends on the data")


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
    if (nd_shim_add_functions(tab, stats_defs) < 0) return -1;
    return nd_shim_add_methods(tab, stats_methods);
}
