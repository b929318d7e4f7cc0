/* shim_linalg.c -- numpy.linalg: inv, det, solve, qr, eigh, svd, pinv, norm, ...
 * as EXTERN nodes or fused graph ops (see shim_internal.h, "EXTERN calls", for how an extern
 * call is built: shapes by NumPy's rules written in C, dtypes from a cached
 * probe of NumPy itself). */
#include "shim_internal.h"
#include <string.h>

/* ---------------------------------------------------------------- linalg */

static int is_square_stack(const nd_xj_arr *a)
{
    return a->ndim >= 2 && a->shape[a->ndim - 1] == a->shape[a->ndim - 2];
}

/* argv[0] as a stack of square matrices, else NumPy's own error for
 * numpy.<path>(argv). 0, or -1: return NULL (exception or reason set). */
static int square_arg(nd_trace *t, PyObject **argv, const char *path, const char *P, nd_xj_arr *a)
{
    if (nd_xj_array(t, argv[0], a)) return -1;
    if (!is_square_stack(a)) { nd_xj_numpy_error(path, P, argv); return -1; }
    return 0;
}

#define LINALG_SIMPLE(NAME, PATH, PARAMS, SQUARE, DROP, NEXTRA)                        \
    static PyObject *NAME(nd_trace *t, PyObject **argv)                                 \
    {                                                                                   \
        nd_xj_arr a;                                                                    \
        if (nd_xj_array(t, argv[0], &a)) return NULL;                                   \
        if (a.ndim < 2 || ((SQUARE) && !is_square_stack(&a)))                           \
            return nd_xj_numpy_error(PATH, PARAMS, argv);                               \
        nd_ext_out o;                                                                      \
        nd_ext_init1(&o, 1, a.ndim - (DROP), a.shape);                                     \
        return nd_ext_simple(t, PATH, 1, &a, NEXTRA, argv + 1, NULL, &o);                  \
    }

LINALG_SIMPLE(inv_impl, "linalg.inv", "a", 1, 0, 0)
LINALG_SIMPLE(det_impl, "linalg.det", "a", 1, 2, 0)

static PyObject *cholesky_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr a;
    if (square_arg(t, argv, "linalg.cholesky", "a|;upper", &a)) return NULL;
    nd_ext_out o;
    nd_ext_init1(&o, 0, a.ndim, a.shape);
    PyObject *kw = NULL, *r;
    if (argv[1] && !(kw = Py_BuildValue("{sO}", "upper", argv[1]))) return NULL;
    r = nd_ext_simple(t, "linalg.cholesky", 1, &a, 0, NULL, kw, &o);
    Py_XDECREF(kw);
    return r;
}

static PyObject *matrix_power_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (!is_square_stack(&a) || !nd_shim_index_like(argv[1]))
        return nd_xj_numpy_error("linalg.matrix_power", "a,n", argv);
    nd_ext_out o;
    nd_ext_init1(&o, 0, a.ndim, a.shape);
    return nd_ext_simple(t, "linalg.matrix_power", 1, &a, 1, argv + 1, NULL, &o);
}

static PyObject *slogdet_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr a;
    if (square_arg(t, argv, "linalg.slogdet", "a", &a)) return NULL;
    nd_ext_out o;
    nd_ext_init(&o, 2, 1, 1);
    nd_ext_shape(&o, 0, a.ndim - 2, a.shape);
    nd_ext_shape(&o, 1, a.ndim - 2, a.shape);
    return nd_ext_simple(t, "linalg.slogdet", 1, &a, 0, NULL, NULL, &o);
}

static PyObject *solve_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    const nd_xj_arr *a = &in[0], *b = &in[1];
    if (!is_square_stack(a) || b->ndim == 0) return nd_xj_numpy_error("linalg.solve", "a,b", argv);
    npy_intp m = a->shape[a->ndim - 1], sh[ND_MAXDIMS + 2];
    int nd;
    if (b->ndim == 1) {
        if (b->shape[0] != m) return nd_xj_numpy_error("linalg.solve", "a,b", argv);
        nd = a->ndim - 1;
        memcpy(sh, a->shape, sizeof(npy_intp) * (size_t)nd);
    } else {
        if (b->shape[b->ndim - 2] != m ||
            nd_ext_batch_broadcast(a->ndim - 2, a->shape, b->ndim - 2, b->shape, &nd, sh))
            return nd_xj_numpy_error("linalg.solve", "a,b", argv);
        sh[nd++] = m;
        sh[nd++] = b->shape[b->ndim - 1];
    }
    nd_ext_out o;
    nd_ext_init1(&o, 0, nd, sh);
    return nd_ext_simple(t, "linalg.solve", 2, in, 0, NULL, NULL, &o);
}

