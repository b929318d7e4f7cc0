/* cuda_lib_fake.c -- host stand-ins for the driver, cuBLAS and cuFFT entry
 * points numdyn's library externs call (src/runtime/cuda_blas.c,
 * cuda_fft.c, cuda_extern.c), with the same C ABI, working on host memory:
 * tests/test_cuda_lib_fake.py builds it as a shared library and hands it
 * to numdyn._cuda_libs in place of libcuda/libcublas/libcufft, so the
 * externs' executors (padding and cropping copies, batching loops, scratch
 * buffers, norm scaling, the row-major trick) run on a machine without a
 * GPU against NumPy.
 *
 * The transforms are direct DFTs and the gemm a triple loop, in double
 * precision -- the libraries' semantics (unnormalized cuFFT transforms,
 * column-major strided-batched gemm), not their speed. What GPU run 1
 * taught is checked as the libraries do: cuFFT refuses a real array not
 * aligned to its complex type (CUFFT_INVALID_VALUE); a C2R transform
 * overwrites its input. Not modelled: float16 (the gemm answers
 * CUBLAS_STATUS_NOT_SUPPORTED), streams (all work is done at once).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long devptr;

/* ------------------------------------------------------------ driver */
typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    devptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    devptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} memcpy2d_t;

int cuInit(unsigned flags) { (void)flags; return 0; }
int cuGetErrorString(int r, const char **s) { (void)r; *s = "fake driver error"; return 0; }
int cuMemAlloc_v2(devptr *p, size_t n)
{
    void *m = malloc(n ? n : 1);
    if (!m) return 2;   /* CUDA_ERROR_OUT_OF_MEMORY */
    /* garbage, as device memory is: a read before a write shows */
    memset(m, 0x5a, n);
    *p = (devptr)(uintptr_t)m;
    return 0;
}
int cuMemFree_v2(devptr p) { free((void *)(uintptr_t)p); return 0; }
int cuStreamSynchronize(void *s) { (void)s; return 0; }
int cuMemsetD8Async(devptr d, unsigned char v, size_t n, void *s)
{
    (void)s;
    memset((void *)(uintptr_t)d, v, n);
    return 0;
}
int cuMemsetD2D32Async(devptr d, size_t pitch, unsigned v, size_t w, size_t h, void *s)
{
    (void)s;
    if (h > 1 && pitch < w * 4) return 1;   /* CUDA_ERROR_INVALID_VALUE */
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < w; c++) memcpy((char *)(uintptr_t)d + r * pitch + c * 4, &v, 4);
    return 0;
}
int cuMemcpy2DAsync_v2(const memcpy2d_t *c, void *s)
{
    (void)s;
    if (c->srcMemoryType != 2 || c->dstMemoryType != 2) return 1;
    if (c->Height > 1 && (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes)) return 1;
    for (size_t r = 0; r < c->Height; r++)
        memmove((char *)(uintptr_t)c->dstDevice + c->dstXInBytes + (c->dstY + r) * c->dstPitch,
                (const char *)(uintptr_t)c->srcDevice + c->srcXInBytes + (c->srcY + r) * c->srcPitch,
                c->WidthInBytes);
    return 0;
}
int cuMemcpyDtoDAsync_v2(devptr d, devptr src, size_t n, void *s)
{
    (void)s;
    memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)src, n);
    return 0;
}

