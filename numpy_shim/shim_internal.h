/* shim_internal.h -- the internal contract between the numpy_shim/ sources.
 *
 * The shim's one internal header: every numpy_shim/ source includes it, and
 * nothing outside numpy_shim/ does (the rest of numdyn sees shim.h). Its
 * sections: the function table and parameter specs; operands and nodes;
 * results; the shared helpers of the dispatcher, typing and ufunc files;
 * array-argument helpers (nd_xj_*, shim_xj.c) of the join, indexing and
 * extern areas; and EXTERN calls (nd_ext_*, shim_extern.c) shared by the
 * NumPy areas that run NumPy's own code (shim_matmul.c, shim_linalg.c,
 * shim_fft.c, shim_sort.c, shim_stats.c).
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
#include "core/npy.h"
#include "core/dtypes.h"
#include "core/strides.h"
#include "trace/trace.h"
#include "shim.h"

#define ND_SHIM_MAXARGS 16

/* ---------------------------------------------------------------- table */

typedef PyObject *(*nd_shim_impl)(nd_trace *t, PyObject **argv);

#define ND_SHIM_CREATE 0x1u  /* lazy under a trace even without proxy args */
#define ND_SHIM_NUMBERS 0x2u /* lazy under a trace when its first argument is a
                                few Python numbers (np.array([1., 2., 1.]),
                                dtype= the only keyword): nd_shim_few_numbers */
/* o is a non-empty (nested) list/tuple of at most 64 Python or NumPy numbers */
int nd_shim_few_numbers(PyObject *o);

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
/* Top-level NumPy callables whose own object must stay NumPy's (np.ndarray:
 * isinstance, x.view(np.ndarray), `type(x) is np.ndarray`): the shim module
 * holds each as "__numdyn_call_<name>__", reached only through a direct
 * call `np.<name>(...)` that trace_remap.c renames; never found by
 * nd_shim_lookup. */
int nd_shim_add_call_only(nd_shim_table *tab, const nd_shim_def *defs);

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
int nd_shim_register_random(nd_shim_table *tab);  /* shim_random.c */
int nd_shim_register_special(nd_shim_table *tab); /* shim_special.c */

/* Hooks implemented in shim_advidx.c (extern helper). Called under an
 * active trace with `self` a proxy. The initial versions are correct
 * fallbacks (materialize + real NumPy + recorded break). */
/* self[key] where key is not a basic index (contains an array, list, bool,
 * or proxy, at any position of a tuple key). New ref or NULL. */
PyObject *nd_shim_advidx_getitem(nd_trace *t, PyObject *self, PyObject *key);
/* self[key] = value, key as above. 0 or -1. */
int nd_shim_advidx_setitem(nd_trace *t, PyObject *self, PyObject *key,
                           PyObject *value);
/* shim_masked.c: a[m] with m a lazy boolean mask over a's leading dims, as
 * a masked value kept lazy while only elementwise work, sums and writes
 * through the same mask use it (see the file). nd_shim_masked_read: new
 * ref, or NULL (no exception: not this case; with one: error).
 * nd_shim_masked_store: self[key] = value for a masked value by key's
 * unchanged mask: 1 done, 0 not this case, -1 error. */
int nd_shim_masked_init(void);
int nd_shim_masked_check(PyObject *o);
PyObject *nd_shim_masked_read(nd_trace *t, PyObject *self, PyObject *key);
int nd_shim_masked_store(nd_trace *t, PyObject *self, PyObject *key, PyObject *value);
/* key (an index: an item or a tuple of them) with its masked values
 * compacted (a[m]: a lazy gather once the mask's positions are known), so
 * `b[a[m], c[m]] = v` indexes by lazy arrays instead of handing NumPy's C
 * code objects it reads through the buffer protocol. New ref (key itself
 * when it holds none), NULL on error. */
PyObject *nd_shim_masked_key(PyObject *key);
/* the mean of a masked read: w = where(m, a, 0), cnt the int64 count
 * (shim_reduce.c, as _methods._mean of NumPy's a[m]) */
