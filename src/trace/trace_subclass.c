/* trace_subclass.c -- plain ndarray subclasses traced with NumPy's result
 * types (trace.h, nd_proxy_sub).
 *
 * A subclass argument whose class overrides nothing NumPy dispatches on is
 * a proxy tagged with the class and the instance __dict__. NumPy's rule
 * for what an operation on it returns is applied per op family on the
 * traced result, each checked against NumPy (tests/test_subclass_trace.py):
 *   - ufuncs and operators (call, reduce, accumulate): the input chosen as
 *     NumPy's npy_find_array_wrap chooses (highest __array_priority__,
 *     a subclass at priority 0 over a plain ndarray, scalars last) wraps
 *     every output: ndarray.__array_wrap__ makes it that class and calls
 *     __array_finalize__(result, winner);
 *   - the methods and functions that are one such step on their first
 *     operand (reductions, copy, astype, views, indexing, *_like): the
 *     result is of the operand's class, finalized with obj = the operand;
 *   - dot: the higher-priority operand's class (ties: the first);
 *   - concatenate of a list/tuple: the item class of the highest priority
 *     above 0, finalized with obj = None (PyArray_GetSubType), else plain;
 *   - where / np.copy / outer / np.array / np.asarray: plain;
 *   - a few whose path depends on an argument (arg_rule: mean's dtype,
 *     round's decimals, squeeze with nothing to remove) and dot of 1-d
 *     operands (a NumPy scalar);
 *   - an assignment through a view of the class (x[0] = v) finalizes
 *     that view, as NumPy's get_view_from_index does;
 *   - everything else runs with NumPy on the subclass object: a recorded
 *     graph break, never a guess.
 * __array_finalize__ runs at trace time, in op order, on the proxies (its
 * reads of obj are traced; its attribute writes land in the result's
 * dict), so it runs exactly as often as under NumPy and with the same obj.
 * It, the class's methods (static and class ones too, read through the
 * instance) and its property getters run as copies remapped
 * like the compiled function (trace_remap.c), so `type(obj)` / `type(self)`
 * in them name the class NumPy's value has, as `type(x)` does in the
 * function.
 * Materializing a tagged value builds the instance without calling it
 * again (through a carrier class whose __array_finalize__ is ndarray's,
 * then __class__ assignment) and hands it the proxy's dict.
 * A capture with a tagged proxy is not recorded for replay (replay would
 * skip the finalizer and the attribute reads). */
#include "trace_internal.h"
#include "graph/graph.h"
#include <string.h>

static nd_numpy_entries inner;  /* the shim's entries */
static _Thread_local int sub_depth;  /* inside an entry: nested ops are plain */
static PyObject *carriers;      /* subtype -> carrier class */
static PyObject *nd_finalize;   /* ndarray.__array_finalize__ */

int nd_proxy_sub(PyObject *o)
{
    return nd_proxy_check(o) && ((NdProxy *)o)->subtype && nd__live((NdProxy *)o);
}

/* a tagged proxy, or a real subclass instance Python code holds (a global,
 * a break's result): NumPy's result type depends on it */
static int sub_operand(PyObject *o)
{
    return nd_proxy_sub(o) || (PyArray_Check(o) && !PyArray_CheckExact(o));
}

static int any_sub(PyObject *o, int depth)
{
    if (sub_operand(o)) return 1;
    if (depth < 2 && (PyTuple_CheckExact(o) || PyList_CheckExact(o))) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n; i++)
            if (any_sub(PySequence_Fast_ITEMS(o)[i], depth + 1)) return 1;
    }
    return 0;
}

int nd_sub_in(PyObject *args, PyObject *kwargs)
{
    if (args && any_sub(args, 0)) return 1;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (kwargs && PyDict_Next(kwargs, &pos, &k, &v))
        if (any_sub(v, 1)) return 1;
    return 0;
}

/* ------------------------------------------------------ classification */

/* a name in the subclass's own dicts, before ndarray in its MRO (borrowed) */
static PyObject *own_lookup(PyTypeObject *tp, const char *name)
{
    PyObject *mro = tp->tp_mro;
    for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *c = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (c == &PyArray_Type) break;
        PyObject *v = c->tp_dict ? PyDict_GetItemString(c->tp_dict, name) : NULL;
        if (v) return v;
    }
    return NULL;
}

int nd__sub_traceable(PyTypeObject *tp, char *why, size_t n)
{
    static const char *const ok_dunder[] = {
        "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__init__", "__new__",
        "__firstlineno__", "__static_attributes__", "__annotations__", "__orig_bases__",
        "__parameters__", "__array_finalize__", "__array_priority__", "__init_subclass__",
        "__annotate__", "__classcell__", NULL};
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || tp->tp_dictoffset == 0) {
        snprintf(why, n, "an argument is an ndarray subclass (%.80s) defined in C or with "
                 "__slots__: NumPy runs the operations on it", tp->tp_name);
        return 0;
    }
    PyObject *mro = tp->tp_mro;
    for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *c = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (c == &PyArray_Type) break;
        if (!(c->tp_flags & Py_TPFLAGS_HEAPTYPE) || !c->tp_dict) {
            snprintf(why, n, "an argument is an ndarray subclass (%.80s) with a base defined "
                     "in C (%.60s): NumPy runs the operations on it", tp->tp_name, c->tp_name);
            return 0;
        }
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(c->tp_dict, &pos, &k, &v)) {
            const char *s = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
            if (!s) return -1;
            size_t len = strlen(s);
            int dunder = len > 4 && !strncmp(s, "__", 2) && !strcmp(s + len - 2, "__");
            const char *bad = NULL;
            if (dunder) {
                int ok = 0;
                for (const char *const *a = ok_dunder; *a && !ok; a++) ok = !strcmp(*a, s);
                if (!ok) bad = "defines";
                else if (!strcmp(s, "__array_finalize__") && v != Py_None && !PyFunction_Check(v))
                    bad = "defines a non-function";
                else if (!strcmp(s, "__array_priority__") && !PyFloat_Check(v) && !PyLong_Check(v))
                    bad = "defines a non-number";
            } else {
                /* a name NumPy's ndarray has: the proxy's own would shadow it */
                int has = PyObject_HasAttr((PyObject *)&PyArray_Type, k);
                if (has) bad = "overrides ndarray's";
            }
            if (bad) {
                snprintf(why, n, "an argument is an ndarray subclass (%.60s) that %s %.40s, which "
                         "numdyn does not reproduce: NumPy runs the operations on it",
                         tp->tp_name, bad, s);
                return 0;
            }
        }
    }
    return 1;
}