static PyObject *qr_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a|mode";
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (a.ndim < 2) return nd_xj_numpy_error("linalg.qr", P, argv);
    const char *mode = "reduced";
    if (argv[1]) {
        if (!PyUnicode_Check(argv[1])) return nd_xj_numpy_error("linalg.qr", P, argv);
        mode = PyUnicode_AsUTF8(argv[1]);
        if (!mode) return NULL;
    }
    int nd = a.ndim;
    npy_intp M = a.shape[nd - 2], N = a.shape[nd - 1], K = M < N ? M : N;
    npy_intp s0[ND_MAXDIMS], s1[ND_MAXDIMS];
    memcpy(s0, a.shape, sizeof(s0));
    memcpy(s1, a.shape, sizeof(s1));
    nd_ext_out o;
    if (strcmp(mode, "reduced") == 0 || strcmp(mode, "complete") == 0) {
        npy_intp c = strcmp(mode, "reduced") == 0 ? K : M;
        s0[nd - 1] = c;       /* Q (..., M, c) */
        s1[nd - 2] = c;       /* R (..., c, N) */
        nd_ext_init(&o, 2, 1, 0);
        nd_ext_shape(&o, 0, nd, s0);
        nd_ext_shape(&o, 1, nd, s1);
    } else if (strcmp(mode, "r") == 0) {
        s1[nd - 2] = K;
        nd_ext_init1(&o, 0, nd, s1);
    } else if (strcmp(mode, "raw") == 0) {
        s0[nd - 2] = N;       /* h (..., N, M) */
        s0[nd - 1] = M;
        s1[nd - 2] = K;       /* tau (..., K) */
        nd_ext_init(&o, 2, 1, 0);
        nd_ext_shape(&o, 0, nd, s0);
        nd_ext_shape(&o, 1, nd - 1, s1);
    } else {
        return nd_xj_numpy_error("linalg.qr", P, argv);
    }
    PyObject *m = PyUnicode_FromString(mode);
    if (!m) return NULL;
    PyObject *r = nd_ext_simple(t, "linalg.qr", 1, &a, 1, &m, NULL, &o);
    Py_DECREF(m);
    return r;
}

static PyObject *eigh_common(nd_trace *t, PyObject **argv, int vectors)
{
    const char *path = vectors ? "linalg.eigh" : "linalg.eigvalsh";
    nd_xj_arr a;
    if (square_arg(t, argv, path, "a|UPLO", &a)) return NULL;
    nd_ext_out o;
    nd_ext_init(&o, vectors ? 2 : 1, vectors, 0);
    nd_ext_shape(&o, 0, a.ndim - 1, a.shape);
    if (vectors) nd_ext_shape(&o, 1, a.ndim, a.shape);
    PyObject *uplo = argv[1] ? (Py_INCREF(argv[1]), argv[1]) : PyUnicode_FromString("L");
    if (!uplo) return NULL;
    PyObject *r = nd_ext_simple(t, path, 1, &a, 1, &uplo, NULL, &o);
    Py_DECREF(uplo);
    return r;
}

static PyObject *eigh_impl(nd_trace *t, PyObject **argv) { return eigh_common(t, argv, 1); }
static PyObject *eigvalsh_impl(nd_trace *t, PyObject **argv) { return eigh_common(t, argv, 0); }

static PyObject *svd_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a|full_matrices,compute_uv,hermitian";
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (a.ndim < 2) return nd_xj_numpy_error("linalg.svd", P, argv);
    int full = nd_shim_bool_arg(argv[1], 1), uv = nd_shim_bool_arg(argv[2], 1);
    int herm = nd_shim_bool_arg(argv[3], 0);
    if (full < 0 || uv < 0 || herm < 0) return NULL;
    if (herm && !is_square_stack(&a)) return nd_xj_numpy_error("linalg.svd", P, argv);
    int nd = a.ndim;
    npy_intp M = a.shape[nd - 2], N = a.shape[nd - 1], K = M < N ? M : N;
    npy_intp su[ND_MAXDIMS], ss[ND_MAXDIMS], sv[ND_MAXDIMS];
    memcpy(su, a.shape, sizeof(su));
    memcpy(ss, a.shape, sizeof(ss));
    memcpy(sv, a.shape, sizeof(sv));
    ss[nd - 2] = K;
    nd_ext_out o;
    PyObject *extra[3] = {full ? Py_True : Py_False, uv ? Py_True : Py_False,
                          herm ? Py_True : Py_False};
    if (!uv) {
        nd_ext_init1(&o, 0, nd - 1, ss);
    } else {
        su[nd - 1] = full ? M : K;  /* U (..., M, M|K) */
        sv[nd - 2] = full ? N : K;  /* Vh (..., N|K, N) */
        nd_ext_init(&o, 3, 1, 0);
        nd_ext_shape(&o, 0, nd, su);
        nd_ext_shape(&o, 1, nd - 1, ss);
        nd_ext_shape(&o, 2, nd, sv);
    }
    return nd_ext_simple(t, "linalg.svd", 1, &a, 3, extra, NULL, &o);
}

