/* trace.h -- the tracer: per-thread trace state, the lazy proxy type, flush.
 *
 * Owned by src/trace_*.c. The shim (numpy_shim/) builds graph nodes through
 * this interface only; it never touches nd_trace or proxy internals.
 *
 * Views and mutation are functionalized here: a proxy is (storage, affine
 * view of that storage). Reading a proxy yields the node of the storage's
 * latest version seen through the view; writing a proxy appends a SETITEM to
 * the storage. Storages that came from caller arrays are written back at
 * flush/return.
 */
#ifndef ND_TRACE_H
#define ND_TRACE_H
#include "graph/graph.h"

typedef struct nd_trace nd_trace;

/* The trace active on this thread, or NULL when not tracing. */
nd_trace *nd_trace_current(void);
/* NumPy's error state (np.errstate / np.seterr) while tracing: the ops of a
 * graph run under the state they were traced under. Called at the entry of
 * each traced NumPy operation (not nested in another): when the state
 * changed since the pending ops were traced, they are flushed under theirs
 * first (trace_flush.c). 0 / -1. */
int nd_trace_errstate_sync(nd_trace *t);
extern int nd_trace_op_depth;  /* traced NumPy operations in progress */
/* This call did something Python-visible at trace time that a replayed call
 * (which skips the Python code) would not repeat -- e.g. NumPy's
 * ComplexWarning, given once per cast: the call is not recorded for replay,
 * so every call traces and gives it again. */
void nd_trace_not_replayable(nd_trace *t);
/* The trace depended on fn(arr, param) == expect, a value of the contents
 * of arr, a caller's array (np.bincount's output length from its input's
 * largest element): a replayed call runs the recorded graph only where
 * fn of the argument in arr's place gives expect again, else it traces.
 * fn returns -1 where the value is not defined (no exception set). An arr
 * that is not an argument of the call makes it not replayable. 0 / -1. */
typedef int64_t (*nd_data_guard_fn)(PyArrayObject *arr, int64_t param);
int nd_trace_data_guard(nd_trace *t, PyObject *arr, nd_data_guard_fn fn, int64_t param,
                        int64_t expect);
/* Graph runs in progress on this thread (a flush, a replay, a gradient):
 * warnings given inside one come from the graph's own ops, which a replay
 * runs again; a warning given outside one while tracing came from Python
 * code a replay skips (nd_trace_warning_shown). */
extern _Thread_local int nd_graph_run_depth;
/* A warning is being shown (the warnings module's _showwarnmsg hook): while
 * tracing and outside a graph run, the call is not replayable. 0 / -1.
 * (Running the pending work first, for NumPy's warning order, would also
 * run it in the middle of the tracer's own operations that warn -- a
 * complex store's ComplexWarning -- and is not done.) */
int nd_trace_warning_shown(void);
/* warnings.catch_warnings is entered or left (the Python hook calls this
 * before the filters change): pending ops run now; 0 / -1 (trace_flush.c) */
int nd_trace_warnings_boundary(void);
nd_graph *nd_trace_graph(nd_trace *t);
/* A traced operation made graph nodes first.. that may raise when they run
 * (a LinAlgError, FloatingPointError under np.errstate "raise"...): if the
 * user's code would catch an exception raised now (a try or with block),
 * the pending graph runs now, so the error is raised inside that block
 * (trace_handlers.c). Called after each traced NumPy operation. 0 / -1. */
int nd_trace_settle(nd_trace *t, nd_id first);

/* Proxy type (numdyn._C.LazyArray). */
extern PyTypeObject NdProxy_Type;
static inline int nd_proxy_check(PyObject *o) { return Py_IS_TYPE(o, &NdProxy_Type); }

/* New proxy owning a fresh storage whose value is node `id` (new ref).
 * is_scalar: the value stands for what NumPy returns as a NumPy scalar
 * (a full reduction, an op on NumPy scalars only); it is 0-d and is handed
 * back to Python code as a NumPy scalar when materialized. */
