/* shim_module.c -- the function table, the dispatcher, and numdyn._C.shim.
 *
 * Each registered def becomes a ShimFunction object: a vectorcall callable
 * that runs the def's impl when there is lazy work to record (an active
 * trace and a proxy argument, or a creation function under a trace) and
 * otherwise calls NumPy's own function with the same arguments, so outside
 * tracing and on plain arrays results are NumPy's by construction. The
 * shim module holds these objects under NumPy's names; every other name
 * falls through to numpy (np.pi, np.float32, ufuncs, np.random).
 */
#include "shim_internal.h"
#include "core/containers.h"
#include <stddef.h>
#include <string.h>

struct nd_shim_table {
    PyObject *by_func;    /* numpy function object -> ShimFunction */
    PyObject *methods;    /* method name -> ShimFunction */
    PyObject *module;     /* numdyn._C.shim */
};

static nd_shim_table table;
static PyObject *numpy_mod;

PyObject *nd_shim_numpy(void) { return numpy_mod; }
PyObject *nd_shim_module(void) { return table.module; }

/* ------------------------------------------------------------ ShimFunction */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    const nd_shim_def *def;
    PyObject *numpy_func;   /* NULL for methods */
} shimfunc;

static PyTypeObject ShimFunction_Type;

PyObject *nd_shim_numpy_object(const nd_shim_def *def)
{
    Py_ssize_t pos = 0;
    PyObject *key, *val;
    while (table.by_func && PyDict_Next(table.by_func, &pos, &key, &val))
        if (((shimfunc *)val)->def == def) return key;
    return NULL;
}

static int has_proxy(PyObject *o, int depth)
{
    if (nd_proxy_check(o)) return 1;
    if (depth > 0 && (PyTuple_CheckExact(o) || PyList_CheckExact(o))) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject **items = PySequence_Fast_ITEMS(o);
        for (Py_ssize_t i = 0; i < n; i++)
            if (has_proxy(items[i], depth - 1)) return 1;
    }
    return 0;
}

static PyObject *fallback(PyObject *func, const char *reason, PyObject *args, PyObject *kwargs)
{
    if (!func) {
        PyErr_Format(PyExc_SystemError, "numdyn shim: no NumPy function to fall back to (%s)", reason);
        return NULL;
    }
    return nd_trace_fallback_call(func, args, kwargs, reason);
}

/* np.memmap arguments (trace.h, nd_proxy_has_memmap): the functions and
 * methods whose NumPy result for a memmap is a plain array or a scalar
 * (checked against NumPy, tests/test_ctl_memmap.py); the others return
 * memmaps (views, copy, astype, sort, take, argmax(axis)...) and run on
 * the memmap object itself */
static int memmap_plain(const char *name, int method)
{
    static const char *const fns[] = {"sum", "mean", "std", "var", "max", "min", "amax", "amin",
                                      "prod", "any", "all", "where", "concatenate", "stack", "clip",
                                      "dot", "matmul", "einsum", "round", "around", "cumsum",
                                      "nansum", "nanmean", NULL};
    static const char *const meths[] = {"sum", "mean", "std", "var", "max", "min", "prod", "any",
                                        "all", "cumsum", "clip", "dot", "round", NULL};
    for (const char *const *n = method ? meths : fns; *n; n++)
        if (!strcmp(*n, name)) return 1;
    return 0;
}

static int args_have_memmap(PyObject *const *args, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (nd_proxy_has_memmap(args[i])) return 1;
    return 0;
}

static const char *memmap_reason(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "numpy.%s of an np.memmap (its result would be a memmap or is not "
             "checked): NumPy runs it on the memmap", name);
    return buf;
}

