/* shim_internal.h -- the internal contract between the numpy_shim/ sources.
 *
 * Owners: the "shim" helper owns this header and every numpy_shim file except
 * shim_join.c, shim_extern.c and shim_advidx.c, which the "extern" helper
 * owns (they start as empty registrations / correct fallbacks written by
 * shim; extern replaces them). Changes to this header: additive only.
 *
 * How a NumPy function gets into the shim
 * ---------------------------------------
 * Each area file exports `int nd_shim_register_<area>(nd_shim_table *tab)`
 * (called once from nd_shim_init) which calls nd_shim_add_function /
 * nd_shim_add_method with static nd_shim_def records:
 *
 *     static PyObject *sum_impl(nd_trace *t, PyObject **argv) { ... }
 *     static const nd_shim_def defs[] = {
 *         {"sum", "a|axis,dtype,out,keepdims;initial,where", sum_impl, 0},
 *         {"linalg.norm", "x|ord,axis,keepdims", norm_impl, 0},
 *         {NULL}
 *     };
 *
 * `name` is the attribute path under numpy ("linalg.norm" also creates the
 * shim module's `linalg` submodule, which falls through to numpy.linalg).
 * The NumPy function object is found by that path at registration, so
 * __array_function__ (which hands us the function object) and the shim
 * module (which the compiled function calls by name) reach the same impl.
 * A ufunc object not in src/ufuncs.def (e.g. numpy.matmul) may be
 * registered by name too: nd_shim_array_ufunc(__call__) looks it up here.
 *
 * Parameter spec (declared once per function, parsed once at registration):
 *   comma-separated names; names before '|' are required; names after ';'
 *   are keyword-only; "*name" collects the remaining positionals into a
 *   tuple (e.g. ndarray.reshape "self|*shape;order,copy").
 * The impl receives argv[k] (borrowed) for the k-th declared name, NULL
 * when the caller did not pass it: defaults are the impl's business (this is
 * NumPy's own _NoValue convention). TypeErrors for unknown/duplicate/missing
 * arguments are raised by the parser with Python's usual messages.
 *
 * When an impl runs
 * -----------------
 * Functions: only under an active trace, and only when some argument
 * (looking into tuples/lists two levels deep) is a proxy, or when the def
 * has ND_SHIM_CREATE (creation functions are lazy under a trace even with
 * no lazy operand). Otherwise NumPy's own function is called with the
 * original arguments, so results are NumPy's by construction.
 * Methods (nd_shim_method): always under a trace; argv[0] is the proxy.
 *
 * What an impl returns
 * --------------------
 *  - a new reference (proxy via nd_shim_wrap, NumPy scalar, anything NumPy
 *    would return), or
 *  - NULL with an exception set (NumPy's type and message), or
 *  - `return nd_shim_unsupported("numpy.foo with bar=...")`: NULL with NO
 *    exception set and a recorded reason: the dispatcher then calls NumPy's
 *    real function through nd_trace_fallback_call (materializing proxies,
 *    recording a graph break with that reason). That is the one sanctioned
 *    way to say "not in-graph"; it never hides a wrong answer.
 */
#ifndef ND_SHIM_INTERNAL_H
#define ND_SHIM_INTERNAL_H
#include "npy.h"
#include "trace.h"
#include "shim.h"

#define ND_SHIM_MAXARGS 16

/* ---------------------------------------------------------------- table */

typedef PyObject *(*nd_shim_impl)(nd_trace *t, PyObject **argv);

#define ND_SHIM_CREATE 0x1u  /* lazy under a trace even without proxy args */

typedef struct nd_shim_def {
    const char *name;    /* numpy attribute path, or ndarray method name */
    const char *params;  /* parameter spec, see above */
    nd_shim_impl impl;
    unsigned flags;
} nd_shim_def;

typedef struct nd_shim_table nd_shim_table;  /* opaque; lives in shim_module.c */

/* Register a NULL-name-terminated array of defs (pointers are kept: defs
 * must be static). A def whose numpy name does not exist in the installed
 * NumPy is skipped silently (e.g. names added in later NumPy versions). */
int nd_shim_add_functions(nd_shim_table *tab, const nd_shim_def *defs);
/* ndarray methods: name is the method name; params start with "self". */
int nd_shim_add_methods(nd_shim_table *tab, const nd_shim_def *defs);