static PyObject *pinv_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a|rcond,hermitian;rtol";
    if (argv[1] && nd_proxy_check(argv[1])) return nd_shim_unsupported("numpy.linalg.pinv with a lazy rcond");
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (a.ndim < 2) return nd_xj_numpy_error("linalg.pinv", P, argv);
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, a.shape, sizeof(sh));
    sh[a.ndim - 2] = a.shape[a.ndim - 1];
    sh[a.ndim - 1] = a.shape[a.ndim - 2];
    nd_ext_out o;
    nd_ext_init1(&o, 0, a.ndim, sh);
    PyObject *kw = NULL, *r;
    if (argv[3] && !(kw = Py_BuildValue("{sO}", "rtol", argv[3]))) return NULL;
    PyObject *extra[2] = {argv[1], argv[2] ? argv[2] : Py_False};
    r = nd_ext_simple(t, "linalg.pinv", 1, &a, 2, extra, kw, &o);
    Py_XDECREF(kw);
    return r;
}

static PyObject *multi_dot_impl(nd_trace *t, PyObject **argv)
{
    if (argv[1]) return nd_shim_unsupported("numpy.linalg.multi_dot with out=");
    PyObject *seq = PySequence_Fast(argv[0], "arrays");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 2 || n > ND_SHIM_MAXARGS) {
        Py_DECREF(seq);
        return n < 2 ? nd_xj_numpy_error("linalg.multi_dot", "arrays|;out", argv)
                     : nd_shim_unsupported("numpy.linalg.multi_dot of many arrays");
    }
    nd_xj_arr in[ND_SHIM_MAXARGS];
    for (Py_ssize_t i = 0; i < n; i++)
        if (nd_xj_array(t, PySequence_Fast_GET_ITEM(seq, i), &in[i])) { Py_DECREF(seq); return NULL; }
    Py_DECREF(seq);
    /* first may be 1-d (row), last may be 1-d (column), the rest 2-d */
    int ok = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int lo = (i == 0 || i == n - 1) ? 1 : 2;
        ok &= in[i].ndim >= lo && in[i].ndim <= 2;
    }
    for (Py_ssize_t i = 0; ok && i + 1 < n; i++) {
        npy_intp k1 = in[i].shape[in[i].ndim - 1];
        npy_intp k2 = in[i + 1].ndim == 1 ? in[i + 1].shape[0] : in[i + 1].shape[0];
        ok = k1 == k2;
    }
    if (!ok) return nd_xj_numpy_error("linalg.multi_dot", "arrays|;out", argv);
    npy_intp sh[2];
    int nd = 0;
    if (in[0].ndim == 2) sh[nd++] = in[0].shape[0];
    if (in[n - 1].ndim == 2) sh[nd++] = in[n - 1].shape[1];
    nd_ext_out o;
    nd_ext_init1(&o, 1, nd, sh);
    PyObject *fn = nd_xj_np_attr("linalg.multi_dot");
    if (!fn) return NULL;
    PyObject *lst = PyList_New(n), *tmpl = NULL, *r = NULL;
    if (!lst) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ph = nd_extern_placeholder((int)i);
        if (!ph) goto done;
        PyList_SET_ITEM(lst, i, ph);
    }
    /* a tuple of placeholders: hashable, and multi_dot accepts any sequence */
    PyObject *tl = PyList_AsTuple(lst);
    if (!tl) goto done;
    tmpl = PyTuple_Pack(1, tl);
    Py_DECREF(tl);
    if (tmpl) r = nd_ext_build(t, fn, tmpl, NULL, (int)n, in, &o);
done:
    Py_DECREF(fn);
    Py_XDECREF(lst);
    Py_XDECREF(tmpl);
    return r;
}

/* norm: the common vector/Frobenius forms as fused reductions built from
 * shim ops (so NEP-50 typing and scalar-vs-array results are the shim's);
 * ord=2/-2/'nuc' matrix norms: reductions of svd's singular values. */
/* x.<name>(axis=axis, keepdims=keepdims) through the shim: sum/max/min */
/* x.name(axis=, keepdims=); NumPy's norm takes a max with initial=0 (an
 * empty vector's inf-norm, an empty matrix's 1- and inf-norms are 0, not
 * max's "zero-size array" error): "max" gets it here */
static PyObject *red_axis(const char *name, PyObject *x, PyObject *axis, PyObject *keepdims)
{
    PyObject *kw = !strcmp(name, "max")
                   ? Py_BuildValue("{sOsOsi}", "axis", axis ? axis : Py_None, "keepdims",
                                   keepdims ? keepdims : Py_False, "initial", 0)
                   : Py_BuildValue("{sOsO}", "axis", axis ? axis : Py_None, "keepdims",
                                   keepdims ? keepdims : Py_False);
    PyObject *args = PyTuple_New(0);
    PyObject *r = (kw && args) ? nd_shim_method(name, x, args, kw) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(args);
    return r;
}

static PyObject *sum_axis(PyObject *x, PyObject *axis, PyObject *keepdims)
{
    return red_axis("sum", x, axis, keepdims);
}