PyObject *nd_proxy_wrap(nd_trace *t, nd_id id, int is_scalar);
int nd_proxy_is_scalar(PyObject *proxy);
/* NumPy 2's ValueError for copy=False where a copy cannot be avoided; NULL */
PyObject *nd_err_copy_unavoidable(void);
/* np.memmap arguments (trace_compile.c): the proxy of a memmap argument
 * is traced through the operations whose NumPy result is not a memmap
 * (ufuncs, operators, the reductions and functions the shim lists: their
 * results are plain arrays or scalars, as under NumPy); any other
 * operation -- views, indexing, copies, astype, unknown attributes --
 * runs on the memmap object itself, a recorded graph break. 1 when o (or
 * an item of a list/tuple o, two levels deep) is such a proxy. */
int nd_proxy_has_memmap(PyObject *o);
/* Plain ndarray subclasses (trace_subclass.c): an argument of a subclass
 * that overrides nothing NumPy dispatches on (no __array_wrap__,
 * __array_ufunc__, __array_function__, operators or ndarray methods;
 * __array_finalize__, __array_priority__, attributes and methods of its
 * own are fine) is a *tagged* proxy: each traced operation on the list
 * checked against NumPy gives what NumPy gives -- a tagged result whose
 * __array_finalize__ ran with NumPy's `obj`, or a plain one -- and any
 * other operation runs with NumPy on the subclass object (a recorded
 * break). 1 when o is a live tagged proxy. */
int nd_proxy_sub(PyObject *o);
/* Sizes written as constants in the traced code that fix a dim marked
 * dynamic (trace_pins.c): a shim op's parsed arguments before it runs
 * (x.reshape(4, -1): ConstraintViolationError) and after (np.zeros(5):
 * its dims count as constants for the graph's pin check). 0 / -1. */
int nd_trace_pins_pre(nd_trace *t, const char *name, PyObject **argv);
int nd_trace_pins_op(nd_trace *t, const char *name, PyObject **argv, PyObject *r);
/* a tagged proxy among args (and items of list/tuple args) or kwargs */
int nd_sub_in(PyObject *args, PyObject *kwargs);
/* np.<name>(*args, **kwargs) with a tagged operand: inner(ctx) is the
 * shim's traced version, numpy_func NumPy's (for a break) */
typedef PyObject *(*nd_sub_inner)(void *ctx);
PyObject *nd_sub_function(const char *name, PyObject *numpy_func, PyObject *args,
                          PyObject *kwargs, nd_sub_inner inner, void *ctx);
/* Node holding the proxy's current value (appends VIEW nodes as needed).
 * ND_NONE + exception on error. */
nd_id nd_proxy_read(PyObject *proxy);
/* Under fullgraph=True, r (a fresh gather result, base[key]) stands for
 * NumPy's view of base at an index only the graph computes
 * (`m[np.argmax(v)]`): r gets base's .base and read-only flag; a write into
 * r, or into base while r's value lives, is a value read (GraphBreakError)
 * since the gather would not see it; leaving the function, r is NumPy's
 * view of base's array (nd_proxy_base_array). 0 marked; 1 not applicable (not fullgraph, or base's
 * memory reachable outside the trace): the caller computes the index
 * instead; -1 error. */
int nd_proxy_dynamic_view(PyObject *r, PyObject *base, PyObject *key);
/* whether base[k] may be taken so (fullgraph=True, base's memory the trace's own) */
int nd_proxy_dynamic_view_ok(PyObject *base);
/* dtype / ndim / shape of the proxy's current value, without new nodes. */
int nd_proxy_dtype(PyObject *proxy);
int nd_proxy_ndim(PyObject *proxy);
const npy_intp *nd_proxy_shape(PyObject *proxy);
/* Replace the proxy's whole region by `value` (broadcast to the proxy's
 * shape; the caller has already cast it to the proxy's dtype and checked
 * casting rules). Every view of the same storage sees the new value. */
