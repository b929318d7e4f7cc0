/* cuda_blas.c -- matmul and dot on device memory through cuBLAS
 * (runtime/cuda_blas.h).
 *
 * libcublas is dlopen'ed (cuda_extern.c finds it); only the entry points
 * used are declared, with cublas_api.h's C ABI (handles are pointers, enums
 * ints). Every float dtype goes through cublasGemmStridedBatchedEx: A, B
 * and C of the operands' type, computed in float32 for float16 (NumPy's
 * half matmul/dot loops sum in float and round once) and in the type's own
 * precision otherwise. The default math mode keeps TF32 off, as NumPy.
 */
#include "cuda_lib_internal.h"
#include <dlfcn.h>
#include <limits.h>
#include <string.h>

typedef int cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;
enum { OP_N = 0, OP_T = 1 };
enum { CUDA_R_16F = 2, CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_C_32F = 4, CUDA_C_64F = 5 };
enum { COMPUTE_32F = 68, COMPUTE_64F = 70 };
enum { GEMM_DEFAULT = -1, DEFAULT_MATH = 0 };

static struct {
    void *h;
    cublasHandle_t handle;
    int version;
    cublasStatus_t (*Create)(cublasHandle_t *);
    cublasStatus_t (*SetStream)(cublasHandle_t, void *);
    cublasStatus_t (*SetMathMode)(cublasHandle_t, int);
    cublasStatus_t (*GetVersion)(cublasHandle_t, int *);
    const char *(*GetStatusString)(cublasStatus_t);
    cublasStatus_t (*Gemm)(cublasHandle_t, int, int, int, int, int, const void *, const void *, int,
                           int, long long, const void *, int, int, long long, const void *, void *,
                           int, int, long long, int, int, int);
    cublasStatus_t (*Gemm64)(cublasHandle_t, int, int, int64_t, int64_t, int64_t, const void *,
                             const void *, int, int64_t, long long, const void *, int, int64_t,
                             long long, const void *, void *, int, int64_t, long long, int64_t, int,
                             int);
    cublasStatus_t (*Sscal)(cublasHandle_t, int, const float *, float *, int);
    cublasStatus_t (*Dscal)(cublasHandle_t, int, const double *, double *, int);
} cb;

int nd_cuda_igemm_text(int dt, char *name, size_t nn, char *text, size_t tn);

static int blas_fail(const char *what, cublasStatus_t r)
{
    const char *s = cb.GetStatusString ? cb.GetStatusString(r) : NULL;
    return nd_cuda_lib_fail(what, s ? s : "cuBLAS error", r);
}

/* the library, its handle, and the handle bound to env's stream */
static int blas_ready(const nd_cuda_libenv *env)
{
    if (!cb.handle) {
        void *h = nd_cuda_lib_open("cublas");
        if (!h) return -1;
#define SYM(f, name) *(void **)&cb.f = dlsym(h, name)
        SYM(Create, "cublasCreate_v2"); SYM(SetStream, "cublasSetStream_v2");
        SYM(SetMathMode, "cublasSetMathMode"); SYM(GetVersion, "cublasGetVersion_v2");
        SYM(GetStatusString, "cublasGetStatusString");
        SYM(Gemm, "cublasGemmStridedBatchedEx"); SYM(Gemm64, "cublasGemmStridedBatchedEx_64");
        SYM(Sscal, "cublasSscal_v2"); SYM(Dscal, "cublasDscal_v2");
#undef SYM
        if (!cb.Create || !cb.SetStream || !cb.Gemm || !cb.Sscal || !cb.Dscal) {
            PyErr_SetString(nd_CudaError, "numdyn.cuda: the cuBLAS library found lacks "
                            "cublasGemmStridedBatchedEx (cuBLAS 11 or newer is needed: "
                            "`pip install nvidia-cublas-cu12`)");
            return -1;
        }
        cublasHandle_t hd = NULL;
        cublasStatus_t r = cb.Create(&hd);
        if (r != 0) return blas_fail("cublasCreate (is a CUDA context current?)", r);
        if (cb.SetMathMode) cb.SetMathMode(hd, DEFAULT_MATH);
        if (cb.GetVersion) cb.GetVersion(hd, &cb.version);
        /* cuBLAS 11 exports the _64 entry points as stubs that do nothing */
        if (cb.version < 120000) cb.Gemm64 = NULL;
        cb.handle = hd;
    }
    cublasStatus_t r = cb.SetStream(cb.handle, env->stream);
    return r ? blas_fail("cublasSetStream", r) : 0;
}

