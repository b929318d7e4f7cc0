/* trace_flush.c -- turning pending graph work into concrete arrays.
 *
 * A flush computes the nodes a value needs plus every pending write to a
 * caller array, in ONE standalone graph (nd_graph_extract) run by the
 * trace's backend. Results are stored as node->value, so later flushes use
 * them as inputs. Work nobody asked for stays lazy.
 *
 * Caller write-back is in place (np.copyto into the caller's buffer), after
 * every result of the flush is computed. Before a buffer is overwritten,
 * anything that still needs its old contents gets a private copy: an INPUT
 * node of that array with pending readers, or a cached value that is a
 * NumPy view into it. A result that itself lives in another caller buffer
 * being written (`a[...] = b; b += 1`) is copied first. Afterwards the
 * storage's version is the caller array again, so later work reads it
 * without a copy.
 */
#include "trace_order.h"
#include "graph/graph_py.h"
#include "runtime/backend.h"
#include "graph/hash.h"
#include "passes/cse.h"
#include "guards/guards.h"
#include <stdlib.h>
#include <string.h>

/* nd__flush_chunk (below): nodes of a chunk (compile(options={"chunk_nodes":
 * n}) sets another), and how many chunks a recording capture waits for its
 * pending caller writes before it gives up replay */
#define ND_CHUNK_NODES 8192
#define ND_CHUNK_WAIT 8

PyObject *nd__node_array(nd_graph *g, nd_id id)
{
    nd_node *n = nd_graph_node(g, id);
    if (n->value) return n->value;
    if (n->op == ND_OP_INPUT) return n->obj;
    return NULL;
}

/* ------------------------------------------------------------ backends */

static int config_flag(const char *name)
{
    PyObject *cfg = PyImport_ImportModule("numdyn.config");
    if (!cfg) { PyErr_Clear(); return 0; }
    PyObject *v = PyObject_GetAttrString(cfg, name);
    Py_DECREF(cfg);
    if (!v) { PyErr_Clear(); return 0; }
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (r < 0) { PyErr_Clear(); return 0; }
    return r;
}

static PyObject *take_exception_str(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *e = PyErr_GetRaisedException();
    PyObject *r = e ? PyObject_Str(e) : NULL;
    Py_XDECREF(e);
#else
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    PyObject *r = ev ? PyObject_Str(ev) : NULL;
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
#endif
    PyErr_Clear();
    return r;
}

/* Custom backends compile a graph once per structure -- but a compiled
 * callable only receives the input arrays, so scalar values and sizes the
 * structural hash ignores are part of its cache key too. */
static PyObject *custom_key(nd_graph *g, const nd_id *outs, int nout)
{
    uint64_t h = nd_graph_hash(g, outs, nout);
    for (nd_id i = 0; i < g->n; i++) {
        nd_node *n = &g->nodes[i];
        if (n->op == ND_OP_SCALAR) {
            h = nd_hash_mix(h, (uint64_t)n->scalar.i);
            uint64_t bits;
            memcpy(&bits, &n->scalar.c.im, sizeof bits);
            h = nd_hash_mix(h, bits);
        }
        for (int d = 0; d < n->ndim; d++) h = nd_hash_mix(h, (uint64_t)n->shape[d]);
    }
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *graph_inputs(nd_graph *g)
{
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    for (nd_id i = 0; i < g->n; i++) {
        if (g->nodes[i].op != ND_OP_INPUT) continue;
        if (PyList_Append(l, g->nodes[i].obj) < 0) { Py_DECREF(l); return NULL; }
    }
    return l;
}

/* Runs a custom compiler_fn's result; *gobj receives the numdyn.Graph
 * (new ref) when one was made (for explain). Steals g. */
static PyObject *run_custom(nd_trace *t, nd_graph *g, const nd_id *outs, int nout,
                            PyObject **gobj)
{
    PyObject *key = custom_key(g, outs, nout), *inputs = graph_inputs(g);
    PyObject *fn = NULL, *res = NULL, *seq = NULL;
    if (!key || !inputs) { nd_graph_free(g); goto done; }
    fn = t->backend_cache ? PyDict_GetItemWithError(t->backend_cache, key) : NULL;
    if (fn) {
        Py_INCREF(fn);
        if (t->explain) *gobj = nd_graphpy_wrap(g, outs, nout);
        else nd_graph_free(g);
        if (t->explain && !*gobj) PyErr_Clear();
    } else {
        if (PyErr_Occurred()) { nd_graph_free(g); goto done; }
        *gobj = nd_graphpy_wrap(g, outs, nout);
        if (!*gobj) goto done;
        /* frozen mode (numdyn.run): compiler_fn is not called for a new
         * graph; the graph runs op by op with NumPy, and is not cached */
        if (nd_backend_frozen) fn = Py_NewRef(*gobj);
        else fn = PyObject_CallFunctionObjArgs(t->backend_fn, *gobj, inputs, NULL);
        if (!fn) goto done;
        if (!PyCallable_Check(fn)) {
            PyErr_Format(PyExc_TypeError,
                         "numdyn: custom backend %R returned %R, which is not callable "
                         "(a backend is compiler_fn(graph, example_inputs) -> callable)",
                         t->backend_fn, fn);
            Py_CLEAR(fn);
            goto done;
        }
        if (t->backend_cache && !nd_backend_frozen && PyDict_SetItem(t->backend_cache, key, fn) < 0)
            goto done;
    }
    {
        PyObject *args = PyList_AsTuple(inputs);
        if (!args) goto done;
        res = PyObject_Call(fn, args, NULL);
        Py_DECREF(args);
    }
    if (!res) goto done;
    if (!PyList_Check(res) && !PyTuple_Check(res)) {
        PyErr_Format(PyExc_TypeError,
                     "numdyn: the compiled callable of custom backend %R returned %.100s; "
                     "expected a list or tuple of %d arrays",
                     t->backend_fn, Py_TYPE(res)->tp_name, nout);
        Py_CLEAR(res);
        goto done;
    }
    seq = PySequence_List(res);
    Py_CLEAR(res);
    if (!seq) goto done;
    if (PyList_GET_SIZE(seq) != nout) {
        PyErr_Format(PyExc_ValueError,
                     "numdyn: custom backend %R returned %zd outputs, expected %d",
                     t->backend_fn, PyList_GET_SIZE(seq), nout);
        Py_CLEAR(seq);
        goto done;
    }
    for (int i = 0; i < nout; i++) {
        PyObject *a = PyArray_FROM_O(PyList_GET_ITEM(seq, i));
        if (!a) { Py_CLEAR(seq); goto done; }
        PyList_SetItem(seq, i, a);
    }
done:
    Py_XDECREF(key);
    Py_XDECREF(inputs);
    Py_XDECREF(fn);
    return seq;
}

/* Results must match what the graph promised: a backend bug must not turn
 * into a silently wrong dtype or shape. */
static int check_results(nd_graph *g, const nd_id *outs, int nout, PyObject *res)
{
    if (!PyList_Check(res) || PyList_GET_SIZE(res) != nout) {
        PyErr_Format(PyExc_SystemError, "numdyn: backend returned %R for %d outputs",
                     res, nout);
        return -1;
    }
    for (int i = 0; i < nout; i++) {
        PyObject *o = PyList_GET_ITEM(res, i);
        nd_node *n = nd_graph_node(g, outs[i]);
        if (!PyArray_Check(o)) {
            PyErr_Format(PyExc_SystemError, "numdyn: backend output %d is %.80s, not an ndarray",
                         i, Py_TYPE(o)->tp_name);
            return -1;
        }
        PyArrayObject *a = (PyArrayObject *)o;
        int ok = PyArray_NDIM(a) == n->ndim && PyArray_EquivTypenums(PyArray_TYPE(a), n->dtype);
        for (int d = 0; ok && d < n->ndim; d++) ok = PyArray_DIM(a, d) == n->shape[d];
        if (!ok) {
            PyObject *want = (PyObject *)PyArray_DescrFromType(n->dtype);
            PyErr_Format(PyExc_SystemError,
                         "numdyn: backend output %d (%s node) is %R of ndim %d; the graph "
                         "says dtype %R, ndim %d",
                         i, nd_op_name(n->op), (PyObject *)PyArray_DESCR(a), PyArray_NDIM(a),
                         want, (int)n->ndim);
            Py_XDECREF(want);
            return -1;
        }
    }
    return 0;
}

static PyObject *op_labels(nd_graph *g)
{
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    for (nd_id i = 0; i < g->n; i++) {
        nd_node *n = &g->nodes[i];
        PyObject *s;
        if (n->op == ND_OP_INPUT || n->op == ND_OP_SCALAR) continue;
        if (n->op == ND_OP_UFUNC) s = PyUnicode_FromString(nd_ufunc_name(n->sub));
        else if (n->op == ND_OP_REDUCE || n->op == ND_OP_SCAN)
            s = PyUnicode_FromFormat("%s.%s", nd_ufunc_name(n->sub),
                                     n->op == ND_OP_REDUCE ? "reduce" : "accumulate");
        else if (n->op == ND_OP_EXTERN && n->obj) {
            PyObject *name = PyObject_GetAttrString(n->obj, "__name__");
            if (!name) PyErr_Clear();
            s = name ? PyUnicode_FromFormat("extern %U", name)
                     : PyUnicode_FromString("extern");
            Py_XDECREF(name);
        } else s = PyUnicode_FromString(nd_op_name(n->op));
        if (!s || PyList_Append(l, s) < 0) { Py_XDECREF(s); Py_DECREF(l); return NULL; }
        Py_DECREF(s);
    }
    return l;
}

/* ------------------------------------------------ NumPy's error state
 * NumPy keeps np.errstate in a context variable (umath._extobj_contextvar);
 * a graph runs under the value its ops were traced under (t->fpstate), so
 * `with np.errstate(divide="ignore"): r = 1 / a` returned and run after the
 * block still ignores, and ops traced before a change are flushed before it
 * (nd_trace_errstate_sync). */
int nd_trace_op_depth;

PyObject *nd__extobj_var(void)
{
    static PyObject *cv;
    static int tried;
    if (!cv && !tried) {
        tried = 1;
        PyObject *um = PyImport_ImportModule("numpy._core.umath");
        cv = um ? PyObject_GetAttrString(um, "_extobj_contextvar") : NULL;
        Py_XDECREF(um);
        if (cv && !PyContextVar_CheckExact(cv)) Py_CLEAR(cv);
        PyErr_Clear();  /* another NumPy: the state is read at run time only */
    }
    return cv;
}

static void wlog_note(nd_trace *t);

int nd_trace_errstate_sync(nd_trace *t)
{
    if (!t || t->flushing || nd_trace_op_depth > 0) return 0;
    wlog_note(t);  /* an operation begins: log what the last one wrote */
    PyObject *cv = nd__extobj_var(), *cur = NULL;
    if (!cv) return 0;
    if (PyContextVar_Get(cv, NULL, &cur) < 0) return -1;
    if (!cur) return 0;
    if (!t->fpstate) { t->fpstate = cur; return 0; }
    if (cur == t->fpstate) { Py_DECREF(cur); return 0; }
    int rc = nd__flush_all(t);  /* under t->fpstate: run_graph */
    Py_SETREF(t->fpstate, cur);
    return rc;
}

/* ------------------------------------------------ warnings contexts
 * NumPy gives a data-dependent warning (log of a negative, a division by
 * zero) when its op runs; a graph runs later. A `with
 * warnings.catch_warnings()` block entered or left while tracing (numdyn
 * hooks its __enter__/__exit__) is a boundary: the pending ops run first,
 * under the warnings filters they were traced under, so a warning inside
 * the block is recorded or ignored as the block says and one outside it is
 * not. A replayed call skips the Python code that sets the filters (and
 * fills a record list), so such a call is not recorded for replay. */
int nd_trace_warnings_boundary(void)
{
    nd_trace *t = nd_trace_current();
    if (!t || t->flushing) return 0;
    nd_trace_not_replayable(t);
    return nd__flush_all(t);
}

int nd_trace_warning_shown(void)
{
    nd_trace *t = nd_trace_current();
    if (!t || t->flushing || nd_graph_run_depth) return 0;
    nd_trace_not_replayable(t);
    return 0;
}

/* ------------------------------------------------------------ write log
 * (trace_order.h) The writes to caller arrays still pending, in operation
 * order: at the entry of each traced operation and of each flush, every
 * dirty caller storage whose version changed since the last look gets an
 * entry (who = its index in t->clist) stamped with the graph size when the
 * operation that just ended began. One trace per thread is logged (a
 * capture is private to its thread); a flush that lands every write
 * empties the log. A storage already dirty when logging began makes the
 * log incomplete (valid = 0): a failure then leaves arrays as before. */
static _Thread_local struct {
    nd_trace *t;          /* not owned: nd__wlog_forget when it ends */
    int valid;
    nd_id prev;           /* graph size when the current operation began */
    nd_wlog_ent *e;
    int n, cap;
    nd_id *last;          /* per clist index: the version last logged */
    Py_ssize_t nlast;
} W;

static void wlog_clear(nd_trace *t)
{
    W.n = 0;
    for (Py_ssize_t k = 0; k < W.nlast; k++) W.last[k] = ND_NONE;
    W.valid = 1;
    W.prev = t->g->n;
}

void nd__wlog_forget(nd_trace *t)
{
    if (W.t != t) return;
    PyMem_Free(W.e);
    PyMem_Free(W.last);
    memset(&W, 0, sizeof W);
}

void nd__wlog_begin(nd_trace *t)
{
    nd__wlog_forget(W.t);
    W.t = t;
    wlog_clear(t);
}

/* Logging never fails an operation: out of memory, the log is incomplete. */
static void wlog_note(nd_trace *t)
{
    if (t->ended) return;
    nd_graph *g = t->g;
    if (W.t != t) {
        /* another trace was logged meanwhile (one a custom backend's code
         * ran): writes made since are not in the log */
        nd__wlog_begin(t);
        for (Py_ssize_t k = 0; k < t->nclist; k++) if (t->clist[k]->dirty) W.valid = 0;
    }
    if (!t->ndirty) goto done;  /* nothing to log: no walk of clist */
    if (W.valid && t->nclist > W.nlast) {
        nd_id *l = PyMem_Realloc(W.last, sizeof(nd_id) * (size_t)t->nclist);
        if (!l) { W.valid = 0; goto done; }
        for (Py_ssize_t k = W.nlast; k < t->nclist; k++) l[k] = ND_NONE;
        W.last = l;
        W.nlast = t->nclist;
    }
    for (Py_ssize_t k = 0; W.valid && k < t->nclist; k++) {
        nd_storage *s = t->clist[k];
        if (!s->dirty || W.last[k] == s->version) continue;
        if (W.n == W.cap) {
            int cap = W.cap ? 2 * W.cap : 16;
            nd_wlog_ent *e = PyMem_Realloc(W.e, sizeof(*e) * (size_t)cap);
            if (!e) { W.valid = 0; break; }
            W.e = e;
            W.cap = cap;
        }
        W.e[W.n++] = (nd_wlog_ent){W.prev, s->version, (int32_t)k};
        W.last[k] = s->version;
    }
done:
    W.prev = g->n;
}

void nd__wlog_cut(const nd_wlog_ent *log, int n, nd_id F, int before, nd_id *out, int nwho)
{
    for (int w = 0; w < nwho; w++) out[w] = ND_NONE;
    for (int i = 0; i < n; i++) {
        const nd_wlog_ent *e = &log[i];
        if (e->who < 0 || e->who >= nwho) continue;
        if (before ? (e->at > F - 1 || e->version >= F) : e->at > F) continue;
        out[e->who] = e->version;
    }
}

/* np.errstate(all="ignore")'s value of NumPy's context variable (borrowed),
 * or NULL with an exception. */
static PyObject *ignore_all_state(void)
{
    static PyObject *st;
    if (st) return st;
    PyObject *cv = nd__extobj_var();
    if (!cv) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: NumPy's error state is not reachable");
        return NULL;
    }
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *es = np ? PyObject_GetAttrString(np, "errstate") : NULL;
    PyObject *args = PyTuple_New(0), *kw = Py_BuildValue("{ss}", "all", "ignore");
    PyObject *ctx = es && args && kw ? PyObject_Call(es, args, kw) : NULL;
    Py_XDECREF(np);
    Py_XDECREF(es);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    PyObject *r = ctx ? PyObject_CallMethod(ctx, "__enter__", NULL) : NULL;
    if (r) {
        Py_DECREF(r);
        PyObject *cur = NULL;
        if (PyContextVar_Get(cv, NULL, &cur) == 0) st = cur;
        ND_EXC_SAVE(exc);
        r = PyObject_CallMethod(ctx, "__exit__", "OOO", Py_None, Py_None, Py_None);
        Py_XDECREF(r);
        if (!r) PyErr_Clear();
        ND_EXC_RESTORE(exc);
    }
    Py_XDECREF(ctx);
    if (!st && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "numdyn: NumPy's error state is not reachable");
    return st;
}