/* A matrix norm m over axes ax2 of an ndim-d array of `shape`, with those
 * axes kept as 1s (keepdims=True). Steals m; new ref or NULL. */
static PyObject *keep_matrix_dims(nd_trace *t, PyObject *m, int ndim, const npy_intp *shape,
                                  const int *ax2)
{
    nd_xj_arr mv;
    npy_intp ksh[ND_MAXDIMS];
    memcpy(ksh, shape, sizeof(npy_intp) * (size_t)ndim);
    ksh[ax2[0]] = ksh[ax2[1]] = 1;
    mv.id = nd_proxy_read(m);
    Py_DECREF(m);
    if (mv.id == ND_NONE) return NULL;
    nd_xj_fill(t, &mv);
    return nd_xj_reshape(t, &mv, ndim, ksh) == 0 ? nd_shim_wrap(t, mv.id, 0) : NULL;
}

/* ord=2 / -2 / 'nuc' over axes ax2 (NumPy's _multi_svd_norm): the max /
 * min / sum of the singular values of x with those axes moved last, so the
 * norm is traced (and differentiable through svd's rule) */
static PyObject *svd_norm(nd_trace *t, PyObject *x, const nd_xj_arr *a, const int ax2[2],
                          const char *op, int keepdims)
{
    PyObject *perm = PyTuple_New(a->ndim);
    if (!perm) return NULL;
    for (int d = 0, k = 0; d < a->ndim; d++)
        if (d != ax2[0] && d != ax2[1]) PyTuple_SET_ITEM(perm, k++, PyLong_FromLong(d));
    PyTuple_SET_ITEM(perm, a->ndim - 2, PyLong_FromLong(ax2[0]));
    PyTuple_SET_ITEM(perm, a->ndim - 1, PyLong_FromLong(ax2[1]));
    PyObject *args = PyTuple_Pack(1, perm);
    Py_DECREF(perm);
    PyObject *xt = args ? nd_shim_method("transpose", x, args, NULL) : NULL;
    Py_XDECREF(args);
    if (!xt) return NULL;
    PyObject *sargv[4] = {xt, Py_False, Py_False, NULL};
    PyObject *sv = svd_impl(t, sargv);
    Py_DECREF(xt);
    PyObject *last = sv ? PyLong_FromLong(-1) : NULL;
    PyObject *m = last ? red_axis(op, sv, last, Py_False) : NULL;
    Py_XDECREF(last);
    Py_XDECREF(sv);
    if (m && keepdims) m = keep_matrix_dims(t, m, a->ndim, a->shape, ax2);
    return m;
}

/* NumPy's norm of a whole array (ord None, 'fro' of a matrix or 2 of a
 * vector, no axis) is sqrt of x.ravel().dot(x.ravel()), of the real and
 * imaginary parts' dots added for complex x: its sums are dot's (a float16
 * dot multiplies and sums in float32 and rounds once, not the sum of
 * float16 squares) and so is its overflow warning ("in dot") */
static PyObject *whole_norm(PyObject *x, int ndim, int keepdims, int cplx)
{
    PyObject *flat = PyObject_CallMethod(x, "ravel", NULL), *sq = NULL;
    if (flat && cplx) {
        PyObject *re = PyObject_GetAttrString(flat, "real");
        PyObject *im = re ? PyObject_GetAttrString(flat, "imag") : NULL;
        PyObject *r2 = im ? PyObject_CallMethod(re, "dot", "O", re) : NULL;
        PyObject *i2 = r2 ? PyObject_CallMethod(im, "dot", "O", im) : NULL;
        sq = i2 ? PyNumber_Add(r2, i2) : NULL;
        Py_XDECREF(re);
        Py_XDECREF(im);
        Py_XDECREF(r2);
        Py_XDECREF(i2);
    } else if (flat) {
        sq = PyObject_CallMethod(flat, "dot", "O", flat);
    }
    PyObject *r = sq ? nd_shim_ufunc1(ND_UF_SQRT, sq) : NULL;
    Py_XDECREF(flat);
    Py_XDECREF(sq);
    if (r && keepdims) {
        PyObject *ones = PyTuple_New(ndim);
        for (int d = 0; ones && d < ndim; d++) PyTuple_SET_ITEM(ones, d, PyLong_FromLong(1));
        PyObject *k = ones ? PyObject_CallMethod(r, "reshape", "O", ones) : NULL;
        Py_XDECREF(ones);
        Py_SETREF(r, k);
    }
    return r;
}