/* a shim's implementation, as one traced NumPy operation */
static PyObject *call_impl(const nd_shim_def *def, nd_trace *t, PyObject **argv)
{
    if (nd_trace_errstate_sync(t) < 0) return NULL;
    nd_id first = nd_shim_graph_size(t);
    if (nd_trace_op_depth == 0 && nd_trace_pins_pre(t, def->name, argv) < 0) return NULL;  /* dims marked dynamic */
    nd_trace_op_depth++;
    PyObject *r = def->impl(t, argv);
    nd_trace_op_depth--;
    if (r && nd_trace_op_depth == 0 && nd_trace_pins_op(t, def->name, argv, r) < 0) Py_CLEAR(r);
    return nd_shim_settled(t, first, r);
}

PyObject *nd_shim_run_impl(nd_trace *t, const nd_shim_def *def, PyObject **argv,
                           PyObject *func, PyObject *args, PyObject *kwargs)
{
    PyObject *r = call_impl(def, t, argv);
    if (r || PyErr_Occurred()) {
        (void)nd_shim_take_unsupported();
        return r;
    }
    const char *reason = nd_shim_take_unsupported();
    char buf[320];
    if (!reason) {
        PyErr_Format(PyExc_SystemError, "numdyn shim: %s returned NULL without a reason", def->name);
        return NULL;
    }
    snprintf(buf, sizeof buf, "%s", reason);
    return fallback(func, buf, args, kwargs);
}

static PyObject *run_def(nd_trace *t, PyObject *sf, PyObject *args, PyObject *kwargs);

static PyObject *shimfunc_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames)
{
    shimfunc *f = (shimfunc *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    nd_trace *t = nd_trace_current();
    int lazy = 0;
    if (t) {
        lazy = (f->def->flags & ND_SHIM_CREATE) != 0;
        Py_ssize_t ntot = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
        for (Py_ssize_t i = 0; !lazy && i < ntot; i++) lazy = has_proxy(args[i], 2);
        if (!lazy && (f->def->flags & ND_SHIM_NUMBERS) && nargs >= 1 && nargs <= 2 &&
            (!kwnames || (PyTuple_GET_SIZE(kwnames) == 1 && nargs == 1 &&
                          !PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "dtype"))))
            lazy = nd_shim_few_numbers(args[0]);
    }
    if (!lazy) return PyObject_Vectorcall(f->numpy_func, args, nargsf, kwnames);
    char buf[320];
    PyObject *r = NULL;
    int sub = 0;  /* an ndarray subclass operand: run_def applies its result type */
    for (Py_ssize_t i = 0; !sub && i < nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0); i++)
        sub = nd_sub_in(args[i], NULL);
    if (sub) {
    } else if (args_have_memmap(args, nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0)) &&
        !memmap_plain(f->def->name, 0)) {
        memmap_reason(buf, sizeof buf, f->def->name);
    } else {
        PyObject *argv[ND_SHIM_MAXARGS];
        if (nd_shim_parse_fast(f->def, args, nargs, kwnames, argv) < 0) return NULL;
        r = call_impl(f->def, t, argv);
        if (r || PyErr_Occurred()) {
            (void)nd_shim_take_unsupported();
            return r;
        }
        const char *reason = nd_shim_take_unsupported();
        if (!reason) {
            PyErr_Format(PyExc_SystemError, "numdyn shim: %s returned NULL without a reason", f->def->name);
            return NULL;
        }
        snprintf(buf, sizeof buf, "%s", reason);
    }
    PyObject *tup, *kw;
    if (nd_vectorcall_unpack(args, nargs, kwnames, 0, &tup, &kw) < 0) return NULL;
    r = sub ? run_def(t, self, tup, kw) : fallback(f->numpy_func, buf, tup, kw);
    Py_DECREF(tup);
    Py_XDECREF(kw);
    return r;
}

