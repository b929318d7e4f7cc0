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
#include "trace_replay.h"
#include "graph/graph_py.h"
#include "runtime/backend.h"
#include "graph/hash.h"
#include <string.h>

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
        fn = PyObject_CallFunctionObjArgs(t->backend_fn, *gobj, inputs, NULL);
        if (!fn) goto done;
        if (!PyCallable_Check(fn)) {
            PyErr_Format(PyExc_TypeError,
                         "numdyn: custom backend %R returned %R, which is not callable "
                         "(a backend is compiler_fn(graph, example_inputs) -> callable)",
                         t->backend_fn, fn);
            Py_CLEAR(fn);
            goto done;
        }
        if (t->backend_cache && PyDict_SetItem(t->backend_cache, key, fn) < 0) goto done;
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

static PyObject *extobj_var(void)
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

int nd_trace_errstate_sync(nd_trace *t)
{
    PyObject *cv = extobj_var(), *cur = NULL;
    if (!cv || !t || t->flushing || nd_trace_op_depth > 0) return 0;
    if (PyContextVar_Get(cv, NULL, &cur) < 0) return -1;
    if (!cur) return 0;
    if (!t->fpstate) { t->fpstate = cur; return 0; }
    if (cur == t->fpstate) { Py_DECREF(cur); return 0; }
    int rc = nd__flush_all(t);  /* under t->fpstate: run_graph */
    Py_SETREF(t->fpstate, cur);
    return rc;
}

/* Run the part of t's graph that computes targets; list of arrays. */
static PyObject *run_graph_now(nd_trace *t, const nd_id *targets, int nt);
static PyObject *run_graph(nd_trace *t, const nd_id *targets, int nt)
{
    PyObject *cv = t->fpstate ? extobj_var() : NULL, *cur = NULL, *tok = NULL;
    if (cv) {
        if (PyContextVar_Get(cv, NULL, &cur) < 0) return NULL;
        if (cur != t->fpstate && !(tok = PyContextVar_Set(cv, t->fpstate))) {
            Py_XDECREF(cur);
            return NULL;
        }
        Py_XDECREF(cur);
    }
    PyObject *res = run_graph_now(t, targets, nt);
    if (tok) {
        ND_EXC_SAVE(exc);
        if (PyContextVar_Reset(cv, tok) < 0) PyErr_Clear();
        ND_EXC_RESTORE(exc);
        Py_DECREF(tok);
    }
    return res;
}