_Thread_local int nd_graph_run_depth;

PyObject *nd__compute_quietly(nd_graph *g, const nd_id *ids, int n)
{
    PyObject *state = ignore_all_state(), *cv = nd__extobj_var(), *tok = NULL;
    if (!state) return NULL;
    nd_id *outs = PyMem_Malloc(sizeof(nd_id) * (size_t)(n ? n : 1));
    if (!outs) return PyErr_NoMemory();
    nd_graph *sub = nd_graph_extract(g, ids, n, NULL, outs);
    PyObject *res = NULL;
    if (sub && (tok = PyContextVar_Set(cv, state))) {
        const nd_id *saved = nd_scalar_stores;
        int nsaved = nd_nscalar_stores;
        nd_scalar_stores = NULL;
        nd_nscalar_stores = 0;
        nd_graph_run_depth++;
        res = nd_backend_eager_run(sub, outs, n);
        nd_graph_run_depth--;
        nd_scalar_stores = saved;
        nd_nscalar_stores = nsaved;
        ND_EXC_SAVE(exc);
        if (PyContextVar_Reset(cv, tok) < 0) PyErr_Clear();
        ND_EXC_RESTORE(exc);
        Py_DECREF(tok);
    }
    nd_graph_free(sub);
    PyMem_Free(outs);
    return res;
}

/* The native run of g with its common subexpressions computed once
 * (passes/cse.h), kept with g (a replayed graph runs again and again: it is
 * merged once, and its program key learnt once). Between runs the merged
 * graph holds no arrays: its INPUT nodes take g's each run. */
typedef struct {
    nd_graph *gc;
    nd_id *gmap;         /* g id -> gc id */
    nd_id *outs, *couts; /* g's outputs it was made for; theirs in gc */
    int nout;
    nd_id *inp;          /* (g id, gc id) of each INPUT node gc keeps */
    int ninp;
    uint64_t ghint, ckey; /* g's program key (the caller's hint) -> gc's */
} cse_cache;

static void cse_cache_free(void *p)
{
    cse_cache *c = p;
    if (!c) return;
    nd_graph_free(c->gc);
    PyMem_Free(c->gmap);
    PyMem_Free(c->outs);
    PyMem_Free(c->couts);
    PyMem_Free(c->inp);
    PyMem_Free(c);
}

static cse_cache *cse_cache_make(nd_graph *g, const nd_id *outs, int nout)
{
    nd_id *gmap = NULL;
    nd_graph *gc = nd_cse_graph(g, outs, nout, &gmap);
    if (!gc) return NULL;  /* nothing to merge, or an error */
    cse_cache *c = PyMem_Calloc(1, sizeof *c);
    if (!c) {
        nd_graph_free(gc);
        PyMem_Free(gmap);
        return (cse_cache *)PyErr_NoMemory();
    }
    c->gc = gc;
    c->gmap = gmap;
    c->nout = nout;
    c->outs = PyMem_Malloc(sizeof(nd_id) * ((size_t)nout + 1));
    c->couts = PyMem_Malloc(sizeof(nd_id) * ((size_t)nout + 1));
    if (!c->outs || !c->couts) goto nomem;
    for (int k = 0; k < nout; k++) {
        c->outs[k] = outs[k];
        c->couts[k] = gmap[outs[k]];
    }
    for (nd_id i = 0; i < g->n; i++) c->ninp += g->nodes[i].op == ND_OP_INPUT && c->gmap[i] != ND_NONE;
    c->inp = PyMem_Malloc(sizeof(nd_id) * 2 * ((size_t)c->ninp + 1));
    if (!c->inp) goto nomem;
    int k = 0;
    for (nd_id i = 0; i < g->n; i++)
        if (g->nodes[i].op == ND_OP_INPUT && c->gmap[i] != ND_NONE) {
            c->inp[2 * k] = i;
            c->inp[2 * k + 1] = c->gmap[i];
            Py_CLEAR(c->gc->nodes[c->gmap[i]].obj);  /* taken from g at each run */
            k++;
        }
    return c;
nomem:
    PyErr_NoMemory();
    cse_cache_free(c);
    return NULL;
}

/* *ran = 0 when g has no common subexpression (the caller runs g itself).
 * What the caller handed the run for g's ids (donated inputs, the program
 * key) is translated, and so is the failed operation; a re-run for NumPy's
 * error state runs g. */
static PyObject *run_merged(nd_graph *g, const nd_id *outs, int nout, PyObject *options, int *ran)
{
    static int off = -1;
    *ran = 0;
    if (off < 0) {
        const char *e = getenv("NUMDYN_CSE");
        off = e && strcmp(e, "0") == 0;
    }
    if (off || g->cse_none) return NULL;
    cse_cache *c = g->derived_free == cse_cache_free ? g->derived : NULL;
    if (c && (c->nout != nout || memcmp(c->outs, outs, sizeof(nd_id) * (size_t)nout))) {
        cse_cache_free(c);  /* other outputs of the same graph: merged anew */
        g->derived = NULL;
        g->derived_free = NULL;
        c = NULL;
    }
    if (!c) {
        if (g->derived_free) return NULL;  /* g keeps another product */
        c = cse_cache_make(g, outs, nout);
        if (!c) {
            if (PyErr_Occurred()) *ran = 1;
            else g->cse_none = 1;
            return NULL;
        }
        g->derived = c;
        g->derived_free = cse_cache_free;
    }
    *ran = 1;
    nd_graph *gc = c->gc;
    for (int k = 0; k < c->ninp; k++)
        Py_XSETREF(gc->nodes[c->inp[2 * k + 1]].obj, Py_XNewRef(g->nodes[c->inp[2 * k]].obj));
    nd_id don[32];
    int ndon = 0;
    for (int k = 0; k < nd_ndonated && ndon < 32; k++) {
        nd_id x = nd_donated[k] >= 0 && nd_donated[k] < g->n ? c->gmap[nd_donated[k]] : ND_NONE;
        if (x != ND_NONE) don[ndon++] = x;
    }
    nd_donated = ndon ? don : NULL;
    nd_ndonated = ndon;
    /* the caller's hint is g's key: gc's is learnt with it */
    uint64_t hint = nd_graph_key_hint;
    nd_graph_key_hint = 0;
    if (hint && hint == c->ghint) {
        nd_graph_key_hint = c->ckey;
    } else if (hint) {
        c->ckey = nd_guard_graph_key(gc, c->couts, nout);
        c->ghint = hint;
        nd_graph_key_hint = c->ckey;
    }
    nd_numpy_graph = g;
    nd_numpy_outs = outs;
    PyObject *res = nd_backends[ND_BACKEND_NATIVE].run(gc, c->couts, nout, options);
    nd_numpy_graph = NULL;
    nd_numpy_outs = NULL;
    for (int k = 0; k < c->ninp; k++) Py_CLEAR(gc->nodes[c->inp[2 * k + 1]].obj);
    if (!res && nd_failed_node != ND_NONE && !nd_reran) {
        /* NumPy fails at the first of the operations merged into it */
        nd_id f = nd_failed_node;
        nd_failed_node = ND_NONE;
        for (nd_id i = 0; i < g->n; i++)
            if (c->gmap[i] == f) { nd_failed_node = i; break; }
    }
    return res;
}

PyObject *nd__run_with_stores(int backend, nd_graph *g, const nd_id *outs, int nout,
                              PyObject *options, const nd_id *stores, int nstores)
{
    const nd_id *saved = nd_scalar_stores;
    int nsaved = nd_nscalar_stores;
    nd_scalar_stores = stores;
    nd_nscalar_stores = nstores;
    nd_graph_run_depth++;
    int ran = 0;
    /* a scalar store's checks name g's nodes (backend.h): such a graph
     * runs as traced */
    PyObject *res = backend == ND_BACKEND_NATIVE && !nstores ? run_merged(g, outs, nout, options, &ran) : NULL;
    if (!ran) res = nd_backends[backend].run(g, outs, nout, options);
    nd_graph_run_depth--;
    nd_scalar_stores = saved;
    nd_nscalar_stores = nsaved;
    return res;
}

/* ---------------------------------------------------------- scalar stores
 * arr[i] = x (a basic index) or arr.fill(x) with x a NumPy scalar converts
 * x as int() does when arr has a signed integer dtype (runtime/backend.h).
 * The shim checks the scalars it is handed; a lazy one (an is_scalar
 * proxy: a reduction, an element read while a call is recorded for replay,
 * scalar arithmetic on those) is a value only the run knows, so the shim
 * marks its store ND_F_SCALAR_STORE (nd_proxy_write_scalar) and the store
 * is checked when the graph runs, there and on every replay. A 0-d array
 * stored (`b[0] = z`, `b[0] = a[i, ...]`), np.copyto and fancy-index stores
 * cast, as NumPy's do: they are not marked. */

/* The scalar operand of marked store s, or ND_NONE; *first: the first node
 * the store's operation made on it (its cast, made fresh by the shim),
 * where NumPy converts the scalar instead. */
static nd_id scalar_store_value(nd_graph *g, nd_id s, nd_id *first)
{
    nd_node *S = &g->nodes[s];
    if (S->op != ND_OP_SETITEM || !(S->flags & ND_F_SCALAR_STORE) || S->value || S->nin < 2)
        return ND_NONE;
    nd_id v = S->in[1];
    *first = s;
    for (int steps = 0; v >= 0 && steps < 4; steps++) {
        nd_node *n = &g->nodes[v];
        if (n->value) break;
        if (n->op == ND_OP_VIEW && n->nin >= 1 && n->in[0] >= 0 && g->nodes[n->in[0]].ndim == 0 &&
            !(n->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)))
            ;                      /* the store's broadcast */
        else if (n->op == ND_OP_CAST && n->dtype == S->dtype)
            ;                      /* the store's cast */
        else
            break;
        *first = v;
        v = n->in[0];
    }
    nd_node *V = &g->nodes[v];
    if (V->ndim != 0 || V->dtype == S->dtype || !nd_scalar_store_may_refuse(V->dtype, S->dtype))
        return ND_NONE;
    return v;
}

