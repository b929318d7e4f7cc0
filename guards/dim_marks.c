/* dim_marks.c -- mark_dynamic / mark_static side table (dim_marks.h).
 *
 * One dict: id(array) -> (weakref, dynamic mask, static mask). The weak
 * reference's callback drops the entry when the array dies, so an id
 * reused by a new array never finds the old marks.
 */
#include "dim_marks.h"
#include "graph/hash.h"
#include <limits.h>

Py_ssize_t nd_marks_live, nd_marks_ranged;
_Thread_local int nd_marks_spec_all;
/* id -> (weakref, int dynamic, int static, ranges, int address): ranges is
 * None or a dict dim -> (min, max) of dims marked dynamic with bounds;
 * address: 0, or 1/2 marked by mark_static_address (2: guard=True) */
static PyObject *marks;

static int has_ranges(PyObject *e) { return e && PyTuple_GET_ITEM(e, 3) != Py_None; }

static PyObject *marks_drop(PyObject *key, PyObject *wr)
{
    (void)wr;
    PyObject *e = marks ? PyDict_GetItemWithError(marks, key) : NULL;
    if (has_ranges(e)) nd_marks_ranged--;
    if (marks && PyDict_DelItem(marks, key) < 0) PyErr_Clear();
    else if (marks) nd_marks_live--;
    Py_RETURN_NONE;
}
static PyMethodDef drop_def = {"_marks_drop", marks_drop, METH_O, NULL};

static PyObject *entry_of(PyObject *arr)
{
    if (!marks || !nd_marks_live) return NULL;
    PyObject *key = PyLong_FromVoidPtr(arr);
    if (!key) { PyErr_Clear(); return NULL; }
    PyObject *e = PyDict_GetItemWithError(marks, key);
    Py_DECREF(key);
    /* the entry of a dead array went with it (the weakref's callback runs
     * before its memory can hold another object): an entry is arr's */
    if (!e) PyErr_Clear();
    return e;
}

static int marks_store(PyObject *arr, uint64_t mask, int dynamic, PyObject *range, int addr);

int nd_marks_set(PyObject *arr, uint64_t mask, int dynamic)
{
    return marks_store(arr, mask, dynamic, NULL, -1);
}

static int addr_of(PyObject *e) { return e ? (int)PyLong_AsLong(PyTuple_GET_ITEM(e, 4)) : 0; }

int nd_marks_address(PyObject *arr) { return addr_of(entry_of(arr)); }

/* a newer mark of a dim replaces its older one, range included; range:
 * (min, max) for the dims of mask (dynamic marks), or NULL; addr: the
 * address mark to store (-1: keep the entry's) */
static int marks_store(PyObject *arr, uint64_t mask, int dynamic, PyObject *range, int addr)
{
    uint64_t dyn = 0, st = 0;
    nd_marks_get(arr, &dyn, &st);
    if (dynamic == 1) { dyn |= mask; st &= ~mask; }
    else if (dynamic == 0) { st |= mask; dyn &= ~mask; }
    else { dyn &= ~mask; st &= ~mask; }  /* 2: unmarked (maybe_mark_dynamic) */
    PyObject *key = PyLong_FromVoidPtr(arr);
    if (!key) return -1;
    PyObject *e = entry_of(arr), *wr = NULL;
    if (e) wr = Py_NewRef(PyTuple_GET_ITEM(e, 0));
    else {
        PyObject *cb = PyCFunction_New(&drop_def, key);
        if (!cb) { Py_DECREF(key); return -1; }
        wr = PyWeakref_NewRef(arr, cb);
        Py_DECREF(cb);
        if (!wr) {
            Py_DECREF(key);
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "numdyn.mark_%s: expected an ndarray, got %.80s",
                             addr > 0 ? "static_address" : dynamic == 1 ? "dynamic"
                             : dynamic == 0 ? "static" : "maybe_dynamic",
                             Py_TYPE(arr)->tp_name);
            }
            return -1;
        }
    }
    PyObject *ranges = NULL;
    if (has_ranges(e) || range) {
        ranges = has_ranges(e) ? PyDict_Copy(PyTuple_GET_ITEM(e, 3)) : PyDict_New();
        for (int d = 0; ranges && d < 64; d++) {
            if (!(mask >> d & 1)) continue;
            PyObject *k = PyLong_FromLong(d);
            int rc = -1;
            if (k && range) rc = PyDict_SetItem(ranges, k, range);
            else if (k) rc = PyDict_Contains(ranges, k) > 0 ? PyDict_DelItem(ranges, k) : 0;
            Py_XDECREF(k);
            if (rc < 0) Py_CLEAR(ranges);
        }
        if (!ranges) { Py_DECREF(wr); Py_DECREF(key); return -1; }
        if (PyDict_GET_SIZE(ranges) == 0) Py_CLEAR(ranges);
    }
    int had = has_ranges(e);
    if (addr < 0) addr = addr_of(e);
    PyObject *t = Py_BuildValue("(NKKOi)", wr, (unsigned long long)dyn, (unsigned long long)st,
                                ranges ? ranges : Py_None, addr);
    Py_XDECREF(ranges);
    int r = t ? PyDict_SetItem(marks, key, t) : -1;
    Py_XDECREF(t);
    Py_DECREF(key);
    if (r == 0 && !e) nd_marks_live++;
    if (r == 0) nd_marks_ranged += (ranges != NULL) - had;
    return r;
}