/* ------------------------------------------------------------- planning */

static int itemsize(int dt)
{
    switch (dt) {
    case NPY_BOOL: case NPY_BYTE: case NPY_UBYTE: return 1;
    case NPY_HALF: case NPY_SHORT: case NPY_USHORT: return 2;
    case NPY_FLOAT: case NPY_INT: case NPY_UINT: return 4;
    case NPY_CDOUBLE: return 16;
    default: return 8;
    }
}

static int blas_dtype(int dt)
{
    return dt == NPY_HALF || dt == NPY_FLOAT || dt == NPY_DOUBLE || dt == NPY_CFLOAT ||
           dt == NPY_CDOUBLE;
}

/* the integer types and bool: a kernel of numdyn's (cuBLAS has no gemm
 * with NumPy's wraparound) */
static const char *int_ctype(int dt)
{
    return PyTypeNum_ISINTEGER(dt) || dt == NPY_BOOL ? nd_cu_ctype(dt) : NULL;
}

static int gemm_dtype_ok(int dt) { return blas_dtype(dt) || int_ctype(dt) != NULL; }

/* The logical R x C matrix with element (i, j) at i*sr + j*sc as a cuBLAS
 * operand: op N (column-major, ld = sc) or op T (row-major, ld = sr). A
 * dimension of one takes any stride. 0, or 1 when neither fits. */
static int opld(int64_t R, int64_t C, int64_t sr, int64_t sc, int *op, int64_t *ld)
{
    int64_t r1 = R > 1 ? R : 1, c1 = C > 1 ? C : 1;
    if (sr == 1 || R <= 1) {
        int64_t l = C <= 1 ? r1 : sc;
        if (l >= r1) { *op = OP_N; *ld = l; return 0; }
    }
    if (sc == 1 || C <= 1) {
        int64_t l = R <= 1 ? c1 : sr;
        if (l >= c1) { *op = OP_T; *ld = l; return 0; }
    }
    return 1;
}

typedef struct { int64_t size, s[3]; } bdim;   /* s: A, B, C strides (elements) */

static int to_elems(npy_intp bytes, int es, int64_t *out)
{
    if (bytes < 0 || bytes % es) return 1;
    *out = bytes / es;
    return 0;
}

static int shape_error(const char *what)
{
    PyErr_Format(PyExc_ValueError, "numdyn.cuda: %s: operand shapes do not match the output "
                 "(a numdyn bug, please report it)", what);
    return -1;
}