/* ------------------------------------------------- notes for a replay */
static _Thread_local nd_order_notes notes;

void nd__order_notes_free(nd_order_notes *n)
{
    PyMem_Free(n->stores);
    PyMem_Free(n->log);
    nd_graph_free(n->side);
    PyMem_Free(n->side_outs);
    memset(n, 0, sizeof *n);
}

nd_order_notes nd__order_notes_take(nd_replay_rec *rec)
{
    nd_order_notes r = {0};
    if (rec && notes.rec == rec) {
        r = notes;
        memset(&notes, 0, sizeof notes);
    }
    return r;
}

/* The return flush of a recording capture keeps, in the ids of its graph
 * (map: t's ids -> its), its scalar stores and the log of its write-backs
 * (who: a write-back's index, the dirty storages in clist order, as
 * note_write_backs numbers them). A log position `at` (a graph size of t)
 * becomes the number of g's nodes made before it: a failure at g's node F'
 * keeps at' <= F' exactly when the trace's at <= F. 0, or -1 (no memory:
 * the capture is not recorded). */
static int note_order(nd_trace *t, nd_replay_rec *rec, const nd_id *map, const nd_id *stores,
                      int nstores)
{
    if (notes.rec) nd__order_notes_free(&notes);
    notes.rec = rec;
    if (nstores) {
        notes.stores = PyMem_Malloc(sizeof(nd_id) * 2 * (size_t)nstores);
        if (!notes.stores) goto fail;
        memcpy(notes.stores, stores, sizeof(nd_id) * 2 * (size_t)nstores);
        notes.nstores = nstores;
    }
    if (W.t != t || !W.valid || !W.n) return 0;  /* no log: a failure writes nothing */
    nd_id n = t->g->n;
    nd_id *before = PyMem_Malloc(sizeof(nd_id) * ((size_t)n + 1));
    int32_t *rank = PyMem_Malloc(sizeof(int32_t) * ((size_t)t->nclist + 1));
    notes.log = PyMem_Malloc(sizeof(nd_wlog_ent) * (size_t)W.n);
    if (!before || !rank || !notes.log) {
        PyMem_Free(before);
        PyMem_Free(rank);
        goto fail;
    }
    before[0] = 0;
    for (nd_id i = 0; i < n; i++) before[i + 1] = before[i] + (map[i] != ND_NONE);
    int32_t r = 0;
    for (Py_ssize_t k = 0; k < t->nclist; k++) rank[k] = t->clist[k]->dirty ? r++ : -1;
    for (int i = 0; i < W.n; i++) {
        nd_wlog_ent e = W.e[i];
        if (e.who < 0 || e.who >= t->nclist || rank[e.who] < 0 || e.version >= n) continue;
        nd_id v = map[e.version];
        if (v == ND_NONE) {
            /* replaced whole by a later write: the side graph computes it */
            int k = 0;
            while (k < notes.nside && notes.side_outs[k] != e.version) k++;
            if (k == notes.nside) {
                nd_id *so = PyMem_Realloc(notes.side_outs, sizeof(nd_id) * (size_t)(k + 1));
                if (!so) { PyMem_Free(before); PyMem_Free(rank); goto fail; }
                notes.side_outs = so;
                so[notes.nside++] = e.version;
            }
            v = ND_SIDE(k);
        }
        notes.log[notes.nlog++] = (nd_wlog_ent){before[e.at < n ? e.at : n], v, rank[e.who]};
    }
    PyMem_Free(before);
    PyMem_Free(rank);
    if (notes.nside) {
        /* the side graph's outputs, in its own ids */
        nd_id *outs = PyMem_Malloc(sizeof(nd_id) * (size_t)notes.nside);
        if (!outs) goto fail;
        notes.side = nd_graph_extract(t->g, notes.side_outs, notes.nside, NULL, outs);
        PyMem_Free(notes.side_outs);
        notes.side_outs = outs;
        if (!notes.side) goto fail;
    }
    return 0;
fail:
    nd__order_notes_free(&notes);
    return -1;
}

/* Run the part of t's graph that computes targets; list of arrays. */
/* Fit t's flush scratch (trace_internal.h) to its graph: the new entries
 * zero / ND_NONE, the old ones as the last flush left them. 0, or -1 with
 * MemoryError. */
static int scratch_fit(nd_trace *t)
{
    Py_ssize_t want = (Py_ssize_t)t->g->n + 1, old = t->scr_cap;
    if (want <= old) return 0;
    Py_ssize_t cap = old ? old : 1024;
    while (cap < want) cap *= 2;
    char *a = PyMem_Realloc(t->scr_seen, (size_t)cap);
    if (a) t->scr_seen = a;
    char *b = a ? PyMem_Realloc(t->scr_anc, (size_t)cap) : NULL;
    if (b) t->scr_anc = b;
    nd_id *m = b ? PyMem_Realloc(t->scr_map, sizeof(nd_id) * (size_t)cap) : NULL;
    if (!m) { PyErr_NoMemory(); return -1; }  /* scr_cap unchanged: tails redone next time */
    t->scr_map = m;
    memset(a + old, 0, (size_t)(cap - old));
    memset(b + old, 0, (size_t)(cap - old));
    memset(m + old, 0xff, sizeof(nd_id) * (size_t)(cap - old));  /* ND_NONE */
    t->scr_cap = cap;
    return 0;
}

static PyObject *run_graph_now(nd_trace *t, const nd_id *targets, int nt, const nd_id *stores,
                               int nstores);
/* after a failed run_graph: the trace node whose operation raised
 * (ND_NONE: no one operation's) and whether before its writes */
static _Thread_local nd_id flush_failed = ND_NONE;
static _Thread_local int flush_failed_before;

static PyObject *run_graph(nd_trace *t, const nd_id *targets, int nt, const nd_id *stores,
                           int nstores)
{
    PyObject *cv = t->fpstate ? nd__extobj_var() : NULL, *cur = NULL, *tok = NULL;
    if (cv) {
        if (PyContextVar_Get(cv, NULL, &cur) < 0) return NULL;
        if (cur != t->fpstate && !(tok = PyContextVar_Set(cv, t->fpstate))) {
            Py_XDECREF(cur);
            return NULL;
        }
        Py_XDECREF(cur);
    }
    PyObject *res = run_graph_now(t, targets, nt, stores, nstores);
    if (tok) {
        ND_EXC_SAVE(exc);
        if (PyContextVar_Reset(cv, tok) < 0) PyErr_Clear();
        ND_EXC_RESTORE(exc);
        Py_DECREF(tok);
    }
    return res;
}

/* Inputs of a flush's graph it may give up to the run (backend.h, donated
 * inputs): the value of an earlier flush -- A of an LU whose every step
 * flushes, written in place by the next step -- that nothing reads after
 * this flush. Copying it whole for each SETITEM on it was 43% of that
 * program. The trace gives up its reference (the value of node i) for the
 * run; the caller puts it back when the run fails (its regions undone by
 * the backend). Donated when:
 *   the run's array is the value itself, and only the node and the run's
 *   INPUT hold it (no view of it, no NumPy array the user holds, no other
 *   node's value); it owns its C-contiguous, writeable memory;
 *   no storage's version, no proxy's cached view is node i, and every node
 *   that reads i and has no value is computed by this flush as a target
 *   (a value then, so i is not read again). */
#define ND_DONATE_SCAN 4096
/* Donating saves a copy of the value; proving nothing reads it walks the
 * nodes made since it and every caller storage of the capture (a few ns
 * each). A small value is copied: walking 4000 storages (the np.array of
 * each step) to spare a copy of 24 bytes was 21% of a Lorenz RK4 on
 * 3-vectors, whose every element read flushes -- quadratic in the steps.
 * So the walk is made when it costs less than the copy it may spare. */
#define ND_DONATE_COPY_BYTES 2048    /* a copy's fixed cost (allocation), in bytes copied */
#define ND_DONATE_BYTES_PER_NODE 32  /* a node or storage walked, in bytes copied */

/* Whether a later flush may read node i (nd__needed_nodes' rule, with this
 * flush's targets counted as values): walked over the nodes made since i
 * only. 1, 0, or -1 with MemoryError. */
static int needed_after(nd_trace *t, nd_id i)
{
    nd_graph *tg = t->g;
    const char *target = t->scr_seen;
    Py_ssize_t span = tg->n - i;
    /* i itself a root (the version of a storage Python still holds, as M
     * of a seam carving read row by row after the loop that made it): read
     * later, known without the walk, which each flush would redo over up
     * to ND_DONATE_SCAN nodes */
    for (NdProxy *p = t->proxies; p; p = p->next)
        if (p->st->version == i || (p->vver == p->st->version && p->vnode == i)) return 1;
    for (Py_ssize_t k = 0; k < t->nclist; k++)
        if (t->clist[k]->version == i) return 1;
    char *need = PyMem_Calloc((size_t)span, 1);
    if (!need) { PyErr_NoMemory(); return -1; }
    /* a flush's walk, as its ancestors': the nodes since i and the caller
     * storages (every array the capture lifted: thousands in a long loop) */
    nd_counter_add(ND_CTR_FLUSH_NODES, span + t->nclist);
#define MARK(id) do { nd_id m_ = (id); if (m_ >= i) need[m_ - i] = 1; } while (0)
    for (NdProxy *p = t->proxies; p; p = p->next) {
        MARK(p->st->version);
        if (p->vver == p->st->version && p->vnode >= 0) MARK(p->vnode);
    }
    for (Py_ssize_t k = 0; k < t->nclist; k++) MARK(t->clist[k]->version);
    for (nd_id c = tg->n - 1; c > i; c--) {
        nd_node *cn = &tg->nodes[c];
        if (!need[c - i] || cn->value || target[c] || cn->op == ND_OP_INPUT) continue;
        for (int k = 0; k < cn->nin; k++) if (cn->in[k] >= 0) MARK(cn->in[k]);
        for (int k = 0; k < cn->nextra; k++) if (cn->extra[k] >= 0) MARK(cn->extra[k]);
    }
#undef MARK
    int r = need[0];
    PyMem_Free(need);
    return r;
}

/* An array the trace holds as an INPUT (an argument, an array the function's
 * code made without numdyn), written by this flush: its SETITEMs may write
 * into it in place, as NumPy's own writes do, instead of copying it whole
 * for each one (a loop that writes x[i] and reads an element back each
 * iteration copied x once per iteration: quadratic). Python code that holds
 * it or a view of it sees the write then, as under NumPy. Given when: it
 * is a C-contiguous, writeable ndarray; no later flush reads its old
 * contents (needed_after, over the nodes made since it: a walk cheaper than
 * the copy); no other input of this graph shares its memory (the graph may
 * read that one after the write); the run can undo what it wrote
 * (backend.h: donated inputs are undone when the run fails). */
static int donate_input(nd_trace *t, nd_graph *g, nd_id i, nd_id x, const nd_id *order, Py_ssize_t norder,
                        const nd_id *map)
{
    nd_graph *tg = t->g;
    PyObject *v = g->nodes[x].obj;
    if (!v || !PyArray_CheckExact(v) || t->scr_seen[i] || tg->n - i > ND_DONATE_SCAN) return 0;
    PyArrayObject *a = (PyArrayObject *)v;
    if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISWRITEABLE(a)) return 0;
    size_t nb = (size_t)PyArray_NBYTES(a);
    if (nb + ND_DONATE_COPY_BYTES < ND_DONATE_BYTES_PER_NODE * (size_t)(tg->n - i + t->nclist)) return 0;
    for (Py_ssize_t o = 0; o < norder; o++) {
        nd_id j = order[o], y = map[j];
        if (y == ND_NONE || y == x || g->nodes[y].op != ND_OP_INPUT) continue;
        PyObject *w = g->nodes[y].obj;
        if (w == v) return 0;
        if (w && PyArray_Check(w) && nd__overlaps_any(w, &v, 1, NULL)) return 0;
    }
    int read = needed_after(t, i);
    if (read < 0) { PyErr_Clear(); return 0; }
    return !read;
}

static int donate(nd_trace *t, nd_graph *g, const nd_id *map, const nd_id *order, Py_ssize_t norder,
                  nd_id *don, nd_id *from, PyObject **keep, int cap)
{
    nd_graph *tg = t->g;
    int nd = 0;
    for (Py_ssize_t o = 0; o < norder && nd < cap; o++) {
        nd_id i = order[o], x = map[i];
        if (x == ND_NONE || g->nodes[x].op != ND_OP_INPUT) continue;
        nd_node *tn = &tg->nodes[i];
        PyObject *v = tn->value;
        if (tn->op == ND_OP_INPUT) {
            if (donate_input(t, g, i, x, order, norder, map)) {
                don[nd] = x;
                from[nd] = i;
                keep[nd++] = NULL;   /* the node holds no value to give up */
            }
            continue;
        }
        /* a value this flush was asked for (marked seen: nd__flush returns
         * it -- a vjp's saved forward value computed before a break) is
         * never donated */
        if (!v || g->nodes[x].obj != v || !PyArray_CheckExact(v) ||
            Py_REFCNT(v) != 2 || tg->n - i > ND_DONATE_SCAN || t->scr_seen[i])
            continue;
        PyArrayObject *a = (PyArrayObject *)v;
        if (!PyArray_CHKFLAGS(a, NPY_ARRAY_OWNDATA) || !PyArray_IS_C_CONTIGUOUS(a) ||
            !PyArray_ISWRITEABLE(a) || PyArray_BASE(a))
            continue;
        size_t nb = (size_t)PyArray_NBYTES(a);
        if (nb + ND_DONATE_COPY_BYTES < ND_DONATE_BYTES_PER_NODE * (size_t)(tg->n - i + t->nclist))
            continue;
        int read = needed_after(t, i);
        if (read < 0) { PyErr_Clear(); read = 1; }  /* no memory to tell: copied, as before */
        if (read) continue;
        don[nd] = x;
        from[nd] = i;
        keep[nd++] = v;
        tn->value = NULL;  /* its reference moves to keep */
    }
    return nd;
}

