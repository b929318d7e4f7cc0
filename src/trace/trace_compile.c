/* trace_compile.c -- numdyn._C.CompiledFunction: what numdyn.compile returns.
 *
 * Calling it with no trace active on the thread starts a capture: every
 * ndarray argument (also inside tuples, lists and dicts) becomes a proxy on
 * a caller storage, the function runs (its numpy remapped to the shim, see
 * trace_remap.c), and the return value's proxies are computed in ONE flush
 * together with pending writes to caller arrays. Called while its thread is
 * already tracing, it joins that trace and returns proxies (inlining).
 *
 * A top-level call first tries a recorded trace (trace_replay.c): when the
 * function is replayable and the arguments fit an entry's guards, the
 * entry's graph runs directly and the Python code does not run at all.
 * Otherwise the call is captured, and recorded when it qualifies.
 *
 * Containers holding arrays are passed as copies (a list argument the
 * function appends to is not the caller's list): the price of replacing
 * the arrays inside them by proxies.
 */
#include "trace_replay.h"
#include "core/strides.h"
#include "trace_control.h"
#include "trace/loop.h"
#include "runtime/floor.h"
#include "toolchain/toolchain.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fn;            /* the user's callable */
    PyObject *dict;          /* __dict__: functools.update_wrapper fills it */
    PyObject *backend_fn;    /* custom compiler_fn or NULL */
    PyObject *backend_name;  /* for repr */
    PyObject *options;
    PyObject *cache;         /* custom backends: graph key -> compiled callable */
    PyObject *dynamic;
    PyObject *remapped;      /* fn with numpy resolved to the shim, or NULL */
    PyObject *guards;        /* when `remapped` is still valid (trace_remap.c) */
    PyObject *weakrefs;
    nd_replay *replay;       /* recorded traces (trace_replay.c), or NULL */
    nd_floor *floor;         /* speed floor (floor.h), or NULL when off */
    nd_ctl *ctl;             /* programs, recompile policy, hooks (trace_control.h) */
    unsigned gen;            /* reset() generation the caches belong to */
    int32_t last_nodes;      /* graph size of the last capture (reservation hint) */
    int backend, fullgraph, disable;
} NdCompiled;

static unsigned reset_gen = 1;
static PyObject *backends;   /* registered name -> compiler_fn */

/* ------------------------------------------------------------ wrapping */

typedef struct {
    nd_trace *t;
    PyObject *alias;
} wrap_ctx;

/* An exact ndarray argument becomes a caller proxy (the same proxy for an
 * array passed twice: alias maps id -> proxy), looking into tuples, lists
 * and dicts down to 16 levels. */
/* np.memmap (exactly: a subclass of it may override anything), or NULL */
static PyTypeObject *memmap_type(void)
{
    static PyObject *tp;
    if (!tp) {
        PyObject *np = PyImport_ImportModule("numpy");
        tp = np ? PyObject_GetAttrString(np, "memmap") : NULL;
        Py_XDECREF(np);
        if (!tp || !PyType_Check(tp)) { PyErr_Clear(); Py_CLEAR(tp); return NULL; }
    }
    return (PyTypeObject *)tp;
}

int nd_proxy_has_memmap(PyObject *o)
{
    if (nd_proxy_check(o)) return ((NdProxy *)o)->memmap;
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject **items = PySequence_Fast_ITEMS(o);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = items[i];
            if (nd_proxy_check(x) ? ((NdProxy *)x)->memmap
                                  : (PyTuple_CheckExact(x) || PyList_CheckExact(x)) && nd_proxy_has_memmap(x))
                return 1;
        }
    }
    return 0;
}

static PyObject *wrap_leaf(PyObject *o, int depth, void *ctx)
{
    wrap_ctx *c = ctx;
    if (PyArray_Check(o) && Py_TYPE(o) == memmap_type() && nd_supported_array(o)) {
        /* an np.memmap argument: traced where NumPy's result is no memmap
         * (nd_proxy_has_memmap); one sharing memory with another argument
         * runs with NumPy, as other subclasses do */
        PyObject *key = c->alias != Py_None ? PyLong_FromVoidPtr(o) : NULL;
        int aliased = key && PyDict_Contains(c->alias, key) == 1;
        Py_XDECREF(key);
        PyErr_Clear();
        if (!aliased) {
            nd_storage *s = nd__caller_storage(c->t, o);
            PyObject *p = s ? nd__caller_proxy(s, 0) : NULL;
            if (p) {
                nd__proxy_set_caller((NdProxy *)p, (PyArrayObject *)o);
                ((NdProxy *)p)->memmap = 1;
            }
            return p;
        }
    }
    char why[300] = "";
    int sub = 0;
    if (PyArray_Check(o) && !PyArray_CheckExact(o) && nd_supported_array(o) &&
        (sub = nd__sub_traceable(Py_TYPE(o), why, sizeof why)) > 0) {
        /* a plain subclass: a tagged proxy (trace_subclass.c); one sharing
         * memory with another argument runs with NumPy */
        PyObject *key = c->alias != Py_None ? PyLong_FromVoidPtr(o) : NULL;
        int aliased = key && PyDict_Contains(c->alias, key) == 1;
        Py_XDECREF(key);
        PyErr_Clear();
        if (aliased) {
            snprintf(why, sizeof why, "an argument is an ndarray subclass (%.80s) sharing memory "
                     "with another argument: NumPy runs the operations on it", Py_TYPE(o)->tp_name);
        } else {
            nd_storage *s = nd__caller_storage(c->t, o);
            PyObject *p = s ? nd__caller_proxy(s, 0) : NULL;
            if (p) {
                nd__proxy_set_caller((NdProxy *)p, (PyArrayObject *)o);
                if (nd__sub_tag_caller((NdProxy *)p, o) < 0) Py_CLEAR(p);
                else nd_trace_not_replayable(c->t);  /* replay skips __array_finalize__ */
            }
            return p;
        }
    }
    if (sub < 0) return NULL;
    if (!PyArray_CheckExact(o) || !nd_supported_array(o)) {
        if (!PyArray_Check(o)) return ND_NOT_LEAF;
        /* an array the tracer does not stand in for runs with NumPy, and
         * that is said: a recorded graph break at the call (explain shows
         * it; fullgraph=True raises) -- never a silent fallback */
        if (!PyArray_CheckExact(o) && why[0])
            ;  /* nd__sub_traceable or the alias test said why */
        else if (!PyArray_CheckExact(o))
            snprintf(why, sizeof why, "an argument is an ndarray subclass (%.80s): NumPy runs the "
                     "operations on it, with the subclass's semantics", Py_TYPE(o)->tp_name);
        else if (PyArray_NDIM((PyArrayObject *)o) > ND_MAXDIMS)
            snprintf(why, sizeof why, "an argument is an array of rank %d, above the %d dims numdyn "
                     "traces: NumPy runs the operations on it", PyArray_NDIM((PyArrayObject *)o), ND_MAXDIMS);
        else
            snprintf(why, sizeof why, "an argument is an array of dtype %.60s, which numdyn does not "
                     "trace: NumPy runs the operations on it",
                     PyArray_DESCR((PyArrayObject *)o)->typeobj->tp_name);
        if (nd_trace_record_break(c->t, why) < 0) return NULL;
        return Py_NewRef(o);
    }
    if (c->alias != Py_None) {
        PyObject *key = PyLong_FromVoidPtr(o);
        if (!key) return NULL;
        PyObject *p = PyDict_GetItemWithError(c->alias, key);
        Py_DECREF(key);
        if (p == Py_None) {  /* sharing memory in a way no storage models */
            if (nd_trace_record_break(c->t, "an argument shares memory with another argument as a "
                                      "view of another dtype or layout: NumPy runs the operations "
                                      "on it") < 0)
                return NULL;
            return Py_NewRef(o);
        }
        if (p) return Py_NewRef(p);
        if (PyErr_Occurred()) return NULL;
    }
    nd_storage *s = nd__caller_storage(c->t, o);
    PyObject *p = s ? nd__caller_proxy(s, 0) : NULL;
    if (p) nd__proxy_set_caller((NdProxy *)p, (PyArrayObject *)o);
    return p;
}

