/* cuda_lib_internal.h -- what cuda_blas.c, cuda_fft.c and cuda_extern.c
 * share (private to them; the contract is cuda_blas.h). */
#ifndef ND_CUDA_LIB_INTERNAL_H
#define ND_CUDA_LIB_INTERNAL_H
#include "cuda_blas.h"
#include "cuda.h"

/* dlopen'ed library `which` ("cublas", "cufft", "cuda"): the handle, or
 * NULL + CudaError saying what to install. The candidates come from
 * numdyn._cuda_libs (Python decides where to look). */
void *nd_cuda_lib_open(const char *which);

/* Driver memory operations enqueued on env->stream; 0 or -1 + CudaError. */
int nd_cuda_lib_memset0(const nd_cuda_libenv *env, uint64_t dst, size_t bytes);
/* height rows of width bytes, row r from src + r*spitch to dst + r*dpitch */
int nd_cuda_lib_copy2d(const nd_cuda_libenv *env, uint64_t dst, size_t dpitch, uint64_t src,
                       size_t spitch, size_t width, size_t height);
/* height rows of width32 zero 32-bit words at dst + r*pitch */
int nd_cuda_lib_zero2d32(const nd_cuda_libenv *env, uint64_t dst, size_t pitch, size_t width32,
                         size_t height);

/* x[i * inc] *= alpha for i < count, in place (cuBLAS scal; real dtype
 * FLOAT or DOUBLE; inc 2 over a complex array's imaginary parts conjugates) */
int nd_cuda_blas_scale(const nd_cuda_libenv *env, int real_dtype, uint64_t x, int64_t count,
                       int inc, double alpha);

/* CudaError "numdyn.cuda: <what> failed: <why>" */
int nd_cuda_lib_fail(const char *what, const char *why, int code);

/* the Python hooks of each file (registered by nd_cuda_blas_init) */
extern PyMethodDef nd_cuda_blas_methods[], nd_cuda_fft_methods[];
/* cuda_extern.c: the C type nd_cuda.h names for a NumPy dtype in device
 * code ("int8_t", "nd_half", "nd_c64"...), or NULL */
const char *nd_cu_ctype(int dt);

#endif