static PyObject *run_graph_now(nd_trace *t, const nd_id *targets, int nt, const nd_id *stores,
                               int nstores)
{
    /* the map and the extraction's marks are t's scratch (nd__flush holds
     * it, scr_anc cleared): entries are put back through `order` below */
    nd_id *outs = PyMem_Malloc(sizeof(nd_id) * (size_t)nt);
    nd_id *map = t->scr_map, *order = NULL;
    Py_ssize_t norder = 0;
    nd_id *xstores = nstores ? PyMem_Malloc(sizeof(nd_id) * 2 * (size_t)nstores) : NULL;
    flush_failed = ND_NONE;
    flush_failed_before = 0;
    if (!outs || (nstores && !xstores)) {
        PyMem_Free(outs);
        PyMem_Free(xstores);
        return PyErr_NoMemory();
    }
    nd_graph *g = nd_graph_extract_scratch(t->g, targets, nt, t->scr_anc, map, outs, &order, &norder);
    if (!g) { PyMem_Free(outs); PyMem_Free(xstores); return NULL; }
    int nx = 0;
    for (int k = 0; k < nstores; k++) {
        nd_id s = map[stores[2 * k]], v = map[stores[2 * k + 1]];
        if (s == ND_NONE || v == ND_NONE) continue;
        xstores[2 * nx] = s;
        xstores[2 * nx + 1] = v;
        nx++;
    }
    for (int i = 0; i < nt; i++) g->nodes[outs[i]].flags |= ND_F_OUTPUT;
    PyObject *labels = NULL, *gobj = NULL, *res = NULL;
    if (nd_debug_checks() && nd_graph_verify(g, outs, nt, "tracing") < 0) goto fail;
    labels = t->explain ? op_labels(g) : NULL;
    if (t->explain && !labels) goto fail;
    t->flushing = 1;
    if (t->backend == ND_BACKEND_CUSTOM) {
        res = run_custom(t, g, outs, nt, &gobj);
        g = NULL;  /* stolen */
    } else {
        nd_id don[8], from[8];
        PyObject *keep[8];
        nd_replay_rec *rec0 = nd__rec_of(t);
        int ndon = t->backend == ND_BACKEND_NATIVE && !t->explain &&
                   !(rec0 && ((rec0->final && !rec0->g) || t->chunking))
                   ? donate(t, g, map, order, norder, don, from, keep, 8) : 0;
        nd_donated = ndon ? don : NULL;
        nd_ndonated = ndon;
        res = nd__run_with_stores(t->backend, g, outs, nt, t->options, xstores, nx);
        nd_donated = NULL;
        nd_ndonated = 0;
        for (int k = 0; k < ndon; k++) {
            if (!keep[k]) continue;  /* an input written in place (donate_input) */
            if (res) Py_DECREF(keep[k]);
            else t->g->nodes[from[k]].value = keep[k];  /* as it was: the run undid its writes */
        }
        if (!res && nd_failed_node != ND_NONE) {
            /* the operation that raised, as a node of t's graph */
            for (nd_id i = 0; i < t->g->n; i++)
                if (map[i] == nd_failed_node) { flush_failed = i; break; }
            flush_failed_before = nd_failed_before;
        }
        if (!res && t->backend != ND_BACKEND_EAGER && flush_failed == ND_NONE) {
            /* config.suppress_errors: a failing compiling backend falls back
             * to the eager interpreter, loudly; otherwise the error stands
             * (an operation that raised is NumPy's error, not the backend's) */
            ND_EXC_SAVE(exc);
            int suppress = config_flag("suppress_errors");
            ND_EXC_RESTORE(exc);
            if (suppress) {
                PyObject *why = take_exception_str();
                PyObject *msg = PyUnicode_FromFormat(
                    "numdyn: %s backend failed (%S); running this graph with the "
                    "eager backend (numdyn.config.suppress_errors is set)",
                    nd_backends[t->backend].name, why ? why : Py_None);
                Py_XDECREF(why);
                if (msg && PyErr_WarnEx(PyExc_RuntimeWarning, PyUnicode_AsUTF8(msg), 1) == 0)
                    res = nd__run_with_stores(ND_BACKEND_EAGER, g, outs, nt, t->options, xstores, nx);
                Py_XDECREF(msg);
            }
        }
    }
    t->flushing = 0;
    if (res && check_results(t->g, targets, nt, res) < 0) Py_CLEAR(res);
    nd_replay_rec *rec = nd__rec_of(t);
    if (rec && t->chunking && !rec->final && !rec->escapes && !rec->unreplayable) {
        /* a chunk of a recording capture: a step of its replay, whose
         * inputs are arguments or earlier steps' results */
        int took = res && g && !t->explain ? nd__rec_chunk(rec, g, outs, nt, res) : 0;
        if (took > 0) g = NULL;
        else rec->escapes++;  /* not replayable as steps: this call is not recorded */
    }
    if (res && rec && rec->final && !rec->g && g && !t->explain) {
        /* the return flush of a recording capture: its graph is the replay
         * program (trace_replay.c) */
        nd_id *o = PyMem_Malloc(sizeof(nd_id) * (size_t)nt);
        if (o && note_order(t, rec, map, xstores, nx) == 0) {
            memcpy(o, outs, sizeof(nd_id) * (size_t)nt);
            rec->g = g;
            rec->outs = o;
            rec->nout = nt;
            rec->res = Py_NewRef(res);
            g = NULL;
        } else {
            PyMem_Free(o);
            rec->escapes++;  /* no memory to keep it: just do not record */
        }
    }
    if (res) {
        nd_counter_add(ND_CTR_GRAPHS, 1);
        if (t->explain) {
            if (!gobj && g) {
                gobj = nd_graphpy_wrap(g, outs, nt);
                g = NULL;
                if (!gobj) PyErr_Clear();  /* explain still counts the graph */
            }
            PyObject *rec = Py_BuildValue("(sOO)", "graph", gobj ? gobj : Py_None, labels);
            if (!rec || PyList_Append(t->explain, rec) < 0) Py_CLEAR(res);
            Py_XDECREF(rec);
        }
        if (nd__log_hook && res) {
            PyObject *msg = PyUnicode_FromFormat("flushed a graph of %d output(s)", nt);
            if (msg) nd__log("graphs", msg);
            Py_XDECREF(msg);
            PyErr_Clear();
        }
    }
    nd_graph_free(g);
    Py_XDECREF(gobj);
    Py_XDECREF(labels);
    PyMem_Free(outs);
    for (Py_ssize_t o = 0; o < norder; o++) map[order[o]] = ND_NONE;
    PyMem_Free(order);
    PyMem_Free(xstores);
    return res;
fail:
    nd_graph_free(g);
    PyMem_Free(outs);
    for (Py_ssize_t o = 0; o < norder; o++) map[order[o]] = ND_NONE;
    PyMem_Free(order);
    PyMem_Free(xstores);
    return NULL;
}

/* --------------------------------------------------------- write-back */

static void extent(PyArrayObject *a, char **lo, char **hi)
{
    char *p = PyArray_BYTES(a), *l = p, *h = p;
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp n = PyArray_DIM(a, d), s = PyArray_STRIDE(a, d);
        if (n == 0) { *lo = *hi = p; return; }
        if (s < 0) l += s * (n - 1); else h += s * (n - 1);
    }
    *lo = l;
    *hi = h + PyArray_ITEMSIZE(a);
}

static int overlaps(PyObject *x, PyObject *y)
{
    char *a0, *a1, *b0, *b1;
    extent((PyArrayObject *)x, &a0, &a1);
    extent((PyArrayObject *)y, &b0, &b1);
    return a0 < b1 && b0 < a1 && a0 != a1 && b0 != b1;
}

int nd__overlaps_any(PyObject *x, PyObject *const *ws, Py_ssize_t nw, PyObject *skip)
{
    for (Py_ssize_t k = 0; k < nw; k++)
        if (ws[k] != skip && overlaps(x, ws[k])) return 1;
    return 0;
}

/* Nodes a later flush may still read: what the versions and cached views
 * of live storages/proxies need, walking back through nodes that have no
 * value yet (a node with a value is a leaf: its inputs are not needed). */
char *nd__needed_nodes(nd_trace *t)
{
    nd_graph *g = t->g;
    char *need = PyMem_Calloc((size_t)g->n + 1, 1);
    if (!need) { PyErr_NoMemory(); return NULL; }
    for (NdProxy *p = t->proxies; p; p = p->next) {
        need[p->st->version] = 1;
        if (p->vver == p->st->version && p->vnode >= 0) need[p->vnode] = 1;
    }
    for (Py_ssize_t k = 0; k < t->nclist; k++) need[t->clist[k]->version] = 1;
    for (nd_id i = g->n - 1; i >= 0; i--) {
        nd_node *n = &g->nodes[i];
        if (!need[i] || n->value || n->op == ND_OP_INPUT) continue;
        for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0) need[n->in[k]] = 1;
        for (int k = 0; k < n->nextra; k++) if (n->extra[k] >= 0) need[n->extra[k]] = 1;
    }
    return need;
}

/* nd__needed_nodes' set as a list, walked from its roots through the
 * nodes it marks only: a flush that writes an argument back (an element
 * write in a loop the tracer runs) must not pay for every node the capture
 * made so far (a scan of the whole trace graph per flush was quadratic in
 * the loop's trip count: 8000 iterations, 10-18 us each). `mark` is zero on
 * entry for t->g->n nodes and is left zero; *out (PyMem) holds the ids.
 * The count, or -1 with MemoryError. */
Py_ssize_t nd__needed_list(nd_trace *t, char *mark, nd_id **out)
{
    nd_graph *g = t->g;
    Py_ssize_t n = 0, cap = 64, top = 0;
    nd_id *l = PyMem_Malloc(sizeof(nd_id) * (size_t)cap);
    if (!l) { PyErr_NoMemory(); return -1; }
#define PUSH(id_) do { nd_id p_ = (id_);                                              \
        if (p_ >= 0 && p_ < g->n && !mark[p_]) {                                    \
            if (n == cap) {                                                          \
                nd_id *m_ = PyMem_Realloc(l, sizeof(nd_id) * (size_t)(cap *= 2));   \
                if (!m_) goto oom;                                                   \
                l = m_;                                                              \
            }                                                                        \
            mark[p_] = 1;                                                            \
            l[n++] = p_;                                                             \
        } } while (0)
    for (NdProxy *p = t->proxies; p; p = p->next) {
        PUSH(p->st->version);
        if (p->vver == p->st->version && p->vnode >= 0) PUSH(p->vnode);
    }
    for (Py_ssize_t k = 0; k < t->nclist; k++) PUSH(t->clist[k]->version);
    /* the list is its own work queue: entries past `top` are unexpanded */
    for (; top < n; top++) {
        nd_node *nn = &g->nodes[l[top]];
        if (nn->value || nn->op == ND_OP_INPUT) continue;
        for (int k = 0; k < nn->nin; k++) if (nn->in[k] >= 0) PUSH(nn->in[k]);
        for (int k = 0; k < nn->nextra; k++) if (nn->extra[k] >= 0) PUSH(nn->extra[k]);
    }
#undef PUSH
    for (Py_ssize_t k = 0; k < n; k++) mark[l[k]] = 0;
    *out = l;
    return n;
oom:
    for (Py_ssize_t k = 0; k < n; k++) mark[l[k]] = 0;
    PyMem_Free(l);
    PyErr_NoMemory();
    return -1;
}

nd_id nd__caller_input(nd_trace *t, PyObject *caller)
{
    if (PyArray_CheckExact(caller)) return nd__input_node(t, caller);
    /* a subclass instance reads as the plain array over its memory */
    PyObject *v = PyArray_View((PyArrayObject *)caller, NULL, &PyArray_Type);
    if (!v) return ND_NONE;
    nd_id id = nd__input_node(t, v);
    Py_DECREF(v);
    return id;
}

/* s's version is its caller array as it is now; no write pending. */
static int settle(nd_trace *t, nd_storage *s)
{
    nd_id id = nd__caller_input(t, s->caller);
    if (id == ND_NONE) return -1;
    s->version = id;
    if (s->dirty) t->ndirty--;
    s->dirty = 0;
    return 0;
}

