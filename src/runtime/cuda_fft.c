/* cuda_fft.c -- numpy.fft's 1-d transforms on device memory through cuFFT
 * (runtime/cuda_blas.h).
 *
 * libcufft is dlopen'ed (cuda_extern.c finds it); only the entry points
 * used are declared, with cufft.h's C ABI (a plan is an int). NumPy's
 * rules kept here: n pads with zeros or crops the input along the axis;
 * irfft reads n//2+1 points and ignores the imaginary parts of the zero
 * and (n even) Nyquist bins, as pocketfft does; the norm factor is the one
 * NumPy computes, in the input's real dtype (float16 input: a float16
 * factor), applied to the output. cuFFT's complex-to-real transforms
 * overwrite their input, so they always read a scratch copy.
 */
#include "cuda_lib_internal.h"
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <string.h>

typedef int cufftResult;
typedef int cufftHandle;
enum { CUFFT_R2C = 0x2a, CUFFT_C2R = 0x2c, CUFFT_C2C = 0x29, CUFFT_D2Z = 0x6a, CUFFT_Z2D = 0x6c,
       CUFFT_Z2Z = 0x69 };

static struct {
    void *h;
    int version;
    cufftResult (*Create)(cufftHandle *);
    cufftResult (*Destroy)(cufftHandle);
    cufftResult (*SetStream)(cufftHandle, void *);
    cufftResult (*GetVersion)(int *);
    cufftResult (*MakePlanMany)(cufftHandle, int, int *, int *, int, int, int *, int, int, int, int,
                                size_t *);
    cufftResult (*MakePlanMany64)(cufftHandle, int, long long *, long long *, long long, long long,
                                  long long *, long long, long long, int, long long, size_t *);
    cufftResult (*ExecC2C)(cufftHandle, void *, void *, int);
    cufftResult (*ExecZ2Z)(cufftHandle, void *, void *, int);
    cufftResult (*ExecR2C)(cufftHandle, void *, void *);
    cufftResult (*ExecD2Z)(cufftHandle, void *, void *);
    cufftResult (*ExecC2R)(cufftHandle, void *, void *);
    cufftResult (*ExecZ2D)(cufftHandle, void *, void *);
} cf;

static const char *fft_status(cufftResult r)
{
    static const char *const s[] = {
        "CUFFT_SUCCESS", "CUFFT_INVALID_PLAN", "CUFFT_ALLOC_FAILED", "CUFFT_INVALID_TYPE",
        "CUFFT_INVALID_VALUE", "CUFFT_INTERNAL_ERROR", "CUFFT_EXEC_FAILED", "CUFFT_SETUP_FAILED",
        "CUFFT_INVALID_SIZE", "CUFFT_UNALIGNED_DATA"};
    return r >= 0 && r < (int)(sizeof s / sizeof s[0]) ? s[r] : "cuFFT error";
}

static int fft_fail(const char *what, cufftResult r) { return nd_cuda_lib_fail(what, fft_status(r), r); }

static int fft_ready(void)
{
    if (cf.h) return 0;
    void *h = nd_cuda_lib_open("cufft");
    if (!h) return -1;
#define SYM(f) *(void **)&cf.f = dlsym(h, "cufft" #f)
    SYM(Create); SYM(Destroy); SYM(SetStream); SYM(GetVersion); SYM(MakePlanMany);
    SYM(MakePlanMany64); SYM(ExecC2C); SYM(ExecZ2Z); SYM(ExecR2C); SYM(ExecD2Z); SYM(ExecC2R);
    SYM(ExecZ2D);
#undef SYM
    if (!cf.Create || !cf.Destroy || !cf.SetStream || !cf.MakePlanMany || !cf.ExecC2C ||
        !cf.ExecZ2Z || !cf.ExecR2C || !cf.ExecD2Z || !cf.ExecC2R || !cf.ExecZ2D) {
        PyErr_SetString(nd_CudaError, "numdyn.cuda: the cuFFT library found lacks an entry point "
                        "numdyn needs (`pip install nvidia-cufft-cu12`)");
        return -1;
    }
    if (cf.GetVersion) cf.GetVersion(&cf.version);
    cf.h = h;
    return 0;
}

