/* trace_policy.c -- allow_in_graph / disallow_in_graph / forbid_in_graph /
 * disable: wrappers that decide what a call does while a capture runs.
 *
 *   allow     a marker (the function is pure: later replay may skip it);
 *             under tracing it simply runs on the proxies.
 *   disallow  under tracing: a recorded graph break; the function runs
 *             eagerly on concrete arrays with the capture suspended.
 *   forbid    under tracing: an error.
 *   disable   like disallow, and compiled functions it calls run eagerly
 *             too (numdyn is off inside it).
 *
 * Compiled functions also see these wrappers where their globals name the
 * original function (trace_remap.c looks them up with nd__policy_for), so
 * `numdyn.disallow_in_graph(f)` works even where the code calls `f` by its
 * own name.
 */
#include "trace_internal.h"
#include <stdio.h>
#include <string.h>

/* DISABLE_SHALLOW: disable(fn, recursive=False): fn runs on concrete
 * arrays, but compiled functions it calls still compile.
 * CONST (torch._dynamo.assume_constant_result): under tracing fn runs once
 * on concrete values with the capture suspended and no graph break; replay
 * (trace_replay.c) takes its result as a constant: never called again,
 * nothing it reads guarded.
 * NONSTRICT (torch._dynamo.nonstrict_trace): traced through like allow,
 * but replay does not scan its body: what it reads besides its arguments
 * (globals, closures) is assumed constant, as torch assumes.
 * SUBST (substitute_in_graph): fn is the original, alt its polyfill: calls
 * of fn under tracing run alt (also NumPy functions reaching a proxy's
 * __array_function__); outside, fn itself. */
enum { POL_ALLOW, POL_DISALLOW, POL_FORBID, POL_DISABLE, POL_DISABLE_SHALLOW, POL_CONST,
       POL_NONSTRICT, POL_SUBST, POL_N };
static const char *pol_names[] = {"allow_in_graph", "disallow_in_graph", "forbid_in_graph",
                                  "disable", "disable_shallow", "assume_constant_result",
                                  "nonstrict_trace", "substitute_in_graph"};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fn;
    PyObject *dict;
    PyObject *alt;   /* SUBST: the polyfill */
    int kind;
} NdPolicy;

static PyObject *policies;  /* fn -> wrapper (a dict; functions hash by identity) */

/* NumPy ufuncs marked disallow_in_graph: their calls and operators (`-` for
 * np.subtract) run eagerly with a recorded graph break (trace.h) */
static uint8_t uf_disallowed[ND_UF_COUNT];
int nd_trace_n_disallowed;

int nd_trace_ufunc_disallowed(int uf)
{
    return uf >= 0 && uf < ND_UF_COUNT && uf_disallowed[uf];
}

PyObject *nd_trace_disallowed_ufunc(int uf, PyObject *a, PyObject *b, PyObject *args,
                                    PyObject *kwargs, int inplace)
{
    char why[160];
    snprintf(why, sizeof why, "numpy.%s is marked numdyn.disallow_in_graph: runs eagerly on "
             "concrete arrays", nd_ufunc_name(uf));
    PyObject *f = nd_ufunc_object(uf);
    if (args) return nd_trace_fallback_call(f, args, kwargs, why);
    if (!inplace) {
        PyObject *t = b ? PyTuple_Pack(2, a, b) : PyTuple_Pack(1, a);
        PyObject *r = t ? nd_trace_fallback_call(f, t, NULL, why) : NULL;
        Py_XDECREF(t);
        return r;
    }
    /* a op= b: NumPy computes into a concrete copy of a (its casting rules
     * and errors), which then becomes a's value (views of a see it) */
    PyObject *cur = nd_trace_break_value(a, why);
    PyObject *c = cur ? PyArray_NewCopy((PyArrayObject *)cur, NPY_KEEPORDER) : NULL;
    Py_XDECREF(cur);
    if (!c) return NULL;
    PyObject *t = PyTuple_Pack(2, c, b), *kw = Py_BuildValue("{sO}", "out", c);
    PyObject *r = t && kw ? nd_trace_fallback_call(f, t, kw, why) : NULL;
    Py_XDECREF(t);
    Py_XDECREF(kw);
    Py_XDECREF(r);
    int rc = r ? nd_np.setitem(a, Py_Ellipsis, c) : -1;
    Py_DECREF(c);
    return rc < 0 ? NULL : Py_NewRef(a);
}

static PyObject *fn_name(PyObject *fn)
{
    PyObject *n = PyObject_GetAttrString(fn, "__qualname__");
    if (!n) {
        PyErr_Clear();
        n = PyObject_Repr(fn);
    }
    return n;
}

