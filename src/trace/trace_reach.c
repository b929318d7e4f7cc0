/* trace_reach.c -- caller memory the function can also reach untraced.
 *
 * Writes into a caller array (an argument) stay pending until a flush, and
 * reads of it are deferred too. That is invisible to the function's code
 * as long as it sees that memory only through the proxies. But the code
 * may also hold a real ndarray on the same memory that the tracer never
 * sees: a module global (`step(G[1:-1])` reading `G.sum()`), a closure
 * variable, an attribute of an object (`self.grid`, `o.M`). NumPy methods
 * on such an array run at once on the caller's memory, so they would read
 * stale values, or write under a pending read.
 *
 * At the start of a capture the arrays the code can name are looked up --
 * the globals its code objects name (and those of the Python functions
 * among them, one level down), its closure cells, and the attributes it
 * names of the objects, modules and user classes among those and of its
 * arguments -- and every
 * caller storage whose memory overlaps one of them is marked `shared`:
 * an operation on it runs at once (trace_storage.c, nd_trace_settle), as
 * under NumPy. The common case, where no such array overlaps an argument,
 * costs a dictionary lookup per name.
 */
#include "trace_internal.h"
#include "core/strides.h"
#include <string.h>

#define REACH_MAX_ITEMS 64  /* elements of a list/tuple/dict looked into */

typedef struct {
    nd_trace *t;
    PyObject *names;  /* owned tuple: every name the function's code objects use */
    int marked;
} reach;

/* names of code and of the code objects nested in its constants */
static int code_names(PyObject *code, PyObject *set, int depth)
{
    if (depth > 16 || !PyCode_Check(code)) return 0;
    PyCodeObject *co = (PyCodeObject *)code;
    PyObject *names = co->co_names;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++)
        if (PySet_Add(set, PyTuple_GET_ITEM(names, i)) < 0) return -1;
    PyObject *consts = co->co_consts;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(consts); i++)
        if (code_names(PyTuple_GET_ITEM(consts, i), set, depth + 1) < 0) return -1;
    return 0;
}

static void check_array(reach *r, PyObject *a)
{
    nd_trace *t = r->t;
    for (Py_ssize_t k = 0; k < t->nclist; k++) {
        nd_storage *s = t->clist[k];
        if (s->shared || !s->caller || !PyArray_Check(s->caller)) continue;
        if (nd_mem_overlap((PyArrayObject *)a, (PyArrayObject *)s->caller)) {
            s->shared = 1;
            r->marked = 1;
        }
    }
}