static double priority_of(PyTypeObject *tp)
{
    PyObject *v = own_lookup(tp, "__array_priority__");
    double d = v ? PyFloat_AsDouble(v) : 0.0;
    if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); d = 0.0; }
    return d;
}

int nd__sub_tag_caller(NdProxy *p, PyObject *obj)
{
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    if (!d) return -1;
    Py_XSETREF(p->subtype, (PyTypeObject *)Py_NewRef((PyObject *)Py_TYPE(obj)));
    Py_XSETREF(p->sdict, d);
    return 0;
}

/* ------------------------------------------------------------ results */

/* r, or a fresh view proxy of it when r is one of the operation's inputs
 * (NumPy's result is a new object) */
static NdProxy *result_object(PyObject *r)
{
    NdProxy *q = (NdProxy *)r;
    if (!q->subtype) return (NdProxy *)Py_NewRef(r);
    NdProxy *v = (NdProxy *)nd__proxy_on(q->st, q->ndim, q->shape, q->off, q->strides);
    if (!v) return NULL;
    v->fresh = 1;
    v->part = q->part;
    v->dtype = q->dtype;
    nd__proxy_view_of(v, q);
    return v;
}

/* fn as the compiled function's own code runs (trace_remap.c: `type(obj)`
 * answers the class NumPy's value would have, `np` is the shim): the
 * class's __array_finalize__, methods and property getters run on lazy
 * values. The copy helper functions get too (made once, checked at each
 * call). New ref. */
static PyObject *as_compiled(PyObject *fn)
{
    return nd_trace_remap_callee(fn);
}

/* tp.__array_finalize__(self, obj), as NumPy calls it for a new instance */
static int finalize(PyTypeObject *tp, PyObject *self, PyObject *obj)
{
    PyObject *fin = own_lookup(tp, "__array_finalize__");
    if (!fin || fin == Py_None) return 0;
    PyObject *f = as_compiled(fin);
    PyObject *res = f ? PyObject_CallFunctionObjArgs(f, self, obj, NULL) : NULL;
    Py_XDECREF(f);
    if (!res) return -1;
    Py_DECREF(res);
    return 0;
}

/* tag result proxy r (new ref returned: r or its fresh twin) as class tp
 * and run __array_finalize__(r, obj) as ndarray.__array_wrap__ /
 * PyArray_NewFromDescr would */
static PyObject *tag(PyObject *r, PyTypeObject *tp, PyObject *obj)
{
    NdProxy *q = result_object(r);
    if (!q) return NULL;
    Py_XSETREF(q->subtype, (PyTypeObject *)Py_NewRef((PyObject *)tp));
    Py_XSETREF(q->sdict, PyDict_New());
    q->is_scalar = 0;  /* a 0-d subclass array, not a NumPy scalar */
    if (!q->sdict || finalize(tp, (PyObject *)q, obj) < 0) { Py_DECREF(q); return NULL; }
    return (PyObject *)q;
}

static PyObject *carrier_view(PyTypeObject *tp, PyObject *arr);

/* an exact ndarray the traced op gave (it ran with NumPy inside, a
 * recorded break): the subclass instance NumPy's wrap makes of it */
static PyObject *tag_real(PyObject *arr, PyTypeObject *tp, PyObject *obj)
{
    PyObject *o = carrier_view(tp, Py_NewRef(arr));
    if (o && finalize(tp, o, obj) < 0) Py_CLEAR(o);
    return o;
}

/* tag every array result (a tuple's items too) as class tp, finalized
 * with obj; scalars and other objects stay what they are */
static PyObject *tag_results_as(PyObject *r, PyTypeObject *tp, PyObject *obj)
{
    if (!r) return r;
    if (PyArray_CheckExact(r) || nd_proxy_check(r)) {
        PyObject *t = nd_proxy_check(r) ? tag(r, tp, obj) : tag_real(r, tp, obj);
        Py_DECREF(r);
        return t;
    }
    if (PyTuple_CheckExact(r)) {
        Py_ssize_t n = PyTuple_GET_SIZE(r);
        PyObject *out = PyTuple_New(n);
        if (!out) { Py_DECREF(r); return NULL; }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = PyTuple_GET_ITEM(r, i);
            PyObject *t = nd_proxy_check(it) ? tag(it, tp, obj)
                          : PyArray_CheckExact(it) ? tag_real(it, tp, obj) : Py_NewRef(it);
            if (!t) { Py_DECREF(out); Py_DECREF(r); return NULL; }
            PyTuple_SET_ITEM(out, i, t);
        }
        Py_DECREF(r);
        return out;
    }
    return r;
}