static void shimfunc_dealloc(PyObject *self)
{
    Py_XDECREF(((shimfunc *)self)->numpy_func);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *shimfunc_repr(PyObject *self)
{
    shimfunc *f = (shimfunc *)self;
    return PyUnicode_FromFormat("<numdyn shim of %s %s>", f->numpy_func ? "numpy" : "ndarray",
                                f->def->name);
}

/* Introspection goes to NumPy's function (name, doc, signature), so code
 * that inspects np.sum inside a compiled function sees NumPy's. */
static PyObject *shimfunc_getattro(PyObject *self, PyObject *name)
{
    shimfunc *f = (shimfunc *)self;
    if (f->numpy_func && PyUnicode_Check(name)) {
        if (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0) {
            Py_INCREF(f->numpy_func);
            return f->numpy_func;
        }
        static const char *fwd[] = {"__name__", "__qualname__", "__doc__", "__module__",
                                    "__signature__", "__text_signature__", "__defaults__",
                                    "__kwdefaults__", NULL};
        int dunder = PyUnicode_GET_LENGTH(name) > 2 && PyUnicode_READ_CHAR(name, 0) == '_' &&
                     PyUnicode_READ_CHAR(name, 1) == '_';
        int forward = !dunder;
        for (int i = 0; !forward && fwd[i]; i++)
            forward = PyUnicode_CompareWithASCIIString(name, fwd[i]) == 0;
        if (forward) return PyObject_GetAttr(f->numpy_func, name);
    }
    return PyObject_GenericGetAttr(self, name);
}

static PyTypeObject ShimFunction_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.ShimFunction",
    .tp_basicsize = sizeof(shimfunc),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(shimfunc, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = shimfunc_dealloc,
    .tp_repr = shimfunc_repr,
    .tp_getattro = shimfunc_getattro,
    .tp_doc = "A NumPy function as numdyn's shim records it inside compiled functions.",
};

static PyObject *shimfunc_new(const nd_shim_def *def, PyObject *numpy_func)
{
    shimfunc *f = PyObject_New(shimfunc, &ShimFunction_Type);
    if (!f) return NULL;
    f->vectorcall = shimfunc_vectorcall;
    f->def = def;
    Py_XINCREF(numpy_func);
    f->numpy_func = numpy_func;
    return (PyObject *)f;
}

/* ------------------------------------------------------------ module */

/* self: (numpy (sub)module, the shim module's dict). A name found in NumPy
 * is kept in the shim module's dict: a module attribute miss costs an
 * AttributeError plus this call (~4000 instructions), which `np.pi` or
 * `np.float32` in a traced loop would otherwise pay on every use. NumPy's
 * attributes are not rebound in practice; `numdyn.reset()` does not undo
 * the cache (it holds the same objects NumPy does). */
static PyObject *fallthrough_getattr(PyObject *self, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(PyTuple_GET_ITEM(self, 0), name);
    if (v && PyDict_SetItem(PyTuple_GET_ITEM(self, 1), name, v) < 0) Py_CLEAR(v);
    return v;
}

static PyMethodDef getattr_def = {"__getattr__", fallthrough_getattr, METH_O,
                                  "Names the shim does not define come from NumPy."};

static PyObject *new_shim_module(const char *name, PyObject *target)
{
    PyObject *m = PyModule_New(name);
    if (!m) return NULL;
    /* the dict is referenced, not the module: no module <-> function cycle */
    PyObject *self = PyTuple_Pack(2, target, PyModule_GetDict(m));
    PyObject *ga = self ? PyCFunction_New(&getattr_def, self) : NULL;
    Py_XDECREF(self);
    if (!ga || PyModule_AddObject(m, "__getattr__", ga) < 0) {
        Py_XDECREF(ga);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

static PyObject *numpy_path(const char *path);
static PyObject *submods;  /* "linalg" -> the shim's numdyn._C.shim.linalg */

/* The shim (sub)module holding the leaf of a dotted name, created on first
 * use as a module whose unknown names fall through to NumPy's submodule.
 * Borrowed (kept alive by `submods`). */
static PyObject *submodule_for(const char *path, const char **leaf)
{
    const char *dot = strrchr(path, '.');
    if (!dot) { *leaf = path; return table.module; }
    *leaf = dot + 1;
    PyObject *prefix = PyUnicode_FromStringAndSize(path, dot - path);
    if (!prefix) return NULL;
    PyObject *m = PyDict_GetItemWithError(submods, prefix);
    if (m || PyErr_Occurred()) { Py_DECREF(prefix); return m; }
    const char *pleaf;
    PyObject *parent = submodule_for(PyUnicode_AsUTF8(prefix), &pleaf);
    PyObject *target = parent ? numpy_path(PyUnicode_AsUTF8(prefix)) : NULL;
    PyObject *name = target ? PyUnicode_FromFormat("numdyn._C.shim.%U", prefix) : NULL;
    m = name ? new_shim_module(PyUnicode_AsUTF8(name), target) : NULL;
    int rc = (m && PyObject_SetAttrString(parent, pleaf, m) == 0 &&
              PyDict_SetItem(submods, prefix, m) == 0) ? 0 : -1;
    Py_XDECREF(m);   /* submods holds it */
    Py_XDECREF(name);
    Py_XDECREF(target);
    Py_DECREF(prefix);
    return rc == 0 ? m : NULL;
}

static PyObject *numpy_path(const char *path)
{
    PyObject *o = numpy_mod;
    Py_INCREF(o);
    const char *p = path;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        PyObject *part = PyUnicode_FromStringAndSize(p, (Py_ssize_t)n);
        if (!part) { Py_DECREF(o); return NULL; }
        PyObject *next = PyObject_GetAttr(o, part);
        Py_DECREF(part);
        Py_DECREF(o);
        if (!next) return NULL;
        o = next;
        p += n + (dot ? 1 : 0);
    }
    return o;
}

int nd_shim_add_functions(nd_shim_table *tab, const nd_shim_def *defs)
{
    for (const nd_shim_def *d = defs; d->name; d++) {
        if (!nd_shim_spec(d)) return -1;
        PyObject *np = numpy_path(d->name);
        if (!np) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
            PyErr_Clear();
            continue;
        }
        PyObject *f = shimfunc_new(d, np);
        if (!f) { Py_DECREF(np); return -1; }
        const char *leaf;
        PyObject *mod = submodule_for(d->name, &leaf);
        int rc = (mod && PyObject_SetAttrString(mod, leaf, f) == 0 &&
                  PyDict_SetItem(tab->by_func, np, f) == 0) ? 0 : -1;
        Py_DECREF(f);
        Py_DECREF(np);
        if (rc < 0) return -1;
    }
    return 0;
}

int nd_shim_add_methods(nd_shim_table *tab, const nd_shim_def *defs)
{
    for (const nd_shim_def *d = defs; d->name; d++) {
        if (!nd_shim_spec(d)) return -1;
        PyObject *f = shimfunc_new(d, NULL);
        if (!f) return -1;
        int rc = PyDict_SetItemString(tab->methods, d->name, f);
        Py_DECREF(f);
        if (rc < 0) return -1;
    }
    return 0;
}

int nd_shim_add_call_only(nd_shim_table *tab, const nd_shim_def *defs)
{
    for (const nd_shim_def *d = defs; d->name; d++) {
        if (!nd_shim_spec(d)) return -1;
        PyObject *np = PyObject_GetAttrString(numpy_mod, d->name);
        if (!np) return -1;
        PyObject *f = shimfunc_new(d, np);
        Py_DECREF(np);
        if (!f) return -1;
        int rc = -1;
        PyObject *key = PyUnicode_FromFormat(ND_SHIM_CALL_PREFIX "%s__", d->name);
        if (key) rc = PyObject_SetAttr(tab->module, key, f);
        Py_XDECREF(key);
        Py_DECREF(f);
        if (rc < 0) return -1;
    }
    return 0;
}

/* the ShimFunction registered for a NumPy function object (borrowed) */
static PyObject *lookup_def(PyObject *numpy_func)
{
    if (!table.by_func) return NULL;
    PyObject *f = PyDict_GetItemWithError(table.by_func, numpy_func);
    if (!f) PyErr_Clear();
    return f;
}

PyObject *nd_shim_lookup(PyObject *numpy_func)
{
    PyObject *f = lookup_def(numpy_func);
    if (!f) f = nd_shim_ufunc_wrapper(nd_ufunc_lookup(numpy_func));
    return f;
}

PyObject *nd_shim_call_numpy(const nd_shim_def *def, PyObject *args, PyObject *kwargs)
{
    PyObject *np = numpy_path(def->name);
    if (!np) return NULL;
    PyObject *r = PyObject_Call(np, args, kwargs);
    Py_DECREF(np);
    return r;
}

/* ------------------------------------------------------------ protocols */

static PyObject *not_supported(PyObject *func, PyObject *args, PyObject *kwargs)
{
    char buf[260];
    if (nd_trace_current()) {
        const char *why = NULL;
        PyObject *r = nd_shim_inline_call(func, args, kwargs, &why);
        if (r || PyErr_Occurred()) return r;
        if (why) {
            snprintf(buf, sizeof buf, "%s", why);
            return nd_trace_fallback_call(func, args, kwargs, buf);
        }
    }
    /* explain names it: a ufunc of another library (scipy.special's) has
     * a __name__ but no __module__ */
    PyObject *mod = PyObject_GetAttrString(func, "__module__");
    if (!mod) PyErr_Clear();
    PyObject *name = PyObject_GetAttrString(func, "__name__");
    if (!name) PyErr_Clear();
    snprintf(buf, sizeof buf, "%s%s%s is not supported in-graph",
             (mod && PyUnicode_Check(mod)) ? PyUnicode_AsUTF8(mod)
                                           : PyObject_TypeCheck(func, &PyUFunc_Type) ? "ufunc" : "numpy",
             (mod && PyUnicode_Check(mod)) ? "." : " ",
             (name && PyUnicode_Check(name)) ? PyUnicode_AsUTF8(name) : "?");
    if (PyErr_Occurred()) PyErr_Clear();
    Py_XDECREF(mod);
    Py_XDECREF(name);
    return nd_trace_fallback_call(func, args, kwargs, buf);
}

typedef struct { nd_trace *t; shimfunc *f; PyObject *args, *kwargs; } def_ctx;

static PyObject *run_def_plain(void *c)
{
    def_ctx *d = c;
    PyObject *argv[ND_SHIM_MAXARGS];
    if (nd_shim_parse_args(d->f->def, d->args, d->kwargs, argv) < 0) return NULL;
    return nd_shim_run_impl(d->t, d->f->def, argv, d->f->numpy_func, d->args, d->kwargs);
}

static PyObject *run_def(nd_trace *t, PyObject *sf, PyObject *args, PyObject *kwargs)
{
    shimfunc *f = (shimfunc *)sf;
    if (nd_sub_in(args, kwargs)) {  /* an ndarray subclass: NumPy's result type (trace.h) */
        def_ctx c = {t, f, args, kwargs};
        return nd_sub_function(f->def->name, f->numpy_func, args, kwargs, run_def_plain, &c);
    }
    int mm = PyTuple_Check(args) && args_have_memmap(&PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args));
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (!mm && kwargs && PyDict_Next(kwargs, &pos, &k, &v)) mm = nd_proxy_has_memmap(v);
    if (mm && !memmap_plain(f->def->name, 0)) {
        char buf[320];
        return fallback(f->numpy_func, memmap_reason(buf, sizeof buf, f->def->name), args, kwargs);
    }
    PyObject *argv[ND_SHIM_MAXARGS];
    if (nd_shim_parse_args(f->def, args, kwargs, argv) < 0) return NULL;
    return nd_shim_run_impl(t, f->def, argv, f->numpy_func, args, kwargs);
}