int nd_gemm_plan_make(int dot, const nd_cuda_view *a, const nd_cuda_view *b,
                      const nd_cuda_view *out, nd_gemm_plan *p)
{
    const char *what = dot ? "dot" : "matmul";
    memset(p, 0, sizeof *p);
    if (a->dtype != b->dtype || a->dtype != out->dtype || !gemm_dtype_ok(a->dtype)) {
        PyErr_Format(PyExc_NotImplementedError, "numdyn.cuda: %s on the GPU takes bool, integer, "
                     "float16/32/64 or complex64/128 operands of the output's dtype (got type "
                     "numbers %d, %d -> %d)", what, a->dtype, b->dtype, out->dtype);
        return -1;
    }
    if (a->ndim < 1 || b->ndim < 1) {
        PyErr_Format(PyExc_ValueError, "numdyn.cuda: %s with a 0-d operand is not a gemm", what);
        return -1;
    }
    p->dtype = a->dtype;
    int es = itemsize(a->dtype);
    int a2 = a->ndim >= 2, b2 = b->ndim >= 2;
    int64_t k = a->shape[a->ndim - 1];
    int64_t kb = b2 ? b->shape[b->ndim - 2] : b->shape[0];
    int64_t n = a2 ? a->shape[a->ndim - 2] : 1, m = b2 ? b->shape[b->ndim - 1] : 1;
    if (k != kb) return shape_error(what);
    npy_intp as_r = a2 ? a->strides[a->ndim - 2] : 0, as_k = a->strides[a->ndim - 1];
    npy_intp bs_k = b2 ? b->strides[b->ndim - 2] : b->strides[0];
    npy_intp bs_m = b2 ? b->strides[b->ndim - 1] : 0;
    npy_intp cs_r = 0, cs_m = b2 ? out->strides[out->ndim - 1] : 0;
    bdim bd[2 * ND_MAXDIMS];
    int nb = 0;
    npy_intp bst[2 * ND_MAXDIMS][3];
    if (!dot) {
        int na = a->ndim - 2 > 0 ? a->ndim - 2 : 0, nbb = b->ndim - 2 > 0 ? b->ndim - 2 : 0;
        int nbo = out->ndim - a2 - b2;
        if (nbo != (na > nbb ? na : nbb)) return shape_error(what);
        if (a2) {
            if (out->shape[nbo] != n) return shape_error(what);
            cs_r = out->strides[nbo];
        }
        if (b2 && out->shape[out->ndim - 1] != m) return shape_error(what);
        for (int d = 0; d < nbo; d++) {
            int da = d - (nbo - na), db = d - (nbo - nbb);
            npy_intp size = out->shape[d];
            if ((da >= 0 && a->shape[da] != size && a->shape[da] != 1) ||
                (db >= 0 && b->shape[db] != size && b->shape[db] != 1))
                return shape_error(what);
            bd[nb].size = size;
            bst[nb][0] = da >= 0 && a->shape[da] != 1 ? a->strides[da] : 0;
            bst[nb][1] = db >= 0 && b->shape[db] != 1 ? b->strides[db] : 0;
            bst[nb][2] = out->strides[d];
            nb++;
        }
    } else {
        /* np.dot: out = a.shape[:-1] + b.shape[:-2] + b.shape[-1:] */
        int nbb = b2 ? b->ndim - 2 : 0;
        if (out->ndim != a->ndim - 1 + nbb + b2) return shape_error(what);
        for (int d = 0; d < a->ndim - 1; d++)
            if (out->shape[d] != a->shape[d]) return shape_error(what);
        for (int d = 0; d < nbb; d++)
            if (out->shape[a->ndim - 1 + d] != b->shape[d]) return shape_error(what);
        if (b2 && out->shape[out->ndim - 1] != m) return shape_error(what);
        if (a2) cs_r = out->strides[a->ndim - 2];
        for (int d = 0; d < a->ndim - 2; d++) {
            bd[nb].size = a->shape[d];
            bst[nb][0] = a->strides[d]; bst[nb][1] = 0; bst[nb][2] = out->strides[d];
            nb++;
        }
        for (int d = 0; d < nbb; d++) {
            bd[nb].size = b->shape[d];
            bst[nb][0] = 0; bst[nb][1] = b->strides[d]; bst[nb][2] = out->strides[a->ndim - 1 + d];
            nb++;
        }
    }
    int64_t eas_r, eas_k, ebs_k, ebs_m, ecs_r, ecs_m;
    if (to_elems(as_r, es, &eas_r) || to_elems(as_k, es, &eas_k) || to_elems(bs_k, es, &ebs_k) ||
        to_elems(bs_m, es, &ebs_m) || to_elems(cs_r, es, &ecs_r) || to_elems(cs_m, es, &ecs_m))
        return 1;
    /* batch dims: drop ones, strides to elements */
    int nk = 0;
    for (int d = 0; d < nb; d++) {
        if (bd[d].size == 0) { p->empty = 1; return 0; }
        if (bd[d].size == 1) continue;
        bd[nk].size = bd[d].size;
        for (int j = 0; j < 3; j++)
            if (to_elems(bst[d][j], es, &bd[nk].s[j])) return 1;
        nk++;
    }
    if (n == 0 || m == 0) { p->empty = 1; return 0; }
    p->m = m; p->n = n; p->k = k;
    if (k == 0) { p->zero = 1; return 0; }
    /* C^T (m x n) = B^T (m x k) . A^T (k x n), all column-major */
    int opc;
    if (opld(m, k, ebs_m, ebs_k, &p->op1, &p->ld1) || opld(k, n, eas_k, eas_r, &p->op2, &p->ld2) ||
        opld(m, n, ecs_m, ecs_r, &opc, &p->ldc) || opc != OP_N)
        return 1;
    /* merge batch dims that walk memory as one (inner d+1 into outer d) */
    int nm = 0;
    for (int d = 0; d < nk; d++) {
        if (nm > 0) {
            bdim *o = &bd[nm - 1];
            int ok = 1;
            for (int j = 0; j < 3; j++) ok &= o->s[j] == bd[d].s[j] * bd[d].size;
            if (ok) {
                o->size *= bd[d].size;
                for (int j = 0; j < 3; j++) o->s[j] = bd[d].s[j];
                continue;
            }
        }
        bd[nm++] = bd[d];
    }
    /* the largest is the strided batch; the others are loops of calls */
    int big = -1;
    for (int d = 0; d < nm; d++) if (big < 0 || bd[d].size >= bd[big].size) big = d;
    p->batch = 1;
    if (big >= 0) {
        p->batch = bd[big].size;
        p->bs1 = bd[big].s[1]; p->bs2 = bd[big].s[0]; p->bsc = bd[big].s[2];
    }
    for (int d = 0; d < nm; d++) {
        if (d == big) continue;
        if (p->nloop == ND_GEMM_MAXLOOP) return 1;
        p->loop[p->nloop] = bd[d].size;
        p->ls1[p->nloop] = bd[d].s[1];
        p->ls2[p->nloop] = bd[d].s[0];
        p->lsc[p->nloop] = bd[d].s[2];
        p->nloop++;
    }
    return 0;
}

