/* trace_pins.c -- a dim marked dynamic that the captured graph pins to a
 * constant size raises torch's ConstraintViolationError (issue 15, point 4).
 *
 * Python code comparing the size with a constant is caught by the size's
 * own type (numdyn.DynamicDim, trace_control.c). Here the graph itself:
 * before each flush of a top-level capture whose arguments carry dynamic
 * marks, guards/dim_pins.h labels the new nodes' dims and reports a dim
 * marked dynamic that meets a constant one of the same extent (broadcast,
 * stored into, contracted with). Constant are: dims marked static (and
 * every other dim under compile(dynamic=False)) of the arguments, and the
 * arrays the function reads from outside its arguments that existed before
 * the call -- globals and closure cells its code names, defaults, and the
 * array attributes of its arguments and of its bound `self` (a model's
 * weights). Arrays made during the call (np.zeros(n), np.random...) are
 * never constant: their size may come from the dynamic one. */
#include "trace_internal.h"
#include "trace_control.h"
#include "guards/guards.h"
#include <string.h>

typedef struct {
    nd_pins lab;
    PyObject *args;     /* tuple: the call's arguments */
    PyObject *consts;   /* set: id() of the arrays read from outside the arguments */
    PyObject *lifted;   /* dict: INPUT node id -> id() of the outside array it snapshots */
    PyObject *name;     /* the function's qualname (for the message) */
    PyObject *literal;  /* dict: node id -> mask of its dims sized by literals */
    int spec_all;
} pin_state;

void nd__pins_free(void *p)
{
    pin_state *s = p;
    if (!s) return;
    nd_pins_clear(&s->lab);
    Py_XDECREF(s->args);
    Py_XDECREF(s->consts);
    Py_XDECREF(s->lifted);
    Py_XDECREF(s->name);
    Py_XDECREF(s->literal);
    PyMem_Free(s);
}

static int add_array(PyObject *set, PyObject *v)
{
    if (!v || !PyArray_Check(v)) return 0;
    uint64_t dyn = 0, st = 0;
    nd_marks_get(v, &dyn, &st);
    if (dyn) return 0;  /* an outside array with dims marked dynamic holds no constant */
    PyObject *k = PyLong_FromVoidPtr(v);
    int r = k ? PySet_Add(set, k) : -1;
    Py_XDECREF(k);
    return r;
}

/* the array values of o's instance dict (one level: self.W) */
static int add_attrs(PyObject *set, PyObject *o)
{
    if (!o || PyArray_Check(o) || Py_TYPE(o)->tp_dictoffset == 0) return 0;
    PyObject *d = PyObject_GenericGetDict(o, NULL);
    if (!d) { PyErr_Clear(); return 0; }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    int r = 0;
    while (r == 0 && PyDict_Check(d) && PyDict_Next(d, &pos, &k, &v)) r = add_array(set, v);
    Py_DECREF(d);
    return r;
}

/* globals the code (and the code nested in it) names */
static int add_code(PyObject *set, PyObject *code, PyObject *globals, int depth)
{
    if (!PyCode_Check(code) || depth > 4) return 0;
    PyObject *names = PyObject_GetAttrString(code, "co_names");
    PyObject *consts = names ? PyObject_GetAttrString(code, "co_consts") : NULL;
    int r = consts ? 0 : -1;
    for (Py_ssize_t i = 0; r == 0 && names && PyTuple_Check(names) && i < PyTuple_GET_SIZE(names); i++) {
        PyObject *v = PyDict_GetItemWithError(globals, PyTuple_GET_ITEM(names, i));
        if (!v && PyErr_Occurred()) r = -1;
        else if (v && (r = add_array(set, v)) == 0 && !PyModule_Check(v) && !PyType_Check(v))
            r = add_attrs(set, v);  /* a model object held in a global: its weights */
    }
    for (Py_ssize_t i = 0; r == 0 && consts && PyTuple_Check(consts) && i < PyTuple_GET_SIZE(consts); i++)
        r = add_code(set, PyTuple_GET_ITEM(consts, i), globals, depth + 1);
    Py_XDECREF(names);
    Py_XDECREF(consts);
    return r;
}