int nd_marks_range(PyObject *arr, int d, long long *lo, long long *hi)
{
    PyObject *e = entry_of(arr);
    if (!has_ranges(e)) return 0;
    PyObject *k = PyLong_FromLong(d);
    PyObject *r = k ? PyDict_GetItemWithError(PyTuple_GET_ITEM(e, 3), k) : NULL;
    Py_XDECREF(k);
    if (!r) { PyErr_Clear(); return 0; }
    *lo = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 0));
    *hi = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 1));
    PyErr_Clear();
    return 1;
}

void nd_marks_get(PyObject *arr, uint64_t *dynamic, uint64_t *stat)
{
    *dynamic = *stat = 0;
    PyObject *e = entry_of(arr);
    if (!e) return;
    *dynamic = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(e, 1));
    *stat = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(e, 2));
}

uint64_t nd_marks_static_dims(PyObject *arr, int spec_all)
{
    if (!PyArray_Check(arr)) return 0;
    int nd = PyArray_NDIM((PyArrayObject *)arr);
    uint64_t all = nd >= 64 ? ~0ULL : (1ULL << nd) - 1, dyn = 0, st = 0;
    nd_marks_get(arr, &dyn, &st);
    return (spec_all ? all & ~dyn : st) & all;
}

uint64_t nd_marks_size_key(PyObject *arr)
{
    if (!nd_marks_live && !nd_marks_spec_all) return 0;
    uint64_t m = nd_marks_static_dims(arr, nd_marks_spec_all);
    if (!m) return 0;
    uint64_t h = nd_hash_mix(0x7374617469637364ULL, m);
    for (int d = 0; d < PyArray_NDIM((PyArrayObject *)arr); d++)
        if (m >> d & 1) h = nd_hash_mix(h, (uint64_t)PyArray_DIM((PyArrayObject *)arr, d));
    return h;
}

/* _mark(x, dims or None, kind): kind 1 dynamic, 0 static, 2 unmarked;
 * None means every dim */