/* ------------------------------------------------------------ execution */

static int fits(int64_t v) { return v >= 0 && v <= INT_MAX; }

static int gemm_call(const nd_gemm_plan *p, uint64_t x1, uint64_t x2, uint64_t c)
{
    int ty, ct;
    union { float f[2]; double d[2]; } one = {{0}}, zero = {{0}};
    switch (p->dtype) {
    case NPY_HALF: ty = CUDA_R_16F; ct = COMPUTE_32F; one.f[0] = 1.0f; break;
    case NPY_FLOAT: ty = CUDA_R_32F; ct = COMPUTE_32F; one.f[0] = 1.0f; break;
    case NPY_DOUBLE: ty = CUDA_R_64F; ct = COMPUTE_64F; one.d[0] = 1.0; break;
    case NPY_CFLOAT: ty = CUDA_C_32F; ct = COMPUTE_32F; one.f[0] = 1.0f; break;
    default: ty = CUDA_C_64F; ct = COMPUTE_64F; one.d[0] = 1.0; break;
    }
    cublasStatus_t r;
    if (fits(p->m) && fits(p->n) && fits(p->k) && fits(p->ld1) && fits(p->ld2) && fits(p->ldc) &&
        fits(p->batch))
        r = cb.Gemm(cb.handle, p->op1, p->op2, (int)p->m, (int)p->n, (int)p->k, &one,
                    (const void *)(uintptr_t)x1, ty, (int)p->ld1, p->bs1,
                    (const void *)(uintptr_t)x2, ty, (int)p->ld2, p->bs2, &zero,
                    (void *)(uintptr_t)c, ty, (int)p->ldc, p->bsc, (int)p->batch, ct, GEMM_DEFAULT);
    else if (cb.Gemm64)
        r = cb.Gemm64(cb.handle, p->op1, p->op2, p->m, p->n, p->k, &one,
                      (const void *)(uintptr_t)x1, ty, p->ld1, p->bs1,
                      (const void *)(uintptr_t)x2, ty, p->ld2, p->bs2, &zero,
                      (void *)(uintptr_t)c, ty, p->ldc, p->bsc, p->batch, ct, GEMM_DEFAULT);
    else {
        PyErr_SetString(nd_CudaError, "numdyn.cuda: a matrix dimension or batch above 2**31-1 "
                        "needs cuBLAS 12 or newer (`pip install nvidia-cublas-cu12`)");
        return -1;
    }
    return r ? blas_fail("cublasGemmStridedBatchedEx", r) : 0;
}