/* the common case: winner's class, finalized with obj = winner */
static PyObject *tag_results(PyObject *r, NdProxy *winner)
{
    return winner ? tag_results_as(r, winner->subtype, (PyObject *)winner) : r;
}

/* a plain result: a tagged proxy returned as is (np.asarray(x)) becomes a
 * plain view of it */
static PyObject *plain_result(PyObject *r)
{
    if (!r || !nd_proxy_check(r) || !((NdProxy *)r)->subtype) return r;
    NdProxy *q = result_object(r);
    Py_DECREF(r);
    return (PyObject *)q;
}

/* NumPy's npy_find_array_wrap over ufunc inputs: the tagged proxy whose
 * class wraps the outputs, NULL for plain outputs; *foreign = 1 when an
 * input NumPy would ask that numdyn does not model (a real subclass
 * instance, an object with __array_wrap__) */
static NdProxy *wrap_winner(PyObject *const *in, Py_ssize_t n, int *foreign)
{
    NdProxy *w = NULL;
    int have = 0, none = 0;
    double prio = 0;
    *foreign = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = in[i];
        if (nd_proxy_check(o) && !((NdProxy *)o)->subtype && !((NdProxy *)o)->is_scalar) {
            o = NULL;  /* a plain array */
        } else if (nd_proxy_check(o) && ((NdProxy *)o)->subtype) {
            double cp = priority_of(((NdProxy *)o)->subtype);
            if (!have || prio < cp || (cp == 0 && none)) {
                w = (NdProxy *)o;
                prio = cp;
                have = 1;
                none = 0;
            }
            continue;
        } else if (PyArray_CheckExact(o)) {
            o = NULL;
        } else if (nd_proxy_check(o) || PyArray_IsAnyScalar(o)) {
            if (!have || prio < -1000000.0) {
                w = NULL;
                prio = -1000000.0;
                have = none = 1;
            }
            continue;
        } else {
            if (PyArray_Check(o) || PyObject_HasAttrString(o, "__array_wrap__")) *foreign = 1;
            continue;
        }
        /* an exact ndarray */
        if (!have || prio < 0) {
            w = NULL;
            prio = 0;
            have = none = 1;
        }
    }
    return w;
}

/* ------------------------------------------------------------- breaks */

static PyObject *break_call(PyObject *callable, PyObject *args, PyObject *kwargs, const char *why)
{
    PyObject *empty = args ? NULL : PyTuple_New(0);
    PyObject *r = (args || empty) ? nd_trace_fallback_call(callable, args ? args : empty, kwargs, why)
                                  : NULL;
    Py_XDECREF(empty);
    return r;
}

static const char *class_name(PyObject *const *in, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (nd_proxy_check(in[i]) && ((NdProxy *)in[i])->subtype)
            return ((NdProxy *)in[i])->subtype->tp_name;
    return "ndarray subclass";
}

/* ---------------------------------------------------- the op families */

enum { R_BREAK, R_PLAIN, R_WRAP1, R_DOT, R_RESHAPE, R_INNER, R_CONCAT, R_SELF };

static int in_list(const char *name, const char *const *list)
{
    for (; *list; list++) if (!strcmp(*list, name)) return 1;
    return 0;
}

/* argument `name` (positional at `at`), NULL when absent or None (borrowed) */
static PyObject *arg_of(PyObject *args, Py_ssize_t at, PyObject *kwargs, const char *name)
{
    PyObject *v = args && PyTuple_GET_SIZE(args) > at ? PyTuple_GET_ITEM(args, at) : NULL;
    if (!v && kwargs) v = PyDict_GetItemString(kwargs, name);
    return v == Py_None ? NULL : v;
}

/* cumsum/cumprod without axis flatten first (a second finalize) */
static int axis_given(PyObject *args, Py_ssize_t at, PyObject *kwargs)
{
    return arg_of(args, at, kwargs, "axis") != NULL;
}

/* the ops whose NumPy path depends on an argument (`at`: where the
 * operand's arguments start); -1 for the others:
 *   - mean with a dtype: NumPy's _mean casts the sum again, a second
 *     finalize -- a break;
 *   - round with decimals != 0: of a float array a plain array NumPy fills
 *     with out= ufuncs (no finalize), of another dtype a break;
 *   - squeeze with no dim to remove: the operand itself. */
static int arg_rule(const char *name, NdProxy *p, PyObject *args, Py_ssize_t at, PyObject *kwargs)
{
    if (!strcmp(name, "mean")) return arg_of(args, at + 1, kwargs, "dtype") ? R_BREAK : R_WRAP1;
    if (!strcmp(name, "round") || !strcmp(name, "around")) {
        PyObject *d = arg_of(args, at, kwargs, "decimals");
        if (!d) return R_WRAP1;
        if (!PyLong_CheckExact(d)) return R_BREAK;
        int overflow;
        long v = PyLong_AsLongAndOverflow(d, &overflow);
        if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return R_BREAK; }
        if (v == 0 && !overflow) return R_WRAP1;
        return p->dtype == NPY_FLOAT || p->dtype == NPY_DOUBLE || p->dtype == NPY_LONGDOUBLE ? R_PLAIN
                                                                                           : R_BREAK;
    }
    if (!strcmp(name, "squeeze") && !arg_of(args, at, kwargs, "axis")) {
        for (int d = 0; d < p->ndim; d++)
            if (p->shape[d] == 1) return R_WRAP1;
        return R_SELF;
    }
    return -1;
}

