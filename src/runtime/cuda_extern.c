/* cuda_extern.c -- which EXTERN nodes the CUDA backend runs through a
 * library (runtime/cuda_blas.h), the libraries' loading, and the driver's
 * memory operations the library calls need.
 *
 * An EXTERN node keeps the NumPy callable (n->obj) and its argument
 * template ((placeholders..., extra args), kwargs): np.matmul(ph0, ph1),
 * np.dot(ph0, ph1), np.fft.<fft|ifft|rfft|irfft>(ph0, n, axis, norm). The
 * input dtypes follow NumPy's loops: matmul and dot compute in the
 * result's dtype (their inputs are cast to it first), the transforms in
 * complex64/complex128 (float32/float64 for rfft's input).
 */
#include "cuda_lib_internal.h"
#include "graph/graph_py.h"
#include <dlfcn.h>
#include <limits.h>
#include <string.h>

static int dt_size(int dt)
{
    PyArray_Descr *d = PyArray_DescrFromType(dt);
    int es = d ? (int)PyDataType_ELSIZE(d) : 0;
    Py_XDECREF(d);
    return es;
}

static void c_strides(int ndim, const npy_intp *shape, int es, npy_intp *st)
{
    npy_intp s = es;
    for (int d = ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d] > 1 ? shape[d] : 1;
    }
}

static npy_intp count(int ndim, const npy_intp *shape)
{
    npy_intp n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* ------------------------------------------------------------ libraries */

static struct { const char *name; void *h; char path[1024]; } libs[] = {
    {"cublas", NULL, ""}, {"cufft", NULL, ""}, {"cuda", NULL, ""},
};
#define NLIBS ((int)(sizeof libs / sizeof libs[0]))

static int lib_index(const char *which)
{
    for (int i = 0; i < NLIBS; i++) if (!strcmp(libs[i].name, which)) return i;
    return -1;
}

/* _cuda_lib_set(which, handle, path): numdyn._cuda_libs loaded the library
 * (ctypes: its dlopen handle, kept open); the C side keeps the handle */
static PyObject *py_lib_set(PyObject *self, PyObject *args)
{
    (void)self;
    const char *which, *path;
    unsigned long long h;
    if (!PyArg_ParseTuple(args, "sKs", &which, &h, &path)) return NULL;
    int li = lib_index(which);
    if (li < 0 || !h) return PyErr_Format(PyExc_ValueError, "unknown CUDA library %s", which);
    if (!libs[li].h) {
        libs[li].h = (void *)(uintptr_t)h;
        snprintf(libs[li].path, sizeof libs[li].path, "%s", path);
    }
    return PyUnicode_FromString(libs[li].path);
}

/* _cuda_lib_path(which) -> the loaded library's path, or None */
static PyObject *py_lib_path(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *which = PyUnicode_AsUTF8(arg);
    if (!which) return NULL;
    int li = lib_index(which);
    if (li < 0) return PyErr_Format(PyExc_ValueError, "unknown CUDA library %s", which);
    if (!libs[li].h) Py_RETURN_NONE;
    return PyUnicode_FromString(libs[li].path);
}

void *nd_cuda_lib_open(const char *which)
{
    int li = lib_index(which);
    if (li < 0) return NULL;
    if (libs[li].h) return libs[li].h;
    PyObject *mod = PyImport_ImportModule("numdyn._cuda_libs");
    PyObject *r = mod ? PyObject_CallMethod(mod, "load", "s", which) : NULL;
    Py_XDECREF(mod);
    if (!r) return NULL;
    Py_DECREF(r);
    if (!libs[li].h) PyErr_Format(nd_CudaError, "numdyn.cuda: %s was not loaded", which);
    return libs[li].h;
}

int nd_cuda_lib_fail(const char *what, const char *why, int code)
{
    PyErr_Format(nd_CudaError, "numdyn.cuda: %s failed: %s (%d)", what, why, code);
    return -1;
}

/* ------------------------------------------------------- driver memory */

typedef int CUresult;
typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    uint64_t srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    uint64_t dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} memcpy2d_t;                        /* CUDA_MEMCPY2D (v2) */
enum { MEMTYPE_DEVICE = 2 };

static struct {
    int ready;
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*MemsetD8Async)(uint64_t, unsigned char, size_t, void *);
    CUresult (*MemsetD2D32Async)(uint64_t, size_t, unsigned, size_t, size_t, void *);
    CUresult (*Memcpy2DAsync)(const memcpy2d_t *, void *);
    CUresult (*MemcpyDtoDAsync)(uint64_t, uint64_t, size_t, void *);
    CUresult (*MemAlloc)(uint64_t *, size_t);
    CUresult (*MemFree)(uint64_t);
    CUresult (*StreamSynchronize)(void *);
} drv;

static int drv_ready(void)
{
    if (drv.ready) return 0;
    void *h = nd_cuda_lib_open("cuda");
    if (!h) return -1;
#define SYM(f, name) *(void **)&drv.f = dlsym(h, name)
    SYM(GetErrorString, "cuGetErrorString"); SYM(MemsetD8Async, "cuMemsetD8Async");
    SYM(MemsetD2D32Async, "cuMemsetD2D32Async"); SYM(Memcpy2DAsync, "cuMemcpy2DAsync_v2");
    SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"); SYM(MemAlloc, "cuMemAlloc_v2");
    SYM(MemFree, "cuMemFree_v2"); SYM(StreamSynchronize, "cuStreamSynchronize");
#undef SYM
    if (!drv.MemsetD8Async || !drv.MemsetD2D32Async || !drv.Memcpy2DAsync ||
        !drv.MemcpyDtoDAsync || !drv.MemAlloc || !drv.MemFree || !drv.StreamSynchronize) {
        PyErr_SetString(nd_CudaError, "numdyn.cuda: the CUDA driver lacks a memory entry point "
                        "numdyn needs: update the NVIDIA driver");
        return -1;
    }
    drv.ready = 1;
    return 0;
}

