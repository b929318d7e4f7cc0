/* shim_fft.c -- numpy.fft: the 1-d and n-d transforms
 * as EXTERN nodes or fused graph ops (see shim_internal.h, "EXTERN calls", for how an extern
 * call is built: shapes by NumPy's rules written in C, dtypes from a cached
 * probe of NumPy itself). */
#include "shim_internal.h"
#include <string.h>

/* ------------------------------------------------------------------- fft */

/* kind: 0 c2c, 1 r2c (rfft/ihfft: n//2+1), 2 c2r (irfft/hfft: default 2(m-1)) */
static PyObject *fft1_common(nd_trace *t, PyObject **argv, const char *path, int kind)
{
    static const char *P = "a|n,axis,norm,out";
    if (argv[4] && argv[4] != Py_None) return nd_shim_unsupported("numpy.%s with out=", path);
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (a.ndim == 0) return nd_xj_numpy_error(path, P, argv);
    int ax = a.ndim - 1;
    if (argv[2]) {
        long v = nd_shim_index_like(argv[2]) ? PyLong_AsLong(argv[2]) : LONG_MAX;
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (v < -a.ndim || v >= a.ndim) return nd_xj_numpy_error(path, P, argv);
        ax = (int)(v < 0 ? v + a.ndim : v);
    }
    npy_intp m = a.shape[ax], n;
    if (argv[1] && argv[1] != Py_None) {
        if (!nd_shim_index_like(argv[1])) return nd_xj_numpy_error(path, P, argv);
        n = PyNumber_AsSsize_t(argv[1], PyExc_OverflowError);
        if (n == -1 && PyErr_Occurred()) return NULL;
    } else {
        n = kind == 2 ? 2 * (m - 1) : m;
    }
    if (n < 1) return nd_xj_numpy_error(path, P, argv);
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, a.shape, sizeof(sh));
    sh[ax] = kind == 1 ? n / 2 + 1 : n;
    nd_ext_out o;
    nd_ext_init1(&o, 0, a.ndim, sh);
    PyObject *nobj = PyLong_FromSsize_t(n), *axo = PyLong_FromLong(ax);
    PyObject *extra[3] = {nobj, axo, argv[3] ? argv[3] : Py_None};
    PyObject *r = (nobj && axo) ? nd_ext_simple(t, path, 1, &a, 3, extra, NULL, &o) : NULL;
    Py_XDECREF(nobj);
    Py_XDECREF(axo);
    /* pocketfft's result keeps a's memory order */
    if (r) nd_proxy_set_order(r, argv[0], 'K');
    return r;
}

#define FFT1(NAME, PATH, KIND) \
    static PyObject *NAME(nd_trace *t, PyObject **argv) { return fft1_common(t, argv, PATH, KIND); }
FFT1(fft_impl, "fft.fft", 0)
FFT1(ifft_impl, "fft.ifft", 0)
FFT1(rfft_impl, "fft.rfft", 1)
FFT1(irfft_impl, "fft.irfft", 2)
FFT1(hfft_impl, "fft.hfft", 2)
FFT1(ihfft_impl, "fft.ihfft", 1)