int nd_proxy_write(PyObject *proxy, nd_id value);
/* nd_proxy_write of a lazy NumPy scalar of `scalar_dtype` by a basic index
 * or fill() (`value`: it cast to the proxy's dtype). Where NumPy's int() of
 * the scalar may refuse (a signed integer array), the write is a SETITEM
 * marked ND_F_SCALAR_STORE, checked as that int() when the graph runs
 * (runtime/backend.h, scalar stores). */
int nd_proxy_write_scalar(PyObject *proxy, nd_id value, int scalar_dtype);
/* Whether NumPy's int() of a scalar of dtype vt may refuse it, or its value
 * may not fit, when it is stored into an array of dtype dt. */
int nd_scalar_store_may_refuse(int vt, int dt);
/* A view of `base` (new ref): element i of the view is base's C-order flat
 * element off + sum i_d * strides[d] (element units). Shares base's storage,
 * so writes through the view are seen by base and vice versa. */
PyObject *nd_proxy_view(PyObject *base, int ndim, const npy_intp *shape,
                        npy_intp off, const npy_intp *strides);

/* Turn any operand into a node of the current trace: a proxy (its current
 * value), an ndarray (INPUT node), a NumPy scalar (strong SCALAR), a Python
 * bool/int/float/complex (weak SCALAR, provisional dtype: bool/int64/float64/
 * complex128 with ND_F_WEAK set: the shim retypes it per NEP 50), or a
 * sequence (converted with np.asarray). ND_NONE + exception on error. */
nd_id nd_trace_lift(nd_trace *t, PyObject *obj);

/* Materialize a proxy: compute what its value needs (plus pending writes the
 * caller could see) with the trace's backend and return a real ndarray
 * (new ref). If `reason` is not NULL this is a graph break: it is recorded
 * with the user's file/line (and raises GraphBreakError under fullgraph). */
PyObject *nd_trace_materialize(PyObject *proxy, const char *reason);
/* A value read: the proxy's value computed for code outside the graph with
 * no graph break recorded (an element NumPy hands to Python, a method
 * numdyn runs with NumPy whose break is recorded by the caller). `what`
 * names the construct: explain lists it under Value Reads and, since the
 * graph so far runs (the function is then more than one graph), under
 * fullgraph=True a live read raises GraphBreakError naming it and the
 * user's line. NULL what: a generic description. */
PyObject *nd_trace_read(PyObject *proxy, const char *what);
/* The value of a proxy for NumPy code the caller then records as a graph
 * break with `reason` (nd_trace_record_break / nd_trace_fallback_call):
 * no Value Reads record; under fullgraph=True the GraphBreakError with
 * that reason is raised here, before the graph so far runs. */
PyObject *nd_trace_break_value(PyObject *proxy, const char *reason);

/* Objects that stand for arrays without being proxies (numpy_shim's masked
 * reads, shim_masked.c): while *nd_trace_masked_live is nonzero, a value
 * leaving the graph (a return, a NumPy call outside it) has each such
 * object replaced by resolve(o), a proxy or array (new ref); resolve
 * returns NULL with no exception for anything else. Set by the shim. */
extern Py_ssize_t *nd_trace_masked_live;
extern PyObject *(*nd_trace_masked_resolve)(PyObject *o);

/* Call the real NumPy `func` with every proxy in args/kwargs (nested in
 * tuples, lists, dicts) materialized: the fallback for functions the shim does
 * not cover. Records a graph break with `reason`. Result is returned as is. */
PyObject *nd_trace_fallback_call(PyObject *func, PyObject *args,
                                 PyObject *kwargs, const char *reason);

/* A break ran NumPy on `arr`, the materialized value of `proxy` (or a
 * tuple/list/dict of them: arguments before and after materializing), and
 * got `r` (an array, or a tuple/list of them): where r shares arr's memory
 * (x.view(dtype), a window view), proxy's storage becomes arr's, so later
 * writes to either are seen by the other, as NumPy's views are. */
int nd_trace_adopt_alias(PyObject *proxy, PyObject *arr, PyObject *r);

