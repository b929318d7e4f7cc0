/* trace_internal.h -- what the tracer's own files (the .c files of src/trace/) share.
 *
 * Nothing outside src/trace_*.c includes this: other modules use trace.h.
 *
 * Object model
 * ------------
 * nd_trace    one capture session: the pending graph, the backend to flush
 *             with, the caller storages (arrays from outside the function,
 *             by identity), the list of live proxies. Refcounted C struct:
 *             the thread's "current" slot, every storage and every running
 *             compiled call hold a reference; it outlives its capture while
 *             escaped proxies still need it to compute their value.
 * nd_storage  one functional buffer: the node of its current version, the
 *             caller ndarray it stands for (or NULL for a fresh value), and
 *             whether pending writes must reach that caller array.
 * NdProxy     (storage, affine view). Once its trace has ended (or when it
 *             is used from another thread's trace) a proxy *detaches*: it
 *             computes its value once, drops the storage and forwards every
 *             operation to that concrete ndarray.
 *
 * Every function here follows the usual CPython rule: NULL / -1 / ND_NONE
 * with an exception set on error.
 */
#ifndef ND_TRACE_INTERNAL_H
#define ND_TRACE_INTERNAL_H
#include "core/npy.h"
#include "core/containers.h"
#include "trace.h"
#include "runtime/backend.h"
#include <stddef.h>

typedef struct nd_storage nd_storage;
typedef struct NdProxy NdProxy;
typedef struct nd_ad_capture nd_ad_capture;  /* trace_grad.c */

/* ND_EXC_SAVE / ND_EXC_RESTORE: core/npy.h */

/* a backend kind: an index of nd_backends (runtime/backend.h), or this */
enum { ND_BACKEND_CUSTOM = ND_BACKEND_BUILTIN };

/* open-addressing map: caller ndarray pointer -> storage */
typedef struct {
    PyObject **keys;
    nd_storage **vals;
    Py_ssize_t n, cap;
} nd_ptrmap;

struct nd_trace {
    Py_ssize_t refcnt;
    nd_graph *g;
    int backend;              /* ND_BACKEND_* */
    PyObject *backend_fn;     /* owned: custom compiler_fn, or NULL */
    PyObject *backend_cache;  /* owned dict (custom backends): key -> callable */
    PyObject *options;        /* owned or NULL: compile(options=...) */
    PyObject *explain;        /* owned list of records while explaining, or NULL */
    int fullgraph;            /* active compiled frames with fullgraph=True */
    int ended;                /* the capture has returned */
    int flushing;             /* a backend is running this trace's graph */
    nd_ptrmap callers;        /* caller storages, by caller array identity */
    nd_storage **clist;       /* the same storages, in creation order */
    Py_ssize_t nclist, capclist;
    Py_ssize_t ndirty;        /* storages with writes pending (dirty set; never
                                 fewer): 0 lets the per-operation and per-flush
                                 walks of clist -- which holds every array the
                                 capture touched, thousands in a long loop --
                                 be skipped (nd__storage_dirty, settle) */
    NdProxy *proxies;         /* intrusive list of attached proxies */
    Py_ssize_t value_bytes;   /* bytes held by node values since last sweep */
    PyObject *fpstate;        /* owned: NumPy's error state (extobj) the pending
                                 ops were traced under, or NULL */
    int scalar_stores;        /* SETITEMs marked ND_F_SCALAR_STORE made: a flush
                                 looks for them only then */
    nd_ad_capture *ad;        /* a differentiated function is running (innermost
                                 first), or NULL: trace_grad.c */
    PyFrameObject *entry_frame; /* borrowed: the frame that called the compiled
                                 function (alive while it runs); the user's
                                 frames are those below it (trace_handlers.c) */
    /* a flush's per-node scratch, kept between flushes (trace_flush.c):
     * scr_seen and scr_anc all zero, scr_map all ND_NONE between uses, for
     * scr_cap nodes; a flush resets only the entries it set, so its cost
     * is its own nodes', not the capture's length */
    char *scr_seen, *scr_anc;
    nd_id *scr_map;
    Py_ssize_t scr_cap;
    int scr_busy;
    uint8_t returning;        /* the return value is being materialized */
    nd_id *dead;              /* PyMem: values the function computed and never
                                 used that may warn; the return flush computes
                                 them too, as NumPy ran them (trace_flush.c) */
    int ndead;
    nd_id dead_floor;         /* nodes below it never count as dead: a flush
                                 raised after them */
    int shared_touch;         /* an operation read or wrote a `shared` storage:
                                 nd_trace_settle runs the pending work */
    void *pins;               /* owned, or NULL: the dims marked dynamic a
                                 flush checks the graph does not pin
                                 (trace_pins.c) */
    char *swept;              /* PyMem or NULL, swept_cap bytes: 1 for a node
                                 whose value a sweep released (it ran: the
                                 return flush must not run it as dead) */
    Py_ssize_t swept_cap;
    nd_id chunk_base;         /* g->n when the last flush ended: what is
                                 pending since (nd__flush_chunk) */
    nd_id chunk_next;         /* g->n at which nd__flush_chunk looks again */
    uint8_t chunking;         /* a chunk flush is running */
};