/* ------------------------------------------------------------ cuBLAS */
static int blas_handle;
int cublasCreate_v2(void **h) { *h = &blas_handle; return 0; }
int cublasSetStream_v2(void *h, void *s) { (void)h; (void)s; return 0; }
int cublasSetMathMode(void *h, int m) { (void)h; (void)m; return 0; }
int cublasGetVersion_v2(void *h, int *v) { (void)h; *v = 120000; return 0; }
const char *cublasGetStatusString(int r) { return r == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED" : "fake cuBLAS error"; }

typedef struct { double re, im; } cx;

static cx load(const void *base, int type, long long i)
{
    cx v = {0, 0};
    switch (type) {
    case 0: v.re = ((const float *)base)[i]; break;                 /* CUDA_R_32F */
    case 1: v.re = ((const double *)base)[i]; break;                /* CUDA_R_64F */
    case 4: v.re = ((const float *)base)[2 * i]; v.im = ((const float *)base)[2 * i + 1]; break;
    case 5: v.re = ((const double *)base)[2 * i]; v.im = ((const double *)base)[2 * i + 1]; break;
    }
    return v;
}

static void store(void *base, int type, long long i, cx v)
{
    switch (type) {
    case 0: ((float *)base)[i] = (float)v.re; break;
    case 1: ((double *)base)[i] = v.re; break;
    case 4: ((float *)base)[2 * i] = (float)v.re; ((float *)base)[2 * i + 1] = (float)v.im; break;
    case 5: ((double *)base)[2 * i] = v.re; ((double *)base)[2 * i + 1] = v.im; break;
    }
}

/* column-major C = op(A) op(B), alpha 1, beta 0 (C is not read) */
int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                               const void *A, int at, int lda, long long sa, const void *B, int bt,
                               int ldb, long long sb, const void *beta, void *C, int ct, int ldc,
                               long long sc, int batch, int compute, int algo)
{
    (void)h; (void)alpha; (void)beta; (void)compute; (void)algo;
    if (at != bt || at != ct || (at != 0 && at != 1 && at != 4 && at != 5)) return 15;
    if (lda < (ta ? k : m) || ldb < (tb ? n : k) || ldc < m || lda < 1 || ldb < 1 || ldc < 1) return 7;
    for (int q = 0; q < batch; q++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                cx s = {0, 0};
                for (int l = 0; l < k; l++) {
                    cx a = load(A, at, q * sa + (ta ? l + (long long)i * lda : i + (long long)l * lda));
                    cx b = load(B, bt, q * sb + (tb ? j + (long long)l * ldb : l + (long long)j * ldb));
                    s.re += a.re * b.re - a.im * b.im;
                    s.im += a.re * b.im + a.im * b.re;
                }
                store(C, ct, q * sc + i + (long long)j * ldc, s);
            }
    return 0;
}

int cublasSscal_v2(void *h, int n, const float *a, float *x, int inc)
{
    (void)h;
    for (int i = 0; i < n; i++) x[(long long)i * inc] *= *a;
    return 0;
}
int cublasDscal_v2(void *h, int n, const double *a, double *x, int inc)
{
    (void)h;
    for (int i = 0; i < n; i++) x[(long long)i * inc] *= *a;
    return 0;
}

/* ------------------------------------------------------------- cuFFT */
#define MAXPLANS 64
static struct { int type, n, istride, idist, ostride, odist, batch, made, used; } plans[MAXPLANS];
static int nplans = MAXPLANS;

int cufftCreate(int *p)
{
    for (int i = 0; i < MAXPLANS; i++)
        if (!plans[i].used) {
            memset(&plans[i], 0, sizeof plans[i]);
            plans[i].used = 1;
            *p = i;
            return 0;
        }
    return 2;   /* CUFFT_ALLOC_FAILED: more plans alive than a cache should keep */
}
int cufftDestroy(int p)
{
    if (p < 0 || p >= MAXPLANS || !plans[p].used) return 1;
    plans[p].used = plans[p].made = 0;
    return 0;
}
int cufftSetStream(int p, void *s) { (void)p; (void)s; return 0; }
int cufftGetVersion(int *v) { *v = 11000; return 0; }
int cufftMakePlanMany(int p, int rank, int *n, int *inembed, int istride, int idist, int *onembed,
                      int ostride, int odist, int type, int batch, size_t *work)
{
    (void)inembed; (void)onembed;
    if (p < 0 || p >= nplans || rank != 1 || n[0] < 1 || batch < 1) return 4;   /* INVALID_VALUE */
    plans[p].type = type; plans[p].n = n[0]; plans[p].istride = istride; plans[p].idist = idist;
    plans[p].ostride = ostride; plans[p].odist = odist; plans[p].batch = batch; plans[p].made = 1;
    *work = 0;
    return 0;
}
int cufftPlanMany(int *p, int rank, int *n, int *ie, int is, int id, int *oe, int os, int od,
                  int type, int batch)
{
    size_t w;
    return cufftCreate(p) ? 2 : cufftMakePlanMany(*p, rank, n, ie, is, id, oe, os, od, type, batch, &w);
}