static PyObject *norm_axes(nd_trace *t, PyObject **argv)
{
    static const char *P = "x|ord,axis,keepdims";
    PyObject *ordo = argv[1] && argv[1] != Py_None ? argv[1] : NULL;
    PyObject *axis = argv[2] && argv[2] != Py_None ? argv[2] : NULL;
    PyObject *keep = argv[3];
    int keepdims = nd_shim_keepdims_arg(keep);
    if (keepdims < 0) return NULL;
    if (axis && nd_shim_axis_bool_refused(axis, "") < 0) {
        /* norm normalizes a bool axis as 0/1; the reductions it runs refuse one */
        PyErr_Clear();
        return nd_shim_unsupported("numpy.linalg.norm with a bool axis");
    }
    if (!nd_proxy_check(argv[0])) return nd_shim_unsupported("numpy.linalg.norm of a non-proxy");
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    /* NumPy: non-inexact input is converted to float first */
    PyObject *x;
    int inexact = PyTypeNum_ISFLOAT(a.dtype) || PyTypeNum_ISCOMPLEX(a.dtype);
    if (inexact) x = nd_shim_wrap(t, a.id, 0);
    else x = nd_shim_wrap(t, nd_shim_node_cast(t, a.id, NPY_FLOAT64), 0);
    if (!x) return NULL;
    /* which axes: vector (1) or matrix (2) */
    int naxes;
    if (!axis) naxes = a.ndim;
    else if (nd_shim_index_like(axis)) naxes = 1;
    else {
        Py_ssize_t k = PySequence_Check(axis) ? PySequence_Size(axis) : -1;
        if (k < 0) { PyErr_Clear(); Py_DECREF(x); return nd_xj_numpy_error("linalg.norm", P, argv); }
        naxes = (int)k;
    }
    PyObject *res = NULL, *absx = NULL, *tmp = NULL, *axis_obj = axis;
    int whole = !ordo ||
                (a.ndim == 1 && (PyLong_CheckExact(ordo) || PyFloat_CheckExact(ordo)) &&
                 PyFloat_AsDouble(ordo) == 2.0) ||
                (a.ndim == 2 && PyUnicode_Check(ordo) &&
                 (PyUnicode_CompareWithASCIIString(ordo, "fro") == 0 ||
                  PyUnicode_CompareWithASCIIString(ordo, "f") == 0));
    if (PyErr_Occurred()) { Py_DECREF(x); return NULL; }
    if (!axis && whole) {
        res = whole_norm(x, a.ndim, keepdims, PyTypeNum_ISCOMPLEX(a.dtype));
        goto done;
    }
    if (naxes == 1 && (a.ndim >= 1)) {
        if (!axis && a.ndim != 1) goto numpy_err;
        double ord = 2.0;
        int isinf = 0;
        if (ordo) {
            if (!PyFloat_Check(ordo) && !PyLong_Check(ordo)) goto numpy_err;
            ord = PyFloat_AsDouble(ordo);
            if (ord == -1.0 && PyErr_Occurred()) goto done;
            isinf = ord > 1e308 ? 1 : ord < -1e308 ? -1 : 0;
        }
        if (!axis) axis_obj = NULL;
        absx = nd_shim_ufunc1(ND_UF_ABSOLUTE, x);
        if (!absx) goto done;
        if (isinf) {
            res = red_axis(isinf > 0 ? "max" : "min", absx, axis_obj, keep);
        } else if (ord == 0.0) {
            /* count of nonzeros, in x's real float dtype */
            PyObject *z = PyLong_FromLong(0);
            PyObject *ne = z ? nd_shim_ufunc2(ND_UF_NOT_EQUAL, x, z) : NULL;
            Py_XDECREF(z);
            if (ne) {
                nd_id c = nd_proxy_read(ne);
                int rdt = nd_proxy_dtype(absx);
                PyObject *nef = c == ND_NONE ? NULL : nd_shim_wrap(t, nd_shim_node_cast(t, c, rdt), 0);
                Py_DECREF(ne);
                if (nef) { res = sum_axis(nef, axis_obj, keep); Py_DECREF(nef); }
            }
        } else if (ord == 1.0) {
            res = sum_axis(absx, axis_obj, keep);
        } else if (ord == 2.0) {
            tmp = nd_shim_ufunc2(ND_UF_MULTIPLY, absx, absx);
            PyObject *s = tmp ? sum_axis(tmp, axis_obj, keep) : NULL;
            if (s) { res = nd_shim_ufunc1(ND_UF_SQRT, s); Py_DECREF(s); }
        } else {
            /* NumPy's `absx **= ord`: ndarray's in-place power, whose fast
             * paths make a Python int -1 np.reciprocal and a Python float
             * 0.5 np.sqrt (their warnings name those ufuncs) */
            tmp = PyNumber_InPlacePower(absx, ordo, Py_None);
            PyObject *s = tmp ? sum_axis(tmp, axis_obj, keep) : NULL;
            PyObject *inv = s ? PyFloat_FromDouble(1.0 / ord) : NULL;
            if (inv) res = nd_shim_ufunc2(ND_UF_POWER, s, inv);
            Py_XDECREF(s);
            Py_XDECREF(inv);
        }
        goto done;
    }
    if (naxes == 2 && a.ndim >= 2) {
        int fro = !ordo;
        int ax2[2] = {a.ndim - 2, a.ndim - 1};
        if (axis) {
            PyObject *seq = PySequence_Fast(axis, "axis");
            if (!seq) goto done;
            for (int i = 0; i < 2; i++) {
                PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
                long v = nd_shim_index_like(e) ? PyLong_AsLong(e) : LONG_MAX;
                if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); goto done; }
                if (v < -a.ndim || v >= a.ndim) { Py_DECREF(seq); goto numpy_err; }
                ax2[i] = (int)(v < 0 ? v + a.ndim : v);
            }
            Py_DECREF(seq);
            if (ax2[0] == ax2[1]) goto numpy_err;
        }
        if (ordo && PyUnicode_Check(ordo)) {
            if (PyUnicode_CompareWithASCIIString(ordo, "fro") == 0 ||
                PyUnicode_CompareWithASCIIString(ordo, "f") == 0) fro = 1;
            else if (PyUnicode_CompareWithASCIIString(ordo, "nuc") == 0) {
                res = svd_norm(t, x, &a, ax2, "sum", keepdims);
                goto done;
            }
            else { Py_DECREF(x); goto extern_norm; }
        }
        if (!fro && (PyFloat_Check(ordo) || PyLong_Check(ordo))) {
            /* ord 1/-1: max/min over columns of the column sums; inf/-inf:
             * over rows of the row sums (NumPy's order of reductions) */
            double o = PyFloat_AsDouble(ordo);
            if (o == -1.0 && PyErr_Occurred()) goto done;
            int inf = o > 1e308 || o < -1e308;
            if (o == 2.0 || o == -2.0) {
                res = svd_norm(t, x, &a, ax2, o > 0 ? "max" : "min", keepdims);
                goto done;
            }
            if (!(o == 1.0 || o == -1.0 || inf)) { Py_DECREF(x); goto extern_norm; }
            int row = ax2[0], col = ax2[1];
            int sum_ax = inf ? col : row, red_ax = inf ? row : col;
            if (red_ax > sum_ax) red_ax--;
            absx = nd_shim_ufunc1(ND_UF_ABSOLUTE, x);
            PyObject *sa = absx ? PyLong_FromLong(sum_ax) : NULL;
            PyObject *ra = sa ? PyLong_FromLong(red_ax) : NULL;
            tmp = ra ? sum_axis(absx, sa, Py_False) : NULL;
            PyObject *m = tmp ? red_axis(o > 0 ? "max" : "min", tmp, ra, Py_False) : NULL;
            Py_XDECREF(sa);
            Py_XDECREF(ra);
            if (m && keepdims) m = keep_matrix_dims(t, m, a.ndim, a.shape, ax2);
            res = m;
            goto done;
        }
        if (fro) {
            if (!axis) {
                PyObject *t2 = Py_BuildValue("(ii)", a.ndim - 2, a.ndim - 1);
                if (!t2) goto done;
                axis_obj = t2;
            }
            absx = nd_shim_ufunc1(ND_UF_ABSOLUTE, x);
            tmp = absx ? nd_shim_ufunc2(ND_UF_MULTIPLY, absx, absx) : NULL;
            PyObject *s = tmp ? sum_axis(tmp, axis_obj, keep) : NULL;
            if (s) { res = nd_shim_ufunc1(ND_UF_SQRT, s); Py_DECREF(s); }
            if (axis_obj != axis) Py_DECREF(axis_obj);
            goto done;
        }
        Py_DECREF(x);
        goto extern_norm;
    }