struct nd_storage {
    Py_ssize_t refcnt;
    nd_trace *trace;          /* owned reference */
    nd_id version;            /* node holding the current value */
    PyObject *caller;         /* owned: the caller ndarray, or NULL */
    uint8_t dirty;            /* writes pending for `caller` */
    uint8_t readonly;         /* caller array is not writeable */
    uint8_t shared;           /* the function's code can reach this memory
                                 through a real ndarray the tracer never sees
                                 (trace_reach.c): its operations run at once */
    uint8_t foreign;          /* a real array the function's code holds (made
                                 by code numdyn does not trace, a global, an
                                 attribute) and may write with NumPy at any
                                 time: each read takes a snapshot (trace_lift.c) */
    uint8_t ndim;
    int dtype;
    npy_intp shape[ND_MAXDIMS];
    unsigned mark;            /* scratch for sweeps */
    uint8_t rebased;          /* re-expressed over its caller's memory order:
                                 1-d, caller = that memory (see rebase_memory) */
    PyObject *root;           /* rebased: owned, the caller array itself */
    npy_intp root_off;        /* rebased: the caller array's own map over it */
    npy_intp root_strides[ND_MAXDIMS];
    nd_id rebase_version;     /* rebased: the version the rebase made, whose
                                 value is `caller`'s memory as it is */
    uint8_t korder;           /* computed value NumPy lays out in memory
                                 order kperm (outermost first), not C order
                                 (trace_layout.c); 0 for caller storages */
    int8_t kperm[ND_MAXDIMS];
    PyObject *exports;        /* owned list of weakrefs: real NumPy arrays that
                                 alias `caller` and escaped to Python code;
                                 while one lives, writes are flushed at once */
    nd_storage *dview_of;     /* owned: this value is NumPy's view of that
                                 storage at an index the graph computes
                                 (nd_proxy_dynamic_view), taken as a gather */
    PyObject *dview_base;     /* owned with dview_of: the proxy indexed */
    PyObject *dview_key;      /* owned with dview_of: its key (lazy integers) */
    Py_ssize_t ndviews;       /* live storages whose dview_of is this one */
};

struct NdProxy {
    PyObject_HEAD
    nd_storage *st;           /* owned; NULL once detached */
    PyObject *value;          /* owned: the concrete array once detached */
    NdProxy *prev, *next;     /* st->trace->proxies while attached */
    PyObject *weakrefs;
    nd_id vnode, vver;        /* read cache: node `vnode` is this view of version `vver` */
    uint8_t ndim, is_scalar, identity, readonly;
    uint8_t fresh;            /* a view object of its own (a[...], a.T.T): even
                                 with an identity map it is not the storage's
                                 array itself, as under NumPy */
    uint8_t part;             /* 0, or ND_F_VIEW_REAL / ND_F_VIEW_IMAG of a complex storage */
    uint8_t memmap;           /* stands for the caller's np.memmap argument
                                 itself (trace_compile.c): what NumPy would
                                 return as a memmap runs on that object */
    PyTypeObject *subtype;    /* owned: the ndarray subclass this value is
                                 under NumPy (trace_subclass.c), or NULL */
    PyObject *sdict;          /* owned with subtype: its instance __dict__ */
    PyObject *base;           /* owned: what ndarray.base gives (NULL: None) */
    PyObject *vbase;          /* owned: the base a view of this gets, NumPy's
                                 collapsed chain (NULL: this proxy itself) */
    PyObject *arg;            /* owned: the argument array this proxy stands
                                 for when it is a view of another argument's
                                 memory (trace_compile.c's alias_proxies) */
    int dtype;
    npy_intp off;             /* element offset into the storage's C-order flat index */
    npy_intp shape[ND_MAXDIMS];
    npy_intp strides[ND_MAXDIMS]; /* element units over that flat index */
};