PyObject *nd_shim_array_function(PyObject *func, PyObject *types, PyObject *args, PyObject *kwargs)
{
    (void)types;
    nd_trace *t = nd_trace_current();
    PyObject *sf = t ? lookup_def(func) : NULL;
    if (!sf) return not_supported(func, args, kwargs);
    return run_def(t, sf, args, kwargs);
}

static PyObject *array_ufunc(nd_trace *t, PyObject *ufunc, PyObject *method, PyObject *args,
                             PyObject *kwargs);

PyObject *nd_shim_array_ufunc(PyObject *ufunc, PyObject *method, PyObject *args, PyObject *kwargs)
{
    nd_trace *t = nd_trace_current();
    if (!t) return array_ufunc(t, ufunc, method, args, kwargs);
    /* the operation runs under the error state it is called in (an
     * np.errstate entered since the last one: the pending work runs first) */
    if (nd_trace_errstate_sync(t) < 0) return NULL;
    nd_id first = nd_shim_graph_size(t);
    return nd_shim_settled(t, first, array_ufunc(t, ufunc, method, args, kwargs));
}

static PyObject *array_ufunc(nd_trace *t, PyObject *ufunc, PyObject *method, PyObject *args,
                             PyObject *kwargs)
{
    int uf = nd_ufunc_lookup(ufunc);
    const char *m = PyUnicode_Check(method) ? PyUnicode_AsUTF8(method) : NULL;
    if (!m) return NULL;
    if (t && strcmp(m, "__call__") == 0) {
        if (uf >= 0) return nd_shim_ufunc_call(t, uf, args, kwargs);
        PyObject *sf = lookup_def(ufunc);
        if (sf) return run_def(t, sf, args, kwargs);
        return not_supported(ufunc, args, kwargs);
    }
    if (t && uf >= 0 && strcmp(m, "reduce") == 0) return nd_shim_ufunc_reduce(t, uf, args, kwargs);
    if (t && uf >= 0 && strcmp(m, "accumulate") == 0) return nd_shim_ufunc_accumulate(t, uf, args, kwargs);
    if (t && uf >= 0 && strcmp(m, "outer") == 0) return nd_shim_ufunc_outer(t, uf, args, kwargs);
    if (t && strcmp(m, "at") == 0) return nd_shim_ufunc_at(t, ufunc, args, kwargs);
    PyObject *bound = PyObject_GetAttr(ufunc, method);
    if (!bound) return NULL;
    char buf[200];
    PyObject *name = PyObject_GetAttrString(ufunc, "__name__");
    if (!name) PyErr_Clear();
    snprintf(buf, sizeof buf, "numpy.%s.%s is not supported in-graph",
             (name && PyUnicode_Check(name)) ? PyUnicode_AsUTF8(name) : "?", m);
    Py_XDECREF(name);
    PyObject *r = nd_trace_fallback_call(bound, args, kwargs, buf);
    Py_DECREF(bound);
    return r;
}