static int write_back(nd_trace *t)
{
    if (!t->ndirty) return 0;
    Py_ssize_t nd = 0;
    for (Py_ssize_t k = 0; k < t->nclist; k++) nd += t->clist[k]->dirty;
    if (!nd) return 0;
    nd_graph *g = t->g;
    nd_storage **ds = PyMem_Malloc(sizeof(*ds) * (size_t)nd);
    PyObject **dst = PyMem_Malloc(sizeof(PyObject *) * (size_t)nd);
    PyObject **src = PyMem_Calloc((size_t)nd, sizeof(PyObject *));
    nd_id *need = NULL;
    Py_ssize_t nneed = 0;
    int marked = 0;
    int rc = -1;
    if (!ds || !dst || !src) { PyErr_NoMemory(); goto done; }
    nd = 0;
    for (Py_ssize_t k = 0; k < t->nclist; k++) {
        nd_storage *s = t->clist[k];
        if (!s->dirty) continue;
        ds[nd] = s;
        dst[nd] = s->caller;
        nd++;
    }
    /* results that live in a buffer about to be overwritten: copy first */
    for (Py_ssize_t k = 0; k < nd; k++) {
        PyObject *r = nd__node_array(g, ds[k]->version);
        if (!r) {
            PyErr_SetString(PyExc_SystemError, "numdyn: write-back of an uncomputed version");
            goto done;
        }
        if (r != dst[k] && nd__overlaps_any(r, dst, nd, dst[k]))
            src[k] = PyArray_NewCopy((PyArrayObject *)r, NPY_KEEPORDER);
        else
            src[k] = Py_NewRef(r);
        if (!src[k]) goto done;
    }
    /* old contents that later work still reads: private copies (the
     * versions being written back excepted: they are the new contents) */
    if (scratch_fit(t) < 0) goto done;
    nneed = nd__needed_list(t, t->scr_anc, &need);
    if (nneed > 0) nd_counter_add(ND_CTR_WRITEBACK_NODES, nneed);
    if (nneed < 0) goto done;
    for (Py_ssize_t k = 0; k < nd; k++) t->scr_anc[ds[k]->version] = 1;
    marked = 1;
    for (Py_ssize_t q = 0; q < nneed; q++) {
        nd_id i = need[q];
        if (t->scr_anc[i]) continue;
        PyObject *a = nd__node_array(g, i);
        if (!a || !PyArray_Check(a) || !nd__overlaps_any(a, dst, nd, NULL)) continue;
        PyObject *c = PyArray_NewCopy((PyArrayObject *)a, NPY_KEEPORDER);
        if (!c) goto done;
        Py_XSETREF(g->nodes[i].value, c);
    }
    for (Py_ssize_t k = 0; k < nd; k++) t->scr_anc[ds[k]->version] = 0;
    marked = 0;
    for (Py_ssize_t k = 0; k < nd; k++) {
        nd_storage *s = ds[k];
        if (src[k] != s->caller) {
            /* writes made through a view taken while the argument was
             * writeable land even if the function has since cleared its
             * flag (NumPy's view kept its own) */
            PyArrayObject *c = (PyArrayObject *)s->caller;
            int relock = !s->readonly && !PyArray_ISWRITEABLE(c);
            if (relock) PyArray_ENABLEFLAGS(c, NPY_ARRAY_WRITEABLE);
            int crc = PyArray_CopyInto(c, (PyArrayObject *)src[k]);
            if (relock) PyArray_CLEARFLAGS(c, NPY_ARRAY_WRITEABLE);
            if (crc < 0) goto done;
        }
        if (settle(t, s) < 0) goto done;
    }
    rc = 0;
done:
    if (marked) for (Py_ssize_t k = 0; k < nd; k++) t->scr_anc[ds[k]->version] = 0;
    if (src) for (Py_ssize_t k = 0; k < nd; k++) Py_XDECREF(src[k]);
    PyMem_Free(ds);
    PyMem_Free(dst);
    PyMem_Free(src);
    PyMem_Free(need);
    return rc;
}

/* Cached values of nodes nothing can read again are released once they
 * add up: a long loop with a break per iteration must not keep every
 * intermediate alive. Dropping a value is always safe (the graph is
 * functional: a later need recomputes from INPUT nodes). */
#define ND_SWEEP_BYTES ((Py_ssize_t)64 << 20)

static int sweep_values(nd_trace *t)
{
    char *need = nd__needed_nodes(t);
    if (!need) return -1;
    nd_graph *g = t->g;
    if (t->swept_cap < g->n) {
        /* what ran is remembered: nd__note_dead took a released value
         * (`while d > tol`'s comparison, every step of a time loop) for
         * one never computed, and the return flush recomputed the whole
         * loop from the arrays' final contents to run it again */
        char *m = PyMem_Realloc(t->swept, (size_t)g->n);
        if (!m) { PyMem_Free(need); PyErr_NoMemory(); return -1; }
        memset(m + t->swept_cap, 0, (size_t)(g->n - t->swept_cap));
        t->swept = m;
        t->swept_cap = g->n;
    }
    for (nd_id i = 0; i < g->n; i++)
        if (!need[i] && g->nodes[i].value) {
            Py_CLEAR(g->nodes[i].value);
            t->swept[i] = 1;
        }
    PyMem_Free(need);
    t->value_bytes = 0;
    return 0;
}

/* ---------------------------------------------------------------- flush */

/* The return flush of a recording capture: which of its outputs each
 * caller array about to be written back gets (trace_replay.c replays the
 * write-backs). A dirty storage whose version this flush did not compute
 * makes the capture unrecordable. */
static int note_write_backs(nd_trace *t, nd_replay_rec *rec, const nd_id *targets, int nt)
{
    int nd = 0;
    if (!t->ndirty) return 0;
    for (Py_ssize_t k = 0; k < t->nclist; k++) nd += t->clist[k]->dirty;
    if (!nd) return 0;
    rec->wb_out = PyMem_Malloc(sizeof(int32_t) * (size_t)nd);
    rec->wb_caller = PyMem_Malloc(sizeof(PyObject *) * (size_t)nd);
    if (!rec->wb_out || !rec->wb_caller) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < t->nclist; k++) {
        nd_storage *s = t->clist[k];
        if (!s->dirty) continue;
        int i = 0;
        while (i < nt && targets[i] != s->version) i++;
        if (i == nt) { rec->wb_bad = 1; continue; }
        rec->wb_out[rec->nwb] = i;
        rec->wb_caller[rec->nwb++] = s->caller;
    }
    return 0;
}

/* A run of t's graph raised at the operation of node flush_failed: the
 * caller arrays get the writes NumPy made before it (trace_order.h),
 * computed quietly, and no caller write stays pending (what follows the
 * failing operation never ran). The exception stands. Without a log, or
 * when the versions cannot be computed, the caller arrays keep what they
 * hold and the pending writes are dropped. */
/* The failing operation F wrote its result before NumPy raised (a ufunc's
 * floating-point error under errstate "raise", or its RuntimeWarning under
 * a warnings filter "error": the loop runs, then the flags are checked).
 * Inside a try block the user's code goes on with that result -- an array
 * the function made and updated in place (`o /= a`) holds it -- so F's
 * value is computed quietly and kept: a later flush must not run F again
 * (and raise again where NumPy does not). */
static void keep_failed_value(nd_trace *t, nd_id F, int before)
{
    if (F == ND_NONE || before || F >= t->g->n || t->g->nodes[F].value) return;
    if (!PyErr_ExceptionMatches(PyExc_FloatingPointError) &&
        !PyErr_ExceptionMatches(PyExc_RuntimeWarning))
        return;
    int op = t->g->nodes[F].op;
    if (op != ND_OP_UFUNC && op != ND_OP_CAST && op != ND_OP_REDUCE && op != ND_OP_SCAN) return;
    ND_EXC_SAVE(exc);
    PyObject *vals = nd__compute_quietly(t->g, &F, 1);
    if (vals) Py_XSETREF(t->g->nodes[F].value, Py_NewRef(PyList_GET_ITEM(vals, 0)));
    else PyErr_Clear();
    Py_XDECREF(vals);
    ND_EXC_RESTORE(exc);
}

/* The arrays the function made get no write log (nothing is written back
 * to them), but a `try` block goes on with them after the failure: the
 * stores (SETITEM) from the failing operation on -- the failing store itself
 * when it raised before its write (a scalar int() cannot convert), the
 * writes that read the failed value when it was not kept -- are taken off
 * each such storage's version chain, so a later read sees what NumPy left
 * in the array and does not run the failing operation again (it raised at
 * the return). Stores into arrays made by later operations are not undone:
 * inside a handler the failing operation is the last one traced
 * (trace_handlers.c). */
static void rewind_own_stores(nd_trace *t, nd_id F, int before)
{
    nd_graph *g = t->g;
    if (F == ND_NONE || F >= g->n || (!before && g->nodes[F].value)) return;
    nd_id from = before ? F : F + 1;  /* the first node whose store NumPy did not make */
    for (NdProxy *p = t->proxies; p; p = p->next) {
        nd_storage *s = p->st;
        if (!s || s->caller) continue;  /* caller arrays: fail_writes' log */
        nd_id v = s->version;
        while (v >= from && v < g->n && g->nodes[v].op == ND_OP_SETITEM) v = g->nodes[v].in[0];
        if (v != s->version && v >= 0 && v < from) s->version = v;
    }
}

static void fail_writes(nd_trace *t)
{
    nd_id F = flush_failed;
    int before = flush_failed_before;
    Py_ssize_t nc = t->nclist;
    keep_failed_value(t, F, before);
    rewind_own_stores(t, F, before);
    if (!nc) return;
    ND_EXC_SAVE(exc);
    nd_graph *g = t->g;
    nd_id *cut = PyMem_Malloc(sizeof(nd_id) * (size_t)nc);
    nd_id *ids = PyMem_Malloc(sizeof(nd_id) * (size_t)nc);
    int m = 0;
    if (!cut || !ids) goto drop;
    if (F == ND_NONE || W.t != t || !W.valid) goto drop;
    nd__wlog_cut(W.e, W.n, F, before, cut, (int)nc);
    for (Py_ssize_t k = 0; k < nc; k++) {
        if (!t->clist[k]->dirty) cut[k] = ND_NONE;
        else if (cut[k] != ND_NONE && !nd__node_array(g, cut[k])) ids[m++] = cut[k];
    }
    if (m) {
        PyObject *vals = nd__compute_quietly(g, ids, m);
        if (!vals) goto drop;
        for (int i = 0; i < m; i++)
            Py_XSETREF(g->nodes[ids[i]].value, Py_NewRef(PyList_GET_ITEM(vals, i)));
        Py_DECREF(vals);
    }
    for (Py_ssize_t k = 0; k < nc; k++) {
        nd_storage *s = t->clist[k];
        if (!s->dirty) continue;
        if (cut[k] == ND_NONE) {
            if (settle(t, s) < 0) goto drop;
        } else {
            s->version = cut[k];
        }
    }
    if (write_back(t) < 0) goto drop;
    goto done;
drop:
    PyErr_Clear();
    for (Py_ssize_t k = 0; k < nc; k++)
        if (t->clist[k]->dirty && settle(t, t->clist[k]) < 0) PyErr_Clear();
done:
    if (W.t == t) wlog_clear(t);
    PyMem_Free(cut);
    PyMem_Free(ids);
    ND_EXC_RESTORE(exc);
}