static int drv_fail(const char *what, CUresult r)
{
    const char *s = NULL;
    if (drv.GetErrorString) drv.GetErrorString(r, &s);
    return nd_cuda_lib_fail(what, s ? s : "CUDA driver error", r);
}

int nd_cuda_lib_memset0(const nd_cuda_libenv *env, uint64_t dst, size_t bytes)
{
    if (!bytes) return 0;
    if (drv_ready() < 0) return -1;
    CUresult r = drv.MemsetD8Async(dst, 0, bytes, env->stream);
    return r ? drv_fail("cuMemsetD8Async", r) : 0;
}

int nd_cuda_lib_copy2d(const nd_cuda_libenv *env, uint64_t dst, size_t dpitch, uint64_t src,
                       size_t spitch, size_t width, size_t height)
{
    if (!width || !height) return 0;
    if (drv_ready() < 0) return -1;
    CUresult r;
    if (height == 1 || (dpitch == width && spitch == width)) {
        r = drv.MemcpyDtoDAsync(dst, src, width * height, env->stream);
        return r ? drv_fail("cuMemcpyDtoDAsync", r) : 0;
    }
    if (dpitch <= INT_MAX && spitch <= INT_MAX) {
        memcpy2d_t c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = c.dstMemoryType = MEMTYPE_DEVICE;
        c.srcDevice = src; c.srcPitch = spitch;
        c.dstDevice = dst; c.dstPitch = dpitch;
        c.WidthInBytes = width; c.Height = height;
        r = drv.Memcpy2DAsync(&c, env->stream);
        return r ? drv_fail("cuMemcpy2DAsync", r) : 0;
    }
    /* pitches past the driver's limit: rows this long are few */
    for (size_t i = 0; i < height; i++) {
        r = drv.MemcpyDtoDAsync(dst + i * dpitch, src + i * spitch, width, env->stream);
        if (r) return drv_fail("cuMemcpyDtoDAsync", r);
    }
    return 0;
}

int nd_cuda_lib_zero2d32(const nd_cuda_libenv *env, uint64_t dst, size_t pitch, size_t width32,
                         size_t height)
{
    if (!width32 || !height) return 0;
    if (drv_ready() < 0) return -1;
    CUresult r;
    if (height == 1 || pitch <= INT_MAX) {
        r = drv.MemsetD2D32Async(dst, height == 1 ? width32 * 4 : pitch, 0, width32, height,
                                 env->stream);
        return r ? drv_fail("cuMemsetD2D32Async", r) : 0;
    }
    for (size_t i = 0; i < height; i++) {
        r = drv.MemsetD2D32Async(dst + i * pitch, width32 * 4, 0, width32, 1, env->stream);
        if (r) return drv_fail("cuMemsetD2D32Async", r);
    }
    return 0;
}

/* ------------------------------------------------------------ the nodes */

/* numpy.fft's functions by index: the 1-d ones (template (ph, n, axis,
 * norm)), then the n-d ones (template (ph, s, axes, norm)) */
#define NFFT 14
static const char *const fft_names[NFFT] = {
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft",
    "fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"};
static PyObject *f_matmul, *f_dot, *f_fft[NFFT];

static int node_fns(void)
{
    if (f_matmul) return 0;
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *fft = np ? PyImport_ImportModule("numpy.fft") : NULL;
    if (!fft) { Py_XDECREF(np); return -1; }
    int rc = 0;
    for (int i = 0; i < NFFT && !rc; i++)
        rc = (f_fft[i] = PyObject_GetAttrString(fft, fft_names[i])) ? 0 : -1;
    if (!rc) rc = (f_dot = PyObject_GetAttrString(np, "dot")) ? 0 : -1;
    if (!rc) rc = (f_matmul = PyObject_GetAttrString(np, "matmul")) ? 0 : -1;
    Py_DECREF(fft);
    Py_DECREF(np);
    return rc;
}

/* One 1-d transform of a numpy.fft call; conj_in / conj_out: hfft's
 * conjugate(a) before, ihfft's conjugate(out) after. */
typedef struct { int kind, axis, norm, conj_in, conj_out; npy_intp n; } fft_step;

static int norm_arg(PyObject *mo, int *norm)
{
    if (mo == Py_None) *norm = 0;
    else if (PyUnicode_Check(mo) && !PyUnicode_CompareWithASCIIString(mo, "backward")) *norm = 0;
    else if (PyUnicode_Check(mo) && !PyUnicode_CompareWithASCIIString(mo, "ortho")) *norm = 1;
    else if (PyUnicode_Check(mo) && !PyUnicode_CompareWithASCIIString(mo, "forward")) *norm = 2;
    else return 1;   /* NumPy's ValueError: the host runs it */
    return 0;
}

static int int_arg(PyObject *o, npy_intp lo, npy_intp hi, npy_intp *v)
{
    if (!PyLong_Check(o)) return 1;
    *v = PyLong_AsSsize_t(o);
    if (*v == -1 && PyErr_Occurred()) { PyErr_Clear(); return 1; }
    return *v < lo || *v >= hi;
}

/* The 1-d transforms NumPy's pocketfft.py makes of the call, in its order
 * (fftn: the axes last to first; rfftn: rfft of the last axis, then the
 * others last to first; irfftn: ifft of the axes in order, irfft of the
 * last; hfft/ihfft: irfft/rfft with the norm swapped, conjugated). How
 * many, or 0 when the node is not such a call (then the host runs it). */