/* Methods the shim does not cover run on the materialized value. Those
 * that mutate in place run on a private copy that then becomes the
 * proxy's new value, so the mutation is seen by every view (functional). */
static int mutating_method(const char *name)
{
    static const char *names[] = {"sort", "fill", "put", "partition", "itemset",
                                  "setfield", "byteswap", NULL};
    for (int i = 0; names[i]; i++) if (strcmp(names[i], name) == 0) return 1;
    return 0;
}

/* ndarray attributes the proxy routes through nd_shim_method (x.flat ...):
 * their fallback reads the attribute instead of calling it */
static int attribute_name(const char *name)
{
    static const char *names[] = {"flat", "real", "imag", "T", "mT", "base", NULL};
    for (int i = 0; names[i]; i++) if (strcmp(names[i], name) == 0) return 1;
    return 0;
}

static PyObject *method_fallback(const char *name, PyObject *self, PyObject *args,
                                 PyObject *kwargs, const char *reason)
{
    char buf[320];
    if (reason) snprintf(buf, sizeof buf, "%s", reason);
    else snprintf(buf, sizeof buf, "ndarray.%s is not supported in-graph", name);
    if (!nd_proxy_check(self)) {
        PyErr_SetString(PyExc_TypeError, "numdyn shim: method call on a non-proxy");
        return NULL;
    }
    nd_trace *t = nd_trace_current();
    /* the value is computed here (a flush); the break is recorded once, by
     * nd_trace_fallback_call / nd_trace_record_break below */
    PyObject *arr = nd_trace_break_value(self, buf);
    if (!arr) return NULL;
    /* a NumPy scalar's method runs on the scalar (s.view(np.int64) of
     * s = x.sum() is an np.int64, a new value): never on the 0-d array
     * holding the proxy's value, which the result would alias or write */
    int scalar = nd_proxy_is_scalar(self) && PyArray_Check(arr) && PyArray_NDIM((PyArrayObject *)arr) == 0;
    if (scalar) {
        PyObject *s = PyArray_Return((PyArrayObject *)arr);   /* steals arr */
        if (!s) return NULL;
        PyObject *r = NULL;
        if (attribute_name(name)) {
            if (!t || nd_trace_record_break(t, buf) == 0) r = PyObject_GetAttrString(s, name);
        } else {
            PyObject *meth = PyObject_GetAttrString(s, name);
            PyObject *empty = args ? NULL : PyTuple_New(0);
            if (meth && (args || empty)) r = nd_trace_fallback_call(meth, args ? args : empty, kwargs, buf);
            Py_XDECREF(empty);
            Py_XDECREF(meth);
        }
        Py_DECREF(s);
        return r;
    }
    if (attribute_name(name)) {
        PyObject *r = NULL;
        if (!t || nd_trace_record_break(t, buf) == 0) r = PyObject_GetAttrString(arr, name);
        if (r && nd_trace_adopt_alias(self, arr, r) < 0) Py_CLEAR(r);
        Py_DECREF(arr);
        return r;
    }
    int mut = t && mutating_method(name);
    if (mut) {
        PyObject *c = PyArray_NewCopy((PyArrayObject *)arr, NPY_ANYORDER);
        Py_DECREF(arr);
        if (!(arr = c)) return NULL;
    }
    PyObject *meth = PyObject_GetAttrString(arr, name);
    if (!meth) { Py_DECREF(arr); return NULL; }
    PyObject *empty = args ? NULL : PyTuple_New(0);
    PyObject *r = (args || empty) ? nd_trace_fallback_call(meth, args ? args : empty, kwargs, buf) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(meth);
    if (r && mut) {
        nd_id v = nd_trace_lift(t, arr);
        if (v == ND_NONE || nd_proxy_write(self, v) < 0) Py_CLEAR(r);
    } else if (r && nd_trace_adopt_alias(self, arr, r) < 0) {
        Py_CLEAR(r);
    }
    Py_DECREF(arr);
    return r;
}