numpy_err:
    Py_DECREF(x);
    return nd_xj_numpy_error("linalg.norm", P, argv);
done:
    Py_DECREF(x);
    Py_XDECREF(absx);
    Py_XDECREF(tmp);
    return res;
extern_norm:
    return nd_shim_unsupported("numpy.linalg.norm with a singular-value ord");
}

/* NumPy's norm reads an axis that is not a tuple as int(axis): a bool, a
 * float, a numeric string, a 0-d array are that integer; what int()
 * refuses (a list, a 1-d array) is its TypeError */
static PyObject *norm_impl(nd_trace *t, PyObject **argv)
{
    PyObject *axis = argv[2];
    if (!axis || axis == Py_None || PyTuple_Check(axis) ||
        (PyLong_CheckExact(axis)))
        return norm_axes(t, argv);
    PyObject *k = PyNumber_Long(axis);
    if (!k) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "'axis' must be None, an integer or a tuple of integers");
        return NULL;
    }
    PyObject *args2[4] = {argv[0], argv[1], k, argv[3]};
    PyObject *r = norm_axes(t, args2);
    Py_DECREF(k);
    return r;
}

/* lstsq(a, b): (x, residuals, rank, s), one EXTERN node each. The
 * residuals' shape depends on the computed rank: (K,) ((1,) for a vector
 * b) when rank == N < M, else (0,). Of a wide or square a they are always
 * empty; of a tall one the rank is read first (a graph break), then the
 * residuals are a node of the shape NumPy gives, or NumPy's empty array
 * (the nodes of one call run it once per distinct output set: a residual
 * node must never exist with a shape the call will not return). */