/* ------------------------------------------------------------- planning */

/* x rounded to float16's precision (NumPy's float16 conversions: nearest,
 * ties to even; subnormals; infinity from 65520) */
static double round_half(double x)
{
    if (!(x < 65520.0)) return INFINITY;
    if (x == 0.0) return 0.0;
    int e;
    frexp(x, &e);
    int q = e - 11;
    if (q < -24) q = -24;
    return ldexp(nearbyint(ldexp(x, -q)), q);
}

/* numpy.fft's factor: norm after the inverse transforms' swap, computed as
 * np.reciprocal(np.sqrt(n, dtype=rd)) / np.reciprocal(n, dtype=rd) */
static double norm_factor(int kind, int norm, int64_t n, int fct_dtype)
{
    int inverse = kind == ND_FFT_INV || kind == ND_FFT_C2R;
    int mode = inverse ? 2 - norm : norm;    /* backward <-> forward, ortho stays */
    if (mode == 0) return 1.0;
    if (fct_dtype == NPY_HALF) {
        double hn = round_half((double)n);
        if (mode == 1) return round_half(1.0f / (float)round_half(sqrtf((float)hn)));
        return round_half(1.0f / (float)hn);
    }
    if (fct_dtype == NPY_FLOAT) return mode == 1 ? 1.0f / sqrtf((float)n) : 1.0f / (float)n;
    return mode == 1 ? 1.0 / sqrt((double)n) : 1.0 / (double)n;
}

int nd_fft_plan_make(int kind, npy_intp n, int axis, int norm, int fct_dtype, int ndim,
                     const npy_intp *shape, nd_fft_plan *p)
{
    memset(p, 0, sizeof *p);
    if (kind < ND_FFT_FWD || kind > ND_FFT_C2R || norm < 0 || norm > 2 || n < 1 || axis < 0 ||
        axis >= ndim) {
        PyErr_Format(PyExc_ValueError, "numdyn.cuda: fft plan: kind %d, n %zd, axis %d of %d, "
                     "norm %d", kind, (Py_ssize_t)n, axis, ndim, norm);
        return -1;
    }
    p->outer = p->inner = 1;
    for (int d = 0; d < axis; d++) p->outer *= shape[d];
    for (int d = axis + 1; d < ndim; d++) p->inner *= shape[d];
    p->len_in = shape[axis];
    p->n = n;
    p->len_out = kind == ND_FFT_R2C ? n / 2 + 1 : n;
    int64_t need = kind == ND_FFT_C2R ? n / 2 + 1 : n;
    p->nin = p->len_in < need ? p->len_in : need;
    p->pad = p->len_in < need || kind == ND_FFT_C2R;
    p->pad_len = p->pad ? need : 0;
    /* cuFFT rejects (CUFFT_INVALID_VALUE) a real array whose address is not
     * aligned to its complex type: with a plan per outer block, real
     * blocks of an odd number of elements would start misaligned. Such a
     * real input goes through a scratch of even rows, such a real output
     * through one that is copied back. */
    int blocks = p->inner > 1 && p->outer > 1;
    if (blocks && kind == ND_FFT_R2C) {
        if (!p->pad && (p->len_in * p->inner) % 2) {
            p->pad = 1;
            p->pad_len = need;
        }
        if (p->pad && (p->pad_len * p->inner) % 2) p->pad_len++;
    }
    if (blocks && kind == ND_FFT_C2R && (p->len_out * p->inner) % 2) {
        p->opad = 1;
        p->opad_len = p->len_out + 1;
    }
    p->scale = norm_factor(kind, norm, n, fct_dtype);
    p->empty = p->outer == 0 || p->inner == 0;
    int64_t src = p->pad ? p->pad_len : p->len_in;
    int64_t dst = p->opad ? p->opad_len : p->len_out;
    p->inembed = src;
    p->onembed = dst;
    p->nloop = 1;
    if (p->inner == 1) {
        p->batch = p->outer;
        p->istride = p->ostride = 1;
        p->idist = src;
        p->odist = p->len_out;
    } else if (p->outer == 1 || p->outer <= p->inner || kind >= ND_FFT_R2C) {
        /* a plan over the inner positions, once per outer block (the real
         * transforms always: their blocks start aligned, see above) */
        p->batch = p->inner;
        p->istride = p->ostride = p->inner;
        p->idist = p->odist = 1;
        p->nloop = p->outer;
        p->loop_in = src * p->inner;
        p->loop_out = dst * p->inner;
    } else {
        /* a plan over the outer blocks, once per inner position */
        p->batch = p->outer;
        p->istride = p->ostride = p->inner;
        p->idist = src * p->inner;
        p->odist = p->len_out * p->inner;
        p->nloop = p->inner;
        p->loop_in = p->loop_out = 1;
    }
    return 0;
}