static PyObject *run_eagerly(NdPolicy *p, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames, int disable)
{
    nd_trace *t = nd_trace_current();
    if (t) {
        PyObject *name = fn_name(p->fn);
        if (!name) return NULL;
        PyObject *why = PyUnicode_FromFormat(
            "call of %U (numdyn.%s): runs eagerly on concrete arrays", name, pol_names[p->kind]);
        Py_DECREF(name);
        if (!why) return NULL;
        int r = nd_trace_record_break(t, PyUnicode_AsUTF8(why));
        Py_DECREF(why);
        if (r < 0) return NULL;
    }
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *a, *kw, *a2 = NULL, *k2 = NULL, *res = NULL;
    if (nd_vectorcall_unpack(args, nargs, kwnames, 0, &a, &kw) < 0) return NULL;
    if (nd__materialize_call(a, kw, &a2, &k2) < 0) goto done;
    if (t && nd__flush_writes(t) < 0) goto done;  /* fn may look at caller arrays */
    {
        nd_trace *saved = nd__tls_trace;
        nd__tls_trace = NULL;  /* suspended: nothing lazy leaks into fn */
        nd_outside o;
        PyObject *handed = PyTuple_Pack(2, a2, k2 ? k2 : Py_None);
        if (handed && nd__outside_begin(t, handed, &o) == 0) {
            nd__tls_disabled += disable;
            res = PyObject_Call(p->fn, a2, k2);
            nd__tls_disabled -= disable;
            nd__tls_trace = saved;
            if (nd__outside_end(t, &o, res != NULL) < 0) Py_CLEAR(res);
        }
        nd__tls_trace = saved;
        Py_XDECREF(handed);
    }
    /* what fn returns may view arrays it was handed: NumPy's views of them
     * (later writes on either side are seen by the other) */
    if (res && t && (nd_trace_adopt_alias(a, a2, res) < 0 ||
                     (kw && k2 && nd_trace_adopt_alias(kw, k2, res) < 0)))
        Py_CLEAR(res);
done:
    Py_DECREF(a);
    Py_XDECREF(kw);
    Py_XDECREF(a2);
    Py_XDECREF(k2);
    return res;
}

/* assume_constant_result under tracing: fn on concrete values, the capture
 * suspended (nothing lazy leaks into it, nothing it does is traced), no
 * graph break: its result is a constant of the trace */
static PyObject *run_constant(NdPolicy *p, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *a, *kw, *a2 = NULL, *k2 = NULL, *res = NULL;
    if (nd_vectorcall_unpack(args, nargs, kwnames, 0, &a, &kw) < 0) return NULL;
    if (nd__materialize_call(a, kw, &a2, &k2) == 0) {
        nd_trace *saved = nd__tls_trace;
        nd__tls_trace = NULL;
        res = PyObject_Call(p->fn, a2, k2);
        nd__tls_trace = saved;
    }
    Py_DECREF(a);
    Py_XDECREF(kw);
    Py_XDECREF(a2);
    Py_XDECREF(k2);
    return res;
}

static PyObject *pol_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames)
{
    NdPolicy *p = (NdPolicy *)self;
    switch (p->kind) {
    case POL_CONST:
        if (nd_trace_current()) return run_constant(p, args, nargsf, kwnames);
        break;
    case POL_SUBST:
        if (nd_trace_current()) return PyObject_Vectorcall(p->alt, args, nargsf, kwnames);
        break;
    case POL_DISALLOW:
        if (nd_trace_current()) return run_eagerly(p, args, nargsf, kwnames, 0);
        break;
    case POL_DISABLE:
        return run_eagerly(p, args, nargsf, kwnames, 1);
    case POL_DISABLE_SHALLOW:
        if (nd_trace_current()) return run_eagerly(p, args, nargsf, kwnames, 0);
        break;
    case POL_FORBID:
        if (nd_trace_current()) {
            PyObject *name = fn_name(p->fn);
            if (name)
                PyErr_Format(PyExc_RuntimeError,
                             "numdyn: %U is marked numdyn.forbid_in_graph and was called "
                             "inside a compiled function; call it outside, or remove the mark",
                             name);
            Py_XDECREF(name);
            return NULL;
        }
        break;
    default:
        break;
    }
    return PyObject_Vectorcall(p->fn, args, nargsf, kwnames);
}