int nd__flush(nd_trace *t, const nd_id *ids, int n, PyObject **results)
{
    if (t->flushing) {
        PyErr_SetString(PyExc_RuntimeError,
                        "numdyn: a lazy array was used while its own graph was being "
                        "computed (by a custom backend?)");
        return -1;
    }
    if (t->pins && nd__pins_check(t) < 0) return -1;  /* before anything runs */
    nd_counter_add(ND_CTR_FLUSHES, 1);
    if (!t->ended) wlog_note(t);
    nd_replay_rec *rec = nd__rec_of(t);
    if (rec && !t->chunking) {  /* a chunk is a step of the replay (nd__rec_chunk) */
        rec->flushes++;
        rec->escapes += !rec->final;
        for (Py_ssize_t k = 0; t->ndirty && k < t->nclist; k++) rec->mutated |= t->clist[k]->dirty;
    }
    nd_graph *g = t->g;
    Py_ssize_t cap = n + t->nclist;
    /* seen: t's scratch (scratch_fit); what this flush marks in it is
     * listed -- targets, and the valued ids and dirty versions in `marked`
     * -- and cleared at the end */
    nd_id *targets = PyMem_Malloc(sizeof(nd_id) * (size_t)(cap ? cap : 1));
    nd_id *marked = PyMem_Malloc(sizeof(nd_id) * (size_t)(cap ? cap : 1));
    char *seen = NULL;
    PyObject *res = NULL;
    nd_id *stores = NULL;
    int nt = 0, rc = -1, nstores = 0, nmarked = 0;
    if (t->scr_busy) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: nested flush of one capture");
        PyMem_Free(targets);
        PyMem_Free(marked);
        return -1;
    }
    if (!targets || !marked) { PyErr_NoMemory(); goto done; }
    if (scratch_fit(t) < 0) goto done;
    t->scr_busy = 1;
    seen = t->scr_seen;
    for (int i = 0; i < n; i++) {
        nd_id id = ids[i];
        if (!seen[id] && !nd__node_array(g, id)) targets[nt++] = id;
        else if (!seen[id]) marked[nmarked++] = id;
        seen[id] = 1;
    }
    for (Py_ssize_t k = 0; t->ndirty && k < t->nclist; k++) {
        nd_storage *s = t->clist[k];
        if (!s->dirty) continue;
        nd_id id = s->version;
        if (!seen[id] && !nd__node_array(g, id)) targets[nt++] = id;
        else if (!seen[id]) marked[nmarked++] = id;
        seen[id] = 1;
    }
    if (nt) {
        /* live values the flush computes on the way are kept too: reading
         * y[i] of a lazy y in a loop must not recompute y every time */
        Py_ssize_t np_ = 0;
        for (NdProxy *p = t->proxies; p; p = p->next) np_++;
        nd_id *more = PyMem_Realloc(targets, sizeof(nd_id) * (size_t)(cap + np_ + 1));
        char *anc = t->scr_anc;  /* zero; cleared through ancl below */
        if (!more) { PyErr_NoMemory(); goto done; }
        targets = more;
        nd_id *ancl = NULL;  /* the marked ids, ascending */
        Py_ssize_t nanc = nd_graph_ancestors(g, targets, nt, 1, anc, &ancl);
        if (nanc < 0) { memset(anc, 0, (size_t)g->n); goto done; }
#define ANC_DONE() do { for (Py_ssize_t a_ = 0; a_ < nanc; a_++) anc[ancl[a_]] = 0; \
                        PyMem_Free(ancl); } while (0)
        for (NdProxy *p = t->proxies; p; p = p->next) {
            nd_id v = p->st->version;
            if (anc[v] && !seen[v] && !nd__node_array(g, v) && g->nodes[v].op != ND_OP_SCALAR) {
                targets[nt++] = v;
                seen[v] = 1;
            }
        }
        /* the other outputs of a multi-output NumPy call this flush makes
         * (u, vh of an svd whose s is needed) are kept too: a later flush
         * must not call NumPy again for them */
        int nsib = 0;
        for (Py_ssize_t a = 0; a < nanc; a++) {
            nd_id i = ancl[a];
            if (g->nodes[i].op == ND_OP_EXTERN && g->nodes[i].aux >= 0 && !g->nodes[i].value)
                for (nd_id j = 0; j < g->n; j++)
                    if (!seen[j] && nd_extern_sibling(&g->nodes[i], &g->nodes[j])) nsib++;
        }
        if (nsib) {
            nd_id *more2 = PyMem_Realloc(targets, sizeof(nd_id) * (size_t)(nt + nsib + 1));
            if (!more2) { ANC_DONE(); PyErr_NoMemory(); goto done; }
            targets = more2;
            for (Py_ssize_t a = 0; a < nanc; a++) {
                nd_id i = ancl[a];
                if (g->nodes[i].op == ND_OP_EXTERN && g->nodes[i].aux >= 0 && !g->nodes[i].value)
                    for (nd_id j = 0; j < g->n; j++)
                        if (!seen[j] && nd_extern_sibling(&g->nodes[i], &g->nodes[j])) {
                            targets[nt++] = j;
                            seen[j] = 1;
                        }
            }
        }
        /* stores of lazy NumPy scalars (see scalar_store_value): their
         * scalar operands are outputs, checked as the graph runs */
        if (t->scalar_stores > 0) {
            int capst = 0;
            for (Py_ssize_t a = 0; a < nanc; a++) {
                nd_id i = ancl[a];
                if (!(g->nodes[i].flags & ND_F_SCALAR_STORE)) continue;
                nd_id first = ND_NONE, v = scalar_store_value(g, i, &first);
                if (v == ND_NONE) continue;
                if (nstores == capst) {
                    capst = capst ? 2 * capst : 8;
                    nd_id *ns = PyMem_Realloc(stores, sizeof(nd_id) * 2 * (size_t)capst);
                    if (!ns) { ANC_DONE(); PyErr_NoMemory(); goto done; }
                    stores = ns;
                }
                stores[2 * nstores] = first;
                stores[2 * nstores + 1] = v;
                nstores++;
            }
            nd_id *more3 = nstores ? PyMem_Realloc(targets, sizeof(nd_id) * (size_t)(nt + nstores + 1)) : targets;
            if (!more3) { ANC_DONE(); PyErr_NoMemory(); goto done; }
            targets = more3;
            for (int k = 0; k < nstores; k++) {
                nd_id v = stores[2 * k + 1];
                if (!seen[v] && !nd__node_array(g, v)) {
                    targets[nt++] = v;
                    seen[v] = 1;
                }
            }
        }
        ANC_DONE();
#undef ANC_DONE
        nd__flush_mark_layouts(t, seen);
        res = run_graph(t, targets, nt, stores, nstores);
        if (!res) {
            fail_writes(t);
            goto done;
        }
        for (int i = 0; i < nt; i++) {
            PyObject *a = PyList_GET_ITEM(res, i);
            nd_node *nn = nd_graph_node(t->g, targets[i]);
            Py_XSETREF(nn->value, Py_NewRef(a));
            t->value_bytes += (Py_ssize_t)PyArray_NBYTES((PyArrayObject *)a);
        }
        nd__flush_adopt_layouts(t);
        if (rec && rec->final && rec->g && note_write_backs(t, rec, targets, nt) < 0) goto done;
    }
    if (write_back(t) < 0) goto done;
    if (W.t == t) wlog_clear(t);  /* every caller write landed */
    for (int i = 0; i < n; i++) {
        PyObject *a = nd__node_array(t->g, ids[i]);
        results[i] = Py_XNewRef(a);
    }
    if (t->value_bytes > ND_SWEEP_BYTES && sweep_values(t) < 0) {
        for (int i = 0; i < n; i++) Py_CLEAR(results[i]);
        goto done;
    }
    rc = 0;
done:
    if (seen) {
        for (int i = 0; i < nt; i++) seen[targets[i]] = 0;
        for (int i = 0; i < nmarked; i++) seen[marked[i]] = 0;
        t->scr_busy = 0;
    }
    /* a run that raised (caught by the user's handler, or not) ran what
     * NumPy ran up to its error: no value made before it counts as dead */
    if (rc < 0) t->dead_floor = t->g->n;
    t->chunk_base = t->g->n;
    t->chunk_next = t->chunk_base + 64;  /* the size is looked up there */
    Py_XDECREF(res);
    PyMem_Free(targets);
    PyMem_Free(marked);
    PyMem_Free(stores);
    return rc;
}

/* NumPy runs every operation, so one whose value is never used still
 * warns (`r = np.log(a)` then rebound) or raises (`a[idx]` out of bounds,
 * then dropped; `np.linalg.inv(a)` of a singular `a`, its result unused).
 * Such values -- ufuncs, casts, reductions and scans nothing reads, the
 * externs that may raise on their values, and index checks (ND_F_CHECK)
 * -- are computed by the return flush and dropped. Orphans of other kinds
 * (externs that never raise: costly, and never a floating-point warning)
 * are left alone. */
/* another output of extern i's NumPy call is computed or live: that call
 * raises what i would (lstsq's rank read at a break, its residuals unused:
 * running them would call lstsq a second time for nothing) */
static int call_runs_anyway(const nd_graph *g, nd_id i, const int32_t *readers)
{
    for (nd_id j = 0; j < g->n; j++)
        if (j != i && (g->nodes[j].value || readers[j] > 0) &&
            nd_extern_same_call(&g->nodes[i], &g->nodes[j]))
            return 1;
    return 0;
}

int nd__note_dead(nd_trace *t)
{
    nd_graph *g = t->g;
    t->ndead = 0;
    if (g->n == 0) return 0;
    /* used[i]: 1 when a node or a caller storage reads i (counted in
     * readers[] by the same walk over the nodes: one pass over a long
     * capture's nodes, not two); 2: dead and worth running -- the kinds
     * above nothing reads, and an index check whose readers are all dead,
     * however deep (`a[1:3, idx]` dropped or failing to store: the gather
     * is not run, its IndexError is). readers[] counts live readers; ids
     * are topological, so one pass from the end settles them. */
    char *used = PyMem_Calloc((size_t)g->n, 1);
    if (!used) { PyErr_NoMemory(); return -1; }
    int32_t *readers = PyMem_Calloc((size_t)g->n, sizeof(int32_t));
    if (!readers) { PyMem_Free(used); PyErr_NoMemory(); return -1; }
    for (nd_id i = 0; i < g->n; i++) {
        const nd_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin && k < ND_MAXIN; k++)
            if (n->in[k] >= 0 && n->in[k] < g->n) readers[n->in[k]]++;
    }
    for (Py_ssize_t k = 0; k < t->nclist; k++) {
        nd_id v = t->clist[k]->version;
        if (v >= 0 && v < g->n) readers[v]++;
    }
    for (nd_id i = 0; i < g->n; i++) used[i] = readers[i] > 0;
    /* an extern reads every node of its extra list: a live one keeps its
     * operands live (`-X` of `(-X) @ w` was taken for dead, so a target of
     * the return flush kept as a program output to its end: 100 steps of
     * logistic regression held 200 copies of X, 10x NumPy's time in page
     * faults); a dead one is not run, so what only it reads stays worth
     * running (`used` does not count it) */
    for (nd_id i = 0; i < g->n; i++) {
        const nd_node *n = &g->nodes[i];
        for (int k = 0; k < n->nextra; k++)
            if (n->extra[k] >= 0 && n->extra[k] < g->n) readers[n->extra[k]]++;
    }
    for (NdProxy *p = t->proxies; p; p = p->next) {  /* values Python still holds */
        nd_id v = p->st->version;
        if (v >= 0 && v < g->n) readers[v]++;
    }
    int nd = 0;
    for (nd_id i = g->n - 1; i >= t->dead_floor; i--) {
        const nd_node *n = &g->nodes[i];
        if (readers[i] > 0 || n->value || (i < t->swept_cap && t->swept[i])) continue;
        if ((!used[i] && (n->op == ND_OP_UFUNC || n->op == ND_OP_CAST || n->op == ND_OP_REDUCE ||
                          n->op == ND_OP_SCAN ||
                          (n->op == ND_OP_EXTERN && nd__extern_may_raise(n) &&
                           !call_runs_anyway(g, i, readers)))) ||
            (n->flags & ND_F_CHECK))
            used[i] = 2;
        for (int k = 0; k < n->nin && k < ND_MAXIN; k++)
            if (n->in[k] >= 0 && n->in[k] < g->n) readers[n->in[k]]--;
        for (int k = 0; k < n->nextra; k++)
            if (n->extra[k] >= 0 && n->extra[k] < g->n) readers[n->extra[k]]--;
    }
    PyMem_Free(readers);
    for (nd_id i = t->dead_floor; i < g->n; i++) nd += used[i] == 2;
    if (nd) {
        nd_id *d = PyMem_Realloc(t->dead, sizeof(nd_id) * (size_t)nd);
        if (!d) { PyMem_Free(used); PyErr_NoMemory(); return -1; }
        t->dead = d;
        for (nd_id i = t->dead_floor; i < g->n; i++)
            if (used[i] == 2) t->dead[t->ndead++] = i;
    }
    PyMem_Free(used);
    return 0;
}

int nd__flush_dead(nd_trace *t)
{
    if (!t->ndead) return 0;
    int n = t->ndead;
    PyObject **res = PyMem_Calloc((size_t)n, sizeof(PyObject *));
    if (!res) { PyErr_NoMemory(); return -1; }
    t->ndead = 0;
    int rc = nd__flush(t, t->dead, n, res);
    for (int i = 0; i < n; i++) Py_XDECREF(res[i]);
    PyMem_Free(res);
    return rc;
}

int nd__flush_writes(nd_trace *t)
{
    for (Py_ssize_t k = 0; t->ndirty && k < t->nclist; k++)
        if (t->clist[k]->dirty) return nd__flush(t, NULL, 0, NULL);
    return 0;
}

static void detach(NdProxy *p, PyObject *value)
{
    nd_storage *s = p->st;
    nd_trace *t = s->trace;
    if (p->prev) p->prev->next = p->next;
    else t->proxies = p->next;
    if (p->next) p->next->prev = p->prev;
    p->prev = p->next = NULL;
    p->value = Py_NewRef(value);
    p->st = NULL;
    nd__storage_decref(s);
}

static PyObject *proxy_value_plain(NdProxy *p, const char *reason, const char *what, int brk);

PyObject *nd__proxy_value(NdProxy *p, const char *reason)
{
    PyObject *r = proxy_value_plain(p, reason, NULL, 0);
    return p->subtype ? nd__sub_wrap(p, r) : r;  /* an ndarray subclass instance */
}

PyObject *nd__proxy_read(NdProxy *p, const char *what, int brk)
{
    PyObject *r = proxy_value_plain(p, NULL, what, brk);
    return p->subtype ? nd__sub_wrap(p, r) : r;
}

/* reason: a graph break's (recorded); else a value read, `what` naming it;
 * brk: the caller records `what` as a graph break next (nd_trace_break_value) */
static PyObject *proxy_value_plain(NdProxy *p, const char *reason, const char *what, int brk)
{
    /* array contents reach Python code: a recording capture is not replayable */
    if (nd__tls_rec && !nd__tls_rec->final) nd__tls_rec->escapes++;
    if (p->value) return Py_NewRef(p->value);
    nd_storage *s = p->st;
    nd_trace *t = s->trace;
    if (t->flushing) {
        PyErr_SetString(PyExc_RuntimeError,
                        "numdyn: a lazy array was used while its own graph was being computed");
        return NULL;
    }
    int live = nd__live(p);
    if (t->ad && live && nd__ad_escape(t, p, reason) < 0) return NULL;
    if (reason && live && nd_trace_record_break(t, reason) < 0) return NULL;
    PyObject *r = nd_proxy_base_array((PyObject *)p);
    if (r) {
        /* a break lets Python see caller arrays: pending writes land first */
        if (reason && live && nd__flush_writes(t) < 0) Py_CLEAR(r);
    } else if (!PyErr_Occurred()) {
        nd_id id = nd__proxy_read_own(p);
        if (!reason && live && brk && t->fullgraph) {  /* the break the caller records, now */
            if (nd_trace_record_break(t, what) < 0) return NULL;
        } else if (!reason && live && !brk && nd__explain_read(t, what) < 0) {
            return NULL;
        }
        if (id == ND_NONE || nd__flush(t, &id, 1, &r) < 0) r = NULL;
        if (r && p->st == s && (!s->caller || !s->dirty)) {
            /* the flush computed p's storage too (a live value), or landed
             * its writes in the caller's memory: p is a view of it, as
             * under NumPy (strides, flags, base, the buffer Python writes) */
            PyObject *v = nd_proxy_base_array((PyObject *)p);
            if (v) Py_SETREF(r, v);
            else PyErr_Clear();
        }
    }
    if (r && t->ended) detach(p, r);
    return r;
}