/* ----------------------------------------------------------- plan cache */

typedef struct {
    int type;
    long long n, inembed, istride, idist, onembed, ostride, odist, batch;
} plan_key;

#define NPLANS 32
static struct {
    plan_key key;
    cufftHandle h;
    uint64_t used;
    int live;
} plans[NPLANS];
static uint64_t plan_clock;

static int plan_get(const plan_key *k, cufftHandle *out)
{
    int slot = 0;
    for (int i = 0; i < NPLANS; i++) {
        if (plans[i].live && !memcmp(&plans[i].key, k, sizeof *k)) {
            plans[i].used = ++plan_clock;
            *out = plans[i].h;
            return 0;
        }
        if (!plans[i].live || (plans[slot].live && plans[i].used < plans[slot].used)) slot = i;
    }
    cufftHandle h;
    cufftResult r = cf.Create(&h);
    if (r) return fft_fail("cufftCreate", r);
    size_t work = 0;
    int small = k->n <= INT_MAX && k->inembed <= INT_MAX && k->onembed <= INT_MAX &&
                k->istride <= INT_MAX && k->ostride <= INT_MAX && k->idist <= INT_MAX &&
                k->odist <= INT_MAX && k->batch <= INT_MAX;
    if (small) {
        int n = (int)k->n, ie = (int)k->inembed, oe = (int)k->onembed;
        r = cf.MakePlanMany(h, 1, &n, &ie, (int)k->istride, (int)k->idist, &oe, (int)k->ostride,
                            (int)k->odist, k->type, (int)k->batch, &work);
    } else if (cf.MakePlanMany64) {
        long long n = k->n, ie = k->inembed, oe = k->onembed;
        r = cf.MakePlanMany64(h, 1, &n, &ie, k->istride, k->idist, &oe, k->ostride, k->odist,
                              k->type, k->batch, &work);
    } else {
        r = 8;  /* CUFFT_INVALID_SIZE */
    }
    if (r) {
        cf.Destroy(h);
        return fft_fail("cufftMakePlanMany", r);
    }
    if (plans[slot].live) cf.Destroy(plans[slot].h);
    plans[slot].key = *k;
    plans[slot].h = h;
    plans[slot].used = ++plan_clock;
    plans[slot].live = 1;
    *out = h;
    return 0;
}

/* ------------------------------------------------------------ execution */

static int c_contiguous(const nd_cuda_view *v, int es)
{
    for (int d = 0; d < v->ndim; d++) if (v->shape[d] == 0) return 1;   /* NumPy's rule */
    npy_intp want = es;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->strides[d] != want) return 0;
        want *= v->shape[d];
    }
    return 1;
}