/* ndarray.resize of a traced array (trace_resize.c): the array object
 * changes in place, as under NumPy -- the caller's own array for an
 * argument; None, or NULL with NumPy's error. */
PyObject *nd_trace_resize(PyObject *proxy, PyObject *args, PyObject *kwargs);

/* Record a graph break (reason + user location) without materializing.
 * Returns -1 with GraphBreakError set under fullgraph. */
int nd_trace_record_break(nd_trace *t, const char *reason);

/* ---- additions (tracer) ---------------------------------------------
 *
 * View semantics, exactly: a proxy is (storage, off, strides[ndim],
 * shape[ndim]); element i of the proxy is the storage's C-order flat element
 * off + sum_d i_d * strides[d]. nd_proxy_view(base, ndim, shape, off, s)
 * takes (off, s) over *base's* C-order flat index and composes: off and
 * each s[d] are split into per-dimension steps over base's shape (mixed
 * radix; the split must keep every index inside base's dims -- true for
 * slicing, transpose, broadcasting (0 strides), diagonal, flips, and
 * no-copy reshapes), then mapped through base's own per-dim strides. A map
 * that is not expressible per dimension raises SystemError (a reshape that
 * NumPy would copy must be a new value, not a view). A view whose map is
 * the identity reads the storage's version node directly (no VIEW node).
 *
 * Proxies outlive their trace safely: a proxy used after its compiled call
 * returned (or from another thread) computes its value once ("detaches")
 * and then behaves as that concrete ndarray. */

/* Nonzero when the proxy belongs to the trace active on this thread. */
int nd_proxy_live(PyObject *proxy);
/* The concrete ndarray behind a proxy, without graph work, when its
 * storage's current version is already concrete (an untouched caller array,
 * or a value computed by an earlier flush): a NumPy view of it through the
 * proxy's map (the array itself for an identity map: `return a` keeps
 * identity). New ref; NULL with NO exception when the storage has pending
 * lazy work (use nd_trace_materialize(p, NULL) then); NULL + exception on
 * error. Used for element reads (a[i, j] -> NumPy scalar, no flush). */
PyObject *nd_proxy_base_array(PyObject *proxy);
/* An element read a[i, j] (off: the element's C-order flat index in
 * proxy's own shape). While the call is being recorded for replay the
 * value must stay out of Python for the recording to hold, so the read is
 * lazy: a new is_scalar proxy holding a snapshot (later writes to the array
 * do not change it), no flush. Otherwise -- not recording, the function's
 * earlier captures let array contents reach Python anyway, this capture
 * already did, or it made ND_LAZY_ELEM_MAX lazy reads or its graph holds
 * ND_LAZY_ELEM_NODES nodes (a long scalar loop would grow an unbounded
 * graph) -- the read is a real NumPy scalar at once (DESIGN's cost rule):
 * taken straight from the concrete array when the storage has no pending
 * work, else NULL with no exception and the caller flushes -- except
 * under fullgraph=True, where such a read stays lazy (a flush would make
 * the function two graphs). NULL + exception on error.
 * The bounds: a replayed call of a time-stepping loop on tiny arrays runs
 * 2-6x NumPy's speed, read by read through the flushing path 0.4-0.5x, so
 * they hold a Lorenz RK4 of 1000 steps (27 reads, ~120 nodes a step); what
 * a capture past them wastes is one flush of that graph, once per function
 * (its later captures read eagerly): ~0.5 s, ~50 MB of nodes. */
#define ND_LAZY_ELEM_MAX 32768
#define ND_LAZY_ELEM_NODES 160000
PyObject *nd_proxy_element(PyObject *proxy, npy_intp off);
/* 1 while the call is recorded for replay and nothing has left the graph:
 * then value-dependent checks (index bounds of a lazily computed index)
 * run with the graph, raising when it runs -- such a capture has no
 * caller-visible effect before its one flush, so the caller sees what
 * NumPy leaves; so too under fullgraph=True (as torch's checks run with
 * its graph: Python effects after the line, a print, come before the
 * IndexError). 0 otherwise, and whenever a write to a caller's array is
 * pending: the shim computes such an index now and checks it at its line,
 * so writes before it land and writes after it do not (under fullgraph a
 * value read: GraphBreakError). */