static int fn_rule(const char *name, PyObject *args, PyObject *kwargs)
{
    static const char *const wrap1[] = {
        "sum", "prod", "max", "min", "amax", "amin", "any", "all", "mean", "clip", "round",
        "around", "transpose", "ravel", "squeeze", "swapaxes", "expand_dims", "sort", "flip",
        "zeros_like", "ones_like", "empty_like", NULL};
    static const char *const plain[] = {"where", "copy", "outer", "array", "asarray", NULL};
    if (kwargs && (PyDict_GetItemString(kwargs, "out") || PyDict_GetItemString(kwargs, "subok")))
        return R_BREAK;
    if (in_list(name, plain)) return R_PLAIN;
    if (!strcmp(name, "dot")) return R_DOT;
    if (!strcmp(name, "reshape")) return R_RESHAPE;
    if (!strcmp(name, "concatenate")) return R_CONCAT;
    PyObject *a = args && PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL;
    int r = a && nd_proxy_sub(a) ? arg_rule(name, (NdProxy *)a, args, 1, kwargs) : -1;
    if (r >= 0) return r;
    if ((!strcmp(name, "cumsum") || !strcmp(name, "cumprod")) && a && nd_proxy_check(a))
        return (axis_given(args, 1, kwargs) || ((NdProxy *)a)->ndim <= 1) ? R_WRAP1 : R_BREAK;
    if (in_list(name, wrap1)) return R_WRAP1;
    return R_BREAK;
}

/* ndarray attributes the proxy reads through the method entry */
static int is_attribute(const char *name)
{
    static const char *const names[] = {"flat", "real", "imag", "T", "mT", "base", NULL};
    return in_list(name, names);
}

static int meth_rule(const char *name, NdProxy *self, PyObject *args, PyObject *kwargs)
{
    static const char *const wrap1[] = {
        "sum", "prod", "max", "min", "any", "all", "mean", "clip", "round", "copy", "transpose",
        "flatten", "swapaxes", "diagonal", "squeeze", "ravel", NULL};
    static const char *const passthrough[] = {"fill", "sort", "put", "item", "tolist", "base", NULL};
    if (kwargs && PyDict_GetItemString(kwargs, "out")) return R_BREAK;
    if (in_list(name, passthrough)) return R_INNER;
    if (!strcmp(name, "dot")) return R_DOT;
    if (!strcmp(name, "reshape")) return R_RESHAPE;
    if (!strcmp(name, "astype")) {
        PyObject *c = kwargs ? PyDict_GetItemString(kwargs, "copy") : NULL;
        return (c && c != Py_True) || (args && PyTuple_GET_SIZE(args) > 4) ? R_BREAK : R_WRAP1;
    }
    if (!strcmp(name, "view"))
        return (args && PyTuple_GET_SIZE(args)) || (kwargs && PyDict_GET_SIZE(kwargs)) ? R_BREAK
                                                                                       : R_WRAP1;
    if (!strcmp(name, "cumsum") || !strcmp(name, "cumprod"))
        return axis_given(args, 0, kwargs) || self->ndim <= 1 ? R_WRAP1 : R_BREAK;
    int r = arg_rule(name, self, args, 0, kwargs);
    if (r >= 0) return r;
    if (in_list(name, wrap1)) return R_WRAP1;
    return R_BREAK;
}

/* reshape/ravel-like: a view of the operand is one finalize; NumPy's copy
 * path (a layout no view expresses) is two, the second on the copy */
static PyObject *reshape_result(PyObject *r, NdProxy *self)
{
    if (!r || !nd_proxy_check(r)) return r;
    if (((NdProxy *)r)->st == self->st) return tag_results(r, self);
    PyObject *mid = tag(r, self->subtype, (PyObject *)self);  /* the C-order copy NumPy makes first */
    if (!mid) { Py_DECREF(r); return NULL; }
    PyObject *out = tag(r, self->subtype, mid);
    Py_DECREF(mid);
    Py_DECREF(r);
    return out;
}

/* dot's result: PyArray_MatrixProduct2 makes it of winner's class, then
 * PyArray_Return turns a 0-d one (1-d . 1-d) into a NumPy scalar */
static PyObject *dot_result(PyObject *r, NdProxy *winner)
{
    if (!winner) return plain_result(r);
    r = tag_results(r, winner);
    if (r && nd_proxy_check(r) && ((NdProxy *)r)->ndim == 0) {
        NdProxy *q = (NdProxy *)r;
        Py_CLEAR(q->subtype);
        Py_CLEAR(q->sdict);
        q->is_scalar = 1;
    }
    return r;
}

/* whether NumPy's dot copies subclass operand o first (cblasfuncs.c: a 2-d
 * operand neither C- nor F-contiguous, a 1-d one with a stride <= 0): the
 * copy is of o's class, one more finalize, which is not modelled */
static int dot_copies(PyObject *o)
{
    if (!nd_proxy_sub(o)) return 0;
    NdProxy *p = (NdProxy *)o;
    npy_intp ms[ND_MAXDIMS];
    if (p->ndim > 2 || nd_proxy_memory_strides(o, ms)) return 1;
    if (p->ndim == 1) return p->shape[0] > 1 && ms[0] <= 0;
    if (p->ndim < 2) return 0;
    const npy_intp *n = p->shape;
    int c = (n[1] <= 1 || ms[1] == 1) && (n[0] <= 1 || ms[0] == n[1]);
    int f = (n[0] <= 1 || ms[0] == 1) && (n[1] <= 1 || ms[1] == n[0]);
    return !c && !f;
}

/* dot: PyArray_MatrixProduct2's subtype (the higher priority, ties: a);
 * *foreign = 1 for what numdyn does not stand in for (a real subclass
 * instance) or a copy NumPy would make of a subclass operand */