static PyObject *wrap_obj(nd_trace *t, PyObject *o, PyObject *alias)
{
    wrap_ctx c = {t, alias};
    return nd_map_leaves(o, wrap_leaf, &c, 16, 0);
}

/* ---------------------------------------------- arguments sharing memory */

static PyObject *ultimate_base(PyObject *a)
{
    PyObject *b = a, *nb;
    while ((nb = PyArray_BASE((PyArrayObject *)b)) && PyArray_Check(nb)) b = nb;
    return b;
}

/* Arguments that are overlapping views of one dense base array get proxies
 * on ONE storage for that base's memory, so a write through one is seen
 * through the others as under NumPy. Returns a dict id(array) -> proxy, or
 * None when no arguments alias. Where that cannot be done for one of them
 * (a view of another dtype: `x.view(np.int64)`, `z.real` beside `z`; a
 * view not aligned to its base's elements; a base with gaps; an array
 * NumPy runs or a traced subclass), a separate storage would miss the
 * others' writes: every argument on that base's memory maps to None
 * instead, and runs with NumPy (wrap_leaf). */
static int alias_modeled(PyObject *a, PyObject *ba)
{
    PyArrayObject *A = (PyArrayObject *)a;
    /* an argument NumPy runs (a dtype numdyn does not trace: structured,
     * datetime64; a subclass) or a traced subclass (its own storage) */
    return PyArray_CheckExact(a) && nd_supported_array(a) && nd_supported_array(ba) &&
           PyArray_EquivTypes(PyArray_DESCR(A), PyArray_DESCR((PyArrayObject *)ba));
}

static int aliases_another(PyObject *list, Py_ssize_t m, PyObject *a, PyObject *ba)
{
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *c = PyList_GET_ITEM(list, j);
        if (c != a && ultimate_base(c) == ba &&
            nd_mem_overlap((PyArrayObject *)a, (PyArrayObject *)c))
            return 1;
    }
    return 0;
}

/* list[i]'s base cannot be modeled: its aliasing arguments met so far map
 * to None in *out (those met later: through *unmodeled) */
static int unmodeled_base(PyObject *list, Py_ssize_t i, PyObject *ba, PyObject **unmodeled,
                          PyObject **out)
{
    Py_ssize_t m = PyList_GET_SIZE(list);
    PyObject *bkey = PyLong_FromVoidPtr(ba);
    int r = bkey && (*unmodeled || (*unmodeled = PySet_New(NULL))) ? PySet_Add(*unmodeled, bkey) : -1;
    Py_XDECREF(bkey);
    if (r < 0 || (!*out && !(*out = PyDict_New()))) return -1;
    for (Py_ssize_t j = 0; j <= i; j++) {
        PyObject *c = PyList_GET_ITEM(list, j);
        if (ultimate_base(c) != ba || !aliases_another(list, m, c, ba)) continue;
        PyObject *key = PyLong_FromVoidPtr(c);
        r = key ? PyDict_SetItem(*out, key, Py_None) : -1;
        Py_XDECREF(key);
        if (r < 0) return -1;
    }
    return 0;
}