/* a write is pending for s's caller array (keeps t->ndirty) */
static inline void nd__storage_dirty(nd_storage *s)
{
    if (s->caller && !s->dirty) {
        s->dirty = 1;
        s->trace->ndirty++;
    }
}

/* NumPy's error-state context variable (umath._extobj_contextvar),
 * borrowed; NULL with no exception under a NumPy without it
 * (trace_flush.c). */
PyObject *nd__extobj_var(void);

/* ---- trace_subclass.c: plain ndarray subclasses (trace.h) */
/* 1: instances of tp are traced (tagged proxies); 0: not, why says what
 * of tp NumPy would run that the tracer does not reproduce; -1 error */
int nd__sub_traceable(PyTypeObject *tp, char *why, size_t n);
/* p stands for the caller's subclass instance obj: tag it (0 / -1) */
int nd__sub_tag_caller(NdProxy *p, PyObject *obj);
/* what Python code sees for tagged p whose plain value is v (steals v):
 * the caller object itself, or a subclass instance over v's data carrying
 * p's __dict__ (no __array_finalize__ call: it ran when p was made) */
PyObject *nd__sub_wrap(NdProxy *p, PyObject *v);
PyObject *nd__sub_getattr(NdProxy *p, PyObject *name);  /* after the proxy's own */
int nd__sub_setattr(NdProxy *p, PyObject *name, PyObject *value);
/* route the NumPy entry table through the subclass rules */
void nd__sub_install(nd_numpy_entries *np);

/* ---- trace_state.c */
extern _Thread_local nd_trace *nd__tls_trace;  /* the thread's current trace */
extern _Thread_local int nd__tls_disabled;     /* >0: compiled functions run eagerly */
extern _Thread_local PyObject *nd__tls_explain; /* list collecting explain records */
extern PyObject *nd__GraphBreakError;
extern PyObject *nd__log_hook;                  /* callable(kind, msg) or NULL */

/* nodes_hint: expected graph size (the last capture's), to reserve once */
nd_trace *nd__trace_new(int backend, PyObject *backend_fn, PyObject *cache,
                        PyObject *options, int32_t nodes_hint);
void nd__trace_incref(nd_trace *t);
void nd__trace_decref(nd_trace *t);
/* End a capture: detach nothing (escaped proxies detach lazily), drop the
 * caller table so storages no longer pin the trace. */
void nd__trace_end(nd_trace *t);
nd_storage *nd__caller_find(nd_trace *t, PyObject *arr);
/* mark the caller storages whose memory fn's code can reach untraced
 * (trace_reach.c); 0 / -1 */
int nd__mark_reachable(nd_trace *t, PyObject *fn, PyObject *const *args, Py_ssize_t n);
/* an EXTERN node whose NumPy function may raise because of the values it
 * is given (LinAlgError of a singular matrix...; trace_handlers.c) */
int nd__extern_may_raise(const nd_node *n);
/* a RuntimeWarning NumPy gives may raise: a warnings filter 'error', or
 * showwarning replaced (loop_run.c); 1, 0 or -1 */
int nd__warnings_may_raise(void);
int nd__caller_add(nd_trace *t, nd_storage *s);
/* "file:line: source" of the user's innermost frame, as a tuple
 * (reason, filename, lineno, source). New ref. */
PyObject *nd__user_location(const char *reason);
void nd__log(const char *kind, PyObject *msg);

/* ---- trace_storage.c, trace_views.c: storages, proxies and their maps */
nd_storage *nd__storage_new(nd_trace *t, nd_id version, PyObject *caller);
void nd__storage_decref(nd_storage *s);
void nd__proxy_free(PyObject *o);  /* tp_dealloc's last step (free list) */
PyObject *nd__proxy_new(nd_storage *s, int is_scalar);  /* identity view */
/* p is a view NumPy makes of b: b's read-only state, NumPy's base */
void nd__proxy_view_of(NdProxy *p, NdProxy *b);
/* p stands for the caller's array a inside the function: a's base */
void nd__proxy_set_caller(NdProxy *p, PyArrayObject *a);
/* proxy on s with map (off, strides) over s's C-order flat index */
PyObject *nd__proxy_on(nd_storage *s, int ndim, const npy_intp *shape, npy_intp off,
                       const npy_intp *strides);
