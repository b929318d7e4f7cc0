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
/* byte strides of the dense array of `shape` laid out in memory order
 * kperm (dims outermost first) */
void nd_order_strides(int ndim, const npy_intp *shape, npy_intp itemsize, const int8_t *kperm,
                      npy_intp *st);

/* runtime_debug.c: show a program just scheduled (backend.h, debugging);
 * nnew: its kernels compiled or loaded now, -1 while they compile in the
 * background, < -1 when the compile failed (the error stays raised). Never fails (a write error is a RuntimeWarning) */
void nd_debug_program(nd_graph *g, const nd_id *outs, int nout, nd_program *p, int nnew);
/* Before compiling a program that nd_debug_program will show: the
 * compiles this thread runs from now on log their command line and output
 * for its compile.txt (nd_cc_log); nd_debug_program ends the log. */
void nd_debug_compiles_begin(void);
/* runtime_debug.c, the minifier (NUMDYN_REPRO_AFTER=compile|accuracy):
 * 1 compile, 2 accuracy, 0 off (or while the minifier itself runs). */
int nd_repro_mode(void);
/* Hand a failing graph to numdyn._minifier (native: the native results,
 * or NULL after a compile error, which stays raised). Never fails. */
void nd_repro_report(nd_graph *g, const nd_id *outs, int nout, PyObject *native);

/* runtime_kargs.c: an operand's array as a kernel sees it (strides in
 * bytes; data may be a device address) */
typedef struct nd_karr {
    char *data;
    int ndim;
    npy_intp itemsize;
    const npy_intp *strides;
} nd_karr;
/* P[o] (operand o's base: a VIEW/REGION operand's offset applied), ints' (the ABI's I)
 * strides (element strides per operand and dim, frame operands' short-dim
 * strides) and n[d] (the extents) of kernel k over arrs[0..nin+nout) */
void nd_kernel_args(nd_graph *g, nd_kernel *k, const nd_karr *arrs, char **P, int64_t *ints, int64_t *n);
/* merge adjacent dims every operand walks alike (unless k->nomerge), then
 * ints[0..R) = n; returns the element count */
int64_t nd_kernel_merge(nd_kernel *k, int64_t *ints, int64_t *n);

/* backend_native.c: kernel k of p generated again with every run-time
 * variant (nd_cg_all_variants: its text left out one the sizes of this
 * call take, ND_ERR_VARIANT) and compiled, waited for. 0 with k->fn the new
 * kernel, 1 when it may not compile now (frozen: NumPy runs the graph),
 * -1 with an exception. */
int nd_native_all_variants(nd_program *p, nd_graph *g, nd_kernel *k);

/* runtime_native.c */
PyObject *nd_run_program(nd_program *p, nd_graph *g, const nd_id *outs, int nout);
/* an input array kernels can read (aligned, native byte order, element
 * strides; C-contiguous when need_c): a itself or a copy. New ref. */
PyObject *nd_usable_array(PyObject *a, int need_c);
/* What a kernel's error word E means, as NumPy would have it: 0 nothing,
 * 1 NumPy must run the graph (its error state acts on a flag, an integer
 * to a negative power, a data warning), -1 with an exception (a store
 * outside its output, no memory). */
int nd_kernel_errors(nd_graph *g, nd_kernel *k, int E);

#endif