int nd_trace_checks_deferred(nd_trace *t);
/* fn with its global references to numpy (and to functions the shim
 * replaces) pointing at the shim, as compiled functions run (new ref; fn
 * itself when nothing is renamed). For NumPy's own Python code that the
 * shim traces through (shim_inline.c); the caller caches it. */
PyObject *nd_trace_remap_function(PyObject *fn);
/* A helper the compiled function calls, as the compiled function runs:
 * its loops captured and the shim as its `np` (new ref; cached per code
 * object, checked at each call; fn itself when nothing changes). */
PyObject *nd_trace_remap_callee(PyObject *fn);
/* The tracer lifts the ndarrays nd_supported_array (graph.h) accepts;
 * nd_trace_lift raises TypeError for other arrays. */
/* Mark a proxy read-only like NumPy's read-only views (np.broadcast_to,
 * ndarray.diagonal): writes through it -- or through views of it -- raise
 * ValueError("assignment destination is read-only"). Views of read-only
 * caller arrays are read-only already. 0 or -1. */
int nd_proxy_set_readonly(PyObject *proxy);
/* Nonzero when writes through the proxy raise (read-only view or caller
 * array). Lets the shim raise NumPy's own message first, e.g. ufunc out=
 * "output array is read-only". */
int nd_proxy_is_readonly(PyObject *proxy);
/* a and b are live proxies viewing the same memory the same way (NumPy:
 * same data pointer, dtype, shape and strides) */
int nd_proxy_same_view(PyObject *a, PyObject *b);
/* x.real / x.imag of a complex proxy as a view (new ref): same storage and
 * map, dtype float32/float64; which = ND_F_VIEW_REAL or ND_F_VIEW_IMAG.
 * Reads are VIEW nodes with that flag; writes through it (or its views)
 * update only that part of the complex storage (done on a concrete copy:
 * a flush, exact). For non-complex x NumPy's x.real is x itself: use
 * nd_proxy_view with the identity map instead. */
PyObject *nd_proxy_part(PyObject *base, int which);

/* The proxy's strides in its storage's memory (element units of the
 * proxy's dtype): a caller array's own layout, or for values the graph
 * computes the order NumPy would give them (nd_proxy_set_korder...).
 * 0, or 1 when the map has no per-dimension form over that memory. */

/* o's own dims, shape and element memory strides (0 along length-1
 * dims) when o is a proxy or an ndarray with element strides; else 1. */
int nd_operand_memory_strides(PyObject *o, int *ndim, const npy_intp **shape, npy_intp *ms);

/* The memory order NumPy gives a value the shim just made (res: the proxy
 * of a fresh computed value; anything else is left alone). Only layout
 * follows: view-vs-copy of its reshapes, and the strides of the array the
 * caller gets (trace_layout.c). Never fails: the order is advisory. */
/* order 'K' from operands ops (proxies, ndarrays; scalars count for
 * nothing): iter=1 the iterator's rule (ufuncs, where, scans), iter=0
 * PyArray_CreateMultiSortedStridePerm's (copies, astype, *_like, concatenate) */
void nd_proxy_set_korder(PyObject *res, int nops, PyObject *const *ops, int iter);
/* res reduces src over `axes` (bitmask of src's dims): src's order without them */
void nd_proxy_set_korder_reduced(PyObject *res, PyObject *src, uint64_t axes, int keepdims);
/* res joins ops (concatenate's rule); pieces one rank short of res skip
 * res's dim ins_axis (stack), others of another rank count for nothing */
void nd_proxy_set_korder_join(PyObject *res, int nops, PyObject *const *ops, int ins_axis);
/* the same with operands known only by their element strides over res's
 * dims (a mask NumPy builds itself, as np.triu's), these first */