/* an ndarray, or the ndarrays directly inside a list, tuple or dict */
static int check_value(reach *r, PyObject *v)
{
    if (PyArray_Check(v)) {
        check_array(r, v);
        return 1;
    }
    if (PyList_Check(v) || PyTuple_Check(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        for (Py_ssize_t i = 0; i < n && i < REACH_MAX_ITEMS; i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(v, i);
            if (PyArray_Check(e)) check_array(r, e);
        }
        return 1;
    }
    if (PyDict_Check(v)) {
        Py_ssize_t pos = 0, i = 0;
        PyObject *k, *e;
        while (i++ < REACH_MAX_ITEMS && PyDict_Next(v, &pos, &k, &e))
            if (PyArray_Check(e)) check_array(r, e);
        return 1;
    }
    return 0;
}

/* the attributes the code names, of an object with an instance dict */
static int check_attrs(reach *r, PyObject *o)
{
    PyObject *d = NULL;
    if (PyModule_Check(o)) {
        /* `import mymod; mymod.grid`: a module's globals (not NumPy's) */
        const char *mn = PyModule_GetName(o);
        if (!mn) { PyErr_Clear(); return 0; }
        if (strcmp(mn, "numpy") == 0 || strncmp(mn, "numpy.", 6) == 0 || strcmp(mn, "builtins") == 0 ||
            strcmp(mn, "math") == 0 || strcmp(mn, "numdyn") == 0 || strncmp(mn, "numdyn.", 7) == 0)
            return 0;
        d = PyModule_GetDict(o);
    } else if (PyType_Check(o)) {
        /* class attributes of user classes (`Config.grid`) */
        if (!PyType_HasFeature((PyTypeObject *)o, Py_TPFLAGS_HEAPTYPE)) return 0;
        d = ((PyTypeObject *)o)->tp_dict;
    } else {
        if (PyCallable_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyUnicode_Check(o) ||
            o == Py_None)
            return 0;
        PyObject **dp = _PyObject_GetDictPtr(o);
        if (!dp) PyErr_Clear();
        d = dp ? *dp : NULL;
    }
    if (!d || !PyDict_Check(d)) return 0;
    Py_INCREF(d);
    int rc = 0;
    Py_ssize_t nn = r->names ? PyTuple_GET_SIZE(r->names) : 0;
    for (Py_ssize_t i = 0; i < nn; i++) {
        PyObject *name = PyTuple_GET_ITEM(r->names, i);
        PyObject *v = PyDict_GetItemWithError(d, name);
        if (!v) {
            if (PyErr_Occurred()) { rc = -1; break; }
            continue;
        }
        check_value(r, v);
    }
    Py_DECREF(d);
    return rc;
}

static int check_object(reach *r, PyObject *v)
{
    if (check_value(r, v)) return 0;
    return check_attrs(r, v);
}

/* the names a code object and its nested code use, as a tuple (new ref),
 * cached per code object: a warm traced call must not rebuild them */
static PyObject *names_of(PyObject *code)
{
    static PyObject *cache;  /* code -> tuple of names */
    if (!cache && !(cache = PyDict_New())) return NULL;
    PyObject *t = PyDict_GetItemWithError(cache, code);
    if (t) return Py_NewRef(t);
    if (PyErr_Occurred()) return NULL;
    PyObject *set = PySet_New(NULL);
    if (!set) return NULL;
    if (code_names(code, set, 0) < 0) { Py_DECREF(set); return NULL; }
    t = PySequence_Tuple(set);
    Py_DECREF(set);
    if (!t) return NULL;
    if (PyDict_GET_SIZE(cache) > 4096) PyDict_Clear(cache);  /* bounded */
    if (PyDict_SetItem(cache, code, t) < 0) { Py_DECREF(t); return NULL; }
    return t;
}

/* the globals fn's code names; Python functions among them: their own
 * globals too, `depth` levels down */
static int check_globals(reach *r, PyObject *fn, int depth)
{
    PyObject *globals = PyFunction_GET_GLOBALS(fn);
    PyObject *set = names_of(PyFunction_GET_CODE(fn));
    if (!set) return -1;
    int rc = 0;
    if (depth == 0) {
        Py_XSETREF(r->names, Py_NewRef(set));
    }
    for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(set); i++) {
        PyObject *name = PyTuple_GET_ITEM(set, i);
        PyObject *v = PyDict_GetItemWithError(globals, name);
        if (!v) {
            if (PyErr_Occurred()) rc = -1;
            continue;
        }
        if (PyFunction_Check(v)) {
            if (depth < 1 && v != fn) rc = check_globals(r, v, depth + 1);
            continue;
        }
        rc = check_object(r, v);
    }
    PyObject *cl = rc == 0 ? PyFunction_GET_CLOSURE(fn) : NULL;
    for (Py_ssize_t i = 0; cl && rc == 0 && i < PyTuple_GET_SIZE(cl); i++) {
        PyObject *c = PyCell_GET(PyTuple_GET_ITEM(cl, i));
        if (c && !PyFunction_Check(c)) rc = check_object(r, c);
    }
    Py_DECREF(set);
    return rc;
}

int nd__mark_reachable(nd_trace *t, PyObject *fn, PyObject *const *args, Py_ssize_t n)
{
    if (!t->nclist) return 0;
    if (PyMethod_Check(fn)) {
        PyObject *self = PyMethod_GET_SELF(fn);
        fn = PyMethod_GET_FUNCTION(fn);
        if (!PyFunction_Check(fn)) return 0;
        reach r0 = {t, NULL, 0};
        int rc = check_globals(&r0, fn, 0);
        if (rc == 0) rc = check_attrs(&r0, self);
        for (Py_ssize_t k = 0; rc == 0 && k < n; k++)
            if (!PyArray_Check(args[k])) rc = check_attrs(&r0, args[k]);
        Py_XDECREF(r0.names);
        return rc;
    }
    if (!PyFunction_Check(fn)) return 0;
    reach r = {t, NULL, 0};
    int rc = check_globals(&r, fn, 0);
    /* arguments that are objects: the attributes the code names (an
     * argument array itself is a caller storage; lists and dicts of
     * arrays are wrapped item by item) */
    for (Py_ssize_t k = 0; rc == 0 && k < n; k++)
        if (!PyArray_Check(args[k]) && !PyList_Check(args[k]) && !PyTuple_Check(args[k]) &&
            !PyDict_Check(args[k]))
            rc = check_attrs(&r, args[k]);
    Py_XDECREF(r.names);
    return rc;
}
