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
    s->name = PyObject_GetAttrString(fn, "__qualname__");
    if (!s->name) { PyErr_Clear(); s->name = PyUnicode_FromString("the function"); }
    if (!s->args || !s->consts || !s->lifted || !s->name) { nd__pins_free(s); return -1; }
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

int nd__pins_check(nd_trace *t)
{
    pin_state *s = t->pins;
    nd_pin_found f;
    int r = nd_pins_scan(&s->lab, t->g, input_label, s, &f);
    if (r <= 0) return r;
    const nd_node *n = &t->g->nodes[f.node];
    int k = (f.sym - 1) / 64, d = (f.sym - 1) % 64;
    const char *op = n->op == ND_OP_UFUNC ? nd_ufunc_name(n->sub) : nd_op_name(n->op);
    PyErr_Format(nd__ctl_constraint_error(),
                 "Constraints violated (dim %d of argument %d of %S, marked with numdyn.mark_dynamic)! "
                 "For more information, run with NUMDYN_LOGS=\"recompiles\".\n"
                 "  - Not all values of the dim are valid because it was inferred to be a constant "
                 "(%zd): the graph %s a dim of the same size that the program holds fixed (node %%%d, %s) -- "
                 "a dim marked static (or compile(dynamic=False)), or an array the function reads "
                 "from a global, a closure cell, a default or an attribute. Remove the mark_dynamic "
                 "call, or make that dim dynamic too.",
                 d, k, s->name, (Py_ssize_t)f.size, f.how, (int)f.node, op ? op : "?");
    return -1;
}