void nd_proxy_set_korder_st(PyObject *res, int nfixed, const npy_intp (*fixed)[ND_MAXDIMS],
                            int nops, PyObject *const *ops, int iter);
/* res laid out with its dims in memory order perm (outermost first) */
void nd_proxy_set_perm(PyObject *res, const int *perm);
/* res = ufunc.outer(a, b): a's dims first, then b's */
void nd_proxy_set_korder_outer(PyObject *res, PyObject *a, PyObject *b);
/* res copies src with NumPy's order= letter: 'C', 'F', 'A' or 'K' */
void nd_proxy_set_order(PyObject *res, PyObject *src, char order);
int nd_proxy_memory_strides(PyObject *proxy, npy_intp *strides);
/* A reshape of `base` to the C-order shape (ndim, shape) as a view on the
 * same storage (new ref), when NumPy's no-copy rule applied to base's map
 * allows one (it merges dims a per-dimension map cannot: a[1:].reshape(-1),
 * a[::-1, ::-2].reshape(-1)); NULL with no exception when it does not. */
PyObject *nd_proxy_reshape_view(PyObject *base, int ndim, const npy_intp *shape);

/* numdyn.disallow_in_graph of a NumPy ufunc (trace_policy.c): the number
 * so marked, and whether ufunc uf is. nd_trace_disallowed_ufunc runs one
 * such call eagerly with a recorded graph break: args/kwargs given (a
 * function call), or the operator a OP b / OP a (b NULL), in place
 * (a OP= b) when inplace. New ref, or NULL with an exception. */
extern int nd_trace_n_disallowed;
int nd_trace_ufunc_disallowed(int uf);
PyObject *nd_trace_disallowed_ufunc(int uf, PyObject *a, PyObject *b, PyObject *args,
                                    PyObject *kwargs, int inplace);

/* __array_ufunc__(ufunc, method, *inputs)'s arguments apart (the proxy's
 * and the Tensor's): *ufunc and *method borrowed, *inputs args[2:] (new
 * ref). 1 when method is "__call__", 0 for a ufunc method (reduce, at...),
 * -1 with TypeError when args holds fewer than two. */
int nd_array_ufunc_args(PyObject *args, PyObject **ufunc, PyObject **method, PyObject **inputs);

int nd_trace_init(PyObject *module);  /* module init: types and functions */

/* ------------------------------------------------------------ autodiff
 * nd_trace_vjp (numdyn._C._vjp; trace_grad.c) differentiates fn at args:
 * fn(*args, **kwargs) runs once under a trace where every float array,
 * Python float or NumPy float scalar inside args[k] for k in argnums (a
 * tuple of ints; tuples, lists and dicts are walked) is a leaf with its own
 * graph node -- never the caller's buffer: writes inside fn do not reach
 * the caller's arrays. Non-float leaves pass as they are and get None.
 * The backward graph is built by passes/autodiff.h from fn's graph and runs
 * on `backend` ("native" when None, "eager"/"aot_eager": NumPy op by op).
 * Returns a new tuple (out, aux, third):
 *   out   fn's result (has_aux: its first item), as compiled code returns
 *         it: ndarrays, NumPy scalars for scalar results;
 *   aux   has_aux: fn's second item, else None;
 *   third grad=1: the gradients of the single 0-d float output -- a tuple
 *         with one entry per argnum, each shaped like that argument (arrays
 *         of the leaves' dtypes, NumPy scalars for scalar leaves, None for
 *         non-float leaves), computed in the same run as out;
 *         grad=0: a numdyn._C.VJP object: vjp(*cts) takes one cotangent per
 *         leaf of `out` (tuples/lists/dicts walked in order; cast to the
 *         output's dtype, shaped like it) and returns that tuple. It can
 *         be called many times: the forward saved what the backward needs.
 * Called while a trace runs (inside numdyn.compile, or grad of grad) the
 * results are lazy proxies of that trace and nothing is computed yet; the
 * VJP object must then be called inside the same capture.
 * Errors: NULL with TypeError (grad of a non-scalar or non-float output,
 * has_aux without a pair), NotImplementedError naming an op without a VJP
 * rule or the line where a differentiated value left the graph as data
 * (float(), .item(), a NumPy function numdyn runs outside the graph), or
 * whatever fn raised.
 * cache: None, or numdyn._C._grad_cache() of this (fn, argnums, has_aux):
 * a top-level grad=1 call without kwargs of a replayable fn is recorded
 * there and later calls whose arguments fit its guards run the recorded
 * forward+backward graph without tracing (trace_replay.h). */
