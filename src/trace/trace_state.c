/* trace_state.c -- per-thread trace state, trace lifetime, graph breaks.
 *
 * The current trace lives in a C11 thread-local: compiled functions may run
 * on many threads at once and each capture is private to its thread. A
 * compiled function called while its thread is tracing joins that trace.
 */
#include "trace_internal.h"
#include "trace/loop.h"
#include "trace_replay.h"
#include "trace_order.h"
#include "trace_control.h"
#include <frameobject.h>  /* PyFrame_GetBack on 3.10 */
#include <string.h>

_Thread_local nd_trace *nd__tls_trace;
_Thread_local int nd__tls_disabled;
_Thread_local PyObject *nd__tls_explain;
PyObject *nd__GraphBreakError;
PyObject *nd__log_hook;

nd_trace *nd_trace_current(void)
{
    nd_trace *t = nd__tls_trace;
    return (t && !t->ended && !t->flushing) ? t : NULL;
}

nd_graph *nd_trace_graph(nd_trace *t) { return t ? t->g : NULL; }

nd_trace *nd__trace_new(int backend, PyObject *backend_fn, PyObject *cache,
                        PyObject *options, int32_t nodes_hint)
{
    nd_trace *t = PyMem_Calloc(1, sizeof(*t));
    if (!t) { PyErr_NoMemory(); return NULL; }
    t->g = nd_graph_new();
    if (!t->g) { PyMem_Free(t); return NULL; }
    if (nodes_hint > 64) {
        /* a compiled function traces about as many nodes as last time:
         * reserve once instead of re-growing (and re-copying) every call */
        if (nodes_hint > (1 << 16)) nodes_hint = 1 << 16;
        nd_graph_reserve(t->g, nodes_hint);
    }
    t->refcnt = 1;
    t->backend = backend;
    t->backend_fn = Py_XNewRef(backend_fn);
    t->backend_cache = Py_XNewRef(cache);
    t->options = (options && options != Py_None) ? Py_NewRef(options) : NULL;
    if (nd__tls_explain) t->explain = Py_NewRef(nd__tls_explain);
    t->entry_frame = PyEval_GetFrame();
    nd__wlog_begin(t);
    return t;
}

void nd__trace_incref(nd_trace *t) { t->refcnt++; }

static void ptrmap_clear(nd_ptrmap *m)
{
    PyMem_Free(m->keys);
    PyMem_Free(m->vals);
    memset(m, 0, sizeof(*m));
}

void nd__trace_end(nd_trace *t)
{
    if (t->ended) return;
    t->ended = 1;
    nd__wlog_forget(t);
    /* the caller table references storages that reference the trace: drop
     * it so the trace dies with its last escaped proxy */
    nd_storage **cl = t->clist;
    Py_ssize_t n = t->nclist;
    t->clist = NULL;
    t->nclist = t->capclist = 0;
    ptrmap_clear(&t->callers);
    nd__trace_incref(t);
    for (Py_ssize_t i = 0; i < n; i++) nd__storage_decref(cl[i]);
    PyMem_Free(cl);
    nd__trace_decref(t);
}

void nd__trace_decref(nd_trace *t)
{
    if (!t || --t->refcnt > 0) return;
    /* attached proxies hold storages that hold the trace, so none are left */
    nd__trace_end(t);
    nd_graph_free(t->g);
    Py_XDECREF(t->backend_fn);
    Py_XDECREF(t->backend_cache);
    Py_XDECREF(t->options);
    Py_XDECREF(t->explain);
    Py_XDECREF(t->fpstate);
    PyMem_Free(t->scr_seen);
    PyMem_Free(t->scr_anc);
    PyMem_Free(t->scr_map);
    PyMem_Free(t->dead);
    PyMem_Free(t->swept);
    nd__pins_free(t->pins);
    PyMem_Free(t);
}

/* ---------------------------------------------------- caller storages */