static PyObject *run_graph_now(nd_trace *t, const nd_id *targets, int nt)
{
    nd_id *outs = PyMem_Malloc(sizeof(nd_id) * (size_t)nt);
    if (!outs) return PyErr_NoMemory();
    nd_graph *g = nd_graph_extract(t->g, targets, nt, NULL, outs);
    if (!g) { PyMem_Free(outs); return NULL; }
    for (int i = 0; i < nt; i++) g->nodes[outs[i]].flags |= ND_F_OUTPUT;
    if (nd_debug_checks() && nd_graph_verify(g, outs, nt, "tracing") < 0) {
        nd_graph_free(g);
        PyMem_Free(outs);
        return NULL;
    }
    PyObject *labels = t->explain ? op_labels(g) : NULL;
    if (t->explain && !labels) { nd_graph_free(g); PyMem_Free(outs); return NULL; }
    PyObject *gobj = NULL, *res = NULL;
    t->flushing = 1;
    if (t->backend == ND_BACKEND_CUSTOM) {
        res = run_custom(t, g, outs, nt, &gobj);
        g = NULL;  /* stolen */
    } else {
        res = nd_backends[t->backend].run(g, outs, nt, t->options);
        if (!res && t->backend != ND_BACKEND_EAGER) {
            /* config.suppress_errors: a failing compiling backend falls back
             * to the eager interpreter, loudly; otherwise the error stands */
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
                    res = nd_backends[ND_BACKEND_EAGER].run(g, outs, nt, t->options);
                Py_XDECREF(msg);
            }
        }
    }
    t->flushing = 0;
    if (res && check_results(t->g, targets, nt, res) < 0) Py_CLEAR(res);
    nd_replay_rec *rec = nd__rec_of(t);
    if (res && rec && rec->final && !rec->g && g && !t->explain) {
        /* the return flush of a recording capture: its graph is the replay
         * program (trace_replay.c) */
        nd_id *o = PyMem_Malloc(sizeof(nd_id) * (size_t)nt);
        if (o) {
            memcpy(o, outs, sizeof(nd_id) * (size_t)nt);
            rec->g = g;
            rec->outs = o;
            rec->nout = nt;
            rec->res = Py_NewRef(res);
            g = NULL;
        } else {
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
    return res;
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

static int write_back(nd_trace *t)
{
    Py_ssize_t nd = 0;
    for (Py_ssize_t k = 0; k < t->nclist; k++) nd += t->clist[k]->dirty;
    if (!nd) return 0;
    nd_graph *g = t->g;
    nd_storage **ds = PyMem_Malloc(sizeof(*ds) * (size_t)nd);
    PyObject **dst = PyMem_Malloc(sizeof(PyObject *) * (size_t)nd);
    PyObject **src = PyMem_Calloc((size_t)nd, sizeof(PyObject *));
    char *need = NULL;
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
    /* old contents that later work still reads: private copies */
    if (!(need = nd__needed_nodes(t))) goto done;
    for (Py_ssize_t k = 0; k < nd; k++) need[ds[k]->version] = 0;
    for (nd_id i = 0; i < g->n; i++) {
        if (!need[i]) continue;
        PyObject *a = nd__node_array(g, i);
        if (!a || !PyArray_Check(a) || !nd__overlaps_any(a, dst, nd, NULL)) continue;
        PyObject *c = PyArray_NewCopy((PyArrayObject *)a, NPY_KEEPORDER);
        if (!c) goto done;
        Py_XSETREF(g->nodes[i].value, c);
    }
    for (Py_ssize_t k = 0; k < nd; k++) {
        nd_storage *s = ds[k];
        if (src[k] != s->caller &&
            PyArray_CopyInto((PyArrayObject *)s->caller, (PyArrayObject *)src[k]) < 0)
            goto done;
        PyObject *base = s->caller;
        nd_id id;
        if (PyArray_CheckExact(base)) {
            id = nd__input_node(t, base);
        } else {
            PyObject *v = PyArray_View((PyArrayObject *)base, NULL, &PyArray_Type);
            if (!v) goto done;
            id = nd__input_node(t, v);
            Py_DECREF(v);
        }
        if (id == ND_NONE) goto done;
        s->version = id;
        s->dirty = 0;
    }
    rc = 0;
done:
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
    for (nd_id i = 0; i < g->n; i++)
        if (!need[i] && g->nodes[i].value) Py_CLEAR(g->nodes[i].value);
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

int nd__flush(nd_trace *t, const nd_id *ids, int n, PyObject **results)
{
    if (t->flushing) {
        PyErr_SetString(PyExc_RuntimeError,
                        "numdyn: a lazy array was used while its own graph was being "
                        "computed (by a custom backend?)");
        return -1;
    }
    nd_counter_add(ND_CTR_FLUSHES, 1);
    nd_replay_rec *rec = nd__rec_of(t);
    if (rec) {
        rec->flushes++;
        rec->escapes += !rec->final;
        for (Py_ssize_t k = 0; k < t->nclist; k++) rec->mutated |= t->clist[k]->dirty;
    }
    nd_graph *g = t->g;
    Py_ssize_t cap = n + t->nclist;
    nd_id *targets = PyMem_Malloc(sizeof(nd_id) * (size_t)(cap ? cap : 1));
    char *seen = PyMem_Calloc((size_t)g->n + 1, 1);
    PyObject *res = NULL;
    int nt = 0, rc = -1;
    if (!targets || !seen) { PyErr_NoMemory(); goto done; }
    for (int i = 0; i < n; i++) {
        nd_id id = ids[i];
        if (!seen[id] && !nd__node_array(g, id)) targets[nt++] = id;
        seen[id] = 1;
    }
    for (Py_ssize_t k = 0; k < t->nclist; k++) {
        nd_storage *s = t->clist[k];
        if (!s->dirty) continue;
        nd_id id = s->version;
        if (!seen[id] && !nd__node_array(g, id)) targets[nt++] = id;
        seen[id] = 1;
    }
    if (nt) {
        /* live values the flush computes on the way are kept too: reading
         * y[i] of a lazy y in a loop must not recompute y every time */
        Py_ssize_t np_ = 0;
        for (NdProxy *p = t->proxies; p; p = p->next) np_++;
        nd_id *more = PyMem_Realloc(targets, sizeof(nd_id) * (size_t)(cap + np_ + 1));
        char *anc = PyMem_Calloc((size_t)g->n + 1, 1);
        if (!more || !anc) {
            if (more) targets = more;
            PyMem_Free(anc);
            PyErr_NoMemory();
            goto done;
        }
        targets = more;
        nd_id hi = 0;
        for (int i = 0; i < nt; i++) {
            anc[targets[i]] = 1;
            if (targets[i] > hi) hi = targets[i];
        }
        for (nd_id i = hi; i >= 0; i--) {
            nd_node *nn = &g->nodes[i];
            if (!anc[i] || nn->value || nn->op == ND_OP_INPUT) continue;
            for (int k = 0; k < nn->nin; k++) if (nn->in[k] >= 0) anc[nn->in[k]] = 1;
            for (int k = 0; k < nn->nextra; k++) if (nn->extra[k] >= 0) anc[nn->extra[k]] = 1;
        }
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
        for (nd_id i = 0; i <= hi; i++)
            if (anc[i] && g->nodes[i].op == ND_OP_EXTERN && g->nodes[i].aux >= 0 && !g->nodes[i].value)
                for (nd_id j = 0; j < g->n; j++)
                    if (!seen[j] && nd_extern_sibling(&g->nodes[i], &g->nodes[j])) nsib++;
        if (nsib) {
            nd_id *more2 = PyMem_Realloc(targets, sizeof(nd_id) * (size_t)(nt + nsib + 1));
            if (!more2) { PyMem_Free(anc); PyErr_NoMemory(); goto done; }
            targets = more2;
            for (nd_id i = 0; i <= hi; i++)
                if (anc[i] && g->nodes[i].op == ND_OP_EXTERN && g->nodes[i].aux >= 0 && !g->nodes[i].value)
                    for (nd_id j = 0; j < g->n; j++)
                        if (!seen[j] && nd_extern_sibling(&g->nodes[i], &g->nodes[j])) {
                            targets[nt++] = j;
                            seen[j] = 1;
                        }
        }
        PyMem_Free(anc);
        nd__flush_mark_layouts(t, seen);
        res = run_graph(t, targets, nt);
        if (!res) goto done;
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
    Py_XDECREF(res);
    PyMem_Free(targets);
    PyMem_Free(seen);
    return rc;
}

int nd__flush_writes(nd_trace *t)
{
    for (Py_ssize_t k = 0; k < t->nclist; k++)
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

PyObject *nd__proxy_value(NdProxy *p, const char *reason)
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
    if (reason && live && nd_trace_record_break(t, reason) < 0) return NULL;
    PyObject *r = nd_proxy_base_array((PyObject *)p);
    if (r) {
        /* a break lets Python see caller arrays: pending writes land first */
        if (reason && live && nd__flush_writes(t) < 0) Py_CLEAR(r);
    } else if (!PyErr_Occurred()) {
        nd_id id = nd__proxy_read_own(p);
        if (id == ND_NONE || nd__flush(t, &id, 1, &r) < 0) r = NULL;
        if (r && !s->caller && p->st == s) {
            /* the flush computed p's storage too (a live value): p is a
             * view of it, as under NumPy (strides, flags, base) */
            PyObject *v = nd_proxy_base_array((PyObject *)p);
            if (v) Py_SETREF(r, v);
            else PyErr_Clear();
        }
    }
    if (r && t->ended) detach(p, r);
    return r;
}

PyObject *nd_trace_materialize(PyObject *proxy, const char *reason)
{
    if (!nd_proxy_check(proxy)) {
        PyErr_Format(PyExc_TypeError, "numdyn: cannot materialize a %.80s",
                     Py_TYPE(proxy)->tp_name);
        return NULL;
    }
    return nd__proxy_value((NdProxy *)proxy, reason);
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
    for (Py_ssize_t k = 0; k < ps->n; k++) {
        NdProxy *p = ps->p[k];
        if (ps->v[k] || p->value) continue;
        nd_trace *t = p->st->trace;
        if (t->flushing) {
            ps->v[k] = nd__proxy_value(p, NULL);  /* raises the clear error */
            goto done;
        }
        /* every still-pending proxy of this trace in one flush */
        int n = 0;
        for (Py_ssize_t j = k; j < ps->n; j++) {
            NdProxy *q = ps->p[j];
            if (q->value || !q->st || q->st->trace != t) continue;
            nd_id id = nd__proxy_read_own(q);
            if (id == ND_NONE) goto done;
            ids[n] = id;
            idx[n++] = j;
        }
        if (nd__flush(t, ids, n, tmp) < 0) goto done;
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

PyObject *nd__materialize_tree(PyObject *obj, int as_scalar)
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

static int note_one(nd_trace *t, PyObject *r)
{
    if (!PyArray_Check(r)) return 0;
    nd_storage *s = NULL;
    for (PyObject *b = r; b && PyArray_Check(b); b = PyArray_BASE((PyArrayObject *)b))
        if ((s = nd__caller_find(t, b))) break;
    if (!s) return 0;
    if (!s->exports && !(s->exports = PyList_New(0))) return -1;
    PyObject *w = PyWeakref_NewRef(r, NULL);
    if (!w) return -1;
    int rc = PyList_Append(s->exports, w);
    Py_DECREF(w);
    return rc;
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
    if (PyArray_CheckExact(r)) {
        if (!nd_supported_array(r) || nd__overlaps_any(r, hs, nh, NULL))
            return Py_NewRef(r);
        for (PyObject *b = r; b && PyArray_Check(b); b = PyArray_BASE((PyArrayObject *)b))
            if (nd__caller_find(t, b)) return Py_NewRef(r);
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
    PyObject *r = NULL, *handed = PyTuple_Pack(2, a, k ? k : Py_None);
    if (handed && nd__outside_begin(t, handed, &o) == 0) {
        r = PyObject_Call(func, a, k);
        if (nd__outside_end(t, &o, r != NULL) < 0) Py_CLEAR(r);
    }
    Py_DECREF(a);
    Py_XDECREF(k);
    /* a break lets Python code look at caller arrays: pending writes land */
    if (r && t && nd__flush_writes(t) < 0) Py_CLEAR(r);
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