/* n-d: kind as above; two: default axes (-2, -1) */
static PyObject *fftn_common(nd_trace *t, PyObject **argv, const char *path, int kind, int two)
{
    static const char *P = "a|s,axes,norm,out";
    if (argv[4] && argv[4] != Py_None) return nd_shim_unsupported("numpy.%s with out=", path);
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    PyObject *so = argv[1] && argv[1] != Py_None ? argv[1] : NULL;
    PyObject *axo = argv[2];
    if (so && (!axo || axo == Py_None))
        return nd_shim_unsupported("numpy.%s with s but no axes (deprecated form)", path);
    int axes[ND_MAXDIMS], nax = 0;
    if (!axo || axo == Py_None) {
        /* fft2 & co default to the last two axes; axes=None means all */
        if (two && !axo) {
            if (a.ndim < 2) return nd_xj_numpy_error(path, P, argv);
            axes[0] = a.ndim - 2;
            axes[1] = a.ndim - 1;
            nax = 2;
        } else {
            for (int d = 0; d < a.ndim; d++) axes[nax++] = d;
        }
    } else {
        PyObject *seq = PySequence_Fast(axo, "axes");
        if (!seq) { PyErr_Clear(); return nd_xj_numpy_error(path, P, argv); }
        Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t i = 0; i < k && i < ND_MAXDIMS; i++) {
            int ax;
            if (nd_shim_axis_index(PySequence_Fast_GET_ITEM(seq, i), a.ndim, &ax) < 0) {
                Py_DECREF(seq);
                return NULL;
            }
            axes[nax++] = ax;
        }
        Py_DECREF(seq);
        if (k > ND_MAXDIMS) return nd_shim_unsupported("numpy.%s over many axes", path);
    }
    for (int i = 0; i < nax; i++)
        for (int j = 0; j < i; j++)
            if (axes[i] == axes[j]) return nd_shim_unsupported("numpy.%s with repeated axes", path);
    if (nax == 0) return nd_shim_unsupported("numpy.%s over no axes", path);
    npy_intp s[ND_MAXDIMS];
    if (so) {
        PyObject *seq = PySequence_Fast(so, "s");
        if (!seq) { PyErr_Clear(); return nd_xj_numpy_error(path, P, argv); }
        if (PySequence_Fast_GET_SIZE(seq) != nax) { Py_DECREF(seq); return nd_xj_numpy_error(path, P, argv); }
        for (int i = 0; i < nax; i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
            s[i] = nd_shim_index_like(e) ? PyNumber_AsSsize_t(e, PyExc_OverflowError) : -2;
            if (s[i] == -1 && PyErr_Occurred()) { Py_DECREF(seq); return NULL; }
        }
        Py_DECREF(seq);
    } else {
        for (int i = 0; i < nax; i++) s[i] = a.shape[axes[i]];
        if (kind == 2) s[nax - 1] = 2 * (a.shape[axes[nax - 1]] - 1);
    }
    for (int i = 0; i < nax; i++) if (s[i] < 1) return nd_xj_numpy_error(path, P, argv);
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, a.shape, sizeof(sh));
    for (int i = 0; i < nax; i++) sh[axes[i]] = s[i];
    if (kind == 1) sh[axes[nax - 1]] = s[nax - 1] / 2 + 1;
    nd_ext_out o;
    nd_ext_init1(&o, 0, a.ndim, sh);
    PyObject *st = PyTuple_New(nax), *at = PyTuple_New(nax), *r = NULL;
    if (!st || !at) goto done;
    for (int i = 0; i < nax; i++) {
        PyObject *x = PyLong_FromSsize_t(s[i]), *y = x ? PyLong_FromLong(axes[i]) : NULL;
        if (!y) { Py_XDECREF(x); goto done; }
        PyTuple_SET_ITEM(st, i, x);
        PyTuple_SET_ITEM(at, i, y);
    }
    PyObject *extra[3] = {st, at, argv[3] ? argv[3] : Py_None};
    r = nd_ext_simple(t, path, 1, &a, 3, extra, NULL, &o);
done:
    Py_XDECREF(st);
    Py_XDECREF(at);
    return r;
}

#define FFTN(NAME, PATH, KIND, TWO) \
    static PyObject *NAME(nd_trace *t, PyObject **argv) { return fftn_common(t, argv, PATH, KIND, TWO); }
FFTN(fft2_impl, "fft.fft2", 0, 1)
FFTN(ifft2_impl, "fft.ifft2", 0, 1)
FFTN(fftn_impl, "fft.fftn", 0, 0)
FFTN(ifftn_impl, "fft.ifftn", 0, 0)
FFTN(rfft2_impl, "fft.rfft2", 1, 1)
FFTN(irfft2_impl, "fft.irfft2", 2, 1)
FFTN(rfftn_impl, "fft.rfftn", 1, 0)
FFTN(irfftn_impl, "fft.irfftn", 2, 0)

/* -------------------------------------------------------------- register */

static const nd_shim_def fft_defs[] = {
    {"fft.fft", "a|n,axis,norm,out", fft_impl, 0},
    {"fft.ifft", "a|n,axis,norm,out", ifft_impl, 0},
    {"fft.rfft", "a|n,axis,norm,out", rfft_impl, 0},
    {"fft.irfft", "a|n,axis,norm,out", irfft_impl, 0},
    {"fft.hfft", "a|n,axis,norm,out", hfft_impl, 0},
    {"fft.ihfft", "a|n,axis,norm,out", ihfft_impl, 0},
    {"fft.fft2", "a|s,axes,norm,out", fft2_impl, 0},
    {"fft.ifft2", "a|s,axes,norm,out", ifft2_impl, 0},
    {"fft.fftn", "a|s,axes,norm,out", fftn_impl, 0},
    {"fft.ifftn", "a|s,axes,norm,out", ifftn_impl, 0},
    {"fft.rfft2", "a|s,axes,norm,out", rfft2_impl, 0},
    {"fft.irfft2", "a|s,axes,norm,out", irfft2_impl, 0},
    {"fft.rfftn", "a|s,axes,norm,out", rfftn_impl, 0},
    {"fft.irfftn", "a|s,axes,norm,out", irfftn_impl, 0},
    {NULL, NULL, NULL, 0},
};

int nd_shim_register_fft(nd_shim_table *tab)
{
    return nd_shim_add_functions(tab, fft_defs);
}