static NdProxy *dot_winner(PyObject *a, PyObject *b, int *foreign)
{
    *foreign = dot_copies(a) || (b && dot_copies(b));
    if (*foreign) return NULL;
    double pa = 0, pb = 0;
    NdProxy *A = NULL, *B = NULL;
    if (nd_proxy_check(a) && ((NdProxy *)a)->subtype) pa = priority_of((A = (NdProxy *)a)->subtype);
    else if (PyArray_Check(a) && !PyArray_CheckExact(a)) *foreign = 1;
    if (nd_proxy_check(b) && ((NdProxy *)b)->subtype) pb = priority_of((B = (NdProxy *)b)->subtype);
    else if (b && PyArray_Check(b) && !PyArray_CheckExact(b)) *foreign = 1;
    return pb > pa ? B : A;
}

/* concatenate: PyArray_GetSubType's class (the highest __array_priority__
 * above ndarray's 0 among the items, the first of equals), for a list or
 * tuple of items; NULL for a plain result; *brk = 1 for what NumPy would
 * iterate (an array as the sequence) or an item numdyn does not stand in
 * for (a real subclass instance) */
static NdProxy *concat_winner(PyObject *seq, int *brk)
{
    NdProxy *w = NULL;
    double prio = 0;
    *brk = !seq || !(PyList_CheckExact(seq) || PyTuple_CheckExact(seq));
    if (*brk) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_ITEMS(seq)[i];
        if (nd_proxy_sub(o)) {
            double p = priority_of(((NdProxy *)o)->subtype);
            if (p > prio) { prio = p; w = (NdProxy *)o; }
        } else if (PyArray_Check(o) && !PyArray_CheckExact(o)) {
            *brk = 1;
            return NULL;
        }
    }
    return w;
}

/* ---------------------------------------------------------- the entries */

static PyObject *run_inner_fn(nd_sub_inner f, void *ctx)
{
    sub_depth++;
    PyObject *r = f(ctx);
    sub_depth--;
    return r;
}

PyObject *nd_sub_function(const char *name, PyObject *numpy_func, PyObject *args,
                          PyObject *kwargs, nd_sub_inner innerf, void *ctx)
{
    if (sub_depth) return innerf(ctx);
    Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0;
    PyObject *const *in = n ? &PyTuple_GET_ITEM(args, 0) : NULL;
    int rule = fn_rule(name, args, kwargs), foreign = 0;
    NdProxy *first = n && nd_proxy_sub(in[0]) ? (NdProxy *)in[0] : NULL;
    NdProxy *w = NULL;
    if ((rule == R_WRAP1 || rule == R_RESHAPE) && !first) rule = R_BREAK;
    if (rule == R_DOT) {
        w = n == 2 ? dot_winner(in[0], in[1], &foreign) : NULL;
        if (n != 2 || foreign || (kwargs && PyDict_GET_SIZE(kwargs))) rule = R_BREAK;
    }
    if (rule == R_CONCAT) {
        int brk;
        w = concat_winner(n ? in[0] : NULL, &brk);
        if (brk) rule = R_BREAK;
    }
    if (rule == R_BREAK) {
        char why[300];
        snprintf(why, sizeof why, "numpy.%s of a %s (its result type and __array_finalize__ calls "
                 "are not checked): NumPy runs it on the subclass object", name, class_name(in, n));
        return break_call(numpy_func, args, kwargs, why);
    }
    if (rule == R_SELF) return Py_NewRef(in[0]);
    PyObject *r = run_inner_fn(innerf, ctx);
    switch (rule) {
    case R_PLAIN: return plain_result(r);
    case R_WRAP1: return tag_results(r, first);
    case R_RESHAPE: return reshape_result(r, first);
    case R_DOT: return dot_result(r, w);
    case R_CONCAT:  /* a new array: __array_finalize__(result, None) */
        return w ? tag_results_as(r, w->subtype, Py_None) : plain_result(r);
    }
    return r;
}

typedef struct { const char *name; PyObject *self, *args, *kwargs; } meth_ctx;

static PyObject *meth_inner(void *c)
{
    meth_ctx *m = c;
    return inner.method(m->name, m->self, m->args, m->kwargs);
}

static PyObject *e_method(const char *name, PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (sub_depth || !nd_trace_current() || (!nd_proxy_sub(self) && !nd_sub_in(args, kwargs)))
        return inner.method(name, self, args, kwargs);
    meth_ctx c = {name, self, args, kwargs};
    NdProxy *p = nd_proxy_sub(self) ? (NdProxy *)self : NULL;
    int rule = p ? meth_rule(name, p, args, kwargs) : R_BREAK, foreign = 0;
    NdProxy *w = NULL;
    if (!p && !strcmp(name, "dot")) rule = R_DOT;
    if (rule == R_DOT) {
        Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0;
        w = n == 1 ? dot_winner(self, PyTuple_GET_ITEM(args, 0), &foreign) : NULL;
        if (n != 1 || foreign || (kwargs && PyDict_GET_SIZE(kwargs))) rule = R_BREAK;
    }
    if (rule == R_BREAK) {
        char why[300];
        snprintf(why, sizeof why, "%s.%s (its result type and __array_finalize__ calls are not "
                 "checked): NumPy runs it on the subclass object",
                 p ? p->subtype->tp_name : "ndarray", name);
        PyObject *v = nd_trace_break_value(self, why);
        PyObject *m = v ? PyObject_GetAttrString(v, name) : NULL;
        Py_XDECREF(v);
        if (!m) return NULL;
        if (is_attribute(name)) {  /* x.flat, x.imag: read, not called */
            nd_trace *t = nd_trace_current();
            if (t && nd_trace_record_break(t, why) < 0) Py_CLEAR(m);
            return m;
        }
        PyObject *r = break_call(m, args, kwargs, why);
        Py_DECREF(m);
        return r;
    }
    if (rule == R_SELF) return Py_NewRef(self);
    PyObject *r = run_inner_fn(meth_inner, &c);
    switch (rule) {
    case R_PLAIN: return plain_result(r);
    case R_WRAP1: return tag_results(r, p);
    case R_RESHAPE: return reshape_result(r, p);
    case R_DOT: return dot_result(r, w);
    }
    return r;
}