static PyObject *alias_proxies(nd_trace *t, PyObject *const *args, Py_ssize_t n)
{
    PyObject *list = PyList_New(0), *out = NULL, *mem = NULL, *unmodeled = NULL;
    if (!list) return NULL;
    for (Py_ssize_t k = 0; k < n; k++)
        if (nd__gather_arrays(args[k], list, 0, 0) < 0) goto done;
    Py_ssize_t m = PyList_GET_SIZE(list);
    for (Py_ssize_t i = 0; m >= 2 && i < m; i++) {
        PyObject *a = PyList_GET_ITEM(list, i), *ba = ultimate_base(a);
        int alias = aliases_another(list, m, a, ba);
        int bad = 0;
        if (alias && !alias_modeled(a, ba)) {
            bad = 1;
        } else if (alias && unmodeled) {
            PyObject *bkey = PyLong_FromVoidPtr(ba);
            if (!bkey) goto done;
            bad = PySet_Contains(unmodeled, bkey);
            Py_DECREF(bkey);
            if (bad < 0) goto done;
        }
        if (bad) {
            if (unmodeled_base(list, i, ba, &unmodeled, &out) < 0) goto done;
            continue;
        }
        PyArrayObject *A = (PyArrayObject *)a, *B = (PyArrayObject *)ba;
        if (!alias) continue;
        /* one memory-order array per base, shared by all its views */
        if (!mem && !(mem = PyDict_New())) goto done;
        PyObject *bkey = PyLong_FromVoidPtr(ba);
        if (!bkey) goto done;
        PyObject *M = PyDict_GetItemWithError(mem, bkey);
        if (!M && !PyErr_Occurred()) {
            M = nd__memory_order_base(ba);
            if (M) {
                int r = PyDict_SetItem(mem, bkey, M);
                Py_DECREF(M);  /* the dict keeps it */
                if (r < 0) M = NULL;
            } else if (PyDict_SetItem(mem, bkey, Py_None) < 0) {
                Py_DECREF(bkey);
                goto done;
            }
        }
        Py_DECREF(bkey);
        if (!M) {
            if (PyErr_Occurred()) goto done;
            continue;
        }
        if (M == Py_None) {  /* a base with gaps */
            if (unmodeled_base(list, i, ba, &unmodeled, &out) < 0) goto done;
            continue;
        }
        B = (PyArrayObject *)M;
        npy_intp isz = PyArray_ITEMSIZE(A), off = PyArray_BYTES(A) - PyArray_BYTES(B);
        npy_intp st[ND_MAXDIMS];
        int ok = off % isz == 0;
        for (int d = 0; ok && d < PyArray_NDIM(A); d++) {
            ok = PyArray_STRIDE(A, d) % isz == 0;
            st[d] = PyArray_STRIDE(A, d) / isz;
        }
        if (!ok) {  /* not an element-aligned view */
            if (unmodeled_base(list, i, ba, &unmodeled, &out) < 0) goto done;
            continue;
        }
        nd_storage *s = nd__caller_storage(t, M);
        if (!s) goto done;
        if (!out && !(out = PyDict_New())) goto done;
        PyObject *p = nd__proxy_on(s, PyArray_NDIM(A), PyArray_DIMS(A), off / isz, st);
        PyObject *key = p ? PyLong_FromVoidPtr(a) : NULL;
        if (p && !PyArray_ISWRITEABLE(A)) ((NdProxy *)p)->readonly = 1;
        if (p) {
            nd__proxy_set_caller((NdProxy *)p, A);
            ((NdProxy *)p)->arg = Py_NewRef(a);
        }
        int r = key ? PyDict_SetItem(out, key, p) : -1;
        Py_XDECREF(key);
        Py_XDECREF(p);
        if (r < 0) goto done;
    }
    if (!out) out = Py_NewRef(Py_None);
    Py_XDECREF(unmodeled);
    Py_DECREF(list);
    Py_XDECREF(mem);  /* the storages own their memory-order arrays */
    return out;
done:
    Py_XDECREF(unmodeled);
    Py_XDECREF(out);
    Py_DECREF(list);
    Py_XDECREF(mem);
    return NULL;
}

/* the function to run: the remapped copy when the shim is there */
static PyObject *target(NdCompiled *cf)
{
    if (cf->gen != reset_gen) {
        Py_CLEAR(cf->remapped);
        Py_CLEAR(cf->guards);
        if (cf->cache) PyDict_Clear(cf->cache);
        nd__replay_reset(cf->replay);
        nd_floor_reset(cf->floor);
        nd__ctl_reset(cf->ctl);
        cf->gen = reset_gen;
    }
    if (cf->remapped) {
        int ok = nd__remap_valid(cf->guards);
        if (ok < 0) return NULL;
        if (ok) return Py_NewRef(cf->remapped);
        Py_CLEAR(cf->remapped);
        Py_CLEAR(cf->guards);
    }
    PyObject *guards = NULL;
    PyObject *r = nd__remap(cf->fn, &guards);
    if (!r) return NULL;
    if (guards) {  /* NULL while the shim is not ready: retry next call */
        cf->remapped = Py_NewRef(r);
        cf->guards = guards;
    }
    return r;
}

static PyObject *call_traced(NdCompiled *cf, nd_trace *t, PyObject *fn, PyObject *const *args,
                             size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8], **w = n <= 8 ? small : PyMem_Malloc(sizeof(PyObject *) * (size_t)n);
    if (!w) return PyErr_NoMemory();
    Py_ssize_t k = 0;
    /* fullgraph=True, or a call inside numdyn.error_on_graph_break(True)
     * (trace_control.c): an untraced argument is a break too */
    int strict = cf->fullgraph || nd__tls_break_errors == 1;
    t->fullgraph += strict;
    PyObject *r = NULL, *alias = alias_proxies(t, args, n);
    if (!alias) goto done;
    for (; k < n; k++)
        if (!(w[k] = wrap_obj(t, args[k], alias))) goto done;
    if (nd__mark_reachable(t, cf->fn, args, n) < 0) goto done;
    PyObject *pairs = nd__arg_pairs(args, w, n);
    if (!pairs) goto done;
    r = PyObject_Vectorcall(fn, w, PyVectorcall_NARGS(nargsf), kwnames);
    /* the caller's lists and dicts take what the function did to them */
    if (pairs != Py_None) {
        int ch;
        if (r) {
            if ((ch = nd__reflect_args(pairs, args, w, n)) < 0) Py_CLEAR(r);
        } else {
            ND_EXC_SAVE(exc);
            if ((ch = nd__reflect_args(pairs, args, w, n)) < 0) PyErr_Clear();
            ND_EXC_RESTORE(exc);
        }
        if (ch > 0) nd_trace_not_replayable(t);
    }
    Py_DECREF(pairs);
done:
    t->fullgraph -= strict;
    for (Py_ssize_t i = 0; i < k; i++) Py_DECREF(w[i]);
    if (w != small) PyMem_Free(w);
    Py_XDECREF(alias);
    return r;
}

static PyObject *compiled_call(NdCompiled *cf, PyObject *fn, PyObject *const *args,
                               size_t nargsf, PyObject *kwnames);

static PyObject *cf_toplevel(NdCompiled *cf, PyObject *fn, PyObject *const *args,
                             size_t nargsf, PyObject *kwnames, uint64_t cost);