static int add_function(PyObject *set, PyObject *fn)
{
    if (PyMethod_Check(fn)) {
        if (add_attrs(set, PyMethod_GET_SELF(fn)) < 0) return -1;
        fn = PyMethod_GET_FUNCTION(fn);
    }
    if (!PyFunction_Check(fn)) {
        /* a callable object (numdyn.compile of a module): its forward's
         * self is the object itself */
        return add_attrs(set, fn);
    }
    PyObject *glob = PyFunction_GET_GLOBALS(fn), *clo = PyFunction_GET_CLOSURE(fn);
    PyObject *defs = PyFunction_GET_DEFAULTS(fn), *kwd = PyFunction_GET_KW_DEFAULTS(fn);
    if (add_code(set, PyFunction_GET_CODE(fn), glob, 0) < 0) return -1;
    for (Py_ssize_t i = 0; clo && PyTuple_Check(clo) && i < PyTuple_GET_SIZE(clo); i++) {
        PyObject *c = PyTuple_GET_ITEM(clo, i);
        if (PyCell_Check(c) && add_array(set, PyCell_GET(c)) < 0) return -1;
    }
    for (Py_ssize_t i = 0; defs && PyTuple_Check(defs) && i < PyTuple_GET_SIZE(defs); i++)
        if (add_array(set, PyTuple_GET_ITEM(defs, i)) < 0) return -1;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (kwd && PyDict_Check(kwd) && PyDict_Next(kwd, &pos, &k, &v))
        if (add_array(set, v) < 0) return -1;
    return 0;
}

int nd__pins_begin(nd_trace *t, PyObject *fn, PyObject *const *args, Py_ssize_t n, int spec_all)
{
    int any = 0;
    for (Py_ssize_t i = 0; i < n && !any; i++) {
        uint64_t dyn = 0, st = 0;
        if (PyArray_Check(args[i])) nd_marks_get(args[i], &dyn, &st);
        any = dyn != 0;
    }
    if (!any) return 0;
    pin_state *s = PyMem_Calloc(1, sizeof *s);
    if (!s) { PyErr_NoMemory(); return -1; }
    s->spec_all = spec_all;
    s->args = PyTuple_New(n);
    s->consts = PySet_New(NULL);
    s->lifted = PyDict_New();
    s->literal = PyDict_New();
    s->name = PyObject_GetAttrString(fn, "__qualname__");
    if (!s->name) { PyErr_Clear(); s->name = PyUnicode_FromString("the function"); }
    if (!s->args || !s->consts || !s->lifted || !s->literal || !s->name) { nd__pins_free(s); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(s->args, i, Py_NewRef(args[i]));
        if (add_attrs(s->consts, args[i]) < 0) { nd__pins_free(s); return -1; }
    }
    if (add_function(s->consts, fn) < 0) { nd__pins_free(s); return -1; }
    /* an argument is not an outside array, even when a global names it too */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyArray_Check(args[i])) continue;
        PyObject *k = PyLong_FromVoidPtr(args[i]);
        if (!k || PySet_Discard(s->consts, k) < 0) { Py_XDECREF(k); nd__pins_free(s); return -1; }
        Py_DECREF(k);
    }
    t->pins = s;
    return 0;
}

void nd__pins_lifted(nd_trace *t, PyObject *orig, nd_id id)
{
    pin_state *s = t->pins;
    PyObject *k = PyLong_FromLong(id), *v = PyLong_FromVoidPtr(orig);
    if (!k || !v || PyDict_SetItem(s->lifted, k, v) < 0) PyErr_Clear();
    Py_XDECREF(k);
    Py_XDECREF(v);
}

static int32_t input_label(void *ctx, const nd_node *n, nd_id id, int d)
{
    pin_state *s = ctx;
    PyObject *obj = n->obj;
    for (Py_ssize_t k = 0; obj && k < PyTuple_GET_SIZE(s->args); k++) {
        if (PyTuple_GET_ITEM(s->args, k) != obj) continue;
        uint64_t dyn = 0, st = 0;
        nd_marks_get(obj, &dyn, &st);
        if (d < 64 && (dyn >> d & 1)) return (int32_t)(1 + k * 64 + d);
        if (d < 64 && (nd_marks_static_dims(obj, s->spec_all) >> d & 1)) return ND_PIN_CONST;
        return ND_PIN_FREE;
    }
    PyObject *key = obj ? PyLong_FromVoidPtr(obj) : NULL;
    int in = key ? PySet_Contains(s->consts, key) : 0;
    Py_XDECREF(key);
    if (in == 0) {
        PyObject *nk = PyLong_FromLong(id);
        PyObject *orig = nk ? PyDict_GetItemWithError(s->lifted, nk) : NULL;
        Py_XDECREF(nk);
        if (orig) in = PySet_Contains(s->consts, orig);
    }
    if (in < 0) in = 0;
    PyErr_Clear();
    return in ? ND_PIN_CONST : ND_PIN_FREE;
}