static int fft_steps(const nd_node *n, fft_step *st)
{
    int f = -1;
    for (int i = 0; i < NFFT; i++) if (n->obj == f_fft[i]) f = i;
    PyObject *tmpl = PyTuple_Check(n->attrs) && PyTuple_GET_SIZE(n->attrs) == 2
                         ? PyTuple_GET_ITEM(n->attrs, 0) : NULL;
    if (f < 0 || n->nextra != 1 || !tmpl || !PyTuple_Check(tmpl) || PyTuple_GET_SIZE(tmpl) != 4 ||
        PyTuple_GET_ITEM(n->attrs, 1) != Py_None ||
        nd_extern_placeholder_index(PyTuple_GET_ITEM(tmpl, 0)) != 0)
        return 0;
    int norm;
    if (norm_arg(PyTuple_GET_ITEM(tmpl, 3), &norm)) return 0;
    PyObject *so = PyTuple_GET_ITEM(tmpl, 1), *ao = PyTuple_GET_ITEM(tmpl, 2);
    if (f < 6) {
        npy_intp len, axis;
        if (int_arg(so, 1, PY_SSIZE_T_MAX, &len) || int_arg(ao, 0, n->ndim, &axis)) return 0;
        static const int kinds[6] = {ND_FFT_FWD, ND_FFT_INV, ND_FFT_R2C, ND_FFT_C2R, ND_FFT_C2R,
                                     ND_FFT_R2C};
        st[0] = (fft_step){kinds[f], (int)axis, f >= 4 ? 2 - norm : norm, f == 4, f == 5, len};
        return 1;
    }
    if (!PyTuple_Check(so) || !PyTuple_Check(ao) || PyTuple_GET_SIZE(so) != PyTuple_GET_SIZE(ao))
        return 0;
    int na = (int)PyTuple_GET_SIZE(ao);
    if (na < 1 || na > ND_MAXDIMS) return 0;
    npy_intp sv[ND_MAXDIMS], av[ND_MAXDIMS];
    for (int i = 0; i < na; i++)
        if (int_arg(PyTuple_GET_ITEM(so, i), 1, PY_SSIZE_T_MAX, &sv[i]) ||
            int_arg(PyTuple_GET_ITEM(ao, i), 0, n->ndim, &av[i]))
            return 0;
    int k = 0, c2c = f == 6 || f == 8 ? ND_FFT_FWD : ND_FFT_INV;
    if (f <= 9) {
        for (int i = na - 1; i >= 0; i--) st[k++] = (fft_step){c2c, (int)av[i], norm, 0, 0, sv[i]};
    } else if (f == 10 || f == 12) {
        st[k++] = (fft_step){ND_FFT_R2C, (int)av[na - 1], norm, 0, 0, sv[na - 1]};
        for (int i = na - 2; i >= 0; i--)
            st[k++] = (fft_step){ND_FFT_FWD, (int)av[i], norm, 0, 0, sv[i]};
    } else {
        for (int i = 0; i < na - 1; i++)
            st[k++] = (fft_step){ND_FFT_INV, (int)av[i], norm, 0, 0, sv[i]};
        st[k++] = (fft_step){ND_FFT_C2R, (int)av[na - 1], norm, 0, 0, sv[na - 1]};
    }
    return k;
}

static int two_operands(const nd_node *n)
{
    PyObject *tmpl = PyTuple_Check(n->attrs) && PyTuple_GET_SIZE(n->attrs) == 2
                         ? PyTuple_GET_ITEM(n->attrs, 0) : NULL;
    return n->nextra == 2 && tmpl && PyTuple_Check(tmpl) && PyTuple_GET_SIZE(tmpl) == 2 &&
           PyTuple_GET_ITEM(n->attrs, 1) == Py_None &&
           nd_extern_placeholder_index(PyTuple_GET_ITEM(tmpl, 0)) == 0 &&
           nd_extern_placeholder_index(PyTuple_GET_ITEM(tmpl, 1)) == 1;
}

int nd_cuda_lib_kind(const nd_graph *g, nd_id id)
{
    const nd_node *n = &g->nodes[id];
    if (n->op != ND_OP_EXTERN || n->aux >= 0 || !n->obj) return ND_CUDA_LIB_NONE;
    if (node_fns() < 0) { PyErr_Clear(); return ND_CUDA_LIB_NONE; }
    if (n->obj == f_matmul || n->obj == f_dot) {
        if (!two_operands(n) || g->nodes[n->extra[0]].ndim < 1 || g->nodes[n->extra[1]].ndim < 1)
            return ND_CUDA_LIB_NONE;
        return n->obj == f_matmul ? ND_CUDA_LIB_MATMUL : ND_CUDA_LIB_DOT;
    }
    fft_step st[ND_MAXDIMS];
    if (fft_steps(n, st)) return ND_CUDA_LIB_FFT;
    return ND_CUDA_LIB_NONE;
}