/* kind: 0 c2c, 1 r2c, 2 c2r; dbl: double precision; dir -1 forward */
static int exec(int p, void *in, void *out, int kind, int dbl, int dir)
{
    if (p < 0 || p >= nplans || !plans[p].made) return 1;   /* CUFFT_INVALID_PLAN */
    int want = kind == 0 ? (dbl ? 0x69 : 0x29) : kind == 1 ? (dbl ? 0x6a : 0x2a) : (dbl ? 0x6c : 0x2c);
    if (plans[p].type != want) return 3;   /* CUFFT_INVALID_TYPE */
    size_t calign = dbl ? 16 : 8;
    /* every array, real ones too, at an address aligned to its complex type */
    if ((uintptr_t)in % calign || (uintptr_t)out % calign) return 4;
    int n = plans[p].n, h = n / 2 + 1, npts = kind == 2 ? h : n, nout = kind == 1 ? h : n;
    int ti = kind == 1 ? (dbl ? 1 : 0) : (dbl ? 5 : 4), to = kind == 2 ? (dbl ? 1 : 0) : (dbl ? 5 : 4);
    cx *x = malloc(sizeof(cx) * (size_t)npts), *y = malloc(sizeof(cx) * (size_t)nout);
    if (!x || !y) { free(x); free(y); return 2; }
    const double tau = 6.283185307179586476925286766559;
    for (int b = 0; b < plans[p].batch; b++) {
        for (int t = 0; t < npts; t++)
            x[t] = load(in, ti, (long long)b * plans[p].idist + (long long)t * plans[p].istride);
        for (int k = 0; k < nout; k++) {
            cx s = {0, 0};
            if (kind == 2) {
                /* the Hermitian spectrum's real signal at point k */
                for (int j = 0; j < n; j++) {
                    cx v = j < h ? x[j] : (cx){x[n - j].re, -x[n - j].im};
                    if (j == 0 || (n % 2 == 0 && j == n / 2)) v.im = 0;
                    double a = tau * (double)j * k / n;
                    s.re += v.re * cos(a) - v.im * sin(a);
                }
            } else {
                for (int t = 0; t < n; t++) {
                    double a = dir * tau * (double)t * k / n;
                    s.re += x[t].re * cos(a) - x[t].im * sin(a);
                    s.im += x[t].re * sin(a) + x[t].im * cos(a);
                }
            }
            y[k] = s;
        }
        for (int k = 0; k < nout; k++)
            store(out, to, (long long)b * plans[p].odist + (long long)k * plans[p].ostride, y[k]);
    }
    free(x);
    free(y);
    if (kind == 2) {
        /* cuFFT's complex-to-real transforms overwrite their input */
        for (int b = 0; b < plans[p].batch; b++)
            for (int t = 0; t < npts; t++)
                store(in, ti, (long long)b * plans[p].idist + (long long)t * plans[p].istride,
                      (cx){NAN, NAN});
    }
    return 0;
}

int cufftExecC2C(int p, void *i, void *o, int d) { return exec(p, i, o, 0, 0, d); }
int cufftExecZ2Z(int p, void *i, void *o, int d) { return exec(p, i, o, 0, 1, d); }
int cufftExecR2C(int p, void *i, void *o) { return exec(p, i, o, 1, 0, -1); }
int cufftExecD2Z(int p, void *i, void *o) { return exec(p, i, o, 1, 1, -1); }
int cufftExecC2R(int p, void *i, void *o) { return exec(p, i, o, 2, 0, 1); }
int cufftExecZ2D(int p, void *i, void *o) { return exec(p, i, o, 2, 1, 1); }