/* numdyn.CompileProfiler is active: top-level calls report to it */
static int profiling;

static PyObject *cf_call(PyObject *self, PyObject *const *args, size_t nargsf,
                         PyObject *kwnames);

/* A top-level call under the profiler: "call_begin" (its name) before, so
 * the breaks and recompiles logged during it are its own, and "call" after:
 * (name, seconds, graphs run, graph breaks, replayed, ran eagerly). */
static PyObject *cf_profiled(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    NdCompiled *cf = (NdCompiled *)self;
    PyObject *name = nd__ctl_qualname(cf->ctl);
    if (!name) return NULL;
    nd__log("call_begin", name);
    long long g0 = nd_counter_get(ND_CTR_GRAPHS), b0 = nd_counter_get(ND_CTR_GRAPH_BREAKS),
              r0 = nd_counter_get(ND_CTR_REPLAYS), e0 = nd_counter_get(ND_CTR_EAGER_CALLS);
    double t0 = nd__ctl_now();
    PyObject *r = cf_call(self, args, nargsf, kwnames);
    double dt = nd__ctl_now() - t0;
    ND_EXC_SAVE(exc);
    PyObject *rec = Py_BuildValue("(OdLLLL)", name, dt, nd_counter_get(ND_CTR_GRAPHS) - g0,
                                  nd_counter_get(ND_CTR_GRAPH_BREAKS) - b0,
                                  nd_counter_get(ND_CTR_REPLAYS) - r0,
                                  nd_counter_get(ND_CTR_EAGER_CALLS) - e0);
    if (rec) nd__log("call", rec);
    else PyErr_Clear();
    Py_XDECREF(rec);
    ND_EXC_RESTORE(exc);
    Py_DECREF(name);
    return r;
}

static PyObject *cf_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    if (profiling && !nd_trace_current()) return cf_profiled(self, args, nargsf, kwnames);
    return cf_call(self, args, nargsf, kwnames);
}

static PyObject *cf_call(PyObject *self, PyObject *const *args, size_t nargsf,
                         PyObject *kwnames)
{
    NdCompiled *cf = (NdCompiled *)self;
    if (cf->disable || nd__tls_disabled > 0 || !nd__ctl_enabled) {
        if (!nd__ctl_enabled) nd_counter_add(ND_CTR_EAGER_CALLS, 1);
        return PyObject_Vectorcall(cf->fn, args, nargsf, kwnames);
    }
    PyObject *fn = target(cf);
    if (!fn) return NULL;
    nd_trace *outer = nd_trace_current();
    if (outer) {  /* inline into the running capture */
        PyObject *r = call_traced(cf, outer, fn, args, nargsf, kwnames);
        Py_DECREF(fn);
        return r;
    }
    /* a top-level call: is it numdyn's to run (trace_control.h)? */
    Py_ssize_t idx = -1;
    uint64_t cost = 0;
    int adm = nd__ctl_admit(cf->ctl, args, nargsf, kwnames, &idx, &cost);
    if (adm != ND_ADMIT_RUN && adm != ND_ADMIT_COMPILE) {
        Py_DECREF(fn);
        return adm < 0 ? NULL : PyObject_Vectorcall(cf->fn, args, nargsf, kwnames);
    }
    int spec_saved = nd_marks_spec_all;
    nd_marks_spec_all = cf->ctl->spec_all;
    const char *tag = nd_debug_tag;
    if (adm == ND_ADMIT_COMPILE) tag = nd__ctl_debug_begin(cf->ctl, idx, args, nargsf, kwnames);
    else tag = nd__ctl_debug_begin(cf->ctl, idx, NULL, 0, NULL);
    double t0 = adm == ND_ADMIT_COMPILE ? nd__ctl_now() : 0;
    PyObject *r = cf_toplevel(cf, fn, args, nargsf, kwnames, cost);
    nd_marks_spec_all = spec_saved;
    nd_debug_tag = tag;
    if (adm == ND_ADMIT_COMPILE && nd__ctl_compiled(cf->ctl, idx, nd__ctl_now() - t0, r != NULL) < 0)
        Py_CLEAR(r);
    return r;
}

/* compiled_call framed as one call of the compile budget (background
 * compiles: toolchain.h). The floor's NumPy path is not framed: the
 * frame's clock read was 3.5% of a small function's warm call, and that
 * path compiles nothing but the first build of a captured loop, which then
 * gets the budget to itself, as a request outside any call does. */
static PyObject *framed_call(NdCompiled *cf, PyObject *fn, PyObject *const *args,
                             size_t nargsf, PyObject *kwnames)
{
    nd_disk_call_begin();
    PyObject *r = compiled_call(cf, fn, args, nargsf, kwnames);
    nd_disk_call_end();
    return r;
}

/* a top-level call numdyn runs: the speed floor's choice, then replay or
 * capture. cost: the call's cost key (admission signed the call). Steals
 * fn. */
static PyObject *cf_toplevel(NdCompiled *cf, PyObject *fn, PyObject *const *args,
                             size_t nargsf, PyObject *kwnames, uint64_t cost)
{
    if (!cf->floor || nd__tls_explain)
        return framed_call(cf, fn, args, nargsf, kwnames);
    /* the speed floor: numdyn or the original function, whichever is faster
     * for arguments like these (floor.h) */
    nd_floor_call fc;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    /* NumPy's path: the function untraced, its captured loops still C
     * (loop.h); when it has such loops the original function is a third */
    PyObject *plain = nd_loop_plain(cf->fn);
    if (!plain) { Py_DECREF(fn); return NULL; }
    nd_floor_choose(cf->floor, cost, args, n, plain != cf->fn, &fc);
    PyObject *r;
    if (fc.path != ND_FLOOR_COMPILED) {
        Py_DECREF(fn);
        r = PyObject_Vectorcall(fc.path == ND_FLOOR_NUMPY ? plain : cf->fn, args, nargsf, kwnames);
    } else {
        r = framed_call(cf, fn, args, nargsf, kwnames);
    }
    Py_DECREF(plain);
    nd_floor_done(&fc, r != NULL);
    return r;
}