int nd_cuda_lib_dtypes(const nd_graph *g, nd_id id, int *in_dtype, int *out_dtype)
{
    const nd_node *n = &g->nodes[id];
    int kind = nd_cuda_lib_kind(g, id);
    if (kind == ND_CUDA_LIB_MATMUL || kind == ND_CUDA_LIB_DOT) {
        int dt = n->dtype;
        if (PyTypeNum_ISCOMPLEX(dt) || PyTypeNum_ISFLOAT(dt) ? !(dt == NPY_HALF || dt == NPY_FLOAT ||
            dt == NPY_DOUBLE || dt == NPY_CFLOAT || dt == NPY_CDOUBLE)
                                                          : !(PyTypeNum_ISINTEGER(dt) ||
                                                              PyTypeNum_ISBOOL(dt))) {
            PyObject *d = (PyObject *)PyArray_DescrFromType(dt);
            PyErr_Format(PyExc_NotImplementedError, "numdyn.cuda: np.%s of %S arrays on the GPU "
                         "is not implemented", kind == ND_CUDA_LIB_DOT ? "dot" : "matmul",
                         d ? d : Py_None);
            Py_XDECREF(d);
            return -1;
        }
        in_dtype[0] = in_dtype[1] = dt;
        *out_dtype = dt;
        return 0;
    }
    if (kind == ND_CUDA_LIB_FFT) {
        fft_step st[ND_MAXDIMS];
        int ns = fft_steps(n, st);
        int dbl = n->dtype == NPY_DOUBLE || n->dtype == NPY_CDOUBLE;
        if (st[0].kind == ND_FFT_R2C) in_dtype[0] = dbl ? NPY_DOUBLE : NPY_FLOAT;
        else in_dtype[0] = dbl ? NPY_CDOUBLE : NPY_CFLOAT;
        *out_dtype = st[ns - 1].kind == ND_FFT_C2R ? (dbl ? NPY_DOUBLE : NPY_FLOAT)
                                      : (dbl ? NPY_CDOUBLE : NPY_CFLOAT);
        return 0;
    }
    PyErr_SetString(PyExc_NotImplementedError, "numdyn.cuda: this EXTERN node has no library "
                    "version on the GPU");
    return -1;
}

int nd_cuda_lib_accepts(const nd_graph *g, nd_id id, int k, const nd_cuda_view *v)
{
    int kind = nd_cuda_lib_kind(g, id);
    int es = dt_size(v->dtype);
    if (es <= 0) return 0;
    for (int d = 0; d < v->ndim; d++) if (v->strides[d] < 0 || v->strides[d] % es) return 0;
    if (kind == ND_CUDA_LIB_MATMUL || kind == ND_CUDA_LIB_DOT) {
        if (v->ndim < 1) return 0;
        /* the matrix dims must be a cuBLAS operand: one of them unit-strided */
        int nd = v->ndim;
        npy_intp r = nd >= 2 ? v->shape[nd - 2] : 1, c = v->shape[nd - 1];
        npy_intp sr = nd >= 2 ? v->strides[nd - 2] / es : 0, sc = v->strides[nd - 1] / es;
        if (nd == 1 && k == 1) { r = c; c = 1; sr = sc; sc = 0; }   /* b as a column */
        int rowmajor = (sc == 1 || c <= 1) && (r <= 1 || sr >= (c > 1 ? c : 1));
        int colmajor = (sr == 1 || r <= 1) && (c <= 1 || sc >= (r > 1 ? r : 1));
        return rowmajor || colmajor;
    }
    if (kind == ND_CUDA_LIB_FFT) {
        npy_intp want = es;
        for (int d = v->ndim - 1; d >= 0; d--) {
            if (v->shape[d] != 1 && v->strides[d] != want) return 0;
            want *= v->shape[d];
        }
        return 1;
    }
    return 0;
}

/* x's imaginary parts *= -1 (a complex C-contiguous view): conjugate */
static int conj_inplace(const nd_cuda_libenv *env, const nd_cuda_view *x)
{
    npy_intp cnt = 1;
    for (int d = 0; d < x->ndim; d++) cnt *= x->shape[d];
    int dbl = x->dtype == NPY_CDOUBLE;
    return nd_cuda_blas_scale(env, dbl ? NPY_DOUBLE : NPY_FLOAT, x->ptr + (dbl ? 8 : 4), cnt, 2,
                              -1.0);
}

/* the node's 1-d transforms one after the other, through temporaries; the
 * last writes out */
static int fft_run(const nd_graph *g, nd_id id, const nd_cuda_view *in, const nd_cuda_view *out,
                   const nd_cuda_libenv *env)
{
    const nd_node *n = &g->nodes[id];
    fft_step st[ND_MAXDIMS];
    int ns = fft_steps(n, st);
    int dbl = n->dtype == NPY_DOUBLE || n->dtype == NPY_CDOUBLE;
    /* NumPy computes each norm factor in its step's input's real dtype:
     * the node's input for the first, complex64/128 after */
    int src = g->nodes[n->extra[0]].dtype;
    int fdt = src == NPY_HALF ? NPY_HALF
            : (src == NPY_FLOAT || src == NPY_CFLOAT) ? NPY_FLOAT : NPY_DOUBLE;
    nd_cuda_view cur = *in;
    uint64_t tmp[2] = {0, 0};   /* the current input's temporary, the next one's */
    int rc = -1;
    for (int i = 0; i < ns; i++) {
        const fft_step *s = &st[i];
        int es = dt_size(cur.dtype);
        npy_intp cnt = 1;
        for (int d = 0; d < cur.ndim; d++) cnt *= cur.shape[d];
        if (s->conj_in) {
            /* hfft: conjugate(a), on a copy */
            if (env->alloc(env->ctx, (size_t)(cnt * es), &tmp[1]) < 0 ||
                nd_cuda_lib_copy2d(env, tmp[1], (size_t)(cnt * es), cur.ptr, (size_t)(cnt * es),
                                   (size_t)(cnt * es), 1) < 0)
                goto done;
            cur.ptr = tmp[1];
            if (tmp[0]) env->release(env->ctx, tmp[0]);
            tmp[0] = tmp[1];
            tmp[1] = 0;
            if (conj_inplace(env, &cur) < 0) goto done;
        }
        nd_cuda_view o;
        if (i == ns - 1) {
            o = *out;
        } else {
            o.dtype = dbl ? NPY_CDOUBLE : NPY_CFLOAT;
            o.ndim = cur.ndim;
            memcpy(o.shape, cur.shape, sizeof(npy_intp) * (size_t)cur.ndim);
            o.shape[s->axis] = s->kind == ND_FFT_R2C ? s->n / 2 + 1 : s->n;
            c_strides(o.ndim, o.shape, dt_size(o.dtype), o.strides);
            if (env->alloc(env->ctx, (size_t)(count(o.ndim, o.shape) * dt_size(o.dtype)),
                           &tmp[1]) < 0)
                goto done;
            o.ptr = tmp[1];
        }
        if (nd_cuda_fft(s->kind, s->n, s->axis, s->norm, i ? (dbl ? NPY_DOUBLE : NPY_FLOAT) : fdt,
                        &cur, &o, env) < 0)
            goto done;
        if (s->conj_out && conj_inplace(env, &o) < 0) goto done;
        if (tmp[0]) env->release(env->ctx, tmp[0]);
        tmp[0] = tmp[1];
        tmp[1] = 0;
        cur = o;
    }
    rc = 0;
done:
    for (int k = 0; k < 2; k++) if (tmp[k]) env->release(env->ctx, tmp[k]);
    return rc;
}