/* the proxy belongs to the trace active on this thread */
static inline int nd__live(NdProxy *p)
{
    return p->st && p->st->trace == nd__tls_trace && !p->st->trace->ended &&
           !p->st->trace->flushing;
}
/* read a proxy's value in its own trace (no foreign-proxy redirection) */
nd_id nd__proxy_read_own(NdProxy *p);
/* storage for a caller ndarray (arguments, globals), created on first
 * sight; borrowed (the trace's caller table owns it) */
nd_storage *nd__caller_storage(nd_trace *t, PyObject *arr);
/* the proxy standing for the caller array of s itself (new ref) */
PyObject *nd__caller_proxy(nd_storage *s, int is_scalar);
/* The array whose C-order flat index is base's memory order: base itself
 * when C-contiguous, else (any other dense layout) a 1-d view of its whole
 * byte extent. NULL with no exception when base has gaps. New ref. */
PyObject *nd__memory_order_base(PyObject *base);
/* INPUT node for an array that is not a caller buffer */
nd_id nd__input_node(nd_trace *t, PyObject *arr);
/* per-dim decomposition of an affine map over a C-order flat index of
 * `bshape` into a map over `bshape`'s dims: out_off (multi-index of the
 * start) and coef[d][e]. 0 ok, 1 not expressible. */
int nd__decompose(int bndim, const npy_intp *bshape, int ndim, const npy_intp *shape,
                  npy_intp off, const npy_intp *strides, npy_intp *start,
                  npy_intp coef[][ND_MAXDIMS]);
/* Write the concrete array `arr` into the proxy's region (used after a
 * mutation that had to run on a materialized copy). */
int nd__proxy_write_array(NdProxy *p, PyObject *arr);

/* ---- shared by trace_storage.c, trace_views.c, trace_layout.c, trace_lift.c */
/* 1 when (ndim, shape, off, strides) maps the whole storage s in C order */
int nd__map_is_identity(const nd_storage *s, int ndim, const npy_intp *shape,
                        npy_intp off, const npy_intp *strides);
/* o as a proxy, or NULL with TypeError */
NdProxy *nd__as_proxy(PyObject *o);
/* A live proxy of the current trace standing for a foreign or detached
 * proxy's concrete value (its writes reach that value at the next flush). */
NdProxy *nd__adopt(NdProxy *p);
/* NumPy view of `arr` (shaped like the storage) through proxy p's map. */
PyObject *nd__view_of(NdProxy *p, PyArrayObject *arr);
/* Re-express caller storage s over its caller's memory order (trace_layout.c). */
int nd__rebase_memory(nd_storage *s);

/* ---- trace_layout.c */
/* s's memory strides (element units): its caller array's, its K order's,
 * else C order. 0, or 1 when unknown (a caller with odd strides). */
int nd__storage_memory_strides(const nd_storage *s, npy_intp *ms);
/* The layout of a computed value's concrete array (a fallback's result, an
 * extern's output) becomes its storage's K order, when it is dense. */
void nd__storage_adopt_layout(nd_storage *s, PyObject *arr);
/* Mark the output nodes of a flush that are versions of computed storages
 * (ND_F_KORDER, their order or C): the backend returns them so laid out. */
void nd__flush_mark_layouts(nd_trace *t, const char *is_target);
/* After a flush: storages of values NumPy computed (externs) take the
 * layout NumPy gave them. */
void nd__flush_adopt_layouts(nd_trace *t);

/* trace_storage.c: 1 while Python code holds a real alias of s's caller
 * buffer (s->exports, pruned of dead references), 0 none, -1 error */
int nd__exports_alive(nd_storage *s);

/* ---- trace_flush.c */
/* Compute nodes ids[0..n) of t (plus pending caller writes) and return new
 * references to their arrays in results[]. */
int nd__flush(nd_trace *t, const nd_id *ids, int n, PyObject **results);
/* Concrete value of any proxy (its own trace, detached or foreign): new ref
 * to an ndarray; 0-d is_scalar values stay 0-d arrays. */