PyObject *nd_shim_masked_mean(nd_trace *t, nd_id w, nd_id cnt, int dtype, int dtarg);
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
/* The operand's node for NumPy's unsafe cast of np.asarray(value) into
 * dtype (np.copyto(casting='unsafe'), np.full): a weak Python float into an
 * integer dtype, a weak complex into a real one, stays a float64/complex128
 * node (*cast = 1) for a CAST node to convert as NumPy's C cast does --
 * 1e300 into int32 is INT_MIN, NaN warns "invalid value encountered in
 * cast", an imaginary part is dropped with ComplexWarning -- not as int()
 * or a trace-time conversion would; else nd_shim_operand_node (*cast = 0). */
nd_id nd_shim_operand_node_unsafe(nd_trace *t, nd_operand *op, int dtype, int *cast);

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
/* NumPy's normalize_axis_tuple(axis, ndim) (flip, expand_dims, median):
 * an int, tuple or list; ValueError("repeated axis") */
int nd_shim_axis_mask_normalized(PyObject *axis, int ndim, uint64_t *mask);
/* NumPy reads a single axis through one of three converters; the same
 * integers pass each, what they refuse and their TypeError texts differ:
 *   ND_AXIS_INDEX      operator.index (ufunc reductions, swapaxes,
 *                      diagonal, transpose's entries): "'float' object
 *                      cannot be interpreted as an integer"; bools pass;
 *   ND_AXIS_CONVERTER  PyArray_AxisConverter (take, repeat, concatenate,
 *                      argsort, argmax, cumsum): the same, and a bool or
 *                      np.bool_ is "an integer is required for the axis";
 *   ND_AXIS_NORMALIZE  normalize_axis_index (stack, sort, partition,
 *                      trace, diff, the entries of normalize_axis_tuple):
 *                      a float is "integer argument expected, got float",
 *                      a Python bool passes, np.bool_ does not. */
typedef enum { ND_AXIS_INDEX, ND_AXIS_CONVERTER, ND_AXIS_NORMALIZE } nd_axis_conv;
/* single axis (may be negative) -> normalized index, AxisError. */
int nd_shim_axis_index(PyObject *axis, int ndim, int *out);  /* ND_AXIS_INDEX */
int nd_shim_axis_conv(PyObject *axis, int ndim, int *out, nd_axis_conv conv);
/* the same, NumPy's AxisError message prefixed with the argument's name */
int nd_shim_axis_index_named(PyObject *axis, int ndim, int *out, const char *argname,
                             nd_axis_conv conv);
/* NumPy's normalize_axis_tuple, in order (moveaxis, unstack): an integer
 * or any iterable of integers (its iteration errors: "'float' object is
 * not iterable"); out has ND_MAXDIMS slots, *n the count. No check for
 * repeats. */
int nd_shim_axis_tuple(PyObject *axis, int ndim, int *out, int *n);
/* nd_shim_axis_mask with each axis read by `conv` (np.mean/var/std:
 * normalize_axis_index on each) */
int nd_shim_axis_mask_conv(PyObject *axis, int ndim, int allow_tuple, uint64_t *mask,
                           nd_axis_conv conv);
/* dtype argument: NULL/None -> *typenum = -1; else the typenum (anything
 * np.dtype() accepts). A non-numeric dtype: returns 1 (caller falls back
 * via nd_shim_unsupported). 0, 1, or -1 on error. */
int nd_shim_dtype_arg(PyObject *obj, int *typenum);
/* truthiness of a flag argument, NULL -> dflt. -1 on error. */
int nd_shim_bool_arg(PyObject *obj, int dflt);
/* o can be a Python integer: PyIndex_Check, but an array (real or traced:
 * both have nb_index) only when 0-d of an integer dtype -- bins=, kth=,
 * indices_or_sections=, axes= given as arrays are sequences */
int nd_shim_index_like(PyObject *o);
/* A shape argument as NumPy reads it (an integer, or a sequence or array of
 * them): its items as a new tuple, then each item's value; NumPy's
 * TypeErrors otherwise (a bool is not a size, a float names its type) */
PyObject *nd_shim_shape_items(PyObject *o);
int nd_shim_shape_item(PyObject *it, Py_ssize_t *v);
/* keepdims= of NumPy's C reductions (and linalg.norm): an integer (__index__;
 * None, a str or an np.bool_ raise NumPy's TypeError), absent = 0. 0/1, or -1. */