int nd_cuda_lib_run(const nd_graph *g, nd_id id, const nd_cuda_view *in, const nd_cuda_view *out,
                    const nd_cuda_libenv *env)
{
    int kind = nd_cuda_lib_kind(g, id);
    if (kind == ND_CUDA_LIB_MATMUL || kind == ND_CUDA_LIB_DOT) {
        int rc = nd_cuda_matmul(kind == ND_CUDA_LIB_DOT, &in[0], &in[1], out, env);
        if (rc == 1)
            PyErr_SetString(PyExc_ValueError, "numdyn.cuda: a matmul operand's layout cuBLAS "
                            "cannot read was passed (nd_cuda_lib_accepts refuses it)");
        return rc ? -1 : 0;
    }
    if (kind == ND_CUDA_LIB_FFT) return fft_run(g, id, &in[0], out, env);
    PyErr_SetString(PyExc_NotImplementedError, "numdyn.cuda: this EXTERN node has no library "
                    "version on the GPU");
    return -1;
}

/* ---------------------------------------------- the backend's binding */

/* Casts (and layout copies) on the device: NumPy's loops of matmul/dot
 * and the transforms take operands of one dtype (int64 @ float32 is a
 * float64 gemm) and irfft of float16 writes float32 first. One kernel per
 * (from, to) pair, through the runtime's module cache: element i of the
 * C-ordered result reads the operand at its strides. */
typedef struct { long long n; int ndim; long long shape[ND_MAXDIMS], strides[ND_MAXDIMS]; } cast_lay;

const char *nd_cu_ctype(int dt)
{
    switch (dt) {
    case NPY_BOOL: return "nd_bool";
    case NPY_BYTE: return "int8_t";
    case NPY_UBYTE: return "uint8_t";
    case NPY_SHORT: return "int16_t";
    case NPY_USHORT: return "uint16_t";
    case NPY_INT: return "int32_t";
    case NPY_UINT: return "uint32_t";
    case NPY_LONG: case NPY_LONGLONG: return "int64_t";
    case NPY_ULONG: case NPY_ULONGLONG: return "uint64_t";
    case NPY_HALF: return "nd_half";
    case NPY_FLOAT: return "float";
    case NPY_DOUBLE: return "double";
    case NPY_CFLOAT: return "nd_c64";
    case NPY_CDOUBLE: return "nd_c128";
    default: return NULL;
    }
}

/* the CUDA C of the cast kernel from -> to (its name in name); 0, or -1 +
 * NotImplementedError for a pair NumPy's loops never need */
static int cast_text(int from, int to, char *name, size_t nn, char *text, size_t tn)
{
    const char *ft = nd_cu_ctype(from), *tt = nd_cu_ctype(to);
    if (!ft || !tt || (PyTypeNum_ISCOMPLEX(from) && !PyTypeNum_ISCOMPLEX(to))) {
        PyErr_Format(PyExc_NotImplementedError, "numdyn.cuda: no device cast from type %d to %d "
                     "for a library extern", from, to);
        return -1;
    }
    const char *re = from == NPY_BOOL ? "(v ? 1.0 : 0.0)"
                   : from == NPY_HALF ? "(double)nd_h2f(v)"
                   : PyTypeNum_ISCOMPLEX(from) ? "(double)v.re" : "(double)v";
    const char *im = PyTypeNum_ISCOMPLEX(from) ? "(double)v.im" : "0.0";
    const char *st = to == NPY_HALF ? "nd_d2h(re)" : to == NPY_FLOAT ? "(float)re"
                   : to == NPY_DOUBLE ? "re" : to == NPY_CFLOAT ? "nd_t_cmk((float)re, (float)im)"
                   : "nd_t_cmk(re, im)";
    char ist[64];
    if (!PyTypeNum_ISFLOAT(to) && !PyTypeNum_ISCOMPLEX(to)) {
        /* integer matmul: an integer or bool operand widened to the result's type */
        if (!PyTypeNum_ISINTEGER(from) && !PyTypeNum_ISBOOL(from)) {
            PyErr_Format(PyExc_NotImplementedError, "numdyn.cuda: no device cast from type %d "
                         "to %d for a library extern", from, to);
            return -1;
        }
        snprintf(ist, sizeof ist, "(%s)v", tt);
        re = "0.0"; im = "0.0"; st = ist;
    }
    if (from == to) { re = "0.0"; im = "0.0"; st = "v"; }   /* a layout copy */
    snprintf(name, nn, "nd_lib_cast_%d_%d", from, to);
    snprintf(text, tn,
             "struct %s_lay { long long n; int ndim; long long shape[%d], strides[%d]; };\n"
             "extern \"C\" __global__ void %s(const char *x, %s *y, %s_lay L)\n"
             "{\n"
             "    long long step = (long long)gridDim.x * blockDim.x;\n"
             "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < L.n;"
             " i += step) {\n"
             "        long long r = i, off = 0;\n"
             "        for (int d = L.ndim - 1; d >= 0; d--) {\n"
             "            off += (r %% L.shape[d]) * L.strides[d];\n"
             "            r /= L.shape[d];\n"
             "        }\n"
             "        const %s v = *(const %s *)(x + off);\n"
             "        double re = %s, im = %s;\n"
             "        (void)re; (void)im;\n"
             "        y[i] = %s;\n"
             "    }\n"
             "}\n",
             name, ND_MAXDIMS, ND_MAXDIMS, name, tt, name, ft, ft, re, im, st);
    return 0;
}

