/* cuda_blas.h -- the CUDA backend's library externs (issue 16): matmul and
 * dot through cuBLAS, fft/ifft/rfft/irfft through cuFFT, on device memory,
 * enqueued on the run's stream. backend_cuda.c calls it for EXTERN nodes;
 * module init registers its test hooks (nd_cuda_blas_init).
 *
 * libcublas and libcufft are dlopen'ed on first use, never linked (where
 * they are looked for is numdyn/_cuda_libs.py's decision: NUMDYN_CUBLAS /
 * NUMDYN_CUFFT, PyPI's nvidia-* wheels, CUDA_HOME, the loader's path); when
 * one is missing the call raises CudaError naming what to install.
 *
 * The caller's side, per EXTERN node id of a graph:
 *   kind = nd_cuda_lib_kind(g, id)     ND_CUDA_LIB_NONE: not a library extern
 *   nd_cuda_lib_dtypes(g, id, in, &o)  the dtypes the inputs must have (the
 *                                      caller casts first, as NumPy's loop
 *                                      does) and the dtype written (the caller
 *                                      casts to the node's dtype after when
 *                                      they differ: float16 irfft)
 *   nd_cuda_lib_accepts(g, id, k, v)   whether input k can be read in place
 *                                      with view v's strides (else the caller
 *                                      passes a C-contiguous copy)
 *   nd_cuda_lib_run(g, id, in, out, env)
 * Nothing here synchronizes: errors of the enqueue are raised at once,
 * errors of the work surface at the runtime's next synchronization.
 */
#ifndef ND_CUDA_BLAS_H
#define ND_CUDA_BLAS_H
#include "core/npy.h"
#include "graph/graph.h"
#include <stdint.h>

/* A device array: element [0, ..., 0] at ptr, strides in bytes (>= 0). */
typedef struct {
    uint64_t ptr;                    /* CUdeviceptr */
    int dtype;                       /* NPY_* */
    int ndim;
    npy_intp shape[ND_MAXDIMS];
    npy_intp strides[ND_MAXDIMS];
} nd_cuda_view;

/* What the runtime lends a library call: its stream and scratch memory.
 * release(ctx, p) is called right after the work using p was enqueued on
 * stream: the allocator must be stream-ordered (reuse p only for work
 * enqueued later on the same stream, or after synchronizing). */
typedef struct {
    void *stream;                    /* CUstream; NULL: the legacy default stream */
    int (*alloc)(void *ctx, size_t nbytes, uint64_t *ptr);  /* 0, or -1 + exception */
    void (*release)(void *ctx, uint64_t ptr);
    void *ctx;
} nd_cuda_libenv;

enum { ND_CUDA_LIB_NONE = 0, ND_CUDA_LIB_MATMUL, ND_CUDA_LIB_DOT, ND_CUDA_LIB_FFT };

/* Pure (no CUDA needed): which library extern node id is. */
int nd_cuda_lib_kind(const nd_graph *g, nd_id id);
/* in_dtype[k] for k < nextra, *out_dtype; 0, or -1 + NotImplementedError
 * naming the case (integer/bool matmul) or TypeError as NumPy's. */
int nd_cuda_lib_dtypes(const nd_graph *g, nd_id id, int *in_dtype, int *out_dtype);
/* 1 when input k may be passed as v (dtype already in_dtype[k]). */
int nd_cuda_lib_accepts(const nd_graph *g, nd_id id, int k, const nd_cuda_view *v);
/* Enqueue the node's work: in[k] for extra[k], out allocated by the caller
 * (the node's shape, dtype out_dtype, C-contiguous). 0, or -1 + exception. */
int nd_cuda_lib_run(const nd_graph *g, nd_id id, const nd_cuda_view *in, const nd_cuda_view *out,
                    const nd_cuda_libenv *env);

/* ---- the two libraries, below the node layer (the Python hooks call them) */

/* out = a @ b (dot: np.dot's rule for N-d operands); a, b, out of one
 * dtype: float16/32/64, complex64/128 (float16 accumulates in float32 as
 * NumPy's loop does). 1 when an operand's layout cuBLAS cannot read. */
int nd_cuda_matmul(int dot, const nd_cuda_view *a, const nd_cuda_view *b, const nd_cuda_view *out,
                   const nd_cuda_libenv *env);

/* 1-d transforms along `axis` of a C-contiguous input; out C-contiguous.
 * norm: 0 "backward", 1 "ortho", 2 "forward"; fct_dtype: the real dtype
 * NumPy computes the norm factor in (of the caller's input before any
 * cast: float16 input -> NPY_HALF). */
enum { ND_FFT_FWD = 0, ND_FFT_INV, ND_FFT_R2C, ND_FFT_C2R };
int nd_cuda_fft(int kind, npy_intp n, int axis, int norm, int fct_dtype, const nd_cuda_view *in,
                const nd_cuda_view *out, const nd_cuda_libenv *env);

/* The gemm a matmul/dot becomes (pure; tests/test_cuda_blas.py runs it on
 * the CPU through _cuda_gemm_plan). cuBLAS is column-major: C = A @ B
 * row-major is C^T = B^T A^T, so the call's first operand is B's memory
 * and its second A's (the row-major trick). Element units. */
#define ND_GEMM_MAXLOOP ND_MAXDIMS
typedef struct {
    int dtype;                         /* of A, B, C */
    int op1, op2;                      /* 0 N, 1 T: first operand (B's memory), second (A's) */
    int64_t m, n, k;                   /* cuBLAS's: C^T is m x n */
    int64_t ld1, ld2, ldc;
    int64_t batch, bs1, bs2, bsc;      /* one strided-batched call */
    int nloop;                         /* calls: loops around it, outermost first */
    int64_t loop[ND_GEMM_MAXLOOP], ls1[ND_GEMM_MAXLOOP], ls2[ND_GEMM_MAXLOOP],
        lsc[ND_GEMM_MAXLOOP];
    int zero;                          /* k == 0: the output is zeros, no gemm */
    int empty;                         /* nothing to compute */
} nd_gemm_plan;
/* 0, 1 (a layout cuBLAS cannot read: copy that operand), -1 + exception. */
int nd_gemm_plan_make(int dot, const nd_cuda_view *a, const nd_cuda_view *b,
                      const nd_cuda_view *out, nd_gemm_plan *p);

/* The cuFFT plan a 1-d transform becomes (pure; _cuda_fft_plan). The data
 * is (outer, len, inner) C-contiguous; one plan of `batch` transforms
 * (stride/dist in elements), run `nloop` times at offsets i*loop_in /
 * i*loop_out. */
typedef struct {
    int64_t outer, len_in, inner, n, len_out;   /* len_out: n, n//2+1 (r2c) */
    int64_t nin;                   /* the input points a transform reads: min(len_in, n or n//2+1) */
    int pad;                       /* input must be copied (zero-padded / c2r) into a scratch of
                                      (outer, pad_len, inner) */
    int64_t pad_len;
    int opad;                      /* the transforms write a scratch of (outer, opad_len, inner),
                                      copied to the output after: cuFFT wants real arrays at
                                      offsets aligned to their complex type */
    int64_t opad_len;
    int64_t batch, istride, idist, ostride, odist, inembed, onembed;
    int64_t nloop, loop_in, loop_out;
    double scale;                  /* 1.0: none */
    int empty;
} nd_fft_plan;
int nd_fft_plan_make(int kind, npy_intp n, int axis, int norm, int fct_dtype, int ndim,
                     const npy_intp *shape, nd_fft_plan *p);

int nd_cuda_blas_init(PyObject *module);   /* _cuda_* hooks; at module init */
#endif