/* One per area file; called in this order from nd_shim_init. */
int nd_shim_register_ufunc(nd_shim_table *tab);   /* shim_ufunc.c */
int nd_shim_register_reduce(nd_shim_table *tab);  /* shim_reduce.c */
int nd_shim_register_create(nd_shim_table *tab);  /* shim_create.c */
int nd_shim_register_index(nd_shim_table *tab);   /* shim_index.c */
int nd_shim_register_views(nd_shim_table *tab);   /* shim_views.c */
int nd_shim_register_methods(nd_shim_table *tab); /* shim_methods.c */
int nd_shim_register_elementwise(nd_shim_table *tab); /* shim_elementwise.c */
int nd_shim_register_join(nd_shim_table *tab);    /* shim_join.c   (extern) */
int nd_shim_register_extern(nd_shim_table *tab);  /* shim_extern.c (extern) */
int nd_shim_register_advidx(nd_shim_table *tab);  /* shim_advidx.c (extern) */
int nd_shim_register_copyto(nd_shim_table *tab);  /* shim_copyto.c */
int nd_shim_register_flat(nd_shim_table *tab);    /* shim_flat.c */

/* Hooks implemented in shim_advidx.c (extern helper). Called under an
 * active trace with `self` a proxy. The initial versions are correct
 * fallbacks (materialize + real NumPy + recorded break). */
/* self[key] where key is not a basic index (contains an array, list, bool,
 * or proxy, at any position of a tuple key). New ref or NULL. */
PyObject *nd_shim_advidx_getitem(nd_trace *t, PyObject *self, PyObject *key);
/* self[key] = value, key as above. 0 or -1. */
int nd_shim_advidx_setitem(nd_trace *t, PyObject *self, PyObject *key,
                           PyObject *value);
/* ufunc.at(a, indices, b=None) with `a` a proxy. New ref (None) or NULL. */
PyObject *nd_shim_ufunc_at(nd_trace *t, PyObject *ufunc, PyObject *args,
                           PyObject *kwargs);

/* An integer index array for take/put/ufunc.at: a lazily computed one is
 * computed now so its bounds are checked at this line (NumPy's IndexError
 * with every earlier write landed), unless the call defers such checks to
 * its one flush (nd_trace_checks_deferred). New ref or NULL. */
PyObject *nd_shim_checked_index(nd_trace *t, PyObject *index);

/* shim_inline.c: NumPy functions written in Python, traced through that
 * code. nd_shim_inline_call returns the result, or NULL: with an exception
 * on error; without one when func is not inlined (*why NULL) or its code
 * raised under tracing (*why: the break reason; the caller runs NumPy). */
int nd_shim_inline_init(void);
PyObject *nd_shim_inline_call(PyObject *func, PyObject *args, PyObject *kwargs,
                              const char **why);

/* ------------------------------------------------------------ dispatch */

/* See "What an impl returns". Formats the reason (printf-style) into a
 * per-thread buffer; always returns NULL. */
PyObject *nd_shim_unsupported(const char *fmt, ...);

/* Parse (args tuple, kwargs dict) against a def's spec into argv. Used by
 * the dispatcher; exposed for impls that forward to another def. */
int nd_shim_parse_args(const nd_shim_def *def, PyObject *args, PyObject *kwargs,
                       PyObject **argv);
/* Call NumPy's real function for `def` on the original args (no graph). */
PyObject *nd_shim_call_numpy(const nd_shim_def *def, PyObject *args,
                             PyObject *kwargs);
/* The NumPy object registered for a def (borrowed; NULL for methods). */
PyObject *nd_shim_numpy_object(const nd_shim_def *def);
/* The numpy module (borrowed, imported once at init). */
PyObject *nd_shim_numpy(void);

/* ------------------------------------------------------------ operands */

/* An operand as the shim sees it. Weak Python scalars are not lifted until
 * their NEP-50 dtype is known (nd_shim_operand_node types them). */
typedef struct nd_operand {
    PyObject *obj;      /* borrowed: what the caller passed */
    nd_id id;           /* node holding its value; ND_NONE while weak */
    int dtype;          /* typenum; for weak scalars the kind's default
                           (NPY_BOOL, NPY_INT64, NPY_FLOAT64, NPY_COMPLEX128) */
    int weak;           /* 1: Python int/float/complex (NEP 50 weak).
                           Python bool is typed as a strong bool: since bool
                           is the lowest kind this gives NumPy's results. */
    int is_scalar;      /* NumPy treats it as a scalar (Python or NumPy
                           scalar, is_scalar proxy): results of ops whose
                           operands are all scalars are NumPy scalars */
    int ndim;
    npy_intp shape[ND_MAXDIMS];
} nd_operand;

/* Classify and (except weak scalars) lift obj into the trace. Sequences go
 * through np.asarray. 0 or -1. Arrays with unsupported dtypes (object,
 * str, datetime...) or rank > ND_MAXDIMS: returns 1 with a reason set by
 * nd_shim_unsupported (caller returns NULL so the dispatcher falls back). */