PyObject *nd_shim_method(const char *name, PyObject *self, PyObject *args, PyObject *kwargs)
{
    nd_trace *t = nd_trace_current();
    if (nd_proxy_has_memmap(self) && !memmap_plain(name, 1)) {
        char buf[320];
        snprintf(buf, sizeof buf, "np.memmap.%s (its result would be a memmap or is not checked): "
                 "NumPy runs it on the memmap", name);
        return method_fallback(name, self, args, kwargs, buf);
    }
    if (t && nd_proxy_is_scalar(self) && strcmp(name, "byteswap") != 0 &&
        (mutating_method(name) || strcmp(name, "resize") == 0)) {
        /* a NumPy scalar is immutable: its s.fill(1), s.sort(), s.put(...)
         * run on a new 0-d array of its value, leaving s as it was (its
         * byteswap(True) raises: the shim's own) */
        PyObject *c = nd_shim_method("copy", self, NULL, NULL);
        if (!c) return NULL;
        PyObject *r = NULL;
        if (nd_proxy_is_scalar(c))
            PyErr_SetString(PyExc_SystemError, "numdyn shim: the copy of a scalar is a scalar");
        else
            r = nd_shim_method(name, c, args, kwargs);
        Py_DECREF(c);
        return r;
    }
    if (t && strcmp(name, "resize") == 0) {
        PyObject *empty = args ? NULL : PyTuple_New(0);
        PyObject *r = (args || empty) ? nd_trace_resize(self, args ? args : empty, kwargs) : NULL;
        Py_XDECREF(empty);
        return r;
    }
    PyObject *sf = (t && table.methods) ? PyDict_GetItemString(table.methods, name) : NULL;
    if (!sf) return method_fallback(name, self, args, kwargs, NULL);
    shimfunc *f = (shimfunc *)sf;
    PyObject *full = nd_tuple_prepend(self, args);
    if (!full) return NULL;
    PyObject *argv[ND_SHIM_MAXARGS];
    PyObject *r = NULL;
    if (nd_shim_parse_args(f->def, full, kwargs, argv) == 0) {
        r = call_impl(f->def, t, argv);
        if (!r && !PyErr_Occurred()) {
            const char *reason = nd_shim_take_unsupported();
            char buf[320];
            snprintf(buf, sizeof buf, "%s", reason ? reason : "ndarray method not supported in-graph");
            r = method_fallback(name, self, args, kwargs, buf);
        } else {
            (void)nd_shim_take_unsupported();
        }
    }
    Py_DECREF(full);
    return r;
}