static int cast_launch(const nd_cu_array *x, int to, nd_cu_ptr y)
{
    cast_lay L;
    memset(&L, 0, sizeof L);
    L.n = 1;
    L.ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++) {
        L.shape[d] = x->shape[d];
        L.strides[d] = x->strides[d];
        L.n *= x->shape[d];
    }
    char name[64], text[2048];
    if (cast_text(x->dtype, to, name, sizeof name, text, sizeof text) < 0) return -1;
    if (L.n == 0) return 0;
    const char *texts[1] = {text}, *names[1] = {name};
    nd_cu_fn_t fn;
    int compiled;
    if (nd_cu_functions(1, texts, names, &fn, &compiled) < 0) return -1;
    long long blocks = (L.n + ND_CU_THREADS - 1) / ND_CU_THREADS;
    unsigned grid = (unsigned)(blocks < (1 << 20) ? blocks : (1 << 20));
    nd_cu_ptr xp = x->ptr;
    void *params[3] = {&xp, &y, &L};
    return nd_cu_launch(fn, grid, ND_CU_THREADS, params);
}

/* _cuda_lib_cast_source(from, to) -> (name, CUDA C) of a cast kernel */
static PyObject *py_cast_source(PyObject *self, PyObject *args)
{
    (void)self;
    int from, to;
    if (!PyArg_ParseTuple(args, "ii", &from, &to)) return NULL;
    char name[64], text[2048];
    if (cast_text(from, to, name, sizeof name, text, sizeof text) < 0) return NULL;
    return Py_BuildValue("(ss)", name, text);
}




static int env_alloc(void *ctx, size_t nbytes, uint64_t *ptr)
{
    (void)ctx;
    nd_cu_ptr p;
    if (nd_cu_alloc(nbytes, &p) < 0) return -1;
    *ptr = p;
    return 0;
}

static void env_release(void *ctx, uint64_t ptr) { (void)ctx; nd_cu_free(ptr); }

/* Strides in C order (an outer dim's stride at least its inner's): NumPy's
 * transforms keep their input's memory order, which is then C order. */
static int c_like(const nd_cu_array *a)
{
    npy_intp last = 0;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] <= 1) continue;
        if (a->strides[d] < last) return 0;
        last = a->strides[d];
    }
    return 1;
}

/* nd_cu_extern_fn: matmul/dot/fft nodes on the device (1), or 0 for the
 * host (integer matmul; a transform of a non-C-ordered input, whose
 * result NumPy lays out in its input's order) */
static int lib_extern(nd_graph *g, nd_id id, const nd_cu_array *const *in, int nin,
                      nd_cu_array *out)
{
    int kind = nd_cuda_lib_kind(g, id);
    if (kind == ND_CUDA_LIB_NONE || nin > 2) return 0;
    int ind[2], od;
    if (nd_cuda_lib_dtypes(g, id, ind, &od) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_NotImplementedError)) return -1;
        PyErr_Clear();
        return 0;
    }
    if (kind == ND_CUDA_LIB_FFT && !c_like(in[0])) return 0;
    if (nd_cu_ready() < 0) return -1;
    const nd_node *n = &g->nodes[id];
    nd_cuda_libenv env = {(void *)nd_cu_stream(), env_alloc, env_release, NULL};
    nd_cuda_view v[2];
    nd_cu_ptr tmp[3] = {0, 0, 0};
    int rc = -1;
    for (int k = 0; k < nin; k++) {
        const nd_cu_array *a = in[k];
        v[k].ptr = a->ptr;
        v[k].dtype = a->dtype;
        v[k].ndim = a->ndim;
        memcpy(v[k].shape, a->shape, sizeof(npy_intp) * (size_t)a->ndim);
        memcpy(v[k].strides, a->strides, sizeof(npy_intp) * (size_t)a->ndim);
        if (a->dtype == ind[k] && nd_cuda_lib_accepts(g, id, k, &v[k])) continue;
        /* a C-ordered copy in the dtype the library computes in */
        int es = dt_size(ind[k]);
        if (nd_cu_alloc((size_t)(count(a->ndim, a->shape) * es), &tmp[k]) < 0 ||
            cast_launch(a, ind[k], tmp[k]) < 0)
            goto done;
        v[k].ptr = tmp[k];
        v[k].dtype = ind[k];
        c_strides(a->ndim, a->shape, es, v[k].strides);
    }
    /* the result, C-ordered: in the dtype written, then the node's */
    nd_cuda_view o;
    o.dtype = od;
    o.ndim = n->ndim;
    memcpy(o.shape, n->shape, sizeof(npy_intp) * (size_t)n->ndim);
    c_strides(n->ndim, n->shape, dt_size(od), o.strides);
    size_t nel = (size_t)count(n->ndim, n->shape);
    nd_cu_ptr res;
    if (nd_cu_alloc(nel * (size_t)dt_size(n->dtype), &res) < 0) goto done;
    if (od != n->dtype && nd_cu_alloc(nel * (size_t)dt_size(od), &tmp[2]) < 0) {
        nd_cu_free(res);
        goto done;
    }
    o.ptr = od != n->dtype ? tmp[2] : res;
    if (nd_cuda_lib_run(g, id, v, &o, &env) < 0) { nd_cu_free(res); goto done; }
    if (od != n->dtype) {
        nd_cu_array w;
        memset(&w, 0, sizeof w);
        w.ptr = tmp[2];
        w.ndim = n->ndim;
        w.dtype = od;
        w.itemsize = dt_size(od);
        memcpy(w.shape, n->shape, sizeof(npy_intp) * (size_t)n->ndim);
        memcpy(w.strides, o.strides, sizeof(npy_intp) * (size_t)n->ndim);
        if (cast_launch(&w, n->dtype, res) < 0) { nd_cu_free(res); goto done; }
    }
    memset(out, 0, sizeof *out);
    out->ptr = res;
    out->itemsize = dt_size(n->dtype);
    out->nbytes = nel * (size_t)out->itemsize;
    out->ndim = n->ndim;
    out->dtype = n->dtype;
    memcpy(out->shape, n->shape, sizeof(npy_intp) * (size_t)n->ndim);
    c_strides(n->ndim, n->shape, out->itemsize, out->strides);
    rc = 1;