static PyObject *e_ufunc1(int uf, PyObject *a)
{
    if (sub_depth || !nd_proxy_sub(a)) return inner.ufunc1(uf, a);
    sub_depth++;
    PyObject *r = inner.ufunc1(uf, a);
    sub_depth--;
    return tag_results(r, (NdProxy *)a);
}

static PyObject *e_ufunc2(int uf, PyObject *a, PyObject *b)
{
    if (sub_depth || (!sub_operand(a) && !sub_operand(b))) return inner.ufunc2(uf, a, b);
    PyObject *in[2] = {a, b};
    int foreign;
    NdProxy *w = wrap_winner(in, 2, &foreign);
    if (foreign) {  /* NumPy asks that object's __array_wrap__: its own run */
        PyObject *args = PyTuple_Pack(2, a, b);
        PyObject *r = args ? break_call(nd_ufunc_object(uf), args, NULL,
                                        "an operator on an ndarray subclass instance the trace does not "
                                        "stand in for (a global, another library's array): NumPy runs it") : NULL;
        Py_XDECREF(args);
        return r;
    }
    sub_depth++;
    PyObject *r = inner.ufunc2(uf, a, b);
    sub_depth--;
    return w ? tag_results(r, w) : plain_result(r);
}

static PyObject *e_ufunc2_inplace(int uf, PyObject *a, PyObject *b)
{
    if (sub_depth || (!sub_operand(a) && !sub_operand(b))) return inner.ufunc2_inplace(uf, a, b);
    if (!nd_proxy_sub(a) && PyArray_Check(b) && !PyArray_CheckExact(b) && !nd_proxy_sub(b))
        return inner.ufunc2_inplace(uf, a, b);  /* plain out= keeps its type */
    sub_depth++;  /* the result is `a` itself: no wrap, as NumPy's out= */
    PyObject *r = inner.ufunc2_inplace(uf, a, b);
    sub_depth--;
    return r;
}

static PyObject *e_array_ufunc(PyObject *ufunc, PyObject *method, PyObject *args, PyObject *kwargs)
{
    if (sub_depth || !nd_trace_current() || !nd_sub_in(args, kwargs))
        return inner.array_ufunc(ufunc, method, args, kwargs);
    const char *m = PyUnicode_Check(method) ? PyUnicode_AsUTF8(method) : "";
    if (!m) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *nin_o = PyObject_GetAttrString(ufunc, "nin");
    long nin = nin_o ? PyLong_AsLong(nin_o) : -1;
    Py_XDECREF(nin_o);
    if (nin < 0 && PyErr_Occurred()) return NULL;
    int has_out = (kwargs && PyDict_GetItemString(kwargs, "out")) ||
                  (!strcmp(m, "__call__") && n > nin);
    NdProxy *w = NULL;
    int foreign = 0, ok = 0;
    if (!strcmp(m, "__call__")) {
        w = wrap_winner(&PyTuple_GET_ITEM(args, 0), n < nin ? n : nin, &foreign);
        ok = !foreign;
    } else if (!strcmp(m, "reduce") || !strcmp(m, "accumulate")) {
        PyObject *a = n ? PyTuple_GET_ITEM(args, 0) : NULL;
        ok = a && nd_proxy_sub(a);
        w = ok ? (NdProxy *)a : NULL;
    }
    if (!ok) {
        char why[300];
        PyObject *nm = PyObject_GetAttrString(ufunc, "__name__");
        if (!nm) PyErr_Clear();
        snprintf(why, sizeof why, "numpy.%s.%s of a %s (its result type is not checked): NumPy "
                 "runs it on the subclass object",
                 nm && PyUnicode_Check(nm) ? PyUnicode_AsUTF8(nm) : "?", m,
                 class_name(&PyTuple_GET_ITEM(args, 0), n));
        Py_XDECREF(nm);
        PyObject *bound = PyObject_GetAttr(ufunc, method);
        PyObject *r = bound ? break_call(bound, args, kwargs, why) : NULL;
        Py_XDECREF(bound);
        return r;
    }
    sub_depth++;
    PyObject *r = inner.array_ufunc(ufunc, method, args, kwargs);
    sub_depth--;
    if (has_out) return r;  /* NumPy returns out= as given */
    return w ? tag_results(r, w) : plain_result(r);
}

static int lazy_mask(PyObject *k)
{
    return nd_proxy_check(k) && ((NdProxy *)k)->dtype == NPY_BOOL && ((NdProxy *)k)->ndim > 0;
}