static uint64_t literal_dims(void *ctx, nd_id id)
{
    pin_state *s = ctx;
    if (!PyDict_GET_SIZE(s->literal)) return 0;
    PyObject *k = PyLong_FromLong(id);
    PyObject *m = k ? PyDict_GetItemWithError(s->literal, k) : NULL;
    Py_XDECREF(k);
    uint64_t r = m ? PyLong_AsUnsignedLongLong(m) : 0;
    PyErr_Clear();
    return r;
}

int nd__pins_check(nd_trace *t)
{
    pin_state *s = t->pins;
    nd_pin_found f;
    int r = nd_pins_scan(&s->lab, t->g, input_label, literal_dims, s, &f);
    if (r <= 0) return r;
    const nd_node *n = &t->g->nodes[f.node];
    int k = (f.sym - 1) / 64, d = (f.sym - 1) % 64;
    const char *op = n->op == ND_OP_UFUNC ? nd_ufunc_name(n->sub) : nd_op_name(n->op);
    PyErr_Format(nd__ctl_constraint_error(),
                 "Constraints violated (dim %d of argument %d of %S, marked with numdyn.mark_dynamic)! "
                 "For more information, run with NUMDYN_LOGS=\"recompiles\".\n"
                 "  - Not all values of the dim are valid because it was inferred to be a constant "
                 "(%zd): the graph %s a dim of the same size that the program holds fixed (node %%%d, %s) -- "
                 "a dim marked static (or compile(dynamic=False)), an array the function reads "
                 "from a global, a closure cell, a default or an attribute, or one it makes with a "
                 "size written as a constant in its code (np.zeros(5)). Remove the mark_dynamic "
                 "call, or make that dim dynamic too (x.shape[d]).",
                 d, k, s->name, (Py_ssize_t)f.size, f.how, (int)f.node, op ? op : "?");
    return -1;
}

/* ------------------------------------------- sizes written in the code
 * numdyn has no symbolic sizes: `np.zeros(5)`, `x.reshape(4, -1)`, `x[:7]`
 * hand it plain ints, as `np.zeros(len(x))` does. A size is taken as a
 * literal of the code when it is an exact int (a dim marked dynamic reads
 * as a numdyn.DynamicDim) that the running frame's code holds as a
 * constant (its co_consts, constant tuples and slices included). */

static int const_holds(PyObject *c, long long v, int depth)
{
    if (PyLong_CheckExact(c)) {
        int of = 0;
        long long x = PyLong_AsLongLongAndOverflow(c, &of);
        if (x == -1 && PyErr_Occurred()) PyErr_Clear();
        return !of && x == v;
    }
    if (depth < 2 && PyTuple_Check(c)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(c); i++)
            if (const_holds(PyTuple_GET_ITEM(c, i), v, depth + 1)) return 1;
    }
    if (depth < 2 && PySlice_Check(c)) {
        PySliceObject *sl = (PySliceObject *)c;
        return const_holds(sl->start, v, depth + 1) || const_holds(sl->stop, v, depth + 1) ||
               const_holds(sl->step, v, depth + 1);
    }
    return 0;
}

/* v is an exact int written as a constant in the running frame's code */
static int literal(PyObject *v)
{
    if (!v || !PyLong_CheckExact(v)) return 0;
    int of = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &of);
    if (of || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
    PyFrameObject *f = PyEval_GetFrame();
    if (!f) return 0;
    PyCodeObject *code = PyFrame_GetCode(f);
    PyObject *consts = code ? PyObject_GetAttrString((PyObject *)code, "co_consts") : NULL;
    Py_XDECREF(code);
    int r = consts && PyTuple_Check(consts) && const_holds(consts, x, 0);
    Py_XDECREF(consts);
    PyErr_Clear();
    return r;
}