static int check_proxy(PyObject *proxy)
{
    if (nd_proxy_check(proxy)) return 0;
    PyErr_Format(PyExc_TypeError, "numdyn: cannot materialize a %.80s", Py_TYPE(proxy)->tp_name);
    return -1;
}

PyObject *nd_trace_materialize(PyObject *proxy, const char *reason)
{
    return check_proxy(proxy) < 0 ? NULL : nd__proxy_value((NdProxy *)proxy, reason);
}

PyObject *nd_trace_read(PyObject *proxy, const char *what)
{
    return check_proxy(proxy) < 0 ? NULL : nd__proxy_read((NdProxy *)proxy, what, 0);
}

PyObject *nd_trace_break_value(PyObject *proxy, const char *reason)
{
    return check_proxy(proxy) < 0 ? NULL : nd__proxy_read((NdProxy *)proxy, reason, 1);
}

/* ------------------------------------------------ whole-structure flush */

typedef struct {
    NdProxy **p;
    PyObject **v;
    Py_ssize_t n, cap;
} proxy_set;

static int collect(PyObject *o, proxy_set *ps, int depth)
{
    if (depth > 64) return 0;  /* cyclic or absurdly deep: leave it */
    if (nd_proxy_check(o)) {
        for (Py_ssize_t k = 0; k < ps->n; k++) if (ps->p[k] == (NdProxy *)o) return 0;
        if (ps->n == ps->cap) {
            Py_ssize_t cap = ps->cap ? ps->cap * 2 : 8;
            NdProxy **np_ = PyMem_Realloc(ps->p, sizeof(*np_) * (size_t)cap);
            if (!np_) { PyErr_NoMemory(); return -1; }
            ps->p = np_;
            ps->cap = cap;
        }
        ps->p[ps->n++] = (NdProxy *)o;
        return 0;
    }
    if (PyTuple_Check(o) || PyList_Check(o)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            if (collect(PySequence_Fast_GET_ITEM(o, i), ps, depth + 1) < 0) return -1;
    } else if (PyDict_Check(o)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(o, &pos, &k, &v))
            if (collect(v, ps, depth + 1) < 0) return -1;
    }
    return 0;
}

static void proxy_set_clear(proxy_set *ps)
{
    if (ps->v) for (Py_ssize_t k = 0; k < ps->n; k++) Py_XDECREF(ps->v[k]);
    PyMem_Free(ps->p);
    PyMem_Free(ps->v);
}

/* Values of every proxy in ps: one flush per trace (normally one). */
static int compute_set(proxy_set *ps)
{
    ps->v = PyMem_Calloc((size_t)(ps->n ? ps->n : 1), sizeof(PyObject *));
    nd_id *ids = PyMem_Malloc(sizeof(nd_id) * (size_t)(ps->n ? ps->n : 1));
    Py_ssize_t *idx = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(ps->n ? ps->n : 1));
    PyObject **tmp = PyMem_Calloc((size_t)(ps->n ? ps->n : 1), sizeof(PyObject *));
    int rc = -1;
    if (!ps->v || !ids || !idx || !tmp) { PyErr_NoMemory(); goto done; }
    nd_trace *rt = ps->n && ps->p[0]->st ? ps->p[0]->st->trace : NULL;
    if (rt && rt->returning && rt->ndead) {
        /* the return flush computes the dead values that may warn too */
        nd_id *more = PyMem_Realloc(ids, sizeof(nd_id) * (size_t)(ps->n + rt->ndead));
        PyObject **tmore = more ? PyMem_Realloc(tmp, sizeof(PyObject *) * (size_t)(ps->n + rt->ndead)) : NULL;
        if (more) ids = more;
        if (tmore) tmp = tmore;
        if (!more || !tmore) { PyErr_NoMemory(); goto done; }
        memset(tmp + ps->n, 0, sizeof(PyObject *) * (size_t)rt->ndead);
    }
    for (Py_ssize_t k = 0; k < ps->n; k++) {
        NdProxy *p = ps->p[k];
        if (ps->v[k] || p->value) continue;
        nd_trace *t = p->st->trace;
        if (t->ad && nd__live(p) && nd__ad_escape(t, p, NULL) < 0) goto done;
        if (t->flushing) {
            ps->v[k] = nd__proxy_value(p, NULL);  /* raises the clear error */
            goto done;
        }
        /* every still-pending proxy of this trace in one flush */
        int n = 0;
        for (Py_ssize_t j = k; j < ps->n; j++) {
            NdProxy *q = ps->p[j];
            if (q->value || !q->st || q->st->trace != t || ps->v[j]) continue;
            /* each differentiated value leaving as data raises, not only
             * the first proxy's (np.linalg.lstsq(np.ones(..), x): x) */
            if (j > k && t->ad && nd__live(q) && nd__ad_escape(t, q, NULL) < 0) goto done;
            /* a view of memory that has its value now (`return A.T` of an
             * argument) is that view, nothing to compute -- when the call
             * returns with no write pending anywhere (a flush landing writes
             * would change what such a view shows; a scalar is a snapshot) */
            if (t->returning && t->ndirty == 0 && t->backend != ND_BACKEND_CUSTOM &&
                !nd_proxy_is_scalar((PyObject *)q)) {
                PyObject *b = nd_proxy_base_array((PyObject *)q);
                if (b) { ps->v[j] = b; continue; }
                if (PyErr_Occurred()) goto done;
            }
            nd_id id = nd__proxy_read_own(q);
            if (id == ND_NONE) goto done;
            ids[n] = id;
            idx[n++] = j;
        }
        int nlive = n;
        if (t == rt && t->returning && t->ndead) {
            memcpy(ids + n, t->dead, sizeof(nd_id) * (size_t)t->ndead);
            n += t->ndead;
            t->ndead = 0;
        }
        if (n && nd__flush(t, ids, n, tmp) < 0) goto done;
        for (int i = nlive; i < n; i++) Py_CLEAR(tmp[i]);
        n = nlive;
        for (int i = 0; i < n; i++) {
            /* prefer a view of a concrete storage (keeps identity/aliasing) */
            NdProxy *q = ps->p[idx[i]];
            PyObject *b = nd_proxy_base_array((PyObject *)q);
            if (!b && PyErr_Occurred()) goto done;
            ps->v[idx[i]] = b ? b : Py_NewRef(tmp[i]);
            Py_CLEAR(tmp[i]);
        }
    }
    for (Py_ssize_t k = 0; k < ps->n; k++) {
        NdProxy *p = ps->p[k];
        if (!ps->v[k] && p->value) ps->v[k] = Py_NewRef(p->value);
        if (p->subtype && ps->v[k] && !(ps->v[k] = nd__sub_wrap(p, ps->v[k]))) goto done;
        /* `z.flags.writeable = False` on a value the function made and returns */
        if (p->st && (p->st->trace->ended || p->st->trace->returning) && p->readonly &&
            !p->st->caller && ps->v[k] && PyArray_Check(ps->v[k]) &&
            (!p->identity || !PyArray_BASE((PyArrayObject *)ps->v[k])))
            PyArray_CLEARFLAGS((PyArrayObject *)ps->v[k], NPY_ARRAY_WRITEABLE);
        if (p->st && p->st->trace->ended && ps->v[k]) detach(p, ps->v[k]);
    }
    rc = 0;
done:
    if (tmp) for (Py_ssize_t k = 0; k < ps->n; k++) Py_XDECREF(tmp[k]);
    PyMem_Free(tmp);
    PyMem_Free(ids);
    PyMem_Free(idx);
    return rc;
}

typedef struct {
    proxy_set *ps;
    int as_scalar;
} rebuild_ctx;

/* A proxy of ps becomes its value (a NumPy scalar where the proxy stands
 * for one and as_scalar), down to 64 levels of containers. */
static PyObject *rebuild_leaf(PyObject *o, int depth, void *ctx)
{
    rebuild_ctx *c = ctx;
    if (depth > 64) return Py_NewRef(o);
    if (!nd_proxy_check(o)) return ND_NOT_LEAF;
    proxy_set *ps = c->ps;
    for (Py_ssize_t k = 0; k < ps->n; k++) {
        if (ps->p[k] != (NdProxy *)o) continue;
        PyObject *v = Py_NewRef(ps->v[k]);
        if (c->as_scalar && ps->p[k]->is_scalar && PyArray_Check(v) &&
            PyArray_NDIM((PyArrayObject *)v) == 0)
            return PyArray_Return((PyArrayObject *)v);
        return v;
    }
    return Py_NewRef(o);
}

static PyObject *rebuild(PyObject *o, proxy_set *ps, int as_scalar)
{
    rebuild_ctx c = {ps, as_scalar};
    return nd_map_leaves(o, rebuild_leaf, &c, 64, ND_WALK_DICT_SUBCLASSES);
}

Py_ssize_t *nd_trace_masked_live;
PyObject *(*nd_trace_masked_resolve)(PyObject *o);

static PyObject *masked_leaf(PyObject *o, int depth, void *ctx)
{
    if (depth > 64) return Py_NewRef(o);
    PyObject *r = nd_trace_masked_resolve(o);
    if (r || PyErr_Occurred()) return r;
    return ND_NOT_LEAF;
}

static PyObject *materialize_tree(PyObject *obj, int as_scalar);

PyObject *nd__materialize_tree(PyObject *obj, int as_scalar)
{
    if (nd_trace_masked_live && *nd_trace_masked_live && nd_trace_masked_resolve) {
        PyObject *o = nd_map_leaves(obj, masked_leaf, NULL, 64, ND_WALK_DICT_SUBCLASSES);
        if (!o) return NULL;
        PyObject *r = materialize_tree(o, as_scalar);
        Py_DECREF(o);
        return r;
    }
    return materialize_tree(obj, as_scalar);
}

static PyObject *materialize_tree(PyObject *obj, int as_scalar)
{
    proxy_set ps = {0};
    PyObject *r = NULL;
    if (collect(obj, &ps, 0) < 0) goto done;
    if (!ps.n) { r = Py_NewRef(obj); goto done; }
    if (compute_set(&ps) < 0) goto done;
    r = rebuild(obj, &ps, as_scalar);
done:
    proxy_set_clear(&ps);
    return r;
}

int nd__materialize_call(PyObject *args, PyObject *kwargs, PyObject **out_args,
                         PyObject **out_kwargs)
{
    PyObject *pair = PyTuple_Pack(2, args ? args : Py_None, kwargs ? kwargs : Py_None);
    if (!pair) return -1;
    PyObject *r = nd__materialize_tree(pair, 1);
    Py_DECREF(pair);
    if (!r) return -1;
    PyObject *a = PyTuple_GET_ITEM(r, 0), *k = PyTuple_GET_ITEM(r, 1);
    *out_args = a == Py_None ? PyTuple_New(0) : PySequence_Tuple(a);
    *out_kwargs = k == Py_None ? NULL : Py_NewRef(k);
    Py_DECREF(r);
    if (!*out_args) { Py_CLEAR(*out_kwargs); return -1; }
    return 0;
}

/* The caller storage whose memory a real array r aliases: found through
 * r's base chain, else by memory extent (a view of a view NumPy made of a
 * caller -- x.view(dtype) of a strided argument -- has a base chain that
 * never names the caller object). NULL when none. */
static nd_storage *caller_aliased(nd_trace *t, PyObject *r)
{
    for (PyObject *b = r; b && PyArray_Check(b); b = PyArray_BASE((PyArrayObject *)b)) {
        nd_storage *s = nd__caller_find(t, b);
        if (s) return s;
    }
    for (Py_ssize_t k = 0; k < t->nclist; k++) {
        nd_storage *s = t->clist[k];
        if (s->caller && PyArray_Check(s->caller) && overlaps(r, s->caller)) return s;
    }
    return NULL;
}

static int note_one(nd_trace *t, PyObject *r)
{
    if (!PyArray_Check(r)) return 0;
    nd_storage *s = caller_aliased(t, r);
    if (!s) return 0;
    if (!s->exports && !(s->exports = PyList_New(0))) return -1;
    PyObject *w = PyWeakref_NewRef(r, NULL);
    if (!w) return -1;
    int rc = PyList_Append(s->exports, w);
    Py_DECREF(w);
    /* Python code now holds a real alias of the caller's memory and may
     * write through it at any moment: pending operations that read the
     * storage run now, with the values NumPy would have read, and while the
     * alias lives its operations run at once (nd__proxy_read_own) */
    if (rc == 0 && PyArray_ISWRITEABLE((PyArrayObject *)r)) rc = nd__flush_all(t);
    return rc;
}