static PyObject *lstsq_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a,b|rcond";
    if (argv[2] && nd_proxy_check(argv[2]))
        return nd_shim_unsupported("numpy.linalg.lstsq with a lazy rcond");
    nd_xj_arr in[2];
    if (nd_xj_array(t, argv[0], &in[0]) || nd_xj_array(t, argv[1], &in[1])) return NULL;
    if (in[0].ndim != 2 || in[1].ndim < 1 || in[1].ndim > 2 || in[1].shape[0] != in[0].shape[0])
        return nd_xj_numpy_error("linalg.lstsq", P, argv);
    npy_intp M = in[0].shape[0], N = in[0].shape[1], K = in[1].ndim == 2 ? in[1].shape[1] : 1;
    if (M == 0 || N == 0 || K == 0) return nd_shim_unsupported("numpy.linalg.lstsq of empty arrays");
    nd_ext_out o;
    npy_intp sx[2] = {N, K}, sr[1] = {0}, ss[1] = {M < N ? M : N};
    PyObject *extra[1] = {argv[2] ? argv[2] : Py_None};
    if (M <= N) {
        nd_ext_init(&o, 4, 1, 1);
        nd_ext_shape(&o, 0, in[1].ndim, sx);
        nd_ext_shape(&o, 1, 1, sr);
        nd_ext_shape(&o, 2, 0, NULL);
        nd_ext_shape(&o, 3, 1, ss);
        return nd_ext_simple(t, "linalg.lstsq", 2, in, 1, extra, NULL, &o);
    }
    /* x by the shared builder (its probe gives x's dtype), the others here */
    nd_ext_init(&o, 1, 1, 1);
    nd_ext_shape(&o, 0, in[1].ndim, sx);
    PyObject *fn = nd_xj_np_attr("linalg.lstsq");
    PyObject *tmpl = fn ? nd_xj_tmpl(2, 1, extra) : NULL;
    PyObject *first = tmpl ? nd_ext_build(t, fn, tmpl, NULL, 2, in, &o) : NULL;
    PyObject *items[4] = {NULL, NULL, NULL, NULL}, *out = NULL;
    if (!first) goto done;
    items[0] = PySequence_GetItem(first, 0);
    int xdt = o.dtype[0];
    int rdt = xdt == NPY_CFLOAT ? NPY_FLOAT : xdt == NPY_CDOUBLE ? NPY_DOUBLE : xdt;
    nd_id ids[2] = {in[0].id, in[1].id};
    nd_id rank_id = nd_shim_node_extern(t, fn, tmpl, NULL, 2, ids, 2, NPY_INT32, 0, NULL);
    nd_id s_id = rank_id == ND_NONE ? ND_NONE
                 : nd_shim_node_extern(t, fn, tmpl, NULL, 2, ids, 3, rdt, 1, ss);
    if (!items[0] || s_id == ND_NONE) goto done;
    if (!(items[2] = nd_shim_wrap(t, rank_id, 1)) || !(items[3] = nd_shim_wrap(t, s_id, 0))) goto done;
    PyObject *rv = nd_trace_materialize(items[2], "linalg.lstsq's residuals have a shape that "
                                                  "depends on the data: the computed rank");
    long rk = rv ? PyLong_AsLong(rv) : -1;
    Py_XDECREF(rv);
    if (rk == -1 && PyErr_Occurred()) goto done;
    if (rk == N) {
        sr[0] = K;
        nd_id r_id = nd_shim_node_extern(t, fn, tmpl, NULL, 2, ids, 1, rdt, 1, sr);
        items[1] = r_id == ND_NONE ? NULL : nd_shim_wrap(t, r_id, 0);
    } else {  /* below full rank: NumPy's empty residuals */
        items[1] = PyArray_Empty(1, sr, PyArray_DescrFromType(rdt), 0);
    }
    if (items[1]) out = PyTuple_Pack(4, items[0], items[1], items[2], items[3]);
done:
    for (int k = 0; k < 4; k++) Py_XDECREF(items[k]);
    Py_XDECREF(first);
    Py_XDECREF(tmpl);
    Py_XDECREF(fn);
    return out;
}

/* eig/eigvals of a complex matrix are complex whatever the data: traced
 * (and differentiable, passes/autodiff.h). Of a real one NumPy's result is
 * real when every eigenvalue is, else complex: the traced node is always
 * complex (the extern's result is cast to it, exactly), and whether NumPy
 * would return its real part is a data-dependent branch on the
 * eigenvalues (a graph break), taken as NumPy takes it. */