/* n == 1: a transform of one point is that point (a real one's imaginary
 * part 0): copies, no cuFFT plan (its sizes start at 2) */
static int fft_single(int kind, const nd_fft_plan *p, uint64_t src, int64_t len_src, uint64_t dst,
                      int64_t esr, int64_t esi, int64_t eso, const nd_cuda_libenv *env)
{
    if (kind == ND_FFT_FWD || kind == ND_FFT_INV)
        return nd_cuda_lib_copy2d(env, dst, (size_t)(p->inner * eso), src,
                                  (size_t)(len_src * p->inner * esi), (size_t)(p->inner * esi),
                                  (size_t)p->outer);
    if (kind == ND_FFT_R2C &&
        nd_cuda_lib_memset0(env, dst, (size_t)(p->outer * p->inner * eso)) < 0)
        return -1;
    if (p->inner == 1)
        return nd_cuda_lib_copy2d(env, dst, (size_t)eso, src, (size_t)(len_src * esi),
                                  (size_t)esr, (size_t)p->outer);
    for (int64_t o = 0; o < p->outer; o++)
        if (nd_cuda_lib_copy2d(env, dst + (uint64_t)(o * p->inner * eso), (size_t)eso,
                               src + (uint64_t)(o * len_src * p->inner * esi), (size_t)esi,
                               (size_t)esr, (size_t)p->inner) < 0)
            return -1;
    return 0;
}