int nd_shim_operand(nd_trace *t, PyObject *obj, nd_operand *op);
/* The operand's node. Weak scalars become a SCALAR node typed at `dtype`
 * (ND_F_WEAK, value checked: OverflowError like NumPy for Python ints out
 * of range of an integer dtype). For non-weak operands returns op->id
 * unchanged (no cast: UFUNC nodes cast via in_dtype). */
nd_id nd_shim_operand_node(nd_trace *t, nd_operand *op, int dtype);

/* True if typenum is one of the 14 numeric dtypes numdyn traces. */
int nd_shim_dtype_ok(int typenum);
/* Node info copied out (node pointers move when the graph grows). */
int nd_shim_node_dtype(nd_trace *t, nd_id id);
int nd_shim_node_ndim(nd_trace *t, nd_id id);
void nd_shim_node_shape(nd_trace *t, nd_id id, npy_intp *shape);

/* --------------------------------------------------------- normalizers */

/* axis argument -> bitmask over ndim dims. NULL/None -> all dims (or 0 for
 * ndim 0). allow_tuple: tuples of ints accepted. Errors like NumPy:
 * numpy.exceptions.AxisError("axis 2 is out of bounds for array of
 * dimension 2"), ValueError("duplicate value in 'axis'"), TypeError for
 * non-integers. 0 or -1. */
int nd_shim_axis_mask(PyObject *axis, int ndim, int allow_tuple, uint64_t *mask);
/* single axis (may be negative) -> normalized index, AxisError. */
int nd_shim_axis_index(PyObject *axis, int ndim, int *out);
/* dtype argument: NULL/None -> *typenum = -1; else the typenum (anything
 * np.dtype() accepts). A non-numeric dtype: returns 1 (caller falls back
 * via nd_shim_unsupported). 0, 1, or -1 on error. */
int nd_shim_dtype_arg(PyObject *obj, int *typenum);
/* truthiness of a flag argument, NULL -> dflt. -1 on error. */
int nd_shim_bool_arg(PyObject *obj, int dflt);
/* casting argument: NULL -> dflt; NPY_NO_CASTING... ; ValueError like NumPy. */
int nd_shim_casting_arg(PyObject *obj, NPY_CASTING dflt, NPY_CASTING *out);

/* NumPy's broadcasting: n shapes -> result. Error like NumPy:
 * ValueError("operands could not be broadcast together with shapes (3,) (4,) ").
 * 0 or -1. */
int nd_shim_broadcast(int n, const int *ndims, const npy_intp *const *shapes,
                      int *ndim_out, npy_intp *shape_out);

/* -------------------------------------------------------- node helpers */
/* All return the new node id, or ND_NONE with an exception set. */

/* SCALAR node from a Python/NumPy scalar value converted to `dtype`. */
nd_id nd_shim_node_scalar(nd_trace *t, PyObject *value, int dtype, int weak);
/* UFUNC node: in_dtype[k] = loop dtype of input k (inputs may differ, the
 * node casts), dtype = result dtype of output `which`. Shape: broadcast of
 * the inputs' shapes (computed here, NumPy's error on mismatch). */
nd_id nd_shim_node_ufunc(nd_trace *t, int ufunc_id, const nd_id *in,
                         const int *loop_in, int out_dtype, int which);
/* CAST node (no node when already `dtype`). casting check: see below. */
nd_id nd_shim_node_cast(nd_trace *t, nd_id in, int dtype);
/* Check a cast allowed under `casting` like NumPy's ufunc output cast:
 * UFuncTypeError "Cannot cast ufunc 'add' output from dtype('float64') to
 * dtype('int64') with casting rule 'same_kind'". what: ufunc name. */
int nd_shim_check_output_cast(const char *ufunc_name, int from, int to,
                              NPY_CASTING casting);
/* REDUCE node over `axes` (mask of in's dims) with accumulation dtype acc
 * and result dtype out_dtype; initial: SCALAR node or ND_NONE. */
nd_id nd_shim_node_reduce(nd_trace *t, int red, nd_id in, uint64_t axes,
                          int keepdims, int acc, int out_dtype, nd_id initial);
/* VIEW node of an arbitrary node (element strides over in's C-order flat
 * index). For views of proxies that must see later writes, use
 * nd_proxy_view instead: this is for values (e.g. broadcasting). */
nd_id nd_shim_node_view(nd_trace *t, nd_id in, int ndim, const npy_intp *shape,
                        npy_intp off, const npy_intp *strides);