/* ------------------------------------------------------------ init */

/* What the tracer calls (src/trace/trace.h, nd_numpy_entries). */
static const nd_numpy_entries entries = {
    .ufunc1 = nd_shim_ufunc1,
    .ufunc2 = nd_shim_ufunc2,
    .ufunc2_inplace = nd_shim_ufunc2_inplace,
    .array_ufunc = nd_shim_array_ufunc,
    .array_function = nd_shim_array_function,
    .method = nd_shim_method,
    .getitem = nd_shim_getitem,
    .setitem = nd_shim_setitem,
    .module = nd_shim_module,
    .lookup = nd_shim_lookup,
    .builtin_minmax = nd_shim_builtin_minmax,
};

int nd_shim_init(PyObject *module)
{
    if (PyType_Ready(&ShimFunction_Type) < 0) return -1;
    numpy_mod = PyImport_ImportModule("numpy");
    if (!numpy_mod) return -1;
    table.by_func = PyDict_New();
    table.methods = PyDict_New();
    table.module = new_shim_module("numdyn._C.shim", numpy_mod);
    submods = PyDict_New();
    if (!submods || !table.by_func || !table.methods || !table.module) return -1;
    if (nd_shim_register_ufunc(&table) < 0 || nd_shim_register_reduce(&table) < 0 ||
        nd_shim_register_create(&table) < 0 || nd_shim_register_index(&table) < 0 ||
        nd_shim_register_views(&table) < 0 ||
        nd_shim_register_methods(&table) < 0 || nd_shim_register_elementwise(&table) < 0 ||
        nd_shim_register_join(&table) < 0 || nd_shim_register_extern(&table) < 0 ||
        nd_shim_register_advidx(&table) < 0 || nd_shim_register_copyto(&table) < 0 ||
        nd_shim_register_flat(&table) < 0 || nd_shim_register_random(&table) < 0 ||
        nd_shim_register_special(&table) < 0 || nd_shim_masked_init() < 0 ||
        nd_shim_inline_init() < 0 || nd_shim_register_grid(table.module) < 0 ||
        nd_shim_install_ufuncs(table.module) < 0)
        return -1;
    Py_INCREF(table.module);
    if (PyModule_AddObject(module, "shim", table.module) < 0) {
        Py_DECREF(table.module);
        return -1;
    }
    Py_INCREF(&ShimFunction_Type);
    if (PyModule_AddObject(module, "ShimFunction", (PyObject *)&ShimFunction_Type) < 0) {
        Py_DECREF(&ShimFunction_Type);
        return -1;
    }
    nd_trace_register_numpy(&entries);
    return 0;
}