int nd_cuda_fft(int kind, npy_intp n, int axis, int norm, int fct_dtype, const nd_cuda_view *in,
                const nd_cuda_view *out, const nd_cuda_libenv *env)
{
    nd_fft_plan p;
    if (nd_fft_plan_make(kind, n, axis, norm, fct_dtype, in->ndim, in->shape, &p) < 0) return -1;
    int dbl = in->dtype == NPY_DOUBLE || in->dtype == NPY_CDOUBLE;
    int cin = kind != ND_FFT_R2C, cout = kind != ND_FFT_C2R;
    int want_in = cin ? (dbl ? NPY_CDOUBLE : NPY_CFLOAT) : (dbl ? NPY_DOUBLE : NPY_FLOAT);
    int want_out = cout ? (dbl ? NPY_CDOUBLE : NPY_CFLOAT) : (dbl ? NPY_DOUBLE : NPY_FLOAT);
    int64_t esr = dbl ? 8 : 4, esi = cin ? 2 * esr : esr, eso = cout ? 2 * esr : esr;
    int okshape = out->ndim == in->ndim;
    for (int d = 0; okshape && d < in->ndim; d++)
        okshape = out->shape[d] == (d == axis ? p.len_out : in->shape[d]);
    if (in->dtype != want_in || out->dtype != want_out || !okshape || !c_contiguous(in, (int)esi) ||
        !c_contiguous(out, (int)eso)) {
        PyErr_Format(PyExc_ValueError, "numdyn.cuda: fft kind %d takes a C-contiguous type %d "
                     "input and writes a C-contiguous type %d output of the transform's shape "
                     "(got %d -> %d; a numdyn bug, please report it)", kind, want_in, want_out,
                     in->dtype, out->dtype);
        return -1;
    }
    if (p.empty) return 0;
    if (fft_ready() < 0) return -1;
    uint64_t src = in->ptr, scratch = 0, dst = out->ptr, oscratch = 0;
    int rc = -1;
    if (p.pad) {
        size_t row = (size_t)(p.pad_len * p.inner * esi);
        if (env->alloc(env->ctx, row * (size_t)p.outer, &scratch) < 0) return -1;
        if (p.nin < p.pad_len && nd_cuda_lib_memset0(env, scratch, row * (size_t)p.outer) < 0)
            goto done;
        if (p.nin > 0 &&
            nd_cuda_lib_copy2d(env, scratch, row, in->ptr, (size_t)(p.len_in * p.inner * esi),
                               (size_t)(p.nin * p.inner * esi), (size_t)p.outer) < 0)
            goto done;
        if (kind == ND_FFT_C2R) {
            /* pocketfft reads only the real parts of bin 0 and of the Nyquist bin */
            int64_t bins[2] = {0, p.n % 2 == 0 && p.nin == p.pad_len ? p.pad_len - 1 : -1};
            for (int i = 0; i < 2; i++) {
                if (bins[i] < 0 || (i == 1 && bins[1] == 0) || p.nin == 0) continue;
                size_t w32 = (size_t)(esr / 4);
                if (p.inner == 1) {
                    if (nd_cuda_lib_zero2d32(env, scratch + (uint64_t)(bins[i] * esi + esr), row,
                                             w32, (size_t)p.outer) < 0)
                        goto done;
                } else {
                    for (int64_t o = 0; o < p.outer; o++)
                        if (nd_cuda_lib_zero2d32(env, scratch + (uint64_t)(o * (int64_t)row +
                                                 bins[i] * p.inner * esi + esr),
                                                 (size_t)esi, w32, (size_t)p.inner) < 0)
                            goto done;
                }
            }
        }
        src = scratch;
    }
    if (p.n == 1) {
        if (fft_single(kind, &p, src, p.pad ? p.pad_len : p.len_in, out->ptr, esr, esi, eso,
                       env) < 0)
            goto done;
        goto scale;
    }
    if (p.opad) {
        if (env->alloc(env->ctx, (size_t)(p.outer * p.opad_len * p.inner * eso), &oscratch) < 0)
            goto done;
        dst = oscratch;
    }
    plan_key key = {0};
    key.type = kind == ND_FFT_R2C ? (dbl ? CUFFT_D2Z : CUFFT_R2C)
             : kind == ND_FFT_C2R ? (dbl ? CUFFT_Z2D : CUFFT_C2R)
             : (dbl ? CUFFT_Z2Z : CUFFT_C2C);
    key.n = p.n; key.inembed = p.inembed; key.istride = p.istride; key.idist = p.idist;
    key.onembed = p.onembed; key.ostride = p.ostride; key.odist = p.odist; key.batch = p.batch;
    cufftHandle h = 0;
    if (plan_get(&key, &h) < 0) goto done;
    cufftResult r = cf.SetStream(h, env->stream);
    if (r) { fft_fail("cufftSetStream", r); goto done; }
    for (int64_t i = 0; i < p.nloop; i++) {
        void *x = (void *)(uintptr_t)(src + (uint64_t)(i * p.loop_in * esi));
        void *y = (void *)(uintptr_t)(dst + (uint64_t)(i * p.loop_out * eso));
        switch (kind) {
        case ND_FFT_FWD: case ND_FFT_INV:
            r = (dbl ? cf.ExecZ2Z : cf.ExecC2C)(h, x, y, kind == ND_FFT_FWD ? -1 : 1);
            break;
        case ND_FFT_R2C: r = (dbl ? cf.ExecD2Z : cf.ExecR2C)(h, x, y); break;
        default: r = (dbl ? cf.ExecZ2D : cf.ExecC2R)(h, x, y); break;
        }
        if (r) { fft_fail("cufftExec", r); goto done; }
    }
    if (p.opad && nd_cuda_lib_copy2d(env, out->ptr, (size_t)(p.len_out * p.inner * eso), oscratch,
                                     (size_t)(p.opad_len * p.inner * eso),
                                     (size_t)(p.len_out * p.inner * eso), (size_t)p.outer) < 0)
        goto done;
scale:
    if (p.scale != 1.0) {
        int64_t reals = p.outer * p.len_out * p.inner * (cout ? 2 : 1);
        if (nd_cuda_blas_scale(env, dbl ? NPY_DOUBLE : NPY_FLOAT, out->ptr, reals, 1, p.scale) < 0)
            goto done;
    }
    rc = 0;
done:
    if (scratch) env->release(env->ctx, scratch);
    if (oscratch) env->release(env->ctx, oscratch);
    return rc;
}