/* in broadcast to (ndim, shape) as a 0-stride VIEW (no node if same). */
nd_id nd_shim_node_broadcast(nd_trace *t, nd_id in, int ndim, const npy_intp *shape);
/* WHERE node: cond ? x : y with x, y already at dtype (cast here if not). */
nd_id nd_shim_node_where(nd_trace *t, nd_id cond, nd_id x, nd_id y, int dtype);
/* INDEX node: int64 iota along `axis` of `shape`. */
nd_id nd_shim_node_index(nd_trace *t, int ndim, const npy_intp *shape, int axis);

/* EXTERN: run `callable(*args_template, **kwargs)` inside the program, with
 * every placeholder (nd_shim_placeholder(k), in the template at any depth of
 * tuples/lists or as a kwargs value) replaced by the array of input ids[k].
 * which >= 0: the result is a tuple and this node is result[which]; -1: the
 * result itself. Result converted with np.asarray and must have (dtype,
 * ndim, shape). Steals nothing: callable/args_template/kwargs are increfed.
 * kwargs may be NULL. Stored as attrs = (args_template, None or a tuple of
 * sorted (key, value) pairs) so attrs hash by value (graph cache): keep
 * templates to hashable constants + placeholders (placeholders hash and
 * compare by index). */
nd_id nd_shim_node_extern(nd_trace *t, PyObject *callable, PyObject *args_template,
                          PyObject *kwargs, int nin, const nd_id *ids, int which,
                          int dtype, int ndim, const npy_intp *shape);
/* Placeholder object for input k (new ref); nd_shim_is_placeholder -> k or -1. */
PyObject *nd_shim_placeholder(int k);
int nd_shim_placeholder_index(PyObject *obj);

/* ------------------------------------------------------------- results */

/* Proxy for node id (new ref). is_scalar: see nd_proxy_wrap. A computed
 * node of a size NumPy could not allocate raises NumPy's error here. */
PyObject *nd_shim_wrap(nd_trace *t, nd_id id, int is_scalar);
/* NumPy's outcome of allocating shape x dtype (ValueError "array is too
 * big" / MemoryError), tried only for sizes that could fail; 0 or -1. */
int nd_shim_check_alloc(int ndim, const npy_intp *shape, int dtype);
/* The same, laid out in memory as NumPy lays out that op's new array:
 * order 'K' from the operands (nd_proxy_set_korder; iter=1 for ufunc-like
 * ops, 0 for copies and joins). */
PyObject *nd_shim_wrap_k(nd_trace *t, nd_id id, int is_scalar, int nops, PyObject *const *ops,
                         int iter);
/* An order= argument's letter ('C', 'F', 'A', 'K'), dflt for None/absent
 * or anything else (NumPy's own parsing has rejected that already or will
 * on the fallback path). */
char nd_shim_order_char(PyObject *order, char dflt);
/* Store value into an out= target (a proxy, or a real ndarray: materialize
 * value and np.copyto -- a flush, documented in shim_ufunc.c) after the
 * casting check for `ufunc_name` (NULL: no check). Returns 0 or -1. */
int nd_shim_store_out(nd_trace *t, PyObject *out, nd_id value, const char *ufunc_name,
                      NPY_CASTING casting);

/* Basic-indexing key (ints, slices, Ellipsis, None only)? 1/0. */
int nd_shim_key_is_basic(PyObject *key);
/* A value prepared for assignment into a region (ndim, shape) of dtype:
 * NumPy's setitem rules (unsafe cast of arrays, Python ints range-checked,
 * leading 1-dims dropped, broadcast). ND_NONE with an exception, or with
 * none and an nd_shim_unsupported reason (caller falls back). */
nd_id nd_shim_assign_value(nd_trace *t, PyObject *value, int dtype, int ndim,
                           const npy_intp *shape);

/* ------------------------------------------------------------- typing */

/* nd_shim_resolve_ufunc with a dtype= signature (sig_dtype >= 0: every
 * loop dtype forced like NumPy's `dtype=` argument) and casting. */
int nd_shim_resolve_ufunc_ex(int ufunc_id, int nin, const int *dtypes,
                             const int *weak, PyObject *const *scalar_values,
                             int sig_dtype, NPY_CASTING casting,
                             int *loop_in, int *out);
/* NumPy's np.result_type over typenums + weak flags (cached). */
int nd_shim_result_type(int n, const int *dtypes, const int *weak, int *out);
/* Weak Python int `value` fits `dtype` (an integer typenum)? 1/0, -1 error. */
int nd_shim_pyint_fits(PyObject *value, int dtype);
#endif
