/* backend.h -- how a standalone graph (see nd_graph_extract) is run.
 *
 * A backend takes a graph whose INPUT nodes hold ndarrays and the ids of the
 * nodes to compute, and returns a list of ndarrays (new ref), one per out, or
 * NULL with an exception set. 0-d results are 0-d arrays; turning them into
 * NumPy scalars is the shim's business.
 */
#ifndef ND_BACKEND_H
#define ND_BACKEND_H
#include "graph/graph.h"

/* The built-in backends, one table: name -> run. Every place that runs a
 * standalone graph (a flush, a replayed call) runs nd_backends[kind].run;
 * the only place a name is turned into a kind is nd_backend_find.
 * options: the compile options dict (or NULL); backends may ignore it. */
typedef PyObject *(*nd_backend_run_fn)(nd_graph *g, const nd_id *outs, int nout,
                                       PyObject *options);
typedef struct nd_backend {
    const char *name;
    nd_backend_run_fn run;
} nd_backend;
enum { ND_BACKEND_EAGER = 0, ND_BACKEND_NATIVE = 1, ND_BACKEND_CUDA = 2, ND_BACKEND_BUILTIN = 3 };
extern const nd_backend nd_backends[ND_BACKEND_BUILTIN];
/* Kind of a built-in backend name ("aot_eager" is "eager" until autodiff
 * lands), or -1 (no exception) when the name is none of them. */
int nd_backend_find(PyObject *name);

/* Frozen mode (numdyn.run, per thread): the native backend runs what its
 * caches hold -- a cached program, kernels from the memory or disk cache --
 * and runs a graph it would have to compile op by op with NumPy instead
 * (backend_native.c). Set by the tracer's control (trace_control.c). */
extern _Thread_local int nd_backend_frozen;
/* numdyn.config.background_compile: units not in the cache compile in the
 * background, a call waiting for them within its budget (captured loops
 * ask for theirs through it too) */
int nd_backend_background(void);

/* Debugging (runtime_debug.c): a program the native backend schedules is
 * written under $NUMDYN_DEBUG_DIR/<nd_debug_tag or "graphs">/program_<key>/
 * (graph.txt: the captured graph, one op a line; schedule.txt: the fused
 * steps; kernel_<i>.c; compile.txt: compiler, flags, identity, each compile's
 * command line and output), and with
 * nd_backend_log_code its kernels' C goes to nd_backend_log("output_code",
 * text) (NUMDYN_LOGS=output_code). The tracer sets the tag (the compiled
 * function and program) and the log function. */
extern _Thread_local const char *nd_debug_tag;
extern void (*nd_backend_log)(const char *kind, PyObject *msg);
extern int nd_backend_log_code;
int nd_debug_wanted(void);

/* Eager: op by op with NumPy (backend_eager.c). */
PyObject *nd_backend_eager_run(nd_graph *g, const nd_id *outs, int nout);
/* Evaluate one node with NumPy from its inputs' arrays (borrowed, in order
 * in[0..nin-1], or extra[] for EXTERN). New ref. Used by the eager backend,
 * Graph.__call__, and the native runtime for nodes it does not compile. */
PyObject *nd_eval_node(nd_graph *g, nd_id id, PyObject *const *inputs);
/* nd_eval_node into vals[id] (new ref; vals has g->n entries), except that
 * a multi-output extern (graph.h, EXTERN with aux >= 0) calls NumPy once for
 * all its outputs: every other output j of the same call with vals[j] NULL
 * and (want == NULL || want[j]) is stored too. Backends evaluate through it
 * (and skip a node whose vals entry is already set) so svd, qr, eigh,
 * histogram... run once per run. The two outputs of a divmod call (UFUNC
 * nodes one after the other) likewise, when want is given: NumPy warns
 * once. 0, or -1 with an exception set (what was stored stays in vals,
 * owned by the caller). */
int nd_eval_extern_group(nd_graph *g, nd_id id, PyObject *const *inputs, PyObject **vals,
                         const char *want);
/* Nonzero when b is another output of a's NumPy call (computed or not);
 * _sibling: one not yet computed. */
int nd_extern_same_call(const nd_node *a, const nd_node *b);
int nd_extern_sibling(const nd_node *a, const nd_node *b);