/* The integer/bool gemm of a plan (one thread an element of C^T, the
 * batch inside, loops by launches): NumPy's integer loops wrap around in
 * the result type -- the same as summing modulo 2**64 and truncating;
 * bool is the OR of ANDs. */
int nd_cuda_igemm_text(int dt, char *name, size_t nn, char *text, size_t tn)
{
    const char *t = int_ctype(dt);
    if (!t) {
        PyErr_Format(PyExc_NotImplementedError, "numdyn.cuda: no integer gemm for type %d", dt);
        return -1;
    }
    int isbool = dt == NPY_BOOL;
    snprintf(name, nn, "nd_lib_igemm_%d", dt);
    snprintf(text, tn,
             "extern \"C\" __global__ void %s(const char *X1, const char *X2, char *C, long long m,"
             " long long n, long long k, int op1, long long ld1, int op2, long long ld2,"
             " long long ldc, long long bs1, long long bs2, long long bsc, long long batch)\n"
             "{\n"
             "    long long total = m * n * batch, step = (long long)gridDim.x * blockDim.x;\n"
             "    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;"
             " t += step) {\n"
             "        long long i = t %% m, j = (t / m) %% n, q = t / (m * n);\n"
             "        const %s *x1 = (const %s *)X1 + q * bs1, *x2 = (const %s *)X2 + q * bs2;\n"
             "        unsigned long long acc = 0;\n"
             "        for (long long l = 0; l < k; l++) {\n"
             "            %s a = op1 ? x1[l + i * ld1] : x1[i + l * ld1];\n"
             "            %s b = op2 ? x2[j + l * ld2] : x2[l + j * ld2];\n"
             "            %s\n"
             "        }\n"
             "        ((%s *)C)[q * bsc + i + j * ldc] = (%s)acc;\n"
             "    }\n"
             "}\n",
             name, t, t, t, t, t,
             isbool ? "if (a && b) { acc = 1; break; }"
                    : "acc += (unsigned long long)(long long)a * (unsigned long long)(long long)b;",
             t, t);
    return 0;
}

static int igemm_launch(const nd_gemm_plan *p, uint64_t x1, uint64_t x2, uint64_t c)
{
    char name[64], text[2048];
    if (nd_cuda_igemm_text(p->dtype, name, sizeof name, text, sizeof text) < 0) return -1;
    const char *texts[1] = {text}, *names[1] = {name};
    nd_cu_fn_t fn;
    int compiled;
    if (nd_cu_functions(1, texts, names, &fn, &compiled) < 0) return -1;
    long long total = p->m * p->n * p->batch;
    long long blocks = (total + ND_CU_THREADS - 1) / ND_CU_THREADS;
    unsigned grid = (unsigned)(blocks < (1 << 20) ? blocks : (1 << 20));
    long long m = p->m, n = p->n, k = p->k, ld1 = p->ld1, ld2 = p->ld2, ldc = p->ldc;
    long long bs1 = p->bs1, bs2 = p->bs2, bsc = p->bsc, batch = p->batch;
    int op1 = p->op1, op2 = p->op2;
    void *params[15] = {&x1, &x2, &c, &m, &n, &k, &op1, &ld1, &op2, &ld2, &ldc, &bs1, &bs2,
                        &bsc, &batch};
    return nd_cu_launch(fn, grid, ND_CU_THREADS, params);
}