done:
    for (int k = 0; k < 3; k++) nd_cu_free(tmp[k]);
    return rc;
}

/* --------------------------------------------------------------- hooks */

/* (ptr, typenum, shape, strides) -> view */
int nd_cuda_lib_view_arg(PyObject *o, nd_cuda_view *v)
{
    memset(v, 0, sizeof *v);
    unsigned long long ptr;
    PyObject *sh, *st;
    if (!PyArg_ParseTuple(o, "KiOO;a view is (ptr, typenum, shape, strides)", &ptr, &v->dtype,
                          &sh, &st))
        return -1;
    v->ptr = ptr;
    PyObject *a = PySequence_Fast(sh, "shape"), *b = a ? PySequence_Fast(st, "strides") : NULL;
    if (!b) { Py_XDECREF(a); return -1; }
    Py_ssize_t nd = PySequence_Fast_GET_SIZE(a);
    if (nd > ND_MAXDIMS || PySequence_Fast_GET_SIZE(b) != nd) {
        Py_DECREF(a); Py_DECREF(b);
        PyErr_SetString(PyExc_ValueError, "a view's shape and strides differ in length (or rank > 16)");
        return -1;
    }
    v->ndim = (int)nd;
    for (Py_ssize_t d = 0; d < nd; d++) {
        v->shape[d] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(a, d));
        v->strides[d] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(b, d));
    }
    Py_DECREF(a);
    Py_DECREF(b);
    return PyErr_Occurred() ? -1 : 0;
}

/* The hooks' env: scratch from cuMemAlloc, freed after the stream is
 * synchronized at the end of the hook. */
#define HOOK_MAX 64
static uint64_t hook_ptrs[HOOK_MAX];
static int hook_n;

static int hook_alloc(void *ctx, size_t nbytes, uint64_t *ptr)
{
    (void)ctx;
    if (hook_n == HOOK_MAX) {
        PyErr_SetString(nd_CudaError, "numdyn.cuda: test hook: too many scratch buffers");
        return -1;
    }
    CUresult r = drv.MemAlloc(ptr, nbytes ? nbytes : 1);
    if (r) return drv_fail("cuMemAlloc", r);
    hook_ptrs[hook_n++] = *ptr;
    return 0;
}

static void hook_release(void *ctx, uint64_t ptr) { (void)ctx; (void)ptr; }

int nd_cuda_lib_hook_env(PyObject *stream, nd_cuda_libenv *env)
{
    memset(env, 0, sizeof *env);
    if (drv_ready() < 0) return -1;
    env->stream = (void *)(uintptr_t)PyLong_AsUnsignedLongLong(stream);
    if (PyErr_Occurred()) return -1;
    env->alloc = hook_alloc;
    env->release = hook_release;
    hook_n = 0;
    /* the operands' uploads (the caller's stream) are done before numdyn's
     * stream reads them */
    CUresult r = drv.StreamSynchronize(env->stream);
    return r ? drv_fail("cuStreamSynchronize", r) : 0;
}

int nd_cuda_lib_hook_done(nd_cuda_libenv *env, int rc)
{
    CUresult r = drv.StreamSynchronize(env->stream);
    /* kernels of numdyn's own (integer gemm) ran on numdyn's stream */
    if (!nd_cu_unavailable() && nd_cu_ready() == 0 && nd_cu_sync() < 0 && rc >= 0) rc = -1;
    for (int i = 0; i < hook_n; i++) drv.MemFree(hook_ptrs[i]);
    hook_n = 0;
    if (rc >= 0 && r) return drv_fail("cuStreamSynchronize", r);
    return rc;
}

/* the graph a numdyn.Graph wraps, and id one of its nodes: 0, -1 + exc */
static int graph_node(PyObject *go, int id, nd_graph **g)
{
    const nd_id *outs;
    int nout;
    if (nd_graphpy_parts(go, g, &outs, &nout) < 0) return -1;
    if (id < 0 || id >= (*g)->n) {
        PyErr_Format(PyExc_IndexError, "no node %d", id);
        return -1;
    }
    return 0;
}