/* ---- NumPy's order of events, across a run of many operations ----------
 * NumPy runs a function's operations one at a time; a run computes many at
 * once. Two per-thread side channels between the caller of one run
 * (trace_flush.c, trace_replay.c) and the built-in backends keep what NumPy
 * does at one operation:
 *
 * Scalar stores. arr[i] = x (a basic index, or arr.fill(x)) where x is a
 * NumPy (or Python) scalar and arr a signed integer array converts x (a
 * complex's real part) as Python's int() does -- ValueError
 * "cannot convert float NaN to integer", OverflowError for infinity, past
 * C long, or out of the array's bounds -- where an array value would cast.
 * The caller lists such stores of the graph it runs as pairs (the first
 * node of the store -- its cast to the array's dtype --, the scalar
 * operand; an output or INPUT of the run); a backend raises at the first
 * failing one in operation order, before the store's nodes run
 * (nd_scalar_store_check with that node's dtype). Custom backends do not
 * see the list.
 *
 * The failed operation. After a run raised: the node whose operation
 * raised (ND_NONE when the failure was not one operation's: an interrupt,
 * memory, a custom backend), and whether it raised before making its
 * writes (a scalar store) or after them (a ufunc's out= holds its results
 * when NumPy raises for its error state). Reset by each built-in run. */
extern _Thread_local const nd_id *nd_scalar_stores;  /* 2 * nd_nscalar_stores ids */
extern _Thread_local int nd_nscalar_stores;
/* out.flat[flat[i]] = vals[i] in order (the last write to a repeated index
 * wins, as NumPy's): out C-contiguous and writeable, flat int64-convertible
 * indices, vals converted to out's dtype, one per index. With saved, the
 * elements overwritten are first copied into a new array (*saved), so that
 * nd_scatter_into(out, flat, *saved, NULL) puts them back. 0, or -1 with an
 * exception (an index out of range writes nothing). */
int nd_scatter_into(PyArrayObject *out, PyObject *flat, PyObject *vals, PyObject **saved);

/* Donated inputs. INPUT nodes of the graph whose arrays nothing outside
 * the run reads again (the flush gives them up, trace_flush.c): the native
 * backend may write a SETITEM's region into such an array instead of
 * copying it (nd_program.take_in). It restores what it overwrote when the
 * run fails or NumPy runs the graph again, so the graph's inputs are as
 * given then. Read and cleared by the run that starts next on the thread
 * (a nested run sees none). */
extern _Thread_local const nd_id *nd_donated;
extern _Thread_local int nd_ndonated;
/* The program-cache key (guards.h nd_guard_graph_key) of the graph the
 * next native run is given, when its caller already knows it: a replayed
 * entry runs the same graph on arguments of the same guard keys every
 * call, so hashing its nodes again (a fifth of a replayed call of a few
 * thousand nodes) is spared. 0: the run hashes the graph. Read and cleared
 * by the native run that starts next on the thread; a caller that sets it
 * for another backend clears it itself. */
extern _Thread_local uint64_t nd_graph_key_hint;
/* NumPy's graph of the next native run. The flush and replay run a graph
 * whose common subexpressions are computed once (passes/cse.h), where NumPy
 * computed the value at each of its operations and warned at each: when the
 * kernels raised flags np.errstate acts on, the native run re-runs this
 * graph and its outputs (the same number, in the same order) with NumPy
 * instead of its own, and sets nd_reran (nd_failed_node is then this
 * graph's id). Read and cleared by the native run that starts next on the
 * thread. */
extern _Thread_local nd_graph *nd_numpy_graph;
extern _Thread_local const nd_id *nd_numpy_outs;
extern _Thread_local int nd_reran;
extern _Thread_local nd_id nd_failed_node;
extern _Thread_local int nd_failed_before;
/* Whether storing the one-element ndarray `value` into an array of signed
 * integer `dtype` raises under NumPy's scalar conversion: 0 fine, 1 raises
 * (then, when raise_ is nonzero, with NumPy's own exception set: the store
 * is made by NumPy on a one-element array). */
int nd_scalar_store_check(PyObject *value, int dtype, int raise_);
/* The scalar store pairs of g (see above) as a char per node: nonzero at
 * each store node; value_of[store] its scalar operand. NULL with no
 * exception when the run has none; PyMem, the caller frees. */
char *nd_scalar_store_marks(nd_graph *g, nd_id **value_of);

/* Outputs whose node asks for a memory order (ND_F_KORDER, graph.h) are
 * replaced in `list` (one array per out) by copies in that order unless
 * already so laid out: NumPy lays out a ufunc of Fortran arrays in Fortran
 * order, and what the caller gets must match (runtime_alloc.c). 0 / -1. */
int nd_outputs_in_order(nd_graph *g, const nd_id *outs, int nout, PyObject *list);

/* Native: fused C kernels (src/backend_native.c and friends). Falls back to
 * nd_eval_node for nodes it cannot compile. */
PyObject *nd_backend_native_run(nd_graph *g, const nd_id *outs, int nout,
                                PyObject *options);
int nd_native_init(PyObject *module);
/* CUDA: the same program on the GPU (backend_cuda.c, runtime/cuda.h).
 * "native" runs it too while numdyn.device("cuda") is active. */
PyObject *nd_backend_cuda_run(nd_graph *g, const nd_id *outs, int nout, PyObject *options);

#include "core/counters.h"
#endif
