/* native.h -- internal interfaces of the native CPU backend.
 *
 * Data flows one way (each layer's header is its contract):
 *   passes/schedule.h     graph -> program: which nodes get a buffer, kernels
 *                         (fused loops) and eager steps, buffer lifetimes
 *   codegen/codegen.h     kernel -> C text (codegen_expr.c: one element's
 *                         scalar expression; codegen_loops.c: the loop nest
 *                         around it; codegen_c.c: kernel headers)
 *   toolchain/toolchain.h C text -> shared object (cc, dlopen); kernel hash
 *                         -> function, graph key -> program; TU key -> .so
 *   runtime_native.c      program + graph -> output arrays
 *   backend_native.c      nd_backend_native_run: the glue
 */
#ifndef ND_NATIVE_H
#define ND_NATIVE_H
#include "core/sb.h"
#include "passes/schedule.h"
#include "codegen/codegen.h"
#include "toolchain/toolchain.h"

/* runtime_alloc.c: uninitialized C-contiguous arrays; big ones from a
 * bounded pool of recycled blocks (no page faults on reuse) */
PyObject *nd_alloc_array(int ndim, const npy_intp *shape, int dtype);
/* The same laid out in memory order kperm (dims outermost first). */
PyObject *nd_alloc_array_order(int ndim, const npy_intp *shape, int dtype, const int8_t *kperm);
void nd_pool_clear(void);

/* runtime_debug.c: show a program just scheduled (backend.h, debugging);
 * never fails (a write error is a RuntimeWarning) */
void nd_debug_program(nd_graph *g, const nd_id *outs, int nout, nd_program *p, int nnew);
/* runtime_debug.c, the minifier (NUMDYN_REPRO_AFTER=compile|accuracy):
 * 1 compile, 2 accuracy, 0 off (or while the minifier itself runs). */
int nd_repro_mode(void);
/* Hand a failing graph to numdyn._minifier (native: the native results,
 * or NULL after a compile error, which stays raised). Never fails. */
void nd_repro_report(nd_graph *g, const nd_id *outs, int nout, PyObject *native);

/* runtime_native.c */
PyObject *nd_run_program(nd_program *p, nd_graph *g, const nd_id *outs, int nout);

#endif