/* _cuda_lib_node(graph, id) -> (kind name, input dtypes, output dtype):
 * what the backend asks of an EXTERN node (pure: no CUDA needed) */
static PyObject *py_lib_node(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *go;
    int id;
    nd_graph *g;
    if (!PyArg_ParseTuple(args, "Oi", &go, &id) || graph_node(go, id, &g) < 0) return NULL;
    static const char *const names[] = {"none", "matmul", "dot", "fft"};
    int kind = nd_cuda_lib_kind(g, id);
    if (kind == ND_CUDA_LIB_NONE) return Py_BuildValue("(sOO)", names[0], Py_None, Py_None);
    int ind[ND_MAXIN + 8], od;
    if (nd_cuda_lib_dtypes(g, id, ind, &od) < 0) return NULL;
    const nd_node *n = &g->nodes[id];
    PyObject *t = PyTuple_New(n->nextra);
    for (int k = 0; t && k < n->nextra; k++) PyTuple_SET_ITEM(t, k, PyLong_FromLong(ind[k]));
    return t ? Py_BuildValue("(sNi)", names[kind], t, od) : NULL;
}

/* _cuda_fft_steps(graph, id) -> [(kind, n, axis, norm, conj_in, conj_out)]:
 * the 1-d transforms the GPU makes of a numpy.fft node */
static PyObject *py_fft_steps(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *go;
    int id;
    nd_graph *g;
    if (!PyArg_ParseTuple(args, "Oi", &go, &id) || graph_node(go, id, &g) < 0) return NULL;
    if (node_fns() < 0) return NULL;
    fft_step st[ND_MAXDIMS];
    int ns = g->nodes[id].op == ND_OP_EXTERN ? fft_steps(&g->nodes[id], st) : 0;
    PyObject *l = PyList_New(ns);
    for (int i = 0; l && i < ns; i++) {
        PyObject *t = Py_BuildValue("(inii" "OO)", st[i].kind, (Py_ssize_t)st[i].n, st[i].axis,
                                    st[i].norm, st[i].conj_in ? Py_True : Py_False,
                                    st[i].conj_out ? Py_True : Py_False);
        if (!t) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, t);
    }
    return l;
}

/* _cuda_lib_run_node(graph, id, (views of the inputs), out view, stream):
 * nd_cuda_lib_run on device pointers, inputs already in the dtypes
 * nd_cuda_lib_dtypes gives (tests); waits for the stream */
static PyObject *py_lib_run_node(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *go, *ins, *oo, *so;
    int id;
    nd_graph *g;
    if (!PyArg_ParseTuple(args, "OiOOO", &go, &id, &ins, &oo, &so) || graph_node(go, id, &g) < 0)
        return NULL;
    nd_cuda_view v[2], o;
    nd_cuda_libenv env;
    if (!PyTuple_Check(ins) || PyTuple_GET_SIZE(ins) != g->nodes[id].nextra ||
        PyTuple_GET_SIZE(ins) > 2)
        return PyErr_Format(PyExc_ValueError, "a tuple of the node's %d input views",
                            g->nodes[id].nextra);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(ins); k++)
        if (nd_cuda_lib_view_arg(PyTuple_GET_ITEM(ins, k), &v[k]) < 0) return NULL;
    if (nd_cuda_lib_view_arg(oo, &o) < 0 || nd_cuda_lib_hook_env(so, &env) < 0) return NULL;
    if (nd_cuda_lib_hook_done(&env, nd_cuda_lib_run(g, id, v, &o, &env)) < 0) return NULL;
    Py_RETURN_NONE;
}

/* _cuda_lib_accepts(graph, id, k, view) -> bool */
static PyObject *py_lib_accepts(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *go, *vo;
    int id, k;
    nd_graph *g;
    nd_cuda_view v;
    if (!PyArg_ParseTuple(args, "OiiO", &go, &id, &k, &vo) || graph_node(go, id, &g) < 0 ||
        nd_cuda_lib_view_arg(vo, &v) < 0)
        return NULL;
    return PyBool_FromLong(nd_cuda_lib_accepts(g, id, k, &v));
}

static PyMethodDef methods[] = {
    {"_cuda_lib_set", py_lib_set, METH_VARARGS, "hand a dlopen'ed CUDA library to the runtime"},
    {"_cuda_lib_path", py_lib_path, METH_O, "the path of a loaded CUDA library, or None"},
    {"_cuda_lib_node", py_lib_node, METH_VARARGS, "(kind, input dtypes, output dtype) of a node"},
    {"_cuda_lib_accepts", py_lib_accepts, METH_VARARGS, "whether a library extern reads a view"},
    {"_cuda_fft_steps", py_fft_steps, METH_VARARGS, "the 1-d transforms of a numpy.fft node"},
    {"_cuda_lib_run_node", py_lib_run_node, METH_VARARGS, "a library extern node on device pointers"},
    {"_cuda_lib_cast_source", py_cast_source, METH_VARARGS, "(name, CUDA C) of a cast kernel"},
    {NULL, NULL, 0, NULL},
};

int nd_cuda_blas_init(PyObject *module)
{
    if (nd_cu_register_extern(lib_extern, "cuBLAS/cuFFT") < 0 ||
        PyModule_AddFunctions(module, methods) < 0 ||
        PyModule_AddFunctions(module, nd_cuda_blas_methods) < 0)
        return -1;
    return PyModule_AddFunctions(module, nd_cuda_fft_methods);
}