PyObject *nd__proxy_value(NdProxy *p, const char *reason);
/* nd_trace_read (brk 0) / nd_trace_break_value (brk 1) of a proxy */
PyObject *nd__proxy_read(NdProxy *p, const char *what, int brk);
/* Replace every proxy in obj (tuples, lists, dicts, nested) by its value,
 * with ONE flush per trace. as_scalar: is_scalar proxies become NumPy
 * scalars (what the user's Python code should see). New ref. */
PyObject *nd__materialize_tree(PyObject *obj, int as_scalar);
/* Same for args + kwargs, returned through *out_args / *out_kwargs. */
int nd__materialize_call(PyObject *args, PyObject *kwargs, PyObject **out_args,
                         PyObject **out_kwargs);
/* A value handed back to Python code (a fallback's result...): if it is a
 * NumPy array aliasing a caller storage's buffer (or a tuple/list of
 * them), remember it so later writes to that storage reach it at once.
 * Returns r (borrowed) or NULL on error. */
PyObject *nd__note_escape(PyObject *r);
/* the same for v, the concrete value of proxy handed to Python code; a
 * computed storage becomes v's memory's (adopt_escaped). 0 / -1 */
int nd__note_escape_of(PyObject *proxy, PyObject *v);
/* Lazy values of this call the function stored where its caller will find
 * them (arguments' lists, dicts and objects, its bound self, closure cells,
 * globals, and attributes of objects inside `result`, which may be NULL)
 * are replaced in place by their values (trace_escapes.c).
 * 1 replaced some, 0 none, -1 error. */
int nd__settle_escapes(nd_trace *t, PyObject *fn, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames, PyObject *result);
/* Containers passed in and traced through copies (trace_escapes.c):
 * nd__arg_pairs, before the call, pairs each copy with its original (a new
 * ref, None when nothing was copied); nd__reflect_args, after it, gives
 * the originals what the function did to the copies. 1 changed, 0 not,
 * -1 error. */
PyObject *nd__arg_pairs(PyObject *const *args, PyObject *const *wrapped, Py_ssize_t n);
int nd__reflect_args(PyObject *pairs, PyObject *const *args, PyObject *const *wrapped, Py_ssize_t n);
/* nd__needed_nodes' set as a list (PyMem, *out), walked from the live
 * versions through the nodes it marks only, so its cost is what is live,
 * not the capture's length; mark: t->g->n bytes, zero on entry and on
 * return. The count, or -1 with MemoryError. */
Py_ssize_t nd__needed_list(nd_trace *t, char *mark, nd_id **out);
/* Flush every attached proxy of t and pending writes (graph_break()). */
int nd__flush_all(nd_trace *t);
/* an INPUT node of caller array `caller` as it is now (ND_NONE + error) */
nd_id nd__caller_input(nd_trace *t, PyObject *caller);
/* ---- trace_resize.c: `a.shape = s` of the caller's array object itself:
 * made on that object (NumPy's checks) after the pending writes; 1 done,
 * 0 p is not that object (an in-graph reshape serves), -1 error */
int nd__shape_set_caller(NdProxy *p, PyObject *value);
/* Between operations: when ND_CHUNK_NODES nodes were traced since the last
 * flush, flush every live value (a chunk), so a long loop of lazy
 * statements keeps a bounded graph (issue 13 point 2). 0 / -1. */
int nd__flush_chunk(nd_trace *t);
/* Write pending caller writes (used when the user's function raised). */
int nd__flush_writes(nd_trace *t);
/* t->dead from t->g: uncomputed ufunc/cast/reduction/scan nodes nothing
 * reads (0, -1 on error) */
int nd__note_dead(nd_trace *t);
/* the return flush when the return value held nothing lazy: computes
 * t->dead (and pending caller writes) */
int nd__flush_dead(nd_trace *t);

/* The node's concrete array (its value, or an INPUT's array), or NULL
 * (borrowed). */
PyObject *nd__node_array(nd_graph *g, nd_id id);
/* x's bytes overlap those of one of ws[0..nw) other than skip. */
int nd__overlaps_any(PyObject *x, PyObject *const *ws, Py_ssize_t nw, PyObject *skip);
/* Nodes a later flush may still read (PyMem array of g->n + 1 flags). */
char *nd__needed_nodes(nd_trace *t);