/* a top-level call under numdyn: replay or capture. Steals fn. */
static PyObject *compiled_call(NdCompiled *cf, PyObject *fn, PyObject *const *args,
                               size_t nargsf, PyObject *kwnames)
{
    PyObject *self = (PyObject *)cf;
    /* replay: a recorded trace whose guards fit runs without the Python code */
    int want = 0;
    static int replay_off = -1;  /* NUMDYN_REPLAY=0: always trace (debugging, measuring) */
    if (replay_off < 0) {
        const char *e = getenv("NUMDYN_REPLAY");
        replay_off = e && strcmp(e, "0") == 0;
    }
    if (cf->backend != ND_BACKEND_CUSTOM &&
        !nd__tls_explain && !replay_off) {
        if (!cf->replay && !(cf->replay = nd__replay_new())) { Py_DECREF(fn); return NULL; }
        PyObject *r = nd__replay_try(cf->replay, fn, args, nargsf, kwnames, cf->backend,
                                     cf->options);
        if (r || PyErr_Occurred()) { Py_DECREF(fn); return r; }
        want = nd__replay_want(cf->replay, fn);
        if (want < 0) { Py_DECREF(fn); return NULL; }
    }
    nd_trace *t = nd__trace_new(cf->backend, cf->backend_fn, cf->cache, cf->options,
                                cf->last_nodes);
    if (!t) { Py_DECREF(fn); return NULL; }
    if (nd_marks_live && nd__pins_begin(t, cf->fn, args, PyVectorcall_NARGS(nargsf) +
                                        (kwnames ? PyTuple_GET_SIZE(kwnames) : 0), cf->ctl->spec_all) < 0) {
        nd__trace_decref(t);
        Py_DECREF(fn);
        return NULL;
    }
    nd_trace *prev = nd__tls_trace;
    nd_replay_rec rec, *prev_rec = nd__tls_rec;
    memset(&rec, 0, sizeof rec);
    if (want) {
        rec.trace = t;
        rec.elem_lazy = !nd__replay_elem_eager(cf->replay);
        nd__tls_rec = &rec;
    }
    nd__tls_trace = t;
    PyObject *res = call_traced(cf, t, fn, args, nargsf, kwnames);
    PyObject *out = NULL;
    /* lazy values left in the caller's objects become NumPy's; a replayed
     * call would not store them again */
    int left = 0;
    if (res) {
        left = nd__settle_escapes(t, fn, args, PyVectorcall_NARGS(nargsf), kwnames, res);
        if (left < 0) Py_CLEAR(res);
    } else {
        ND_EXC_SAVE(exc0);
        left = nd__settle_escapes(t, fn, args, PyVectorcall_NARGS(nargsf), kwnames, NULL);
        if (left < 0) PyErr_Clear();
        ND_EXC_RESTORE(exc0);
    }
    if (left > 0) nd_trace_not_replayable(t);
    if (res) {
        rec.final = 1;
        t->returning = 1;
        out = nd__note_dead(t) < 0 ? NULL : nd__materialize_tree(res, 1);
        t->returning = 0;
        if (out && nd__flush_dead(t) < 0) Py_CLEAR(out);
        if (out && nd__flush_writes(t) < 0) Py_CLEAR(out);
        if (out && want &&
            nd__replay_record(cf->replay, &rec, fn, args, nargsf, kwnames, res) < 0)
            Py_CLEAR(out);
        Py_DECREF(res);
    } else {
        /* NumPy ran every operation before the raise: the caller's arrays
         * are mutated, pending values computed (their warnings shown before
         * the exception leaves) -- and if one of them fails when it runs (an
         * out-of-bounds gather, errstate "raise"), that earlier error is the
         * one NumPy raised, not the later one the tracer met */
        /* Not after a graph run failed (its error is already NumPy's first,
         * and what it left pending would warn twice), nor for an
         * interruption (KeyboardInterrupt, SystemExit: nothing more runs) */
        int run_all = t->dead_floor == 0 && PyErr_ExceptionMatches(PyExc_Exception);
        ND_EXC_SAVE(exc);
        int rc = 0;
        if (run_all) {
            t->returning = 1;
            rc = nd__note_dead(t);
            if (rc == 0) rc = nd__flush_all(t);
            if (rc == 0) rc = nd__flush_dead(t);
            t->returning = 0;
        }
        if (rc == 0 && nd__flush_writes(t) < 0) PyErr_WriteUnraisable(self);
        /* only an error NumPy's own operation gives (an index out of
         * bounds, errstate "raise") replaces the one raised; one of
         * numdyn's lowering (a MemoryError of an int64 iota NumPy never
         * makes) does not */
        if (rc < 0 && (PyErr_ExceptionMatches(PyExc_IndexError) ||
                       PyErr_ExceptionMatches(PyExc_FloatingPointError)))
            ND_EXC_DROP(exc);
        else {
            if (rc < 0) PyErr_Clear();
            ND_EXC_RESTORE(exc);
        }
    }
    nd__tls_trace = prev;
    nd__tls_rec = prev_rec;
    /* a Ctrl-C that arrived while numdyn ran (a logging hook's, a kernel's)
     * raises from this call, as it would have from NumPy's last operation */
    if (out && PyErr_CheckSignals() < 0) Py_CLEAR(out);
    if (want && out && rec.nelem && rec.escapes) nd__replay_set_elem_eager(cf->replay);
    nd__rec_clear(&rec);
    Py_DECREF(fn);
    cf->last_nodes = t->g->n;
    nd__trace_end(t);
    nd__trace_decref(t);
    return out;
}

