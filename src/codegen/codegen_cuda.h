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
/* A reduction kernel whose rows may be split over several blocks (two
 * stages: each block writes its partial per reduction, the row's last
 * block folds them in order): the number of partials a block writes (one
 * per reduction), 0 when k has no split form (moments, argmax/argmin, not
 * a reduction). Its kernel takes the split when launched with at least two
 * blocks per row (gridDim.x >= 2 * rows) and then reads P[3 * nops], a
 * scratch area of ND_SPLIT_SLOT * slots * gridDim.x bytes for the
 * partials, and P[3 * nops + 1], an int per row, zero before the launch
 * and left zero by it. */
int nd_cuda_split_slots(nd_graph *g, const nd_kernel *k);
/* The text every CUDA unit starts with: kernels/nd_cuda.h. NULL + exc. */
const char *nd_cuda_prelude(void);
#endif