static Py_ssize_t ptr_slot(const nd_ptrmap *m, PyObject *key)
{
    size_t h = ((size_t)(uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull;
    Py_ssize_t mask = m->cap - 1, i = (Py_ssize_t)(h & (size_t)mask);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & mask;
    return i;
}

nd_storage *nd__caller_find(nd_trace *t, PyObject *arr)
{
    if (!t->callers.cap) return NULL;
    Py_ssize_t i = ptr_slot(&t->callers, arr);
    return t->callers.keys[i] ? t->callers.vals[i] : NULL;
}

static int ptrmap_put(nd_ptrmap *m, PyObject *key, nd_storage *val)
{
    if ((m->n + 1) * 2 > m->cap) {
        nd_ptrmap nm = {0};
        nm.cap = m->cap ? m->cap * 2 : 16;
        nm.keys = PyMem_Calloc((size_t)nm.cap, sizeof(PyObject *));
        nm.vals = PyMem_Calloc((size_t)nm.cap, sizeof(nd_storage *));
        if (!nm.keys || !nm.vals) {
            PyMem_Free(nm.keys);
            PyMem_Free(nm.vals);
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            Py_ssize_t j = ptr_slot(&nm, m->keys[i]);
            nm.keys[j] = m->keys[i];
            nm.vals[j] = m->vals[i];
            nm.n++;
        }
        ptrmap_clear(m);
        *m = nm;
    }
    Py_ssize_t i = ptr_slot(m, key);
    if (!m->keys[i]) m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

/* The trace takes a storage reference; the storage keeps `caller` alive so
 * its address cannot be reused by another array during the capture. */
int nd__caller_add(nd_trace *t, nd_storage *s)
{
    if (t->nclist == t->capclist) {
        Py_ssize_t cap = t->capclist ? t->capclist * 2 : 8;
        nd_storage **nl = PyMem_Realloc(t->clist, sizeof(*nl) * (size_t)cap);
        if (!nl) { PyErr_NoMemory(); return -1; }
        t->clist = nl;
        t->capclist = cap;
    }
    if (ptrmap_put(&t->callers, s->caller, s) < 0) return -1;
    t->clist[t->nclist++] = s;
    s->refcnt++;
    return 0;
}

/* ------------------------------------------------------- graph breaks */

static PyObject *numdyn_dir, *numpy_dir;  /* path prefixes skipped in frame walks */

static int under_dir(PyObject *filename, PyObject *dir)
{
    if (!dir || !PyUnicode_Check(filename)) return 0;
    Py_ssize_t r = PyUnicode_Tailmatch(filename, dir, 0, PY_SSIZE_T_MAX, -1);
    return r == 1;
}

static int init_dirs(void)
{
    if (numdyn_dir) return 0;
    /* numpy's own Python frames (np.linalg.norm calling asarray, ...) are not
     * what the user wants to see: report their call site instead */
    PyObject *os_path = PyImport_ImportModule("os.path");
    if (!os_path) return -1;
    const char *mods[2] = {"numdyn", "numpy"};
    PyObject **dst[2] = {&numdyn_dir, &numpy_dir};
    for (int k = 0; k < 2; k++) {
        PyObject *mod = PyImport_ImportModule(mods[k]);
        PyObject *file = mod ? PyObject_GetAttrString(mod, "__file__") : NULL;
        PyObject *dir = file && file != Py_None
            ? PyObject_CallMethod(os_path, "dirname", "O", file) : NULL;
        Py_XDECREF(mod);
        Py_XDECREF(file);
        if (!dir) { PyErr_Clear(); continue; }
        *dst[k] = PyUnicode_FromFormat("%U/", dir);
        Py_DECREF(dir);
        if (!*dst[k]) { Py_DECREF(os_path); return -1; }
    }
    Py_DECREF(os_path);
    return 0;
}

PyObject *nd__user_location(const char *reason)
{
    if (init_dirs() < 0) return NULL;
    PyFrameObject *f = PyEval_GetFrame();  /* borrowed */
    Py_XINCREF(f);
    PyObject *filename = NULL;
    int lineno = 0;
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        PyObject *fn = code->co_filename;
        if (!under_dir(fn, numdyn_dir) && !under_dir(fn, numpy_dir)) {
            filename = Py_NewRef(fn);
            lineno = PyFrame_GetLineNumber(f);
            Py_DECREF(code);
            break;
        }
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    Py_XDECREF(f);
    PyObject *source = NULL;
    if (filename) {
        PyObject *linecache = PyImport_ImportModule("linecache");
        PyObject *line = linecache
            ? PyObject_CallMethod(linecache, "getline", "Oi", filename, lineno) : NULL;
        Py_XDECREF(linecache);
        if (line) {
            source = PyObject_CallMethod(line, "strip", NULL);
            Py_DECREF(line);
        }
        if (!source) PyErr_Clear();
    } else {
        filename = PyUnicode_FromString("<unknown>");
    }
    if (!source) source = PyUnicode_FromString("");
    PyObject *r = NULL;
    if (filename && source)
        r = Py_BuildValue("(sOiO)", reason, filename, lineno, source);
    Py_XDECREF(filename);
    Py_XDECREF(source);
    return r;
}

void nd__log(const char *kind, PyObject *msg)
{
    if (!nd__log_hook) return;
    ND_EXC_SAVE(exc);
    PyObject *r = PyObject_CallFunction(nd__log_hook, "sO", kind, msg);
    if (!r && PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
        /* a Ctrl-C that landed in the hook must not be lost: it becomes a
         * pending SIGINT again, raised at the traced code's next bytecode or
         * at the end of the compiled call (cf_vectorcall) */
        PyErr_Clear();
        PyErr_SetInterrupt();
    } else if (!r) {
        PyErr_WriteUnraisable(nd__log_hook);
    }
    Py_XDECREF(r);
    ND_EXC_RESTORE(exc);
}

/* An event at the user's line (kind "break" or "read"): under fullgraph
 * GraphBreakError, under explain a (kind, location) record. The location
 * (new ref), or NULL with the exception. */
static PyObject *note_event(nd_trace *t, const char *reason, const char *kind)
{
    PyObject *loc = nd__user_location(reason);
    if (!loc) return NULL;
    if (t->fullgraph) {
        PyErr_Format(nd__GraphBreakError,
                     "graph break in a function compiled with fullgraph=True: %s\n"
                     "  %U:%d: %U\n"
                     "(remove the break, or compile without fullgraph=True to let "
                     "numdyn run this part with NumPy)",
                     reason, PyTuple_GET_ITEM(loc, 1), (int)PyLong_AsLong(PyTuple_GET_ITEM(loc, 2)),
                     PyTuple_GET_ITEM(loc, 3));
        Py_DECREF(loc);
        return NULL;
    }
    if (t->explain) {
        PyObject *rec = Py_BuildValue("(sO)", kind, loc);
        if (!rec || PyList_Append(t->explain, rec) < 0) Py_CLEAR(loc);
        Py_XDECREF(rec);
    }
    return loc;
}

int nd__explain_read(nd_trace *t, const char *what)
{
    if (!t->explain && !t->fullgraph) return 0;
    char reason[400];
    snprintf(reason, sizeof reason, "%s: the array's values were read here, so the graph so far ran "
             "(a value read: the function is more than one graph)",
             what ? what : "an array's values needed outside the graph (an element, a lazy index, "
                           "NumPy code given the array)");
    PyObject *loc = note_event(t, reason, "read");
    if (!loc) return -1;
    Py_DECREF(loc);
    return 0;
}

int nd_trace_record_break(nd_trace *t, const char *reason)
{
    if (!t) t = nd_trace_current();
    if (!t) return 0;  /* not capturing: plain NumPy, nothing to record */
    nd_counter_add(ND_CTR_GRAPH_BREAKS, 1);
    if (!t->fullgraph && !t->explain && !nd__log_hook) return 0;
    PyObject *loc = note_event(t, reason, "break");
    if (!loc) return -1;
    if (nd__log_hook) {
        PyObject *msg = PyUnicode_FromFormat("graph break: %s at %U:%S: %U", reason,
                                             PyTuple_GET_ITEM(loc, 1),
                                             PyTuple_GET_ITEM(loc, 2),
                                             PyTuple_GET_ITEM(loc, 3));
        if (msg) nd__log("graph_breaks", msg);
        Py_XDECREF(msg);
        PyErr_Clear();
    }
    Py_DECREF(loc);
    return 0;
}

int nd_trace_init(PyObject *module)
{
    nd__GraphBreakError = PyErr_NewExceptionWithDoc(
        "numdyn.GraphBreakError",
        "A graph break happened in a function compiled with fullgraph=True.\n"
        "The message names the reason and the source line.",
        PyExc_RuntimeError, NULL);
    if (!nd__GraphBreakError) return -1;
    if (PyModule_AddObjectRef(module, "GraphBreakError", nd__GraphBreakError) < 0)
        return -1;
    if (nd__proxy_type_init(module) < 0 || nd__compile_init(module) < 0 ||
        nd__policy_init(module) < 0 || nd_loop_init(module) < 0 || nd__ctl_init(module) < 0)
        return -1;
    return 0;
}

void nd_trace_not_replayable(nd_trace *t)
{
    nd_replay_rec *rec = nd__rec_of(t);
    if (rec) rec->unreplayable = 1;
}

int nd_trace_checks_deferred(nd_trace *t)
{
    nd_replay_rec *rec = nd__rec_of(t);
    /* fullgraph=True: checking at the line would run the graph so far (a
     * second graph); the check runs with the graph, as torch's does, unless
     * NumPy's order needs the pending caller writes landed first */
    if (!t->fullgraph && (!rec || rec->final || rec->escapes || rec->flushes || rec->mutated))
        return 0;
    for (Py_ssize_t k = 0; t->ndirty && k < t->nclist; k++)
        if (t->clist[k]->dirty) return 0;  /* a caller write is pending: it must land first */
    return 1;
}

nd_numpy_entries nd_np;

void nd_trace_register_numpy(const nd_numpy_entries *entries)
{
    nd_np = *entries;
    nd__sub_install(&nd_np);  /* ndarray subclasses' result types (trace_subclass.c) */
}