int nd_cuda_matmul(int dot, const nd_cuda_view *a, const nd_cuda_view *b, const nd_cuda_view *out,
                   const nd_cuda_libenv *env)
{
    nd_gemm_plan p;
    int rc = nd_gemm_plan_make(dot, a, b, out, &p);
    if (rc) return rc;
    if (p.empty) return 0;
    int64_t es = itemsize(p.dtype);
    if (p.zero) {
        /* k == 0: sums of nothing (the caller's out is C-contiguous) */
        int64_t cnt = 1;
        for (int d = 0; d < out->ndim; d++) cnt *= out->shape[d];
        return nd_cuda_lib_memset0(env, out->ptr, (size_t)(cnt * es));
    }
    int blas = blas_dtype(p.dtype);
    if (blas ? blas_ready(env) < 0 : nd_cu_ready() < 0) return -1;
    int64_t idx[ND_GEMM_MAXLOOP] = {0};
    for (;;) {
        int64_t o1 = 0, o2 = 0, oc = 0;
        for (int d = 0; d < p.nloop; d++) {
            o1 += idx[d] * p.ls1[d];
            o2 += idx[d] * p.ls2[d];
            oc += idx[d] * p.lsc[d];
        }
        uint64_t x1 = b->ptr + (uint64_t)(o1 * es), x2 = a->ptr + (uint64_t)(o2 * es),
                 c = out->ptr + (uint64_t)(oc * es);
        if ((blas ? gemm_call(&p, x1, x2, c) : igemm_launch(&p, x1, x2, c)) < 0) return -1;
        int d = p.nloop - 1;
        while (d >= 0 && ++idx[d] == p.loop[d]) idx[d--] = 0;
        if (d < 0) break;
    }
    return 0;
}

int nd_cuda_blas_scale(const nd_cuda_libenv *env, int real_dtype, uint64_t x, int64_t count,
                       int inc, double alpha)
{
    if (count <= 0 || alpha == 1.0) return 0;
    if (blas_ready(env) < 0) return -1;
    int64_t es = real_dtype == NPY_FLOAT ? 4 : 8, chunk = INT_MAX / inc;
    float af = (float)alpha;
    for (int64_t at = 0; at < count; at += chunk) {
        int len = (int)(count - at < chunk ? count - at : chunk);
        uint64_t p = x + (uint64_t)(at * inc * es);
        cublasStatus_t r = real_dtype == NPY_FLOAT
            ? cb.Sscal(cb.handle, len, &af, (float *)(uintptr_t)p, inc)
            : cb.Dscal(cb.handle, len, &alpha, (double *)(uintptr_t)p, inc);
        if (r) return blas_fail("cublas scal", r);
    }
    return 0;
}

/* --------------------------------------------------------------- hooks */

int nd_cuda_lib_view_arg(PyObject *o, nd_cuda_view *v);
int nd_cuda_lib_hook_env(PyObject *stream, nd_cuda_libenv *env);
int nd_cuda_lib_hook_done(nd_cuda_libenv *env, int rc);

/* _cuda_gemm_plan(dot, a, b, out) with views (ptr, typenum, shape, strides)
 * -> the plan as a dict, or None when a layout needs a copy */