/* Python code is handed a real alias of a value the trace computed (a
 * storage with no caller array): the storage becomes that array's, as an
 * argument's storage is, so its later writes land in the memory Python
 * holds and its reads see Python's writes. adopt_as: `base` holds the
 * storage's whole value; adopt_escaped: when the flush left it concrete
 * (its version node's array). */
static int adopt_as(nd_trace *t, nd_storage *s, PyObject *base)
{
    PyArrayObject *b = (PyArrayObject *)base;
    if (s->caller || s->trace != t || !PyArray_ISWRITEABLE(b) || PyArray_TYPE(b) != s->dtype ||
        PyArray_NDIM(b) != s->ndim || memcmp(PyArray_DIMS(b), s->shape, sizeof(npy_intp) * s->ndim) != 0 ||
        nd__caller_find(t, base))
        return 0;
    nd_id id = nd__input_node(t, base);
    if (id == ND_NONE) return -1;
    s->caller = Py_NewRef(base);
    s->version = id;
    s->korder = 0;
    return nd__caller_add(t, s);
}

static int adopt_escaped(nd_trace *t, nd_storage *s)
{
    if (s->caller || s->trace != t) return 0;
    PyObject *base = t->g->nodes[s->version].value;
    return base && PyArray_Check(base) ? adopt_as(t, s, base) : 0;
}

/* A break returned real arrays sharing memory with values the trace
 * computed and handed to NumPy (sliding_window_view(y, 3), y.view(dtype)):
 * NumPy's result is a view, so later writes to y must reach it and its
 * writes y. The storage of each proxy whose materialized array `mat` such a
 * result overlaps becomes that array's, as an argument's is (when the proxy
 * is the storage's whole value), so nd__note_escape then finds the alias
 * and runs its operations at once. orig/mat: the call's arguments before and
 * after materializing (same structure: tuples, lists, dicts). */

/* r: an array, or a tuple/list/dict (a loop's assigned names) of them */
static int overlaps_result(PyObject *r, PyObject *m)
{
    if (PyArray_Check(r)) return overlaps(r, m);
    if (PyTuple_Check(r) || PyList_Check(r))
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(r); i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(r, i);
            if (PyArray_Check(it) && overlaps(it, m)) return 1;
        }
    if (PyDict_Check(r)) {
        Py_ssize_t pos = 0;
        PyObject *key, *val;
        while (PyDict_Next(r, &pos, &key, &val))
            if (PyArray_Check(val) && overlaps(val, m)) return 1;
    }
    return 0;
}

static int adopt_overlapped(nd_trace *t, PyObject *r, PyObject *orig, PyObject *mat, int depth)
{
    if (!orig || !mat || depth > 4) return 0;
    if (nd_proxy_check(orig)) {
        NdProxy *p = (NdProxy *)orig;
        if (!PyArray_Check(mat) || !p->st || !nd__live(p) || !p->identity || p->part) return 0;
        return overlaps_result(r, mat) ? adopt_as(t, p->st, mat) : 0;
    }
    if ((PyTuple_Check(orig) || PyList_Check(orig)) && (PyTuple_Check(mat) || PyList_Check(mat))) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(orig);
        if (PySequence_Fast_GET_SIZE(mat) != n) return 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (adopt_overlapped(t, r, PySequence_Fast_GET_ITEM(orig, i),
                                 PySequence_Fast_GET_ITEM(mat, i), depth + 1) < 0)
                return -1;
        return 0;
    }
    if (PyDict_Check(orig) && PyDict_Check(mat)) {
        Py_ssize_t pos = 0;
        PyObject *key, *val;
        while (PyDict_Next(orig, &pos, &key, &val))
            if (adopt_overlapped(t, r, val, PyDict_GetItem(mat, key), depth + 1) < 0) return -1;
    }
    return 0;
}

int nd_trace_adopt_alias(PyObject *proxy, PyObject *arr, PyObject *r)
{
    nd_trace *t = nd_trace_current();
    if (!t || t->ended || !r || !arr) return 0;
    if (adopt_overlapped(t, r, proxy, arr, 0) < 0) return -1;
    return nd__note_escape(r) ? 0 : -1;
}

int nd__note_escape_of(PyObject *proxy, PyObject *v)
{
    nd_trace *t = nd_trace_current();
    if (t && nd_proxy_check(proxy) && v && PyArray_Check(v)) {
        NdProxy *p = (NdProxy *)proxy;
        if (nd__live(p) && adopt_escaped(t, p->st) < 0) return -1;
    }
    return nd__note_escape(v) ? 0 : -1;
}

PyObject *nd__note_escape(PyObject *r)
{
    nd_trace *t;
    if (!r || !(t = nd_trace_current()) || !t->nclist) return r;
    int rc = 0;
    if (PyArray_Check(r)) {
        rc = note_one(t, r);
    } else if (PyTuple_Check(r) || PyList_Check(r)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(r) && rc == 0; i++)
            rc = note_one(t, PySequence_Fast_GET_ITEM(r, i));
    } else if (PyDict_Check(r)) {
        Py_ssize_t pos = 0;
        PyObject *key, *val;
        while (rc == 0 && PyDict_Next(r, &pos, &key, &val)) rc = note_one(t, val);
    }
    return rc < 0 ? NULL : r;
}

/* A new array a break returned (one that shares no memory with what was
 * handed to NumPy nor with a caller storage) is traced from here on, as an
 * argument is: a proxy on a caller storage of it. Otherwise user code would
 * hold the very buffer lazy nodes read, and a plain NumPy write to it
 * (v[0] = 1, v += 1, v.fill(3)) would change what they compute later. */
static PyObject *trace_result(nd_trace *t, PyObject *r, PyObject *const *hs, Py_ssize_t nh,
                              int depth)
{
    char why[8];
    if (PyArray_Check(r) && !PyArray_CheckExact(r) && nd_supported_array(r) &&
        !nd__overlaps_any(r, hs, nh, NULL) && !caller_aliased(t, r) &&
        nd__sub_traceable(Py_TYPE(r), why, sizeof why) > 0) {
        /* a plain subclass instance the break made: traced on as one
         * (trace_subclass.c), like an argument */
        nd_storage *s = nd__caller_storage(t, r);
        PyObject *p = s ? nd__caller_proxy(s, 0) : NULL;
        if (p) {
            nd__proxy_set_caller((NdProxy *)p, (PyArrayObject *)r);
            if (nd__sub_tag_caller((NdProxy *)p, r) < 0) Py_CLEAR(p);
            else nd_trace_not_replayable(t);
        }
        return p;
    }
    if (PyErr_Occurred()) return NULL;
    if (PyArray_CheckExact(r)) {
        if (!nd_supported_array(r) || nd__overlaps_any(r, hs, nh, NULL))
            return Py_NewRef(r);
        if (caller_aliased(t, r)) return Py_NewRef(r);
        nd_storage *s = nd__caller_storage(t, r);
        PyObject *p = s ? nd__caller_proxy(s, 0) : NULL;
        if (p) nd__proxy_set_caller((NdProxy *)p, (PyArrayObject *)r);
        return p;
    }
    int is_tuple = PyTuple_CheckExact(r);
    if (depth > 0 || (!is_tuple && !PyList_CheckExact(r))) return Py_NewRef(r);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(r);
    PyObject *items = PyList_New(n);
    if (!items) return NULL;
    int changed = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(r, i);
        PyObject *w = trace_result(t, it, hs, nh, depth + 1);
        if (!w) { Py_DECREF(items); return NULL; }
        changed |= w != it;
        PyList_SET_ITEM(items, i, w);
    }
    if (!changed) { Py_DECREF(items); return Py_NewRef(r); }
    if (!is_tuple) return items;
    PyObject *tup = PyList_AsTuple(items);
    Py_DECREF(items);
    return tup;
}

PyObject *nd_trace_fallback_call(PyObject *func, PyObject *args, PyObject *kwargs,
                                 const char *reason)
{
    nd_trace *t = nd_trace_current();
    if (nd__tls_rec) nd__tls_rec->escapes++;
    if (t && reason && nd_trace_record_break(t, reason) < 0) return NULL;
    PyObject *a, *k;
    if (nd__materialize_call(args, kwargs, &a, &k) < 0) return NULL;
    nd_outside o;
    /* a bound ndarray method (x.view, x.reshape...) hands NumPy its array too */
    PyObject *self = PyCFunction_Check(func) && !(PyCFunction_GET_FLAGS(func) & METH_STATIC)
                         ? PyCFunction_GET_SELF(func) : NULL;
    if (self && !PyArray_Check(self)) self = NULL;
    PyObject *r = NULL, *handed = PyTuple_Pack(3, a, k ? k : Py_None, self ? self : Py_None);
    if (handed && nd__outside_begin(t, handed, &o) == 0) {
        r = PyObject_Call(func, a, k);
        if (nd__outside_end(t, &o, r != NULL) < 0) Py_CLEAR(r);
    }
    Py_DECREF(a);
    Py_XDECREF(k);
    /* a break lets Python code look at caller arrays: pending writes land */
    if (r && t && nd__flush_writes(t) < 0) Py_CLEAR(r);
    /* (handed holds the materialized arguments) */
    if (r && t && !t->ended && handed &&
        (adopt_overlapped(t, r, args, PyTuple_GET_ITEM(handed, 0), 0) < 0 ||
         (kwargs && adopt_overlapped(t, r, kwargs, PyTuple_GET_ITEM(handed, 1), 0) < 0)))
        Py_CLEAR(r);
    if (r && !nd__note_escape(r)) Py_CLEAR(r);
    if (r && t && !t->ended && handed) {
        PyObject *list = PyList_New(0);
        PyObject *w = list && nd__gather_arrays(handed, list, 0, 0) == 0
                          ? trace_result(t, r, &PyList_GET_ITEM(list, 0), PyList_GET_SIZE(list), 0)
                          : NULL;
        Py_XDECREF(list);
        Py_SETREF(r, w);
    }
    Py_XDECREF(handed);
    return r;
}

/* Issue 13 point 2: statements whose values Python never reads (x = x *
 * a + b, 100,000 times) stay lazy and fuse, but one graph of the whole loop
 * grows with its trip count: scheduling, kernel texts and memory (a 400,000
 * node graph: 14 s and 470 MB on the first call). After ND_CHUNK_NODES new
 * nodes the live values are computed, between two operations, as an element
 * read would: the graph of each chunk is the same as the last one's, so its
 * program comes from the graph cache, and a replay runs the chunks as steps
 * (trace_replay.c). While a call is recorded for replay, a chunk waits for
 * pending caller writes and scalar stores (a step writes nothing back). */

/* compile(options={"chunk_nodes": n}) sets another size (at least 64) */
static Py_ssize_t chunk_nodes(nd_trace *t)
{
    PyObject *v = t->options && PyDict_Check(t->options)
                  ? PyDict_GetItemString(t->options, "chunk_nodes") : NULL;  /* borrowed */
    long n = v && PyLong_Check(v) ? PyLong_AsLong(v) : ND_CHUNK_NODES;
    if (n == -1 && PyErr_Occurred()) { PyErr_Clear(); n = ND_CHUNK_NODES; }
    return n < 64 ? 64 : n;
}

int nd__flush_chunk(nd_trace *t)
{
    if (t->g->n < t->chunk_next) return 0;
    Py_ssize_t size = chunk_nodes(t);
    if ((Py_ssize_t)t->g->n - (Py_ssize_t)t->chunk_base < size) {
        t->chunk_next = (nd_id)(t->chunk_base + size);
        return 0;
    }
    if (t->chunking || t->flushing || t->scr_busy || t->ended || t->returning || t->ad ||
        t->backend == ND_BACKEND_CUSTOM)
        return 0;
    nd_replay_rec *rec = nd__rec_of(t);
    if (rec && rec->final) return 0;
    int wait = rec && !rec->escapes && !rec->unreplayable && (t->scalar_stores || t->pins);
    for (Py_ssize_t k = 0; rec && !rec->escapes && !wait && t->ndirty && k < t->nclist; k++)
        wait = t->clist[k]->dirty;
    if (wait) {
        /* ... but not past ND_CHUNK_WAIT chunks: the call then runs its
         * chunks with their writes and is not recorded (traced next time) */
        if ((Py_ssize_t)t->g->n - (Py_ssize_t)t->chunk_base < ND_CHUNK_WAIT * size) {
            t->chunk_next = (nd_id)(t->g->n + size);  /* looked at again a chunk later */
            return 0;
        }
        rec->escapes++;
    }
    nd_counter_add(ND_CTR_CHUNK_FLUSHES, 1);
    t->chunking = 1;
    int rc = nd__flush_all(t);
    t->chunking = 0;
    return rc;
}

int nd__flush_all(nd_trace *t)
{
    Py_ssize_t n = 0;
    for (NdProxy *p = t->proxies; p; p = p->next) n++;
    nd_id *ids = PyMem_Malloc(sizeof(nd_id) * (size_t)(n ? n : 1));
    PyObject **res = PyMem_Calloc((size_t)(n ? n : 1), sizeof(PyObject *));
    int rc = -1, k = 0;
    if (!ids || !res) { PyErr_NoMemory(); goto done; }
    for (NdProxy *p = t->proxies; p; p = p->next) {
        nd_id id = nd__proxy_read_own(p);
        if (id == ND_NONE) goto done;
        ids[k++] = id;
    }
    rc = nd__flush(t, ids, k, res);
done:
    if (res) for (int i = 0; i < k; i++) Py_XDECREF(res[i]);
    PyMem_Free(ids);
    PyMem_Free(res);
    return rc;
}