/* --------------------------------------------------------------- hooks */

int nd_cuda_lib_view_arg(PyObject *o, nd_cuda_view *v);
int nd_cuda_lib_hook_env(PyObject *stream, nd_cuda_libenv *env);
int nd_cuda_lib_hook_done(nd_cuda_libenv *env, int rc);

/* _cuda_fft_plan(kind, n, axis, norm, fct_typenum, shape) -> dict */
static PyObject *py_fft_plan(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, axis, norm, fdt;
    Py_ssize_t n;
    PyObject *shape;
    if (!PyArg_ParseTuple(args, "iniiiO", &kind, &n, &axis, &norm, &fdt, &shape)) return NULL;
    nd_cuda_view v = {0};
    PyObject *seq = PySequence_Fast(shape, "shape: a sequence");
    if (!seq) return NULL;
    v.ndim = (int)PySequence_Fast_GET_SIZE(seq);
    for (int d = 0; d < v.ndim && d < ND_MAXDIMS; d++)
        v.shape[d] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq, d));
    Py_DECREF(seq);
    if (PyErr_Occurred()) return NULL;
    nd_fft_plan p;
    if (nd_fft_plan_make(kind, n, axis, norm, fdt, v.ndim, v.shape, &p) < 0) return NULL;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:O,s:L,s:O,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,"
                         "s:L,s:L,s:L,s:d,s:O}",
                         "outer", (long long)p.outer, "len_in", (long long)p.len_in,
                         "inner", (long long)p.inner, "n", (long long)p.n,
                         "len_out", (long long)p.len_out, "nin", (long long)p.nin,
                         "pad", p.pad ? Py_True : Py_False, "pad_len", (long long)p.pad_len,
                         "opad", p.opad ? Py_True : Py_False, "opad_len", (long long)p.opad_len,
                         "batch", (long long)p.batch, "istride", (long long)p.istride,
                         "idist", (long long)p.idist, "ostride", (long long)p.ostride,
                         "odist", (long long)p.odist, "inembed", (long long)p.inembed,
                         "onembed", (long long)p.onembed, "nloop", (long long)p.nloop,
                         "loop_in", (long long)p.loop_in, "loop_out", (long long)p.loop_out,
                         "scale", p.scale, "empty", p.empty ? Py_True : Py_False);
}

/* _cuda_lib_fft(kind, n, axis, norm, fct_typenum, in, out, stream):
 * nd_cuda_fft on device pointers (tests); waits for the stream */
static PyObject *py_lib_fft(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, axis, norm, fdt;
    Py_ssize_t n;
    PyObject *io, *oo, *so;
    if (!PyArg_ParseTuple(args, "iniiiOOO", &kind, &n, &axis, &norm, &fdt, &io, &oo, &so))
        return NULL;
    nd_cuda_view a, o;
    nd_cuda_libenv env;
    if (nd_cuda_lib_view_arg(io, &a) < 0 || nd_cuda_lib_view_arg(oo, &o) < 0 ||
        nd_cuda_lib_hook_env(so, &env) < 0)
        return NULL;
    if (nd_cuda_lib_hook_done(&env, nd_cuda_fft(kind, n, axis, norm, fdt, &a, &o, &env)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_fft_version(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    if (fft_ready() < 0) return NULL;
    return PyLong_FromLong(cf.version);
}

PyMethodDef nd_cuda_fft_methods[] = {
    {"_cuda_fft_plan", py_fft_plan, METH_VARARGS, "the cuFFT plan of a 1-d numpy.fft transform"},
    {"_cuda_lib_fft", py_lib_fft, METH_VARARGS, "a 1-d transform on device pointers (tests)"},
    {"_cuda_fft_version", py_fft_version, METH_NOARGS, "cufftGetVersion (loads cuFFT)"},
    {NULL, NULL, 0, NULL},
};