static PyObject *e_getitem(PyObject *self, PyObject *key)
{
    if (!sub_depth) {  /* x[:7] of a dim marked dynamic (trace_pins.c) */
        nd_trace *t = ((NdProxy *)self)->st ? ((NdProxy *)self)->st->trace : NULL;
        if (t && t->pins && nd_trace_pins_slice(t, self, key) < 0) return NULL;
    }
    if (sub_depth || !nd_proxy_sub(self)) return inner.getitem(self, key);
    int mask = lazy_mask(key);
    for (Py_ssize_t i = 0; !mask && PyTuple_CheckExact(key) && i < PyTuple_GET_SIZE(key); i++)
        mask = lazy_mask(PyTuple_GET_ITEM(key, i));
    if (mask) {  /* a[m] stays lazy as a masked value (shim_masked.c), which has no class */
        char why[200];
        snprintf(why, sizeof why, "boolean mask indexing of an ndarray subclass (%.80s): NumPy runs "
                 "it on the subclass object", ((NdProxy *)self)->subtype->tp_name);
        PyObject *v = nd_trace_break_value(self, why);
        PyObject *m = v ? PyObject_GetAttrString(v, "__getitem__") : NULL;
        PyObject *args = m ? PyTuple_Pack(1, key) : NULL;
        PyObject *r = args ? break_call(m, args, NULL, why) : NULL;
        Py_XDECREF(v);
        Py_XDECREF(m);
        Py_XDECREF(args);
        return r;
    }
    sub_depth++;
    PyObject *r = inner.getitem(self, key);
    sub_depth--;
    /* an element is a NumPy scalar; any array result is a view or copy
     * NumPy makes as the subclass, finalized with obj = self */
    if (!r || !nd_proxy_check(r) || ((NdProxy *)r)->is_scalar) return r;
    return tag_results(r, (NdProxy *)self);
}

/* whether NumPy's assignment a[key] = v goes through a view of a's class
 * (mapping.c get_view_from_index, finalized with obj = a): an index of
 * slices, None, an Ellipsis beside an integer, or fewer integers than
 * dims -- not a full integer index, a lone Ellipsis or (), a fancy or
 * boolean index, or one NumPy rejects before making the view */
static int assign_makes_view(PyObject *key, int ndim)
{
    PyObject *const *it = &key;
    Py_ssize_t n = 1;
    if (PyTuple_CheckExact(key)) {
        it = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    }
    int ints = 0, used = 0, other = 0, ellipses = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = it[i];
        if (o == Py_Ellipsis) { ellipses++; continue; }
        if (o == Py_None) { other = 1; continue; }
        if (PySlice_Check(o)) { other = 1; used++; continue; }
        if (PyBool_Check(o)) return 0;
        int integer = PyLong_Check(o) || PyArray_IsScalar(o, Integer) ||
                      (PyArray_Check(o) && PyArray_NDIM((PyArrayObject *)o) == 0 &&
                       PyArray_ISINTEGER((PyArrayObject *)o)) ||
                      (nd_proxy_check(o) && nd_proxy_ndim(o) == 0 &&
                       PyTypeNum_ISINTEGER(nd_proxy_dtype(o)));
        if (!integer) return 0;  /* fancy, boolean, or an error */
        ints++;
        used++;
    }
    if (used > ndim || ellipses > 1) return 0;
    if (!other && ints == 0) return 0;  /* `...` or `()`: the whole array, no view */
    return other || ellipses || ints < ndim;
}

static int e_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (!sub_depth && nd_proxy_sub(self) && assign_makes_view(key, ((NdProxy *)self)->ndim)) {
        sub_depth++;
        PyObject *v = inner.getitem(self, key);
        sub_depth--;
        if (!v) return -1;
        PyObject *t = nd_proxy_check(v) ? tag(v, ((NdProxy *)self)->subtype, self) : NULL;
        int bad = nd_proxy_check(v) && !t;
        Py_DECREF(v);
        Py_XDECREF(t);
        if (bad) return -1;
    }
    sub_depth++;
    int rc = inner.setitem(self, key, value);
    sub_depth--;
    return rc;
}

void nd__sub_install(nd_numpy_entries *np)
{
    inner = *np;
    np->ufunc1 = e_ufunc1;
    np->ufunc2 = e_ufunc2;
    np->ufunc2_inplace = e_ufunc2_inplace;
    np->array_ufunc = e_array_ufunc;
    np->method = e_method;
    np->getitem = e_getitem;
    np->setitem = e_setitem;
}

/* --------------------------------------------------- attributes, values */

PyObject *nd__sub_getattr(NdProxy *p, PyObject *name)
{
    PyErr_Clear();
    if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__dict__") == 0)
        return Py_NewRef(p->sdict);
    PyObject *v = PyDict_GetItemWithError(p->sdict, name);
    if (v) return Py_NewRef(v);
    if (PyErr_Occurred()) return NULL;
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) return NULL;
    PyObject *a = own_lookup(p->subtype, s);
    if (a && Py_IS_TYPE(a, &PyProperty_Type)) {  /* its getter runs as compiled code */
        PyObject *fget = PyObject_GetAttrString(a, "fget");
        if (!fget) return NULL;
        PyObject *f = fget != Py_None ? as_compiled(fget) : NULL;
        Py_DECREF(fget);
        if (f) {
            PyObject *r = PyObject_CallOneArg(f, (PyObject *)p);
            Py_DECREF(f);
            return r;
        }
        if (PyErr_Occurred()) return NULL;
    }
    if (a && (Py_IS_TYPE(a, &PyStaticMethod_Type) || Py_IS_TYPE(a, &PyClassMethod_Type))) {
        PyObject *fn = PyObject_GetAttrString(a, "__func__");
        PyObject *f = fn ? as_compiled(fn) : NULL;
        Py_XDECREF(fn);
        if (!f || Py_IS_TYPE(a, &PyStaticMethod_Type)) return f;
        PyObject *m = PyMethod_New(f, (PyObject *)p->subtype);
        Py_DECREF(f);
        return m;
    }
    if (a) {  /* a method: bound from its compiled-code copy */
        PyObject *f = as_compiled(a);
        if (!f) return NULL;
        descrgetfunc get = Py_TYPE(f)->tp_descr_get;
        PyObject *r = get ? get(f, (PyObject *)p, (PyObject *)p->subtype) : Py_NewRef(f);
        Py_DECREF(f);
        return r;
    }
    PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute '%U'",
                 p->subtype->tp_name, name);
    return NULL;
}

