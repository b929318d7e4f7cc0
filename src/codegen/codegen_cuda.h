/* codegen_cuda.h -- a scheduled kernel (passes/schedule.h) -> CUDA C.
 *
 * The same kernels, the same ABI as the C generator (codegen.h):
 *   extern "C" __global__ void nd_cuda_<hash>(char *const *P, const int64_t *I,
 *                                             const nd_sv *S, int *E)
 * with P, I, S in device memory, launched with ND_THREADS threads a block
 * (kernels/nd_cuda.h) and any grid: every loop is grid-stride. Per-element
 * code is codegen_expr.c's (the target-independent emitter), read through
 * kernels/nd_cuda.h's device helpers; the loop structure is this file's.
 */
#ifndef ND_CODEGEN_CUDA_H
#define ND_CODEGEN_CUDA_H
#include "core/sb.h"
#include "passes/schedule.h"

/* Append kernel k's CUDA C to out; *hash (may be NULL) gets its name's
 * hash. 0, or -1 with NotImplementedError naming a kernel form that has no
 * CUDA version yet (or another exception). */
int nd_cuda_kernel(nd_graph *g, const nd_kernel *k, nd_sb *out, uint64_t *hash);
/* The text every CUDA unit starts with: kernels/nd_cuda.h. NULL + exc. */
const char *nd_cuda_prelude(void);
#endif