int nd_shim_keepdims_arg(PyObject *obj);
/* NumPy's C reductions and axis converters refuse a bool axis (or a bool in
 * an axis tuple) that Python-level functions take as 0/1: TypeError(msg)
 * and -1 there ("an integer is required" for ufunc reductions, "... for the
 * axis" for PyArray_AxisConverter's users); 0 otherwise. */
int nd_shim_axis_bool_refused(PyObject *axis, const char *msg);
/* out= of a function that computed `value`: the one place an impl answers
 * it (shim_args.c). The out= array (tuple1: or a 1-tuple holding it) is
 * taken in-graph only when it is plainly fine: one array (a proxy or an
 * ndarray) of exactly value's shape whose dtype is `want` (want >= 0:
 * argmax's intp) or receives value's dtype under `check`; value is then
 * stored into it (`store` casting; ufunc_name: NumPy's ufunc cast message)
 * and the out= array is returned (new ref). An out= NumPy would refuse --
 * or checks by rules (tuple forms, ranks, remapped shapes, casts) not
 * re-created here -- gives nd_shim_unsupported(refused): NumPy then raises
 * its own error, never a value where NumPy raises. */
typedef struct {
    int tuple1;              /* a 1-tuple (a ufunc's out=) holds the array */
    int want;                /* exact dtype wanted, or -1 */
    NPY_CASTING check;       /* value's dtype must cast to out's under this */
    const char *ufunc_name;  /* or NULL */
    NPY_CASTING store;
    const char *refused;     /* the graph break's reason */
} nd_shim_out_rule;
PyObject *nd_shim_out_result(nd_trace *t, PyObject *out, nd_id value, const nd_shim_out_rule *rule);
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
/* The cast of a NumPy API that converts data (astype, array(dtype=),
 * setitem, copyto, out=, full): nd_shim_node_cast plus NumPy's
 * ComplexWarning when it drops an imaginary part (-1 / ND_NONE when the
 * warning filter makes it an error). */