int nd__sub_setattr(NdProxy *p, PyObject *name, PyObject *value)
{
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) return -1;
    PyObject *a = own_lookup(p->subtype, s);
    if (a && Py_TYPE(a)->tp_descr_set) return Py_TYPE(a)->tp_descr_set(a, (PyObject *)p, value);
    if (value) return PyDict_SetItem(p->sdict, name, value);
    if (PyDict_DelItem(p->sdict, name) < 0) {
        if (PyErr_ExceptionMatches(PyExc_KeyError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute '%U'",
                         p->subtype->tp_name, name);
        }
        return -1;
    }
    return 0;
}

/* subtype's carrier: a subclass adding nothing whose __array_finalize__ is
 * ndarray's, which NumPy skips (borrowed) */
static PyObject *carrier_of(PyTypeObject *tp)
{
    if (!carriers && !(carriers = PyDict_New())) return NULL;
    if (!nd_finalize &&
        !(nd_finalize = PyObject_GetAttrString((PyObject *)&PyArray_Type, "__array_finalize__")))
        return NULL;
    PyObject *c = PyDict_GetItemWithError(carriers, (PyObject *)tp);
    if (c || PyErr_Occurred()) return c;
    PyObject *slots = PyTuple_New(0);
    c = slots ? PyObject_CallFunction((PyObject *)Py_TYPE(tp), "s(O){sOsO}", "_numdyn_carrier", tp,
                                      "__slots__", slots, "__array_finalize__", nd_finalize)
              : NULL;
    Py_XDECREF(slots);
    if (!c) return NULL;
    int rc = PyDict_SetItem(carriers, (PyObject *)tp, c);
    Py_DECREF(c);
    return rc < 0 ? NULL : c;
}

/* a view of real array arr (a reference stolen) as an instance of tp, made
 * through tp's carrier so that NumPy calls no __array_finalize__ */
static PyObject *carrier_view(PyTypeObject *tp, PyObject *arr)
{
    PyObject *carrier = carrier_of(tp);
    if (!carrier) { Py_DECREF(arr); return NULL; }
    PyArrayObject *a = (PyArrayObject *)arr;
    PyArray_Descr *descr = PyArray_DESCR(a);
    Py_INCREF(descr);
    PyObject *o = PyArray_NewFromDescr((PyTypeObject *)carrier, descr, PyArray_NDIM(a),
                                       PyArray_DIMS(a), PyArray_STRIDES(a), PyArray_DATA(a),
                                       PyArray_FLAGS(a) & NPY_ARRAY_WRITEABLE, NULL);
    if (!o) { Py_DECREF(arr); return NULL; }
    if (PyArray_SetBaseObject((PyArrayObject *)o, arr) < 0) { Py_DECREF(o); return NULL; }
    PyArray_UpdateFlags((PyArrayObject *)o, NPY_ARRAY_UPDATE_ALL);
    if (PyObject_SetAttrString(o, "__class__", (PyObject *)tp) < 0) { Py_DECREF(o); return NULL; }
    return o;
}

static int same_view(PyArrayObject *a, PyArrayObject *b)
{
    if (PyArray_DATA(a) != PyArray_DATA(b) || PyArray_NDIM(a) != PyArray_NDIM(b) ||
        !PyArray_EquivTypes(PyArray_DESCR(a), PyArray_DESCR(b)))
        return 0;
    for (int d = 0; d < PyArray_NDIM(a); d++)
        if (PyArray_DIM(a, d) != PyArray_DIM(b, d) ||
            (PyArray_DIM(a, d) > 1 && PyArray_STRIDE(a, d) != PyArray_STRIDE(b, d)))
            return 0;
    return 1;
}

PyObject *nd__sub_wrap(NdProxy *p, PyObject *v)
{
    if (!v || !p->subtype || sub_depth || nd_trace_op_depth || !PyArray_CheckExact(v)) return v;
    nd_storage *s = p->st;
    if (s && s->caller && Py_TYPE(s->caller) == p->subtype && !p->fresh &&
        same_view((PyArrayObject *)v, (PyArrayObject *)s->caller)) {
        Py_DECREF(v);
        return Py_NewRef(s->caller);
    }
    /* the dict's lazy values become what Python code would hold */
    PyObject *k, *x;
    Py_ssize_t pos = 0;
    while (PyDict_Next(p->sdict, &pos, &k, &x)) {
        if (!nd_proxy_check(x)) continue;
        PyObject *val = nd__proxy_value((NdProxy *)x, NULL);
        if (val && ((NdProxy *)x)->is_scalar && PyArray_Check(val) && PyArray_NDIM((PyArrayObject *)val) == 0)
            val = PyArray_Return((PyArrayObject *)val);
        if (!val || PyDict_SetItem(p->sdict, k, val) < 0) { Py_XDECREF(val); Py_DECREF(v); return NULL; }
        Py_DECREF(val);
    }
    PyObject *o = carrier_view(p->subtype, v);
    if (o && PyObject_SetAttrString(o, "__dict__", p->sdict) < 0) Py_CLEAR(o);
    return o;
}