PyObject *nd_trace_vjp(PyObject *fn, PyObject *args, PyObject *kwargs, PyObject *argnums,
                       PyObject *backend, int has_aux, int grad, PyObject *cache);
/* Inside a function nd_trace_vjp differentiates: `known` (an argument of
 * it, not differentiated) holds the value `computed` (a proxy of the same
 * shape and dtype) will have. Once the backward is built, every read of
 * computed's node reads known instead, so the forward is not computed
 * again (the Tensor tape passes its steps' outputs so). The caller
 * vouches for the value. 0 (nothing done outside such a call, or for
 * operands that do not fit), -1 with an exception set. */
int nd_trace_grad_alias(PyObject *computed, PyObject *known);
/* 1 while t runs a function being differentiated (numdyn.grad/vjp/
 * value_and_grad, a Tensor tape): values that depend on its inputs must
 * stay in the graph (a shim that would hand one to NumPy takes another way
 * or gets autodiff's NotImplementedError). */
int nd_trace_differentiating(const nd_trace *t);
int nd_grad_init(PyObject *module);  /* module init: _vjp, VJP */
/* ------------------------------------------------- NumPy semantics entry
 * The tracer reaches NumPy's semantics only through this table, which the
 * shim (numpy_shim/) fills at module init (nd_trace_register_numpy), so
 * src/trace/ depends on nothing of numpy_shim/. Each entry has the
 * contract of the shim function that fills it (numpy_shim/shim.h): a new
 * reference (or 0), or NULL (-1) with NumPy's exception set. */
typedef struct nd_numpy_entries {
    PyObject *(*ufunc1)(int ufunc_id, PyObject *a);           /* operators */
    PyObject *(*ufunc2)(int ufunc_id, PyObject *a, PyObject *b);
    PyObject *(*ufunc2_inplace)(int ufunc_id, PyObject *a, PyObject *b);
    PyObject *(*array_ufunc)(PyObject *ufunc, PyObject *method, PyObject *args,
                             PyObject *kwargs);               /* __array_ufunc__ */
    PyObject *(*array_function)(PyObject *func, PyObject *types, PyObject *args,
                                PyObject *kwargs);            /* __array_function__ */
    PyObject *(*method)(const char *name, PyObject *self, PyObject *args,
                        PyObject *kwargs);                    /* ndarray methods */
    PyObject *(*getitem)(PyObject *self, PyObject *key);
    int (*setitem)(PyObject *self, PyObject *key, PyObject *value);
    PyObject *(*module)(void);                 /* borrowed: the shim module */
    PyObject *(*lookup)(PyObject *numpy_func); /* borrowed, or NULL: none */
    /* builtin max()/min() of lazy scalars (trace_remap.c): a lazy scalar,
     * or NULL with no exception for the builtin itself */
    PyObject *(*builtin_minmax)(int is_max, PyObject *const *args, Py_ssize_t n);
} nd_numpy_entries;
extern nd_numpy_entries nd_np;
/* The shim module may hold ND_SHIM_CALL_PREFIX "<name>__": what a direct
 * call `np.<name>(...)` in a compiled function runs (trace_remap.c renames
 * such calls), where np.<name> itself must stay NumPy's object. */
#define ND_SHIM_CALL_PREFIX "__numdyn_call_"
/* Called once by the shim's init; every entry must be set. */
void nd_trace_register_numpy(const nd_numpy_entries *entries);

#endif