/* the caller array p stands for whole (x itself), with its dynamic marks */
static PyObject *marked_caller(nd_trace *t, PyObject *o, uint64_t *dyn)
{
    *dyn = 0;
    if (!t->pins || !nd_proxy_check(o)) return NULL;
    NdProxy *p = (NdProxy *)o;
    if (!p->st || !p->st->caller || !p->identity || p->st->dirty) return NULL;
    uint64_t st = 0;
    nd_marks_get(p->st->caller, dyn, &st);
    return *dyn ? p->st->caller : NULL;
}

static int literal_violation(nd_trace *t, PyObject *caller, int d, npy_intp size, const char *how)
{
    pin_state *s = t->pins;
    Py_ssize_t k = 0;
    while (k < PyTuple_GET_SIZE(s->args) && PyTuple_GET_ITEM(s->args, k) != caller) k++;
    PyErr_Format(nd__ctl_constraint_error(),
                 "Constraints violated (dim %d of argument %zd of %S, marked with numdyn.mark_dynamic)! "
                 "For more information, run with NUMDYN_LOGS=\"recompiles\".\n"
                 "  - Not all values of the dim are valid because it was inferred to be a constant "
                 "(%zd): %s. Remove the mark_dynamic call, or write the size from x.shape.",
                 d, k, s->name, (Py_ssize_t)size, how);
    return -1;
}

/* shape argument entries: literals mask, any DynamicDim, count of -1 and
 * the product of the other entries; 0, or 1 when not a shape */
static int shape_parts(PyObject *shape, int *n, uint64_t *lit, int *sym, int *neg, long long *prod)
{
    *lit = 0;
    *sym = *neg = 0;
    *prod = 1;
    PyObject *one = NULL;
    if (PyLong_Check(shape)) {
        one = PyTuple_Pack(1, shape);
        if (!one) return -1;
        shape = one;
    }
    if (!PyTuple_Check(shape) && !PyList_Check(shape)) { Py_XDECREF(one); return 1; }
    *n = (int)PySequence_Fast_GET_SIZE(shape);
    for (int i = 0; i < *n && i < 64; i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(shape, i);
        if (!PyLong_Check(e)) { Py_XDECREF(one); return 1; }
        long long v = PyLong_AsLongLong(e);
        if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); Py_XDECREF(one); return 1; }
        if (!PyLong_CheckExact(e)) *sym = 1;
        if (v == -1) { (*neg)++; continue; }
        *prod *= v;
        if (v > 1 && literal(e)) *lit |= 1ULL << i;
    }
    Py_XDECREF(one);
    return 0;
}

int nd_trace_pins_op(nd_trace *t, const char *name, PyObject **argv, PyObject *r)
{
    if (!t || !t->pins || !r) return 0;
    int creates = !strcmp(name, "zeros") || !strcmp(name, "ones") || !strcmp(name, "empty") ||
                  !strcmp(name, "full");
    if (creates && nd_proxy_check(r) && ((NdProxy *)r)->identity && ((NdProxy *)r)->st) {
        int n = 0, sym, neg;
        uint64_t lit;
        long long prod;
        if (shape_parts(argv[0], &n, &lit, &sym, &neg, &prod) != 0 || !lit) return 0;
        PyObject *k = PyLong_FromLong(((NdProxy *)r)->st->version), *m = PyLong_FromUnsignedLongLong(lit);
        int rc = k && m ? PyDict_SetItem(((pin_state *)t->pins)->literal, k, m) : -1;
        Py_XDECREF(k);
        Py_XDECREF(m);
        return rc;
    }
    return 0;
}