static PyObject *cf_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (!obj || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int cf_traverse(PyObject *o, visitproc visit, void *arg)
{
    NdCompiled *cf = (NdCompiled *)o;
    Py_VISIT(cf->fn);
    Py_VISIT(cf->dict);
    Py_VISIT(cf->backend_fn);
    Py_VISIT(cf->backend_name);
    Py_VISIT(cf->options);
    Py_VISIT(cf->cache);
    Py_VISIT(cf->dynamic);
    Py_VISIT(cf->remapped);
    Py_VISIT(cf->guards);
    if (nd__ctl_traverse(cf->ctl, visit, arg)) return -1;
    return nd__replay_traverse(cf->replay, visit, arg);
}

static int cf_clear(PyObject *o)
{
    NdCompiled *cf = (NdCompiled *)o;
    Py_CLEAR(cf->fn);
    Py_CLEAR(cf->dict);
    Py_CLEAR(cf->backend_fn);
    Py_CLEAR(cf->backend_name);
    Py_CLEAR(cf->options);
    Py_CLEAR(cf->cache);
    Py_CLEAR(cf->dynamic);
    Py_CLEAR(cf->remapped);
    Py_CLEAR(cf->guards);
    nd__replay_reset(cf->replay);
    return 0;
}

static void cf_dealloc(PyObject *o)
{
    PyObject_GC_UnTrack(o);
    if (((NdCompiled *)o)->weakrefs) PyObject_ClearWeakRefs(o);
    cf_clear(o);
    nd__replay_free(((NdCompiled *)o)->replay);
    nd_floor_free(((NdCompiled *)o)->floor);
    nd__ctl_free(((NdCompiled *)o)->ctl);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *cf_repr(PyObject *o)
{
    NdCompiled *cf = (NdCompiled *)o;
    return PyUnicode_FromFormat("<numdyn compiled %R backend=%R%s>", cf->fn, cf->backend_name,
                                cf->fullgraph ? " fullgraph" : "");
}

static PyObject *cf_get_backend(PyObject *o, void *c)
{
    return Py_NewRef(((NdCompiled *)o)->backend_name);
}
static PyObject *cf_get_fullgraph(PyObject *o, void *c)
{
    return PyBool_FromLong(((NdCompiled *)o)->fullgraph);
}
static PyObject *cf_get_fn(PyObject *o, void *c) { return Py_NewRef(((NdCompiled *)o)->fn); }
static PyObject *cf_get_dynamic(PyObject *o, void *c) { return Py_NewRef(((NdCompiled *)o)->dynamic); }
static PyObject *cf_get_options(PyObject *o, void *c)
{
    NdCompiled *cf = (NdCompiled *)o;
    return Py_NewRef(cf->options ? cf->options : Py_None);
}

static PyGetSetDef cf_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"backend", cf_get_backend, NULL, "the backend name or callable", NULL},
    {"fullgraph", cf_get_fullgraph, NULL, NULL, NULL},
    {"dynamic", cf_get_dynamic, NULL, NULL, NULL},
    {"options", cf_get_options, NULL, NULL, NULL},
    {"_fn", cf_get_fn, NULL, "the wrapped callable", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *cf_replay_info(PyObject *o, PyObject *unused)
{
    return nd__replay_info(((NdCompiled *)o)->replay);
}

static PyObject *cf_floor_info(PyObject *o, PyObject *unused)
{
    return nd_floor_info(((NdCompiled *)o)->floor);
}

static PyObject *cf_floor_info_for(PyObject *o, PyObject *args)
{
    if (!PyTuple_Check(args)) return PyErr_BadArgument(), NULL;
    return nd_floor_info_for(((NdCompiled *)o)->floor, &PyTuple_GET_ITEM(args, 0),
                             PyTuple_GET_SIZE(args));
}

static PyObject *cf_loop_info(PyObject *o, PyObject *unused)
{
    PyObject *fn = ((NdCompiled *)o)->fn;
    if (PyMethod_Check(fn)) fn = PyMethod_GET_FUNCTION(fn);
    if (!PyFunction_Check(fn)) return PyList_New(0);
    return nd_loop_info(PyFunction_GET_CODE(fn));
}

static PyObject *cf_out_guards(PyObject *o, PyObject *args)
{
    if (!PyTuple_Check(args)) return PyErr_BadArgument(), NULL;
    return nd__ctl_out_guards(((NdCompiled *)o)->ctl, &PyTuple_GET_ITEM(args, 0),
                              PyTuple_GET_SIZE(args));
}

static PyObject *cf_programs_info(PyObject *o, PyObject *unused)
{
    nd_ctl *c = ((NdCompiled *)o)->ctl;
    PyObject *l = PyList_New(0);
    for (Py_ssize_t i = 0; l && c && i < c->progs.n; i++) {
        PyObject *g = nd_programs_guards(&c->progs, i, c->names);
        PyObject *d = g ? Py_BuildValue("{sNsdsL}", "guards", g, "compile_s", c->progs.e[i].compile_s,
                                        "calls", c->progs.e[i].calls) : NULL;
        if (!d || PyList_Append(l, d) < 0) Py_CLEAR(l);
        Py_XDECREF(d);
    }
    return l;
}

/* pickling by reference (numdyn._reduce_compiled says how) */
static PyObject *cf_reduce(PyObject *o, PyObject *unused)
{
    PyObject *m = PyImport_ImportModule("numdyn");
    PyObject *r = m ? PyObject_CallMethod(m, "_reduce_compiled", "O", o) : NULL;
    Py_XDECREF(m);
    return r;
}

static PyMethodDef cf_methods[] = {
    {"__reduce__", cf_reduce, METH_NOARGS, "Pickle by reference to the wrapped function."},
    {"_out_guards", cf_out_guards, METH_VARARGS,
     "The guards of the program that calls with these positional arguments run (list of str)."},
    {"_programs", cf_programs_info, METH_NOARGS,
     "Per compiled program: its guards, compile time (s) and calls."},
    {"_loop_info", cf_loop_info, METH_NOARGS,
     "Loop capture, per loop statement considered (after the first call): line, captured, reason."},
    {"_floor_info", cf_floor_info, METH_NOARGS,
     "Speed floor per argument signature: signature, path, calls, numdyn_s, numpy_s."},
    {"_floor_info_for", cf_floor_info_for, METH_VARARGS,
     "The speed floor's entry for arguments like these, or None."},
    {"_replay_info", cf_replay_info, METH_NOARGS,
     "Replay state: eligible, reason, entries, hits, misses, last_miss."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NdCompiled_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.CompiledFunction",
    .tp_doc = "A function compiled by numdyn.compile.",
    .tp_basicsize = sizeof(NdCompiled),
    .tp_dealloc = cf_dealloc,
    .tp_vectorcall_offset = offsetof(NdCompiled, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = cf_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_traverse = cf_traverse,
    .tp_clear = cf_clear,
    .tp_weaklistoffset = offsetof(NdCompiled, weakrefs),
    .tp_getset = cf_getset,
    .tp_methods = cf_methods,
    .tp_descr_get = cf_descr_get,
    .tp_dictoffset = offsetof(NdCompiled, dict),
};

PyObject *nd__compiled_fn(PyObject *v)
{
    return Py_IS_TYPE(v, &NdCompiled_Type) ? ((NdCompiled *)v)->fn : NULL;
}

/* ------------------------------------------------------ module functions */

static int resolve_backend(PyObject *backend, int *kind, PyObject **fn)
{
    *fn = NULL;
    if (PyUnicode_Check(backend)) {
        int builtin = nd_backend_find(backend);
        if (builtin >= 0) {
            *kind = builtin;
            return 0;
        }
        PyObject *f = PyDict_GetItemWithError(backends, backend);
        if (f) {
            *kind = ND_BACKEND_CUSTOM;
            *fn = Py_NewRef(f);
            return 0;
        }
        if (PyErr_Occurred()) return -1;
        PyObject *names = PyDict_Keys(backends);
        if (names && PyList_Sort(names) == 0)
            PyErr_Format(PyExc_ValueError,
                         "numdyn: unknown backend %R; use 'native', 'eager', 'aot_eager', 'cuda', a "
                         "name from numdyn.register_backend (registered: %R), or a callable "
                         "compiler_fn(graph, example_inputs)", backend, names);
        Py_XDECREF(names);
        return -1;
    }
    if (PyCallable_Check(backend)) {
        *kind = ND_BACKEND_CUSTOM;
        *fn = Py_NewRef(backend);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "numdyn: backend must be a name or a callable, not %.80s",
                 Py_TYPE(backend)->tp_name);
    return -1;
}

/* The speed floor guards numdyn's own backends (a custom backend is the
 * user's measurement to make). options["floor"] wins over
 * numdyn.config.floor (whose default NUMDYN_FLOOR sets). 1, 0 or -1. */
static int floor_wanted(int kind, PyObject *options, int disable)
{
    /* on the GPU, "faster than NumPy" would mean running on the host */
    if (disable || kind == ND_BACKEND_CUSTOM || kind == ND_BACKEND_CUDA) return 0;
    PyObject *v = NULL;
    if (options && PyDict_Check(options)) {
        v = PyDict_GetItemString(options, "floor");
        if (v) return PyObject_IsTrue(v);
    }
    PyObject *cfg = PyImport_ImportModule("numdyn.config");
    if (!cfg) return -1;
    v = PyObject_GetAttrString(cfg, "floor");
    Py_DECREF(cfg);
    if (!v) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return 1;
    }
    int on = PyObject_IsTrue(v);
    Py_DECREF(v);
    return on;
}

/* compile(options=...) of a built-in backend: the names it reads, with
 * their types. An unknown name or a wrong type raises as torch.compile's
 * options do (RuntimeError) -- a misspelt option was silently ignored.
 * A custom backend's options are not checked (kept on cf.options). */
static const struct { const char *name; const char *type; } known_options[] = {
    {"cache_size_limit", "int"}, {"chunk_nodes", "int"}, {"floor", "bool"},
};

static int check_options(PyObject *options)
{
    if (options == Py_None) return 0;
    if (!PyDict_Check(options)) {
        PyErr_Format(PyExc_TypeError, "numdyn.compile: options must be a dict, not %.80s",
                     Py_TYPE(options)->tp_name);
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *val;
    const int nk = (int)(sizeof known_options / sizeof known_options[0]);
    while (PyDict_Next(options, &pos, &key, &val)) {
        int k = -1;
        if (PyUnicode_Check(key))
            for (int i = 0; i < nk && k < 0; i++)
                if (PyUnicode_CompareWithASCIIString(key, known_options[i].name) == 0) k = i;
        if (k < 0) {
            PyObject *names = PyList_New(nk);
            if (!names) return -1;
            for (int i = 0; i < nk; i++) {
                PyObject *u = PyUnicode_FromString(known_options[i].name);
                if (!u) { Py_DECREF(names); return -1; }
                PyList_SET_ITEM(names, i, u);
            }
            PyErr_Format(PyExc_RuntimeError, "Unexpected optimization option %S, known options are %R",
                         key, names);
            Py_DECREF(names);
            return -1;
        }
        int is_bool = PyBool_Check(val);
        int ok = !strcmp(known_options[k].type, "bool") ? is_bool : PyLong_Check(val) && !is_bool;
        if (!ok) {
            PyErr_Format(PyExc_RuntimeError, "Unexpected type of attr %s, got %.80s should be %s",
                         known_options[k].name, Py_TYPE(val)->tp_name, known_options[k].type);
            return -1;
        }
    }
    return 0;
}

static PyObject *mod_compile(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"fn", "fullgraph", "dynamic", "backend", "options", "disable",
                             "guard_fail_fn", "guard_export_fn", NULL};
    PyObject *fn, *dynamic = Py_None, *backend = NULL, *options = Py_None;
    PyObject *guard_fail_fn = NULL, *guard_export_fn = NULL;
    int fullgraph = 0, disable = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pOOOp$OO:compile", kwlist, &fn, &fullgraph,
                                     &dynamic, &backend, &options, &disable, &guard_fail_fn,
                                     &guard_export_fn))
        return NULL;
    for (int k = 0; k < 2; k++) {
        PyObject *h = k ? guard_export_fn : guard_fail_fn;
        if (h && h != Py_None && !PyCallable_Check(h)) {
            PyErr_Format(PyExc_TypeError, "numdyn: %s must be callable, not %.80s",
                         k ? "guard_export_fn" : "guard_fail_fn", Py_TYPE(h)->tp_name);
            return NULL;
        }
    }
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "numdyn.compile expects a callable, got %.80s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    PyObject *bname = backend ? Py_NewRef(backend) : PyUnicode_FromString("native");
    if (!bname) return NULL;
    int kind;
    PyObject *bfn;
    if (resolve_backend(bname, &kind, &bfn) < 0) { Py_DECREF(bname); return NULL; }
    if (kind != ND_BACKEND_CUSTOM && check_options(options) < 0) {
        Py_DECREF(bname);
        Py_XDECREF(bfn);
        return NULL;
    }
    NdCompiled *cf = PyObject_GC_New(NdCompiled, &NdCompiled_Type);
    if (!cf) { Py_DECREF(bname); Py_XDECREF(bfn); return NULL; }
    cf->vectorcall = cf_vectorcall;
    cf->fn = Py_NewRef(fn);
    cf->dict = NULL;
    cf->backend_fn = bfn;
    cf->backend_name = bname;
    cf->options = options == Py_None ? NULL : Py_NewRef(options);
    cf->cache = kind == ND_BACKEND_CUSTOM ? PyDict_New() : NULL;
    cf->dynamic = Py_NewRef(dynamic);
    cf->remapped = cf->guards = NULL;
    cf->weakrefs = NULL;
    cf->replay = NULL;
    cf->floor = NULL;
    cf->ctl = NULL;
    cf->gen = reset_gen;
    cf->last_nodes = 0;
    cf->backend = kind;
    cf->fullgraph = fullgraph;
    cf->disable = disable;
    PyObject_GC_Track((PyObject *)cf);
    if (kind == ND_BACKEND_CUSTOM && !cf->cache) { Py_DECREF(cf); return NULL; }
    if (!(cf->ctl = nd__ctl_new(fn, options, dynamic, guard_fail_fn, guard_export_fn))) {
        Py_DECREF(cf);
        return NULL;
    }
    int floor = floor_wanted(kind, options, disable);
    if (floor < 0 || (floor && !(cf->floor = nd_floor_new()))) { Py_DECREF(cf); return NULL; }
    PyObject *functools = PyImport_ImportModule("functools");
    PyObject *r = functools
        ? PyObject_CallMethod(functools, "update_wrapper", "OO", (PyObject *)cf, fn) : NULL;
    Py_XDECREF(functools);
    if (!r) { Py_DECREF(cf); return NULL; }
    Py_DECREF(r);
    return (PyObject *)cf;
}

static PyObject *mod_explain_call(PyObject *m, PyObject *args)
{
    PyObject *fn, *fargs, *fkwargs;
    if (!PyArg_ParseTuple(args, "OO!O:_explain_call", &fn, &PyTuple_Type, &fargs, &fkwargs))
        return NULL;
    PyObject *records = PyList_New(0);
    if (!records) return NULL;
    PyObject *saved = nd__tls_explain;
    nd__tls_explain = records;
    PyObject *r = PyObject_Call(fn, fargs, fkwargs == Py_None ? NULL : fkwargs);
    nd__tls_explain = saved;
    if (!r) { Py_DECREF(records); return NULL; }
    PyObject *out = PyTuple_Pack(2, r, records);
    Py_DECREF(r);
    Py_DECREF(records);
    return out;
}

static PyObject *mod_graph_break(PyObject *m, PyObject *unused)
{
    nd_trace *t = nd_trace_current();
    if (!t) Py_RETURN_NONE;
    if (nd_trace_record_break(t, "numdyn.graph_break()") < 0 || nd__flush_all(t) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *mod_reset(PyObject *m, PyObject *unused)
{
    reset_gen++;
    nd_counters_reset();
    Py_RETURN_NONE;
}

static PyObject *mod_disable_enter(PyObject *m, PyObject *unused)
{
    nd__tls_disabled++;
    Py_RETURN_NONE;
}

static PyObject *mod_disable_exit(PyObject *m, PyObject *unused)
{
    if (nd__tls_disabled > 0) nd__tls_disabled--;
    Py_RETURN_NONE;
}

static PyObject *mod_is_tracing(PyObject *m, PyObject *unused)
{
    return PyBool_FromLong(nd_trace_current() != NULL);
}

static PyObject *mod_register_backend(PyObject *m, PyObject *args)
{
    PyObject *name, *fn;
    if (!PyArg_ParseTuple(args, "UO:_register_backend", &name, &fn)) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "numdyn: a backend must be callable");
        return NULL;
    }
    if (PyDict_SetItem(backends, name, fn) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *mod_set_log_hook(PyObject *m, PyObject *hook)
{
    Py_XSETREF(nd__log_hook, hook == Py_None ? NULL : Py_NewRef(hook));
    Py_RETURN_NONE;
}

static PyObject *mod_counters(PyObject *m, PyObject *unused) { return nd_counters_dict(); }

static PyObject *mod_set_profiling(PyObject *m, PyObject *on)
{
    int v = PyObject_IsTrue(on);
    if (v < 0) return NULL;
    profiling = v;
    Py_RETURN_NONE;
}

static PyMethodDef compile_functions[] = {
    {"compile", (PyCFunction)(void (*)(void))mod_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(fn, fullgraph=False, dynamic=None, backend='native', options=None, "
     "disable=False) -> CompiledFunction"},
    {"_explain_call", mod_explain_call, METH_VARARGS,
     "_explain_call(fn, args, kwargs) -> (result, records)"},
    {"graph_break", mod_graph_break, METH_NOARGS,
     "Flush the pending graph here and record a graph break."},
    {"_reset", mod_reset, METH_NOARGS, "Drop compiled-function caches; zero the counters."},
    {"_disable_enter", mod_disable_enter, METH_NOARGS, NULL},
    {"_disable_exit", mod_disable_exit, METH_NOARGS, NULL},
    {"is_tracing", mod_is_tracing, METH_NOARGS, "True while this thread is capturing."},
    {"_register_backend", mod_register_backend, METH_VARARGS, NULL},
    {"_set_log_hook", mod_set_log_hook, METH_O, NULL},
    {"_set_profiling", mod_set_profiling, METH_O,
     "_set_profiling(on): top-level compiled calls log call_begin/call (CompileProfiler)"},
    {"_trace_counters", mod_counters, METH_NOARGS, "The runtime counters as a dict."},
    {NULL, NULL, 0, NULL},
};

int nd__compile_init(PyObject *m)
{
    if (PyType_Ready(&NdCompiled_Type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "CompiledFunction", (PyObject *)&NdCompiled_Type) < 0)
        return -1;
    backends = PyDict_New();
    if (!backends || PyModule_AddObjectRef(m, "_backends", backends) < 0) return -1;
    return PyModule_AddFunctions(m, compile_functions);
}