static PyObject *py_gemm_plan(PyObject *self, PyObject *args)
{
    (void)self;
    int dot;
    PyObject *ao, *bo, *oo;
    if (!PyArg_ParseTuple(args, "pOOO", &dot, &ao, &bo, &oo)) return NULL;
    nd_cuda_view a, b, o;
    if (nd_cuda_lib_view_arg(ao, &a) < 0 || nd_cuda_lib_view_arg(bo, &b) < 0 ||
        nd_cuda_lib_view_arg(oo, &o) < 0)
        return NULL;
    nd_gemm_plan p;
    int rc = nd_gemm_plan_make(dot, &a, &b, &o, &p);
    if (rc < 0) return NULL;
    if (rc == 1) Py_RETURN_NONE;
    PyObject *loops = PyList_New(0);
    for (int d = 0; loops && d < p.nloop; d++) {
        PyObject *t = Py_BuildValue("(LLLL)", (long long)p.loop[d], (long long)p.ls1[d],
                                    (long long)p.ls2[d], (long long)p.lsc[d]);
        if (!t || PyList_Append(loops, t) < 0) Py_CLEAR(loops);
        Py_XDECREF(t);
    }
    if (!loops) return NULL;
    return Py_BuildValue("{s:i,s:s,s:s,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:N,s:O,s:O}",
                         "dtype", p.dtype, "op1", p.op1 ? "T" : "N", "op2", p.op2 ? "T" : "N",
                         "m", (long long)p.m, "n", (long long)p.n, "k", (long long)p.k,
                         "ld1", (long long)p.ld1, "ld2", (long long)p.ld2, "ldc", (long long)p.ldc,
                         "batch", (long long)p.batch, "bs1", (long long)p.bs1,
                         "bs2", (long long)p.bs2, "bsc", (long long)p.bsc, "loops", loops,
                         "zero", p.zero ? Py_True : Py_False, "empty", p.empty ? Py_True : Py_False);
}

/* _cuda_lib_matmul(dot, a, b, out, stream): nd_cuda_matmul on device
 * pointers (e.g. CuPy arrays'); waits for the stream. 1 when a layout
 * needs a copy. */
static PyObject *py_lib_matmul(PyObject *self, PyObject *args)
{
    (void)self;
    int dot;
    PyObject *ao, *bo, *oo, *so;
    if (!PyArg_ParseTuple(args, "pOOOO", &dot, &ao, &bo, &oo, &so)) return NULL;
    nd_cuda_view a, b, o;
    nd_cuda_libenv env;
    if (nd_cuda_lib_view_arg(ao, &a) < 0 || nd_cuda_lib_view_arg(bo, &b) < 0 ||
        nd_cuda_lib_view_arg(oo, &o) < 0 || nd_cuda_lib_hook_env(so, &env) < 0)
        return NULL;
    int rc = nd_cuda_lib_hook_done(&env, nd_cuda_matmul(dot, &a, &b, &o, &env));
    return rc < 0 ? NULL : PyLong_FromLong(rc);
}

/* _cuda_igemm_source(typenum) -> (name, CUDA C) of the integer gemm kernel */
static PyObject *py_igemm_source(PyObject *self, PyObject *arg)
{
    (void)self;
    int dt = (int)PyLong_AsLong(arg);
    if (dt == -1 && PyErr_Occurred()) return NULL;
    char name[64], text[2048];
    if (nd_cuda_igemm_text(dt, name, sizeof name, text, sizeof text) < 0) return NULL;
    return Py_BuildValue("(ss)", name, text);
}

static PyObject *py_blas_version(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    nd_cuda_libenv env = {0};
    if (blas_ready(&env) < 0) return NULL;
    return PyLong_FromLong(cb.version);
}

PyMethodDef nd_cuda_blas_methods[] = {
    {"_cuda_gemm_plan", py_gemm_plan, METH_VARARGS, "the cuBLAS call plan of a matmul/dot"},
    {"_cuda_lib_matmul", py_lib_matmul, METH_VARARGS, "matmul/dot on device pointers (tests)"},
    {"_cuda_blas_version", py_blas_version, METH_NOARGS, "cublasGetVersion (loads cuBLAS)"},
    {"_cuda_igemm_source", py_igemm_source, METH_O, "(name, CUDA C) of the integer gemm kernel"},
    {NULL, NULL, 0, NULL},
};