static int pins_reshape(nd_trace *t, PyObject *self, PyObject *shape)
{
    uint64_t dyn;
    PyObject *caller = marked_caller(t, self, &dyn);
    if (!caller) return 0;
    if (PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) == 1 &&
        (PyTuple_Check(PyTuple_GET_ITEM(shape, 0)) || PyList_Check(PyTuple_GET_ITEM(shape, 0))))
        shape = PyTuple_GET_ITEM(shape, 0);  /* x.reshape((4, -1)) */
    int n = 0, sym, neg;
    uint64_t lit;
    long long prod;
    if (shape_parts(shape, &n, &lit, &sym, &neg, &prod) != 0 || sym || !lit) return 0;
    PyArrayObject *a = (PyArrayObject *)caller;
    long long fixed = 1;  /* the product of the dims not marked dynamic */
    int d0 = -1;
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        if (d < 64 && (dyn >> d & 1)) { if (d0 < 0) d0 = d; }
        else fixed *= PyArray_DIM(a, d);
    }
    if (d0 < 0) return 0;
    /* every entry a literal (or a plain size): the total, hence the dim, is
     * fixed; with -1, only literals dividing the fixed dims leave it free */
    long long lits = 1;
    for (int i = 0; i < n && i < 64; i++)
        if (lit >> i & 1) {
            PyObject *e = PySequence_Fast_GET_ITEM(shape, i);
            lits *= PyLong_AsLongLong(e);
        }
    if (neg && fixed % lits == 0) return 0;
    return literal_violation(t, caller, d0, PyArray_DIM(a, d0),
                             neg ? "the program reshapes it with sizes written as constants, which "
                                   "do not divide every size of it"
                                 : "the program reshapes it to sizes written as constants");
}

int nd_trace_pins_slice(nd_trace *t, PyObject *self, PyObject *key)
{
    uint64_t dyn;
    PyObject *caller = marked_caller(t, self, &dyn);
    if (!caller) return 0;
    PyObject *one = NULL;
    if (!PyTuple_Check(key)) {
        if (!PySlice_Check(key) && !PyLong_CheckExact(key)) return 0;
        if (!(one = PyTuple_Pack(1, key))) return -1;
        key = one;
    }
    int rc = 0;
    PyArrayObject *a = (PyArrayObject *)caller;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key) && i < PyArray_NDIM(a) && rc == 0; i++) {
        PyObject *sl = PyTuple_GET_ITEM(key, i);
        if (sl == Py_Ellipsis || sl == Py_None) break;  /* dims no longer line up */
        if (PyLong_CheckExact(sl) && i < 64 && (dyn >> i & 1) && literal(sl)) {
            /* x[3]: valid only for sizes above 3 (x[0], x[1], x[-1], x[-2]
             * hold for every size >= 2, as DynamicDim's comparisons) */
            long long v = PyLong_AsLongLong(sl);
            if (v == -1 && PyErr_Occurred()) { rc = -1; break; }
            if (v >= 2 || v < -2)
                rc = literal_violation(t, caller, (int)i, PyArray_DIM(a, (int)i),
                                       "the program indexes it at a position written as a "
                                       "constant, which not every size has");
            continue;
        }
        if (!PySlice_Check(sl) || i >= 64 || !(dyn >> i & 1)) continue;
        PySliceObject *s = (PySliceObject *)sl;
        if (s->step != Py_None) continue;  /* x[::2]: a size of its own */
        int lstart = s->start != Py_None && literal(s->start), lstop = s->stop != Py_None && literal(s->stop);
        long long b = lstart ? PyLong_AsLongLong(s->start) : 0, e = lstop ? PyLong_AsLongLong(s->stop) : 0;
        /* its extent is the same for every size: both ends from the same side */
        int fixed = (lstop && e >= 0 && (s->start == Py_None || (lstart && b >= 0))) ||
                    (lstart && b < 0 && (s->stop == Py_None || (lstop && e < 0)));
        if (!fixed) continue;
        Py_ssize_t start, stop, step, len;
        if (PySlice_GetIndicesEx(sl, PyArray_DIM(a, (int)i), &start, &stop, &step, &len) < 0) { rc = -1; break; }
        rc = literal_violation(t, caller, (int)i, len,
                               "the program slices it with bounds written as constants, which give "
                               "the same length for every size");
    }
    Py_XDECREF(one);
    return rc;
}

int nd_trace_pins_pre(nd_trace *t, const char *name, PyObject **argv)
{
    if (!t || !t->pins || strcmp(name, "reshape") != 0 || !argv[0] || !argv[1]) return 0;
    return pins_reshape(t, argv[0], argv[1]);
}