static PyObject *py_mark(PyObject *m, PyObject *args)
{
    PyObject *x, *dims, *lo = Py_None, *hi = Py_None;
    int dynamic;
    if (!PyArg_ParseTuple(args, "OOi|OO:_mark", &x, &dims, &dynamic, &lo, &hi)) return NULL;
    const char *what = dynamic == 1 ? "dynamic" : dynamic == 0 ? "static" : "maybe_dynamic";
    if (!PyArray_Check(x)) {
        PyErr_Format(PyExc_TypeError, "numdyn.mark_%s: expected an ndarray, got %.80s", what,
                     Py_TYPE(x)->tp_name);
        return NULL;
    }
    int nd = PyArray_NDIM((PyArrayObject *)x);
    uint64_t mask = 0;
    if (dims == Py_None) mask = nd >= 64 ? ~0ULL : (1ULL << nd) - 1;
    else {
        PyObject *seq = PyLong_Check(dims) ? PyTuple_Pack(1, dims)
                                           : PySequence_Fast(dims, "dim must be an int or a list of ints");
        if (!seq) return NULL;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            long d = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
            if (d == -1 && PyErr_Occurred()) { Py_DECREF(seq); return NULL; }
            if (d < -nd || d >= nd) {
                Py_DECREF(seq);
                PyErr_Format(PyExc_IndexError, "numdyn.mark_%s: dim %ld out of range for an "
                             "array of ndim %d", what, d, nd);
                return NULL;
            }
            mask |= 1ULL << (d < 0 ? d + nd : d);
        }
        Py_DECREF(seq);
    }
    PyObject *range = NULL;
    if (lo != Py_None || hi != Py_None) {
        /* torch's defaults: a size-generic dim is >= 2, unbounded above */
        long long l = lo == Py_None ? 2 : PyLong_AsLongLong(lo);
        long long h = hi == Py_None ? LLONG_MAX : PyLong_AsLongLong(hi);
        if (PyErr_Occurred()) return NULL;
        if (l > h) {
            PyErr_Format(PyExc_ValueError, "numdyn.mark_%s: min %lld > max %lld", what, l, h);
            return NULL;
        }
        if (!(range = Py_BuildValue("(LL)", l, h))) return NULL;
    }
    int rc = marks_store(x, mask, dynamic, range, -1);
    Py_XDECREF(range);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* _marked_dims(x) -> (frozenset dynamic, frozenset static) */
static PyObject *py_marked(PyObject *m, PyObject *x)
{
    uint64_t dyn, st;
    nd_marks_get(x, &dyn, &st);
    PyObject *a = PySet_New(NULL), *b = PySet_New(NULL);
    for (int d = 0; a && b && d < 64; d++) {
        PyObject *v = (dyn >> d & 1) || (st >> d & 1) ? PyLong_FromLong(d) : NULL;
        if (!v) continue;
        if (PySet_Add(dyn >> d & 1 ? a : b, v) < 0) Py_CLEAR(a);
        Py_DECREF(v);
    }
    PyObject *r = a && b ? Py_BuildValue("(NN)", PyFrozenSet_New(a), PyFrozenSet_New(b)) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

/* _mark_static_address(x, guard): x's data pointer is a constant of the
 * programs compiled for it; guard: a call with x at another address is a
 * recompile (fn_programs.c). No dim marks change. */
static PyObject *py_mark_addr(PyObject *m, PyObject *args)
{
    PyObject *x;
    int guard;
    if (!PyArg_ParseTuple(args, "Op:_mark_static_address", &x, &guard)) return NULL;
    if (!PyArray_Check(x)) {
        PyErr_Format(PyExc_TypeError, "mark_static_address expects a tensor but received <class '%.80s'>",
                     Py_TYPE(x)->tp_name);
        return NULL;
    }
    if (marks_store(x, 0, 3, NULL, guard ? 2 : 1) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_addr_marked(PyObject *m, PyObject *x)
{
    int a = nd_marks_address(x);
    return PyUnicode_FromString(a == 2 ? "guarded" : a == 1 ? "unguarded" : "");
}

static PyMethodDef funcs[] = {
    {"_mark_static_address", py_mark_addr, METH_VARARGS, "_mark_static_address(x, guard)"},
    {"_static_address_mark", py_addr_marked, METH_O,
     "_static_address_mark(x) -> 'guarded', 'unguarded' or ''"},
    {"_mark", py_mark, METH_VARARGS, "_mark(x, dims|None, dynamic, min=None, max=None)"},
    {"_marked_dims", py_marked, METH_O, "_marked_dims(x) -> (dynamic dims, static dims)"},
    {NULL, NULL, 0, NULL},
};

int nd_marks_init(PyObject *module)
{
    if (!(marks = PyDict_New())) return -1;
    return PyModule_AddFunctions(module, funcs);
}
