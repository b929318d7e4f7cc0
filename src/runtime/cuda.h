/* cuda.h -- the CUDA runtime's contract (cuda_loader.c, cuda_source.c).
 *
 * libnvrtc and libcuda are dlopen'ed on first use, never linked: numdyn
 * builds, imports and runs its CPU backends on machines without CUDA.
 * Every failure of NVRTC or the driver becomes a Python exception (class
 * numdyn._C.CudaError, a RuntimeError) whose message says what to install
 * or check.
 */
#ifndef ND_CUDA_H
#define ND_CUDA_H
#include "core/npy.h"

/* registers numdyn._C's _cuda_* functions and CudaError; 0 or -1 + exc */
int nd_cuda_init(PyObject *module);

/* NVRTC: compile CUDA C `src` (with `nh` headers name[i] -> text[i]) for
 * architecture `arch` ("compute_80": PTX, "sm_90": a cubin). Returns 0 and
 * sets *log (new ref, NVRTC's log) and *size (bytes of PTX/cubin); -1 with
 * CudaError carrying the log when it does not compile, or when NVRTC cannot
 * be loaded. */
int nd_cuda_nvrtc_compile(const char *src, const char *arch, PyObject **log, size_t *size);

/* cuda_source.c: _cuda_kernels(graph), _cuda_prelude() (called by nd_cuda_init) */
int nd_cuda_source_init(PyObject *module);

extern PyObject *nd_CudaError;
#endif