static PyObject *eig_real_result(PyObject *r, int vectors, int single)
{
    PyObject *w = vectors ? PySequence_GetItem(r, 0) : Py_NewRef(r);
    PyObject *im = w ? PyObject_GetAttrString(w, "imag") : NULL;
    PyObject *zero = im ? PyLong_FromLong(0) : NULL;
    PyObject *eq = zero ? PyObject_RichCompare(im, zero, Py_EQ) : NULL;
    PyObject *all = eq ? PyObject_CallMethod(eq, "all", NULL) : NULL;
    PyObject *flag = all && nd_proxy_check(all)
        ? nd_trace_materialize(all, "linalg.eig's result type depends on the data: NumPy's "
                                    "result is real only when all eigenvalues are (bool() of them)")
        : Py_XNewRef(all);
    int real = flag ? PyObject_IsTrue(flag) : -1;
    Py_XDECREF(w); Py_XDECREF(im); Py_XDECREF(zero); Py_XDECREF(eq); Py_XDECREF(all);
    Py_XDECREF(flag);
    if (real <= 0) return real < 0 ? NULL : Py_NewRef(r);
    /* the real parts: views, as NumPy's `w = w.real` -- then its
     * astype(float32) copies a single-precision result */
    Py_ssize_t n = vectors ? 2 : 1;
    PyObject *items[2] = {NULL, NULL};
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *z = vectors ? PySequence_GetItem(r, k) : Py_NewRef(r);
        items[k] = z ? PyObject_GetAttrString(z, "real") : NULL;
        if (items[k] && single) Py_SETREF(items[k], PyObject_CallMethod(items[k], "copy", NULL));
        Py_XDECREF(z);
        if (!items[k]) { Py_XDECREF(items[0]); return NULL; }
    }
    if (!vectors) return items[0];
    PyObject *out = PyObject_CallFunctionObjArgs((PyObject *)Py_TYPE(r), items[0], items[1], NULL);
    Py_DECREF(items[0]);
    Py_DECREF(items[1]);
    return out;
}

static PyObject *eig_common(nd_trace *t, PyObject **argv, int vectors)
{
    const char *path = vectors ? "linalg.eig" : "linalg.eigvals";
    PyObject *x = argv[0];
    int dt = nd_proxy_check(x) ? nd_proxy_dtype(x) : PyArray_Check(x) ? PyArray_TYPE((PyArrayObject *)x) : -1;
    int cdt = dt;
    if (dt == NPY_FLOAT) cdt = NPY_CFLOAT;
    else if (dt == NPY_DOUBLE || (dt >= 0 && (PyTypeNum_ISINTEGER(dt) || PyTypeNum_ISBOOL(dt))))
        cdt = NPY_CDOUBLE;
    else if (dt != NPY_CFLOAT && dt != NPY_CDOUBLE)
        return nd_shim_unsupported("numpy.%s of this dtype", path);
    nd_xj_arr a;
    if (square_arg(t, argv, path, "a", &a)) return NULL;
    nd_ext_out o;
    nd_ext_init(&o, vectors ? 2 : 1, vectors, 0);
    nd_ext_shape(&o, 0, a.ndim - 1, a.shape);
    o.dtype[0] = cdt;
    if (vectors) { nd_ext_shape(&o, 1, a.ndim, a.shape); o.dtype[1] = cdt; }
    PyObject *r = nd_ext_simple(t, path, 1, &a, 0, NULL, NULL, &o);
    if (!r || cdt == dt) return r;
    PyObject *res = eig_real_result(r, vectors, cdt == NPY_CFLOAT);
    Py_DECREF(r);
    return res;
}

static PyObject *eig_impl(nd_trace *t, PyObject **argv) { return eig_common(t, argv, 1); }
static PyObject *eigvals_impl(nd_trace *t, PyObject **argv) { return eig_common(t, argv, 0); }

/* -------------------------------------------------------------- register */

static const nd_shim_def linalg_defs[] = {
    {"linalg.inv", "a", inv_impl, 0},
    {"linalg.det", "a", det_impl, 0},
    {"linalg.slogdet", "a", slogdet_impl, 0},
    {"linalg.cholesky", "a|;upper", cholesky_impl, 0},
    {"linalg.solve", "a,b", solve_impl, 0},
    {"linalg.qr", "a|mode", qr_impl, 0},
    {"linalg.eigh", "a|UPLO", eigh_impl, 0},
    {"linalg.eigvalsh", "a|UPLO", eigvalsh_impl, 0},
    {"linalg.svd", "a|full_matrices,compute_uv,hermitian", svd_impl, 0},
    {"linalg.pinv", "a|rcond,hermitian;rtol", pinv_impl, 0},
    {"linalg.matrix_power", "a,n", matrix_power_impl, 0},
    {"linalg.multi_dot", "arrays|;out", multi_dot_impl, 0},
    {"linalg.norm", "x|ord,axis,keepdims", norm_impl, 0},
    {"linalg.lstsq", "a,b|rcond", lstsq_impl, 0},
    {"linalg.eig", "a", eig_impl, 0},
    {"linalg.eigvals", "a", eigvals_impl, 0},
    {NULL, NULL, NULL, 0},
};

int nd_shim_register_linalg(nd_shim_table *tab)
{
    return nd_shim_add_functions(tab, linalg_defs);
}