/* ---- trace_outside.c
 * Arrays handed to code outside the graph (a NumPy fallback, a disabled
 * function) may be written there (np.fill_diagonal, np.put...), while
 * lazy work still to run reads their old contents. begin() snapshots
 * every needed node value the handed arrays overlap; end() compares, and
 * for each one that changed the node keeps the snapshot (its readers see
 * the old contents, as under NumPy's eager order) and every storage whose
 * version it was gets the written buffer as its new version (views see
 * the new contents). */
typedef struct {
    Py_ssize_t n;
    nd_id *ids;
    PyObject **orig, **snap;  /* owned */
} nd_outside;
int nd__outside_begin(nd_trace *t, PyObject *handed, nd_outside *o);
/* Append the ndarrays in o (nested tuples, lists, dicts) to list;
 * traced_only: exact ndarrays the tracer lifts, in exact dicts. 0 or -1. */
int nd__gather_arrays(PyObject *o, PyObject *list, int traced_only, int depth);
/* ok == 0 (the call raised): only releases; the error stays set. */
int nd__outside_end(nd_trace *t, nd_outside *o, int ok);

/* ---- trace_grad.c */
/* A value of proxy p is about to leave the graph as data (reason: the
 * break's, or NULL for a NumPy call numdyn makes outside the graph) while
 * a differentiated function runs (t->ad): NotImplementedError when it
 * depends on a differentiated input through floats -- its gradient would
 * be lost -- except for bool() (a branch), repr() and str(). 0 / -1. */
int nd__ad_escape(nd_trace *t, NdProxy *p, const char *reason);
/* A value read that runs the graph so far without a recorded graph break
 * (an element read while no call is recorded, NumPy code given a lazy
 * array...; what: the construct, NULL for a generic text): numdyn.explain
 * gets a "read" record with its user line; under fullgraph=True it is
 * GraphBreakError (the function would run as more than one graph). 0/-1. */
int nd__explain_read(nd_trace *t, const char *what);

/* ---- trace_compile.c */
int nd__compile_init(PyObject *m);
/* ---- trace_proxy.c */
int nd__proxy_type_init(PyObject *m);
/* ---- trace_remap.c */
/* The copy of `fn` whose globals that name numpy (or numpy functions, or
 * policy-wrapped functions) resolve to the shim. *guards receives a tuple
 * (globals, name, expected, ...) checked by nd__remap_valid. New refs;
 * returns fn itself (incref'd) when nothing is remapped. */
PyObject *nd__remap(PyObject *fn, PyObject **guards);
int nd__remap_valid(PyObject *guards);
/* a Python function of the user's (not NumPy's or numdyn's, not a
 * generator): its calls get the shim as their `np` too */
int nd__user_function(PyObject *f);
/* the user function behind the wrapper trace_remap.c binds to a helper's
 * renamed global (borrowed), else NULL */
PyObject *nd__helper_target(PyObject *v);
/* v is trace_remap.c's view of a user class or module */
int nd__namespace_view_user(PyObject *v);
/* Registry of allow/disallow/forbid/disable policy wrappers (trace_policy.c). */
PyObject *nd__policy_for(PyObject *fn);  /* borrowed wrapper or NULL */
PyObject *nd__substitute_for(PyObject *fn);  /* borrowed polyfill or NULL */
int nd__policy_init(PyObject *m);
/* trace_pins.c: a top-level capture whose arguments carry dynamic marks
 * checks, before each flush, that its graph pins none of those dims to a
 * constant (ConstraintViolationError otherwise). nd__pins_begin sets
 * t->pins (or leaves it NULL: no marks) -- 0 / -1; nd__pins_lifted notes
 * the INPUT node `id` snapshotting an outside array `orig`;
 * nd__pins_check: 0, or -1 with the error; nd__pins_free: t->pins. */
int nd__pins_begin(nd_trace *t, PyObject *fn, PyObject *const *args, Py_ssize_t n, int spec_all);
void nd__pins_lifted(nd_trace *t, PyObject *orig, nd_id id);
int nd__pins_check(nd_trace *t);
/* x[:7] of a dim marked dynamic: ConstraintViolationError (0 / -1) */
int nd_trace_pins_slice(nd_trace *t, PyObject *self, PyObject *key);
void nd__pins_free(void *pins);

#endif