static PyObject *pol_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (!obj || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int pol_traverse(PyObject *o, visitproc visit, void *arg)
{
    Py_VISIT(((NdPolicy *)o)->fn);
    Py_VISIT(((NdPolicy *)o)->dict);
    Py_VISIT(((NdPolicy *)o)->alt);
    return 0;
}

static int pol_clear(PyObject *o)
{
    Py_CLEAR(((NdPolicy *)o)->fn);
    Py_CLEAR(((NdPolicy *)o)->dict);
    Py_CLEAR(((NdPolicy *)o)->alt);
    return 0;
}

static void pol_dealloc(PyObject *o)
{
    PyObject_GC_UnTrack(o);
    pol_clear(o);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *pol_repr(PyObject *o)
{
    NdPolicy *p = (NdPolicy *)o;
    return PyUnicode_FromFormat("<numdyn.%s %R>", pol_names[p->kind], p->fn);
}

static PyObject *pol_get_kind(PyObject *o, void *c)
{
    return PyUnicode_FromString(pol_names[((NdPolicy *)o)->kind]);
}

static PyGetSetDef pol_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"_numdyn_policy", pol_get_kind, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* pickling by reference (numdyn._reduce_policy says how), as compiled
 * functions: a disabled function goes to spawn pools too */
static PyObject *pol_reduce(PyObject *o, PyObject *unused)
{
    NdPolicy *p = (NdPolicy *)o;
    PyObject *m = PyImport_ImportModule("numdyn");
    PyObject *r = m ? PyObject_CallMethod(m, "_reduce_policy", "OOsO", o, p->fn, pol_names[p->kind],
                                          p->alt ? p->alt : Py_None) : NULL;
    Py_XDECREF(m);
    return r;
}

static PyMethodDef pol_methods[] = {
    {"__reduce__", pol_reduce, METH_NOARGS, "Pickle by reference to the wrapped function."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NdPolicy_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.PolicyWrapper",
    .tp_basicsize = sizeof(NdPolicy),
    .tp_dealloc = pol_dealloc,
    .tp_vectorcall_offset = offsetof(NdPolicy, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = pol_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_traverse = pol_traverse,
    .tp_clear = pol_clear,
    .tp_getset = pol_getset,
    .tp_methods = pol_methods,
    .tp_descr_get = pol_descr_get,
    .tp_dictoffset = offsetof(NdPolicy, dict),
};

PyObject *nd__policy_for(PyObject *fn)
{
    if (!policies || Py_IS_TYPE(fn, &NdPolicy_Type)) return NULL;
    PyObject *r = PyDict_GetItemWithError(policies, fn);
    if (!r) PyErr_Clear();  /* unhashable: no policy */
    return r;
}

/* the polyfill substitute_in_graph registered for fn (borrowed), or NULL */
PyObject *nd__substitute_for(PyObject *fn)
{
    PyObject *w = nd__policy_for(fn);
    return w && ((NdPolicy *)w)->kind == POL_SUBST ? ((NdPolicy *)w)->alt : NULL;
}

static PyObject *mod_policy(PyObject *m, PyObject *args)
{
    PyObject *fn, *alt = Py_None;
    const char *kind;
    if (!PyArg_ParseTuple(args, "Os|O:_policy", &fn, &kind, &alt)) return NULL;
    int k = -1;
    for (int i = 0; i < POL_N; i++)
        if (strcmp(kind, pol_names[i]) == 0) k = i;
    if (k < 0) {
        PyErr_Format(PyExc_ValueError, "numdyn: unknown policy %s", kind);
        return NULL;
    }
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "numdyn.%s expects a callable, got %.80s", kind,
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    if ((k == POL_SUBST) != (alt != Py_None) || (alt != Py_None && !PyCallable_Check(alt))) {
        PyErr_SetString(PyExc_TypeError, "numdyn: a polyfill goes with substitute_in_graph");
        return NULL;
    }
    if (Py_IS_TYPE(fn, &NdPolicy_Type)) fn = ((NdPolicy *)fn)->fn;  /* re-mark */
    NdPolicy *p = PyObject_GC_New(NdPolicy, &NdPolicy_Type);
    if (!p) return NULL;
    p->vectorcall = pol_vectorcall;
    p->fn = Py_NewRef(fn);
    p->dict = NULL;
    p->alt = alt != Py_None ? Py_NewRef(alt) : NULL;
    p->kind = k;
    PyObject_GC_Track((PyObject *)p);
    PyObject *functools = PyImport_ImportModule("functools");
    /* a substitute looks like its polyfill (torch: functools.wraps(polyfill)) */
    PyObject *r = functools
        ? PyObject_CallMethod(functools, "update_wrapper", "OO", (PyObject *)p,
                              k == POL_SUBST ? alt : fn) : NULL;
    Py_XDECREF(functools);
    if (!r) { Py_DECREF(p); return NULL; }
    Py_DECREF(r);
    if (PyDict_SetItem(policies, fn, (PyObject *)p) < 0) {
        PyErr_Clear();  /* an unhashable callable: the wrapper still works */
    }
    int uf = nd_ufunc_lookup(fn);
    if (uf >= 0 && uf_disallowed[uf] != (k == POL_DISALLOW)) {
        uf_disallowed[uf] = k == POL_DISALLOW;
        nd_trace_n_disallowed += k == POL_DISALLOW ? 1 : -1;
    }
    return (PyObject *)p;
}

static PyMethodDef policy_functions[] = {
    {"_policy", mod_policy, METH_VARARGS, "_policy(fn, kind) -> wrapper"},
    {NULL, NULL, 0, NULL},
};

int nd__policy_init(PyObject *m)
{
    if (PyType_Ready(&NdPolicy_Type) < 0) return -1;
    policies = PyDict_New();
    if (!policies || PyModule_AddObjectRef(m, "_policies", policies) < 0) return -1;
    return PyModule_AddFunctions(m, policy_functions);
}