nd_id nd_shim_node_cast_np(nd_trace *t, nd_id in, int dtype);
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
 * every placeholder (nd_extern_placeholder(k), in the template at any depth of
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
/* value is a live is_scalar proxy: a NumPy scalar only the run knows
 * (a store of it by a basic index or fill() is nd_proxy_write_scalar) */
int nd_shim_lazy_scalar(PyObject *value);
/* A value prepared for assignment into a region (ndim, shape) of dtype:
 * NumPy's setitem rules (unsafe cast of arrays, Python ints range-checked;
 * as_item -- a basic-index store, fill() --: float and NumPy scalars into
 * integer arrays converted as int() does; leading 1-dims dropped,
 * broadcast). ND_NONE with an exception, or with none and an
 * nd_shim_unsupported reason (caller falls back). warn: give NumPy's cast
 * warnings (ComplexWarning) -- 0 where NumPy itself already vetted the
 * assignment on stand-ins (copyto). */
/* the number of dims NumPy discovers in a list/tuple value (through its
 * first items; an array or proxy item adds its own); -1 for anything else */
int nd_shim_seq_ndim(PyObject *value);
nd_id nd_shim_assign_value(nd_trace *t, PyObject *value, int dtype, int ndim,
                           const npy_intp *shape, int as_item, int warn);

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
/* ================================================================
 * shared helpers of the dispatcher, typing and ufunc files
 * ================================================================ */
/* Compiled parameter spec of a def (see "Parameter spec" above). */
typedef struct nd_spec {
    int n;              /* number of names */
    int nreq;           /* first nreq are required */
    int npos;           /* first npos may be passed positionally */
    int varargs;        /* index of the "*name" slot, or -1 */
    PyObject *names[ND_SHIM_MAXARGS]; /* interned */
} nd_spec;

/* Compile (once) and fetch the spec of a def. NULL + exception on a bad spec. */
const nd_spec *nd_shim_spec(const nd_shim_def *def);
/* vectorcall form of nd_shim_parse_args. */
int nd_shim_parse_fast(const nd_shim_def *def, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames, PyObject **argv);
/* The pending reason of nd_shim_unsupported, cleared by the call (NULL if none). */
const char *nd_shim_take_unsupported(void);
/* AxisError(axis, ndim) raised like NumPy. */
void nd_shim_raise_axis_error(long axis, int ndim);
/* dtype object for a typenum (new ref). */
PyObject *nd_shim_descr(int typenum);
/* Run an impl: fallback through NumPy's function when it says unsupported. */
PyObject *nd_shim_run_impl(nd_trace *t, const nd_shim_def *def, PyObject **argv,
                           PyObject *func, PyObject *args, PyObject *kwargs);
/* A node copy-out helper: dtype/ndim/shape of a node. */
typedef struct { int dtype, ndim; npy_intp shape[ND_MAXDIMS]; } nd_info;
void nd_shim_info(nd_trace *t, nd_id id, nd_info *out);
/* ufunc output cast check with the output index (NumPy's message). */
int nd_shim_check_output_cast_i(int uf, int i, int from, int to, NPY_CASTING casting);
/* NPY_NO_CASTING.. -> "no", "equiv", ... */
const char *nd_shim_casting_name(NPY_CASTING c);
/* numpy._core._exceptions._UFuncOutputCastingError etc. lookups */
PyObject *nd_shim_exc(const char *name);
/* The shim's ufunc path with full kwargs (used by array_ufunc and the shim
 * module's ufunc wrappers): args tuple/kwargs dict as NumPy's ufunc call. */
PyObject *nd_shim_ufunc_call(nd_trace *t, int ufunc_id, PyObject *args, PyObject *kwargs);
/* ufunc.reduce / accumulate / outer with a proxy operand. */
PyObject *nd_shim_ufunc_reduce(nd_trace *t, int ufunc_id, PyObject *args, PyObject *kwargs);
PyObject *nd_shim_ufunc_accumulate(nd_trace *t, int ufunc_id, PyObject *args, PyObject *kwargs);
PyObject *nd_shim_ufunc_outer(nd_trace *t, int ufunc_id, PyObject *args, PyObject *kwargs);
/* Materialize-or-pass-through: a NumPy scalar for is_scalar results when
 * the value is already concrete (used by item-like reads). */
PyObject *nd_shim_scalar_from_array(PyObject *arr);
/* SCAN node: ufunc accumulate along axis, accumulating at acc. */
nd_id nd_shim_node_scan(nd_trace *t, int uf, nd_id in, int axis, int acc, int out_dtype);
/* Real (imag=0) or imaginary part of a complex node, as a VIEW value. */
nd_id nd_shim_node_part(nd_trace *t, nd_id in, int imag);
/* A node value reshaped (C order) -- always a VIEW of a node's value. */
nd_id nd_shim_node_reshape(nd_trace *t, nd_id in, int ndim, const npy_intp *shape);
/* float dtype of a complex dtype's parts */
int nd_shim_complex_part_dtype(int dtype);
/* Broadcast operand + retype weak -> node at dtype (casts strong ones too). */
nd_id nd_shim_operand_at(nd_trace *t, nd_operand *op, int dtype);
/* OverflowError for a Python int that does not fit `dtype`, NumPy's message */
void nd_shim_raise_pyint_overflow(PyObject *value, int dtype);
/* The shim module's ufunc objects (shim_ufunc.c): wrappers that record
 * plain calls on proxies directly; installed into `module` under every
 * numpy name bound to a known ufunc the module does not define. */
int nd_shim_install_ufuncs(PyObject *module);
/* The wrapper of ufunc id uf (borrowed), or NULL before installation. */
PyObject *nd_shim_ufunc_wrapper(int uf);

/* ================================================================
 * array-argument helpers (shim_xj.c)
 * ================================================================ */
/* Array-argument and node helpers of shim_join.c, shim_advidx.c and the
 * EXTERN areas (implemented in shim_xj.c). Conventions:
 *  - an nd_xj_arr is a node id with a snapshot of its dtype, rank and
 *    shape; helpers that change the id (reshape) refresh the snapshot;
 *  - int-returning helpers: 0 ok, -1 error with an exception set, 1 (where
 *    stated) "not modelled": a reason is recorded with nd_shim_unsupported
 *    or, for argument parsers, nothing is set and the caller decides;
 *  - nd_id-returning helpers: ND_NONE with an exception set;
 *  - `path` arguments name a numpy attribute ("linalg.svd") and must be
 *    static strings: lookups are cached by the pointer.
 */

typedef struct nd_xj_arr {
    nd_id id;
    int dtype, ndim;
    npy_intp shape[ND_MAXDIMS];
} nd_xj_arr;

/* ------------------------------------------------------- shapes, arrays */

/* refresh a->dtype/ndim/shape from a->id */
void nd_xj_fill(nd_trace *t, nd_xj_arr *a);
npy_intp nd_xj_size(int ndim, const npy_intp *shape);
/* An array-like argument as a node, with np.asarray semantics (Python
 * scalars are strong). 0, -1, or 1 unsupported (reason recorded). */
int nd_xj_array(nd_trace *t, PyObject *obj, nd_xj_arr *a);
/* value-level C-order reshape (a VIEW); a no-op when the shape is a's */
int nd_xj_reshape(nd_trace *t, nd_xj_arr *a, int ndim, const npy_intp *shape);
/* np.array(seq) of a (nested) list/tuple holding lazy values, as a stack
 * (shim_join.c). 0, -1, or 1 unsupported (reason recorded: no lazy value
 * in it, ragged, empty, non-numeric leaves). */
int nd_shim_array_from_seq(nd_trace *t, PyObject *seq, nd_xj_arr *out);
int nd_xj_ravel(nd_trace *t, nd_xj_arr *a);

/* ---------------------------------------------------------------- nodes */

nd_id nd_xj_i64(nd_trace *t, long long v);
/* int64 ufunc node (comparisons give bool); for add, an ND_NONE operand
 * means "absent" and the other is returned */
nd_id nd_xj_ibin(nd_trace *t, int uf, nd_id x, nd_id y);
/* x uf c for a constant c (identities fold away) */
nd_id nd_xj_ibin_c(nd_trace *t, int uf, nd_id x, long long c);
/* value broadcast to shape at dtype; a weak Python int must fit (NEP 50) */
nd_id nd_xj_full(nd_trace *t, PyObject *value, int dtype, int weak, int ndim,
                 const npy_intp *shape);
nd_id nd_xj_zeros(nd_trace *t, int dtype, int ndim, const npy_intp *shape);
/* base with the affine region (voff, vstrides over vshape, base's C-order
 * flat index) replaced by val (broadcast, cast to base's dtype) */
nd_id nd_xj_setitem(nd_trace *t, nd_id base, nd_id val, int vndim, const npy_intp *vshape,
                    npy_intp voff, const npy_intp *vstrides);
/* src's elements at the int64 flat indices `flat` (already in range) */
nd_id nd_xj_gather(nd_trace *t, nd_id src, nd_id flat);
/* np.take along axis ax with int64 indices already in [0, a.shape[ax]) */
nd_id nd_xj_take_axis(nd_trace *t, const nd_xj_arr *a, int ax, const nd_xj_arr *idx);

/* ------------------------------------------------------- NumPy's word */

/* numpy.<path> (new ref), cached per path */
PyObject *nd_xj_np_attr(const char *path);
/* o with every leaf replaced: leaf(o, ctx, &out) returns 1 with *out (new
 * ref) for a leaf it replaces, 0 to keep o (tuples and lists are walked,
 * keeping their type; anything else is kept as is), -1 on error. */
typedef int (*nd_xj_leaf_fn)(PyObject *o, void *ctx, PyObject **out);
PyObject *nd_xj_map_template(PyObject *o, nd_xj_leaf_fn leaf, void *ctx);
/* EXTERN args template (placeholder 0..nin-1, then extra[], NULL = None) */
PyObject *nd_xj_tmpl(int nin, int nextra, PyObject *const *extra);
/* dtype/shape-faithful array whose elements all alias one zero (strides 0) */
PyObject *nd_xj_standin(int dtype, int ndim, const npy_intp *shape);
/* Let NumPy raise its own error for a call the shape rules reject: calls
 * numpy.<path> with proxies replaced by stand-ins (argv/params as the
 * def's). NULL with NumPy's exception, or with an unsupported reason when
 * NumPy accepts the call after all. */
PyObject *nd_xj_numpy_error(const char *path, const char *params, PyObject **argv);

/* -------------------------------------------------------------- arguments */

/* A sequence of ints -- or with allow_int a single int too -- (axes=,
 * shift=, reps=...) into out[0..*n). 0 ok; 1 not that (or an item is not
 * an int), 2 more than cap items: both with no exception set; -1 a value
 * beyond npy_intp (OverflowError set). The length is checked before the
 * items are read. */
int nd_xj_int_list(PyObject *o, int allow_int, npy_intp *out, int cap, int *n);
/* Two array arguments argv[0], argv[1] (nd_xj_array each): 0, -1 or 1. */
int nd_xj_array2(nd_trace *t, PyObject **argv, nd_xj_arr *in);

/* ================================================================
 * EXTERN calls (shim_extern.c)
 * ================================================================ */
/* Building EXTERN calls: what the NumPy areas that run NumPy's own code
 * inside the compiled program share (shim_extern.c).
 *
 * An area (shim_matmul.c, shim_linalg.c, shim_fft.c, shim_sort.c,
 * shim_stats.c) computes the result shapes by NumPy's rules, fills an
 * nd_ext_out, and calls nd_ext_build / nd_ext_simple; dtypes it leaves at
 * -1 come from a probe of NumPy itself on tiny arrays, cached per
 * (function, input dtypes and ranks, constant arguments).
 */

typedef struct {
    int nout;     /* number of result arrays */
    int tuple;    /* NumPy returns a tuple (or namedtuple) of them */
    int scalar0d; /* 0-d results are NumPy scalars (np.dot, det...) */
    int dtype[4]; /* -1: ask the probe */
    int ndim[4];
    npy_intp shape[4][ND_MAXDIMS];
} nd_ext_out;

void nd_ext_init(nd_ext_out *o, int nout, int tuple, int scalar0d);
void nd_ext_shape(nd_ext_out *o, int k, int ndim, const npy_intp *shape);
/* one array result (not a tuple) of the given shape */
void nd_ext_init1(nd_ext_out *o, int scalar0d, int ndim, const npy_intp *shape);
/* Nodes for fn(*tmpl, **kw) on ins; the result NumPy would return (new ref). */
PyObject *nd_ext_build(nd_trace *t, PyObject *fn, PyObject *tmpl, PyObject *kw, int nin,
                       const nd_xj_arr *ins, nd_ext_out *o);
/* call numpy.<path> as NumPy would, with a simple positional template:
 * the nin inputs, then extra[0..nextra) */
PyObject *nd_ext_simple(nd_trace *t, const char *path, int nin, const nd_xj_arr *ins,
                        int nextra, PyObject *const *extra, PyObject *kw, nd_ext_out *o);
/* any of argv[from..to) given -> not modelled */
int nd_ext_given(PyObject **argv, int from, int to);
/* broadcast two batch shapes; 0 ok, 1 mismatch (no exception) */
int nd_ext_batch_broadcast(int n1, const npy_intp *s1, int n2, const npy_intp *s2, int *nd,
                           npy_intp *out);

/* each area registers its functions and methods */
int nd_shim_register_matmul(nd_shim_table *tab);
int nd_shim_register_linalg(nd_shim_table *tab);
int nd_shim_register_fft(nd_shim_table *tab);
int nd_shim_register_sort(nd_shim_table *tab);
int nd_shim_register_stats(nd_shim_table *tab);
/* np.mgrid / np.ogrid objects in the shim module (shim_grid.c) */
int nd_shim_register_grid(PyObject *module);

/* r, the result of a traced operation that began when the graph had
 * `first` nodes, once an error its nodes may raise when they run has been
 * given the chance to reach the user's try/with block (nd_trace_settle) */
static inline PyObject *nd_shim_settled(nd_trace *t, nd_id first, PyObject *r)
{
    if (r && nd_trace_settle(t, first) < 0) Py_CLEAR(r);
    return r;
}
static inline nd_id nd_shim_graph_size(nd_trace *t) { return (nd_id)nd_trace_graph(t)->n; }

#endif
